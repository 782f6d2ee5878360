/*
 * selfjoin.cu
 *		The GPU eps self-join: join kernel, result batching, driver thread.
 *
 * Kernel.  One thread per point, points in cell order (a warp's threads
 * mostly share a cell, so they walk the same neighbour cells and their loads
 * hit the same lines).  A thread compares its point with the later points of
 * its own cell and with every point of the forward neighbour cells
 * (LID-UNICOMP: only cells with a larger linear id, found by binary search of
 * the sorted cell ids, prefix by prefix exactly as the CPU engine does), so
 * each unordered pair is tested once.  Distances follow the shared rule
 * (gj_dev_sqdist).  A hit takes a slot from the batch's counter with one
 * atomic per group of coalesced threads; slots past the buffer's capacity
 * are counted but not written, which is how overflow is detected.  A pair
 * is written as the backend returns it: the two rows' ids, smaller first
 * (ids are gathered into cell order with the points), and the distance.
 * Threads read the join's stop word every 1024 candidates, so a cancelled
 * join's kernels end within microseconds however much work they hold.
 *
 * Batches.  A count-only run of the kernel over a strided sample of points
 * estimates the pairs per point; the sorted points are then cut into
 * contiguous batches expected to fill about half a result buffer.  A batch
 * whose count exceeds the buffer (skew) is split in two and both halves are
 * rerun: no pair is ever dropped.
 *
 * Pipeline.  A driver thread keeps several streams busy.  Each stream owns a
 * device result buffer; when its kernel is done the driver copies the pairs
 * into a free pinned host chunk (the queue's pool; blocking there is the
 * backpressure from a slow consumer) and hands the chunk to the consumer.
 * Kernels of one stream overlap copies of the others and the consumer's
 * tuple writing.
 */
#include <cooperative_groups.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_common.cuh"

namespace cg = cooperative_groups;

#define GJ_GPU_MAX_STREAMS 4
#define GJ_GPU_DEFAULT_BATCH ((int64_t) 2 << 20)	/* pairs per buffer */
#define GJ_GPU_MIN_BATCH ((int64_t) 1 << 16)
#define GJ_GPU_SAMPLE_POINTS 32768
#define GJ_GPU_BLOCK 256
#define GJ_GPU_PAIR_BYTES 24	/* two ids and a distance */

typedef struct gj_out
{
	int64_t    *a;
	int64_t    *b;
	double	   *d;
	unsigned long long *count;
	unsigned long long cap;
	unsigned long long skip;	/* slots before this are counted, not written */
} gj_out;

/* Take a result slot; one atomic per group of threads that hit together. */
__device__ __forceinline__ void
emit(const gj_out &O, int64_t a, int64_t b, double s)
{
	cg::coalesced_group g = cg::coalesced_threads();
	unsigned long long base = 0;

	if (g.thread_rank() == 0)
		base = atomicAdd(O.count, (unsigned long long) g.size());
	base = g.shfl(base, 0) + g.thread_rank() - O.skip;
	if (base < O.cap)			/* also false for slots before skip (wraps) */
	{
		O.a[base] = a < b ? a : b;
		O.b[base] = a < b ? b : a;
		O.d[base] = sqrt(s);
	}
}

/*
 * Test point xi (id idi) against sorted points [b0, b1); false once the
 * join's stop word is up.
 */
template <int DIMS>
__device__ __forceinline__ bool
scan_range(const gj_dev_grid &G, int dims, double eps2, const double *xi,
		   int64_t idi, uint32_t b0, uint32_t b1, const gj_out &O,
		   const int *stop)
{
	for (uint32_t j = b0; j < b1; j++)
	{
		double		s = gj_dev_sqdist<DIMS>(xi, G.xs + (int64_t) j * dims, dims, eps2);

		if (s <= eps2)
			emit(O, idi, G.ids[j], s);
		if (((j - b0) & 1023) == 1023 && gj_dev_stopped(stop))
			return false;
	}
	return true;
}

