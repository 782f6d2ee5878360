/*
 * gpujoin.h
 *		Declarations shared by the PostgreSQL glue files of gpujoin.
 *
 * Every SQL function is one "job": its arguments become a GjJobSpec
 * (functions.c), a GjJob reads the points (input.c), builds the index,
 * runs an engine and hands out finished rows (job.c), and either the custom
 * scan returns them to the executor as they come (custom_scan.c) or, where
 * the planner cannot use it, the function materialises them
 * (functions.c).  Everything a job holds outside palloc is owned by a
 * memory context with a reset callback (resources.c); gpujoin.c holds the
 * GUCs and the engine choice, support.c the planner's row estimates.
 */
#ifndef GPUJOIN_H
#define GPUJOIN_H

#include "postgres.h"

#include "fmgr.h"
#include "nodes/primnodes.h"
#include "utils/array.h"

#include "core/gj_core.h"

#define GPUJOIN_VERSION "0.6"

/* gpujoin.device */
typedef enum GjDevice
{
	GJ_DEVICE_AUTO,
	GJ_DEVICE_CPU,
	GJ_DEVICE_GPU
} GjDevice;

extern int	gj_device_guc;
extern int	gj_cpu_threads_guc;
extern int	gj_parallel_read_min_rows_guc;
extern bool gj_parallel_read_file_guc;
extern int	gj_gpu_memory_limit_guc;	/* MB, 0 = automatic */
extern int	gj_host_memory_limit_guc;	/* MB, 0 = half the machine's */
extern int	gj_gpu_batch_pairs_guc;	/* 0 = automatic */
extern bool gj_progress_guc;
extern int	gj_knn_method_guc;	/* a gj_knn_method */
extern int	gj_eps_method_guc;	/* a GjEpsMethod */
extern bool gj_custom_scan_guc;

/* gpujoin.eps_method: how the eps functions search. */
typedef enum GjEpsMethod
{
	GJ_EPS_AUTO,
	GJ_EPS_GRID,				/* each row against its neighbouring cells */
	GJ_EPS_BRUTE,				/* every pair, in tiles */
	GJ_EPS_BLOCKS				/* tiles of the block pairs the bounds allow */
} GjEpsMethod;

/* The engine a join will run on, after applying gpujoin.device. */
typedef enum GjEngine
{
	GJ_ENGINE_CPU,
	GJ_ENGINE_GPU
} GjEngine;

#define GJ_AUTO_GPU_MIN_ROWS 100000
#define GJ_AUTO_GPU_MIN_QUERIES 1024	/* kNN: fewer queries stay on the CPU */
#define GJ_AUTO_GPU_MIN_WORK 1e10	/* pair-dimensions of tiles: the GPU below 100K rows */

extern void GjRequireGpuIfSet(void);
extern GjEngine GjChooseEngine(int64 npoints);
extern GjEngine GjChooseEngineFor(int64 npoints, double work);
extern bool GjGpuUsable(const char **why);
extern int	GjCpuThreads(void);
extern int64 GjHostMemoryLimit(void);
extern void GjMarkGpuUnusable(const char *why);

/*
 * Everything a join holds outside palloc (malloc'd points, the grid, worker
 * threads, GPU memory), owned by a memory context whose reset/delete
 * callback releases it: on success, ERROR, cancel and statement_timeout
 * alike.
 */
typedef struct GjResources
{
	MemoryContext cxt;
	gj_points	points;			/* the (reference) points */
	gj_points	queries;		/* kNN join: the query points */
	gj_points	both;			/* eps_join by tiles: queries' rows, then points' */
	gj_grid		grid;
	bool		have_grid;
	bool		block_ordered;	/* points (and queries) sorted for the tile index */
	gj_engine  *engine;			/* the running engine, whichever it is */
	gj_engine  *next_engine;	/* GPU slabs: the next step's, started early */
	int32_t    *rowval;			/* per-row shapes: count or cluster, by row */
	uint8_t    *rowflag;		/* dbscan: is_core, by row */
	int64_t    *list_off;		/* lists from pairs: row i's are [off[i], off[i+1]) */
	int64_t    *list_nb;		/* ... of these ids */
	double	   *list_nd;		/* ... and distances */
	gj_geo_side geo_points;		/* geography: points' and queries' rows as read */
	gj_geo_side geo_queries;
} GjResources;

extern GjResources *GjResourcesCreate(MemoryContext parent);
extern void GjResourcesStopEngine(GjResources *res);
extern void GjResourcesRelease(GjResources *res);

/* The distance: Euclidean, or 1 - cosine similarity (rows normalised on read). */
typedef enum GjMetric
{
	GJ_METRIC_L2 = 0,
	GJ_METRIC_COSINE
} GjMetric;

