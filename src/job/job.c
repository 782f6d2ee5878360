/*
 * job.c
 *		One call of a gpujoin function, from its checked arguments to its
 *		output rows: read, index, run an engine, hand out rows.
 *
 * Every function and every way of calling it goes through here: the custom
 * scan, which returns rows to the executor as the engine makes them, and
 * the materialising fallback, which stores them.  The engines (CPU or GPU,
 * self-join, restricted self-join or kNN) all deliver the same chunks of
 * finished rows, so the backend's per-row work is copying three or four
 * values into the executor's slot; a symmetric self-join's second
 * orientation is the same pair with its ids swapped.
 *
 * Two sets (eps_join, eps_join_counts).  The grid is built over one set
 * and the other's rows probe it, on either engine: for pairs both index
 * the smaller set (StartJoin says why; rows come out as (r, s) either
 * way); for counts the GPU indexes the s set (each r row's count is its
 * own probe's) and the CPU the smaller (an s row's probe adds to the
 * counts of the r rows it finds).  A restriction on r or s
 * (WHERE r = 42) just reads fewer rows of that side.  In many dimensions
 * eps_join's pairs come from the tile engines instead, as the self-join's
 * do (UseTiles): both sets in one array, every block of r against every
 * block of s (PrepareJoinTiles).
 *
 * Engine choice.  A self-join restricted by an id qual (WHERE a = 42) runs
 * from the listed rows only, on the CPU (cpu_probe.c), by brute force when
 * the listed rows times all rows is small, else over the grid.  Otherwise
 * gpujoin.device decides (gpujoin.c); the GPU engine builds its own index
 * on the device, the CPU engine builds the host grid.  kNN joins with few
 * queries use the brute-force search (no index to build; the answers are
 * the same), and self kNN restricted to some rows runs on the CPU.
 *
 * Slabs.  When the GPU cannot hold an eps join's index (pairs: the
 * self-join or eps_join), the rows are cut into slabs along their widest
 * dimension (core/slabs.c) and the GPU runs one step after another, each
 * a self-join of a slab, or a slab probed by its halo or by the other
 * table's rows within reach; every pair comes from exactly one step.  Only
 * where not even a slab fits does the CPU engine run instead.
 *
 * Failures.  When the GPU cannot start (not enough memory for the index,
 * a CUDA error) the CPU engine runs instead, with a NOTICE.  When it fails
 * part-way, the CPU engine reruns the join from its start if no row went
 * out yet, or if the caller can discard rows (restart_ok: the materialising
 * path); rows already returned to the executor cannot be taken back, so
 * that case is an ERROR (and the GPU is disabled for the session).
 *
 * Cancel.  The backend waits for chunks with a timeout and checks for
 * interrupts between them; index builds poll the interrupt hook.  On ERROR
 * or cancel the resources' memory-context callback stops the engines.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "gpujoin.h"
#include "../kernels/gj_cuda.h"

/* Below this many listed rows times all rows, a restricted join is brute. */
#define GJ_PROBE_BRUTE_MAX 2e7
/* Likewise for kNN queries times references. */
#define GJ_KNN_BRUTE_MAX 2e7
/* Rows probed for the size estimate of a CPU self-join. */
#define GJ_ESTIMATE_SAMPLE 1024

typedef enum GjRunning
{
	RUN_NONE,
	RUN_CPU_SELFJOIN,
	RUN_GPU_SELFJOIN,
	RUN_PROBE,
	RUN_CPU_KNN,
	RUN_GPU_KNN,
	RUN_ROWS,					/* per-row answers computed: hand them out */
	RUN_CPU_LISTS,
	RUN_GPU_LISTS,
	RUN_CPU_TILES,
	RUN_GPU_TILES
} GjRunning;

#define RUNNING_GPU(r) ((r) == RUN_GPU_SELFJOIN || (r) == RUN_GPU_KNN || \
						(r) == RUN_GPU_TILES || (r) == RUN_GPU_LISTS)

struct GjJob
{
	GjJobSpec	spec;
	GjResources *res;
	bool		restart_ok;
	GjRunning	running;
	const gj_points *qs;		/* kNN: the query points */
	gj_knn_options kopt;

	MemoryContext rowcxt;		/* arrays of the row last handed out */
	int64		nclusters;		/* dbscan */
	uint32	   *subset;			/* restricted counts: the rows counted */
	int64		nsubset;

	gj_pair_source source;		/* per-row shapes by tiles: their pairs */
	gj_status	gpu_status;		/* ... GJ_OK, or why the GPU gave them up */
	char		gpu_err[256];

	gj_chunk   *chunk;			/* the chunk being handed out */
	int			pos;
	bool		twice;			/* each pair gives (a, b) and (b, a) */
	bool		second;			/* (b, a) of chunk->pos is next */
	bool		done;
	int64		rows_this_run;	/* since the engine (re)started */

	/* GPU eps pairs in slabs (too large for the device at once) */
	gj_slab_plan slabs;			/* nsteps == 0: none */
	int			slab_step;		/* the step running */
	gj_points  *slab_idx;		/* the slabbed set, and the probing set (NULL: self) */
	gj_points  *slab_probe;
	int			slab_order;		/* gj_gpu_join_start's swap for probe steps */
	gj_points	slab_view[2][2];	/* views of a step's rows, by the step's parity */
	size_t		slab_limit;		/* device bytes one step's engine may use */
	bool		slab_early_failed;	/* the next step could not start early */

	GjGeography geo;			/* PostGIS geography: chords to metres */
	double		geo_metres;		/* ... the distance of the pair at pos */
	const gj_chunk *geo_chunk;	/* streamed pairs: the chunk whose pairs ... */
	int64		geo_w0;			/* ... [geo_w0, geo_w1) are decided, */
	int64		geo_w1;
	bool	   *geo_in;			/* ... within d or not, */
	double	   *geo_m;			/* ... and how far (geo_cap each) */
	int64		geo_cap;
	int64		geo_size;		/* the last window's pairs (it grows) */
	bool		geo_band;		/* per-row answers already within d (GeoBandRows) */

	double		tile_share;		/* the grid's share of all pairs, sampled (or 0) */
	GjEngine	tiles_engine;	/* the engine auto's choice was made for */
	bool		brute_cheap;	/* auto: brute force costs less than choosing */
	int			tiles_prune;	/* auto: the index or not, once a job (-1: not yet) */
	int			join_copy;		/* eps_join's tiles' copy: 0 not asked, 1 fits, -1 not */
	bool		blocks_planned; /* block_plan made (PlanBlocks) */
	gj_block_plan block_plan;	/* the index's key, its cuts in the job's memory */
	double		block_kept;		/* the share of block pairs its model keeps */
	double		t_engine;		/* gj_now_ms() at the engine's start */
	double		t_progress;
	int64		progress_pairs;
	GjJobStats	stats;
};

static void AllocRowResults(GjJob *job, int64 n);
static void EnsureGrid(GjJob *job);
static void RestartAfterGpu(GjJob *job, gj_status st, const char *err, bool *restarted);
static bool StartGpuSlabs(GjJob *job, gj_points *idx, gj_points *probe, int order);
static int64 SlabRows(int dims, size_t extra, int share);
static void FinishRows(GjJob *job);
static void NoticeIfEnormous(GjJob *job, double pairs);

/* Why a core call was cancelled: the backend's own interrupt. */
static void
RaiseCanceled(void)
{
	CHECK_FOR_INTERRUPTS();
	/* the hook saw a pending cancel that is held off: report it anyway */
	ereport(ERROR,
			(errcode(ERRCODE_QUERY_CANCELED),
			 errmsg("canceling statement due to user request")));
}

/* GjCheckStatus, with a cancelled core call turned into the interrupt. */
static void
CheckStatus(gj_status st, const char *what)
{
	if (st == GJ_ERR_CANCELED)
		RaiseCanceled();
	GjCheckStatus(st, what);
}

/* The rows of p (in its current order) whose id is listed, ascending. */
static uint32 *
ListedRows(const gj_points *p, const int64 *ids, int nids, int64 *nrows)
{
	uint32	   *rows = palloc(sizeof(uint32) * (Min(p->n, (int64) nids * 4) + 1));
	int64		n = 0,
				cap = Min(p->n, (int64) nids * 4) + 1;

	for (int64 i = 0; i < p->n; i++)
	{
		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!GjIdListed(ids, nids, p->ids[i]))
			continue;
		if (n == cap)
		{
			cap *= 2;
			rows = repalloc_huge(rows, sizeof(uint32) * cap);
		}
		rows[n++] = (uint32) i;
	}
	*nrows = n;
	return rows;
}

/* The pairs an eps function could find: a self-join's, or r x s. */
static double
AllPairs(const GjJob *job)
{
	double		n = (double) job->res->points.n;

	if (job->spec.has_query)
		return n * (double) job->res->queries.n;
	return n * (n - 1) / 2;
}

/* A NOTICE when the sampled size says eps covers much of the data. */
static void
NoticeIfEnormous(GjJob *job, double pairs)
{
	double		n = (double) job->res->points.n;
	double		all = AllPairs(job);
	double		rows = pairs * (job->spec.symmetric ? 2 : 1);

	job->stats.estimated_pairs = pairs;
	if (pairs < 1e7 || (pairs < 0.1 * all && pairs < 1e10))
		return;
	ereport(NOTICE,
			(job->spec.has_query ?
			 errmsg("%s: the sample estimates %.3g result rows, %.0f%% of all pairs of the %.0f r rows and %.0f s rows",
					job->spec.fname, rows, Min(100.0, 100.0 * pairs / all),
					(double) job->res->queries.n, n) :
			 errmsg("%s: the sample estimates %.3g result rows, %.0f%% of all pairs of the %.0f input rows",
					job->spec.fname, rows, Min(100.0, 100.0 * pairs / all), n),
			 errhint("An eps wider than the data pairs nearly everything (say, metres against degrees). Cancel and check eps if that was not intended.")));
}

/* Progress NOTICEs (gpujoin.progress), at most one a second. */
static void
ProgressTick(GjJob *job, int64 rows)
{
	double		now;

	job->progress_pairs += rows;
	if (!gj_progress_guc)
		return;
	now = gj_now_ms();
	if (now - job->t_progress >= 1000.0)
	{
		job->t_progress = now;
		ereport(NOTICE,
				(errmsg("%s: %lld rows so far after %.1f s (%s engine)",
						job->spec.fname, (long long) job->progress_pairs,
						(now - job->t_engine) / 1000.0, job->stats.engine)));
	}
}

/* --- starting the engines ---------------------------------------------- */

/*
 * The GPU engine did not start (st): a cancel is raised; anything else is a
 * NOTICE, and false, so that the CPU engine runs the join instead.
 */
static bool
GpuStartFailed(GjJob *job, gj_status st, const char *err)
{
	if (st == GJ_ERR_CANCELED)
		RaiseCanceled();
	if (st == GJ_ERR_CUDA)
		GjMarkGpuUnusable(err);
	ereport(NOTICE,
			(errmsg("%s: the GPU engine could not start, using the CPU engine", job->spec.fname),
			 errdetail("%s: %s", gj_status_name(st), err),
			 st == GJ_ERR_DEVICE_OOM ?
			 errhint("Raise gpujoin.gpu_memory_limit or free GPU memory.") : 0));
	return false;
}

