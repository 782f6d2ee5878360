/*
 * lists.cu
 *		Neighbour lists (eps_neighbors) on the GPU, streamed in the CPU list
 *		engine's chunks (src/core/cpu_lists.c): every row with the ids and
 *		distances of the rows within eps of it, itself left out, ordered by
 *		(distance, id).
 *
 * One run's device grid (density_run.cuh) counts every row's neighbours
 * first; the counts say where each list goes, so a chunk's rows write their
 * lists side by side with no atomics, each list after the GJ_LIST_GAP
 * entries the consumer writes its array header into.  Two stable segmented
 * sorts (CUB) order each list, by id and then by distance, so equal
 * distances keep the smaller id first; the chunk comes back into pinned
 * host memory that the consumer reads in place.  A thread of the engine
 * fills chunk after chunk while the backend emits the previous ones.
 *
 * A chunk holds at most GJ_CHUNK_PAIRS rows and its entries fit the device
 * buffers, which are sized for the longest list when it is longer than the
 * default: a list is never split.
 *
 * Rows beyond the device come in windows (gj_slabs_windows): p sorted
 * along one dimension, each window its own rows with every row within
 * reach of them; the window's grid lists its own rows only, so every row
 * is listed once, with all its neighbours.  The first window is indexed
 * before start returns (a device that cannot hold it fails the start); the
 * engine's thread indexes the others in turn.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cub/cub.cuh>

#include "density_run.cuh"

#define GJ_LISTS_ENTRIES ((int64_t) 1 << 20)	/* device and chunk entries, by default */
#define GJ_LISTS_CHUNKS 3			/* pinned chunks: one filling, the others emitted */
/* device bytes: d_off, d_beg, d_a and d_bad; an entry's in d_nb and d_nd (two each) */
#define GJ_LISTS_FIXED_BYTES (sizeof(int64_t) * (3 * (size_t) GJ_CHUNK_PAIRS + 1) + sizeof(int))
#define GJ_LISTS_ENTRY_BYTES (2 * (sizeof(int64_t) + sizeof(double)))

struct gj_gpu_lists
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	density_run r;				/* the open window's */
	const gj_points *p;
	double		eps2;
	gj_gpu_options opt;
	gj_slab_window *win;		/* the windows (a copy) */
	int64_t		nwin;
	int64_t		nown;			/* the open window's own rows */
	uint32_t   *own;			/* ... their sorted positions, NULL: all, in order */
	uint32_t   *d_own;
	int32_t    *counts;			/* ... their counts, itself included */
	int32_t    *all;			/* per sorted row of the window */
	int64_t		ncap;			/* entries a chunk holds */
	int64_t    *d_off;			/* GJ_CHUNK_PAIRS + 1: the chunk's list offsets */
	int64_t    *d_beg;			/* GJ_CHUNK_PAIRS: where each list's entries start */
	int64_t    *d_a;			/* GJ_CHUNK_PAIRS: the chunk's row ids */
	int64_t    *d_nb[2];		/* ids, before and after a sort */
	double	   *d_nd[2];		/* distances */
	int		   *d_bad;			/* a list that did not come out at its count's length */
	void	   *d_tmp;
	size_t		tmp_bytes;
	gj_chunk	pool[GJ_LISTS_CHUNKS];
	pthread_t	thread;
	int			started;
	int			stop;			/* atomic */
	int			device;			/* current at the start: the thread's too */
	gj_gpu_lists_info info;
	char		err[256];
};

/*
 * Own rows [r0, r0 + k) (own: their sorted positions, or NULL: the
 * sorted order itself) each write their id and their list: ids and
 * distances of every other row within eps, at d_off[i] + GJ_LIST_GAP.  A
 * list longer than its place (never, if the counts are right) is cut and
 * flagged rather than written past it.
 */
