/*
 * plan.c
 *		Every choice of method a job makes, in one place, so that the run
 *		and EXPLAIN follow the same rules.
 *
 * The engine.  gpujoin.device decides: cpu and gpu as set; auto takes a
 * usable GPU for inputs of GJ_AUTO_GPU_MIN_ROWS rows or more, or where the
 * tiles' work reaches GJ_AUTO_GPU_MIN_WORK; kNN joins also need
 * GJ_AUTO_GPU_MIN_QUERIES queries.  A self-join restricted by an id qual
 * (WHERE a = 42) runs from the listed rows only, on the CPU (cpu_probe.c),
 * by brute force when the listed rows times all rows is small, else over
 * the grid; self kNN restricted to some rows runs on the CPU too.
 *
 * The method of the eps functions (gpujoin.eps_method): the grid, or in
 * many dimensions tiles (every block pair) and their index (blocks), from
 * a sample, once a job (GjUseTiles, GjTilesPrune, GjPlanBlocks).  Which
 * side of eps_join the grid indexes (GjIndexSmaller).  The kNN method
 * (gpujoin.knn_method): the grid up to GJ_KNN_GRID_MAX_DIMS dimensions,
 * above by the sampled contrast; brute force for few queries.
 */
#include "postgres.h"

#include <math.h>

#include "job/job_internal.h"

#define GJ_AUTO_GPU_MIN_QUERIES 1024	/* kNN: fewer queries stay on the CPU */
#define GJ_AUTO_GPU_MIN_WORK 1e10	/* pair-dimensions of tiles: the GPU below 100K rows */

/* Below this many listed rows times all rows, a restricted join is brute. */
#define GJ_PROBE_BRUTE_MAX 2e7

/* Likewise for kNN queries times references. */
#define GJ_KNN_BRUTE_MAX 2e7

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
 * (GjPlanBlocks), 31-44 ms together on the GPU host (60-90 ms before both
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
	double		work = GjAllPairs(job) * job->res->points.dims,
				rate = engine == GJ_ENGINE_GPU ? GJ_BRUTE_RATE_GPU :
		GJ_BRUTE_RATE_CPU_THREAD * GjCpuThreads();

	return work / rate * 1000.0 <= GJ_BRUTE_CHEAP_MS;
}

/*
 * eps_join's tiles copy both sets into one array (run_tiles.c): where
 * the sets and the copy pass gpujoin.host_memory_limit (or the engines'
 * 2^31 rows), the grid, which needs no copy, answers instead (a NOTICE
 * when tiles were asked for).  Decided once a job.
 */
static bool
JoinTilesFit(GjJob *job)
{
	if (job->plan.join_copy == 0)
	{
		const gj_points *p = &job->res->points;
		double		rows = (double) p->n + (double) job->res->queries.n,
					bytes = 2.0 * rows * (8.0 * p->dims + 8.0);

		job->plan.join_copy = bytes <= (double) GjHostMemoryLimit() && rows <= (double) GJ_MAX_ROWS ?
			1 : -1;
		if (job->plan.join_copy < 0 && GjEpsMethodSetting() != GJ_EPS_AUTO &&
			GjEpsMethodSetting() != GJ_EPS_GRID)
			ereport(NOTICE,
					(rows > (double) GJ_MAX_ROWS ?
					 errmsg("%s: tiles take at most %d rows of both tables together; the grid runs instead",
							job->spec.fname, GJ_MAX_ROWS) :
					 errmsg("%s: tiles need %.0f MB of host memory for both tables and their copy, more than gpujoin.host_memory_limit allows; the grid runs instead",
							job->spec.fname, ceil(bytes / 1048576.0))));
	}
	return job->plan.join_copy > 0;
}