/* What the reader is asked to read. */
typedef struct GjInputSpec
{
	const char *fname;			/* SQL function name, for messages */
	GjMetric	metric;			/* cosine: rows are normalised, zero rows dropped */
	bool		is_query;		/* the _sql form */
	Oid			nsp;			/* schema of gpujoin's functions */
	/* relation form */
	Oid			relid;
	ArrayType  *cols;			/* coordinate column names */
	text	   *id_col;			/* NULL: the primary key */
	/* query form */
	const char *query;
	/* only the rows with these ids (sorted, distinct), when not NULL */
	const int64 *only_ids;
	int			nonly;

	/*
	 * Relation form, planning: read a TABLESAMPLE SYSTEM of sample_pct
	 * percent of the blocks, with each row's block number as its id.
	 */
	double		sample_pct;
	int			sample_seed;	/* ... REPEATABLE (sample_seed) */
} GjInputSpec;

/* What reading cost, for EXPLAIN ANALYZE. */
typedef struct GjReadStats
{
	int64		rows;			/* rows the query returned */
	int64		skipped;		/* of which NULL, NaN or infinite, or zero for cosine */
	int			workers;		/* parallel workers' buffers combined */
	double		ms;
	int32		srid;			/* the last read's PostGIS SRID (-1: no rows), or GJ_NO_SRID */
	bool		geography;		/* the last read was a geography column: lon/lat rows */
	Oid			postgis_nsp;	/* the schema of its PostGIS type */
} GjReadStats;

#define GJ_NO_SRID (-2)			/* the input was not a geometry column */

/* Reads every usable row of spec into pts (one of a GjResources' sets). */
extern void GjReadPoints(const GjInputSpec *spec, gj_points *pts,
						 GjReadStats *stats);

/* The SQL functions a job can be. */
typedef enum GjFunction
{
	GJ_FN_NONE = 0,
	GJ_FN_EPS_SELFJOIN,
	GJ_FN_EPS_SELFJOIN_SQL,
	GJ_FN_KNN_JOIN,
	GJ_FN_KNN_SELFJOIN,
	GJ_FN_KNN_JOIN_SQL,
	GJ_FN_KNN_SELFJOIN_SQL,
	GJ_FN_NEIGHBOR_COUNTS,
	GJ_FN_NEIGHBOR_COUNTS_SQL,
	GJ_FN_NEIGHBORS,
	GJ_FN_NEIGHBORS_SQL,
	GJ_FN_DBSCAN,
	GJ_FN_DBSCAN_SQL,
	GJ_FN_EPS_JOIN,
	GJ_FN_EPS_JOIN_SQL,
	GJ_FN_JOIN_COUNTS,
	GJ_FN_JOIN_COUNTS_SQL
} GjFunction;

/*
 * What a function's rows are.  Pairs and kNN entries are rows of a join;
 * the other shapes are one row per input row, computed without storing a
 * pair: neighbour counts, neighbour lists (arrays), DBSCAN labels.
 */
typedef enum GjShape
{
	GJ_SHAPE_PAIRS,				/* (a, b, dist) */
	GJ_SHAPE_KNN,				/* (q, r, rank, dist) */
	GJ_SHAPE_COUNTS,			/* (id, n) */
	GJ_SHAPE_LISTS,				/* (id, neighbors int8[], dists float8[]) */
	GJ_SHAPE_DBSCAN				/* (id, cluster, is_core) */
} GjShape;

/* Which gpujoin function funcid is (GJ_FN_NONE for any other). */
extern GjFunction GjLookupFunction(Oid funcid);

/* Output columns whose equality quals can restrict the query side. */
#define GJ_FILTER_NONE (-1)

/* A job: one call of one of the functions, arguments checked. */
typedef struct GjJobSpec
{
	GjFunction	fn;
	const char *fname;
	GjShape		shape;
	bool		is_knn;			/* shape == GJ_SHAPE_KNN */
	GjInputSpec input;			/* the rows (kNN: the references; eps_join: s) */
	GjInputSpec query;			/* knn_join: the query rows; eps_join: r */
	bool		has_query;
	double		eps;
	double		eps2;			/* the threshold on squared distances (metric's) */
	GjMetric	metric;
	bool		use_spheroid;	/* geography: the spheroid (else PostGIS's sphere) */
	bool		spheroid_given; /* use_spheroid is not the function's default */
	bool		symmetric;
	int32		k;
	int32		minpts;			/* dbscan */

	/*
	 * Only the output rows whose id column filter_column (0: the first, 1:
	 * the second) holds one of filter_ids (sorted, distinct), from a qual on
	 * the custom scan.  GJ_FILTER_NONE: all rows.
	 */
	int			filter_column;
	int64	   *filter_ids;
	int			nfilter;
} GjJobSpec;

/* A job on PostGIS geography (geography.c): how its chords become metres. */
typedef struct GjGeography
{
	bool		on;
	gj_geodetic g;
	int32		srid;
	Oid			nsp;			/* PostGIS's schema */
	bool		use_spheroid;
	const char *fname;
	int64		band_pairs;		/* pairs PostGIS was asked about */
} GjGeography;

