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
