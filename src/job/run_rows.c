/*
 * run_rows.c
 *		One answer a row: neighbour counts, neighbour lists, DBSCAN, and
 *		eps_join_counts' counts of s rows for each r row.
 *
 * Counts and DBSCAN compute every row's answer first (memory O(rows), no
 * pair stored), on the GPU, in slabs beyond it (run_slabs.c), or on the
 * CPU's grid, and then hand rows out (FinishRows); neighbour lists stream
 * from an engine's chunks like pairs.  In many dimensions all of them come
 * from the tile join's pairs (run_tiles.c), and geography's counts and
 * DBSCAN from the band between two chords (geo.c).  eps_join_counts puts
 * the grid over the smaller set on the CPU and over the s rows on the GPU,
 * whose probes count each r row's own pairs.
 */
#include "postgres.h"

#include "job/job_internal.h"

/* Per-row answers computed: number DBSCAN's clusters, then hand rows out. */
static void
FinishRows(GjJob *job)
{
	GjResources *res = job->res;

	if (job->spec.shape == GJ_SHAPE_DBSCAN)
		GjCheckCore(gj_dbscan_number(&res->points, res->rowval, res->rowflag,
									 &job->rows.nclusters), job->spec.fname);
	if (job->geo.on && job->spec.shape == GJ_SHAPE_COUNTS && !job->rows.geo_band)
	{
		/* geography: the counts within d, not within the engines' chord */
		if (job->spec.has_query)
			GjGeographyRepairCounts(&job->geo, &res->points, &res->geo_points,
									&res->queries, &res->geo_queries, NULL,
									res->queries.n, res->rowval);
		else
			GjGeographyRepairCounts(&job->geo, &res->points, &res->geo_points, NULL, NULL,
									job->rows.subset, job->rows.subset != NULL ? job->rows.nsubset : res->points.n,
									res->rowval);
	}
	job->stats.join_ms += gj_now_ms() - job->t_engine;
	job->t_engine = gj_now_ms();
	job->out.pos = 0;
	job->running = RUN_ROWS;
}

/* The per-row answers by tiles, when the sample says so (GjUseTiles): true when done. */
static bool
RowsByTiles(GjJob *job, bool allow_gpu)
{
	GjEngine	e = allow_gpu ? GjChooseEpsEngine(job) : GJ_ENGINE_CPU;

	if (!GjUseTiles(job, e))
		return false;
	job->t_engine = gj_now_ms();
	GjTileRows(job, e);
	FinishRows(job);
	return true;
}

/* The GPU's per-row answers into res->rowval/rowflag; false: use the CPU. */
static bool
GpuRows(GjJob *job)
{
	GjResources *res = job->res;
	gj_gpu_options opt;
	gj_gpu_density_info gi;
	char		err[256];
	gj_status	st;

	GjGpuOptionsInit(&opt, false);
	if (job->spec.shape == GJ_SHAPE_COUNTS)
		st = gj_gpu_count_within(&res->points, job->spec.eps2, 0, &opt,
								 res->rowval, &gi, err, sizeof(err));
	else
		st = gj_gpu_dbscan(&res->points, job->spec.eps2, job->spec.minpts, &opt,
						   res->rowval, res->rowflag, &gi, err, sizeof(err));
	if (st == GJ_ERR_DEVICE_OOM && GjGpuRowsInSlabs(job, &st, err, sizeof(err)))
		return true;
	if (st != GJ_OK)
		return GjGpuStartFailed(job, st, err);
	job->stats.index_ms += gi.index_ms;
	job->stats.batches = gi.launches;
	GjEngineRan(job, "gpu", 0);
	return true;
}

/*
 * Every row's neighbour list on the GPU (kernels/lists.cu), streamed as
 * the CPU list engine's chunks are; false (after a NOTICE) when the CPU
 * must run them.
 */