template <int DIMS>
__global__ static void
fill_kernel(gj_dev_grid G, gj_grid_params P, const uint32_t *own, int64_t r0, int64_t k,
			const int64_t *off, int64_t *beg, int64_t *a, int64_t *nb, double *nd, int *bad,
			const int *stop)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) k)
		return;
	uint32_t	i = own != NULL ? own[r0 + t] : (uint32_t) (r0 + t);
	point_reg<DIMS> xi(G, P.dims, i);
	int64_t		at = off[t] + GJ_LIST_GAP,
				end = off[t + 1];
	uint32_t	seen = 0;

	beg[t] = at;
	a[t] = G.ids[i];
	for_each_neighbour(G, P, G.pcell[i], [&](int64_t c) {
		for (uint32_t r = G.cell_start[c]; r < G.cell_start[c + 1]; r++)
		{
			double		s;

			if ((++seen & 1023) == 0 && gj_dev_stopped(stop))
				return false;
			if (r == i)
				continue;
			s = gj_dev_sqdist<DIMS>(xi.p, G.xs + (int64_t) r * P.dims, P.dims, P.eps2);
			if (s > P.eps2)
				continue;
			if (at == end)
			{
				*bad = 1;
				return false;
			}
			nb[at] = G.ids[r];
			nd[at] = sqrt(s);
			at++;
		}
		return true;
	});
	if (at != end && !gj_dev_stopped(stop))
		*bad = 1;
}

