/*
 * run_tiles.c
 *		The eps functions by tiles, for many dimensions: every pair of
 *		blocks of rows, or with the index (blocks) only the block pairs
 *		whose bounds are within eps, on the GPU or the CPU.
 *
 * The self-join compares the job's points; eps_join copies r's rows, then
 * s's, into one array (res->both) whose cross plan compares every block of
 * r with every block of s and gives pairs as (r, s), as the grid's probes
 * do.  Counts, lists and DBSCAN come from the tile join's pairs
 * (core/pair_rows.c), which may start the engine more than once: the rows
 * are sorted into the index's blocks once a job, before the first tile
 * engine starts, so that every run sees the same row numbers.  Whether
 * tiles run at all, and whether with the index, is plan.c's choice.
 */
#include "postgres.h"

#include <math.h>

#include "job/job_internal.h"

/*
 * The tiles' index (block_index.c): rows sorted into small blocks whose
 * bounds let the engines skip block pairs farther apart than eps.  A grid
 * built before (on the other order) is dropped.
 */

/* p sorted into the index's blocks by the job's plan (made once). */
void
GjOrderPoints(GjJob *job, gj_points *p)
{
	double		t0;

	GjPlanBlocks(job);			/* its own time into index_ms */
	t0 = gj_now_ms();
	GjCheckCore(gj_points_block_order_by(p, &job->plan.block_plan), "sorting the rows into blocks");
	job->stats.index_ms += gj_now_ms() - t0;
}

static void
PrepareTiles(GjJob *job)
{
	GjResources *res = job->res;

	if (!GjTilesPrune(job) || res->block_ordered)
		return;
	GjOrderPoints(job, &res->points);
	if (res->have_grid)
	{
		gj_grid_free(&res->grid);
		res->have_grid = false;
	}
	res->block_ordered = true;
}

/*
 * eps_join by tiles: r's rows, then s's, in one array (res->both), each
 * set sorted into the index's blocks by one plan (s's) when the index is
 * used; the engines' cross plan then compares every block of r with every
 * block of s and gives pairs as (r, s), as the grid's probes do.  The
 * array is a copy: the reader's arrays stay as they are for a rerun on the
 * CPU by the grid.
 */
static void
PrepareJoinTiles(GjJob *job)
{
	GjResources *res = job->res;
	gj_points  *r = &res->queries,
			   *s = &res->points;
	double		t0;

	if (res->both.n > 0)
		return;
	if (GjTilesPrune(job) && !res->block_ordered)
	{
		GjOrderPoints(job, r);
		GjOrderPoints(job, s);
		res->block_ordered = true;
	}
	t0 = gj_now_ms();
	GjCheckCore(gj_points_concat(&res->both, r, s), "copying the rows for the tiles");
	job->stats.index_ms += gj_now_ms() - t0;
}

/*
 * The rows a tile engine runs on, and its options: the self-join's rows
 * (sorted into blocks when the index is used), or eps_join's two sets.
 */
static const gj_points *
TileInput(GjJob *job, gj_tiles_options *o)
{
	const gj_points *p;

	memset(o, 0, sizeof(*o));
	o->eps2 = job->spec.eps2;
	o->prune = GjTilesPrune(job);
	if (job->spec.has_query)
	{
		PrepareJoinTiles(job);
		o->cross = 1;
		o->split = job->res->queries.n;
		p = &job->res->both;
	}
	else
	{
		PrepareTiles(job);
		p = &job->res->points;
	}
	/* for EXPLAIN: what the engines run */
	job->stats.tiles_method = o->prune ? "blocks" : "brute force";
	job->stats.tiles_cheap = !o->prune && job->plan.brute_cheap && GjEpsMethodSetting() == GJ_EPS_AUTO;
	job->stats.tiles_key_dims = job->plan.block_plan.m;
	job->stats.tiles_kept = job->plan.blocks_planned ? job->plan.block_kept : -1.0;
	return p;
}

/*
 * The self-join or eps_join by tiles on the GPU; false (after a NOTICE)
 * when the CPU must run it.
 */
bool
GjStartGpuTiles(GjJob *job)
{
	gj_tiles_options o;
	gj_gpu_options gopt;
	gj_gpu_tiles *tj;
	char		err[256];
	gj_status	st;
	const gj_points *p = TileInput(job, &o);	/* its sort and copy: index_ms */
	double		t0 = gj_now_ms();

	o.expected_pairs = Max(job->stats.estimated_pairs, 0.0);
	GjGpuOptionsInit(&gopt, true);
	st = gj_gpu_tiles_start(p, &o, &gopt, &tj, err, sizeof(err));
	if (st != GJ_OK)
		return GjGpuStartFailed(job, st, err);
	job->stats.gpu_team_why = GjGpuTeamFailure(&gopt);
	GjEngineRunning(job, GJ_ENGINE(tj), "gpu (tiles)", 0);
	job->stats.index_ms += gj_now_ms() - t0;
	if (job->stats.estimated_pairs >= 0)
		GjNoticeIfEnormous(job, job->stats.estimated_pairs);
	job->t_engine = gj_now_ms();
	return true;
}

/* The self-join or eps_join by tiles on the CPU (pairs as ids). */
void
GjStartCpuTiles(GjJob *job)
{
	gj_tiles_options o;
	gj_cpu_tiles *tj;
	const gj_points *p = TileInput(job, &o);

	if (job->stats.estimated_pairs >= 0)
		GjNoticeIfEnormous(job, job->stats.estimated_pairs);
	job->t_engine = gj_now_ms();
	GjCheckCore(gj_cpu_tiles_start(p, &o, GjCpuThreads(), &tj), job->spec.fname);
	GjEngineRunning(job, GJ_ENGINE(tj), "cpu (tiles)", GjCpuThreads());
}