static void
StartCpuSelfJoin(GjJob *job)
{
	GjResources *res = job->res;
	double		t0 = gj_now_ms();
	gj_join_stats js;
	gj_cpu_selfjoin *cj;

	if (!res->have_grid)
	{
		CheckStatus(gj_grid_build(&res->grid, &res->points, job->spec.eps2),
					"building the grid index");
		res->have_grid = true;
	}
	NoticeIfEnormous(job, gj_grid_estimate_pairs(&res->grid, &res->points,
												 GJ_ESTIMATE_SAMPLE));
	job->stats.index_ms += gj_now_ms() - t0;
	job->t_engine = gj_now_ms();
	CheckStatus(gj_cpu_selfjoin_start(&res->grid, &res->points, GjCpuThreads(), &cj),
				job->spec.fname);
	res->engine = GJ_ENGINE(cj);
	gj_cpu_selfjoin_stats(cj, &js);
	job->stats.engine = "cpu";
	job->stats.threads = js.nthreads;
	job->running = RUN_CPU_SELFJOIN;
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

	memset(&opt, 0, sizeof(opt));
	opt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
	opt.batch_pairs = gj_gpu_batch_pairs_guc;
	st = gj_gpu_selfjoin_start(&res->points, job->spec.eps2, &opt, &gj, err, sizeof(err));
	if (st == GJ_ERR_DEVICE_OOM && StartGpuSlabs(job, &res->points, NULL, 2))
		return true;
	if (st != GJ_OK)
		return GpuStartFailed(job, st, err);
	res->engine = GJ_ENGINE(gj);
	job->stats.index_ms += gj_now_ms() - t0;
	job->t_engine = gj_now_ms();
	gj_gpu_selfjoin_stats(gj, &gs);
	NoticeIfEnormous(job, (double) gs.estimated_pairs);
	job->stats.engine = "gpu";
	job->running = RUN_GPU_SELFJOIN;
	return true;
}

/*
 * Tiles or the grid for an eps function on the given engine
 * (gpujoin.eps_method).  auto: the grid up to GJ_TILES_MIN_DIMS
 * dimensions, where it is at the hardware's limit; above, whichever a
 * sample says costs less: the grid compares the pairs of adjacent cells,
 * one row at a time, tiles compare every pair several times faster per
 * pair (GJ_TILES_GAIN_*: vector lanes and early exits on the CPU, tensor
 * cores on the GPU).
 */
#define GJ_TILES_MIN_DIMS 3
#define GJ_TILES_GAIN_CPU 4.0
#define GJ_TILES_GAIN_GPU 30.0
/*
 * Sampled pairs times dimensions, at most.  The sample's candidate pairs
 * are tested on one thread: at 4e8 (7,071 rows of 16-D exponential data)
 * that took 95-150 ms on this 2-core machine, about what auto lost to the
 * method it chose on 2M rows of Syn16 (1.24 against 1.12 s); at 1e8 (3,535
 * rows) 25-39 ms, with the grid's share 0.395 against 0.397.
 */
#define GJ_TILES_SAMPLE_WORK 1e8

/*
 * Choosing costs time: the sample above, and the blocks' model and sort
 * (PlanBlocks), 31-44 ms together on the GPU host (60-90 ms before both
 * went on threads) and 75-95 ms on this 2-core machine.  Where brute
 * force itself is predicted to take less than GJ_BRUTE_CHEAP_MS, auto
 * takes it without either, and samples only GJ_TILES_SAMPLE_WORK_CHEAP
 * for the result's estimate (the huge-result NOTICE, which needs a tenth
 * of all pairs within eps, and the GPU's buffers).  Measured (16-D
 * exponential rows, eps 0.03): 20K rows on an H200 took 92 ms under auto
 * against 6-10 ms by brute force, 10 ms with this and a sample of 1e7
 * (4.3 ms of it); on 2 cores 10K rows 178 against 101 ms.  The rates are
 * brute force's pair-dimensions a second, conservative (the filter makes
 * wide, far-apart rows faster): the tile kernel on an H100 or H200 2.2e13
 * on Syn16D2M, the CPU's tiles 3.7-4.2e9 a thread on 16-D rows.
 */
#define GJ_BRUTE_CHEAP_MS 100.0
#define GJ_BRUTE_RATE_GPU 1e13
#define GJ_BRUTE_RATE_CPU_THREAD 4e9
#define GJ_TILES_SAMPLE_WORK_CHEAP 2e6

static bool
BruteIsCheap(GjJob *job, GjEngine engine)
{
	double		work = AllPairs(job) * job->res->points.dims,
				rate = engine == GJ_ENGINE_GPU ? GJ_BRUTE_RATE_GPU :
		GJ_BRUTE_RATE_CPU_THREAD * GjCpuThreads();

	return work / rate * 1000.0 <= GJ_BRUTE_CHEAP_MS;
}

/*
 * eps_join's tiles copy both sets into one array (PrepareJoinTiles): where
 * the sets and the copy pass gpujoin.host_memory_limit (or the engines'
 * 2^31 rows), the grid, which needs no copy, answers instead (a NOTICE
 * when tiles were asked for).  Decided once a job.
 */
static bool
JoinTilesFit(GjJob *job)
{
	if (job->join_copy == 0)
	{
		const gj_points *p = &job->res->points;
		double		rows = (double) p->n + (double) job->res->queries.n,
					bytes = 2.0 * rows * (8.0 * p->dims + 8.0);

		job->join_copy = bytes <= (double) GjHostMemoryLimit() && rows <= (double) GJ_MAX_ROWS ?
			1 : -1;
		if (job->join_copy < 0 && gj_eps_method_guc != GJ_EPS_AUTO &&
			gj_eps_method_guc != GJ_EPS_GRID)
			ereport(NOTICE,
					(rows > (double) GJ_MAX_ROWS ?
					 errmsg("%s: tiles take at most %d rows of both tables together; the grid runs instead",
							job->spec.fname, GJ_MAX_ROWS) :
					 errmsg("%s: tiles need %.0f MB of host memory for both tables and their copy, more than gpujoin.host_memory_limit allows; the grid runs instead",
							job->spec.fname, ceil(bytes / 1048576.0))));
	}
	return job->join_copy > 0;
}

static bool
UseTiles(GjJob *job, GjEngine engine)
{
	const gj_points *p = &job->res->points;
	double		cand,
				within;
	int64		m;

	if (job->spec.has_query && !JoinTilesFit(job))
		return false;
	if (gj_eps_method_guc != GJ_EPS_AUTO)
		return gj_eps_method_guc != GJ_EPS_GRID;
	if (p->dims <= GJ_TILES_MIN_DIMS)
		return false;
	if (job->tile_share < 0)
	{
		/*
		 * once a job, for the engine first asked: a fallback to the CPU
		 * decides again from the same sample, and keeps brute_cheap
		 */
		double		t0 = gj_now_ms();

		job->tiles_engine = engine;
		job->brute_cheap = BruteIsCheap(job, engine);
		m = (int64) Min(8192.0, sqrt(2.0 * (job->brute_cheap ? GJ_TILES_SAMPLE_WORK_CHEAP :
											 GJ_TILES_SAMPLE_WORK) / p->dims));
		CheckStatus(gj_sample_pair_shares(p, job->spec.eps2, m, &cand, &within),
					"sampling the input");
		job->tile_share = cand;
		job->stats.estimated_pairs = within * AllPairs(job);
		job->stats.index_ms += gj_now_ms() - t0;
		elog(DEBUG1, "%s: a sample of " INT64_FORMAT " rows: the grid keeps %.3f of pairs, %.2e are within eps (%.1f ms)%s",
			 job->spec.fname, m, cand, within, gj_now_ms() - t0,
			 job->brute_cheap ? "; brute force is cheaper than choosing" : "");
	}
	if (job->brute_cheap)
		return true;
	return job->tile_share * (engine == GJ_ENGINE_GPU ? GJ_TILES_GAIN_GPU : GJ_TILES_GAIN_CPU) >= 1.0;
}

/*
 * The tiles' index (block_index.c): rows sorted into small blocks whose
 * bounds let the engines skip block pairs farther apart than eps, unless
 * gpujoin.eps_method = brute asks for every pair.  The sort happens once a
 * job, before the first tile engine starts (the per-row shapes may start
 * several; they must all see the same row numbers).  A grid built before
 * (on the other order) is dropped.
 */
#define GJ_BLOCKS_MAX_SHARE 0.2	/* auto, GPU: the index when the grid keeps at most this share */
#define GJ_BLOCKS_MAX_KEPT 0.5	/* ... or the blocks' model keeps at most this share */
#define GJ_BLOCKS_MAX_WITHIN 1e-3	/* ... and at most this share of all pairs is within eps */

static void PlanBlocks(GjJob *job);

/*
 * auto's choice of the index, for the engine auto chose tiles for.
 */
static bool
AutoPrune(GjJob *job)
{
	double		within = job->stats.estimated_pairs / Max(AllPairs(job), 1.0);

	if (job->tile_share < 0 || job->brute_cheap)
		return false;
	if (job->tiles_engine == GJ_ENGINE_CPU)
	{
		/*
		 * The CPU's blocks were never slower than brute force by more than
		 * the plan's fixed cost, wherever measured (2 cores, one run each):
		 * 20K-40K exponential rows in 16-D at eps 0.03-0.08, with the model
		 * keeping 52-96% of block pairs and up to 4% of all pairs within
		 * eps, took 0.63-1.03 of brute force's time (at most 20 ms more,
		 * at 20K rows, where the plan costs 30-60 ms); 40K uniform rows in
		 * 16-D 0.30-0.85; 8K clustered rows in 768-D with 5% of all pairs
		 * within (cosine) 0.80.  A kept pair costs what brute force pays for
		 * it, a skipped one nothing, and the sorted rows are read in order.
		 */
		return true;
	}

	/*
	 * On the GPU: where the sampled grid keeps a small share of the pairs
	 * the data is local at eps (clusters), and the blocks' bounds skip most
	 * block pairs too; where it keeps a large share (2M exponential points
	 * in 16-D: 41%) the bounds skip nothing with every dimension in the
	 * key, and the blocks' model below decides.
	 *
	 * Measured on an H100: 2M clustered rows in 16-D with 15 pairs in a
	 * million within eps, 4x faster with the index; 100K clustered
	 * embeddings with 5% of all pairs within eps, 4x slower: sorted rows
	 * put the pairs into few dense tiles, which one CTA each runs by the
	 * float64 rule.  So the index only where pairs are rare too.
	 */
	if (!(within <= GJ_BLOCKS_MAX_WITHIN))
		return false;
	if (job->tile_share <= GJ_BLOCKS_MAX_SHARE)
		return true;

	/*
	 * Elsewhere the blocks' sampled model says (block_index.c): 2M
	 * exponential rows in 16-D at eps 0.03 keep 41% of the grid's pairs,
	 * yet keyed on their 4 widest dimensions the bounds skip two block
	 * pairs in three.
	 */
	PlanBlocks(job);
	return job->block_kept <= GJ_BLOCKS_MAX_KEPT;
}

/*
 * gpujoin.eps_method, or under auto AutoPrune's choice, made once a job:
 * the rows' order and every engine of the job follow it.
 */
static bool
TilesPrune(GjJob *job)
{
	if (gj_eps_method_guc != GJ_EPS_AUTO)
		return gj_eps_method_guc == GJ_EPS_BLOCKS;
	if (job->tiles_prune < 0)
		job->tiles_prune = AutoPrune(job) ? 1 : 0;
	return job->tiles_prune > 0;
}

/*
 * The index's plan for this job's eps, once: the key's dimensions by the
 * sampled model, its cuts copied into the job's memory.
 */