/* Wait for the stream; the engine's stop raises the kernels' stop word. */
static gj_status
lists_wait(gj_gpu_lists *j)
{
	for (unsigned spins = 0;; spins++)
	{
		cudaError_t e = cudaStreamQuery(j->r.stream);

		if (e == cudaSuccess)
			return GJ_OK;
		if (e != cudaErrorNotReady)
		{
			snprintf(j->err, sizeof(j->err), "list kernels: %s", cudaGetErrorName(e));
			cudaGetLastError();
			return GJ_ERR_CUDA;
		}
		if (__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
		{
			gj_gpu_stop_raise(j->r.d_stop, j->r.stop_stream);
			cudaStreamSynchronize(j->r.stream);
			cudaGetLastError();
			return GJ_ERR_CANCELED;
		}
		if (spins > 64)
			usleep(50);
	}
}

/* Fill, sort and bring back own rows [r0, r0 + ch->n) into ch. */
static gj_status
lists_chunk(gj_gpu_lists *j, int64_t r0, gj_chunk *ch)
{
	density_run *r = &j->r;
	int64_t		k = ch->n,
				total = ch->off[k];
	unsigned	grid = (unsigned) ((k + GJ_DENSITY_BLOCK - 1) / GJ_DENSITY_BLOCK);
	size_t		bytes = j->tmp_bytes;
	cudaError_t e;
	int			bad = 0;
	gj_status	st;

	e = cudaMemcpyAsync(j->d_off, ch->off, sizeof(int64_t) * (k + 1), cudaMemcpyHostToDevice,
						r->stream);
	if (e == cudaSuccess)
	{
		LAUNCH_DIMS(fill_kernel, j->p->dims, grid, r->stream, r->G, r->P,
					(const uint32_t *) j->d_own, r0, k, (const int64_t *) j->d_off, j->d_beg,
					j->d_a, j->d_nb[0], j->d_nd[0], j->d_bad, (const int *) r->d_stop);
		e = cudaGetLastError();
	}
	/* by id, then stably by distance: (distance, id) order */
	if (e == cudaSuccess)
		e = cub::DeviceSegmentedSort::StableSortPairs(j->d_tmp, bytes, j->d_nb[0], j->d_nb[1],
													  j->d_nd[0], j->d_nd[1], total, k,
													  j->d_beg, j->d_off + 1, r->stream);
	if (e == cudaSuccess)
		e = cub::DeviceSegmentedSort::StableSortPairs(j->d_tmp, bytes, j->d_nd[1], j->d_nd[0],
													  j->d_nb[1], j->d_nb[0], total, k,
													  j->d_beg, j->d_off + 1, r->stream);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(ch->nb, j->d_nb[0], sizeof(int64_t) * total,
							cudaMemcpyDeviceToHost, r->stream);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(ch->nd, j->d_nd[0], sizeof(double) * total,
							cudaMemcpyDeviceToHost, r->stream);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(ch->a, j->d_a, sizeof(int64_t) * k, cudaMemcpyDeviceToHost,
							r->stream);
	if (e != cudaSuccess)
	{
		snprintf(j->err, sizeof(j->err), "list chunk: %s", cudaGetErrorName(e));
		cudaGetLastError();
		return gj_cuda_status(e);
	}
	st = lists_wait(j);
	if (st == GJ_OK && cudaMemcpy(&bad, j->d_bad, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
	{
		snprintf(j->err, sizeof(j->err), "list check: %s", cudaGetErrorName(cudaGetLastError()));
		st = GJ_ERR_CUDA;
	}
	if (st == GJ_OK && bad)
	{
		snprintf(j->err, sizeof(j->err), "a list did not match its count");
		st = GJ_ERR_CUDA;
	}
	return st;
}

static gj_status lists_buffers(gj_gpu_lists *j, char *err, size_t errlen);
static gj_status lists_chunks(gj_gpu_lists *j, char *err, size_t errlen);
static void lists_device_free(gj_gpu_lists *j);
static size_t lists_device_bytes(const gj_gpu_lists *j);
static gj_status lists_buffer_bytes(gj_gpu_lists *j, int64_t ncap, size_t *bytes, char *err,
									size_t errlen);

/*
 * Index window w and count its rows; the own rows' sorted positions and
 * counts.  From the engine's thread (in_thread: its stop ends the waits),
 * or the caller's for the first window.  Buffers grow to the longest list.
 */
static gj_status
window_open(gj_gpu_lists *j, int64_t w, int in_thread, char *err, size_t errlen)
{
	const gj_slab_window *win = &j->win[w];
	density_run *r = &j->r;
	gj_points	view;
	gj_gpu_density_info di;
	int64_t		n = win->w1 - win->w0,
				longest = 0;
	int			whole = win->o0 == win->w0 && win->o1 == win->w1;
	uint32_t   *perm = NULL;
	gj_status	st;
	cudaError_t e;

	run_free(r);
	memset(r, 0, sizeof(*r));
	cudaFree(j->d_own);
	j->d_own = NULL;
	free(j->own);
	j->own = NULL;
	j->nown = 0;
	gj_points_view(&view, j->p, win->w0, win->w1);
	memset(&di, 0, sizeof(di));
	/* gpujoin.gpu_memory_limit covers the lists' own buffers too */
	{
		gj_gpu_options o = j->opt;
		size_t		own_bytes = lists_device_bytes(j);

		if (o.memory_limit > 0)
			o.memory_limit = o.memory_limit > own_bytes ? o.memory_limit - own_bytes : 1;
		st = run_prepare(r, &view, j->eps2, &o, 0, 0, &di, err, errlen);
	}
	j->info.index_ms += di.index_ms;
	if (st != GJ_OK)
		return st;
	free(j->all);
	free(j->counts);
	j->all = (int32_t *) malloc(sizeof(int32_t) * n);
	j->counts = (int32_t *) malloc(sizeof(int32_t) * (win->o1 - win->o0 + 1));
	if (!whole)
	{
		perm = (uint32_t *) malloc(sizeof(uint32_t) * n);
		j->own = (uint32_t *) malloc(sizeof(uint32_t) * (win->o1 - win->o0 + 1));
	}
	if (j->all == NULL || j->counts == NULL || (!whole && (perm == NULL || j->own == NULL)))
	{
		free(perm);
		return GJ_ERR_NOMEM;
	}
	run_launch_counts(r, view.dims, INT32_MAX);
	e = cudaGetLastError();
	if (e != cudaSuccess)
	{
		snprintf(err, errlen, "count kernel launch: %s", cudaGetErrorName(e));
		free(perm);
		return GJ_ERR_CUDA;
	}
	st = in_thread ? lists_wait(j) : gj_gpu_wait(r->stream, r->d_stop, r->stop_stream, err, errlen);
	if (st == GJ_OK)
	{
		e = cudaMemcpy(j->all, r->d_val, sizeof(int32_t) * n, cudaMemcpyDeviceToHost);
		if (e == cudaSuccess && !whole)
			e = cudaMemcpy(perm, r->G.perm, sizeof(uint32_t) * n, cudaMemcpyDeviceToHost);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "counts download: %s", cudaGetErrorName(e));
			st = GJ_ERR_CUDA;
		}
	}
	/* the own rows, in the sorted order */
	for (int64_t t = 0; st == GJ_OK && t < n; t++)
	{
		int64_t		row = win->w0 + (whole ? t : (int64_t) perm[t]);

		if (row < win->o0 || row >= win->o1)
			continue;
		if (!whole)
			j->own[j->nown] = (uint32_t) t;
		j->counts[j->nown++] = j->all[t];
		j->info.entries += j->all[t] - 1;
		if (j->all[t] > longest)
			longest = j->all[t];
	}
	free(perm);
	if (st == GJ_OK && j->nown != win->o1 - win->o0)
	{
		snprintf(err, errlen, "window %lld: %lld own rows, expected %lld", (long long) w,
				 (long long) j->nown, (long long) (win->o1 - win->o0));
		st = GJ_ERR_CUDA;
	}
	if (st == GJ_OK && !whole)
	{
		e = cudaMalloc(&j->d_own, sizeof(uint32_t) * (j->nown + 1));
		if (e == cudaSuccess)
			e = cudaMemcpy(j->d_own, j->own, sizeof(uint32_t) * j->nown, cudaMemcpyHostToDevice);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "own rows upload: %s", cudaGetErrorName(e));
			cudaGetLastError();
			st = gj_cuda_status(e);
		}
	}
	if (st == GJ_OK && GJ_LIST_GAP + longest - 1 > j->ncap)
	{
		/* a longer list than the buffers hold: larger ones, every chunk back first */
		gj_chunk   *held[GJ_LISTS_CHUNKS];
		int			got = 0;

		if (j->eng.q != NULL)
			for (; got < GJ_LISTS_CHUNKS; got++)
				if ((held[got] = gj_queue_get_free(j->eng.q)) == NULL)
					break;
		if (j->eng.q != NULL && got < GJ_LISTS_CHUNKS)
			st = GJ_ERR_CANCELED;
		if (st == GJ_OK)
		{
			/* the larger buffers must fit what the window's budget leaves */
			size_t		now = lists_device_bytes(j) - GJ_LISTS_FIXED_BYTES,
						want = 0;

			st = lists_buffer_bytes(j, GJ_LIST_GAP + longest - 1, &want, err, errlen);
			if (st == GJ_OK && want > now && want - now > r->room)
			{
				snprintf(err, errlen, "a neighbour list of %lld entries needs %zu MB more GPU memory, %zu MB are left",
						 (long long) longest - 1, (want - now) >> 20, r->room >> 20);
				st = GJ_ERR_DEVICE_OOM;
			}
		}
		if (st == GJ_OK)
		{
			j->ncap = GJ_LIST_GAP + longest - 1;
			lists_device_free(j);
			st = lists_buffers(j, err, errlen);
		}
		if (st == GJ_OK && j->eng.q != NULL)
			for (int c = 0; c < got; c++)
				j->pool[c] = *held[c];	/* the queue's copies: their blocks */
		if (st == GJ_OK)
			st = lists_chunks(j, err, errlen);
		if (j->eng.q != NULL)
			for (int c = 0; c < got; c++)
			{
				if (st == GJ_OK)
				{
					gj_chunk   *next = held[c]->next;

					*held[c] = j->pool[c];
					held[c]->next = next;
				}
				held[c]->n = 0;
				gj_queue_put_full(j->eng.q, held[c]);	/* empty: back to the pool */
			}
	}
	return st;
}

