/*
 * pinned.cu
 *		A small per-process cache of pinned host blocks.
 *
 * Pinning host memory costs ~0.3 ms per MB (cudaMallocHost of the kNN
 * join's 64 MB of result buffers took 17-29 ms on the H100 host), more
 * than the search of a 100K-query batch.  Freed blocks are kept for the
 * next join of the backend, which takes the smallest one large enough and
 * not more than twice what it asked for; at most GJ_PINNED_KEEP bytes stay
 * cached, the largest idle blocks go first.  gj_gpu_release_cache empties
 * it (backend exit).  The self-join keeps its own result buffers (with
 * their device halves) in selfjoin.cu.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "gpu_common.cuh"

#define GJ_PINNED_SLOTS 16
#define GJ_PINNED_KEEP ((size_t) 256 << 20)

typedef struct pinned_block
{
	void	   *p;
	size_t		bytes;
	int			in_use;
} pinned_block;

static pinned_block blocks[GJ_PINNED_SLOTS];
static pthread_mutex_t pinned_mu = PTHREAD_MUTEX_INITIALIZER;

/* Pinned host memory of at least bytes, cached or new. */
cudaError_t
gj_pinned_alloc(void **out, size_t bytes)
{
	int			best = -1;
	cudaError_t e;

	pthread_mutex_lock(&pinned_mu);
	for (int i = 0; i < GJ_PINNED_SLOTS; i++)
		if (blocks[i].p != NULL && !blocks[i].in_use && blocks[i].bytes >= bytes &&
			blocks[i].bytes <= 2 * bytes + ((size_t) 1 << 20) &&
			(best < 0 || blocks[i].bytes < blocks[best].bytes))
			best = i;
	if (best >= 0)
	{
		blocks[best].in_use = 1;
		*out = blocks[best].p;
		pthread_mutex_unlock(&pinned_mu);
		return cudaSuccess;
	}
	pthread_mutex_unlock(&pinned_mu);

	e = cudaMallocHost(out, bytes);
	if (e != cudaSuccess)
	{
		*out = NULL;
		return e;
	}
	pthread_mutex_lock(&pinned_mu);
	for (int i = 0; i < GJ_PINNED_SLOTS; i++)
		if (blocks[i].p == NULL)
		{
			blocks[i].p = *out;
			blocks[i].bytes = bytes;
			blocks[i].in_use = 1;
			break;
		}
	/* no slot: the block is simply freed when it comes back */
	pthread_mutex_unlock(&pinned_mu);
	return cudaSuccess;
}

/* Idle blocks beyond keep bytes, largest first, out of the table into drop. */
static int
trim(size_t keep, void **drop)
{
	int			ndrop = 0;

	for (;;)
	{
		size_t		idle = 0;
		int			big = -1;

		for (int i = 0; i < GJ_PINNED_SLOTS; i++)
			if (blocks[i].p != NULL && !blocks[i].in_use)
			{
				idle += blocks[i].bytes;
				if (big < 0 || blocks[i].bytes > blocks[big].bytes)
					big = i;
			}
		if (big < 0 || idle <= keep)
			return ndrop;
		drop[ndrop++] = blocks[big].p;
		blocks[big].p = NULL;
		blocks[big].bytes = 0;
	}
}

/* Give a block back: cached when there is room, else freed. */
void
gj_pinned_free(void *p)
{
	void	   *drop[GJ_PINNED_SLOTS + 1];
	int			ndrop = 0,
				found = 0;

	if (p == NULL)
		return;
	pthread_mutex_lock(&pinned_mu);
	for (int i = 0; i < GJ_PINNED_SLOTS; i++)
		if (blocks[i].p == p)
		{
			blocks[i].in_use = 0;
			found = 1;
			break;
		}
	if (!found)
		drop[ndrop++] = p;
	ndrop += trim(GJ_PINNED_KEEP, drop + ndrop);
	pthread_mutex_unlock(&pinned_mu);
	for (int i = 0; i < ndrop; i++)
		cudaFreeHost(drop[i]);
}

