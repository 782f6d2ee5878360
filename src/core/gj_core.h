/*
 * gj_core.h
 *		The interface of gpujoin's pure-C core: point buffers, the grid
 *		index, the engine interface and the CPU engines, the plans the
 *		glue and the kernels share (blocks, slabs, geography).
 *
 * Nothing here includes a PostgreSQL header.  The core is the CPU engine,
 * the reference the GPU engine is checked against, and what the unit tests
 * under regress/unit drive directly.  This header is what the PostgreSQL
 * glue and the kernels use; the core's own files share more through
 * core_internal.h, and the tests' brute-force oracles live with the tests
 * (regress/common/oracle.h).  Every function that can fail returns a
 * gj_status; none of them aborts or longjmps, so the PostgreSQL glue can turn
 * each status into an ereport.
 *
 * Exactness rule shared by every engine: a pair (i, j) of rows is within eps
 * when the float64 sum over dimensions 0..dims-1, in that order, of
 * (x_i - x_j)^2 is <= eps2 (every operation rounded to float64 on its own,
 * no fused multiply-add); gj_sqdist() below is that sum.  The engines take
 * the threshold eps2 itself: eps * eps for the Euclidean metric, 2 * eps for
 * the cosine distance of normalised rows (gj_points_normalize).
 */
#ifndef GJ_CORE_H
#define GJ_CORE_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* Limits */
#define GJ_MAX_DIMS				16000	/* coordinates per point (pgvector stores 16,000) */
#define GJ_MAX_ROWS				INT32_MAX	/* rows travel as 32-bit indexes */
#define GJ_MAX_INDEXED_DIMS		6		/* grid dimensions; 3^6 neighbours */
#define GJ_MAX_CELLS_PER_DIM	(INT64_C(1) << 24)	/* keeps cell maths exact */
#define GJ_MAX_LINEAR_ID		(INT64_C(1) << 62)
#define GJ_CHUNK_PAIRS			(32 * 1024)	/* pairs in one result chunk */

typedef enum gj_status
{
	GJ_OK = 0,
	GJ_DONE,					/* an iterator has nothing more */
	GJ_AGAIN,					/* nothing ready yet; poll again */
	GJ_ERR_NOMEM,				/* host allocation failed */
	GJ_ERR_LIMIT,				/* input beyond a GJ_MAX_* limit */
	GJ_ERR_THREAD,				/* pthread_create failed */
	GJ_ERR_ARG,					/* caller passed something invalid */
	GJ_ERR_CANCELED,			/* the join was cancelled */
	GJ_ERR_NODEVICE,			/* no usable GPU (no driver, no device) */
	GJ_ERR_DEVICE_OOM,			/* GPU memory exhausted */
	GJ_ERR_CUDA					/* any other CUDA failure */
} gj_status;

extern const char *gj_status_name(gj_status st);

/*
 * Point set: n rows of dims float64 coordinates, row-major, and one int64 id
 * per row.  The grid build reorders both arrays: into fresh arrays that
 * replace them (a second copy for a moment), or in place when that memory
 * is not there.
 */
typedef struct gj_points
{
	int			dims;
	int64_t		n;
	int64_t		cap;
	int64_t		max_rows;		/* growth beyond this: GJ_ERR_LIMIT (0: none) */
	double	   *x;				/* n * dims */
	int64_t    *ids;			/* n */

	/*
	 * Storage the buffers borrow (the parallel read's shared segment):
	 * released through this instead of free(), and replaced by malloc'd
	 * arrays before it would be grown.  NULL: x and ids are malloc'd.
	 */
	void		(*release) (void *arg);
	void	   *release_arg;
} gj_points;

extern void gj_points_init(gj_points *p, int dims);
extern gj_status gj_points_reserve(gj_points *p, int64_t n);
extern gj_status gj_points_push(gj_points *p, int64_t id, const double *coords);
extern void gj_points_free(gj_points *p);
extern gj_status gj_points_apply_order(gj_points *p, const uint32_t *perm);
extern gj_status gj_points_concat(gj_points *out, const gj_points *a, const gj_points *b);

/* normalize.c: the cosine metric's rows, divided by their norms */
extern int	gj_normalize_row(double *x, int dims);
extern gj_status gj_points_normalize(gj_points *p, int64_t *nzero);

/* The distance rule, shared by the CPU engine and the oracle. */
static inline double
gj_sqdist(const double *a, const double *b, int dims)
{
	double		s = 0.0;

	for (int d = 0; d < dims; d++)
	{
		double		t = a[d] - b[d];

		s += t * t;
	}
	return s;
}

