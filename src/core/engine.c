/*
 * engine.c
 *		The engine interface: what every streaming engine is to its caller.
 *
 * Each engine's struct begins with a gj_engine (gj_core.h), so taking,
 * returning and stopping work the same for the CPU and GPU self-joins, the
 * probe, the neighbour lists and both kNN joins, and the caller (job.c, the
 * tests, the benchmarks) holds one handle whichever engine runs.
 */
#include "gj_core.h"

/*
 * The next chunk, waiting up to timeout_ms: GJ_OK, GJ_AGAIN, GJ_DONE, or
 * the error that stopped the engine (a failing worker cancels the queue, so
 * the queue's end is where its error shows).
 */
gj_status
gj_engine_next(gj_engine *e, int timeout_ms, gj_chunk **out)
{
	gj_status	st = gj_queue_take(e->q, timeout_ms, out);
	gj_status	err = gj_engine_error(e);

	if ((st == GJ_DONE || st == GJ_ERR_CANCELED) && err != GJ_OK)
		return err;
	return st;
}

/* Give a chunk from gj_engine_next back for reuse. */
void
gj_engine_release(gj_engine *e, gj_chunk *c)
{
	gj_queue_release(e->q, c);
}

/* When the engine made its last chunk (gj_now_ms), or 0 while it runs. */
double
gj_engine_done_ms(gj_engine *e)
{
	return e->q != NULL ? gj_queue_done_ms(e->q) : 0.0;
}

void
gj_engine_free(gj_engine *e)
{
	if (e != NULL)
		e->free(e);
}

/* Record st unless an error is recorded already, and end the queue. */
void
gj_engine_fail(gj_engine *e, gj_status st)
{
	int			ok = GJ_OK;

	__atomic_compare_exchange_n((int *) &e->error, &ok, (int) st, 0,
								__ATOMIC_RELAXED, __ATOMIC_RELAXED);
	if (e->q != NULL)
		gj_queue_cancel(e->q);
}

gj_status
gj_engine_error(const gj_engine *e)
{
	return (gj_status) __atomic_load_n((const int *) &e->error, __ATOMIC_RELAXED);
}
