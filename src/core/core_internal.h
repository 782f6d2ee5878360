/*
 * core_internal.h
 *		What the core's own files share and the PostgreSQL glue and the
 *		kernels never call: thread helpers, the sort, the grid's cell
 *		arithmetic and neighbour iterator, the tile loops and plans, the
 *		blocks' bounds, and the pieces the unit tests check one by one.
 *
 * gj_core.h is the core's interface; this header adds to it.  A function
 * moves to gj_core.h when the glue or a kernel starts to call it.
 */
#ifndef GJ_CORE_INTERNAL_H
#define GJ_CORE_INTERNAL_H

#include "gj_core.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* points.c */
extern void gj_points_replace(gj_points *p, double *x, int64_t *ids);

/*
 * big_buffers.c: buffers of many megabytes get huge pages (a hint) and are
 * faulted in on threads before first use; smaller ones are left alone.
 */
extern void gj_big_prepare(void *p, size_t bytes);
extern void *gj_big_alloc(size_t bytes);

/*
 * threads.c: start up to n threads running fn, thread t getting (char *)
 * args + t * stride (stride 0: every thread the same argument), with every
 * asynchronous signal blocked; how many started.  gj_par_for: fn over items
 * [0, n) in blocks taken by up to nthreads threads, the calling thread
 * polling the interrupt hook every millisecond until they finish.
 */
extern int	gj_threads_start(pthread_t *threads, int n, void *(*fn) (void *),
							 void *args, size_t stride);
typedef void (*gj_block_fn) (void *arg, int64_t r0, int64_t r1, const int *stop);
extern gj_status gj_par_for(gj_block_fn fn, void *arg, int64_t n, int nthreads);

/* engine.c: the engine's producers, counted before any of them runs */
extern int	gj_engine_start_workers(gj_engine *e, pthread_t *threads, int n,
									void *(*fn) (void *), void *args, size_t stride);

/* pair_queue.c */
extern gj_pair_queue *gj_queue_create_lists(int nchunks);
extern int	gj_chunk_reserve_list(gj_chunk *c, int64_t entries);
extern gj_status gj_queue_take(gj_pair_queue *q, int timeout_ms, gj_chunk **out);

/* sort.c: a stable radix sort by key, on threads for large n */
extern gj_status gj_sort_by_key(int64_t *keys, uint32_t *vals, int64_t n,
								int64_t maxkey);
extern gj_status gj_sort_by_key_slices(int64_t *keys, uint32_t *vals, int64_t n,
									   int64_t maxkey, int nt);
extern int	gj_cmp_double(const void *a, const void *b);

/* grid.c: statistics, cell arithmetic */
extern gj_status gj_points_stats(const gj_points *p, gj_dim_stats *st);
extern void gj_grid_use_morton(gj_grid *g, const gj_dim_stats *st);
extern int64_t gj_grid_cell_of(const gj_grid *g, const double *coords);
extern gj_status gj_grid_cell_ids(const gj_grid *g, const gj_points *p, int64_t *keys,
								  uint32_t *perm, int64_t *maxkey);

/*
 * neighbours.c: the forward neighbours of cells visited in ascending order
 * (LID-UNICOMP) through one iterator, whose cursors only move forward; a
 * cell's whole neighbourhood; the cell holding sorted row `row` (hint, a
 * cell or -1, is tried first).
 */
typedef struct gj_nbr_iter
{
	const gj_grid *g;
	int			nprefix;
	int64_t		prefix_off[GJ_MAX_FWD_PREFIXES];	/* linear offset */
	int8_t		prefix_vec[GJ_MAX_FWD_PREFIXES][GJ_MAX_INDEXED_DIMS];
	int64_t		cursor[GJ_MAX_FWD_PREFIXES];
} gj_nbr_iter;

extern void gj_nbr_iter_init(gj_nbr_iter *it, const gj_grid *g, int64_t first_cell);
extern int	gj_nbr_forward(gj_nbr_iter *it, int64_t cell, int64_t *out);
extern int	gj_grid_neighbourhood(const gj_grid *g, int64_t cell, int64_t *out);
extern int64_t gj_grid_cell_of_row(const gj_grid *g, int64_t row, int64_t hint);

/* cpu_probe.c: the exact pair count of cells [c0, c1) */
extern void gj_grid_count_pairs_cells(const gj_grid *g, const gj_points *p, int64_t c0,
									  int64_t c1, int64_t *same, int64_t *other);

/* geodetic.c */
extern void gj_geodetic_to_xyz(const gj_geodetic *g, const double *ll, double *xyz, int64_t n);