/*
 * Points p0, p0 + stride, ... < p1 of the sorted order, one per thread.
 * DIMS > 0 keeps the query point in registers; 0 handles any dims.
 */
template <int DIMS>
__global__ static void
selfjoin_kernel(gj_dev_grid G, gj_grid_params P, uint32_t p0, uint32_t p1,
				uint32_t stride, gj_out O, const int *stop)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;
	uint64_t	i64 = p0 + t * stride;
	uint32_t	i;
	uint32_t	c;
	int64_t		id;
	int64_t		cc[GJ_MAX_INDEXED_DIMS];
	int			last = P.nidx - 1;
	int			dims = P.dims;
	double		xreg[DIMS > 0 ? DIMS : 1];
	const double *xi;
	int64_t		idi;

	if (i64 >= p1)
		return;
	i = (uint32_t) i64;
	if constexpr (DIMS > 0)
	{
#pragma unroll
		for (int d = 0; d < DIMS; d++)
			xreg[d] = G.xs[(int64_t) i * DIMS + d];
		xi = xreg;
	}
	else
		xi = G.xs + (int64_t) i * dims;
	idi = G.ids[i];
	c = G.pcell[i];

	/* the rest of its own cell */
	if (!scan_range<DIMS>(G, dims, P.eps2, xi, idi, i + 1, G.cell_start[c + 1], O, stop) ||
		P.nidx == 0)
		return;

	id = G.cell_id[c];
	{
		int64_t		rest = id;

		for (int k = last; k >= 0; k--)
		{
			cc[k] = rest % P.ncell_dim[k];
			rest /= P.ncell_dim[k];
		}
	}
	int			has_lo = cc[last] > 0;
	int			has_hi = cc[last] + 1 < P.ncell_dim[last];

	/* zero prefix: the next cell along the last dimension */
	if (has_hi && c + 1 < G.ncells && G.cell_id[c + 1] == id + 1 &&
		!scan_range<DIMS>(G, dims, P.eps2, xi, idi, G.cell_start[c + 1],
						  G.cell_start[c + 2], O, stop))
		return;

	for (int p = 0; p < P.nprefix; p++)
	{
		bool		valid = true;

		for (int k = 0; k < last; k++)
		{
			int64_t		ck = cc[k] + P.prefix_vec[p][k];

			if (ck < 0 || ck >= P.ncell_dim[k])
				valid = false;
		}
		if (!valid)
			continue;

		int64_t		base = id + P.prefix_off[p];
		int64_t		lo = base - has_lo;
		int64_t		hi = base + has_hi;

		for (int64_t k = gj_dev_lower_bound(G.cell_id, G.ncells, lo);
			 k < G.ncells && G.cell_id[k] <= hi; k++)
			if (!scan_range<DIMS>(G, dims, P.eps2, xi, idi, G.cell_start[k],
								  G.cell_start[k + 1], O, stop))
				return;
	}
}

/* Launch the kernel specialised for the dimensionality. */
static cudaError_t
launch_join(const gj_dev_grid &G, const gj_grid_params &P, uint32_t p0,
			uint32_t p1, uint32_t stride, const gj_out &O, const int *stop,
			cudaStream_t s)
{
	uint64_t	threads = (p1 - p0 + (uint64_t) stride - 1) / stride;
	unsigned	blocks = (unsigned) ((threads + GJ_GPU_BLOCK - 1) / GJ_GPU_BLOCK);

	if (threads == 0)
		return cudaSuccess;
	switch (P.dims)
	{
#define GJ_CASE(D) case D: selfjoin_kernel<D><<<blocks, GJ_GPU_BLOCK, 0, s>>>(G, P, p0, p1, stride, O, stop); break
			GJ_CASE(1);
			GJ_CASE(2);
			GJ_CASE(3);
			GJ_CASE(4);
			GJ_CASE(5);
			GJ_CASE(6);
			GJ_CASE(7);
			GJ_CASE(8);
#undef GJ_CASE
		default:
			selfjoin_kernel<0><<<blocks, GJ_GPU_BLOCK, 0, s>>>(G, P, p0, p1, stride, O, stop);
	}
	return cudaGetLastError();
}

