/*
 * resources.c
 *		Ownership of everything a join holds outside palloc.
 *
 * Points, the grid, the CPU engine's threads and the GPU engine's device
 * memory, pinned buffers, streams and driver thread live outside palloc.  A small memory context owns them through a reset callback:
 * when the join finishes, or when an ERROR, a cancel or statement_timeout
 * unwinds the query and deletes the context, the callback stops and joins
 * the worker threads and frees the buffers.  The callback never raises and
 * may run after an explicit GjResourcesRelease (it is idempotent).
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "gpujoin.h"
#include "../kernels/gj_cuda.h"

static void
ResourcesCallback(void *arg)
{
	GjResourcesRelease((GjResources *) arg);
}

/* A resource owner for one join, in a child of the current context. */
GjResources *
GjResourcesCreate(int dims_hint)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "gpujoin join",
											  ALLOCSET_SMALL_SIZES);
	GjResources *res = MemoryContextAllocZero(cxt, sizeof(GjResources));
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	res->cxt = cxt;
	gj_points_init(&res->points, dims_hint);
	gj_points_init(&res->queries, dims_hint);
	cb->func = ResourcesCallback;
	cb->arg = res;
	MemoryContextRegisterResetCallback(cxt, cb);
	return res;
}

/* Stop threads and free everything; safe to call more than once. */
void
GjResourcesRelease(GjResources *res)
{
	if (res->gpu_knn != NULL)
	{
		gj_gpu_knn_free(res->gpu_knn);
		res->gpu_knn = NULL;
	}
	if (res->cpu_knn != NULL)
	{
		gj_cpu_knn_free(res->cpu_knn);
		res->cpu_knn = NULL;
	}
	if (res->gpu != NULL)
	{
		gj_gpu_selfjoin_free(res->gpu);
		res->gpu = NULL;
	}
	if (res->cpu != NULL)
	{
		gj_cpu_selfjoin_free(res->cpu);
		res->cpu = NULL;
	}
	if (res->have_grid)
	{
		gj_grid_free(&res->grid);
		res->have_grid = false;
	}
	gj_points_free(&res->points);
	gj_points_free(&res->queries);
}
