/*
 * run_eps.c
 *		Pairs within eps: the self-join (on the GPU, the CPU, or from a
 *		restriction's listed rows) and eps_join of two sets, by the grid,
 *		or by tiles where plan.c says (run_tiles.c).
 *
 * The engines all deliver the same chunks of finished rows (emit.c); a
 * symmetric self-join's second orientation is the same pair with its ids
 * swapped.  eps_join builds the grid over one set and the other's rows
 * probe it, on either engine, and writes (r, s) rows whichever set is
 * indexed (GjJoinIndexesR says which).  A restriction on r or s
 * (WHERE r = 42) just reads fewer rows of that side.
 */
#include "postgres.h"

#include "job/job_internal.h"

/* Rows probed for the size estimate of a CPU self-join. */
#define GJ_ESTIMATE_SAMPLE 1024

/* The self-join over the host grid, on the CPU's threads. */
static void
StartCpuSelfJoin(GjJob *job)
{
	GjResources *res = job->res;
	double		t0 = gj_now_ms();
	gj_join_stats js;
	gj_cpu_selfjoin *cj;

	if (!res->have_grid)
	{
		GjCheckCore(gj_grid_build(&res->grid, &res->points, job->spec.eps2),
					"building the grid index");
		res->have_grid = true;
	}
	GjNoticeIfEnormous(job, gj_grid_estimate_pairs(&res->grid, &res->points,
												 GJ_ESTIMATE_SAMPLE));
	job->stats.index_ms += gj_now_ms() - t0;
	job->t_engine = gj_now_ms();
	GjCheckCore(gj_cpu_selfjoin_start(&res->grid, &res->points, GjCpuThreads(), &cj),
				job->spec.fname);
	gj_cpu_selfjoin_stats(cj, &js);
	GjEngineRunning(job, GJ_ENGINE(cj), "cpu", js.nthreads);
}

/* The GPU self-join; false (after a NOTICE) when the CPU must run it. */
static bool
StartGpuSelfJoin(GjJob *job)
{
	GjResources *res = job->res;
	gj_gpu_options opt;
	gj_gpu_stats gs;
	gj_gpu_selfjoin *gj;
	char		err[256];
	gj_status	st;
	double		t0 = gj_now_ms();

	GjGpuOptionsInit(&opt, true);
	st = gj_gpu_selfjoin_start(&res->points, job->spec.eps2, &opt, &gj, err, sizeof(err));
	if (st == GJ_ERR_DEVICE_OOM && GjStartGpuSlabs(job, &res->points, NULL, 2))
		return true;
	if (st != GJ_OK)
		return GjGpuStartFailed(job, st, err);
	GjEngineRunning(job, GJ_ENGINE(gj), "gpu", 0);
	job->stats.index_ms += gj_now_ms() - t0;
	job->t_engine = gj_now_ms();
	gj_gpu_selfjoin_stats(gj, &gs);
	GjNoticeIfEnormous(job, (double) gs.estimated_pairs);
	return true;
}

/* The self-join restricted to the listed rows' pairs, on the CPU. */
static void
StartProbe(GjJob *job)
{
	GjResources *res = job->res;
	gj_probe_options po;
	int64		nlisted = 0;
	uint32	   *rows;
	gj_cpu_probe *pj;
	double		t0 = gj_now_ms();

	/* brute force when few rows are listed: no index to build */
	rows = GjListedRows(&res->points, job->spec.filter_ids, job->spec.nfilter, &nlisted);
	if (!GjProbeByBrute((double) nlisted, (double) res->points.n))
	{
		GjCheckCore(gj_grid_build(&res->grid, &res->points, job->spec.eps2),
					"building the grid index");
		res->have_grid = true;
		pfree(rows);
		rows = GjListedRows(&res->points, job->spec.filter_ids, job->spec.nfilter, &nlisted);
	}
	job->stats.index_ms += gj_now_ms() - t0;

	memset(&po, 0, sizeof(po));
	po.column = job->spec.filter_column;
	po.symmetric = job->spec.symmetric;
	po.rows = rows;
	po.nrows = nlisted;
	job->t_engine = gj_now_ms();
	GjCheckCore(gj_cpu_probe_start(res->have_grid ? &res->grid : NULL, &res->points,
								   job->spec.eps2, &po, GjCpuThreads(), &pj),
				job->spec.fname);
	GjEngineRunning(job, GJ_ENGINE(pj),
					res->have_grid ? "cpu (restricted, grid)" : "cpu (restricted, brute force)",
					GjCpuThreads());
	pfree(rows);
	job->out.twice = false;			/* the probe's rows are final */
}