/* The engine's thread: window after window, chunk after chunk of own rows. */
static void *
lists_main(void *arg)
{
	gj_gpu_lists *j = (gj_gpu_lists *) arg;
	gj_pair_queue *q = j->eng.q;
	gj_status	st = GJ_OK;

	/* a thread's device is 0 until set: run where the engine was made */
	if (cudaSetDevice(j->device) != cudaSuccess)
	{
		cudaGetLastError();
		st = GJ_ERR_CUDA;
		snprintf(j->err, sizeof(j->err), "cudaSetDevice(%d) failed", j->device);
	}

	for (int64_t w = 0; w < j->nwin && st == GJ_OK; w++)
	{
		int64_t		row = 0;

		if (w > 0)
			st = window_open(j, w, 1, j->err, sizeof(j->err));
		while (st == GJ_OK && row < j->nown && !__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
		{
			gj_chunk   *ch = gj_queue_get_free(q);
			int64_t		k = 0;
			double		t0 = gj_now_ms();

			if (ch == NULL)
			{
				st = GJ_ERR_CANCELED;
				break;
			}
			ch->off[0] = 0;
			while (row + k < j->nown && k < ch->cap)
			{
				int64_t		len = GJ_LIST_GAP + j->counts[row + k] - 1;

				if (k > 0 && ch->off[k] + len > j->ncap)
					break;
				ch->off[k + 1] = ch->off[k] + len;
				k++;
			}
			ch->n = (int32_t) k;
			st = lists_chunk(j, row, ch);
			j->info.chunk_ms += gj_now_ms() - t0;
			if (st != GJ_OK)
			{
				ch->n = 0;
				gj_queue_put_full(q, ch);
				break;
			}
			j->info.chunks++;
			row += k;
			gj_queue_put_full(q, ch);
		}
		if (__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
			st = GJ_ERR_CANCELED;
	}
	if (st != GJ_OK && st != GJ_ERR_CANCELED)
		gj_engine_fail(&j->eng, st);
	j->info.done_ms = gj_now_ms();
	gj_queue_producer_done(q);
	return NULL;
}

static void
lists_device_free(gj_gpu_lists *j)
{
	if (j->r.stream)
		cudaStreamSynchronize(j->r.stream);
	cudaFree(j->d_tmp);
	j->d_tmp = NULL;
	for (int b = 0; b < 2; b++)
	{
		cudaFree(j->d_nb[b]);
		cudaFree(j->d_nd[b]);
		j->d_nb[b] = NULL;
		j->d_nd[b] = NULL;
	}
}

static void
lists_free(gj_engine *e)
{
	gj_gpu_lists *j = (gj_gpu_lists *) e;

	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	if (j->eng.q != NULL)
		gj_queue_cancel(j->eng.q);
	if (j->started)
		pthread_join(j->thread, NULL);
	lists_device_free(j);
	cudaFree(j->d_off);
	cudaFree(j->d_beg);
	cudaFree(j->d_a);
	cudaFree(j->d_bad);
	cudaFree(j->d_own);
	run_free(&j->r);
	for (int c = 0; c < GJ_LISTS_CHUNKS; c++)
		if (j->pool[c].a != NULL)
			gj_pinned_free(j->pool[c].a);
	gj_queue_destroy(j->eng.q);
	free(j->counts);
	free(j->all);
	free(j->own);
	free(j->win);
	free(j);
}

/* The per-chunk device arrays, once. */
static gj_status
lists_fixed(gj_gpu_lists *j, char *err, size_t errlen)
{
	int64_t		rows = GJ_CHUNK_PAIRS;

	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_off, sizeof(int64_t) * (rows + 1)));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_beg, sizeof(int64_t) * rows));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_a, sizeof(int64_t) * rows));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_bad, sizeof(int)));
	GJ_CUDA_CHECK(err, errlen, cudaMemset(j->d_bad, 0, sizeof(int)));
	return GJ_OK;
}