/*
 * Grid index over the non-empty cells of a grid whose cells are at least eps
 * wide in each indexed dimension.  After gj_grid_build the points are sorted
 * by linear cell id; cell c holds the sorted rows
 * [cell_start[c], cell_start[c + 1]) and has linear id cell_id[c] (ascending).
 * Only the nidx highest-variance dimensions with more than one cell are
 * indexed (REORDER); the linear id is row-major over them, the last indexed
 * dimension varying fastest.
 */
typedef struct gj_grid
{
	int			dims;
	int			nidx;			/* indexed dimensions, 0..GJ_MAX_INDEXED_DIMS */
	int			idx_dim[GJ_MAX_INDEXED_DIMS];	/* data dim of each */
	double		origin[GJ_MAX_INDEXED_DIMS];
	double		width[GJ_MAX_INDEXED_DIMS];	/* cell side, >= eps */
	int64_t		ncell_dim[GJ_MAX_INDEXED_DIMS];
	int64_t		stride[GJ_MAX_INDEXED_DIMS];
	double		eps2;			/* the inclusive threshold on squared distances */
	int64_t		npoints;
	int64_t		ncells;			/* non-empty cells */
	int64_t    *cell_id;		/* ncells, ascending */
	int64_t    *cell_start;		/* ncells + 1 */
	int32_t    *cell_of;		/* linear id -> its cell, or -1 (NULL: search cell_id) */
	int			morton_bits;	/* kNN grids: Z-order ids, bits per dim */
} gj_grid;

/* Per-dimension statistics the plan is made from (host or GPU). */
typedef struct gj_dim_stats
{
	double		min;
	double		max;
	double		sum;
	double		sumsq;
} gj_dim_stats;

extern gj_status gj_grid_plan_from_stats(gj_grid *g, int dims, int64_t n,
										 double eps2, const gj_dim_stats *st);
extern gj_status gj_grid_plan(gj_grid *g, const gj_points *p, double eps2);
extern gj_status gj_grid_build(gj_grid *g, gj_points *p, double eps2);
extern gj_status gj_grid_build_planned(gj_grid *g, gj_points *p);
/*
 * Will (planned) g get its cell table (cell_of), so that probes from
 * points in any order cost little?  Too many cells for its rows: no.
 */
extern int	gj_grid_table_fits(const gj_grid *g);
extern void gj_grid_free(gj_grid *g);

/*
 * Forward neighbours (LID-UNICOMP): the non-empty cells adjacent to a cell
 * whose linear id is larger.  Cells must be visited in ascending order with
 * one iterator; its cursors then only move forward.
 */
#define GJ_MAX_FWD_PREFIXES 122	/* (3^(GJ_MAX_INDEXED_DIMS-1) - 1) / 2 + 1 */
#define GJ_MAX_FWD_NEIGHBOURS (3 * GJ_MAX_FWD_PREFIXES)

extern int	gj_grid_forward_prefixes(const gj_grid *g, int64_t *off,
									 int8_t (*vec)[GJ_MAX_INDEXED_DIMS]);

#define GJ_MAX_ALL_NEIGHBOURS 729	/* 3^GJ_MAX_INDEXED_DIMS */
/* ... of any point, inside the grid's range or not: the cells that can hold its neighbours */
extern int	gj_grid_point_neighbourhood(const gj_grid *g, const double *x, int64_t *out);

/*
 * Sampled estimate of the pairs within the grid's eps (unordered, a row
 * never with itself) of the grid-sorted points p: nsample rows probe their
 * neighbourhood, each testing at most a few thousand candidates spread
 * evenly over it, so the cost is bounded on any input.
 */
extern double gj_grid_estimate_pairs(const gj_grid *g, const gj_points *p,
									 int64_t nsample);
/* ... and of the pairs (a row of probe, a row of p) of a join, nsample probe rows sampled */
extern double gj_grid_estimate_join_pairs(const gj_grid *g, const gj_points *p,
										  const gj_points *probe, int64_t nsample);

/* Exact pair count of small inputs, split by equal and unequal ids. */
extern void gj_grid_count_pairs(const gj_grid *g, const gj_points *p,
								int64_t *same, int64_t *other);

/*
 * Result chunks and the queue that carries them from producers (CPU worker
 * threads or the GPU driver) to the consumer (the backend returning rows).
 * A chunk holds finished output rows, so the consumer does no per-row work
 * beyond handing values to the executor: a and b are row ids (a self-join
 * pair's smaller id first; a kNN entry's query id, then its reference id),
 * dist the Euclidean distance, and for kNN rank the entry's rank (1 = the
 * nearest).  rank is NULL in chunks of pairs.
 */
#define GJ_LIST_GAP 3			/* 8-byte entries before each list: 24 bytes */