/*
 * Sorted points [p0, p1).  skip > 0 only for a single point with more pairs
 * than a buffer: its one thread emits in a fixed order, so the rerun with
 * skip = k * cap delivers exactly the k-th window of its pairs.
 */
typedef struct batch
{
	uint32_t	p0;
	uint32_t	p1;
	unsigned long long skip;
} batch;

enum stream_state
{
	ST_IDLE,
	ST_KERNEL,					/* kernel and count copy queued */
	ST_COPY						/* pairs being copied into a pinned chunk */
};

struct gj_gpu_selfjoin
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	gj_grid		plan;
	gj_grid_params P;
	gj_dev_grid G;
	int			nstreams;
	cudaStream_t streams[GJ_GPU_MAX_STREAMS];
	cudaEvent_t events[GJ_GPU_MAX_STREAMS];
	gj_out		out[GJ_GPU_MAX_STREAMS];	/* device buffers */
	unsigned long long *h_count;	/* pinned, one per stream */
	unsigned long long *d_sample;	/* the estimate's counter */
	int		   *d_stop;			/* raised by free: kernels return */
	cudaStream_t stop_stream;
	int64_t		cap;			/* pairs per buffer */

	gj_chunk	pool[GJ_GPU_MAX_STREAMS + 1];	/* pinned host chunks */
	int			npool;

	batch	   *pending;		/* a stack */
	int64_t		npending;
	int64_t		cap_pending;

	pthread_t	driver;
	int			driver_started;
	int			stop;			/* atomic */
	char		err[256];
	gj_gpu_stats stats;
};

static void gpu_selfjoin_free(gj_engine *e);

static int
push_batch(struct gj_gpu_selfjoin *j, uint32_t p0, uint32_t p1,
		   unsigned long long skip)
{
	if (j->npending == j->cap_pending)
	{
		int64_t		ncap = j->cap_pending ? j->cap_pending * 2 : 64;
		batch	   *nb = (batch *) realloc(j->pending, sizeof(batch) * ncap);

		if (nb == NULL)
			return 0;
		j->pending = nb;
		j->cap_pending = ncap;
	}
	j->pending[j->npending].p0 = p0;
	j->pending[j->npending].p1 = p1;
	j->pending[j->npending].skip = skip;
	j->npending++;
	return 1;
}

/* Record the first error of the driver thread. */
static void
driver_fail(struct gj_gpu_selfjoin *j, gj_status st, const char *what, cudaError_t e)
{
	if (j->eng.error == GJ_OK)
	{
		j->eng.error = st;
		if (e != cudaSuccess)
			snprintf(j->err, sizeof(j->err), "%s: %s", what, cudaGetErrorName(e));
		else
			snprintf(j->err, sizeof(j->err), "%s", what);
	}
}

