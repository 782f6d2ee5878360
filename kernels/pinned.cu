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
#include <signal.h>
#include <stddef.h>
#include <string.h>

#include "gpu_common.cuh"

/*
 * Slots for the blocks a join holds at once: its batch buffers, and the
 * staged upload's copiers' two chunks each (16 blocks for one engine, 32
 * for a team of two in one process, of a smaller size: gj_upload_staged_by;
 * a process that joins on one GPU and on two keeps both sizes).  A block
 * with no slot is freed with cudaFreeHost when it comes back and pinned
 * again by the next join: with 16 slots, the kNN engine's 1 GB upload
 * behind its batch buffers took 36-40 ms on the H200, with 64 slots 22-24.
 */
#define GJ_PINNED_SLOTS 96
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

#define GJ_STAGE_PIECE ((size_t) 4 << 20)	/* a copier's pinned chunk */
#define GJ_STAGE_SHARED_PIECE ((size_t) 1 << 20)	/* ... in a team's upload */
#define GJ_STAGE_MIN ((size_t) 64 << 20)	/* smaller uploads: one plain copy */
#define GJ_STAGE_THREADS 8
#define GJ_STAGE_MAX_THREADS 32

/* the staging's shape, set only by the benchmarks (gj_upload_tune) */
static size_t stage_piece = GJ_STAGE_PIECE;
static int	stage_threads = GJ_STAGE_THREADS;
static size_t shared_piece = 0;	/* a team member's: 0, GJ_STAGE_SHARED_PIECE */
static int	shared_threads = 0;	/* ... 0, as many as alone */

/*
 * The piece size and copiers an upload uses from now on (0: the default),
 * alone and as one of a team's (gj_upload_staged_by), for
 * regress/gpu/gpu_team's upload table and bench; the engines never call
 * it.  Not for a running upload.
 */
void
gj_upload_tune(size_t piece, int threads, size_t team_piece, int team_threads)
{
	stage_piece = piece >= 4096 ? piece : GJ_STAGE_PIECE;
	stage_threads = threads >= 1 && threads <= GJ_STAGE_MAX_THREADS ? threads : GJ_STAGE_THREADS;
	shared_piece = team_piece >= 4096 ? team_piece : 0;
	shared_threads = team_threads >= 1 && team_threads <= GJ_STAGE_MAX_THREADS ? team_threads : 0;
}

typedef struct stage_run
{
	char	   *dst;
	const char *src;
	size_t		bytes;
	size_t		piece;			/* each DMA's bytes, and a copier's chunks' */
	cudaStream_t s;
	int			device;
	size_t		next;			/* atomic: the next piece's offset */
	int			failed;			/* atomic: a copier's DMA failed */
	cudaError_t err;			/* the first failure (under failed) */
} stage_run;

/*
 * One copier: pieces from the shared cursor, each copied into one of its
 * own two pinned chunks and sent by DMA on the run's stream, the other
 * chunk filled meanwhile.  A copier with no pinned chunks sends its pieces
 * from pageable memory (the driver stages them, more slowly).
 */
static void *
stage_copier(void *arg)
{
	stage_run  *r = (stage_run *) arg;
	void	   *buf[2] = {NULL, NULL};
	cudaEvent_t ev[2] = {NULL, NULL};
	cudaError_t e = cudaSetDevice(r->device);
	int			pinned = e == cudaSuccess;

	for (int b = 0; b < 2 && pinned; b++)
		pinned = gj_pinned_alloc(&buf[b], r->piece) == cudaSuccess &&
			cudaEventCreateWithFlags(&ev[b], cudaEventDisableTiming) == cudaSuccess;
	cudaGetLastError();
	for (int i = 0; e == cudaSuccess; i++)
	{
		size_t		off = __atomic_fetch_add(&r->next, r->piece, __ATOMIC_RELAXED);
		size_t		len;
		int			b = i % 2;

		if (off >= r->bytes || __atomic_load_n(&r->failed, __ATOMIC_RELAXED))
			break;
		len = r->bytes - off < r->piece ? r->bytes - off : r->piece;
		if (!pinned)
		{
			e = cudaMemcpyAsync(r->dst + off, r->src + off, len, cudaMemcpyHostToDevice, r->s);
			continue;
		}
		/* the chunk's last DMA is done before it is refilled */
		if (i >= 2)
			e = cudaEventSynchronize(ev[b]);
		if (e != cudaSuccess)
			break;
		memcpy(buf[b], r->src + off, len);
		e = cudaMemcpyAsync(r->dst + off, buf[b], len, cudaMemcpyHostToDevice, r->s);
		if (e == cudaSuccess)
			e = cudaEventRecord(ev[b], r->s);
	}
	if (e != cudaSuccess && !__atomic_exchange_n(&r->failed, 1, __ATOMIC_RELAXED))
		r->err = e;
	/* also after a failure: no DMA may still read a chunk given back */
	cudaStreamSynchronize(r->s);
	for (int b = 0; b < 2; b++)
	{
		if (ev[b] != NULL)
			cudaEventDestroy(ev[b]);
		gj_pinned_free(buf[b]);
	}
	cudaGetLastError();
	return NULL;
}