typedef struct gj_chunk
{
	int32_t		n;
	int32_t		cap;
	int64_t    *a;
	int64_t    *b;
	double	   *dist;
	int32_t    *rank;

	/*
	 * Neighbour lists (eps_neighbors): row i is the row with id a[i] and its
	 * list is entries [off[i] + GJ_LIST_GAP, off[i + 1]) of nb (neighbour
	 * ids) and nd (distances).  The GJ_LIST_GAP entries before each list
	 * are the consumer's: it writes an array header there, so a list goes
	 * out as an array without a copy.  NULL in other chunks.
	 */
	int64_t    *off;			/* cap + 1 */
	int64_t    *nb;
	double	   *nd;
	int64_t		ncap;			/* entries nb and nd have room for */
	struct gj_chunk *next;
	struct gj_pair_queue *home;	/* the queue whose pool it is: release goes there,
								 * even when another queue handed it on */
} gj_chunk;

/*
 * Geography (geodetic.c): longitude/latitude points as earth-centred 3-D
 * points, so that a chord decides PostGIS's distance in metres.  A chord at
 * most in_max is within d, one above out_min beyond it (proven, with a
 * margin for rounding); between them PostGIS decides.  out_min is the
 * engines' eps.
 */
typedef struct gj_geodetic
{
	int			spheroid;		/* 0: PostGIS's sphere, a = b = (2a + b) / 3 */
	double		a,
				b,
				e2;				/* semi-axes in metres; e2 = (a^2 - b^2) / a^2 */
	double		d;				/* the distance in metres */
	double		in_max;
	double		out_min;
} gj_geodetic;

/* chords up to this long take the spheroid's mean curvature (no lookup) */
#define GJ_GEO_SHORT_CHORD 5000.0

/*
 * Whether pairs within d may need the geodesic (their rows looked up and
 * measured on the spheroid, ~1 us a pair) rather than the chord's arc.
 */
static inline int
gj_geodetic_long(const gj_geodetic *g)
{
	return g->spheroid && g->in_max > GJ_GEO_SHORT_CHORD;
}

extern gj_status gj_geodetic_init(gj_geodetic *g, double a, double b, int spheroid, double d);
extern double gj_geodetic_chord_metres(const gj_geodetic *g, double c);

/*
 * One side's rows as read (lon/lat by id), for asking PostGIS about a pair
 * and for the metres of a long one.
 */
typedef struct gj_geo_side
{
	int64_t		n;
	int64_t    *ids;
	double	   *ll;				/* n rows of lon, lat in degrees */
	double	   *xyz;			/* the same rows earth-centred, as the engines have them */
	int64_t    *by_id;			/* (id, row) sorted, made on first use */
	int64_t    *dense;			/* ids dense enough: by_id's rows of id min_id + v from */
	int64_t		min_id;			/* dense[v] to dense[v + 1], v <= id_span; else NULL */
	uint64_t	id_span;
} gj_geo_side;

extern gj_status gj_geodetic_points(const gj_geodetic *g, gj_points *p, gj_geo_side *side);
extern gj_status gj_geo_side_pair(gj_geo_side *sa, int64_t ida, gj_geo_side *sb, int64_t idb,
								  double c, const double **lla, const double **llb);
extern gj_status gj_geo_pair_metres(const gj_geodetic *g, gj_geo_side *sa, int64_t ida,
									gj_geo_side *sb, int64_t idb, double c, double *metres);
extern void gj_geo_side_free(gj_geo_side *s);
/* s's id index, made now (the lookups above make it on first use, so not on threads) */
extern gj_status gj_geo_side_index(gj_geo_side *s);

typedef struct gj_pair_queue gj_pair_queue;

extern gj_pair_queue *gj_queue_create(int nchunks, int with_rank);
extern gj_pair_queue *gj_queue_create_external(gj_chunk *pool, int nchunks);
extern void gj_queue_destroy(gj_pair_queue *q);
extern gj_chunk *gj_queue_get_free(gj_pair_queue *q);
extern void gj_queue_put_full(gj_pair_queue *q, gj_chunk *c);
extern void gj_queue_producer_done(gj_pair_queue *q);
extern void gj_queue_set_producers(gj_pair_queue *q, int n);
extern void gj_queue_release(gj_pair_queue *q, gj_chunk *c);
extern void gj_queue_cancel(gj_pair_queue *q);
extern double gj_queue_done_ms(gj_pair_queue *q);

