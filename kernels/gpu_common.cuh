/*
 * gpu_common.cuh
 *		What the CUDA files of gpujoin share: the error-check macro, the grid
 *		as the kernels see it, and the exact distance.
 *
 * Errors never abort: GJ_CUDA_CHECK records "call: cudaErrorName (file:line)"
 * in the caller's error buffer and returns a gj_status from the enclosing
 * function, which the C side turns into an ereport or a CPU fallback.
 */
#ifndef GJ_GPU_COMMON_CUH
#define GJ_GPU_COMMON_CUH

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "gj_cuda.h"

/* Debug builds (-DGJ_CUDA_SYNC_CHECK) synchronise after every launch. */
#ifdef GJ_CUDA_SYNC_CHECK
#define GJ_LAUNCH_SYNC() cudaDeviceSynchronize()
#else
#define GJ_LAUNCH_SYNC() cudaSuccess
#endif

static inline gj_status
gj_cuda_status(cudaError_t e)
{
	return e == cudaErrorMemoryAllocation ? GJ_ERR_DEVICE_OOM : GJ_ERR_CUDA;
}

#define GJ_CUDA_CHECK(err, errlen, call) \
	do { \
		cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) \
		{ \
			snprintf((err), (errlen), "%s: %s (%s:%d)", #call, \
					 cudaGetErrorName(e_), __FILE__, __LINE__); \
			cudaGetLastError(); \
			return gj_cuda_status(e_); \
		} \
	} while (0)

#define GJ_CUDA_CHECK_LAUNCH(err, errlen, what) \
	do { \
		cudaError_t e_ = cudaGetLastError(); \
		if (e_ == cudaSuccess) \
			e_ = GJ_LAUNCH_SYNC(); \
		if (e_ != cudaSuccess) \
		{ \
			snprintf((err), (errlen), "%s launch: %s (%s:%d)", (what), \
					 cudaGetErrorName(e_), __FILE__, __LINE__); \
			return gj_cuda_status(e_); \
		} \
	} while (0)

/*
 * A device result buffer of pairs (two int64 values and a distance each):
 * kernels count every pair in *count and write those whose slot is in
 * [skip, skip + cap) (pair_driver.cu).
 */
typedef struct gj_out
{
	int64_t    *a;
	int64_t    *b;
	double	   *d;
	unsigned long long *count;
	unsigned long long cap;
	unsigned long long skip;	/* slots before this are counted, not written */
} gj_out;

/* Take a result slot for (a, b, d); one atomic per group of threads that hit together. */
__device__ __forceinline__ void
gj_out_put(const gj_out &O, int64_t a, int64_t b, double d)
{
	cooperative_groups::coalesced_group g = cooperative_groups::coalesced_threads();
	unsigned long long base = 0;

	if (g.thread_rank() == 0)
		base = atomicAdd(O.count, (unsigned long long) g.size());
	base = g.shfl(base, 0) + g.thread_rank() - O.skip;
	if (base < O.cap)			/* also false for slots before skip (wraps) */
	{
		O.a[base] = a;
		O.b[base] = b;
		O.d[base] = d;
	}
}

/*
 * Several GPUs (team.cu): an engine's start as a member of a team, given
 * the member's options (its share set, its device current); the team, or
 * the first device alone when the team cannot start.  The members split
 * the work through the share: a published plan's units claimed first come,
 * or positions of one order taken from a cursor.
 */
typedef gj_status (*gj_gpu_member_fn) (void *arg, const gj_gpu_options *opt,
									   gj_engine **out, char *err, size_t errlen);
extern int	gj_gpu_team_wanted(const gj_gpu_options *opt);
extern gj_status gj_gpu_team_start(const gj_gpu_options *opt, gj_gpu_member_fn start,
								   void *arg, gj_engine **out, char *err, size_t errlen);
#define GJ_FP_SEED 14695981039346656037ULL
extern uint64_t gj_fp_mix(uint64_t h, uint64_t v);
extern gj_status gj_gpu_share_publish(gj_gpu_share *s, uint64_t fp, int64_t nseq);
extern int	gj_gpu_share_claim(gj_gpu_share *s, int64_t seq);
extern int64_t gj_gpu_share_next(gj_gpu_share *s, int64_t n);
extern int	gj_gpu_share_members(const gj_gpu_share *s);
extern cudaError_t gj_gpu_share_upload(gj_gpu_share *s, int member, void *dst, const void *src,
									   size_t bytes, cudaStream_t stream);