/*
 * eps_join: the grid over one set (GjJoinIndexesR), every row of the other
 * probing it; the engines write (r, s) rows whichever set that is.  In
 * many dimensions, tiles where the sample says, as for the self-join.
 */
void
GjStartJoin(GjJob *job, bool allow_gpu)
{
	GjResources *res = job->res;
	int			swap;			/* index the r rows */
	gj_points  *idx;
	const gj_points *probe;
	gj_probe_options po;
	gj_cpu_probe *pj;
	double		t0 = gj_now_ms();

	job->out.twice = false;
	/* many dimensions: tiles where the sample says, as for the self-join */
	if (allow_gpu && GjChooseEpsEngine(job) == GJ_ENGINE_GPU && GjUseTiles(job, GJ_ENGINE_GPU))
	{
		if (GjStartGpuTiles(job))
			return;
		allow_gpu = false;		/* after its NOTICE: the CPU engine */
	}
	else if (allow_gpu && GjChooseEpsEngine(job) == GJ_ENGINE_GPU)
	{
		gj_gpu_options opt;
		gj_gpu_stats gs;
		gj_gpu_selfjoin *gj;
		char		err[256];
		gj_status	st;

		swap = GjJoinIndexesR(job, GJ_ENGINE_GPU);
		idx = swap ? &res->queries : &res->points;
		probe = swap ? &res->points : &res->queries;
		GjGpuOptionsInit(&opt, true);
		st = gj_gpu_join_start(idx, probe, job->spec.eps2, swap, &opt, &gj, err, sizeof(err));
		if (st == GJ_ERR_DEVICE_OOM &&
			GjStartGpuSlabs(job, idx, (gj_points *) probe, swap))
			return;
		if (st == GJ_OK)
		{
			GjEngineRunning(job, GJ_ENGINE(gj), "gpu", 0);
			job->stats.index_ms += gj_now_ms() - t0;
			job->t_engine = gj_now_ms();
			gj_gpu_selfjoin_stats(gj, &gs);
			GjNoticeIfEnormous(job, (double) gs.estimated_pairs);
			job->stats.estimated_pairs = (double) gs.estimated_pairs;
			return;
		}
		GjGpuStartFailed(job, st, err);
	}
	if (GjUseTiles(job, GJ_ENGINE_CPU))
	{
		GjStartCpuTiles(job);
		return;
	}

	swap = GjJoinIndexesR(job, GJ_ENGINE_CPU);
	idx = swap ? &res->queries : &res->points;
	probe = swap ? &res->points : &res->queries;
	/* few pairs to test: no index to build */
	if (!GjProbeByBrute((double) res->queries.n, (double) res->points.n) &&
		!res->have_grid)
	{
		GjCheckCore(gj_grid_build(&res->grid, idx, job->spec.eps2),
					"building the grid index");
		res->have_grid = true;
	}
	/* the result's size, as the GPU engine samples it (NOTICE, gpujoin_progress) */
	if (res->have_grid)
		GjNoticeIfEnormous(job, gj_grid_estimate_join_pairs(&res->grid, idx, probe,
															GJ_ESTIMATE_SAMPLE));
	job->stats.index_ms += gj_now_ms() - t0;
	memset(&po, 0, sizeof(po));
	po.queries = probe;
	po.swap = swap;
	job->t_engine = gj_now_ms();
	GjCheckCore(gj_cpu_probe_start(res->have_grid ? &res->grid : NULL, idx,
								   job->spec.eps2, &po, GjCpuThreads(), &pj),
				job->spec.fname);
	GjEngineRunning(job, GJ_ENGINE(pj), res->have_grid ? "cpu" : "cpu (brute force)",
					GjCpuThreads());
}

/*
 * The self-join's pairs: from the listed rows of a restriction on the CPU,
 * else by tiles or the grid on the engine the plan picks (a GPU that
 * cannot start leaves the join to the CPU, after a NOTICE).
 */
void
GjStartSelfJoin(GjJob *job, bool allow_gpu)
{
	job->out.twice = job->spec.symmetric;
	if (GjRestrictedSelf(&job->spec))
		StartProbe(job);
	else if (allow_gpu && GjChooseEpsEngine(job) == GJ_ENGINE_GPU &&
			 (GjUseTiles(job, GJ_ENGINE_GPU) ? GjStartGpuTiles(job) : StartGpuSelfJoin(job)))
		return;
	else if (GjUseTiles(job, GJ_ENGINE_CPU))
		GjStartCpuTiles(job);
	else
		StartCpuSelfJoin(job);
}
