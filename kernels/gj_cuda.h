/*
 * gj_cuda.h
 *		The whole C boundary of gpujoin's CUDA code.
 *
 * Plain C, extern "C" on the CUDA side, no PostgreSQL header and no C++
 * exception across it: every function returns a gj_status and, on failure,
 * writes the failing call and cudaGetErrorName into an error buffer.
 * When the build has no nvcc, kernels/nocuda.c implements the same functions
 * as "no usable GPU".
 */
#ifndef GJ_CUDA_H
#define GJ_CUDA_H

#include <stddef.h>

#include "../src/core/gj_core.h"

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct gj_cuda_device_info
{
	int			device;			/* the calling thread's (gj_gpu_use_device) */
	int			count;			/* devices visible */
	char		name[256];
	int			major;
	int			minor;
	int			sm_count;
	size_t		total_mem;
	size_t		free_mem;
	int			runtime_version;
	int			driver_version;
	char		error[160];		/* why there is no usable GPU */
} gj_cuda_device_info;

/*
 * Initialise the CUDA runtime (once per process) and describe the calling
 * thread's device (0 unless gj_gpu_use_device chose another).
 * GJ_ERR_NODEVICE when there is no driver, no device or no build support.
 */
extern gj_status gj_cuda_probe(gj_cuda_device_info *info);

/*
 * Make device the calling thread's current one: the engines run on the
 * device current when they start (a team's members each on their own).
 * GJ_ERR_NODEVICE (err says why) when it is not there.
 */
extern gj_status gj_gpu_use_device(int device, char *err, size_t errlen);

/*
 * Why the last team of GPUs in this process could not start and its join
 * ran on the first device alone ("" when it started).
 */
extern const char *gj_gpu_team_failure(void);

/* How the CUDA side was built, for gpujoin_info(). */
extern const char *gj_cuda_build_info(void);

#define GJ_MAX_GPUS 16

/* What a team's members share to split one join between them (team.cu). */
typedef struct gj_gpu_share gj_gpu_share;

/*
 * The GPU eps self-join.  gj_gpu_selfjoin_start uploads the points, builds
 * the grid index on the device, estimates the result size from a sample and
 * starts a driver thread that runs the join in batches; an engine
 * (gj_engine) like the CPU one, whose chunks hold the rows' ids (p is not
 * reordered).  GJ_ERR_DEVICE_OOM from start
 * means the index does not fit: fall back to the CPU engine.
 */
typedef struct gj_gpu_options
{
	size_t		memory_limit;	/* device bytes at most; 0: 90% of free */
	int64_t		batch_pairs;	/* result pairs per buffer; 0: automatic */
	int			nstreams;		/* 0: 3 */
	int			no_filter;		/* kNN: no tensor-core filter (tests) */
	int64_t		slice_rows;		/* tiles: slices of at most this many rows (tests) */
	const uint32_t *row_order;	/* kNN self join: the references' rows in this
								 * order (gj_points_block_perm), gathered on the
								 * device where there is room, else on the host */
	const gj_block_plan *block_plan;	/* ... or (row_order NULL) in this plan's
										 * order, found and applied on the device
										 * where there is room, else on the host */
	/*
	 * Several GPUs (gpujoin.gpus): the tile join and the kNN join split
	 * their work among ndevices > 1 members, one a device, each with the
	 * whole index, its own streams and memory_limit; a device named twice
	 * runs two members.  0 or 1: the calling thread's device alone.
	 */
	int			ndevices;
	int			devices[GJ_MAX_GPUS];
	gj_gpu_share *share;		/* set by the team for its members: NULL */
	int			member;			/* ... and which of them (0 ..) */
} gj_gpu_options;

typedef struct gj_gpu_stats
{
	double		plan_ms;		/* grid geometry from the points (host) */
	double		alloc_ms;		/* streams, result and pinned buffers */
	double		upload_ms;		/* host points to device */
	double		index_ms;		/* cell ids, sort, cells, gather */
	double		estimate_ms;	/* sampled result-size estimate */
	int64_t		estimated_pairs;
	int64_t		batches;		/* kernel launches that delivered */
	int64_t		overflows;		/* batches split and rerun */
	int64_t		pairs;
	int64_t		batch_pairs;	/* buffer capacity chosen */
	int64_t		ncells;
	int			nidx;
	double		done_ms;		/* gj_now_ms() when the last batch was handed over */
} gj_gpu_stats;