/* Whether [p, p + bytes) starts and ends in page-locked host memory (a DMA reads it directly). */
static int
host_pinned(const void *p, size_t bytes)
{
	cudaPointerAttributes a,
				z;

	if (cudaPointerGetAttributes(&a, p) != cudaSuccess ||
		cudaPointerGetAttributes(&z, (const char *) p + bytes - 1) != cudaSuccess)
	{
		cudaGetLastError();
		return 0;
	}
	return a.type == cudaMemoryTypeHost && z.type == cudaMemoryTypeHost;
}

/*
 * bytes from host memory src to device memory dst, on s, and waited for.
 * A copy from pageable memory is staged by the driver through its own
 * pinned buffer by one thread: about 7 GB/s on the H100 host, 140 ms of
 * the kNN engine's start for 1M x 128 rows.  Here GJ_STAGE_THREADS
 * copiers each fill their own two pinned chunks from a shared cursor of
 * pieces and queue the DMAs on s, so the host's copies run side by side
 * and behind the DMA.  The earlier loop filled one 32 MB chunk at a time
 * with helper threads started for each chunk, waiting for them all before
 * the chunk's DMA.  1 GB on the H200 host (gpu_team upload): 22-23 ms
 * against the earlier 32-39, the DMA alone 19.5.  Page-locking the rows in
 * place instead (cudaHostRegister) took 26-55 ms a GB before the DMA and
 * 18-21 to undo.  Memory that is already page-locked goes by one DMA.
 */
cudaError_t
gj_upload_staged(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
	return gj_upload_staged_by(dst, src, bytes, s, false);
}

/*
 * gj_upload_staged, or (shared) as one of several uploads running at once
 * (a team's members, each its own part), in smaller pieces.  On the two-H200 host
 * (gpu_team upload, the pinned cache emptied before each shape), two
 * halves of 1 GB at once, 8 copiers each, then copied across: 14.4-17.9
 * ms in 1 MB pieces, 16.9-18.6 in 4 MB (one GPU alone, the whole GB:
 * 23.3-24.5 in 1 MB pieces, 20.9-21.4 in 4 MB, so alone they stay 4 MB).
 * In the kNN team's start (gpu_team bench, by blocks, three runs each in
 * one call) 1 MB pieces gave 1.81-1.84x one GPU, 4 MB and 4 copiers a
 * member 1.75-1.81x.
 */
cudaError_t
gj_upload_staged_by(void *dst, const void *src, size_t bytes, cudaStream_t s, bool shared)
{
	stage_run	r;
	pthread_t	th[GJ_STAGE_MAX_THREADS];
	sigset_t	old;
	int			started = 0,
				copiers;
	cudaError_t e;

	if (bytes < GJ_STAGE_MIN || host_pinned(src, bytes))
	{
		e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(s);
		return e;
	}
	memset(&r, 0, sizeof(r));
	r.dst = (char *) dst;
	r.src = (const char *) src;
	r.bytes = bytes;
	r.piece = !shared ? stage_piece : shared_piece > 0 ? shared_piece : GJ_STAGE_SHARED_PIECE;
	r.s = s;
	r.err = cudaSuccess;
	e = cudaGetDevice(&r.device);
	if (e != cudaSuccess)
		return e;
	/* the copiers take no signal: the backend's handlers run on its own thread */
	gj_block_async_signals(&old);
	copiers = shared && shared_threads > 0 ? shared_threads : stage_threads;
	for (int t = 1; t < copiers; t++, started++)
		if (pthread_create(&th[started], NULL, stage_copier, &r) != 0)
			break;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	stage_copier(&r);
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	e = cudaStreamSynchronize(s);
	return r.failed ? r.err : e;
}
