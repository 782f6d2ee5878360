/*
 * pair_driver.cu
 *		The batch driver of the GPU engines that stream pairs: the grid
 *		self-join (selfjoin.cu) and the tile join (tiles.cu).
 *
 * An engine describes its work as a range of units (points of the sorted
 * order, or pairs of blocks) and a launch function that runs a batch
 * [b0, b1) of them into a device result buffer.  The driver thread keeps
 * several streams busy: each stream owns a result buffer; when a batch's
 * kernel is done the driver copies its pairs into a free pinned host chunk
 * (the queue's pool; blocking there is the backpressure from a slow
 * consumer) and hands the chunk on.  Kernels of one stream overlap the
 * copies of the others and the consumer's tuple writing.
 *
 * A kernel counts every pair it finds but writes only the first cap; a
 * batch whose count exceeds the buffer is split into as many pieces as its
 * count says should each fill 70% of one, and they run again, so no pair
 * is ever dropped (and a batch is rerun once, not once per halving).  A batch of one unit that still
 * overflows is rerun with skip windows (slots before skip are counted, not
 * written), which needs the unit's pairs to come out in a fixed order:
 * engines whose units cannot overflow a buffer never get there.
 *
 * An engine whose data does not fit the device at once gives phases
 * (gj_driver_phases): each batch needs one phase's data in a device slot,
 * and the driver loads the next phase into a slot once every batch of the
 * phase it held, reruns included, has finished.
 *
 * Result buffers outlive a join in this process: pinning host memory costs
 * tens of milliseconds, more than a small join itself.  A finished join
 * leaves its buffers in a cache and the next one with no larger a need
 * takes them.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.cuh"

enum stream_state
{
	ST_IDLE,
	ST_KERNEL,					/* kernel and count copy queued */
	ST_COPY						/* pairs being copied into a pinned chunk */
};

/* Record the first error of the driver thread. */
static void
driver_fail(gj_pair_driver *d, gj_status st, const char *what, cudaError_t e)
{
	if (gj_engine_error(d->eng) == GJ_OK)
	{
		if (e != cudaSuccess)
			snprintf(d->err, sizeof(d->err), "%s: %s", what, cudaGetErrorName(e));
		else
			snprintf(d->err, sizeof(d->err), "%s", what);
		d->eng->error = st;
	}
}

int
gj_driver_push(gj_pair_driver *d, uint64_t b0, uint64_t b1, unsigned long long skip,
			   int64_t phase)
{
	if (d->npending == d->cap_pending)
	{
		int64_t		ncap = d->cap_pending ? d->cap_pending * 2 : 64;
		gj_batch   *nb = (gj_batch *) realloc(d->pending, sizeof(gj_batch) * ncap);

		if (nb == NULL)
			return 0;
		d->pending = nb;
		d->cap_pending = ncap;
	}
	d->pending[d->npending].b0 = b0;
	d->pending[d->npending].b1 = b1;
	d->pending[d->npending].skip = skip;
	d->pending[d->npending].phase = phase;
	d->pending[d->npending].seq = -1;
	if (!d->planned)
	{
		/* the plan: what every member of a team must have pushed alike */
		d->pending[d->npending].seq = d->nseq++;
		d->fp = gj_fp_mix(gj_fp_mix(gj_fp_mix(d->fp, b0), b1), (uint64_t) phase);
	}
	d->npending++;
	if (d->nphases > 0)
		d->outstanding[phase]++;
	return 1;
}

/* Phases for the batches pushed from now on (see gpu_common.cuh). */
gj_status
gj_driver_phases(gj_pair_driver *d, int64_t nphases, int nslots, gj_phase_load_fn load)
{
	if (nphases < 1 || nslots < 1 || nslots > GJ_DRIVER_MAX_SLOTS || d->npending > 0)
		return GJ_ERR_ARG;
	d->outstanding = (int64_t *) calloc((size_t) nphases, sizeof(int64_t));
	if (d->outstanding == NULL)
		return GJ_ERR_NOMEM;
	d->nphases = nphases;
	d->nslots = nslots;
	d->load = load;
	for (int s = 0; s < GJ_DRIVER_MAX_SLOTS; s++)
		d->slot_phase[s] = -1;
	return GJ_OK;
}