typedef struct gj_gpu_selfjoin gj_gpu_selfjoin;

extern gj_status gj_gpu_selfjoin_start(const gj_points *p, double eps2,
									   const gj_gpu_options *opt,
									   gj_gpu_selfjoin **out,
									   char *err, size_t errlen);
extern void gj_gpu_selfjoin_stats(const gj_gpu_selfjoin *j, gj_gpu_stats *st);

/*
 * Device bytes of a grid index over n rows of dims coordinates (grid.cu):
 * what the engines check their budget against, and slabs are sized by.
 */
extern size_t gj_gpu_grid_bytes(int64_t n, int dims);

/*
 * The join of two sets (eps_join), the same engine: the grid over p, every
 * row of queries probing the cells around it; rows (query id, p's id), or
 * (p's id, query id) with swap = 1, or (smaller id, larger id) with swap =
 * 2 (a self-join's slab and its halo).  Stats and errors as the self-join's.
 */
extern gj_status gj_gpu_join_start(const gj_points *p, const gj_points *queries,
								   double eps2, int swap, const gj_gpu_options *opt,
								   gj_gpu_selfjoin **out, char *err, size_t errlen);
extern const char *gj_gpu_selfjoin_error(const gj_gpu_selfjoin *j);

/*
 * The GPU kNN join.  With the grid method (gj_knn_pick_method) the index is
 * built on the device when it fits, else the references are sorted on the
 * host (refs is reordered then) and streamed through in partitions whose
 * per-query lists merge in the same k buffers; every query is searched by
 * one thread with the same code as the CPU engine (knn_search.h), so the
 * answers are identical.  An engine (gj_engine) whose chunks are exactly
 * the CPU engine's: rows (query id, reference id, rank, distance).  Self
 * joins of some rows only (opt->self_rows) are not supported here.
 */
typedef struct gj_gpu_knn gj_gpu_knn;

typedef struct gj_gpu_knn_stats
{
	double		upload_ms;		/* the whole start: index, buffers, first upload */
	double		index_ms;		/* of which the index (device, or host sort) */
	double		upload_stats_ms;	/* ... of which references up, statistics */
	double		grid_ms;		/* ... of which the device grid build */
	double		order_ms;		/* ... of which the queries' cell order */
	double		alloc_ms;		/* of which the batch buffers */
	double		first_ms;		/* start to the first batch's lists on the host */
	double		search_ms;		/* kernels, all batches */
	double		download_ms;	/* result lists back to pinned memory */
	int			partitions;		/* reference partitions */
	int64_t		batches;		/* query batches */
	int			heap;			/* max-heap k buffers, else arrays */
	int			device_order;	/* queries were sorted on the device */
	int			filter;			/* brute force with the tensor-core filter */
	int			row_gather;		/* row_order applied on the device (else by the host) */
	double		done_ms;		/* gj_now_ms() when the last list was handed over */
	double		refs_up_ms;		/* row_gather: the references to the device */
	double		gather_ms;		/* ... then their order found and applied there */
	double		filter_ms;		/* the tensor-core filter's rows and bounds */
	double		publish_ms;		/* a team's member: its query order's fingerprint */
} gj_gpu_knn_info;

/*
 * What one batch of the kNN join did, for placing a join's time (the first
 * GJ_KNN_BATCH_LOG batches of an engine): host times from the start of its
 * batches, and the device's time from the batch's first work on its stream
 * to its lists on the host.
 */
#define GJ_KNN_BATCH_LOG 64
typedef struct gj_knn_batch_log
{
	int64_t		q0;				/* first position of the batch's queries */
	int64_t		n;				/* queries */
	double		launched_ms;	/* host: queued */
	double		ready_ms;		/* host: its lists seen on the host */
	double		emitted_ms;		/* host: its last row handed over */
	float		gpu_ms;			/* device: queued work to lists on the host */
} gj_knn_batch_log;