extern void GjGeographySetup(GjGeography *geo, GjJobSpec *spec, const GjReadStats *s_read,
							 gj_points *points, gj_geo_side *s_side,
							 const GjReadStats *r_read, gj_points *queries,
							 gj_geo_side *r_side);
extern void GjGeographyDecide(GjGeography *geo, gj_geo_side *sa, const int64 *ida,
							  gj_geo_side *sb, const int64 *idb, const double *c, int64 n,
							  bool *within, double *metres);
extern void GjGeographyRepairCounts(GjGeography *geo, gj_points *points, gj_geo_side *s_side,
									const gj_points *queries, gj_geo_side *r_side,
									const uint32 *rows, int64 nrows, int32 *counts);

/*
 * Check arguments (values/nulls as the function receives them, defaults
 * filled in) and fill spec; ERRORs as the functions raise them.  Strings
 * and arrays are copied into the current memory context.
 */
extern void GjJobSpecFromArgs(GjFunction fn, Oid funcid, const Datum *values,
							  const bool *nulls, int nargs, GjJobSpec *spec);

/* The shape of the function's rows, and how many columns they have. */
extern GjShape GjFunctionShape(GjFunction fn);
extern int	GjOutputColumns(GjFunction fn);

/* Which output column (0 or 1) can restrict the query side, or -1. */
extern bool GjFilterableColumn(GjFunction fn, int column);

/* What a job did, for EXPLAIN ANALYZE. */
typedef struct GjJobStats
{
	GjReadStats read;
	const char *engine;			/* "cpu", "gpu", "cpu (restricted)", ... */
	int			threads;
	double		index_ms;		/* host grid, or the GPU's upload + index */
	double		join_ms;		/* engine start until its last row was made */
	double		wait_ms;		/* the backend waiting for the engine */
	double		emit_ms;		/* engine start until the last row, less waits */
	int64		rows_out;		/* rows handed out */
	int64		batches;		/* GPU batches or chunks */
	double		estimated_pairs;	/* the sampled estimate, or -1 */
	int			runs;			/* jobs (a rescan starts another) */
	const char *knn_method;		/* auto's kNN choice in many dimensions, or NULL */
	double		knn_contrast;	/* ... and the sampled contrast it came from */
	int			knn_key_dims;	/* kNN by blocks: the key's dimensions (0: unsorted) */
	const char *tiles_method;	/* eps by tiles: "blocks" or "brute force", or NULL */
	bool		tiles_cheap;	/* ... auto took brute force without choosing */
	int			tiles_key_dims; /* ... blocks: the key's dimensions, */
	double		tiles_kept;		/* ... and the share of block pairs the model keeps */
	int64		slices;			/* GPU tiles: slices the rows were joined in (> 1: */
	int64		slice_rows;		/* ... they did not fit the GPU at once) */
	int64		slice_pairs;	/* ... and the pairs of slices joined */
	int64		slab_steps;		/* GPU slabs: the steps they took (slices: the slabs) */
	int64		slab_early;		/* ... steps started while the previous one's rows went out */
	bool		geography;		/* PostGIS geography: metres on the Earth */
	bool		geo_spheroid;	/* ... on the spheroid, else on PostGIS's sphere */
	int64		geo_asked;		/* ... pairs within a hair of d: asked of PostGIS */
} GjJobStats;

typedef struct GjJob GjJob;

/*
 * Run spec: read, index, start the engine, in a context under parent.
 * Rows then come one by one from GjJobNext (false: no more); values and
 * nulls need GjOutputColumns(spec->fn) entries.  GjJobEnd stops the engine
 * at once and frees everything but the stats; it may be called early.
 * With restart_ok, a GPU failure part-way reruns the join on the CPU from
 * its first row and sets *restarted (the caller discards what it took);
 * without, a failure after rows went out is an ERROR.
 */
extern GjJob *GjJobStart(const GjJobSpec *spec, MemoryContext parent,
						 bool restart_ok);
extern bool GjJobNext(GjJob *job, Datum *values, bool *nulls, bool *restarted);
extern void GjJobEnd(GjJob *job, GjJobStats *stats);

/* Is id one of the n sorted ids? */
static inline bool
GjIdListed(const int64 *ids, int n, int64 id)
{
	int			lo = 0,
				hi = n;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ids[lo] == id;
}

/* Turns a core status into an ereport(ERROR) (never returns for errors). */
extern void GjCheckStatus(gj_status st, const char *what);

/* How long the backend waits on an engine between interrupt checks. */
#define GJ_WAIT_MS 50

/* The exit-fault diagnostic (fault_trace.c), off unless GJ_FAULT_TRACE is set. */
extern void GjFaultTraceInit(void);
extern void GjFaultTraceNote(const char *what);

/* The custom scan (custom_scan.c). */
extern void GjCustomScanInit(void);

/* The planner's row estimate for a call of ours (support.c). */
extern bool GjEstimateRows(FuncExpr *fexpr, double *rows);

#endif							/* GPUJOIN_H */