/*
 * The pending batch to launch next, as an index into the stack: the top,
 * or with phases the first from the top whose phase is in its slot, after
 * loading the top's phase when its slot is free.  -1: none can run yet
 * (a slot's phase is still running); -2: a load failed (recorded).
 */
static int64_t
pick_batch(gj_pair_driver *d)
{
	int64_t		top = d->npending - 1;
	int64_t		v,
				held;
	int			slot;
	gj_status	st;

	if (d->nphases == 0)
		return top;
	for (int64_t i = top; i >= 0; i--)
		if (d->slot_phase[d->pending[i].phase % d->nslots] == d->pending[i].phase)
			return i;
	v = d->pending[top].phase;
	slot = (int) (v % d->nslots);
	held = d->slot_phase[slot];
	if (held >= 0 && d->outstanding[held] > 0)
		return -1;
	st = d->load(d->ctx, v, slot);
	if (st != GJ_OK)
	{
		/* the load's own message, when it left one */
		if (d->err[0] == '\0')
			driver_fail(d, st, "loading the next phase's data", cudaSuccess);
		else if (gj_engine_error(d->eng) == GJ_OK)
			d->eng->error = st;
		return -2;
	}
	d->slot_phase[slot] = v;
	d->loads++;
	return top;
}

/* A batch's kernel has finished (its reruns, if any, are pushed). */
static inline void
batch_done(gj_pair_driver *d, const gj_batch *b)
{
	if (d->nphases > 0)
		d->outstanding[b->phase]--;
}