static void
PlanBlocks(GjJob *job)
{
	gj_block_plan plan;
	double		kept,
				t0 = gj_now_ms();

	if (job->blocks_planned)
		return;

	/*
	 * kNN keys every dimension (eps2 < 0): its threshold is not known
	 * before the join.  The model at the kNN spec's eps of 0 keyed 1
	 * dimension, and 30K clustered rows in 128-D took 2.5 s by the CPU's
	 * blocks instead of 0.8 s.
	 */
	CheckStatus(gj_block_plan_make_for(&job->res->points, job->spec.is_knn ? -1.0 : job->spec.eps2,
									   &plan, &kept),
				"planning the rows' blocks");
	job->block_plan = plan;
	if (plan.cut != NULL)
	{
		size_t		bytes = sizeof(double) * (((size_t) 1 << plan.bits) - 1) * plan.m;

		job->block_plan.cut = MemoryContextAlloc(job->res->cxt, bytes);
		memcpy(job->block_plan.cut, plan.cut, bytes);
		free(plan.cut);
	}
	job->block_kept = kept;
	job->blocks_planned = true;
	if (job->spec.is_knn)
		job->stats.knn_key_dims = plan.m;	/* EXPLAIN's kNN Method */
	job->stats.index_ms += gj_now_ms() - t0;
	elog(DEBUG1, "%s: blocks keyed on %d of %d dimensions, the model keeps %.1f%% of block pairs (%.1f ms)",
		 job->spec.fname, plan.m, job->res->points.dims, 100.0 * kept, gj_now_ms() - t0);
}

static void
OrderPoints(GjJob *job, gj_points *p)
{
	double		t0;

	PlanBlocks(job);			/* its own time into index_ms */
	t0 = gj_now_ms();
	CheckStatus(gj_points_block_order_by(p, &job->block_plan), "sorting the rows into blocks");
	job->stats.index_ms += gj_now_ms() - t0;
}

static void
PrepareTiles(GjJob *job)
{
	GjResources *res = job->res;

	if (!TilesPrune(job) || res->block_ordered)
		return;
	OrderPoints(job, &res->points);
	if (res->have_grid)
	{
		gj_grid_free(&res->grid);
		res->have_grid = false;
	}
	res->block_ordered = true;
}

/* The engine of an eps function: by rows, or by the tiles' work in many dimensions. */
static GjEngine
ChooseEpsEngine(GjJob *job)
{
	const gj_points *p = &job->res->points;
	double		work = p->dims > GJ_TILES_MIN_DIMS ? AllPairs(job) * p->dims : 0.0;

	return GjChooseEngineFor(p->n + (job->spec.has_query ? job->res->queries.n : 0), work);
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
	if (TilesPrune(job) && !res->block_ordered)
	{
		OrderPoints(job, r);
		OrderPoints(job, s);
		res->block_ordered = true;
	}
	t0 = gj_now_ms();
	CheckStatus(gj_points_concat(&res->both, r, s), "copying the rows for the tiles");
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
	o->prune = TilesPrune(job);
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
	job->stats.tiles_cheap = !o->prune && job->brute_cheap && gj_eps_method_guc == GJ_EPS_AUTO;
	job->stats.tiles_key_dims = job->block_plan.m;
	job->stats.tiles_kept = job->blocks_planned ? job->block_kept : -1.0;
	return p;
}

/*
 * The self-join or eps_join by tiles on the GPU; false (after a NOTICE)
 * when the CPU must run it.
 */
static bool
StartGpuTiles(GjJob *job)
{
	GjResources *res = job->res;
	gj_tiles_options o;
	gj_gpu_options gopt;
	gj_gpu_tiles *tj;
	char		err[256];
	gj_status	st;
	const gj_points *p = TileInput(job, &o);	/* its sort and copy: index_ms */
	double		t0 = gj_now_ms();

	o.expected_pairs = Max(job->stats.estimated_pairs, 0.0);
	memset(&gopt, 0, sizeof(gopt));
	gopt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
	gopt.batch_pairs = gj_gpu_batch_pairs_guc;
	st = gj_gpu_tiles_start(p, &o, &gopt, &tj, err, sizeof(err));
	if (st != GJ_OK)
		return GpuStartFailed(job, st, err);
	res->engine = GJ_ENGINE(tj);
	job->stats.index_ms += gj_now_ms() - t0;
	if (job->stats.estimated_pairs >= 0)
		NoticeIfEnormous(job, job->stats.estimated_pairs);
	job->t_engine = gj_now_ms();
	job->stats.engine = "gpu (tiles)";
	job->running = RUN_GPU_TILES;
	return true;
}

/* The self-join or eps_join by tiles on the CPU (pairs as ids). */
static void
StartCpuTiles(GjJob *job)
{
	GjResources *res = job->res;
	gj_tiles_options o;
	gj_cpu_tiles *tj;
	const gj_points *p = TileInput(job, &o);

	if (job->stats.estimated_pairs >= 0)
		NoticeIfEnormous(job, job->stats.estimated_pairs);
	job->t_engine = gj_now_ms();
	CheckStatus(gj_cpu_tiles_start(p, &o, GjCpuThreads(), &tj), job->spec.fname);
	res->engine = GJ_ENGINE(tj);
	job->stats.engine = "cpu (tiles)";
	job->stats.threads = GjCpuThreads();
	job->running = RUN_CPU_TILES;
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

	if (job->gpu_status != GJ_OK)
		return StartCpuTileRows(arg, out);
	p = TileInput(job, &o);
	o.emit_rows = 1;
	o.expected_pairs = Max(job->stats.estimated_pairs, 0.0);
	memset(&gopt, 0, sizeof(gopt));
	gopt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
	st = gj_gpu_tiles_start(p, &o, &gopt, &tj, job->gpu_err, sizeof(job->gpu_err));
	if (st == GJ_OK)
	{
		*out = GJ_ENGINE(tj);
		return GJ_OK;
	}
	if (st == GJ_ERR_CANCELED)
		return st;
	job->gpu_status = st;
	return StartCpuTileRows(arg, out);
}

/*
 * Counts, DBSCAN or lists from the pairs of job->source; eps_join_counts
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
		gj_status	st = all != NULL ? gj_pairs_count(&job->source, res->both.n, all) :
			GJ_ERR_NOMEM;

		for (int64 i = 0; st == GJ_OK && i < res->queries.n; i++)
			res->rowval[i] = all[i] - 1;
		free(all);
		return st;
	}

	if (job->spec.shape == GJ_SHAPE_LISTS)
		return gj_pairs_lists(&job->source, &res->points, GjHostMemoryLimit() / 16,
							  &res->list_off, &res->list_nb, &res->list_nd, entries);
	AllocRowResults(job, n);
	if (job->spec.shape == GJ_SHAPE_COUNTS)
		return gj_pairs_count(&job->source, n, res->rowval);
	return gj_pairs_dbscan(&job->source, &res->points, job->spec.minpts,
						   res->rowval, res->rowflag);
}

/*
 * Per-row shapes by tiles on the given engine: counts, DBSCAN or lists
 * from the tile join's pairs, into res->rowval/rowflag or the list arrays.
 * A GPU that fails, at its start or part-way, leaves the work to the CPU
 * tile join (no row has gone out yet) with a NOTICE.
 */
static void
TileRows(GjJob *job, GjEngine engine)
{
	int64_t		entries = 0;
	gj_status	st;

	if (job->spec.has_query)
		PrepareJoinTiles(job);	/* eps_join_counts: r's rows first, in the order counted */
	else
		PrepareTiles(job);
	job->source.start = engine == GJ_ENGINE_GPU ? StartGpuTileRows : StartCpuTileRows;
	job->source.arg = job;
	job->source.store_bytes = 0;
	job->gpu_status = GJ_OK;
	st = TileRowsFrom(job, &entries);
	if (engine == GJ_ENGINE_GPU && job->gpu_status == GJ_OK &&
		(st == GJ_ERR_CUDA || st == GJ_ERR_DEVICE_OOM))
	{
		/* failed part-way: the message of the engine is gone, its status is not */
		job->gpu_status = st;
		snprintf(job->gpu_err, sizeof(job->gpu_err), "the GPU tile join failed while running");
		job->source.start = StartCpuTileRows;
		st = TileRowsFrom(job, &entries);
	}
	if (engine == GJ_ENGINE_GPU && job->gpu_status != GJ_OK)
		GpuStartFailed(job, job->gpu_status, job->gpu_err);
	job->stats.engine = engine == GJ_ENGINE_GPU && job->gpu_status == GJ_OK ?
		"gpu (tiles)" : "cpu (tiles)";
	job->stats.threads = GjCpuThreads();
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
	CheckStatus(st, job->spec.fname);
}

/* The per-row answers by tiles, when the sample says so (UseTiles): true when done. */
static bool
RowsByTiles(GjJob *job, bool allow_gpu)
{
	GjEngine	e = allow_gpu ? ChooseEpsEngine(job) : GJ_ENGINE_CPU;

	if (!UseTiles(job, e))
		return false;
	job->t_engine = gj_now_ms();
	TileRows(job, e);
	FinishRows(job);
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
	rows = ListedRows(&res->points, job->spec.filter_ids, job->spec.nfilter, &nlisted);
	if ((double) nlisted * (double) res->points.n > GJ_PROBE_BRUTE_MAX)
	{
		CheckStatus(gj_grid_build(&res->grid, &res->points, job->spec.eps2),
					"building the grid index");
		res->have_grid = true;
		pfree(rows);
		rows = ListedRows(&res->points, job->spec.filter_ids, job->spec.nfilter, &nlisted);
	}
	job->stats.index_ms += gj_now_ms() - t0;

	memset(&po, 0, sizeof(po));
	po.column = job->spec.filter_column;
	po.symmetric = job->spec.symmetric;
	po.rows = rows;
	po.nrows = nlisted;
	job->t_engine = gj_now_ms();
	CheckStatus(gj_cpu_probe_start(res->have_grid ? &res->grid : NULL, &res->points,
								   job->spec.eps2, &po, GjCpuThreads(), &pj),
				job->spec.fname);
	res->engine = GJ_ENGINE(pj);
	pfree(rows);
	job->stats.engine = res->have_grid ? "cpu (restricted, grid)" : "cpu (restricted, brute force)";
	job->stats.threads = GjCpuThreads();
	job->twice = false;			/* the probe's rows are final */
	job->running = RUN_PROBE;
}

/* The device budget of one join: gpujoin.gpu_memory_limit, or 90% of what is free. */
static size_t
GpuBudget(void)
{
	gj_cuda_device_info info;
	size_t		budget;

	if (gj_cuda_probe(&info) != GJ_OK)
		return 0;
	budget = (size_t) (info.free_mem * 0.9);
	if (gj_gpu_memory_limit_guc > 0 && (size_t) gj_gpu_memory_limit_guc * 1048576 < budget)
		budget = (size_t) gj_gpu_memory_limit_guc * 1048576;
	return budget;
}

/*
 * Rows of dims coordinates a slab step may hold on the device: the budget
 * less two grids' fixed part and a quarter (at least 16 MB) for results,
 * each row taking its share of the grid and extra bytes.
 */
static int64
SlabRows(int dims, size_t extra, int share)
{
	size_t		budget = GpuBudget() / share,
				fixed = 2 * gj_gpu_grid_bytes(0, dims),
				reserve = Max(budget / 4, (size_t) 16 << 20);

	return budget > fixed + reserve ?
		(int64) ((budget - fixed - reserve) /
				 (gj_gpu_grid_bytes(1, dims) - gj_gpu_grid_bytes(0, dims) + extra)) : 0;
}

