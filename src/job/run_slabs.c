/*
 * run_slabs.c
 *		Eps joins larger than the GPU: slabs.
 *
 * When the GPU cannot hold an eps join's index (pairs: the self-join or
 * eps_join), the rows are cut into slabs along their widest dimension
 * (core/slabs.c) and the GPU runs one step after another, each a self-join
 * of a slab, or a slab probed by its halo or by the other table's rows
 * within reach; every pair comes from exactly one step.  A step's engine
 * takes half the device budget where that holds enough rows, so that the
 * next step can start while the current one's pairs are still being
 * emitted (emit.c asks for it).  Counts and DBSCAN beyond the device run
 * slab by slab too (core/slab_density.c).  Only where not even a slab fits
 * does the CPU engine run instead.
 */
#include "postgres.h"

#include "job/job_internal.h"

/*
 * Rows of dims coordinates a slab step may hold on the device: the budget
 * less two grids' fixed part and a quarter (at least 16 MB) for results,
 * each row taking its share of the grid and extra bytes.
 */
int64
GjSlabRows(int dims, size_t extra, int share)
{
	size_t		budget = GjGpuBudget() / share,
				fixed = 2 * gj_gpu_grid_bytes(0, dims),
				reserve = Max(budget / 4, (size_t) 16 << 20);

	return budget > fixed + reserve ?
		(int64) ((budget - fixed - reserve) /
				 (gj_gpu_grid_bytes(1, dims) - gj_gpu_grid_bytes(0, dims) + extra)) : 0;
}

/*
 * Counts (eps_neighbor_counts, eps_join_counts) or DBSCAN beyond the
 * device: slab by slab on the GPU (core/slab_density.c), the rows (and the
 * r rows) sorted along one dimension first; res->rowval follows the new
 * order.  False with *st and err set when not even a slab fits or a step
 * failed: the caller's NOTICE, and the CPU answers for every row.
 */
bool
GjGpuRowsInSlabs(GjJob *job, gj_status *st, char *err, size_t errlen)
{
	GjResources *res = job->res;
	bool		dbscan = job->spec.shape == GJ_SHAPE_DBSCAN;
	int64		max_rows = GjSlabRows(res->points.dims,
									dbscan ? GJ_GPU_DENSITY_ROW_BYTES + GJ_GPU_DENSITY_GIVEN_ROW_BYTES : 0,
									1);
	gj_gpu_slab_ctx ctx;
	gj_slab_engine e;
	gj_slab_info si;

	if (max_rows < 4096)
		return false;
	GjRowsMoved(res);
	memset(&ctx, 0, sizeof(ctx));
	gj_gpu_slab_engine(&e, &ctx);
	GjGpuOptionsInit(&ctx.opt, false);
	if (!dbscan)
		*st = gj_slab_counts(&res->points, job->spec.has_query ? &res->queries : NULL,
							 job->spec.eps2, max_rows, &e, res->rowval, &si);
	else
		*st = gj_slab_dbscan(&res->points, job->spec.eps2, job->spec.minpts, max_rows, &e,
							 res->rowval, res->rowflag, &si);
	if (*st == GJ_ERR_CANCELED)
		GjRaiseCanceled();
	if (*st != GJ_OK)
	{
		snprintf(err, errlen, "%s", ctx.err[0] ? ctx.err : "the slabs could not be planned");
		return false;
	}
	elog(DEBUG1, "%s: %lld slabs of up to %lld rows, %lld GPU calls (index %.1f ms, kernels %.1f ms, rows pinned in %.1f ms); plan %.1f ms, counts %.1f ms, links %.1f ms, borders %.1f ms",
		 job->spec.fname, (long long) si.nslabs, (long long) max_rows, (long long) si.calls,
		 ctx.info.index_ms, ctx.info.kernel_ms, ctx.pin_ms, si.plan_ms, si.counts_ms,
		 si.link_ms, si.border_ms);
	job->stats.index_ms += ctx.info.index_ms;
	job->stats.batches = ctx.info.launches;
	job->stats.slices = si.nslabs;
	job->stats.slice_rows = max_rows;
	job->stats.slab_steps = si.calls;
	GjEngineRan(job, "gpu (slabs)", 0);
	return true;
}

/*
 * Start the GPU engine of slab step t into *out.  Each engine may use half
 * the device budget, so that the next step can start while the current
 * one's pairs are still being emitted (emit.c).
 */
gj_status
GjStartSlabStep(GjJob *job, int t, gj_engine **out, char *err, size_t errlen)
{
	gj_slab_step *st = &job->slab.plan.steps[t];
	gj_points  *a = &job->slab.view[t % 2][0],
			   *b = &job->slab.view[t % 2][1];
	gj_gpu_options opt;

	GjGpuOptionsInit(&opt, true);
	opt.memory_limit = job->slab.limit;
	gj_points_view(a, job->slab.idx, st->a0, st->a1);
	if (st->self)
		return gj_gpu_selfjoin_start(a, job->spec.eps2, &opt, (gj_gpu_selfjoin **) out,
									 err, errlen);
	gj_points_view(b, job->slab.probe != NULL ? job->slab.probe : job->slab.idx,
				   st->b0, st->b1);
	return gj_gpu_join_start(a, b, job->spec.eps2, job->slab.order, &opt,
							 (gj_gpu_selfjoin **) out, err, errlen);
}