/* Free every idle cached block. */
void
gj_pinned_release(void)
{
	void	   *drop[GJ_PINNED_SLOTS];
	int			ndrop;

	pthread_mutex_lock(&pinned_mu);
	ndrop = trim(0, drop);
	pthread_mutex_unlock(&pinned_mu);
	for (int i = 0; i < ndrop; i++)
		cudaFreeHost(drop[i]);
}

/* --- staged uploads ------------------------------------------------------ */

#define GJ_STAGE_BYTES ((size_t) 32 << 20)	/* a pinned chunk */
#define GJ_STAGE_MIN ((size_t) 64 << 20)	/* smaller uploads: one plain copy */
#define GJ_STAGE_UNIT ((size_t) 64 << 10)	/* a helper thread's share, in these */
#define GJ_STAGE_THREADS 8

typedef struct stage_copy
{
	char	   *dst;
	const char *src;
	size_t		len;
} stage_copy;

static void
stage_units(void *arg, int64_t u0, int64_t u1)
{
	stage_copy *c = (stage_copy *) arg;
	size_t		a = (size_t) u0 * GJ_STAGE_UNIT,
				b = (size_t) u1 * GJ_STAGE_UNIT;

	b = b < c->len ? b : c->len;
	if (a < b)
		memcpy(c->dst + a, c->src + a, b - a);
}

/*
 * bytes from pageable host memory src to device memory dst, on s, and
 * waited for.  A copy from pageable memory is staged by the driver through
 * its own pinned buffer by one thread: about 7 GB/s on the H100 host, 140
 * ms of the kNN engine's start for 1M x 128 rows.  Here GJ_STAGE_THREADS
 * threads fill one of two cached pinned chunks while the other's DMA runs.
 * Without pinned memory it is the plain copy.
 */
cudaError_t
gj_upload_staged(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
	void	   *buf[2] = {NULL, NULL};
	cudaEvent_t ev[2] = {NULL, NULL};
	cudaError_t e = cudaSuccess;
	int			staged = bytes >= GJ_STAGE_MIN;

	for (int b = 0; b < 2 && staged; b++)
		staged = gj_pinned_alloc(&buf[b], GJ_STAGE_BYTES) == cudaSuccess &&
			cudaEventCreateWithFlags(&ev[b], cudaEventDisableTiming) == cudaSuccess;
	if (!staged)
	{
		cudaGetLastError();
		e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
	}
	for (size_t off = 0, i = 0; staged && off < bytes && e == cudaSuccess; off += GJ_STAGE_BYTES, i++)
	{
		int			b = (int) (i % 2);
		stage_copy	c;

		c.dst = (char *) buf[b];
		c.src = (const char *) src + off;
		c.len = bytes - off < GJ_STAGE_BYTES ? bytes - off : GJ_STAGE_BYTES;
		/* the chunk's last DMA from this buffer is done before it is refilled */
		if (i >= 2)
			e = cudaEventSynchronize(ev[b]);
		if (e != cudaSuccess)
			break;
		/* a stopped or failed run of the helpers: the rest here, by this thread */
		if (gj_run_rows(stage_units, &c, 0, (int64_t) ((c.len + GJ_STAGE_UNIT - 1) / GJ_STAGE_UNIT),
						GJ_STAGE_THREADS) != GJ_OK)
			memcpy(c.dst, c.src, c.len);
		e = cudaMemcpyAsync((char *) dst + off, c.dst, c.len, cudaMemcpyHostToDevice, s);
		if (e == cudaSuccess)
			e = cudaEventRecord(ev[b], s);
	}
	{
		/* also after a failure: no DMA may still read a buffer given back */
		cudaError_t e2 = cudaStreamSynchronize(s);

		e = e == cudaSuccess ? e2 : e;
	}
	for (int b = 0; b < 2; b++)
	{
		if (ev[b] != NULL)
			cudaEventDestroy(ev[b]);
		gj_pinned_free(buf[b]);
	}
	return e;
}