/*
 * The slabs sort the rows along one dimension: an index built over the old
 * order (a rerun's) is dropped, to be built again if the CPU runs.
 */
static void
RowsMoved(GjResources *res)
{
	if (res->have_grid)
	{
		gj_grid_free(&res->grid);
		res->have_grid = false;
	}
	res->block_ordered = false;
}

/*
 * Counts (eps_neighbor_counts, eps_join_counts) or DBSCAN beyond the
 * device: slab by slab on the GPU (core/slab_density.c), the rows (and the
 * r rows) sorted along one dimension first; res->rowval follows the new
 * order.  False with *st and err set when not even a slab fits or a step
 * failed: the caller's NOTICE, and the CPU answers for every row.
 */
static bool
GpuRowsInSlabs(GjJob *job, gj_status *st, char *err, size_t errlen)
{
	GjResources *res = job->res;
	bool		dbscan = job->spec.shape == GJ_SHAPE_DBSCAN;
	int64		max_rows = SlabRows(res->points.dims,
									dbscan ? GJ_GPU_DENSITY_ROW_BYTES + GJ_GPU_DENSITY_GIVEN_ROW_BYTES : 0,
									1);
	gj_gpu_slab_ctx ctx;
	gj_slab_engine e;
	gj_slab_info si;

	if (max_rows < 4096)
		return false;
	RowsMoved(res);
	memset(&ctx, 0, sizeof(ctx));
	gj_gpu_slab_engine(&e, &ctx);
	ctx.opt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
	if (!dbscan)
		*st = gj_slab_counts(&res->points, job->spec.has_query ? &res->queries : NULL,
							 job->spec.eps2, max_rows, &e, res->rowval, &si);
	else
		*st = gj_slab_dbscan(&res->points, job->spec.eps2, job->spec.minpts, max_rows, &e,
							 res->rowval, res->rowflag, &si);
	if (*st == GJ_ERR_CANCELED)
		RaiseCanceled();
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
	job->stats.engine = "gpu (slabs)";
	return true;
}

/*
 * Start the GPU engine of slab step t into *out.  Each engine may use half
 * the device budget, so that the next step can start while the current
 * one's pairs are still being emitted (GjJobNext).
 */
static gj_status
StartSlabStep(GjJob *job, int t, gj_engine **out, char *err, size_t errlen)
{
	gj_slab_step *st = &job->slabs.steps[t];
	gj_points  *a = &job->slab_view[t % 2][0],
			   *b = &job->slab_view[t % 2][1];
	gj_gpu_options opt;

	memset(&opt, 0, sizeof(opt));
	opt.memory_limit = job->slab_limit;
	opt.batch_pairs = gj_gpu_batch_pairs_guc;
	gj_points_view(a, job->slab_idx, st->a0, st->a1);
	if (st->self)
		return gj_gpu_selfjoin_start(a, job->spec.eps2, &opt, (gj_gpu_selfjoin **) out,
									 err, errlen);
	gj_points_view(b, job->slab_probe != NULL ? job->slab_probe : job->slab_idx,
				   st->b0, st->b1);
	return gj_gpu_join_start(a, b, job->spec.eps2, job->slab_order, &opt,
							 (gj_gpu_selfjoin **) out, err, errlen);
}

/*
 * Slabs: once the running step's kernels are done (its pairs wait in host
 * buffers for the executor), start the next step's engine, so that its
 * upload and index overlap the emission of those pairs.  A failure here is
 * not reported: the step starts again when its turn comes, as before.
 */
static void
StartNextSlabEarly(GjJob *job)
{
	GjResources *res = job->res;
	gj_gpu_stats gs;
	char		err[256];
	gj_status	st;

	if (job->slabs.nsteps == 0 || job->slab_step + 1 >= job->slabs.nsteps ||
		res->next_engine != NULL || job->slab_early_failed ||
		job->running != RUN_GPU_SELFJOIN || res->engine == NULL)
		return;
	gj_gpu_selfjoin_stats((gj_gpu_selfjoin *) res->engine, &gs);
	if (gs.done_ms <= 0)
		return;					/* its kernels still run */
	st = StartSlabStep(job, job->slab_step + 1, &res->next_engine, err, sizeof(err));
	if (st == GJ_ERR_CANCELED)
		RaiseCanceled();
	if (st != GJ_OK)
	{
		res->next_engine = NULL;
		job->slab_early_failed = true;
		elog(DEBUG1, "%s: slab step %d did not start early: %s", job->spec.fname,
			 job->slab_step + 1, err);
	}
}

/*
 * The GPU could not hold the index of idx (probed by probe, or a
 * self-join): cut it into slabs that fit, and start the first step; false
 * when not even a slab fits (the caller's NOTICE, then the CPU engine).  order: the probe steps'
 * row order (see gj_gpu_join_start).
 */
#define GJ_SLAB_EARLY_MIN_ROWS 65536	/* rows a half-budget step must hold */

static bool
StartGpuSlabs(GjJob *job, gj_points *idx, gj_points *probe, int order)
{
	/*
	 * Steps of half the budget, so that the next can start early; where
	 * half the budget holds too few rows (its fixed part dominates), steps
	 * of the whole, one after another.
	 */
	int			share = SlabRows(idx->dims, 0, 2) >= GJ_SLAB_EARLY_MIN_ROWS ? 2 : 1;
	int64		max_rows = SlabRows(idx->dims, 0, share);
	gj_gpu_slab_ctx ctx;
	gj_slab_engine e;
	char		err[256];
	gj_status	st;
	double		t0 = gj_now_ms();

	if (max_rows < 4096)
		return false;
	RowsMoved(job->res);
	memset(&ctx, 0, sizeof(ctx));
	gj_gpu_slab_engine(&e, &ctx);	/* for its sort */
	ctx.opt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
	st = gj_slabs_plan_ordered(idx, probe, job->spec.eps2, max_rows, e.order, e.arg,
							   &job->slabs);
	if (st != GJ_OK || job->slabs.nsteps == 0)
	{
		gj_slabs_free(&job->slabs);
		if (st == GJ_ERR_NOMEM)
			CheckStatus(st, job->spec.fname);
		return false;
	}
	{
		/* the steps in the job's context: released with it, however it ends */
		gj_slab_step *steps = MemoryContextAlloc(job->res->cxt,
												 sizeof(gj_slab_step) * job->slabs.nsteps);

		memcpy(steps, job->slabs.steps, sizeof(gj_slab_step) * job->slabs.nsteps);
		free(job->slabs.steps);
		job->slabs.steps = steps;
	}
	job->slab_idx = idx;
	job->slab_probe = probe;
	job->slab_order = order;
	job->slab_step = 0;
	job->slab_limit = GpuBudget() / share;
	job->slab_early_failed = share == 1;	/* no room for two steps at once */
	st = StartSlabStep(job, 0, &job->res->engine, err, sizeof(err));
	if (st != GJ_OK)
	{
		/* the caller's NOTICE names the first failure; the CPU runs it */
		job->res->engine = NULL;
		job->slabs.nsteps = 0;
		if (st == GJ_ERR_CANCELED)
			RaiseCanceled();
		return false;
	}
	job->stats.index_ms += gj_now_ms() - t0;
	job->t_engine = gj_now_ms();
	job->stats.engine = "gpu (slabs)";
	job->stats.slices = job->slabs.nslabs;
	job->stats.slice_rows = max_rows;
	job->stats.slab_steps = job->slabs.nsteps;
	job->running = RUN_GPU_SELFJOIN;
	return true;
}

/*
 * Index the r rows (the smaller set) rather than the s rows?  Only where
 * the smaller grid gets its cell table: without it each probe searches
 * cell_id, and 1M probes in their own order cost more than indexing them
 * (geography in 3-D at 155 m: 20M cells for 100K rows, no table).  *plan:
 * r's grid, planned.
 */
static bool
IndexSmaller(const gj_points *r, const gj_points *s, double eps2, gj_grid *plan)
{
	if (r->n >= s->n)
		return false;
	return gj_grid_plan(plan, r, eps2) == GJ_OK && gj_grid_table_fits(plan);
}

/*
 * eps_join: the grid over one set, every row of the other probing it; the
 * engines write (r, s) rows whichever set that is.  The GPU indexes the
 * smaller set (less device memory; both sets are sorted into the grid's
 * cells there), and so does the CPU where that grid gets its cell table
 * (IndexSmaller): its probes run in the other set's own order, but a small
 * grid stays in cache and finds a probe's cells through its table
 * (grid.c).  On 2 cores, 100K x 1M in 2-D at ~3 partners: indexing the
 * 1M rows took 180-200 ms and the 100K probes 57-60 ms; indexing the 100K
 * rows takes 37 ms and the 1M probes 97-103 ms.
 * (Before the table, a probe in random order cost about twice what sorting
 * a row into the grid does, 300 vs 140 ns, and the CPU indexed the larger.)
 */
static void
StartJoin(GjJob *job, bool allow_gpu)
{
	GjResources *res = job->res;
	int			swap;			/* index the r rows */
	gj_grid		plan;
	gj_points  *idx;
	const gj_points *probe;
	gj_probe_options po;
	gj_cpu_probe *pj;
	double		t0 = gj_now_ms();

	job->twice = false;
	/* many dimensions: tiles where the sample says, as for the self-join */
	if (allow_gpu && ChooseEpsEngine(job) == GJ_ENGINE_GPU && UseTiles(job, GJ_ENGINE_GPU))
	{
		if (StartGpuTiles(job))
			return;
		allow_gpu = false;		/* after its NOTICE: the CPU engine */
	}
	else if (allow_gpu && ChooseEpsEngine(job) == GJ_ENGINE_GPU)
	{
		gj_gpu_options opt;
		gj_gpu_stats gs;
		gj_gpu_selfjoin *gj;
		char		err[256];
		gj_status	st;

		swap = res->queries.n < res->points.n;
		idx = swap ? &res->queries : &res->points;
		probe = swap ? &res->points : &res->queries;
		memset(&opt, 0, sizeof(opt));
		opt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
		opt.batch_pairs = gj_gpu_batch_pairs_guc;
		st = gj_gpu_join_start(idx, probe, job->spec.eps2, swap, &opt, &gj, err, sizeof(err));
		if (st == GJ_ERR_DEVICE_OOM &&
			StartGpuSlabs(job, idx, (gj_points *) probe, swap))
			return;
		if (st == GJ_OK)
		{
			res->engine = GJ_ENGINE(gj);
			job->stats.index_ms += gj_now_ms() - t0;
			job->t_engine = gj_now_ms();
			gj_gpu_selfjoin_stats(gj, &gs);
			NoticeIfEnormous(job, (double) gs.estimated_pairs);
			job->stats.estimated_pairs = (double) gs.estimated_pairs;
			job->stats.engine = "gpu";
			job->running = RUN_GPU_SELFJOIN;
			return;
		}
		GpuStartFailed(job, st, err);
	}
	if (UseTiles(job, GJ_ENGINE_CPU))
	{
		StartCpuTiles(job);
		return;
	}

	/* the same choice on a rerun: the same rows give the same plan */
	if (res->queries.n < res->points.n)
		swap = IndexSmaller(&res->queries, &res->points, job->spec.eps2, &plan);
	else
		swap = res->queries.n > res->points.n &&
			!IndexSmaller(&res->points, &res->queries, job->spec.eps2, &plan);
	idx = swap ? &res->queries : &res->points;
	probe = swap ? &res->points : &res->queries;
	/* few pairs to test: no index to build */
	if ((double) res->queries.n * (double) res->points.n > GJ_PROBE_BRUTE_MAX &&
		!res->have_grid)
	{
		CheckStatus(gj_grid_build(&res->grid, idx, job->spec.eps2),
					"building the grid index");
		res->have_grid = true;
	}
	job->stats.index_ms += gj_now_ms() - t0;
	memset(&po, 0, sizeof(po));
	po.queries = probe;
	po.swap = swap;
	job->t_engine = gj_now_ms();
	CheckStatus(gj_cpu_probe_start(res->have_grid ? &res->grid : NULL, idx,
								   job->spec.eps2, &po, GjCpuThreads(), &pj),
				job->spec.fname);
	res->engine = GJ_ENGINE(pj);
	job->stats.engine = res->have_grid ? "cpu" : "cpu (brute force)";
	job->stats.threads = GjCpuThreads();
	job->running = RUN_PROBE;
}