/* A pair source for the per-row shapes: the CPU tile join, rows mode. */
static gj_status
StartCpuTileRows(void *arg, gj_engine **out)
{
	GjJob	   *job = (GjJob *) arg;
	gj_tiles_options o;
	gj_cpu_tiles *tj;
	gj_status	st;

	const gj_points *p = TileInput(job, &o);

	o.emit_rows = 1;
	st = gj_cpu_tiles_start(p, &o, GjCpuThreads(), &tj);
	*out = st == GJ_OK ? GJ_ENGINE(tj) : NULL;
	return st;
}

/*
 * The same on the GPU.  A GPU that cannot start hands the run to the CPU
 * tile join (the status and message are kept for a NOTICE afterwards:
 * nothing here may raise); a cancel is passed on.
 */
static gj_status
StartGpuTileRows(void *arg, gj_engine **out)
{
	GjJob	   *job = (GjJob *) arg;
	gj_tiles_options o;
	gj_gpu_options gopt;
	gj_gpu_tiles *tj;
	gj_status	st;
	const gj_points *p;

	if (job->rows.gpu_status != GJ_OK)
		return StartCpuTileRows(arg, out);
	p = TileInput(job, &o);
	o.emit_rows = 1;
	o.expected_pairs = Max(job->stats.estimated_pairs, 0.0);
	GjGpuOptionsInit(&gopt, false);
	st = gj_gpu_tiles_start(p, &o, &gopt, &tj, job->rows.gpu_err, sizeof(job->rows.gpu_err));
	if (st == GJ_OK)
	{
		*out = GJ_ENGINE(tj);
		return GJ_OK;
	}
	if (st == GJ_ERR_CANCELED)
		return st;
	job->rows.gpu_status = st;
	return StartCpuTileRows(arg, out);
}

/*
 * Counts, DBSCAN or lists from the pairs of job->rows.source; eps_join_counts
 * from the cross plan's pairs (rows: r's first), each r row's count being
 * its pairs, itself not among them.
 */
static gj_status
TileRowsFrom(GjJob *job, int64_t *entries)
{
	GjResources *res = job->res;
	int64		n = res->points.n;

	if (job->spec.has_query)
	{
		int32_t    *all = malloc(sizeof(int32_t) * (res->both.n + 1));
		gj_status	st = all != NULL ? gj_pairs_count(&job->rows.source, res->both.n, all) :
			GJ_ERR_NOMEM;

		for (int64 i = 0; st == GJ_OK && i < res->queries.n; i++)
			res->rowval[i] = all[i] - 1;
		free(all);
		return st;
	}

	if (job->spec.shape == GJ_SHAPE_LISTS)
		return gj_pairs_lists(&job->rows.source, &res->points, GjHostMemoryLimit() / 16,
							  &res->list_off, &res->list_nb, &res->list_nd, entries);
	GjAllocRowResults(job, n);
	if (job->spec.shape == GJ_SHAPE_COUNTS)
		return gj_pairs_count(&job->rows.source, n, res->rowval);
	return gj_pairs_dbscan(&job->rows.source, &res->points, job->spec.minpts,
						   res->rowval, res->rowflag);
}

/*
 * Per-row shapes by tiles on the given engine: counts, DBSCAN or lists
 * from the tile join's pairs, into res->rowval/rowflag or the list arrays.
 * A GPU that fails, at its start or part-way, leaves the work to the CPU
 * tile join (no row has gone out yet) with a NOTICE.
 */
void
GjTileRows(GjJob *job, GjEngine engine)
{
	int64_t		entries = 0;
	gj_status	st;

	if (job->spec.has_query)
		PrepareJoinTiles(job);	/* eps_join_counts: r's rows first, in the order counted */
	else
		PrepareTiles(job);
	job->rows.source.start = engine == GJ_ENGINE_GPU ? StartGpuTileRows : StartCpuTileRows;
	job->rows.source.arg = job;
	job->rows.source.store_bytes = 0;
	job->rows.gpu_status = GJ_OK;
	st = TileRowsFrom(job, &entries);
	if (engine == GJ_ENGINE_GPU && job->rows.gpu_status == GJ_OK &&
		(st == GJ_ERR_CUDA || st == GJ_ERR_DEVICE_OOM))
	{
		/* failed part-way: the message of the engine is gone, its status is not */
		job->rows.gpu_status = st;
		snprintf(job->rows.gpu_err, sizeof(job->rows.gpu_err), "the GPU tile join failed while running");
		job->rows.source.start = StartCpuTileRows;
		st = TileRowsFrom(job, &entries);
	}
	if (engine == GJ_ENGINE_GPU && job->rows.gpu_status != GJ_OK)
		GjGpuStartFailed(job, job->rows.gpu_status, job->rows.gpu_err);
	GjEngineRan(job, engine == GJ_ENGINE_GPU && job->rows.gpu_status == GJ_OK ?
				"gpu (tiles)" : "cpu (tiles)", GjCpuThreads());
	if (job->spec.shape == GJ_SHAPE_LISTS)
	{
		if (st == GJ_ERR_LIMIT)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s: the neighbour lists need %.0f MB of memory, more than the %lld MB gpujoin.host_memory_limit allows",
							job->spec.fname, ceil((double) entries * 16.0 / 1048576.0),
							(long long) (GjHostMemoryLimit() / 1048576)),
					 errdetail("%lld list entries of 16 bytes each.", (long long) entries),
					 errhint("Use a smaller eps, or eps_neighbor_counts.")));
	}
	GjCheckCore(st, job->spec.fname);
}