/* The driver thread: keeps the streams busy until the batches run out. */
static void *
driver_main(void *arg)
{
	gj_pair_driver *d = (gj_pair_driver *) arg;
	gj_pair_queue *q = d->eng->q;
	enum stream_state state[GJ_DRIVER_MAX_STREAMS];
	gj_batch	cur[GJ_DRIVER_MAX_STREAMS];
	gj_chunk   *chunk[GJ_DRIVER_MAX_STREAMS];
	unsigned long long count[GJ_DRIVER_MAX_STREAMS];

	for (int s = 0; s < d->nstreams; s++)
		state[s] = ST_IDLE;
	/* a thread's device is 0 until set: run where the engine was made */
	if (cudaSetDevice(d->device) != cudaSuccess)
		driver_fail(d, GJ_ERR_CUDA, "cudaSetDevice", cudaGetLastError());

	while (!__atomic_load_n(&d->stop, __ATOMIC_RELAXED) && d->eng->error == GJ_OK)
	{
		int			progressed = 0,
					idle = 0;

		for (int s = 0; s < d->nstreams && d->eng->error == GJ_OK; s++)
		{
			cudaStream_t st = d->streams[s];
			cudaError_t e;

			if (state[s] == ST_IDLE)
			{
				int64_t		at;

				if (d->npending == 0)
				{
					idle++;
					continue;
				}
				at = pick_batch(d);
				if (at == -2)
					break;
				if (at < 0)
					continue;	/* a slot's phase still runs elsewhere */
				cur[s] = d->pending[at];
				memmove(&d->pending[at], &d->pending[at + 1],
						sizeof(gj_batch) * (d->npending - 1 - at));
				d->npending--;
				if (d->share != NULL && !gj_gpu_share_claim(d->share, cur[s].seq))
				{
					/* another member of the team runs it */
					batch_done(d, &cur[s]);
					d->claimed_away++;
					progressed = 1;
					continue;
				}
				d->out[s].skip = cur[s].skip;
				e = cudaMemsetAsync(d->out[s].count, 0, sizeof(unsigned long long), st);
				if (e == cudaSuccess)
					e = d->launch(d->ctx, cur[s].b0, cur[s].b1, d->out[s], st);
				if (e == cudaSuccess)
					e = cudaMemcpyAsync(&d->h_count[s], d->out[s].count,
										sizeof(unsigned long long),
										cudaMemcpyDeviceToHost, st);
				if (e == cudaSuccess)
					e = cudaEventRecord(d->events[s], st);
				if (e != cudaSuccess)
				{
					driver_fail(d, gj_cuda_status(e), "join kernel", e);
					break;
				}
				state[s] = ST_KERNEL;
				progressed = 1;
			}
			else if (state[s] == ST_KERNEL)
			{
				e = cudaEventQuery(d->events[s]);
				if (e == cudaErrorNotReady)
					continue;
				if (e != cudaSuccess)
				{
					driver_fail(d, GJ_ERR_CUDA, "join kernel", e);
					break;
				}
				progressed = 1;
				count[s] = d->h_count[s] - cur[s].skip;
				if (count[s] > (unsigned long long) d->cap)
				{
					int			ok;

					d->overflows++;
					if (cur[s].b1 - cur[s].b0 >= 2)
					{
						/*
						 * overflow: split the batch by its count, so that
						 * each piece should fill 70% of a buffer, and run
						 * the pieces again (pushed last first)
						 */
						uint64_t	len = cur[s].b1 - cur[s].b0;
						uint64_t	pieces = (uint64_t) (count[s] / (0.7 * (double) d->cap)) + 1;

						pieces = pieces < 2 ? 2 : pieces > len ? len : pieces;
						ok = 1;
						for (uint64_t k = pieces; ok && k-- > 0;)
							ok = gj_driver_push(d, cur[s].b0 + len * k / pieces,
												cur[s].b0 + len * (k + 1) / pieces, 0,
												cur[s].phase);
						if (!ok)
						{
							driver_fail(d, GJ_ERR_NOMEM, "batch list", cudaSuccess);
							break;
						}
						batch_done(d, &cur[s]);
						state[s] = ST_IDLE;
						continue;
					}
					/* one unit: deliver this full window, queue the next */
					if (!d->windows || !gj_driver_push(d, cur[s].b0, cur[s].b1, cur[s].skip + d->cap,
													   cur[s].phase))
					{
						driver_fail(d, d->windows ? GJ_ERR_NOMEM : GJ_ERR_CUDA,
									d->windows ? "batch list" :
									"one unit of work overflowed a result buffer", cudaSuccess);
						break;
					}
					count[s] = (unsigned long long) d->cap;
				}
				batch_done(d, &cur[s]);
				if (count[s] == 0)
				{
					d->batches++;
					state[s] = ST_IDLE;
					continue;
				}
				chunk[s] = gj_queue_get_free(q);	/* waits for the consumer */
				if (chunk[s] == NULL)
					break;		/* cancelled */
				e = cudaMemcpyAsync(chunk[s]->a, d->out[s].a, sizeof(int64_t) * count[s],
									cudaMemcpyDeviceToHost, st);
				if (e == cudaSuccess)
					e = cudaMemcpyAsync(chunk[s]->b, d->out[s].b, sizeof(int64_t) * count[s],
										cudaMemcpyDeviceToHost, st);
				if (e == cudaSuccess)
					e = cudaMemcpyAsync(chunk[s]->dist, d->out[s].d, sizeof(double) * count[s],
										cudaMemcpyDeviceToHost, st);
				if (e == cudaSuccess)
					e = cudaEventRecord(d->events[s], st);
				if (e != cudaSuccess)
				{
					gj_queue_release(q, chunk[s]);
					driver_fail(d, GJ_ERR_CUDA, "result copy", e);
					break;
				}
				state[s] = ST_COPY;
			}
			else
			{
				e = cudaEventQuery(d->events[s]);
				if (e == cudaErrorNotReady)
					continue;
				if (e != cudaSuccess)
				{
					gj_queue_release(q, chunk[s]);
					driver_fail(d, GJ_ERR_CUDA, "result copy", e);
					break;
				}
				chunk[s]->n = (int32_t) count[s];
				gj_queue_put_full(q, chunk[s]);
				d->batches++;
				d->pairs += (int64_t) count[s];
				state[s] = ST_IDLE;
				progressed = 1;
			}
		}
		if (idle == d->nstreams && d->npending == 0)
			break;				/* every batch delivered */
		if (!progressed)
			sched_yield();		/* kernels run for well under a millisecond */
	}
	/* chunks still being copied are released by gj_driver_stop after a sync */
	if (d->eng->error != GJ_OK)
		gj_queue_cancel(q);
	gj_queue_producer_done(q);
	return NULL;
}

