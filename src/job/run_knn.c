/*
 * run_knn.c
 *		The kNN joins: the k nearest references of every query row, on the
 *		GPU or the CPU, by the grid, by brute force, or by the blocks'
 *		index in many dimensions (plan.c chooses).
 *
 * kNN joins with few queries use brute force (no index to build; the
 * answers are the same), and self kNN restricted to some rows runs on the
 * CPU.  For the blocks' index the references (and queries) are sorted into
 * small blocks once a job; a GPU self join only plans the order on the
 * host and finds and applies it on the device.
 */
#include "postgres.h"

#include "job/job_internal.h"

/* The CPU kNN engine, with the grid where the method is the grid. */
static void
StartCpuKnn(GjJob *job)
{
	GjResources *res = job->res;
	double		t0 = gj_now_ms();
	uint32	   *rows = NULL;
	int64		nrows = 0;
	gj_cpu_knn *kj;

	if (gj_knn_pick_method(&job->kopt, res->points.dims) == GJ_KNN_GRID && !res->have_grid)
	{
		GjCheckCore(gj_knn_grid_build(&res->grid, &res->points), "building the kNN grid");
		res->have_grid = true;
	}
	if (GjRestrictedSelf(&job->spec))
	{
		/* self kNN of the listed rows: their positions after the sort */
		rows = GjListedRows(&res->points, job->spec.filter_ids, job->spec.nfilter, &nrows);
		job->kopt.self_rows = rows;
		job->kopt.nself = nrows;
	}
	job->stats.index_ms += gj_now_ms() - t0;
	job->t_engine = gj_now_ms();
	GjCheckCore(gj_cpu_knn_start(&res->points, res->have_grid ? &res->grid : NULL,
								 job->qs, &job->kopt, GjCpuThreads(), &kj),
				job->spec.fname);
	GjEngineRunning(job, GJ_ENGINE(kj), "cpu", GjCpuThreads());
	if (rows != NULL)
		pfree(rows);
	job->kopt.self_rows = NULL;
}

/* The GPU kNN join; false (after a NOTICE) when the CPU must run it. */
static bool
StartGpuKnn(GjJob *job, const gj_block_plan *block_plan)
{
	GjResources *res = job->res;
	gj_gpu_options gopt;
	gj_gpu_knn *kj;
	char		err[256];
	gj_status	st;
	double		t0 = gj_now_ms();

	GjGpuOptionsInit(&gopt, false);
	gopt.block_plan = block_plan;
	st = gj_gpu_knn_start(&res->points, job->qs, &job->kopt, &gopt, &kj, err, sizeof(err));
	if (st != GJ_OK)
		return GjGpuStartFailed(job, st, err);
	job->stats.gpu_team_why = GjGpuTeamFailure(&gopt);
	GjEngineRunning(job, GJ_ENGINE(kj), "gpu", 0);
	job->stats.index_ms += gj_now_ms() - t0;
	if (block_plan != NULL && block_plan->m > 0)
	{
		gj_gpu_knn_info ki;

		/* the engine applied the order on the host: a rerun need not find it again */
		gj_gpu_knn_stats(kj, &ki);
		res->block_ordered = !ki.row_gather;
	}
	if (message_level_is_interesting(DEBUG1))
	{
		gj_gpu_knn_info ki;

		gj_gpu_knn_stats(kj, &ki);
		elog(DEBUG1, "%s: GPU kNN engine started in %.1f ms (index %.1f ms, buffers %.1f ms)",
			 job->spec.fname, gj_now_ms() - t0, ki.index_ms, ki.alloc_ms);
	}
	job->t_engine = gj_now_ms();
	return true;
}

/*
 * The kNN join: the method (plan.c), the rows sorted into blocks where it
 * is the blocks' index, then the GPU when the plan says so, else (or when
 * the GPU cannot start) the CPU.
 */
void
GjStartKnn(GjJob *job, bool allow_gpu)
{
	GjResources *res = job->res;
	int64		nq = GjKnnQueries(job);
	bool		gpu,
				blocks;
	gj_block_plan block_plan = {0};

	GjPlanKnnMethod(job, nq);
	blocks = gj_knn_pick_method(&job->kopt, res->points.dims) == GJ_KNN_BLOCKS;
	gpu = allow_gpu && GjKnnOnGpu(job, nq);
	if (blocks && !res->block_ordered && gpu && job->qs == &res->points)
	{
		/*
		 * a self join on the GPU: the host only plans the blocks' order
		 * from a sample, and the engine finds it and gathers the rows
		 * into it on the device
		 */
		double		t0 = gj_now_ms();

		GjCheckCore(gj_block_plan_make(&res->points, &block_plan),
					"planning the rows' blocks");
		job->stats.index_ms += gj_now_ms() - t0;
		job->stats.knn_key_dims = block_plan.m;
	}
	else if (blocks && !res->block_ordered)
	{
		/* the blocks' index: references and queries sorted into small blocks */
		GjOrderPoints(job, &res->points);
		if (job->qs != &res->points)
			GjOrderPoints(job, &res->queries);
		res->block_ordered = true;
	}
	if (gpu)
	{
		volatile bool started = false;

		PG_TRY();
		{
			started = StartGpuKnn(job, &block_plan);
		}
		PG_FINALLY();
		{
			gj_block_plan_free(&block_plan);
		}
		PG_END_TRY();
		if (started)
			return;
		if (blocks && !res->block_ordered)
		{
			/* the CPU engine's index (the GPU may have ordered the rows: harmless) */
			GjOrderPoints(job, &res->points);
			res->block_ordered = true;
		}
	}
	GjPlanCpuKnnMethod(job, nq);
	StartCpuKnn(job);
}