/* Device bytes the lists hold beside the window's run (its budget must leave them). */
static size_t
lists_device_bytes(const gj_gpu_lists *j)
{
	return (j->d_off != NULL ? GJ_LISTS_FIXED_BYTES : 0) +
		(j->d_nb[0] != NULL ? GJ_LISTS_ENTRY_BYTES * (size_t) j->ncap + j->tmp_bytes : 0);
}

/* CUB's temporary bytes for both sorts of up to ncap entries (size queries: no pointer is read). */
static cudaError_t
sort_tmp_bytes(int64_t ncap, const int64_t *beg, const int64_t *end, cudaStream_t stream,
			   size_t *bytes)
{
	size_t		b1 = 0,
				b2 = 0;
	cudaError_t e;

	e = cub::DeviceSegmentedSort::StableSortPairs((void *) NULL, b1, (int64_t *) NULL,
												  (int64_t *) NULL, (double *) NULL,
												  (double *) NULL, ncap, GJ_CHUNK_PAIRS, beg, end,
												  stream);
	if (e == cudaSuccess)
		e = cub::DeviceSegmentedSort::StableSortPairs((void *) NULL, b2, (double *) NULL,
													  (double *) NULL, (int64_t *) NULL,
													  (int64_t *) NULL, ncap, GJ_CHUNK_PAIRS, beg,
													  end, stream);
	*bytes = b1 > b2 ? b1 : b2;
	return e;
}