extern void gj_gpu_share_decline(gj_gpu_share *s);

/*
 * An engine's device current on the calling thread for a scope (its free
 * and statistics run on the backend thread, whose device may be another
 * member's), the thread's own device again after it.
 */
struct gj_on_device
{
	int			prev;
	int			ok;

	explicit gj_on_device(int device)
	{
		ok = cudaGetDevice(&prev) == cudaSuccess;
		if (ok && device != prev)
			cudaSetDevice(device);
	}
	~gj_on_device()
	{
		if (ok)
			cudaSetDevice(prev);
	}
};

/*
 * The batch driver of the engines that stream pairs (pair_driver.cu): an
 * engine pushes ranges [b0, b1) of its units of work and gives a launch
 * function that runs one range into a result buffer on a stream; the
 * driver thread runs them on several streams, splits a range whose pairs
 * overflow its buffer, and hands finished chunks to the engine's queue.
 */
#define GJ_DRIVER_MAX_STREAMS 4

typedef cudaError_t (*gj_batch_launch_fn) (void *ctx, uint64_t b0, uint64_t b1,
										   const gj_out &O, cudaStream_t s);

typedef struct gj_batch
{
	uint64_t	b0;
	uint64_t	b1;
	unsigned long long skip;
	int64_t		phase;			/* with phases: the data it needs (else 0) */
	int64_t		seq;			/* its place in the plan (pushed before the start), else -1 */
} gj_batch;

/*
 * Phases (optional, gj_driver_phases): an engine whose data does not fit
 * the device at once cuts its units into phases, each needing its own data
 * in one of nslots device slots (phase v in slot v % nslots).  The driver
 * loads a phase into its slot (load, synchronous, on the engine's own
 * stream) only when no batch of the phase the slot held is pending or
 * running, and launches a batch only when its phase is in its slot; while
 * the top batch waits, a deeper one whose phase is loaded runs.  Every
 * phase a slot held is finished before it is overwritten, so a batch never
 * reads another phase's data.
 */
#define GJ_DRIVER_MAX_SLOTS 2

typedef gj_status (*gj_phase_load_fn) (void *ctx, int64_t phase, int slot);

typedef struct gj_pair_driver
{
	gj_engine  *eng;			/* the engine fed: its queue, its first error */
	gj_batch_launch_fn launch;
	void	   *ctx;
	int			windows;		/* one unit may overflow: rerun it with skip windows */
	int			nstreams;
	cudaStream_t streams[GJ_DRIVER_MAX_STREAMS];
	cudaEvent_t events[GJ_DRIVER_MAX_STREAMS];
	gj_out		out[GJ_DRIVER_MAX_STREAMS];
	unsigned long long *h_count;	/* pinned, one per stream */
	int64_t		cap;			/* pairs per buffer */
	gj_chunk	pool[GJ_DRIVER_MAX_STREAMS + 1];	/* pinned host chunks */
	int			npool;
	gj_batch   *pending;		/* a stack */
	int64_t		npending;
	int64_t		cap_pending;
	pthread_t	thread;
	int			started;
	int			stop;			/* atomic */
	char		err[256];
	int64_t		batches;		/* launches that delivered */
	int64_t		overflows;		/* batches split and rerun */
	int64_t		pairs;
	/* phases: none when nphases == 0 */
	int64_t		nphases;
	int			nslots;
	int64_t		slot_phase[GJ_DRIVER_MAX_SLOTS];	/* -1: empty */
	int64_t    *outstanding;	/* per phase: batches pending or running */
	gj_phase_load_fn load;
	int64_t		loads;			/* phases loaded by the driver */
	/* a team's member: the plan's batches run where claimed first */
	int			device;			/* current when gj_driver_init ran: the thread's too */
	gj_gpu_share *share;		/* NULL: every batch is this driver's */
	int			planned;		/* set at the start: later pushes are reruns */
	int64_t		nseq;			/* batches in the plan */
	uint64_t	fp;				/* ... and their fingerprint */
	int64_t		claimed_away;	/* plan's batches another member ran */
} gj_pair_driver;

extern gj_status gj_driver_init(gj_pair_driver *d, gj_engine *eng, int nstreams,
								gj_gpu_share *share, char *err, size_t errlen);
extern gj_status gj_driver_buffers(gj_pair_driver *d, int64_t cap, int64_t min_cap,
								   int forced, char *err, size_t errlen);
extern int	gj_driver_push(gj_pair_driver *d, uint64_t b0, uint64_t b1,
						   unsigned long long skip, int64_t phase);