/* --- result buffers, cached across joins -------------------------------- */

typedef struct buffer_cache
{
	int			valid;
	int			nstreams;
	int64_t		cap;
	gj_out		out[GJ_DRIVER_MAX_STREAMS];
	gj_chunk	pool[GJ_DRIVER_MAX_STREAMS + 1];
} buffer_cache;

/* one a device: device memory is the device's own */
static buffer_cache caches[GJ_MAX_GPUS];
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static buffer_cache *
cache_of(int device)
{
	return &caches[device >= 0 && device < GJ_MAX_GPUS ? device : 0];
}

static void
free_buffers(gj_out *out, gj_chunk *pool)
{
	for (int s = 0; s < GJ_DRIVER_MAX_STREAMS; s++)
	{
		cudaFree(out[s].a);
		cudaFree(out[s].b);
		cudaFree(out[s].d);
		cudaFree(out[s].count);
		memset(&out[s], 0, sizeof(gj_out));
	}
	for (int c = 0; c < GJ_DRIVER_MAX_STREAMS + 1; c++)
	{
		cudaFreeHost(pool[c].a);
		cudaFreeHost(pool[c].b);
		cudaFreeHost(pool[c].dist);
		memset(&pool[c], 0, sizeof(gj_chunk));
	}
	cudaGetLastError();
}

/* Take cached buffers holding at least cap pairs; 1 if taken. */
static int
cache_take(gj_pair_driver *d, int64_t cap)
{
	int			taken = 0;
	buffer_cache &cache = *cache_of(d->device);

	if (d->device >= GJ_MAX_GPUS)
		return 0;

	pthread_mutex_lock(&cache_mu);
	if (cache.valid && cache.nstreams == d->nstreams && cache.cap >= cap)
	{
		memcpy(d->out, cache.out, sizeof(cache.out));
		memcpy(d->pool, cache.pool, sizeof(cache.pool));
		d->cap = cache.cap;
		d->npool = d->nstreams + 1;
		cache.valid = 0;
		taken = 1;
	}
	pthread_mutex_unlock(&cache_mu);
	return taken;
}

/* Keep d's buffers for the next join (the larger set wins). */
static void
cache_put(gj_pair_driver *d)
{
	gj_out		old_out[GJ_DRIVER_MAX_STREAMS];
	gj_chunk	old_pool[GJ_DRIVER_MAX_STREAMS + 1];
	buffer_cache &cache = *cache_of(d->device);

	if (d->device >= GJ_MAX_GPUS)
	{
		free_buffers(d->out, d->pool);
		return;
	}
	memset(old_out, 0, sizeof(old_out));
	memset(old_pool, 0, sizeof(old_pool));
	pthread_mutex_lock(&cache_mu);
	if (cache.valid && cache.cap >= d->cap && cache.nstreams == d->nstreams)
	{
		pthread_mutex_unlock(&cache_mu);
		free_buffers(d->out, d->pool);
		return;
	}
	if (cache.valid)
	{
		memcpy(old_out, cache.out, sizeof(cache.out));
		memcpy(old_pool, cache.pool, sizeof(cache.pool));
	}
	memcpy(cache.out, d->out, sizeof(cache.out));
	memcpy(cache.pool, d->pool, sizeof(cache.pool));
	cache.cap = d->cap;
	cache.nstreams = d->nstreams;
	cache.valid = 1;
	memset(d->out, 0, sizeof(d->out));
	memset(d->pool, 0, sizeof(d->pool));
	pthread_mutex_unlock(&cache_mu);
	free_buffers(old_out, old_pool);
}