bool
GjUseTiles(GjJob *job, GjEngine engine)
{
	const gj_points *p = &job->res->points;
	double		cand,
				within;
	int64		m;

	if (job->spec.has_query && !JoinTilesFit(job))
		return false;
	if (GjEpsMethodSetting() != GJ_EPS_AUTO)
		return GjEpsMethodSetting() != GJ_EPS_GRID;
	if (p->dims <= GJ_TILES_MIN_DIMS)
		return false;
	if (job->plan.tile_share < 0)
	{
		/*
		 * once a job, for the engine first asked: a fallback to the CPU
		 * decides again from the same sample, and keeps brute_cheap
		 */
		double		t0 = gj_now_ms();

		job->plan.engine = engine;
		job->plan.brute_cheap = BruteIsCheap(job, engine);
		m = (int64) Min(8192.0, sqrt(2.0 * (job->plan.brute_cheap ? GJ_TILES_SAMPLE_WORK_CHEAP :
											 GJ_TILES_SAMPLE_WORK) / p->dims));
		GjCheckCore(gj_sample_pair_shares(p, job->spec.eps2, m, &cand, &within),
					"sampling the input");
		job->plan.tile_share = cand;
		job->stats.estimated_pairs = within * GjAllPairs(job);
		job->stats.index_ms += gj_now_ms() - t0;
		elog(DEBUG1, "%s: a sample of " INT64_FORMAT " rows: the grid keeps %.3f of pairs, %.2e are within eps (%.1f ms)%s",
			 job->spec.fname, m, cand, within, gj_now_ms() - t0,
			 job->plan.brute_cheap ? "; brute force is cheaper than choosing" : "");
	}
	if (job->plan.brute_cheap)
		return true;
	return job->plan.tile_share * (engine == GJ_ENGINE_GPU ? GJ_TILES_GAIN_GPU : GJ_TILES_GAIN_CPU) >= 1.0;
}

/*
 * The tiles' index (block_index.c): rows sorted into small blocks whose
 * bounds let the engines skip block pairs farther apart than eps, unless
 * gpujoin.eps_method = brute asks for every pair (run_tiles.c sorts them).
 */
#define GJ_BLOCKS_MAX_SHARE 0.2	/* auto, GPU: the index when the grid keeps at most this share */
#define GJ_BLOCKS_MAX_KEPT 0.5	/* ... or the blocks' model keeps at most this share */
#define GJ_BLOCKS_MAX_WITHIN 1e-3	/* ... and at most this share of all pairs is within eps */

/*
 * auto's choice of the index, for the engine auto chose tiles for.
 */
static bool
AutoPrune(GjJob *job)
{
	double		within = job->stats.estimated_pairs / Max(GjAllPairs(job), 1.0);

	if (job->plan.tile_share < 0 || job->plan.brute_cheap)
		return false;
	if (job->plan.engine == GJ_ENGINE_CPU)
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
	if (job->plan.tile_share <= GJ_BLOCKS_MAX_SHARE)
		return true;

	/*
	 * Elsewhere the blocks' sampled model says (block_index.c): 2M
	 * exponential rows in 16-D at eps 0.03 keep 41% of the grid's pairs,
	 * yet keyed on their 4 widest dimensions the bounds skip two block
	 * pairs in three.
	 */
	GjPlanBlocks(job);
	return job->plan.block_kept <= GJ_BLOCKS_MAX_KEPT;
}

/*
 * gpujoin.eps_method, or under auto AutoPrune's choice, made once a job:
 * the rows' order and every engine of the job follow it.
 */
bool
GjTilesPrune(GjJob *job)
{
	if (GjEpsMethodSetting() != GJ_EPS_AUTO)
		return GjEpsMethodSetting() == GJ_EPS_BLOCKS;
	if (job->plan.prune < 0)
		job->plan.prune = AutoPrune(job) ? 1 : 0;
	return job->plan.prune > 0;
}

/*
 * The index's plan for this job's eps, once: the key's dimensions by the
 * sampled model, its cuts copied into the job's memory.
 */
void
GjPlanBlocks(GjJob *job)
{
	gj_block_plan plan;
	double		kept,
				t0 = gj_now_ms();

	if (job->plan.blocks_planned)
		return;

	/*
	 * kNN keys every dimension (eps2 < 0): its threshold is not known
	 * before the join.  The model at the kNN spec's eps of 0 keyed 1
	 * dimension, and 30K clustered rows in 128-D took 2.5 s by the CPU's
	 * blocks instead of 0.8 s.
	 */
	GjCheckCore(gj_block_plan_make_for(&job->res->points, job->spec.is_knn ? -1.0 : job->spec.eps2,
									   &plan, &kept),
				"planning the rows' blocks");
	job->plan.block_plan = plan;
	if (plan.cut != NULL)
	{
		size_t		bytes = sizeof(double) * (((size_t) 1 << plan.bits) - 1) * plan.m;

		job->plan.block_plan.cut = MemoryContextAlloc(job->res->cxt, bytes);
		memcpy(job->plan.block_plan.cut, plan.cut, bytes);
		free(plan.cut);
	}
	job->plan.block_kept = kept;
	job->plan.blocks_planned = true;
	if (job->spec.is_knn)
		job->stats.knn_key_dims = plan.m;	/* EXPLAIN's kNN Method */
	job->stats.index_ms += gj_now_ms() - t0;
	elog(DEBUG1, "%s: blocks keyed on %d of %d dimensions, the model keeps %.1f%% of block pairs (%.1f ms)",
		 job->spec.fname, plan.m, job->res->points.dims, 100.0 * kept, gj_now_ms() - t0);
}