/* eps_join_counts: every r row's count of s rows, the grid over the smaller set on the CPU. */
static void
StartJoinCounts(GjJob *job, bool allow_gpu)
{
	GjResources *res = job->res;
	double		t0 = gj_now_ms();
	bool		done = false;
	gj_grid		rg;				/* the r rows' grid, when it is worth building */

	AllocRowResults(job, res->queries.n);
	job->t_engine = gj_now_ms();
	if (res->points.n == 0)
	{
		/* no s rows: every r row counts none */
		memset(res->rowval, 0, sizeof(int32_t) * res->queries.n);
		job->stats.engine = "none";
		FinishRows(job);
		return;
	}
	/* many dimensions: each r row's pairs of the tile engines' cross plan */
	if (RowsByTiles(job, allow_gpu))
		return;
	if (allow_gpu && ChooseEpsEngine(job) == GJ_ENGINE_GPU)
	{
		gj_gpu_options opt;
		gj_gpu_density_info gi;
		char		err[256];
		gj_status	st;

		memset(&opt, 0, sizeof(opt));
		opt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
		st = gj_gpu_join_counts(&res->points, &res->queries, job->spec.eps2, &opt,
								res->rowval, &gi, err, sizeof(err));
		if (st == GJ_OK)
		{
			job->stats.index_ms += gi.index_ms;
			job->stats.batches = gi.launches;
			job->stats.engine = "gpu";
			done = true;
		}
		else if (st == GJ_ERR_DEVICE_OOM && GpuRowsInSlabs(job, &st, err, sizeof(err)))
			done = true;
		else
			GpuStartFailed(job, st, err);
	}
	if (!done && IndexSmaller(&res->queries, &res->points, job->spec.eps2, &rg))
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
		CheckStatus(st, job->spec.fname);
		if (done)
		{
			job->stats.engine = "cpu";
			job->stats.threads = GjCpuThreads();
		}
	}
	if (!done)
	{
		EnsureGrid(job);
		job->stats.index_ms += gj_now_ms() - t0;
		job->t_engine = gj_now_ms();
		CheckStatus(gj_cpu_count_queries(&res->grid, &res->points, &res->queries,
										 GjCpuThreads(), res->rowval),
					job->spec.fname);
		job->stats.engine = "cpu";
		job->stats.threads = GjCpuThreads();
	}
	FinishRows(job);
}

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
		CheckStatus(gj_knn_grid_build(&res->grid, &res->points), "building the kNN grid");
		res->have_grid = true;
	}
	if (job->kopt.exclude_self && job->spec.filter_column == 0)
	{
		/* self kNN of the listed rows: their positions after the sort */
		rows = ListedRows(&res->points, job->spec.filter_ids, job->spec.nfilter, &nrows);
		job->kopt.self_rows = rows;
		job->kopt.nself = nrows;
	}
	job->stats.index_ms += gj_now_ms() - t0;
	job->t_engine = gj_now_ms();
	CheckStatus(gj_cpu_knn_start(&res->points, res->have_grid ? &res->grid : NULL,
								 job->qs, &job->kopt, GjCpuThreads(), &kj),
				job->spec.fname);
	res->engine = GJ_ENGINE(kj);
	if (rows != NULL)
		pfree(rows);
	job->kopt.self_rows = NULL;
	job->stats.engine = "cpu";
	job->stats.threads = GjCpuThreads();
	job->running = RUN_CPU_KNN;
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

	memset(&gopt, 0, sizeof(gopt));
	gopt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
	gopt.block_plan = block_plan;
	st = gj_gpu_knn_start(&res->points, job->qs, &job->kopt, &gopt, &kj, err, sizeof(err));
	if (st != GJ_OK)
		return GpuStartFailed(job, st, err);
	res->engine = GJ_ENGINE(kj);
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
	job->stats.engine = "gpu";
	job->running = RUN_GPU_KNN;
	return true;
}

/*
 * Per-row shapes.  Counts and DBSCAN compute every row's answer first
 * (memory O(rows), no pair stored), then hand rows out; neighbour lists
 * stream from the CPU engine's chunks.
 */
static void
EnsureGrid(GjJob *job)
{
	GjResources *res = job->res;

	if (!res->have_grid)
	{
		CheckStatus(gj_grid_build(&res->grid, &res->points, job->spec.eps2),
					"building the grid index");
		res->have_grid = true;
	}
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

	memset(&opt, 0, sizeof(opt));
	opt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
	if (job->spec.shape == GJ_SHAPE_COUNTS)
		st = gj_gpu_count_within(&res->points, job->spec.eps2, 0, &opt,
								 res->rowval, &gi, err, sizeof(err));
	else
		st = gj_gpu_dbscan(&res->points, job->spec.eps2, job->spec.minpts, &opt,
						   res->rowval, res->rowflag, &gi, err, sizeof(err));
	if (st == GJ_ERR_DEVICE_OOM && GpuRowsInSlabs(job, &st, err, sizeof(err)))
		return true;
	if (st != GJ_OK)
		return GpuStartFailed(job, st, err);
	job->stats.index_ms += gi.index_ms;
	job->stats.batches = gi.launches;
	job->stats.engine = "gpu";
	return true;
}

/* Room for n per-row answers (and DBSCAN's core flags), kept across reruns. */
static void
AllocRowResults(GjJob *job, int64 n)
{
	GjResources *res = job->res;

	if (res->rowval == NULL)
		res->rowval = malloc(sizeof(int32_t) * (n + 1));
	if (res->rowflag == NULL && job->spec.shape == GJ_SHAPE_DBSCAN)
		res->rowflag = malloc(n + 1);
	if (res->rowval == NULL ||
		(job->spec.shape == GJ_SHAPE_DBSCAN && res->rowflag == NULL))
		GjCheckStatus(GJ_ERR_NOMEM, job->spec.fname);
}

/*
 * Geography counts and DBSCAN of all the rows: the engines count within
 * the chords in_max and out_min (core/slab_density.c's band: on the GPU
 * where it can, in slabs where it must, else on the CPU), PostGIS decides
 * the pairs in between, and DBSCAN clusters under that rule, the band's
 * pairs linking as the others do.  res->rowval (and rowflag) follow the
 * rows' new order.
 */
static void
GeoBandRows(GjJob *job, bool allow_gpu)
{
	GjResources *res = job->res;
	gj_points  *p = &res->points;
	int64		n = p->n;
	double		in2 = job->geo.g.in_max * job->geo.g.in_max,
				out2 = job->spec.eps2;
	bool		dbscan = job->spec.shape == GJ_SHAPE_DBSCAN;
	bool		gpu = allow_gpu && GjChooseEngine(n) == GJ_ENGINE_GPU;
	int			nthreads = GjCpuThreads();
	int64		max_rows = 0;
	gj_gpu_slab_ctx ctx;
	gj_slab_engine e;
	gj_slab_info si;
	gj_band		found,
				band;
	int64		kept = 0;
	gj_status	st = GJ_OK;
	double		t0;

	AllocRowResults(job, n);
	RowsMoved(res);
	memset(&ctx, 0, sizeof(ctx));
	if (gpu)
	{
		max_rows = SlabRows(p->dims,
							dbscan ? GJ_GPU_DENSITY_ROW_BYTES + GJ_GPU_DENSITY_GIVEN_ROW_BYTES : 0, 1);
		gpu = max_rows >= 4096;
	}
	if (gpu)
	{
		gj_gpu_slab_engine(&e, &ctx);
		ctx.opt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
		st = gj_slab_band(p, in2, out2, max_rows, &e, res->rowval, &found, &si);
		if (st != GJ_OK)
			gpu = GpuStartFailed(job, st, ctx.err[0] ? ctx.err : "the slabs could not be planned");
	}
	if (!gpu)
	{
		gj_cpu_slab_engine(&e, &nthreads);
		max_rows = 2 * n + 2;	/* one slab */
		CheckStatus(gj_slab_band(p, in2, out2, max_rows, &e, res->rowval, &found, &si),
					job->spec.fname);
	}

	/* the band in the job's memory, then PostGIS's word on each pair */
	t0 = gj_now_ms();
	band = found;
	band.a = palloc(sizeof(int64) * (found.n + 1));
	band.b = palloc(sizeof(int64) * (found.n + 1));
	band.c = palloc(sizeof(double) * (found.n + 1));
	memcpy(band.a, found.a, sizeof(int64) * found.n);
	memcpy(band.b, found.b, sizeof(int64) * found.n);
	memcpy(band.c, found.c, sizeof(double) * found.n);
	gj_band_free(&found);
	{
		int64	   *ida = palloc(sizeof(int64) * (band.n + 1)),
				   *idb = palloc(sizeof(int64) * (band.n + 1));
		bool	   *within = palloc(sizeof(bool) * (band.n + 1));

		for (int64 k = 0; k < band.n; k++)
		{
			ida[k] = p->ids[band.a[k]];
			idb[k] = p->ids[band.b[k]];
		}
		GjGeographyDecide(&job->geo, &res->geo_points, ida, &res->geo_points, idb, band.c,
						  band.n, within, NULL);
		for (int64 k = 0; k < band.n; k++)
			if (within[k])
			{
				res->rowval[band.a[k]]++;
				res->rowval[band.b[k]]++;
				band.a[kept] = band.a[k];
				band.b[kept] = band.b[k];
				band.c[kept++] = band.c[k];
			}
		pfree(ida);
		pfree(idb);
		pfree(within);
	}
	elog(DEBUG1, "%s: %lld band pairs, %lld within d, decided in %.1f ms; %lld slabs, counts %.1f ms",
		 job->spec.fname, (long long) band.n, (long long) kept, gj_now_ms() - t0,
		 (long long) si.nslabs, si.counts_ms);
	band.n = kept;

	if (dbscan)
	{
		for (int64 i = 0; i < n; i++)
			res->rowflag[i] = res->rowval[i] >= job->spec.minpts;
		st = gj_slab_band_dbscan(p, in2, out2, res->rowflag, &band, max_rows, &e,
								 res->rowval, &si);
		if (st != GJ_OK && st != GJ_ERR_CANCELED && gpu)
		{
			gpu = GpuStartFailed(job, st, ctx.err[0] ? ctx.err : "a slab step failed");
			gj_cpu_slab_engine(&e, &nthreads);
			max_rows = 2 * n + 2;
			st = gj_slab_band_dbscan(p, in2, out2, res->rowflag, &band, max_rows, &e,
									 res->rowval, &si);
		}
		CheckStatus(st, job->spec.fname);
	}
	pfree(band.a);
	pfree(band.b);
	pfree(band.c);
	if (gpu)
	{
		job->stats.index_ms += ctx.info.index_ms;
		job->stats.batches = ctx.info.launches;
		job->stats.engine = si.nslabs > 1 ? "gpu (slabs)" : "gpu";
		if (si.nslabs > 1)
		{
			job->stats.slices = si.nslabs;
			job->stats.slice_rows = max_rows;
			job->stats.slab_steps = si.calls;
		}
	}
	else
	{
		job->stats.engine = "cpu";
		job->stats.threads = nthreads;
	}
	job->geo_band = true;
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

	memset(&opt, 0, sizeof(opt));
	opt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
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
		size_t		budget = GpuBudget(),
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
			RowsMoved(res);
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
			RaiseCanceled();
		if (wst == GJ_OK)
		{
			st = GJ_OK;
			job->stats.slices = nwin;
			job->stats.slab_steps = nwin;	/* a window a step */
			job->stats.slice_rows = max_rows;
		}
	}
	if (st != GJ_OK)
		return GpuStartFailed(job, st, err);
	res->engine = GJ_ENGINE(lj);
	gj_gpu_lists_stats(lj, &li);
	job->stats.index_ms += li.index_ms;
	elog(DEBUG1, "%s: GPU lists started in %.1f ms (index %.1f ms), %lld windows",
		 job->spec.fname, li.start_ms, li.index_ms, (long long) li.windows);
	job->t_engine = gj_now_ms();
	job->stats.engine = li.windows > 1 ? "gpu (slabs)" : "gpu";
	job->running = RUN_GPU_LISTS;
	return true;
}