/* The bytes lists_buffers would take for lists of up to ncap entries. */
static gj_status
lists_buffer_bytes(gj_gpu_lists *j, int64_t ncap, size_t *bytes, char *err, size_t errlen)
{
	size_t		tmp = 0;

	GJ_CUDA_CHECK(err, errlen, sort_tmp_bytes(ncap, j->d_beg, j->d_off + 1, j->r.stream, &tmp));
	*bytes = GJ_LISTS_ENTRY_BYTES * (size_t) ncap + tmp;
	return GJ_OK;
}

/*
 * Entries the buffers start with under a memory limit (0: none): 1M, or
 * fewer, to keep the buffers within an eighth of the limit (a longer list
 * grows them, if the window's budget leaves the room); *bytes what they
 * take with the fixed arrays.
 */
static int64_t
start_entries(size_t memory_limit, size_t *bytes)
{
	int64_t		ncap = GJ_LISTS_ENTRIES;

	for (;;)
	{
		size_t		tmp = 0;

		if (sort_tmp_bytes(ncap, NULL, NULL, 0, &tmp) != cudaSuccess)
			cudaGetLastError();
		*bytes = GJ_LISTS_FIXED_BYTES + GJ_LISTS_ENTRY_BYTES * (size_t) ncap + tmp;
		if (memory_limit == 0 || *bytes <= memory_limit / 8 || ncap <= (1 << 16))
			return ncap;
		ncap /= 2;
	}
}

extern "C" size_t
gj_gpu_lists_device_bytes(size_t memory_limit)
{
	size_t		bytes;

	(void) start_entries(memory_limit, &bytes);
	return bytes;
}

/* Device list buffers and the sorts' room for lists of up to j->ncap entries. */
static gj_status
lists_buffers(gj_gpu_lists *j, char *err, size_t errlen)
{
	for (int b = 0; b < 2; b++)
	{
		GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_nb[b], sizeof(int64_t) * j->ncap));
		GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_nd[b], sizeof(double) * j->ncap));
	}
	GJ_CUDA_CHECK(err, errlen, sort_tmp_bytes(j->ncap, j->d_beg, j->d_off + 1, j->r.stream,
											  &j->tmp_bytes));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_tmp, j->tmp_bytes));
	return GJ_OK;
}

/* Pinned chunks (j->pool) for lists of up to j->ncap entries, old blocks freed. */
static gj_status
lists_chunks(gj_gpu_lists *j, char *err, size_t errlen)
{
	int64_t		rows = GJ_CHUNK_PAIRS;
	size_t		chunk_bytes = sizeof(int64_t) * (2 * rows + 1) + 16 * (size_t) j->ncap;

	for (int c = 0; c < GJ_LISTS_CHUNKS; c++)
	{
		gj_chunk   *ch = &j->pool[c];
		void	   *block = NULL;
		cudaError_t e;
		char	   *m;

		if (ch->a != NULL)
			gj_pinned_free(ch->a);
		ch->a = NULL;
		e = gj_pinned_alloc(&block, chunk_bytes);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "pinned list chunks: %s", cudaGetErrorName(e));
			cudaGetLastError();
			return GJ_ERR_NOMEM;
		}
		m = (char *) block;
		ch->cap = (int32_t) rows;
		ch->a = (int64_t *) m;
		ch->off = ch->a + rows;
		ch->nb = ch->off + rows + 1;
		ch->nd = (double *) (ch->nb + j->ncap);
		ch->ncap = j->ncap;
	}
	return GJ_OK;
}

/* The engine interface's hooks (gj_core.h): what failed, what ran. */
static const char *
lists_error_text(const gj_engine *e)
{
	return gj_gpu_lists_error((const gj_gpu_lists *) e);
}