extern gj_status gj_driver_phases(gj_pair_driver *d, int64_t nphases, int nslots,
								  gj_phase_load_fn load);
extern gj_status gj_driver_start(gj_pair_driver *d, gj_batch_launch_fn launch,
								 void *ctx, int windows);
extern void gj_driver_stop(gj_pair_driver *d);

/*
 * The kNN brute force's tensor-core filter (knn_tiles.cu): the references'
 * filter rows, made once, and two batches' worth for the queries.
 */
/* Bounds of blocks of rows (tile_math.cuh): box lo/hi and centre c, nblocks x dims; radius r. */
typedef struct dev_bounds
{
	double	   *lo;
	double	   *hi;
	double	   *c;
	double	   *r;
} dev_bounds;

typedef struct gj_knn_filter
{
	int			dims;
	int			dp;
	int64_t		nref;
	int64_t		qcap;
	void	   *arena;			/* the one allocation the buffers below are carved from */
	float	   *rf;
	float	   *rh;
	double	   *rblockr;
	float	   *qf[2];
	double	   *qr[2];
	int			prune;			/* the blocks' index: skip blocks by their bounds */
	dev_bounds	rbnd;			/* the references' blocks (their centres: the filter's) */
	dev_bounds	qbnd[2];		/* ... and each batch's query blocks */
} gj_knn_filter;

extern gj_status gj_knn_filter_prepare(gj_knn_filter *kf, const double *rx, int64_t nref,
									   int dims, int64_t batch, int prune, cudaStream_t s,
									   int *usable, char *err, size_t errlen);
extern cudaError_t gj_knn_filter_launch(const gj_knn_filter *kf, int slot, const double *rx,
										const int64_t *rid, const double *qx, int64_t nq,
										double *bd, int64_t *bid, int32_t *bn, int32_t *btop,
										int k, int heap, int64_t self0, const int *stop,
										cudaStream_t s);
extern void gj_knn_filter_free(gj_knn_filter *kf);

/* Pinned host blocks cached across joins of a process (pinned.cu). */
extern cudaError_t gj_pinned_alloc(void **out, size_t bytes);
extern void gj_pinned_free(void *p);
extern void gj_pinned_release(void);
extern cudaError_t gj_upload_staged(void *dst, const void *src, size_t bytes, cudaStream_t s);
extern cudaError_t gj_upload_staged_by(void *dst, const void *src, size_t bytes, cudaStream_t s,
									   bool shared);
extern "C" void gj_upload_tune(size_t piece, int threads, size_t team_piece, int team_threads);

/* Grid geometry and neighbour table, passed to kernels by value. */
typedef struct gj_grid_params
{
	int			dims;
	int			nidx;
	int			idx_dim[GJ_MAX_INDEXED_DIMS];
	double		origin[GJ_MAX_INDEXED_DIMS];
	double		width[GJ_MAX_INDEXED_DIMS];
	int64_t		ncell_dim[GJ_MAX_INDEXED_DIMS];
	int64_t		stride[GJ_MAX_INDEXED_DIMS];
	double		eps2;
	int			morton_bits;	/* kNN grids: Z-order ids (gj_grid_cell_of) */
	int			nprefix;
	int64_t		prefix_off[GJ_MAX_FWD_PREFIXES];
	int8_t		prefix_vec[GJ_MAX_FWD_PREFIXES][GJ_MAX_INDEXED_DIMS];
} gj_grid_params;

/* The device index: points sorted by cell and the non-empty cells. */
typedef struct gj_dev_grid
{
	int64_t		n;
	int64_t		ncells;
	double	   *xs;				/* n * dims, sorted by cell */
	int64_t    *ids;			/* n, the rows' ids in the same order */
	uint32_t   *perm;			/* sorted position -> original row */
	uint32_t   *pcell;			/* sorted position -> cell index */
	int64_t    *cell_id;		/* ncells, ascending linear ids */
	uint32_t   *cell_start;		/* ncells + 1 */
} gj_dev_grid;

/*
 * Squared distance by the shared rule: sum over d = 0.. in order of
 * (a_d - b_d)^2, each operation rounded on its own (the _rn intrinsics are
 * never contracted into FMA).  Stops early once past eps2: the pair fails
 * either way, and passing pairs get the full, identical sum.
 */
