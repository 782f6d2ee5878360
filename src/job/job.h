/*
 * job.h
 *		One call of a gpujoin function: its checked arguments in, its
 *		output rows out (job/, for the SQL entry points and the custom scan).
 *
 * A job reads its rows (read/), makes every choice of method in one place
 * (plan.c), starts an engine (run_*.c), and hands out finished rows one by
 * one (emit.c); job.c starts and ends it.  Everything it holds outside
 * palloc is owned by a memory context with a reset callback
 * (resources.c), so an ERROR or a cancel frees it as well as the end does.
 */
#ifndef GJ_JOB_H
#define GJ_JOB_H

#include "gpujoin.h"
#include "read/read.h"

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

/* Output columns whose equality quals can restrict the query side. */
#define GJ_FILTER_NONE (-1)

/* A job: one call of one of the functions, arguments checked. */
typedef struct GjJobSpec
{
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
	 * knn_lateral_join, knn_lateral_selfjoin: each query row's k nearest by
	 * PostgreSQL's own distance operator of the column's type (pgvector's
	 * <->, in float32), as a LATERAL subquery ordered by it returns them;
	 * on the Citus workers only (dist/dist_knn.c).
	 */
	bool		pg_order;
	/*
	 * knn_lateral_selfjoin with a query_filter or a ref_filter: the query
	 * rows are some of the table's (query, filtered) or all, the references
	 * some or all of them (input), and a query row is not its own
	 * reference, as in a self join (where ref_filter leaves a query row out
	 * of the references, it is not among them at all)
	 */
	bool		others;
	/*
	 * knn_lateral_join with query_match and ref_match (input.match,
	 * query.match): a query row without a reference comes once with a
	 * NULL one (LEFT JOIN LATERAL's row)
	 */
	bool		keep_alone;
	/*
	 * ... and ref_order: columns of the references (names, ref_order_n of
	 * them) after the distance in the workers' ORDER BY, ascending
	 */
	char	  **ref_order;
	int			ref_order_n;

	/*
	 * Only the output rows whose id column filter_column (0: the first, 1:
	 * the second) holds one of filter_ids (sorted, distinct), from a qual on
	 * the custom scan.  GJ_FILTER_NONE: all rows.
	 */
	int			filter_column;
	int64	   *filter_ids;
	int			nfilter;
} GjJobSpec;

/* A join of Citus-distributed tables run on the workers (dist/), for EXPLAIN ANALYZE. */
typedef struct GjDistStats
{
	int			strips;			/* tasks: one strip a shard of the cells table (query_rows > 0:
								 * the references' shards) */
	bool		by_shard;		/* the query rows sent to every worker, the references
								 * answering where they lie (shard_knn.c) */
	int64		query_rows;		/* ... how many */
	int			workers;		/* nodes they ran on */
	const char *placement;		/* "host:port n, ..." tasks per node */
	int			dim;			/* the dimension cut (0-based) */
	const char *match;			/* ... or the kind's column (strips of kinds), else NULL */
	bool		latitude;		/* ... which is geography's latitude */
	int64		rows_moved;		/* rows written to the strips, halos included */
	double		plan_ms;		/* bounds and histogram */
	double		move_ms;		/* intermediate tables made and filled */
	double		join_ms;		/* the pushed-down join, its rows all back */
} GjDistStats;

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
	int			gpus;			/* GPUs that shared the engine's work (0: none ran) */
	const char *gpu_team_why;	/* several named, one ran: why (else NULL) */
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
	GjDistStats dist;			/* on Citus's workers (strips > 0) */
} GjJobStats;

typedef struct GjJob GjJob;

/* Registers gpujoin.eps_method, gpujoin.knn_method and gpujoin.progress. */
extern void GjJobInit(void);

/*
 * Run spec: read, index, start the engine, in a context under parent.
 * Rows then come one by one from GjJobNext (false: no more); values and
 * nulls need as many entries as the shape has columns.  GjJobEnd stops
 * the engine at once and frees everything but the stats; it may be called
 * early.  With restart_ok, a GPU failure part-way reruns the join on the
 * CPU from its first row and sets *restarted (the caller discards what it
 * took); without, a failure after rows went out is an ERROR.
 */
extern GjJob *GjJobStart(const GjJobSpec *spec, MemoryContext parent,
						 bool restart_ok);
extern bool GjJobNext(GjJob *job, Datum *values, bool *nulls, bool *restarted);

/*
 * A kNN job's next rows, up to max at once (the plain-SQL join takes 10M
 * rows a second from it): query id, reference id, rank and distance each;
 * 0 at the end.  The same rows as GjJobNext, without a call a row.
 */
extern int64 GjJobNextKnnRows(GjJob *job, int64 *q, int64 *r, int32 *rank, double *dist,
							  int64 max);
extern void GjJobEnd(GjJob *job, GjJobStats *stats);

/*
 * auto takes a usable GPU for inputs of GJ_AUTO_GPU_MIN_ROWS rows or
 * more (plan.c); the engine EXPLAIN names before a run of a function of
 * this shape, on two sets or one, restricted to listed rows or not, by
 * the rules the run follows.
 */
#define GJ_AUTO_GPU_MIN_ROWS 100000
extern const char *GjPlannedEngine(GjShape shape, bool two_sets, bool restricted);

/*
 * geo_postgis.c: the semi-axes in metres of geography SRID srid's
 * spheroid, from spatial_ref_sys in schema nsp (PostGIS's).
 */
extern void GjGeographySpheroid(const char *fname, Oid nsp, int32 srid, double *a, double *b);

#endif							/* GJ_JOB_H */