/* The driver thread: keeps the streams busy until the batches run out. */
static void *
driver_main(void *arg)
{
	struct gj_gpu_selfjoin *j = (struct gj_gpu_selfjoin *) arg;
	enum stream_state state[GJ_GPU_MAX_STREAMS];
	batch		cur[GJ_GPU_MAX_STREAMS];
	gj_chunk   *chunk[GJ_GPU_MAX_STREAMS];
	unsigned long long count[GJ_GPU_MAX_STREAMS];

	for (int s = 0; s < j->nstreams; s++)
		state[s] = ST_IDLE;

	while (!__atomic_load_n(&j->stop, __ATOMIC_RELAXED) && j->eng.error == GJ_OK)
	{
		int			progressed = 0,
					idle = 0;

		for (int s = 0; s < j->nstreams && j->eng.error == GJ_OK; s++)
		{
			cudaStream_t st = j->streams[s];
			cudaError_t e;

			if (state[s] == ST_IDLE)
			{
				if (j->npending == 0)
				{
					idle++;
					continue;
				}
				cur[s] = j->pending[--j->npending];
				j->out[s].skip = cur[s].skip;
				e = cudaMemsetAsync(j->out[s].count, 0, sizeof(unsigned long long), st);
				if (e == cudaSuccess)
					e = launch_join(j->G, j->P, cur[s].p0, cur[s].p1, 1, j->out[s], j->d_stop, st);
				if (e == cudaSuccess)
					e = cudaMemcpyAsync(&j->h_count[s], j->out[s].count,
										sizeof(unsigned long long),
										cudaMemcpyDeviceToHost, st);
				if (e == cudaSuccess)
					e = cudaEventRecord(j->events[s], st);
				if (e != cudaSuccess)
				{
					driver_fail(j, gj_cuda_status(e), "join kernel", e);
					break;
				}
				state[s] = ST_KERNEL;
				progressed = 1;
			}
			else if (state[s] == ST_KERNEL)
			{
				e = cudaEventQuery(j->events[s]);
				if (e == cudaErrorNotReady)
					continue;
				if (e != cudaSuccess)
				{
					driver_fail(j, GJ_ERR_CUDA, "join kernel", e);
					break;
				}
				progressed = 1;
				count[s] = j->h_count[s] - cur[s].skip;
				if (count[s] > (unsigned long long) j->cap)
				{
					int			ok;

					j->stats.overflows++;
					if (cur[s].p1 - cur[s].p0 >= 2)
					{
						/* overflow: split the batch, run both halves again */
						uint32_t	mid = cur[s].p0 + (cur[s].p1 - cur[s].p0) / 2;

						ok = push_batch(j, mid, cur[s].p1, 0) &&
							push_batch(j, cur[s].p0, mid, 0);
						if (!ok)
						{
							driver_fail(j, GJ_ERR_NOMEM, "batch list", cudaSuccess);
							break;
						}
						state[s] = ST_IDLE;
						continue;
					}
					/* one point: deliver this full window, queue the next */
					if (!push_batch(j, cur[s].p0, cur[s].p1, cur[s].skip + j->cap))
					{
						driver_fail(j, GJ_ERR_NOMEM, "batch list", cudaSuccess);
						break;
					}
					count[s] = (unsigned long long) j->cap;
				}
				if (count[s] == 0)
				{
					j->stats.batches++;
					state[s] = ST_IDLE;
					continue;
				}
				chunk[s] = gj_queue_get_free(j->eng.q);	/* waits for the consumer */
				if (chunk[s] == NULL)
					break;		/* cancelled */
				e = cudaMemcpyAsync(chunk[s]->a, j->out[s].a, sizeof(int64_t) * count[s],
									cudaMemcpyDeviceToHost, st);
				if (e == cudaSuccess)
					e = cudaMemcpyAsync(chunk[s]->b, j->out[s].b, sizeof(int64_t) * count[s],
										cudaMemcpyDeviceToHost, st);
				if (e == cudaSuccess)
					e = cudaMemcpyAsync(chunk[s]->dist, j->out[s].d, sizeof(double) * count[s],
										cudaMemcpyDeviceToHost, st);
				if (e == cudaSuccess)
					e = cudaEventRecord(j->events[s], st);
				if (e != cudaSuccess)
				{
					gj_queue_release(j->eng.q, chunk[s]);
					driver_fail(j, GJ_ERR_CUDA, "result copy", e);
					break;
				}
				state[s] = ST_COPY;
			}
			else
			{
				e = cudaEventQuery(j->events[s]);
				if (e == cudaErrorNotReady)
					continue;
				if (e != cudaSuccess)
				{
					gj_queue_release(j->eng.q, chunk[s]);
					driver_fail(j, GJ_ERR_CUDA, "result copy", e);
					break;
				}
				chunk[s]->n = (int32_t) count[s];
				gj_queue_put_full(j->eng.q, chunk[s]);
				j->stats.batches++;
				j->stats.pairs += (int64_t) count[s];
				state[s] = ST_IDLE;
				progressed = 1;
			}
		}
		if (idle == j->nstreams && j->npending == 0)
			break;				/* every batch delivered */
		if (!progressed)
			sched_yield();		/* kernels run for well under a millisecond */
	}
	/* chunks still being copied are released by free after a stream sync */
	gj_queue_producer_done(j->eng.q);
	return NULL;
}