/*
 * The engine interface.  Every engine that streams chunks (the CPU and GPU
 * self-joins, the probe, the neighbour lists, the CPU and GPU kNN joins)
 * begins with a gj_engine, so that its caller takes chunks, gives them
 * back, learns when the last was made and stops it the same way whatever
 * runs: GJ_ENGINE(handle) of any engine's handle.  The engine's threads put
 * chunks in q; one that fails records the first error with gj_engine_fail,
 * which gj_engine_next reports once the queue has ended.  gj_engine_free
 * cancels, joins the threads and frees everything, at any point; NULL is a
 * no-op.
 *
 * A GPU engine (on_gpu) also answers, whatever it is, what made it fail
 * (gj_engine_error_text: the failing CUDA call, beyond the status) and
 * what it did (gj_engine_report: its batches, its slices, when its last
 * batch was handed over), so that its caller needs no switch on the kind
 * of engine running.  The CPU engines leave both hooks NULL.
 */
typedef struct gj_engine_report
{
	int64_t		batches;		/* kernel launches or chunks delivered (0: not counted) */
	int64_t		slices;			/* tiles: slices the rows were joined in (0: not sliced) */
	int64_t		slice_rows;		/* ... of up to this many rows */
	int64_t		slice_pairs;	/* ... and the pairs of slices joined */
	double		done_ms;		/* gj_now_ms() when the last batch was handed over, or 0 */
	int			members;		/* a team's engines (team.c), else 0 */
} gj_engine_report;

typedef struct gj_engine
{
	gj_pair_queue *q;
	gj_status	error;			/* atomic: the first failure */
	int			on_gpu;			/* a GPU engine: a failure part-way can rerun on the CPU */
	void		(*free) (struct gj_engine *e);
	const char *(*error_text) (const struct gj_engine *e);
	void		(*report) (const struct gj_engine *e, gj_engine_report *r);
} gj_engine;

#define GJ_ENGINE(handle) ((gj_engine *) (handle))

extern gj_status gj_engine_next(gj_engine *e, int timeout_ms, gj_chunk **out);
extern void gj_engine_release(gj_engine *e, gj_chunk *c);
extern double gj_engine_done_ms(gj_engine *e);
extern void gj_engine_free(gj_engine *e);
extern void gj_engine_fail(gj_engine *e, gj_status st);
extern gj_status gj_engine_error(const gj_engine *e);
extern const char *gj_engine_error_text(const gj_engine *e);
extern void gj_engine_report_of(const gj_engine *e, gj_engine_report *r);

/*
 * A team (team.c): n engines that each make part of one join's chunks,
 * started at the same time by start(arg, member, &engine) on threads of
 * their own, seen as one engine; gj_team_member(e, i) is member i (e
 * itself for i = 0 when e is not a team), for the member's own statistics.
 */
typedef gj_status (*gj_member_start_fn) (void *arg, int member, gj_engine **out);
extern gj_status gj_team_start(int n, gj_member_start_fn start, void *arg,
							   void (*cleanup) (void *), void *cleanup_arg,
							   gj_engine **out, int *failed_member);
extern gj_engine *gj_team_member(gj_engine *e, int i);
extern int	gj_team_size(const gj_engine *e);
extern int	gj_queue_canceled(gj_pair_queue *q);

/* Monotonic wall clock in milliseconds, for phase timings. */
extern double gj_now_ms(void);

/*
 * Long single-threaded work of the core (index builds, query ordering)
 * polls this hook every few tens of thousands of rows and gives up with
 * GJ_ERR_CANCELED when it returns non-zero.  The PostgreSQL glue points it
 * at the backend's pending-cancel flags; with no hook nothing stops.  Only
 * the thread that called into the core polls it, never a worker thread.
 */
typedef int (*gj_interrupt_fn) (void);
extern void gj_set_interrupt_hook(gj_interrupt_fn fn);
extern int	gj_interrupted(void);

/*
 * The CPU self-join.  gj_cpu_selfjoin_start launches the worker threads
 * (with every signal blocked, so that PostgreSQL's handlers only ever run on
 * the backend thread) and returns at once; the caller takes chunks with
 * gj_engine_next(GJ_ENGINE(j), ..) until GJ_DONE and stops it with
 * gj_engine_free, like every engine below.
 */
typedef struct gj_cpu_selfjoin gj_cpu_selfjoin;

typedef struct gj_join_stats
{
	int64_t		candidates;		/* distance computations planned */
	int64_t		ntasks;
	int			nthreads;
} gj_join_stats;

extern gj_status gj_cpu_selfjoin_start(const gj_grid *g, const gj_points *p,
									   int nthreads, gj_cpu_selfjoin **out);
extern void gj_cpu_selfjoin_stats(const gj_cpu_selfjoin *j, gj_join_stats *st);