template <int DIMS>
__device__ __forceinline__ double
gj_dev_sqdist(const double *a, const double *b, int dims, double eps2)
{
	double		s = 0.0;

	if constexpr (DIMS > 0)
	{
#pragma unroll
		for (int d = 0; d < DIMS; d++)
		{
			double		t = __dsub_rn(a[d], b[d]);

			s = __dadd_rn(s, __dmul_rn(t, t));
		}
	}
	else
	{
		for (int d = 0; d < dims; d++)
		{
			double		t = __dsub_rn(a[d], b[d]);

			s = __dadd_rn(s, __dmul_rn(t, t));
			if ((d & 3) == 3 && s > eps2)
				break;
		}
	}
	return s;
}

/* First index in cell_id[0..n) with cell_id >= key. */
__device__ __forceinline__ int64_t
gj_dev_lower_bound(const int64_t *a, int64_t n, int64_t key)
{
	int64_t		lo = 0,
				hi = n;

	while (lo < hi)
	{
		int64_t		mid = (lo + hi) >> 1;

		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Cancel reaches running kernels through a device word that the host sets
 * with a copy on its own stream (the copy engine runs beside the kernels):
 * long loops read it every so often and return.  Results are discarded
 * after a cancel, so leaving a loop half-way is fine.
 */
__device__ __forceinline__ bool
gj_dev_stopped(const int *stop)
{
	return *(const volatile int *) stop != 0;
}

/* A device stop word, and how the host raises it (never blocks). */
/*
 * The bounds in dimension d of rows [r0, r1) of xs (dims wide), by a warp:
 * a strided scan and shuffles, every lane left with the whole range's.
 * Every lane of the warp must call it.
 */
__device__ __forceinline__ void
gj_dev_warp_bounds(const double *xs, uint32_t r0, uint32_t r1, int dims, int d,
				   double *lo_out, double *hi_out)
{
	int			lane = threadIdx.x & 31;
	double		lo = xs[(int64_t) r0 * dims + d],
				hi = lo;

	for (uint32_t r = r0 + lane; r < r1; r += 32)
	{
		double		v = xs[(int64_t) r * dims + d];

		lo = fmin(lo, v);
		hi = fmax(hi, v);
	}
	for (int off = 16; off > 0; off >>= 1)
	{
		lo = fmin(lo, __shfl_xor_sync(0xffffffffu, lo, off));
		hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, off));
	}
	*lo_out = lo;
	*hi_out = hi;
}

extern gj_status gj_gpu_stop_alloc(int **dstop, cudaStream_t *s, char *err,
								   size_t errlen);
extern void gj_gpu_stop_raise(int *dstop, cudaStream_t s);
extern void gj_gpu_stop_free(int *dstop, cudaStream_t s);

/*
 * Wait for stream's work on the calling thread, polling the core's
 * interrupt hook: on an interrupt the stop word goes up, the kernels
 * return, and the result is GJ_ERR_CANCELED.
 */
extern gj_status gj_gpu_wait(cudaStream_t stream, int *dstop,
							 cudaStream_t stop_stream, char *err, size_t errlen);

/* Upload and device statistics, then the index build (grid.cu). */
extern gj_status gj_gpu_upload_stats(const gj_points *p, double **dx,
									 gj_dim_stats *st, cudaStream_t stream,
									 double *upload_ms, char *err, size_t errlen);
extern gj_status gj_gpu_grid_build(const double *dx, const int64_t *dids,
								   int64_t n, int dims,
								   const gj_grid *plan, gj_dev_grid *g,
								   cudaStream_t stream, double *index_ms,
								   char *err, size_t errlen);
extern void gj_gpu_grid_free(gj_dev_grid *g);
extern size_t gj_gpu_grid_bytes(int64_t n, int dims);
/*
 * order.cu: the block order of n rows x (dims wide, on the device) by
 * plan into perm (device, n entries), the order gj_block_plan_perm finds
 * on the host; needs gj_gpu_block_perm_bytes of device scratch at tmp.
 * Asynchronous on stream.
 */
extern size_t gj_gpu_block_perm_bytes(int64_t n);
extern cudaError_t gj_gpu_block_perm(const double *x, int64_t n, int dims,
									 const gj_block_plan *plan, uint32_t *perm, void *tmp,
									 cudaStream_t stream);
extern cudaError_t gj_gpu_gather_rows(const double *x, const int64_t *ids, const uint32_t *perm,
									  int64_t n, int dims, double *xs, int64_t *ids_sorted,
									  cudaStream_t s);
extern void gj_grid_params_fill(gj_grid_params *P, const gj_grid *plan);

#endif