/* Free the cached buffers (process exit, or to give memory back). */
extern "C" void
gj_gpu_release_cache(void)
{
	for (int dev = 0; dev < GJ_MAX_GPUS; dev++)
	{
		gj_out		old_out[GJ_DRIVER_MAX_STREAMS];
		gj_chunk	old_pool[GJ_DRIVER_MAX_STREAMS + 1];
		int			had;

		memset(old_out, 0, sizeof(old_out));
		memset(old_pool, 0, sizeof(old_pool));
		pthread_mutex_lock(&cache_mu);
		had = caches[dev].valid;
		if (had)
		{
			memcpy(old_out, caches[dev].out, sizeof(old_out));
			memcpy(old_pool, caches[dev].pool, sizeof(old_pool));
			caches[dev].valid = 0;
		}
		pthread_mutex_unlock(&cache_mu);
		if (had)
		{
			gj_on_device on(dev);

			free_buffers(old_out, old_pool);
		}
	}
	gj_pinned_release();
}

/* Allocate result buffers and pinned chunks of cap pairs; 0 on failure. */
static int
alloc_buffers(gj_pair_driver *d, int64_t cap)
{
	d->cap = cap;
	for (int s = 0; s < d->nstreams; s++)
	{
		if (cudaMalloc(&d->out[s].a, sizeof(int64_t) * cap) != cudaSuccess ||
			cudaMalloc(&d->out[s].b, sizeof(int64_t) * cap) != cudaSuccess ||
			cudaMalloc(&d->out[s].d, sizeof(double) * cap) != cudaSuccess ||
			cudaMalloc(&d->out[s].count, sizeof(unsigned long long)) != cudaSuccess)
			return 0;
		d->out[s].cap = (unsigned long long) cap;
	}
	d->npool = d->nstreams + 1;
	for (int c = 0; c < d->npool; c++)
	{
		d->pool[c].cap = (int32_t) cap;
		if (cudaMallocHost(&d->pool[c].a, sizeof(int64_t) * cap) != cudaSuccess ||
			cudaMallocHost(&d->pool[c].b, sizeof(int64_t) * cap) != cudaSuccess ||
			cudaMallocHost(&d->pool[c].dist, sizeof(double) * cap) != cudaSuccess)
			return 0;
	}
	return 1;
}

/* --- the driver's life ---------------------------------------------------- */

/* Streams, events and count slots for nstreams (at most the maximum). */
gj_status
gj_driver_init(gj_pair_driver *d, gj_engine *eng, int nstreams, gj_gpu_share *share,
			   char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	d->eng = eng;
	d->share = share;
	d->fp = GJ_FP_SEED;
	GJ_CUDA_CHECK(err, errlen, cudaGetDevice(&d->device));
	d->nstreams = nstreams > 0 && nstreams <= GJ_DRIVER_MAX_STREAMS ? nstreams :
		GJ_DRIVER_MAX_STREAMS;
	for (int s = 0; s < d->nstreams; s++)
	{
		GJ_CUDA_CHECK(err, errlen, cudaStreamCreateWithFlags(&d->streams[s], cudaStreamNonBlocking));
		GJ_CUDA_CHECK(err, errlen, cudaEventCreateWithFlags(&d->events[s], cudaEventDisableTiming));
	}
	GJ_CUDA_CHECK(err, errlen, cudaMallocHost(&d->h_count, sizeof(unsigned long long) * d->nstreams));
	return GJ_OK;
}