/*
 * Slabs: once the running step's kernels are done (its pairs wait in host
 * buffers for the executor), start the next step's engine, so that its
 * upload and index overlap the emission of those pairs.  A failure here is
 * not reported: the step starts again when its turn comes, as before.
 */
void
GjStartNextSlabEarly(GjJob *job)
{
	GjResources *res = job->res;
	gj_engine_report r;
	char		err[256];
	gj_status	st;

	if (job->slab.plan.nsteps == 0 || job->slab.step + 1 >= job->slab.plan.nsteps ||
		res->next_engine != NULL || job->slab.early_failed ||
		job->running != RUN_STREAM || res->engine == NULL)
		return;
	gj_engine_report_of(res->engine, &r);
	if (r.done_ms <= 0)
		return;					/* its kernels still run */
	st = GjStartSlabStep(job, job->slab.step + 1, &res->next_engine, err, sizeof(err));
	if (st == GJ_ERR_CANCELED)
		GjRaiseCanceled();
	if (st != GJ_OK)
	{
		res->next_engine = NULL;
		job->slab.early_failed = true;
		elog(DEBUG1, "%s: slab step %d did not start early: %s", job->spec.fname,
			 job->slab.step + 1, err);
	}
}

/*
 * The GPU could not hold the index of idx (probed by probe, or a
 * self-join): cut it into slabs that fit, and start the first step; false
 * when not even a slab fits (the caller's NOTICE, then the CPU engine).
 * order: the probe steps' row order (see gj_gpu_join_start).
 */
#define GJ_SLAB_EARLY_MIN_ROWS 65536	/* rows a half-budget step must hold */

bool
GjStartGpuSlabs(GjJob *job, gj_points *idx, gj_points *probe, int order)
{
	/*
	 * Steps of half the budget, so that the next can start early; where
	 * half the budget holds too few rows (its fixed part dominates), steps
	 * of the whole, one after another.
	 */
	int			share = GjSlabRows(idx->dims, 0, 2) >= GJ_SLAB_EARLY_MIN_ROWS ? 2 : 1;
	int64		max_rows = GjSlabRows(idx->dims, 0, share);
	gj_gpu_slab_ctx ctx;
	gj_slab_engine e;
	char		err[256];
	gj_status	st;
	double		t0 = gj_now_ms();

	if (max_rows < 4096)
		return false;
	GjRowsMoved(job->res);
	memset(&ctx, 0, sizeof(ctx));
	gj_gpu_slab_engine(&e, &ctx);	/* for its sort */
	GjGpuOptionsInit(&ctx.opt, false);
	st = gj_slabs_plan_ordered(idx, probe, job->spec.eps2, max_rows, e.order, e.arg,
							   &job->slab.plan);
	if (st != GJ_OK || job->slab.plan.nsteps == 0)
	{
		gj_slabs_free(&job->slab.plan);
		if (st == GJ_ERR_NOMEM)
			GjCheckCore(st, job->spec.fname);
		return false;
	}
	{
		/* the steps in the job's context: released with it, however it ends */
		gj_slab_step *steps = MemoryContextAlloc(job->res->cxt,
												 sizeof(gj_slab_step) * job->slab.plan.nsteps);

		memcpy(steps, job->slab.plan.steps, sizeof(gj_slab_step) * job->slab.plan.nsteps);
		free(job->slab.plan.steps);
		job->slab.plan.steps = steps;
	}
	job->slab.idx = idx;
	job->slab.probe = probe;
	job->slab.order = order;
	job->slab.step = 0;
	job->slab.limit = GjGpuBudget() / share;
	job->slab.early_failed = share == 1;	/* no room for two steps at once */
	st = GjStartSlabStep(job, 0, &job->res->engine, err, sizeof(err));
	if (st != GJ_OK)
	{
		/* the caller's NOTICE names the first failure; the CPU runs it */
		job->res->engine = NULL;
		job->slab.plan.nsteps = 0;
		if (st == GJ_ERR_CANCELED)
			GjRaiseCanceled();
		return false;
	}
	GjEngineRunning(job, job->res->engine, "gpu (slabs)", 0);
	job->stats.index_ms += gj_now_ms() - t0;
	job->t_engine = gj_now_ms();
	job->stats.slices = job->slab.plan.nslabs;
	job->stats.slice_rows = max_rows;
	job->stats.slab_steps = job->slab.plan.nsteps;
	return true;
}