static void
StartRows(GjJob *job, bool allow_gpu)
{
	GjResources *res = job->res;
	int64		n = res->points.n;
	double		t0 = gj_now_ms();
	bool		done = false;
	bool		restricted = job->spec.filter_column == 0;	/* WHERE id = ... */
	uint32	   *rows = NULL;
	int64		nrows = n;
	gj_cpu_lists *lj;

	/* many dimensions: the shapes from the tile join's pairs */
	if (!restricted && RowsByTiles(job, allow_gpu))
		return;
	if (job->geo.on && !restricted && job->spec.shape != GJ_SHAPE_LISTS)
	{
		job->t_engine = gj_now_ms();
		GeoBandRows(job, allow_gpu);
		FinishRows(job);
		return;
	}
	if (job->spec.shape == GJ_SHAPE_LISTS)
	{
		if (!restricted && allow_gpu && GjChooseEngine(n) == GJ_ENGINE_GPU &&
			StartGpuLists(job))
			return;
		EnsureGrid(job);
		if (restricted)
			rows = ListedRows(&res->points, job->spec.filter_ids, job->spec.nfilter, &nrows);
		job->stats.index_ms += gj_now_ms() - t0;
		job->t_engine = gj_now_ms();
		CheckStatus(gj_cpu_lists_start(&res->grid, &res->points, rows, nrows,
									   GjCpuThreads(), &lj), job->spec.fname);
		res->engine = GJ_ENGINE(lj);
		if (rows != NULL)
			pfree(rows);		/* the engine keeps a copy */
		job->stats.engine = restricted ? "cpu (restricted)" : "cpu";
		job->stats.threads = GjCpuThreads();
		job->running = RUN_CPU_LISTS;
		return;
	}
	if (restricted)
		allow_gpu = false;		/* WHERE id = ...: the listed rows, on the CPU */
	job->t_engine = gj_now_ms();
	if (allow_gpu && GjChooseEngine(n) == GJ_ENGINE_GPU)
	{
		AllocRowResults(job, n);
		done = GpuRows(job);
	}
	if (!done)
	{
		EnsureGrid(job);
		if (restricted)
			job->subset = ListedRows(&res->points, job->spec.filter_ids,
									 job->spec.nfilter, &job->nsubset);
		nrows = restricted ? job->nsubset : n;
		AllocRowResults(job, nrows);
		job->stats.index_ms += gj_now_ms() - t0;
		job->t_engine = gj_now_ms();
		if (job->spec.shape == GJ_SHAPE_COUNTS)
			CheckStatus(gj_cpu_count_rows(&res->grid, &res->points, job->subset, nrows,
										  0, GjCpuThreads(), res->rowval),
						job->spec.fname);
		else
			CheckStatus(gj_cpu_dbscan(&res->grid, &res->points, job->spec.minpts,
									  GjCpuThreads(), res->rowval, res->rowflag),
						job->spec.fname);
		job->stats.engine = restricted ? "cpu (restricted)" : "cpu";
		job->stats.threads = GjCpuThreads();
	}
	FinishRows(job);
}

/* Per-row answers computed: number DBSCAN's clusters, then hand rows out. */
static void
FinishRows(GjJob *job)
{
	GjResources *res = job->res;

	if (job->spec.shape == GJ_SHAPE_DBSCAN)
		CheckStatus(gj_dbscan_number(&res->points, res->rowval, res->rowflag,
									 &job->nclusters), job->spec.fname);
	if (job->geo.on && job->spec.shape == GJ_SHAPE_COUNTS && !job->geo_band)
	{
		/* geography: the counts within d, not within the engines' chord */
		if (job->spec.has_query)
			GjGeographyRepairCounts(&job->geo, &res->points, &res->geo_points,
									&res->queries, &res->geo_queries, NULL,
									res->queries.n, res->rowval);
		else
			GjGeographyRepairCounts(&job->geo, &res->points, &res->geo_points, NULL, NULL,
									job->subset, job->subset != NULL ? job->nsubset : res->points.n,
									res->rowval);
	}
	job->stats.join_ms += gj_now_ms() - job->t_engine;
	job->t_engine = gj_now_ms();
	job->pos = 0;
	job->running = RUN_ROWS;
}

/* Start whichever engine the spec and the settings call for. */
static void
StartEngine(GjJob *job, bool allow_gpu)
{
	GjResources *res = job->res;

	job->rows_this_run = 0;
	job->chunk = NULL;
	job->second = false;
	if (job->spec.has_query && job->spec.shape == GJ_SHAPE_COUNTS)
	{
		StartJoinCounts(job, allow_gpu);
		return;
	}
	if (job->spec.shape != GJ_SHAPE_PAIRS && job->spec.shape != GJ_SHAPE_KNN)
	{
		StartRows(job, allow_gpu);
		return;
	}
	if (job->spec.has_query && !job->spec.is_knn)
	{
		StartJoin(job, allow_gpu);
		return;
	}
	if (!job->spec.is_knn)
	{
		job->twice = job->spec.symmetric;
		if (job->spec.filter_column != GJ_FILTER_NONE)
			StartProbe(job);
		else if (allow_gpu && ChooseEpsEngine(job) == GJ_ENGINE_GPU &&
				 (UseTiles(job, GJ_ENGINE_GPU) ? StartGpuTiles(job) : StartGpuSelfJoin(job)))
			return;
		else if (UseTiles(job, GJ_ENGINE_CPU))
			StartCpuTiles(job);
		else
			StartCpuSelfJoin(job);
		return;
	}

	/* kNN */
	{
		int64		nq = job->kopt.exclude_self && job->spec.filter_column == 0 ?
			job->spec.nfilter : job->qs->n;
		bool		self_subset = job->kopt.exclude_self && job->spec.filter_column == 0;
		bool		gpu = false,
					blocks;
		gj_block_plan block_plan = {0};

		if (job->kopt.method == GJ_KNN_AUTO && res->points.dims > GJ_KNN_GRID_MAX_DIMS)
		{
			/*
			 * Many dimensions: few queries are scanned (no index pays for
			 * itself); else the blocks' index where the sampled contrast
			 * says clusters, brute force where distances are all alike
			 * (knn_contrast.c).
			 */
			if ((double) nq * (double) res->points.n <= GJ_KNN_BRUTE_MAX)
				job->kopt.method = GJ_KNN_BRUTE;
			else
			{
				job->kopt.method = gj_knn_auto_method(&job->kopt, &res->points,
													  &job->stats.knn_contrast);
				job->stats.knn_method = job->kopt.method == GJ_KNN_BLOCKS ? "blocks" : "brute";
			}
		}
		blocks = gj_knn_pick_method(&job->kopt, res->points.dims) == GJ_KNN_BLOCKS;
		if (allow_gpu && !self_subset)
		{
			GjEngine	e = GjChooseEngine(Max(res->points.n, job->qs->n));

			gpu = e == GJ_ENGINE_GPU &&
				(gj_device_guc == GJ_DEVICE_GPU || nq >= GJ_AUTO_GPU_MIN_QUERIES);
		}
		if (blocks && !res->block_ordered && gpu && job->qs == &res->points)
		{
			/*
			 * a self join on the GPU: the host only plans the blocks' order
			 * from a sample, and the engine finds it and gathers the rows
			 * into it on the device
			 */
			double		t0 = gj_now_ms();

			CheckStatus(gj_block_plan_make(&res->points, &block_plan),
						"planning the rows' blocks");
			job->stats.index_ms += gj_now_ms() - t0;
			job->stats.knn_key_dims = block_plan.m;
		}
		else if (blocks && !res->block_ordered)
		{
			/* the blocks' index: references and queries sorted into small blocks */
			OrderPoints(job, &res->points);
			if (job->qs != &res->points)
				OrderPoints(job, &res->queries);
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
				OrderPoints(job, &res->points);
				res->block_ordered = true;
			}
		}
		/* few queries on the CPU: scanning beats building an index */
		if (job->kopt.method == GJ_KNN_AUTO &&
			(double) nq * (double) res->points.n <= GJ_KNN_BRUTE_MAX)
			job->kopt.method = GJ_KNN_BRUTE;
		StartCpuKnn(job);
	}
}

/*
 * Read, index and start.  The job and its resources live in a new context
 * under parent.
 */