/*
 * Result buffers of cap pairs (cached ones when large enough); halving
 * down to min_cap when the memory is not there.  forced: cap is a setting,
 * halve down to one pair rather than fail.
 */
gj_status
gj_driver_buffers(gj_pair_driver *d, int64_t cap, int64_t min_cap, int forced,
				  char *err, size_t errlen)
{
	if (cap > INT32_MAX / 2)
		cap = INT32_MAX / 2;
	if (cache_take(d, cap))
		return GJ_OK;
	for (;; cap /= 2)
	{
		if (cap < min_cap && !forced)
		{
			snprintf(err, errlen, "no GPU memory left for result buffers");
			return GJ_ERR_DEVICE_OOM;
		}
		if (alloc_buffers(d, cap))
			return GJ_OK;
		free_buffers(d->out, d->pool);
		if (cap < 2)
		{
			snprintf(err, errlen, "could not allocate result buffers");
			return GJ_ERR_DEVICE_OOM;
		}
	}
}

/*
 * The engine's queue over the pinned chunks, and the driver thread (every
 * signal blocked) running the pushed batches with launch.
 */
gj_status
gj_driver_start(gj_pair_driver *d, gj_batch_launch_fn launch, void *ctx, int windows)
{
	sigset_t	old;
	gj_status	st = GJ_OK;

	d->launch = launch;
	d->ctx = ctx;
	d->windows = windows;
	d->planned = 1;
	if (d->share != NULL)
	{
		st = gj_gpu_share_publish(d->share, d->fp, d->nseq);
		if (st == GJ_ERR_LIMIT)
			snprintf(d->err, sizeof(d->err), "the GPUs planned different batches");
		if (st != GJ_OK)
			return st;
	}
	d->eng->q = gj_queue_create_external(d->pool, d->npool);
	if (d->eng->q == NULL)
		return GJ_ERR_NOMEM;
	gj_queue_set_producers(d->eng->q, 1);
	gj_block_async_signals(&old);
	if (pthread_create(&d->thread, NULL, driver_main, d) == 0)
		d->started = 1;
	else
		st = GJ_ERR_THREAD;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return st;
}

/*
 * Stop the driver thread (the caller has raised its kernels' stop word),
 * wait for the streams, keep clean buffers for the next join, free the
 * rest.  Never fails; the engine's queue is the caller's to destroy.
 */
void
gj_driver_stop(gj_pair_driver *d)
{
	int			clean;
	gj_on_device on(d->device);

	__atomic_store_n(&d->stop, 1, __ATOMIC_RELAXED);
	if (d->eng != NULL && d->eng->q != NULL)
		gj_queue_cancel(d->eng->q);
	if (d->started)
		pthread_join(d->thread, NULL);
	d->started = 0;
	clean = d->eng == NULL || d->eng->error == GJ_OK;
	for (int s = 0; s < d->nstreams; s++)
		if (d->streams[s] != NULL && cudaStreamSynchronize(d->streams[s]) != cudaSuccess)
			clean = 0;
	if (clean && d->cap > 0 && d->out[0].a != NULL)
		cache_put(d);
	else
		free_buffers(d->out, d->pool);
	for (int s = 0; s < d->nstreams; s++)
	{
		if (d->events[s] != NULL)
			cudaEventDestroy(d->events[s]);
		if (d->streams[s] != NULL)
			cudaStreamDestroy(d->streams[s]);
		d->events[s] = NULL;
		d->streams[s] = NULL;
	}
	cudaFreeHost(d->h_count);
	d->h_count = NULL;
	free(d->pending);
	d->pending = NULL;
	d->npending = d->cap_pending = 0;
	free(d->outstanding);
	d->outstanding = NULL;
	d->nphases = 0;
	cudaGetLastError();
}