static bool
StartGpuLists(GjJob *job)
{
	GjResources *res = job->res;
	gj_gpu_options opt;
	gj_gpu_lists *lj;
	gj_gpu_lists_info li;
	char		err[256];
	gj_status	st;

	GjGpuOptionsInit(&opt, false);
	st = gj_gpu_lists_start(&res->points, job->spec.eps2, &opt, &lj, err, sizeof(err));
	if (st == GJ_ERR_DEVICE_OOM)
	{
		/*
		 * beyond the device: windows along one dimension (the rows move),
		 * each one index and its per-row arrays beside the lists' buffers,
		 * a quarter kept back (the window with the longest lists may need
		 * larger buffers)
		 */
		int			dims = res->points.dims;
		size_t		budget = GjGpuBudget(),
					own = gj_gpu_lists_device_bytes(opt.memory_limit),
					fixed = own + gj_gpu_grid_bytes(0, dims) + Max(budget / 4, (size_t) 16 << 20),
					per_row = gj_gpu_grid_bytes(1, dims) - gj_gpu_grid_bytes(0, dims) +
			GJ_GPU_DENSITY_ROW_BYTES;
		int64		max_rows = budget > fixed ? (int64) ((budget - fixed) / per_row) : 0;
		gj_gpu_slab_ctx ctx;
		gj_slab_engine e;
		gj_slab_window *win = NULL;
		int64_t		nwin = 0;
		gj_status	wst = GJ_ERR_DEVICE_OOM;

		if (max_rows >= 4096)
		{
			GjRowsMoved(res);
			memset(&ctx, 0, sizeof(ctx));
			gj_gpu_slab_engine(&e, &ctx);	/* for its sort */
			ctx.opt = opt;
			wst = gj_slabs_windows(&res->points, job->spec.eps2, max_rows, e.order, e.arg,
								   &win, &nwin);
			if (wst == GJ_OK)
				wst = gj_gpu_lists_start_windows(&res->points, job->spec.eps2, &opt, win, nwin,
												 &lj, err, sizeof(err));
			free(win);
		}
		if (wst == GJ_ERR_CANCELED)
			GjRaiseCanceled();
		if (wst == GJ_OK)
		{
			st = GJ_OK;
			job->stats.slices = nwin;
			job->stats.slab_steps = nwin;	/* a window a step */
			job->stats.slice_rows = max_rows;
		}
	}
	if (st != GJ_OK)
		return GjGpuStartFailed(job, st, err);
	gj_gpu_lists_stats(lj, &li);
	GjEngineRunning(job, GJ_ENGINE(lj), li.windows > 1 ? "gpu (slabs)" : "gpu", 0);
	job->stats.index_ms += li.index_ms;
	elog(DEBUG1, "%s: GPU lists started in %.1f ms (index %.1f ms), %lld windows",
		 job->spec.fname, li.start_ms, li.index_ms, (long long) li.windows);
	job->t_engine = gj_now_ms();
	return true;
}

/*
 * Counts, lists or DBSCAN of one set: by tiles in many dimensions, by the
 * band for geography, else lists streamed from the GPU's or the CPU's list
 * engine, and counts or DBSCAN computed on the GPU or the CPU's grid.  A
 * restriction (WHERE id = ...) counts or lists only the listed rows, on
 * the CPU.
 */
void
GjStartRows(GjJob *job, bool allow_gpu)
{
	GjResources *res = job->res;
	int64		n = res->points.n;
	double		t0 = gj_now_ms();
	bool		done = false;
	bool		restricted = GjRestrictedSelf(&job->spec);	/* WHERE id = ... */
	uint32	   *rows = NULL;
	int64		nrows = n;
	gj_cpu_lists *lj;

	/* many dimensions: the shapes from the tile join's pairs */
	if (!restricted && RowsByTiles(job, allow_gpu))
		return;
	if (job->geo.on && !restricted && job->spec.shape != GJ_SHAPE_LISTS)
	{
		job->t_engine = gj_now_ms();
		GjGeoBandRows(job, allow_gpu);
		FinishRows(job);
		return;
	}
	if (job->spec.shape == GJ_SHAPE_LISTS)
	{
		if (!restricted && allow_gpu && GjChooseEngine(n) == GJ_ENGINE_GPU &&
			StartGpuLists(job))
			return;
		GjEnsureGrid(job);
		if (restricted)
			rows = GjListedRows(&res->points, job->spec.filter_ids, job->spec.nfilter, &nrows);
		job->stats.index_ms += gj_now_ms() - t0;
		job->t_engine = gj_now_ms();
		GjCheckCore(gj_cpu_lists_start(&res->grid, &res->points, rows, nrows,
									   GjCpuThreads(), &lj), job->spec.fname);
		GjEngineRunning(job, GJ_ENGINE(lj), restricted ? "cpu (restricted)" : "cpu",
						GjCpuThreads());
		if (rows != NULL)
			pfree(rows);		/* the engine keeps a copy */
		return;
	}
	if (restricted)
		allow_gpu = false;		/* WHERE id = ...: the listed rows, on the CPU */
	job->t_engine = gj_now_ms();
	if (allow_gpu && GjChooseEngine(n) == GJ_ENGINE_GPU)
	{
		GjAllocRowResults(job, n);
		done = GpuRows(job);
	}
	if (!done)
	{
		GjEnsureGrid(job);
		if (restricted)
			job->rows.subset = GjListedRows(&res->points, job->spec.filter_ids,
									 job->spec.nfilter, &job->rows.nsubset);
		nrows = restricted ? job->rows.nsubset : n;
		GjAllocRowResults(job, nrows);
		job->stats.index_ms += gj_now_ms() - t0;
		job->t_engine = gj_now_ms();
		if (job->spec.shape == GJ_SHAPE_COUNTS)
			GjCheckCore(gj_cpu_count_rows(&res->grid, &res->points, job->rows.subset, nrows,
										  0, GjCpuThreads(), res->rowval),
						job->spec.fname);
		else
			GjCheckCore(gj_cpu_dbscan(&res->grid, &res->points, job->spec.minpts,
									  GjCpuThreads(), res->rowval, res->rowflag),
						job->spec.fname);
		GjEngineRan(job, restricted ? "cpu (restricted)" : "cpu", GjCpuThreads());
	}
	FinishRows(job);
}