extern gj_status gj_gpu_knn_start(gj_points *refs, const gj_points *queries,
								  const gj_knn_options *opt,
								  const gj_gpu_options *gopt,
								  gj_gpu_knn **out, char *err, size_t errlen);
extern void gj_gpu_knn_stats(const gj_gpu_knn *j, gj_gpu_knn_info *st);
extern int	gj_gpu_knn_batches(const gj_gpu_knn *j, gj_knn_batch_log *out, int max);
extern const char *gj_gpu_knn_error(const gj_gpu_knn *j);

/*
 * The GPU eps self-join by tiles (tiles.cu), for many dimensions: every
 * pair of p's rows (in their order), a tensor-core filter with a proven
 * margin, the float64 rule for what it keeps.  An engine like
 * gj_cpu_tiles, with the same chunks and the same answers.  Rows that do
 * not fit the device at once are joined in slices, pair of slices by pair
 * of slices, re-read from p (which must outlive the engine).
 * GJ_ERR_DEVICE_OOM: not even two slices of TILE rows fit: run the CPU engine.
 */
typedef struct gj_gpu_tiles gj_gpu_tiles;

typedef struct gj_gpu_tiles_info
{
	double		upload_ms;		/* points to the device */
	double		prep_ms;		/* upload, centre, filter data, plan */
	int			filter;			/* the tensor-core filter is in use */
	int64_t		units;			/* block pairs to compare */
	int64_t		units_skipped;	/* ... of them ruled out by the blocks' bounds */
	int64_t		batches;
	int64_t		overflows;
	int64_t		pairs;
	int64_t		slices;			/* the rows in slices that fit the device (1: all at once) */
	int64_t		windows;		/* ... and the pairs of slices joined */
	int64_t		slice_rows;
	double		done_ms;		/* gj_now_ms() when the last chunk was handed over */
} gj_gpu_tiles_info;

extern gj_status gj_gpu_tiles_start(const gj_points *p, const gj_tiles_options *opt,
									const gj_gpu_options *gopt, gj_gpu_tiles **out,
									char *err, size_t errlen);
extern void gj_gpu_tiles_stats(const gj_gpu_tiles *j, gj_gpu_tiles_info *info);
extern const char *gj_gpu_tiles_error(const gj_gpu_tiles *j);

/* For the GPU check: the filter's measured error, as a multiple of its float32 bound. */
extern gj_status gj_gpu_tiles_gram_error(const gj_points *p, double *worst,
										 char *err, size_t errlen);

/*
 * Per-row answers on the GPU, synchronous, results in p's order (p is not
 * reordered): gj_gpu_count_within as gj_cpu_count_within (counts itself
 * included, capped at cap > 0), gj_gpu_dbscan as gj_cpu_dbscan (core flags
 * and representatives for gj_dbscan_number).  The calling thread waits,
 * polling the interrupt hook; a cancel raises the device stop word.
 * GJ_ERR_DEVICE_OOM: the index does not fit, run the CPU engine.
 */
typedef struct gj_gpu_density_info
{
	double		upload_ms;		/* points to the device */
	double		index_ms;		/* upload + grid index on the device */
	double		kernel_ms;		/* counting, linking, border kernels */
	double		download_ms;	/* results back */
	int64_t		launches;
	int64_t		lattice_cells;	/* dense cells counted through lattices */
} gj_gpu_density_info;

extern gj_status gj_gpu_count_within(const gj_points *p, double eps2, int32_t cap,
									 const gj_gpu_options *opt, int32_t *counts,
									 gj_gpu_density_info *info,
									 char *err, size_t errlen);
/* eps_join_counts: counts[i] = rows of p within eps of row i of queries. */
extern gj_status gj_gpu_join_counts(const gj_points *p, const gj_points *queries,
									double eps2, const gj_gpu_options *opt,
									int32_t *counts, gj_gpu_density_info *info,
									char *err, size_t errlen);
extern gj_status gj_gpu_dbscan(const gj_points *p, double eps2, int32_t minpts,
							   const gj_gpu_options *opt, int32_t *root,
							   uint8_t *core, gj_gpu_density_info *info,
							   char *err, size_t errlen);