/*
 * density.c: every row's count (gj_cpu_count_rows of all rows), and
 * gj_cpu_dbscan with the core flags given, clusters ranked by key[i] of
 * their core rows (NULL: the ids): rep[i] as gj_slab_engine's
 * dbscan_given.
 */
extern gj_status gj_cpu_count_within(const gj_grid *g, const gj_points *p,
									 int32_t cap, int nthreads, int32_t *counts);
extern gj_status gj_cpu_dbscan_given(const gj_grid *g, const gj_points *p, const uint8_t *core,
									 const int64_t *key, int nthreads, int32_t *rep);

/*
 * Many dimensions: tiles.  The CPU's inner loop (tile_distances.c): one
 * row q against a block of GJ_TILE_REFS rows stored transposed in T, each
 * lane the shared rule exactly; 0 when every lane is known to exceed bound
 * (checked every few dimensions), else s[j] is row j's squared distance.
 */
#define GJ_TILE_REFS 32
extern int	gj_tile_distances(const double *q, const double *T, int dims,
							  double bound, double *s);
extern void gj_tile_transpose(const double *x, int64_t n, int dims, int64_t r0,
							  double *T);

/*
 * A tile plan (tile_plan.c): rows in blocks of `block`, and runs, each a
 * query block qb with reference blocks [lo, hi), lo >= qb, whose rows are
 * compared with qb's (within qb itself, pairs i < j only).  Every pair of
 * rows that can pass the rule lies in exactly one run.
 */
typedef struct gj_tile_plan
{
	int64_t		n;
	int			block;
	int64_t		nblocks;
	int64_t		split;			/* cross plans: the second set's first row (0: one set) */
	int64_t		split_block;	/* ... and first block: blocks restart there */
	int64_t		nruns;
	int64_t    *run_qb;
	int64_t    *run_lo;
	int64_t    *run_hi;
	int64_t		units;			/* (query block, reference block) pairs */
} gj_tile_plan;

extern gj_status gj_tile_plan_brute(gj_tile_plan *tp, int64_t n, int block);
extern gj_status gj_tile_plan_cross(gj_tile_plan *tp, int64_t n, int64_t split, int block);
extern void gj_tile_plan_free(gj_tile_plan *tp);
extern void gj_tile_block_rows(const gj_tile_plan *tp, int64_t b, int64_t *r0,
							   int64_t *r1);

/* cpu_tiles.c: what a run compared and skipped, for the tests */
extern int64_t gj_cpu_tiles_tested(const gj_cpu_tiles *j);
extern int64_t gj_cpu_tiles_skipped(const gj_cpu_tiles *j);

/*
 * The tile engines' index (block_index.c, block_bounds.h): rows sorted so
 * that blocks of consecutive rows are small, and per block of `block` rows
 * its box (lo, hi), centre c and radius r, each nblocks x dims.
 */
#define GJ_BLOCK_ROWS 128		/* the GPU's tile; the CPU bounds blocks of GJ_TILE_REFS */

typedef struct gj_block_bounds
{
	const double *x;			/* the rows bounded (borrowed) */
	int64_t		n;
	int			dims;
	int			block;
	int64_t		nblocks;
	double	   *lo;
	double	   *hi;
	double	   *c;
	double	   *r;
} gj_block_bounds;

extern gj_status gj_points_block_perm(const gj_points *p, uint32_t **perm);
extern gj_status gj_points_block_order(gj_points *p);
extern gj_status gj_block_bounds_build(gj_block_bounds *bb, const double *x, int64_t n,
									   int dims, int block);
extern void gj_block_bounds_free(gj_block_bounds *bb);
extern double gj_block_pair_lb2(const gj_block_bounds *a, int64_t i,
								const gj_block_bounds *b, int64_t j);
extern void gj_bound_rows(const double *x, int dims, const uint32_t *rows, int64_t r0,
						  int64_t r1, double *lo, double *hi, double *c, double *r);
extern double gj_bounds_lb2(const double *lo1, const double *hi1, const double *c1, double r1,
							const double *lo2, const double *hi2, const double *c2, double r2,
							int dims);

/* knn_contrast.c: the sampled contrast auto's kNN choice is made from */
extern double gj_knn_contrast(const gj_points *p);

/*
 * slabs.c: the slabs' plan with the host's sort, and the same plan for p
 * (and qs) already sorted along dim (nothing moves).
 */
extern gj_status gj_slabs_plan(gj_points *p, gj_points *qs, double eps2, int64_t max_rows,
							   gj_slab_plan *pl);
extern gj_status gj_slabs_cut(const gj_points *p, const gj_points *qs, int dim, double eps2,
							  int64_t max_rows, gj_slab_plan *pl);

#ifdef __cplusplus
}
#endif

#endif							/* GJ_CORE_INTERNAL_H */