/*
 * The self-join restricted by its output: only the rows whose id column
 * `column` (0: a, 1: b) holds one of the given ids, as if those rows were
 * filtered from the full join (a query like WHERE a = 42).  Only rows whose
 * id is in that set can take part, so the join starts from them (the
 * queries) and probes each one's whole neighbourhood; a pair of two query
 * rows is found from the one with the lower row number, so none comes out
 * twice.  Output rows are final: with symmetric, each orientation that
 * passes the filter is its own row.  g is the grid over the sorted points,
 * or NULL to test every query row against every row (few query rows).
 *
 * The join of two sets (eps_join): with `queries` set, every one of its
 * rows probes its neighbourhood among p (gj_grid_point_neighbourhood), and
 * each pair within eps is a row (query id, p's id), or (p's id, query id)
 * with swap; column, symmetric and rows are unused.
 */
typedef struct gj_probe_options
{
	int			column;			/* the filtered output column, 0 or 1 */
	int			symmetric;
	const uint32_t *rows;		/* query rows of p, ascending */
	int64_t		nrows;
	const gj_points *queries;	/* the other set of a two-set join, or NULL */
	int			swap;			/* ... its id second */
} gj_probe_options;

typedef struct gj_cpu_probe gj_cpu_probe;

extern gj_status gj_cpu_probe_start(const gj_grid *g, const gj_points *p,
									double eps2, const gj_probe_options *opt,
									int nthreads, gj_cpu_probe **out);

extern int	gj_cpu_count(void);

/*
 * sort.c: fn over rows [0, n) in nt slices on helper threads and this one,
 * polling the interrupt hook between steps (fn must not call into
 * PostgreSQL); gj_slices_for: how many slices for n rows of at least
 * min_rows each, at most one per core and GJ_MAX_SLICES.
 */
#define GJ_MAX_SLICES 16
extern gj_status gj_run_rows(void (*fn) (void *state, int64_t r0, int64_t r1), void *args,
							 size_t stride, int64_t n, int nt);
extern int	gj_slices_for(int64_t n, int64_t min_rows);

/*
 * Per-row answers about eps neighbourhoods, in memory O(rows), no pair ever
 * stored.  Rows are p's rows in its current order (for the CPU functions,
 * the grid's sorted order); "within eps" is the shared rule, and a row is
 * always within eps of itself.
 *
 * gj_cpu_count_rows: counts[k] = rows within eps of row rows[k], itself
 * included, or min(that, cap) when cap > 0 (the scan stops there); rows
 * NULL: every row, counts[i] row i's (gj_cpu_count_within).
 */
extern gj_status gj_cpu_count_rows(const gj_grid *g, const gj_points *p,
								   const uint32_t *rows, int64_t nrows,
								   int32_t cap, int nthreads, int32_t *counts);

/*
 * Two sets: counts[i] = rows of the grid-sorted p within eps of row i of
 * qs (qs in its own order, not in the grid's range necessarily).
 */
extern gj_status gj_cpu_count_queries(const gj_grid *g, const gj_points *p,
									  const gj_points *qs, int nthreads,
									  int32_t *counts);
/* The other way round: counts[j] = rows of qs within eps of row j of p. */
extern gj_status gj_cpu_count_into(const gj_grid *g, const gj_points *p, const gj_points *qs,
								   int nthreads, int32_t *counts);

/*
 * DBSCAN as PostGIS ST_ClusterDBSCAN defines it, made independent of row
 * order.  A row is core when at least minpts rows (itself included) are
 * within eps; clusters are the connected components of core rows linked
 * within eps; a non-core row within eps of a core row is a border row of
 * that row's cluster, and of the lowest-numbered one when there are
 * several; every other row is noise.  Clusters are numbered 0, 1, ... in
 * the order of the smallest id among each cluster's core rows.
 *
 * The engines (CPU here, GPU in gj_cuda.h) produce, per row, core[i] and
 * root[i]: a representative row of the cluster (-1 for noise) where border
 * rows already picked the cluster whose core rows have the smallest id;
 * gj_dbscan_number then turns representatives into cluster numbers in
 * place and returns the number of clusters.
 */
extern gj_status gj_cpu_dbscan(const gj_grid *g, const gj_points *p,
							   int32_t minpts, int nthreads, int32_t *root,
							   uint8_t *core);
extern gj_status gj_dbscan_number(const gj_points *p, int32_t *root,
								  const uint8_t *core, int64_t *nclusters);

/*
 * Neighbour lists (eps_neighbors), streamed in chunks of lists
 * (gj_chunk.off/nb/nd): every row once (or the rows rows[0..nrows) of p,
 * when rows is not NULL), its neighbours within eps other than itself
 * ordered by (distance, id).  An engine (gj_engine), like gj_cpu_selfjoin.
 */
typedef struct gj_cpu_lists gj_cpu_lists;

