/*
 * resources.c
 *		Ownership of everything a join holds outside palloc.
 *
 * Points, the grid, the CPU engines' threads and the GPU engines' device
 * memory, pinned buffers, streams and driver threads live outside palloc.
 * A small memory context owns them through a reset callback: when the join
 * finishes, when the executor stops early (LIMIT, a closed cursor, a
 * rescan), or when an ERROR, a cancel or statement_timeout unwinds the
 * query and deletes the context, the callback stops and joins the worker
 * threads and frees the buffers.  The callback never raises and may run
 * after an explicit GjResourcesRelease (it is idempotent).
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "resources.h"

static void
ResourcesCallback(void *arg)
{
	GjResources *res = (GjResources *) arg;

	GjResourcesRelease(res);
}

/* A resource owner for one join, in a child context of parent. */
GjResources *
GjResourcesCreate(MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent,
											  "gpujoin join",
											  ALLOCSET_SMALL_SIZES);
	GjResources *res = MemoryContextAllocZero(cxt, sizeof(GjResources));
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	res->cxt = cxt;
	gj_points_init(&res->points, 0);
	gj_points_init(&res->queries, 0);
	gj_points_init(&res->both, 0);
	cb->func = ResourcesCallback;
	cb->arg = res;
	MemoryContextRegisterResetCallback(cxt, cb);
	return res;
}

/*
 * Stop and free the engine, and a slab step's engine started early
 * (threads joined, device memory freed or cached).
 */
void
GjResourcesStopEngine(GjResources *res)
{
	double		t0;

	if (res->next_engine != NULL)
	{
		gj_engine_free(res->next_engine);
		res->next_engine = NULL;
	}
	if (res->engine == NULL)
		return;
	t0 = gj_now_ms();
	gj_engine_free(res->engine);
	res->engine = NULL;
	/* how long a cancel waits on the engine (the GPU host's cancel check) */
	elog(DEBUG1, "gpujoin: engine stopped in %.1f ms", gj_now_ms() - t0);
}

/* Stop the engines and free everything; safe to call more than once. */
void
GjResourcesRelease(GjResources *res)
{
	GjResourcesStopEngine(res);
	if (res->have_grid)
	{
		gj_grid_free(&res->grid);
		res->have_grid = false;
	}
	free(res->rowval);
	res->rowval = NULL;
	free(res->rowflag);
	res->rowflag = NULL;
	free(res->list_off);
	free(res->list_nb);
	free(res->list_nd);
	res->list_off = NULL;
	res->list_nb = NULL;
	res->list_nd = NULL;
	gj_points_free(&res->points);
	gj_points_free(&res->queries);
	gj_points_free(&res->both);
	gj_geo_side_free(&res->geo_points);
	gj_geo_side_free(&res->geo_queries);
}