GjJob *
GjJobStart(const GjJobSpec *spec, MemoryContext parent, bool restart_ok)
{
	GjResources *res;
	GjJob	   *job;
	MemoryContext old;
	GjReadStats s_read;

	GjRequireGpuIfSet();		/* fail before reading if gpu cannot be met */
	res = GjResourcesCreate(parent);
	job = MemoryContextAllocZero(res->cxt, sizeof(GjJob));
	job->spec = *spec;
	job->res = res;
	job->restart_ok = restart_ok;
	job->stats.estimated_pairs = -1;
	job->tile_share = -1;
	job->tiles_prune = -1;
	job->stats.engine = "none";
	job->stats.runs = 1;
	job->t_progress = gj_now_ms();

	old = MemoryContextSwitchTo(res->cxt);
	job->rowcxt = AllocSetContextCreate(res->cxt, "gpujoin row", ALLOCSET_DEFAULT_SIZES);
	{
		GjInputSpec in = spec->input;

		if (!spec->is_knn && spec->has_query && spec->filter_column == 1)
		{
			/* eps_join WHERE s = ...: read only those s rows */
			in.only_ids = spec->filter_ids;
			in.nonly = spec->nfilter;
		}
		GjReadPoints(&in, &res->points, &job->stats.read);
	}
	s_read = job->stats.read;
	job->qs = &res->points;
	if (spec->has_query)
	{
		GjInputSpec q = spec->query;
		int32		s_srid = job->stats.read.srid;

		if (spec->filter_column == 0)
		{
			/* knn_join, eps_join WHERE q = ... (r = ...): read only those rows */
			q.only_ids = spec->filter_ids;
			q.nonly = spec->nfilter;
		}
		GjReadPoints(&q, &res->queries, &job->stats.read);
		job->qs = &res->queries;
		if (res->points.n > 0 && job->qs->n > 0 && res->points.dims != job->qs->dims)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s: %s rows have %d coordinates, %s rows %d",
							spec->fname, spec->is_knn ? "query" : "r", job->qs->dims,
							spec->is_knn ? "reference" : "s", res->points.dims)));
		/* PostGIS geometry on both sides: one SRID, as PostGIS requires */
		if (s_srid >= 0 && job->stats.read.srid >= 0 && s_srid != job->stats.read.srid)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: %s rows have SRID %d, %s rows SRID %d",
							spec->fname, spec->is_knn ? "query" : "r", job->stats.read.srid,
							spec->is_knn ? "reference" : "s", s_srid),
					 errdetail("Distances between geometries of different SRIDs are not defined, as in PostGIS.")));
	}
	/* geography: earth-centred points, eps the chord that bounds d */
	GjGeographySetup(&job->geo, &job->spec, &s_read, &res->points, &res->geo_points,
					 spec->has_query ? &job->stats.read : NULL,
					 spec->has_query ? &res->queries : NULL, &res->geo_queries);
	spec = &job->spec;
	if (spec->has_query && !spec->is_knn)
	{
		/* eps_join, eps_join_counts: the restriction was the read */
		if (job->qs->n == 0 || (res->points.n == 0 && spec->shape == GJ_SHAPE_PAIRS) ||
			(spec->filter_column != GJ_FILTER_NONE && spec->nfilter == 0))
			job->done = true;
		else
			StartEngine(job, true);
		MemoryContextSwitchTo(old);
		return job;
	}
	if (spec->shape != GJ_SHAPE_PAIRS && spec->shape != GJ_SHAPE_KNN)
	{
		if (res->points.n == 0 ||
			(spec->filter_column != GJ_FILTER_NONE && spec->nfilter == 0))
			job->done = true;
		else
			StartEngine(job, true);
		MemoryContextSwitchTo(old);
		return job;
	}
	if (!spec->is_knn)
	{
		if (res->points.n < 2 ||
			(spec->filter_column != GJ_FILTER_NONE && spec->nfilter == 0))
			job->done = true;
		else
			StartEngine(job, true);
		MemoryContextSwitchTo(old);
		return job;
	}

	job->kopt.k = spec->k;
	job->kopt.exclude_self = !spec->has_query;
	job->kopt.method = (gj_knn_method) gj_knn_method_guc;
	if (res->points.n == 0 || job->qs->n == 0 ||
		gj_knn_effective_k(&job->kopt, res->points.n) == 0 ||
		(job->kopt.exclude_self && spec->filter_column == 0 && spec->nfilter == 0))
		job->done = true;
	else
		StartEngine(job, true);
	MemoryContextSwitchTo(old);
	return job;
}

/* --- rows ---------------------------------------------------------------- */

/* When the running engine made its last row (gj_now_ms), for the stats. */
static double
EngineDoneMs(GjJob *job)
{
	GjResources *res = job->res;

	if (job->running == RUN_GPU_SELFJOIN)
	{
		gj_gpu_stats gs;

		gj_gpu_selfjoin_stats((gj_gpu_selfjoin *) res->engine, &gs);
		job->stats.batches = job->slabs.nsteps > 0 ? job->stats.batches + gs.batches : gs.batches;
	}
	else if (job->running == RUN_GPU_TILES)
	{
		gj_gpu_tiles_info ti;

		gj_gpu_tiles_stats((gj_gpu_tiles *) res->engine, &ti);
		job->stats.batches = ti.batches;
		/* eps_join: a slice of each set is one window, not a cut for memory */
		job->stats.slices = ti.windows > 1 ? ti.slices : 1;
		job->stats.slice_rows = ti.slice_rows;
		job->stats.slice_pairs = ti.windows;
	}
	else if (job->running == RUN_GPU_LISTS)
	{
		gj_gpu_lists_info li;

		gj_gpu_lists_stats((gj_gpu_lists *) res->engine, &li);
		job->stats.batches = li.chunks;
	}
	else if (job->running == RUN_GPU_KNN)
	{
		gj_gpu_knn_info gi;

		gj_gpu_knn_stats((gj_gpu_knn *) res->engine, &gi);
		job->stats.batches = gi.batches;
	}
	return res->engine != NULL ? gj_engine_done_ms(res->engine) : 0.0;
}

/*
 * The GPU engine failed part-way with st: rerun on the CPU when nothing
 * went out yet or the caller can discard rows, else an ERROR.
 */
static void
GpuFailedPartWay(GjJob *job, gj_status st, bool *restarted)
{
	GjResources *res = job->res;
	char		err[256];

	snprintf(err, sizeof(err), "%s",
			 job->running == RUN_GPU_SELFJOIN ?
			 gj_gpu_selfjoin_error((gj_gpu_selfjoin *) res->engine) :
			 job->running == RUN_GPU_TILES ?
			 gj_gpu_tiles_error((gj_gpu_tiles *) res->engine) :
			 job->running == RUN_GPU_LISTS ?
			 gj_gpu_lists_error((gj_gpu_lists *) res->engine) :
			 gj_gpu_knn_error((gj_gpu_knn *) res->engine));
	GjResourcesStopEngine(res);
	RestartAfterGpu(job, st, err, restarted);
}

/*
 * The GPU engine is gone after st: rerun on the CPU from the first row if
 * none went out or the caller can discard them, else an ERROR.
 */
static void
RestartAfterGpu(GjJob *job, gj_status st, const char *err, bool *restarted)
{
	job->slabs.nsteps = 0;		/* its steps are in the job's context */
	job->running = RUN_NONE;
	if (st == GJ_ERR_CUDA)
		GjMarkGpuUnusable(err);
	if (job->rows_this_run > 0 && !job->restart_ok)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("%s: the GPU engine failed after returning rows", job->spec.fname),
				 errdetail("%s: %s", gj_status_name(st), err),
				 errhint("Run the query again: the CPU engine takes over in this session.")));
	ereport(NOTICE,
			(errmsg("%s: the GPU engine failed, running the join again on the CPU engine",
					job->spec.fname),
			 errdetail("%s: %s", gj_status_name(st), err)));
	if (job->rows_this_run > 0)
		*restarted = true;
	job->stats.runs++;
	StartEngine(job, false);
}

/* The next chunk into job->chunk; false when the engine is done. */
static bool
NextChunk(GjJob *job, bool *restarted)
{
	for (;;)
	{
		gj_chunk   *c = NULL;
		gj_status	st;
		double		t0;

		CHECK_FOR_INTERRUPTS();
		t0 = gj_now_ms();
		st = job->res->engine != NULL ?
			gj_engine_next(job->res->engine, GJ_WAIT_MS, &c) : GJ_DONE;
		job->stats.wait_ms += gj_now_ms() - t0;
		if (st == GJ_AGAIN)
			continue;
		if (st == GJ_OK)
		{
			job->chunk = c;
			job->pos = 0;
			job->second = false;
			job->geo_chunk = NULL;
			if (!RUNNING_GPU(job->running))
				job->stats.batches++;
			ProgressTick(job, c->n);
			StartNextSlabEarly(job);
			return true;
		}
		if (st == GJ_DONE && job->slabs.nsteps > 0 &&
			job->slab_step + 1 < job->slabs.nsteps)
		{
			/* this slab step is done: the next, started already or now */
			char		err[256];
			gj_engine  *next = job->res->next_engine;

			EngineDoneMs(job);
			job->res->next_engine = NULL;
			GjResourcesStopEngine(job->res);
			job->slab_step++;
			if (next != NULL)
			{
				job->res->engine = next;
				job->stats.slab_early++;
				continue;
			}
			st = StartSlabStep(job, job->slab_step, &job->res->engine, err, sizeof(err));
			if (st != GJ_OK)
			{
				/* a slab step could not start: as a failure part-way */
				job->res->engine = NULL;
				RestartAfterGpu(job, st, err, restarted);
			}
			continue;
		}
		if (st == GJ_DONE)
		{
			double		done = EngineDoneMs(job);

			job->stats.join_ms += (done > job->t_engine ? done : gj_now_ms()) - job->t_engine;
			return false;
		}
		if (RUNNING_GPU(job->running) &&
			st != GJ_ERR_CANCELED)
		{
			GpuFailedPartWay(job, st, restarted);
			continue;
		}
		CheckStatus(st, job->spec.fname);
		return false;			/* not reached */
	}
}

/*
 * The distance a row shows: the engines' Euclidean distance d, or for the
 * cosine metric 1 - cosine similarity, d^2 / 2 of the normalised rows.
 */
static inline double
OutDist(const GjJob *job, double d)
{
	if (job->geo.on)
		return gj_geodetic_chord_metres(&job->geo.g, d);	/* kNN: metres on the sphere */
	return job->spec.metric == GJ_METRIC_COSINE ? d * d * 0.5 : d;
}

static void GeoDecideListWindow(GjJob *job, const gj_chunk *c, int64 i);

/*
 * Geography: a row's neighbour list (ids nb, chords nd, n entries, by
 * chord) as the rows within d, in metres, by (metres, id), in place; the
 * new length.  in and m are GjGeographyDecide's answers for the entries
 * (the chords in the band between the bounds PostGIS's); on the spheroid,
 * metres need not follow the chords' order exactly, so the list is sorted
 * again (by insertion: it is nearly so).
 */
static int64
GeoList(const bool *in, const double *m, int64 *nb, double *nd, int64 n)
{
	int64		k = 0;

	for (int64 e = 0; e < n; e++)
	{
		if (in[e])
		{
			nb[k] = nb[e];
			nd[k] = m[e];
			k++;
		}
	}
	for (int64 e = 1; e < k; e++)
	{
		int64		b = nb[e];
		double		mm = nd[e];
		int64		j = e;

		for (; j > 0 && (nd[j - 1] > mm || (nd[j - 1] == mm && nb[j - 1] > b)); j--)
		{
			nb[j] = nb[j - 1];
			nd[j] = nd[j - 1];
		}
		nb[j] = b;
		nd[j] = mm;
	}
	return k;
}

/* A one-dimensional array of n 8-byte values, copied as one block. */
static Datum
MakeArray8(const void *data, int64 n, Oid elemtype)
{
	Size		nbytes;
	ArrayType  *a;

	if (n == 0)
		return PointerGetDatum(construct_empty_array(elemtype));
	if (n > MaxAllocSize / 8 - 64)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a row has %lld neighbours, more than an array can hold",
						(long long) n)));
	nbytes = ARR_OVERHEAD_NONULLS(1) + (Size) n * 8;
	a = (ArrayType *) palloc(nbytes);
	SET_VARSIZE(a, nbytes);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = elemtype;
	ARR_DIMS(a)[0] = (int) n;
	ARR_LBOUND(a)[0] = 1;
	memcpy(ARR_DATA_PTR(a), data, (Size) n * 8);
	return PointerGetDatum(a);
}

/*
 * The n 8-byte values after gap (the engine's GJ_LIST_GAP entries before a
 * list) as a one-dimensional array, its header written into the gap: no
 * copy.  Valid while the chunk is held, which outlasts the row (the
 * executor is done with a row when it asks for the next).
 */
static Datum
ArrayInGap(int64 *gap, int64 n, Oid elemtype)
{
	ArrayType  *a = (ArrayType *) gap;

	StaticAssertStmt(ARR_OVERHEAD_NONULLS(1) == GJ_LIST_GAP * sizeof(int64),
					 "an array header fills the engine's gap before a list");
	if (n > MaxAllocSize / 8 - 64)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a row has %lld neighbours, more than an array can hold",
						(long long) n)));
	if (n == 0)
	{
		/* as construct_empty_array makes it */
		SET_VARSIZE(a, sizeof(ArrayType));
		a->ndim = 0;
		a->dataoffset = 0;
		a->elemtype = elemtype;
		return PointerGetDatum(a);
	}
	SET_VARSIZE(a, ARR_OVERHEAD_NONULLS(1) + (Size) n * 8);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = elemtype;
	ARR_DIMS(a)[0] = (int) n;
	ARR_LBOUND(a)[0] = 1;
	return PointerGetDatum(a);
}