/*
 * Result buffers outlive a join in this process: pinning host memory costs
 * tens of milliseconds, more than a small join itself.  A finished join
 * leaves its buffers here and the next one with no larger a need takes
 * them.  (One join at a time in a backend; the mutex is for other callers.)
 */
typedef struct buffer_cache
{
	int			valid;
	int			nstreams;
	int64_t		cap;
	gj_out		out[GJ_GPU_MAX_STREAMS];
	gj_chunk	pool[GJ_GPU_MAX_STREAMS + 1];
} buffer_cache;

static buffer_cache cache;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static void free_buffers(struct gj_gpu_selfjoin *j);

/* Take cached buffers holding at least cap pairs; 1 if taken. */
static int
cache_take(struct gj_gpu_selfjoin *j, int64_t cap)
{
	int			taken = 0;

	pthread_mutex_lock(&cache_mu);
	if (cache.valid && cache.nstreams == j->nstreams && cache.cap >= cap)
	{
		memcpy(j->out, cache.out, sizeof(cache.out));
		memcpy(j->pool, cache.pool, sizeof(cache.pool));
		j->cap = cache.cap;
		j->npool = j->nstreams + 1;
		cache.valid = 0;
		taken = 1;
	}
	pthread_mutex_unlock(&cache_mu);
	return taken;
}

/* Keep j's buffers for the next join (the larger set wins). */
static void
cache_put(struct gj_gpu_selfjoin *j)
{
	struct gj_gpu_selfjoin old;

	memset(&old, 0, sizeof(old));
	pthread_mutex_lock(&cache_mu);
	if (cache.valid && cache.cap >= j->cap && cache.nstreams == j->nstreams)
	{
		pthread_mutex_unlock(&cache_mu);
		free_buffers(j);
		return;
	}
	if (cache.valid)
	{
		memcpy(old.out, cache.out, sizeof(cache.out));
		memcpy(old.pool, cache.pool, sizeof(cache.pool));
	}
	memcpy(cache.out, j->out, sizeof(cache.out));
	memcpy(cache.pool, j->pool, sizeof(cache.pool));
	cache.cap = j->cap;
	cache.nstreams = j->nstreams;
	cache.valid = 1;
	memset(j->out, 0, sizeof(j->out));
	memset(j->pool, 0, sizeof(j->pool));
	pthread_mutex_unlock(&cache_mu);
	free_buffers(&old);
}

/* Free the cached buffers (process exit, or to give memory back). */
extern "C" void
gj_gpu_release_cache(void)
{
	struct gj_gpu_selfjoin old;

	memset(&old, 0, sizeof(old));
	pthread_mutex_lock(&cache_mu);
	if (cache.valid)
	{
		memcpy(old.out, cache.out, sizeof(cache.out));
		memcpy(old.pool, cache.pool, sizeof(cache.pool));
		cache.valid = 0;
	}
	pthread_mutex_unlock(&cache_mu);
	free_buffers(&old);
	gj_pinned_release();
}

/* Allocate result buffers and pinned chunks of cap pairs; 0 on failure. */
static int
alloc_buffers(struct gj_gpu_selfjoin *j, int64_t cap)
{
	j->cap = cap;
	for (int s = 0; s < j->nstreams; s++)
	{
		if (cudaMalloc(&j->out[s].a, sizeof(int64_t) * cap) != cudaSuccess ||
			cudaMalloc(&j->out[s].b, sizeof(int64_t) * cap) != cudaSuccess ||
			cudaMalloc(&j->out[s].d, sizeof(double) * cap) != cudaSuccess ||
			cudaMalloc(&j->out[s].count, sizeof(unsigned long long)) != cudaSuccess)
			return 0;
		j->out[s].cap = (unsigned long long) cap;
	}
	j->npool = j->nstreams + 1;
	for (int c = 0; c < j->npool; c++)
	{
		j->pool[c].cap = (int32_t) cap;
		if (cudaMallocHost(&j->pool[c].a, sizeof(int64_t) * cap) != cudaSuccess ||
			cudaMallocHost(&j->pool[c].b, sizeof(int64_t) * cap) != cudaSuccess ||
			cudaMallocHost(&j->pool[c].dist, sizeof(double) * cap) != cudaSuccess)
			return 0;
	}
	return 1;
}