/* The engine of an eps function: by rows, or by the tiles' work in many dimensions. */
GjEngine
GjChooseEpsEngine(GjJob *job)
{
	const gj_points *p = &job->res->points;
	double		work = p->dims > GJ_TILES_MIN_DIMS ? GjAllPairs(job) * p->dims : 0.0;

	return GjChooseEngineFor(p->n + (job->spec.has_query ? job->res->queries.n : 0), work);
}

/*
 * Index the r rows (the smaller set) rather than the s rows?  Only where
 * the smaller grid gets its cell table: without it each probe searches
 * cell_id, and 1M probes in their own order cost more than indexing them
 * (geography in 3-D at 155 m: 20M cells for 100K rows, no table).  *plan:
 * r's grid, planned.
 */
bool
GjIndexSmaller(const gj_points *r, const gj_points *s, double eps2, gj_grid *plan)
{
	if (r->n >= s->n)
		return false;
	return gj_grid_plan(plan, r, eps2) == GJ_OK && gj_grid_table_fits(plan);
}

/*
 * eps_join's grid: index the r rows rather than the s rows?  The GPU
 * indexes the smaller set (less device memory; both sets are sorted into
 * the grid's cells there), and so does the CPU where that grid gets its
 * cell table (GjIndexSmaller): its probes run in the other set's own
 * order, but a small grid stays in cache and finds a probe's cells through
 * its table (grid.c).  On 2 cores, 100K x 1M in 2-D at ~3 partners:
 * indexing the 1M rows took 180-200 ms and the 100K probes 57-60 ms;
 * indexing the 100K rows takes 37 ms and the 1M probes 97-103 ms.  (Before
 * the table, a probe in random order cost about twice what sorting a row
 * into the grid does, 300 vs 140 ns, and the CPU indexed the larger.)  The
 * same rows give the same choice on a rerun.
 */
bool
GjJoinIndexesR(GjJob *job, GjEngine engine)
{
	const gj_points *r = &job->res->queries,
			   *s = &job->res->points;
	gj_grid		plan;

	if (engine == GJ_ENGINE_GPU)
		return r->n < s->n;
	if (r->n < s->n)
		return GjIndexSmaller(r, s, job->spec.eps2, &plan);
	return r->n > s->n && !GjIndexSmaller(s, r, job->spec.eps2, &plan);
}

/* Few probes times rows: brute force, no index to build. */
bool
GjProbeByBrute(double probes, double rows)
{
	return probes * rows <= GJ_PROBE_BRUTE_MAX;
}

/*
 * A self-join, count, list or self kNN restricted to listed rows (WHERE a =
 * 42): it runs from those rows only, on the CPU.  (Two sets read only the
 * listed rows of a side instead, and run as any join.)
 */
bool
GjRestrictedSelf(const GjJobSpec *spec)
{
	return spec->filter_column != GJ_FILTER_NONE && !spec->has_query;
}

/*
 * Nothing to compute: a side without rows where the answer needs some,
 * or a restriction that lists no row.  The kNN options are set.
 */
bool
GjNothingToDo(GjJob *job)
{
	const GjJobSpec *spec = &job->spec;
	const GjResources *res = job->res;
	bool		none_listed = spec->filter_column != GJ_FILTER_NONE && spec->nfilter == 0;

	if (spec->is_knn)
		return res->points.n == 0 || job->qs->n == 0 ||
			gj_knn_effective_k(&job->kopt, res->points.n) == 0 ||
			(job->kopt.exclude_self && spec->filter_column == 0 && spec->nfilter == 0);
	if (spec->has_query)		/* eps_join, eps_join_counts: the restriction was the read */
		return job->qs->n == 0 || (res->points.n == 0 && spec->shape == GJ_SHAPE_PAIRS) ||
			none_listed;
	if (spec->shape != GJ_SHAPE_PAIRS)
		return res->points.n == 0 || none_listed;
	return res->points.n < 2 || none_listed;
}