extern gj_status gj_cpu_lists_start(const gj_grid *g, const gj_points *p,
									const uint32_t *rows, int64_t nrows,
									int nthreads, gj_cpu_lists **out);

/* Many dimensions: the sampled shares auto chooses tiles or the grid by (tile_plan.c). */
extern gj_status gj_sample_pair_shares(const gj_points *p, double eps2, int64_t m,
									   double *cand, double *within);

/*
 * The block order (block_index.c, block_key.h): the key's dimensions,
 * largest sample variance first, and each one's 2^bits - 1 ascending
 * quantile cuts (m x ncut), planned on the host from a sample; rows sorted
 * stably by key, on the host (gj_block_plan_perm) or on the device
 * (kernels/order.cu), the same order.  m = 0: rows keep their order.
 */
#define GJ_BLOCK_KEY_DIMS 16		/* dimensions in the key, at most */

typedef struct gj_block_plan
{
	int			m;
	int			bits;
	int			dim[GJ_BLOCK_KEY_DIMS];
	double	   *cut;
} gj_block_plan;

extern gj_status gj_block_plan_make(const gj_points *p, gj_block_plan *plan);
extern gj_status gj_block_plan_make_for(const gj_points *p, double eps2, gj_block_plan *plan,
										double *kept);
extern gj_status gj_points_block_order_by(gj_points *p, const gj_block_plan *plan);
extern gj_status gj_block_plan_perm(const gj_points *p, const gj_block_plan *plan,
									uint32_t **perm);
extern void gj_block_plan_free(gj_block_plan *plan);

/*
 * The CPU eps self-join by tiles (cpu_tiles.c), an engine like
 * gj_cpu_selfjoin over p's rows in their current order.  Chunks carry
 * (smaller id, larger id, distance), or with emit_rows the rows' numbers
 * (smaller first) for the per-row shapes; a join of two sets (cross)
 * carries (first set's, second set's).
 */
typedef struct gj_tiles_options
{
	double		eps2;
	int			emit_rows;
	double		expected_pairs; /* GPU: sizes its result buffers (0: unknown) */
	int			no_filter;		/* GPU: every pair by the float64 rule (tests) */
	int			prune;			/* skip block pairs the bounds rule out (the index) */
	/*
	 * 0: a self-join.  1: a join of two sets, rows [0, split) and [split,
	 * n): only pairs across, each (first set's, second set's) in that
	 * order, as ids or rows.  Blocks restart at split.
	 */
	int			cross;
	int64_t		split;
} gj_tiles_options;

typedef struct gj_cpu_tiles gj_cpu_tiles;

extern gj_status gj_cpu_tiles_start(const gj_points *p, const gj_tiles_options *opt,
									int nthreads, gj_cpu_tiles **out);

/*
 * Per-row answers from any engine's pairs (pair_rows.c).  A pair source
 * starts a fresh run of an engine whose chunks carry row numbers (a < b,
 * emit_rows) and distances; the shapes may run it more than once.  The
 * answers are those of gj_cpu_count_within (itself included), of
 * gj_cpu_dbscan (for gj_dbscan_number) and, for lists, every row's
 * neighbours by (distance, id) as CSR arrays (malloc'd; GJ_ERR_LIMIT with
 * *entries set when more than max_entries).
 */
typedef struct gj_pair_source
{
	gj_status	(*start) (void *arg, gj_engine **out);
	void	   *arg;
	int64_t		store_bytes;	/* DBSCAN keeps its pairs up to this (0: 1 GB) */
} gj_pair_source;

extern gj_status gj_pairs_count(const gj_pair_source *src, int64_t n, int32_t *counts);
extern gj_status gj_pairs_dbscan(const gj_pair_source *src, const gj_points *p,
								 int32_t minpts, int32_t *root, uint8_t *core);
extern gj_status gj_pairs_lists(const gj_pair_source *src, const gj_points *p,
								int64_t max_entries, int64_t **off, int64_t **nb,
								double **nd, int64_t *entries);

/*
 * Block every asynchronous signal in this thread (threads.c), saving the
 * old mask, so that threads started meanwhile never run PostgreSQL's
 * handlers (the GPU engines' driver threads start under it).
 */
extern void gj_block_async_signals(sigset_t *old);

/*
 * k nearest neighbours.  For each query row, the k reference rows first in
 * the order (squared distance, reference id), distances by the shared rule;
 * with exclude_self the queries are the references themselves (same rows,
 * same order) and a row is never its own neighbour.  Results travel in the
 * same chunks as pairs: a = query row, b = reference row, dist = Euclidean
 * distance; a query's entries are consecutive and in rank order, a chunk's
 * first entry having rank first_rank.
 */