static void
free_buffers(struct gj_gpu_selfjoin *j)
{
	for (int s = 0; s < GJ_GPU_MAX_STREAMS; s++)
	{
		cudaFree(j->out[s].a);
		cudaFree(j->out[s].b);
		cudaFree(j->out[s].d);
		cudaFree(j->out[s].count);
		memset(&j->out[s], 0, sizeof(gj_out));
	}
	for (int c = 0; c < GJ_GPU_MAX_STREAMS + 1; c++)
	{
		cudaFreeHost(j->pool[c].a);
		cudaFreeHost(j->pool[c].b);
		cudaFreeHost(j->pool[c].dist);
		memset(&j->pool[c], 0, sizeof(gj_chunk));
	}
	cudaGetLastError();
}

/* Size buffers from the budget, estimate pairs, cut the batches. */
static gj_status
prepare(struct gj_gpu_selfjoin *j, const gj_points *p, double eps2,
		const gj_gpu_options *opt, char *err, size_t errlen)
{
	size_t		free_b = 0,
				total_b = 0,
				budget,
				index_b,
				left;
	int64_t		cap;
	int64_t		n = p->n;
	double		t0;
	uint32_t	stride;
	unsigned long long sample = 0;
	double		per_point;
	int64_t		ppb;

	GJ_CUDA_CHECK(err, errlen, cudaMemGetInfo(&free_b, &total_b));
	budget = (size_t) (free_b * 0.9);
	if (opt != NULL && opt->memory_limit > 0 && opt->memory_limit < budget)
		budget = opt->memory_limit;
	index_b = gj_gpu_grid_bytes(n, p->dims);
	if (index_b > budget)
	{
		snprintf(err, errlen, "the grid index needs about %zu MB of GPU memory, %zu MB are available",
				 index_b >> 20, budget >> 20);
		return GJ_ERR_DEVICE_OOM;
	}

	for (int s = 0; s < j->nstreams; s++)
	{
		GJ_CUDA_CHECK(err, errlen, cudaStreamCreateWithFlags(&j->streams[s], cudaStreamNonBlocking));
		GJ_CUDA_CHECK(err, errlen, cudaEventCreateWithFlags(&j->events[s], cudaEventDisableTiming));
	}
	GJ_CUDA_CHECK(err, errlen, cudaMallocHost(&j->h_count, sizeof(unsigned long long) * j->nstreams));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_sample, sizeof(unsigned long long)));
	{
		gj_status	st = gj_gpu_stop_alloc(&j->d_stop, &j->stop_stream, err, errlen);

		if (st != GJ_OK)
			return st;
	}

	{
		/* upload, statistics on the device, the plan, the device index */
		double	   *dx = NULL;
		int64_t    *dids = NULL;
		gj_dim_stats *st_dims = (gj_dim_stats *) malloc(sizeof(gj_dim_stats) * p->dims);
		gj_status	st;
		cudaError_t e;

		if (st_dims == NULL)
			return GJ_ERR_NOMEM;
		st = gj_gpu_upload_stats(p, &dx, st_dims, j->streams[0],
								 &j->stats.upload_ms, err, errlen);
		if (st == GJ_OK)
		{
			t0 = gj_now_ms();
			e = cudaMalloc(&dids, sizeof(int64_t) * n);
			if (e == cudaSuccess)
				e = cudaMemcpyAsync(dids, p->ids, sizeof(int64_t) * n,
									cudaMemcpyHostToDevice, j->streams[0]);
			if (e != cudaSuccess)
			{
				snprintf(err, errlen, "id upload: %s", cudaGetErrorName(e));
				cudaGetLastError();
				st = gj_cuda_status(e);
			}
			j->stats.upload_ms += gj_now_ms() - t0;
		}
		if (st == GJ_OK)
		{
			t0 = gj_now_ms();
			st = gj_grid_plan_from_stats(&j->plan, p->dims, n, eps2, st_dims);
			gj_grid_params_fill(&j->P, &j->plan);
			j->stats.plan_ms = gj_now_ms() - t0;
		}
		if (st == GJ_OK)
			st = gj_gpu_grid_build(dx, dids, n, p->dims, &j->plan, &j->G, j->streams[0],
								   &j->stats.index_ms, err, errlen);
		cudaFree(dx);
		cudaFree(dids);
		free(st_dims);
		if (st != GJ_OK)
			return st;
	}
	j->stats.ncells = j->G.ncells;
	j->stats.nidx = j->plan.nidx;

	/* the sampled estimate: count-only run over every stride-th point */
	t0 = gj_now_ms();
	stride = (uint32_t) (n > GJ_GPU_SAMPLE_POINTS ? n / GJ_GPU_SAMPLE_POINTS : 1);
	{
		gj_out		O;

		memset(&O, 0, sizeof(O));
		O.count = j->d_sample;
		GJ_CUDA_CHECK(err, errlen, cudaMemsetAsync(O.count, 0, sizeof(unsigned long long), j->streams[0]));
		GJ_CUDA_CHECK(err, errlen, launch_join(j->G, j->P, 0, (uint32_t) n, stride, O, j->d_stop, j->streams[0]));
		GJ_CUDA_CHECK(err, errlen, cudaMemcpyAsync(&sample, O.count, sizeof(sample),
												   cudaMemcpyDeviceToHost, j->streams[0]));
		/* heavy inputs make this run long: wait with an eye on cancel */
		{
			gj_status	st = gj_gpu_wait(j->streams[0], j->d_stop, j->stop_stream,
										 err, errlen);

			if (st != GJ_OK)
				return st;
		}
	}
	j->stats.estimate_ms = gj_now_ms() - t0;
	j->stats.estimated_pairs = (int64_t) sample * stride;
	per_point = (double) sample / (double) ((n + stride - 1) / stride);

	/*
	 * Result buffers: no larger than the estimate needs (pinning host memory
	 * costs time), no larger than the default or the budget's remainder.
	 */
	t0 = gj_now_ms();
	left = budget > index_b ? budget - index_b : 0;
	if (opt != NULL && opt->batch_pairs > 0)
		cap = opt->batch_pairs;
	else
	{
		cap = (int64_t) (1.25 * (double) j->stats.estimated_pairs) + GJ_GPU_MIN_BATCH;
		if (cap > GJ_GPU_DEFAULT_BATCH)
			cap = GJ_GPU_DEFAULT_BATCH;
		if (cap * GJ_GPU_PAIR_BYTES * j->nstreams > (int64_t) left)
			cap = (int64_t) (left / (GJ_GPU_PAIR_BYTES * (size_t) j->nstreams));
	}
	if (cap > INT32_MAX / 2)
		cap = INT32_MAX / 2;
	if (cache_take(j, cap))
		cap = j->cap;
	else
		for (;; cap /= 2)
	{
		if (cap < GJ_GPU_MIN_BATCH && (opt == NULL || opt->batch_pairs <= 0))
		{
			snprintf(err, errlen, "no GPU memory left for result buffers");
			return GJ_ERR_DEVICE_OOM;
		}
		if (alloc_buffers(j, cap))
			break;
		free_buffers(j);
		if (cap < 2)
		{
			snprintf(err, errlen, "could not allocate result buffers");
			return GJ_ERR_DEVICE_OOM;
		}
	}
	j->stats.batch_pairs = cap;
	j->stats.alloc_ms = gj_now_ms() - t0;

	/* batches expected to fill 70% of a buffer; splits absorb the skew */
	ppb = per_point > 0 ? (int64_t) (0.7 * (double) cap / per_point) : n;
	if (ppb < 1)
		ppb = 1;
	if (ppb > n)
		ppb = n;
	for (int64_t b = ((n + ppb - 1) / ppb) - 1; b >= 0; b--)
	{
		int64_t		p0 = b * ppb,
					p1 = p0 + ppb < n ? p0 + ppb : n;

		if (!push_batch(j, (uint32_t) p0, (uint32_t) p1, 0))
			return GJ_ERR_NOMEM;
	}
	return GJ_OK;
}