/*
 * The engine for a join of npoints rows: cpu and gpu as set; auto takes a
 * usable GPU for inputs of GJ_AUTO_GPU_MIN_ROWS or more (below that the CPU
 * engine finishes first, and the GPU is not even initialised).
 */
GjEngine
GjChooseEngine(int64 npoints)
{
	return GjChooseEngineFor(npoints, 0.0);
}

/*
 * The same for work that grows faster than the rows: auto also takes the
 * GPU when the pairs times the dimensions to compare reach
 * GJ_AUTO_GPU_MIN_WORK (20,000 rows of 768 dimensions by tiles: 1.5e11).
 */
GjEngine
GjChooseEngineFor(int64 npoints, double work)
{
	const char *why;

	if (GjDeviceSetting() == GJ_DEVICE_CPU)
		return GJ_ENGINE_CPU;
	if (GjDeviceSetting() == GJ_DEVICE_GPU)
	{
		GjRequireGpuIfSet();
		return GJ_ENGINE_GPU;
	}
	if ((npoints >= GJ_AUTO_GPU_MIN_ROWS || work >= GJ_AUTO_GPU_MIN_WORK) &&
		GjGpuUsable(&why))
		return GJ_ENGINE_GPU;
	return GJ_ENGINE_CPU;
}

/* The kNN queries: the listed rows of a restricted self kNN, or all. */
int64
GjKnnQueries(GjJob *job)
{
	return GjRestrictedSelf(&job->spec) ? job->spec.nfilter : job->qs->n;
}

/*
 * auto's kNN method in many dimensions (above the grid's): few queries are
 * scanned (no index pays for itself); else the blocks' index where the
 * sampled contrast says clusters, brute force where distances are all
 * alike (knn_contrast.c).  Kept for a rerun.
 */
void
GjPlanKnnMethod(GjJob *job, int64 nq)
{
	const gj_points *p = &job->res->points;

	if (job->kopt.method != GJ_KNN_AUTO || p->dims <= GJ_KNN_GRID_MAX_DIMS)
		return;
	if ((double) nq * (double) p->n <= GJ_KNN_BRUTE_MAX)
		job->kopt.method = GJ_KNN_BRUTE;
	else
	{
		job->kopt.method = gj_knn_auto_method(&job->kopt, p, &job->stats.knn_contrast);
		job->stats.knn_method = job->kopt.method == GJ_KNN_BLOCKS ? "blocks" : "brute";
	}
}

/*
 * Does a kNN join of nq queries run on the GPU?  The engine by the larger
 * set, and under auto GJ_AUTO_GPU_MIN_QUERIES queries or more; a
 * restricted self kNN never (the GPU engine searches every row's).
 */
bool
GjKnnOnGpu(GjJob *job, int64 nq)
{
	if (GjRestrictedSelf(&job->spec) ||
		GjChooseEngine(Max(job->res->points.n, job->qs->n)) != GJ_ENGINE_GPU)
		return false;
	return GjDeviceSetting() == GJ_DEVICE_GPU || nq >= GJ_AUTO_GPU_MIN_QUERIES;
}

/* Few queries on the CPU: scanning beats building an index. */
void
GjPlanCpuKnnMethod(GjJob *job, int64 nq)
{
	if (job->kopt.method == GJ_KNN_AUTO &&
		(double) nq * (double) job->res->points.n <= GJ_KNN_BRUTE_MAX)
		job->kopt.method = GJ_KNN_BRUTE;
}

/*
 * The engine EXPLAIN names before running a function of this shape (on two
 * sets or one, restricted to listed rows or not): what the rules above
 * will pick.  The run then names the one that ran.
 */
const char *
GjPlannedEngine(GjShape shape, bool two_sets, bool restricted)
{
	const char *why;

	if (restricted && !two_sets)
		return shape == GJ_SHAPE_KNN ? "cpu" : "cpu (restricted)";
	if (GjDeviceSetting() == GJ_DEVICE_CPU)
		return "cpu";
	if (GjDeviceSetting() == GJ_DEVICE_GPU)
		return "gpu";
	return GjGpuUsable(&why) ?
		"gpu for " CppAsString2(GJ_AUTO_GPU_MIN_ROWS) " rows or more, else cpu" : "cpu";
}