/*
 * Neighbour lists (eps_neighbors) on the GPU: an engine (gj_engine) whose
 * chunks are the CPU list engine's (gj_cpu_lists_start), every row of p
 * once, its neighbours within eps other than itself ordered by (distance,
 * id).  The grid and every row's count (of the first window) are made
 * before it returns; GJ_ERR_DEVICE_OOM when they do not fit.
 */
typedef struct gj_gpu_lists gj_gpu_lists;

typedef struct gj_gpu_lists_info
{
	double		index_ms;		/* upload and grid index */
	double		start_ms;		/* ... with the counts and buffers */
	double		chunk_ms;		/* filling, sorting and copying chunks */
	double		done_ms;		/* gj_now_ms() when the last chunk was handed over */
	int64_t		chunks;
	int64_t		windows;
	int64_t		entries;		/* list entries so far */
	int64_t		device_bytes;	/* the lists' own buffers beside the window's index */
} gj_gpu_lists_info;

extern gj_status gj_gpu_lists_start(const gj_points *p, double eps2, const gj_gpu_options *opt,
									gj_gpu_lists **out, char *err, size_t errlen);
/* The same beyond the device: p sorted and cut by gj_slabs_windows, window by window. */
extern gj_status gj_gpu_lists_start_windows(const gj_points *p, double eps2,
											const gj_gpu_options *opt,
											const gj_slab_window *win, int64_t nwin,
											gj_gpu_lists **out, char *err, size_t errlen);
extern void gj_gpu_lists_stats(const gj_gpu_lists *j, gj_gpu_lists_info *info);
/*
 * Device bytes the lists' own buffers take at the start beside a window's
 * index, under a memory limit (0: none): about an eighth of it at most.
 */
extern size_t gj_gpu_lists_device_bytes(size_t memory_limit);
extern const char *gj_gpu_lists_error(const gj_gpu_lists *j);

/*
 * perm: p's rows in the order of coordinate dim (stable), sorted on the
 * device for the slabs (a gj_order_fn).  GJ_ERR_DEVICE_OOM when its 24
 * bytes a row do not fit: the caller sorts on the host.
 */
extern gj_status gj_gpu_order_along(const gj_points *p, int dim, const gj_gpu_options *opt,
									uint32_t *perm, char *err, size_t errlen);

/*
 * perm: p's rows in plan's block order found on the device, the order
 * gj_block_plan_perm finds on the host (regress/gpu/gpu_knn checks the two
 * agree; the kNN self join finds it beside its rows, gj_gpu_options).
 */
extern gj_status gj_gpu_block_order(const gj_points *p, const gj_block_plan *plan,
									uint32_t *perm, char *err, size_t errlen);

/*
 * DBSCAN of p alone with its core flags given, components ordered by key
 * (NULL: the ids): rep[i] as gj_slab_engine's dbscan_given (gj_core.h).
 */
extern gj_status gj_gpu_dbscan_given(const gj_points *p, double eps2, const uint8_t *core,
									 const int64_t *key, const gj_gpu_options *opt,
									 int32_t *rep, gj_gpu_density_info *info,
									 char *err, size_t errlen);

/*
 * Device bytes a row of the per-row engines takes beyond the grid index
 * (counts, roots, flags, least ids), and beyond that for dbscan_given's
 * given flags and keys: what slabs for them are sized by.
 */
#define GJ_GPU_DENSITY_ROW_BYTES 27
#define GJ_GPU_DENSITY_GIVEN_ROW_BYTES 17

/*
 * The GPU as the engine of counts and DBSCAN in slabs (slab_density.c):
 * ctx holds the options, the last error and the calls' timings summed,
 * and the host arrays it pinned for the sweeps.
 */
typedef struct gj_gpu_slab_ctx
{
	gj_gpu_options opt;
	gj_gpu_density_info info;
	char		err[256];
	void	   *pinned[4];		/* rows' arrays registered for the sweeps */
	double		pin_ms;			/* registering and unregistering them */
} gj_gpu_slab_ctx;

extern void gj_gpu_slab_engine(gj_slab_engine *e, gj_gpu_slab_ctx *ctx);

/*
 * Result buffers (device and pinned host) are kept for the process's next
 * join; this frees them.
 */
extern void gj_gpu_release_cache(void);

#ifdef __cplusplus
}
#endif

#endif							/* GJ_CUDA_H */