/* eps_join_counts: every r row's count of s rows, the grid over the smaller set on the CPU. */
void
GjStartJoinCounts(GjJob *job, bool allow_gpu)
{
	GjResources *res = job->res;
	double		t0 = gj_now_ms();
	bool		done = false;
	gj_grid		rg;				/* the r rows' grid, when it is worth building */

	GjAllocRowResults(job, res->queries.n);
	job->t_engine = gj_now_ms();
	if (res->points.n == 0)
	{
		/* no s rows: every r row counts none */
		memset(res->rowval, 0, sizeof(int32_t) * res->queries.n);
		GjEngineRan(job, "none", 0);
		FinishRows(job);
		return;
	}
	/* many dimensions: each r row's pairs of the tile engines' cross plan */
	if (RowsByTiles(job, allow_gpu))
		return;
	if (allow_gpu && GjChooseEpsEngine(job) == GJ_ENGINE_GPU)
	{
		gj_gpu_options opt;
		gj_gpu_density_info gi;
		char		err[256];
		gj_status	st;

		GjGpuOptionsInit(&opt, false);
		st = gj_gpu_join_counts(&res->points, &res->queries, job->spec.eps2, &opt,
								res->rowval, &gi, err, sizeof(err));
		if (st == GJ_OK)
		{
			job->stats.index_ms += gi.index_ms;
			job->stats.batches = gi.launches;
			GjEngineRan(job, "gpu", 0);
			done = true;
		}
		else if (st == GJ_ERR_DEVICE_OOM && GjGpuRowsInSlabs(job, &st, err, sizeof(err)))
			done = true;
		else
			GjGpuStartFailed(job, st, err);
	}
	if (!done && GjIndexSmaller(&res->queries, &res->points, job->spec.eps2, &rg))
	{
		/*
		 * fewer r rows: the grid over them (sorted in place; the counts
		 * follow), every s row probing it, a grid small enough to stay in
		 * cache (core/density.c's gj_cpu_count_into)
		 */
		gj_status	st = gj_grid_build_planned(&rg, &res->queries);

		if (st == GJ_OK && 2 * rg.npoints <= 3 * rg.ncells)
		{
			/*
			 * Only where the r rows are sparse, 1.5 a cell or fewer: each s
			 * row's probe then walks few rows a cell.  Denser, the s rows'
			 * grid scans long runs per r probe and wins (2 cores, 100K x 1M
			 * 2-D: ~1 r row a cell 104 against 131 ms, ~2 a cell 144
			 * against 127 ms, ~10 a cell 300 against 190 ms).
			 */
			job->stats.index_ms += gj_now_ms() - t0;
			job->t_engine = gj_now_ms();
			st = gj_cpu_count_into(&rg, &res->queries, &res->points, GjCpuThreads(),
								   res->rowval);
			done = true;
		}
		gj_grid_free(&rg);
		GjCheckCore(st, job->spec.fname);
		if (done)
			GjEngineRan(job, "cpu", GjCpuThreads());
	}
	if (!done)
	{
		GjEnsureGrid(job);
		job->stats.index_ms += gj_now_ms() - t0;
		job->t_engine = gj_now_ms();
		GjCheckCore(gj_cpu_count_queries(&res->grid, &res->points, &res->queries,
										 GjCpuThreads(), res->rowval),
					job->spec.fname);
		GjEngineRan(job, "cpu", GjCpuThreads());
	}
	FinishRows(job);
}