typedef enum gj_knn_method
{
	GJ_KNN_AUTO = 0,			/* grid up to GJ_KNN_GRID_MAX_DIMS, else blocks */
	GJ_KNN_GRID,
	GJ_KNN_BRUTE,
	GJ_KNN_BLOCKS				/* brute force that skips blocks the bounds rule out */
} gj_knn_method;

#define GJ_KNN_GRID_MAX_DIMS	GJ_MAX_INDEXED_DIMS
#define GJ_KNN_HEAP_MIN_K		32	/* default: array buffer below this k */

typedef struct gj_knn_options
{
	int64_t		k;
	int			exclude_self;
	gj_knn_method method;
	int			heap_min_k;		/* 0: GJ_KNN_HEAP_MIN_K */

	/*
	 * Self kNN of some rows only (exclude_self): the queries are the rows
	 * self_rows[0..nself) of the references, as they are ordered when the
	 * engine starts.  NULL: every row.
	 */
	const uint32_t *self_rows;
	int64_t		nself;
} gj_knn_options;

/* k after capping at the number of references there are to return. */
extern int64_t gj_knn_effective_k(const gj_knn_options *opt, int64_t nrefs);
extern gj_knn_method gj_knn_pick_method(const gj_knn_options *opt, int dims);

/* knn_contrast.c: auto's choice above the grid's dimensions, from a sample */
extern gj_knn_method gj_knn_auto_method(const gj_knn_options *opt, const gj_points *refs,
										double *contrast);

/*
 * The kNN grid over refs (sorted in place): the self-join's grid with cells
 * sized for a few points each where the points are (measured on a sample,
 * so clusters get cells sized for the clusters, not the bounding box) and
 * Z-order cell ids.
 */
extern gj_status gj_knn_grid_build(gj_grid *g, gj_points *refs);

/* Its geometry alone, from statistics of refs (host or GPU) and a sample. */
extern gj_status gj_knn_grid_plan(gj_grid *g, const gj_points *refs,
								  const gj_dim_stats *st);

/* Query rows ordered by the grid cell they fall in (malloc'd array). */
extern gj_status gj_knn_query_order(const gj_grid *g, const gj_points *qs,
									uint32_t **order);

typedef struct gj_cpu_knn gj_cpu_knn;

/*
 * Start the CPU kNN engine.  For the grid method, refs must have been
 * sorted by gj_knn_grid_build(g, refs) and g is that grid; for brute force
 * g is NULL.  queries may be refs itself (exclude_self).
 */
extern gj_status gj_cpu_knn_start(const gj_points *refs, const gj_grid *g,
								  const gj_points *queries,
								  const gj_knn_options *opt, int nthreads,
								  gj_cpu_knn **out);

/*
 * slabs.c: an eps join larger than the device, as steps over rows of p
 * (and qs) sorted along their widest dimension.  A step joins rows
 * [a0, a1) of p with themselves (self) or with probing rows [b0, b1) of
 * qs (two sets) or of p (a self-join's halo: the later rows within reach);
 * together the steps give each pair once, and no step holds more than
 * max_rows rows.  GJ_ERR_DEVICE_OOM: eps too large to cut at all.
 */
typedef struct gj_slab_step
{
	int			self;
	int64_t		a0;
	int64_t		a1;
	int64_t		b0;
	int64_t		b1;
} gj_slab_step;

typedef struct gj_slab_plan
{
	int			dim;			/* the dimension cut */
	int64_t		nslabs;
	gj_slab_step *steps;
	int			nsteps;
	int			cap;
} gj_slab_plan;


/*
 * perm: p's rows in the order of coordinate dim, ties in row order; a
 * device may answer (GPU: gj_gpu_order_along), and any status but OK or
 * GJ_ERR_CANCELED has the host sort instead.
 */
typedef gj_status (*gj_order_fn) (void *arg, const gj_points *p, int dim, uint32_t *perm);
extern gj_status gj_slabs_plan_ordered(gj_points *p, gj_points *qs, double eps2,
									   int64_t max_rows, gj_order_fn order, void *arg,
									   gj_slab_plan *pl);
extern void gj_slabs_free(gj_slab_plan *pl);

/*
 * Windows for answers per row that need every neighbour at once (lists):
 * p sorted along its widest dimension, then cut into runs of own rows
 * [o0, o1), every row owned by one window, each with [w0, w1) ⊇ [o0, o1),
 * the rows within reach of them (at most max_rows).  GJ_ERR_DEVICE_OOM
 * when one row's window alone is larger.  *out is the caller's to free.
 */
typedef struct gj_slab_window
{
	int64_t		o0;
	int64_t		o1;
	int64_t		w0;
	int64_t		w1;
} gj_slab_window;