/* The next row of a per-row shape; false when there are no more. */
static bool
NextShapedRow(GjJob *job, Datum *values, bool *nulls, bool *restarted)
{
	GjResources *res = job->res;

	if (job->running == RUN_ROWS)
	{
		int64		i = job->pos;	/* into rowval; the row is subset[i] */
		int64		row = job->subset != NULL ? job->subset[i] : i;
		const gj_points *rp = job->qs;	/* eps_join_counts: the r rows */

		if (i >= (job->subset != NULL ? job->nsubset : rp->n))
		{
			job->done = true;
			job->stats.emit_ms = gj_now_ms() - job->t_engine;
			return false;
		}
		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
		values[0] = Int64GetDatum(rp->ids[row]);
		nulls[0] = false;
		if (job->spec.shape == GJ_SHAPE_COUNTS)
		{
			/* a self count includes the row itself, a count of s rows not */
			values[1] = Int64GetDatum((int64) res->rowval[i] - (job->spec.has_query ? 0 : 1));
			nulls[1] = false;
		}
		else if (job->spec.shape == GJ_SHAPE_LISTS)
		{
			/* lists from pairs (tiles): row i's entries of the CSR arrays */
			int64		e0 = res->list_off[row],
						e1 = res->list_off[row + 1];
			MemoryContext old;

			MemoryContextReset(job->rowcxt);
			old = MemoryContextSwitchTo(job->rowcxt);
			if (job->geo.on)
			{
				/* this row's band pairs in one PostGIS query (row context memory) */
				int64		n = e1 - e0;
				int64	   *ida = palloc(sizeof(int64) * (n + 1));
				bool	   *in = palloc(sizeof(bool) * (n + 1));
				double	   *m = palloc(sizeof(double) * (n + 1));

				for (int64 e = 0; e < n; e++)
					ida[e] = rp->ids[row];
				GjGeographyDecide(&job->geo, &res->geo_points, ida, &res->geo_points,
								  res->list_nb + e0, res->list_nd + e0, n, in, m);
				e1 = e0 + GeoList(in, m, res->list_nb + e0, res->list_nd + e0, n);
			}
			else if (job->spec.metric == GJ_METRIC_COSINE)
				for (int64 e = e0; e < e1; e++)
					res->list_nd[e] = OutDist(job, res->list_nd[e]);
			values[1] = MakeArray8(res->list_nb + e0, e1 - e0, INT8OID);
			values[2] = MakeArray8(res->list_nd + e0, e1 - e0, FLOAT8OID);
			MemoryContextSwitchTo(old);
			nulls[1] = nulls[2] = false;
		}
		else
		{
			values[1] = Int32GetDatum(res->rowval[i]);
			nulls[1] = res->rowval[i] < 0;	/* noise */
			values[2] = BoolGetDatum(res->rowflag[i] != 0);
			nulls[2] = false;
		}
		job->pos++;
		job->stats.rows_out++;
		return true;
	}

	/* neighbour lists, chunk by chunk */
	for (;;)
	{
		gj_chunk   *c = job->chunk;
		int			i;

		if (c != NULL && job->pos < c->n)
		{
			int64		e0,
						e1;

			i = job->pos++;
			e0 = c->off[i] + GJ_LIST_GAP;
			e1 = c->off[i + 1];
			if (job->geo.on)
			{
				int64		w;

				if (job->geo_chunk != c || i < job->geo_w0 || i >= job->geo_w1)
					GeoDecideListWindow(job, c, i);
				w = e0 - c->off[job->geo_w0];
				e1 = e0 + GeoList(job->geo_in + w, job->geo_m + w, c->nb + e0, c->nd + e0,
								  e1 - e0);
			}
			values[0] = Int64GetDatum(c->a[i]);
			values[1] = ArrayInGap(c->nb + c->off[i], e1 - e0, INT8OID);
			if (job->spec.metric == GJ_METRIC_COSINE)
			{
				/* the distances as the metric's, in place: the list is done with */
				for (int64 e = e0; e < e1; e++)
					c->nd[e] = OutDist(job, c->nd[e]);
			}
			values[2] = ArrayInGap((int64 *) (c->nd + c->off[i]), e1 - e0, FLOAT8OID);
			nulls[0] = nulls[1] = nulls[2] = false;
			job->stats.rows_out++;
			return true;
		}
		if (c != NULL)
		{
			gj_engine_release(job->res->engine, c);
			job->chunk = NULL;
		}
		if (job->done || !NextChunk(job, restarted))
		{
			job->done = true;
			job->stats.emit_ms = gj_now_ms() - job->t_engine - job->stats.wait_ms;
			return false;
		}
	}
}

/*
 * Geography pairs as they stream: the next pairs of chunk c from pos
 * decided at once, so that their band pairs go to PostGIS in one query
 * (378K band pairs of 20,000 rows at 1,500 km on the spheroid: 132 s one
 * query a pair, 83 s one a window of 4096 pairs).  The window doubles from
 * GJ_GEO_WINDOW to GJ_GEO_WINDOW_MAX pairs, so that a LIMIT waits for a
 * small one only while a whole join asks few queries.
 */
#define GJ_GEO_WINDOW 4096
#define GJ_GEO_WINDOW_MAX 65536	/* (its metres: well under the second a cancel may take) */

static void
GeoWindowRoom(GjJob *job, int64 n)
{
	if (n <= job->geo_cap)
		return;
	if (job->geo_in != NULL)
	{
		pfree(job->geo_in);
		pfree(job->geo_m);
	}
	job->geo_in = MemoryContextAlloc(job->res->cxt, sizeof(bool) * n);
	job->geo_m = MemoryContextAlloc(job->res->cxt, sizeof(double) * n);
	job->geo_cap = n;
}

static void
GeoDecideWindow(GjJob *job, const gj_chunk *c)
{
	int64		n;

	CHECK_FOR_INTERRUPTS();
	job->geo_size = Min(Max(job->geo_size * 2, GJ_GEO_WINDOW), GJ_GEO_WINDOW_MAX);
	n = Min(job->geo_size, c->n - job->pos);
	job->geo_chunk = NULL;		/* (an error below leaves no half-made window) */
	GeoWindowRoom(job, n);
	GjGeographyDecide(&job->geo,
					  job->spec.has_query ? &job->res->geo_queries : &job->res->geo_points,
					  c->a + job->pos, &job->res->geo_points, c->b + job->pos,
					  c->dist + job->pos, n, job->geo_in, job->geo_m);
	job->geo_chunk = c;
	job->geo_w0 = job->pos;
	job->geo_w1 = job->pos + n;
}

/*
 * Geography lists: the lists of chunk c's rows from row i on, at least a
 * window's entries of them (growing as the pairs' windows do), decided at
 * once for the same reason; geo_w0 and geo_w1 are rows here, and the
 * answers are by entry from the first row's offset (the gaps before each
 * list are never within d).
 */
static void
GeoDecideListWindow(GjJob *job, const gj_chunk *c, int64 i)
{
	int64		i1 = i,
				base = c->off[i],
				n;
	int64	   *ida;
	double	   *cs;

	CHECK_FOR_INTERRUPTS();
	job->geo_size = Min(Max(job->geo_size * 2, GJ_GEO_WINDOW), GJ_GEO_WINDOW_MAX);
	while (i1 < c->n && (i1 == i || c->off[i1] - base < job->geo_size))
		i1++;
	n = c->off[i1] - base;
	job->geo_chunk = NULL;
	GeoWindowRoom(job, n);
	ida = palloc(sizeof(int64) * (n + 1));
	cs = palloc(sizeof(double) * (n + 1));
	for (int64 r = i; r < i1; r++)
		for (int64 e = c->off[r]; e < c->off[r + 1]; e++)
		{
			ida[e - base] = c->a[r];
			cs[e - base] = e < c->off[r] + GJ_LIST_GAP ? INFINITY : c->nd[e];
		}
	GjGeographyDecide(&job->geo, &job->res->geo_points, ida, &job->res->geo_points,
					  c->nb + base, cs, n, job->geo_in, job->geo_m);
	pfree(ida);
	pfree(cs);
	job->geo_chunk = c;
	job->geo_w0 = i;
	job->geo_w1 = i1;
}

/* The next output row into values/nulls; false when there are no more. */
bool
GjJobNext(GjJob *job, Datum *values, bool *nulls, bool *restarted)
{
	gj_chunk   *c;
	int			i;

	*restarted = false;
	if (job->spec.shape != GJ_SHAPE_PAIRS && job->spec.shape != GJ_SHAPE_KNN)
		return !job->done && NextShapedRow(job, values, nulls, restarted);
	for (;;)
	{
		c = job->chunk;
		if (c != NULL && job->pos < c->n)
		{
			/* geography: the pair's metres, and whether it is within d at all */
			if (job->geo.on && !job->spec.is_knn && !job->second)
			{
				if (job->geo_chunk != c || job->pos < job->geo_w0 || job->pos >= job->geo_w1)
					GeoDecideWindow(job, c);
				if (!job->geo_in[job->pos - job->geo_w0])
				{
					job->pos++;
					continue;
				}
				job->geo_metres = job->geo_m[job->pos - job->geo_w0];
			}
			break;
		}
		if (c != NULL)
		{
			gj_engine_release(job->res->engine, c);
			job->chunk = NULL;
		}
		if (job->done)
			return false;
		if (!NextChunk(job, restarted))
		{
			job->done = true;
			job->stats.emit_ms = gj_now_ms() - job->t_engine - job->stats.wait_ms;
			return false;
		}
		if (*restarted)
			job->stats.rows_out = 0;
	}
	i = job->pos;
	if (job->second)
	{
		values[0] = Int64GetDatum(c->b[i]);
		values[1] = Int64GetDatum(c->a[i]);
		job->second = false;
		job->pos++;
	}
	else
	{
		values[0] = Int64GetDatum(c->a[i]);
		values[1] = Int64GetDatum(c->b[i]);
		if (job->twice)
			job->second = true;
		else
			job->pos++;
	}
	nulls[0] = nulls[1] = nulls[2] = false;
	if (c->rank != NULL)
	{
		values[2] = Int32GetDatum(c->rank[i]);
		values[3] = Float8GetDatum(OutDist(job, c->dist[i]));
		nulls[3] = false;
	}
	else
		values[2] = Float8GetDatum(job->geo.on ? job->geo_metres : OutDist(job, c->dist[i]));
	job->rows_this_run++;
	job->stats.rows_out++;
	return true;
}

/* Stop the engine (at once, whatever it was doing) and free everything. */
void
GjJobEnd(GjJob *job, GjJobStats *stats)
{
	GjResources *res = job->res;

	if (!job->done && job->running != RUN_NONE)
	{
		job->stats.emit_ms = gj_now_ms() - job->t_engine - job->stats.wait_ms;
		job->stats.join_ms += gj_now_ms() - job->t_engine;
	}
	job->stats.geography = job->geo.on;
	job->stats.geo_spheroid = job->geo.use_spheroid;
	job->stats.geo_asked = job->geo.band_pairs;
	if (stats != NULL)
		*stats = job->stats;
	GjResourcesRelease(res);
	MemoryContextDelete(res->cxt);
}