static void
lists_report(const gj_engine *e, gj_engine_report *r)
{
	gj_gpu_lists_info li;

	gj_gpu_lists_stats((const gj_gpu_lists *) e, &li);
	r->batches = li.chunks;
	r->done_ms = li.done_ms;
}

/* Start over the windows given (a copy is kept), or all of p at once when win is NULL. */
static gj_status
lists_start(const gj_points *p, double eps2, const gj_gpu_options *opt,
			const gj_slab_window *win, int64_t nwin, gj_gpu_lists **out,
			char *err, size_t errlen)
{
	gj_gpu_lists *j;
	double		t0 = gj_now_ms();
	gj_status	st = GJ_OK;
	sigset_t	old;

	*out = NULL;
	err[0] = '\0';
	if (p->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	if (!(eps2 >= 0.0) || p->dims < 1 || p->dims > GJ_MAX_DIMS)
		return GJ_ERR_ARG;
	j = (gj_gpu_lists *) calloc(1, sizeof(gj_gpu_lists));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = lists_free;
	j->eng.on_gpu = 1;
	j->eng.error_text = lists_error_text;
	j->eng.report = lists_report;
	j->p = p;
	j->eps2 = eps2;
	if (opt != NULL)
		j->opt = *opt;
	{
		size_t		bytes;

		j->ncap = start_entries(j->opt.memory_limit, &bytes);
	}
	j->nwin = p->n == 0 ? 0 : win != NULL ? nwin : 1;
	j->win = (gj_slab_window *) malloc(sizeof(gj_slab_window) * (j->nwin + 1));
	if (j->win == NULL)
		st = GJ_ERR_NOMEM;
	else if (win != NULL)
		memcpy(j->win, win, sizeof(gj_slab_window) * j->nwin);
	else
		j->win[0] = (gj_slab_window) {0, p->n, 0, p->n};
	if (st == GJ_OK && j->nwin > 0)
		st = lists_fixed(j, err, errlen);
	if (st == GJ_OK && j->nwin > 0)
		st = lists_buffers(j, err, errlen);
	if (st == GJ_OK && j->nwin > 0)
		st = lists_chunks(j, err, errlen);
	if (st == GJ_OK && j->nwin > 0)
		st = window_open(j, 0, 0, err, errlen);	/* may grow the buffers */
	if (st == GJ_OK)
	{
		j->eng.q = gj_queue_create_external(j->pool, GJ_LISTS_CHUNKS);
		if (j->eng.q == NULL)
			st = GJ_ERR_NOMEM;
	}
	if (st == GJ_OK)
	{
		gj_queue_set_producers(j->eng.q, 1);
		if (cudaGetDevice(&j->device) != cudaSuccess)
			cudaGetLastError();
		gj_block_async_signals(&old);
		if (pthread_create(&j->thread, NULL, lists_main, j) == 0)
			j->started = 1;
		else
			st = GJ_ERR_THREAD;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	j->info.windows = j->nwin;
	j->info.start_ms = gj_now_ms() - t0;
	if (st != GJ_OK)
	{
		cudaGetLastError();
		lists_free(&j->eng);
		return st;
	}
	*out = j;
	return GJ_OK;
}

extern "C" gj_status
gj_gpu_lists_start(const gj_points *p, double eps2, const gj_gpu_options *opt,
				   gj_gpu_lists **out, char *err, size_t errlen)
{
	return lists_start(p, eps2, opt, NULL, 0, out, err, errlen);
}

extern "C" gj_status
gj_gpu_lists_start_windows(const gj_points *p, double eps2, const gj_gpu_options *opt,
						   const gj_slab_window *win, int64_t nwin, gj_gpu_lists **out,
						   char *err, size_t errlen)
{
	return lists_start(p, eps2, opt, win, nwin, out, err, errlen);
}

extern "C" void
gj_gpu_lists_stats(const gj_gpu_lists *j, gj_gpu_lists_info *info)
{
	*info = j->info;
	info->device_bytes = (int64_t) lists_device_bytes(j);
}

extern "C" const char *
gj_gpu_lists_error(const gj_gpu_lists *j)
{
	return j->err;
}