extern gj_status gj_slabs_windows(gj_points *p, double eps2, int64_t max_rows,
								  gj_order_fn order, void *arg, gj_slab_window **out,
								  int64_t *nwin);
/* A view of rows [r0, r1) of p (shares its arrays; never freed). */
extern void gj_points_view(gj_points *v, const gj_points *p, int64_t r0, int64_t r1);

/*
 * slab_density.c: eps_neighbor_counts and DBSCAN of p larger than the
 * device, from an engine's answers on slabs of at most max_rows rows.  p
 * (and qs) are sorted along p's widest dimension first (the answers follow
 * the new order), and the results are those of gj_cpu_count_within and
 * gj_cpu_dbscan.  The engine (GPU in the extension, brute force in the
 * tests) answers two questions of a few rows at a time:
 *	join_counts:  counts[i] = rows of s within eps of row i of r;
 *	dbscan_given: DBSCAN of w's rows alone with their core flags given:
 *		rep[i] of a core row is a row of its component (core rows of w
 *		linked within eps); of another row, a core row within eps whose
 *		component's least key is least (key NULL: the ids), or -1.
 * Counts add up over slabs.  DBSCAN takes its core flags from the counts,
 * links components window by window (a slab with its halo: every pair
 * within eps lies in one window) in a forest over all rows, and then asks
 * each window's border rows again with the components ranked, keeping the
 * least.
 */
typedef struct gj_slab_engine
{
	void	   *arg;
	gj_status	(*join_counts) (void *arg, const gj_points *s, const gj_points *r,
								double eps2, int32_t *counts);
	gj_status	(*dbscan_given) (void *arg, const gj_points *w, double eps2,
								 const uint8_t *core, const int64_t *key, int32_t *rep);
	gj_order_fn order;			/* the slabs' sort; NULL: the host's */
	/*
	 * NULL, or told of the sorted rows every step's views come from, before
	 * the sweeps (on = 1) and after them (on = 0): a device engine pins them
	 * once, so that each step's upload is a DMA, not a copy through the
	 * driver's staging.
	 */
	void		(*rows) (void *arg, const gj_points *p, int on);
} gj_slab_engine;

typedef struct gj_slab_info
{
	int64_t		nslabs;
	int64_t		calls;			/* engine calls */
	double		plan_ms;		/* sort and cut */
	double		counts_ms;		/* the counts' sweep */
	double		link_ms;		/* DBSCAN: the windows' components, merged */
	double		border_ms;		/* ... ranking, border rows, the final roots */
} gj_slab_info;

/* qs NULL: p's own counts (itself included); else counts[i] of qs's row i among p's rows. */
extern gj_status gj_slab_counts(gj_points *p, gj_points *qs, double eps2, int64_t max_rows,
								const gj_slab_engine *e, int32_t *counts, gj_slab_info *info);
extern gj_status gj_slab_dbscan(gj_points *p, double eps2, int32_t minpts, int64_t max_rows,
								const gj_slab_engine *e, int32_t *root, uint8_t *core,
								gj_slab_info *info);

/*
 * A rule the engines cannot apply (geography: metres on the spheroid),
 * bounded by two of theirs: every pair within eps_in is within it, no pair
 * beyond eps_out is.  gj_slab_band sorts p (along band->dim), counts each
 * row's rows within eps_in (itself included) into counts_in, and lists the
 * band: every pair of rows (a < b, p's new order) with eps_in < distance
 * <= eps_out, c its distance.  The caller decides those pairs by the rule,
 * keeps the ones within it (each adds one to both ends' counts), and may
 * then cluster: gj_slab_band_dbscan is gj_slab_dbscan under the rule, with
 * the core flags from those counts, p as gj_slab_band left it.
 */
typedef struct gj_band
{
	int			dim;			/* p is sorted along it */
	int64_t		n;
	int64_t		cap;
	int64_t    *a;
	int64_t    *b;
	double	   *c;
} gj_band;

extern gj_status gj_slab_band(gj_points *p, double eps2_in, double eps2_out, int64_t max_rows,
							  const gj_slab_engine *e, int32_t *counts_in, gj_band *band,
							  gj_slab_info *info);
extern gj_status gj_slab_band_dbscan(gj_points *p, double eps2_in, double eps2_out,
									 const uint8_t *core, const gj_band *band, int64_t max_rows,
									 const gj_slab_engine *e, int32_t *root, gj_slab_info *info);
extern void gj_band_free(gj_band *band);

/*
 * The CPU's answers to the slab engine's questions (each a grid over a
 * copy of the rows asked about), on *nthreads threads.
 */
extern void gj_cpu_slab_engine(gj_slab_engine *e, int *nthreads);

#ifdef __cplusplus
}
#endif

#endif							/* GJ_CORE_H */
