/*
 * engine.c
 *		The engine interface: what every streaming engine is to its caller.
 *
 * Each engine's struct begins with a gj_engine (gj_core.h), so taking,
 * returning and stopping work the same for the CPU and GPU self-joins, the
 * probe, the neighbour lists and both kNN joins, and the caller (the job, the
 * tests, the benchmarks) holds one handle whichever engine runs.
 */
#include <string.h>

#include "core_internal.h"

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

/*
 * Start n worker threads fn(args + t * stride) as the engine's producers
 * (gj_threads_start: every signal blocked); how many started, 0 when none
 * did (the caller frees the engine).  The producers are counted before any
 * thread runs and one comes off for each thread that did not start, so the
 * queue ends when the last started worker ends, whatever the order: setting
 * the count to the started threads afterwards would lose the producer_done
 * of a worker that had already finished, and the queue would never end.
 */
int
gj_engine_start_workers(gj_engine *e, pthread_t *threads, int n,
						void *(*fn) (void *), void *args, size_t stride)
{
	int			started;

	gj_queue_set_producers(e->q, n);
	started = gj_threads_start(threads, n, fn, args, stride);
	for (int t = started; t < n; t++)
		gj_queue_producer_done(e->q);
	return started;
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

/* What made the engine fail, beyond its status ("" when it says nothing). */
const char *
gj_engine_error_text(const gj_engine *e)
{
	const char *t = e->error_text != NULL ? e->error_text(e) : NULL;

	return t != NULL ? t : "";
}

/* What the engine did so far (zeros where it reports nothing). */
void
gj_engine_report_of(const gj_engine *e, gj_engine_report *r)
{
	memset(r, 0, sizeof(*r));
	if (e->report != NULL)
		e->report(e, r);
}