extern "C" gj_status
gj_gpu_selfjoin_start(const gj_points *p, double eps2, const gj_gpu_options *opt,
					  gj_gpu_selfjoin **out, char *err, size_t errlen)
{
	struct gj_gpu_selfjoin *j;
	gj_status	st;
	sigset_t	old;

	*out = NULL;
	err[0] = '\0';
	if (p->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	j = (struct gj_gpu_selfjoin *) calloc(1, sizeof(struct gj_gpu_selfjoin));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = gpu_selfjoin_free;
	j->nstreams = (opt != NULL && opt->nstreams > 0) ? opt->nstreams : GJ_GPU_MAX_STREAMS;
	if (j->nstreams > GJ_GPU_MAX_STREAMS)
		j->nstreams = GJ_GPU_MAX_STREAMS;

	if (!(eps2 >= 0.0) || p->dims < 1 || p->dims > GJ_MAX_DIMS)
		st = GJ_ERR_ARG;
	else
		st = prepare(j, p, eps2, opt, err, errlen);
	if (st == GJ_OK)
	{
		j->eng.q = gj_queue_create_external(j->pool, j->npool);
		if (j->eng.q == NULL)
			st = GJ_ERR_NOMEM;
	}
	if (st == GJ_OK)
	{
		gj_queue_set_producers(j->eng.q, 1);
		gj_block_async_signals(&old);
		if (pthread_create(&j->driver, NULL, driver_main, j) == 0)
			j->driver_started = 1;
		else
			st = GJ_ERR_THREAD;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (st != GJ_OK)
	{
		gpu_selfjoin_free(&j->eng);
		return st;
	}
	*out = j;
	return GJ_OK;
}

extern "C" void
gj_gpu_selfjoin_stats(const gj_gpu_selfjoin *j, gj_gpu_stats *st)
{
	*st = j->stats;
	st->done_ms = j->eng.q != NULL ? gj_queue_done_ms(j->eng.q) : 0.0;
}

extern "C" const char *
gj_gpu_selfjoin_error(const gj_gpu_selfjoin *j)
{
	return j->err;
}

/*
 * Stop the driver, wait for the streams, free device and pinned memory.
 * Never fails; after a sticky CUDA error the frees just return errors.
 */
static void
gpu_selfjoin_free(gj_engine *e)
{
	struct gj_gpu_selfjoin *j = (struct gj_gpu_selfjoin *) e;

	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	gj_gpu_stop_raise(j->d_stop, j->stop_stream);
	if (j->eng.q != NULL)
		gj_queue_cancel(j->eng.q);
	if (j->driver_started)
		pthread_join(j->driver, NULL);
	{
		int			clean = j->eng.error == GJ_OK;

		for (int s = 0; s < j->nstreams; s++)
			if (j->streams[s] != NULL && cudaStreamSynchronize(j->streams[s]) != cudaSuccess)
				clean = 0;
		if (clean && j->cap > 0 && j->out[0].a != NULL)
			cache_put(j);
		else
			free_buffers(j);
	}
	gj_gpu_grid_free(&j->G);
	for (int s = 0; s < j->nstreams; s++)
	{
		if (j->events[s] != NULL)
			cudaEventDestroy(j->events[s]);
		if (j->streams[s] != NULL)
			cudaStreamDestroy(j->streams[s]);
	}
	cudaFreeHost(j->h_count);
	cudaFree(j->d_sample);
	gj_gpu_stop_free(j->d_stop, j->stop_stream);
	cudaGetLastError();
	gj_queue_destroy(j->eng.q);
	free(j->pending);
	free(j);
}
