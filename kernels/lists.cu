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

struct gj_gpu_lists
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	density_run r;
	int64_t		n;
	int			dims;
	int32_t    *counts;			/* per sorted row, itself included */
	int64_t		ncap;			/* entries a chunk holds */
	int64_t    *d_off;			/* GJ_CHUNK_PAIRS + 1: the chunk's list offsets */
	int64_t    *d_beg;			/* GJ_CHUNK_PAIRS: where each list's entries start */
	int64_t    *d_nb[2];		/* ids, before and after a sort */
	double	   *d_nd[2];		/* distances */
	int		   *d_bad;			/* a list that did not come out at its count's length */
	void	   *d_tmp;
	size_t		tmp_bytes;
	gj_chunk	pool[GJ_LISTS_CHUNKS];
	void	   *pinned[GJ_LISTS_CHUNKS];
	pthread_t	thread;
	int			started;
	int			stop;			/* atomic */
	gj_gpu_lists_info info;
	char		err[256];
};

/*
 * Rows [r0, r0 + k) of the sorted order each write their list: ids and
 * distances of every other row within eps, at d_off[i] + GJ_LIST_GAP.  A
 * list longer than its place (never, if the counts are right) is cut and
 * flagged rather than written past it.
 */
template <int DIMS>
__global__ static void
fill_kernel(gj_dev_grid G, gj_grid_params P, uint32_t r0, int64_t k, const int64_t *off,
			int64_t *beg, int64_t *nb, double *nd, int *bad, const int *stop)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) k)
		return;
	uint32_t	i = r0 + (uint32_t) t;
	point_reg<DIMS> xi(G, P.dims, i);
	int64_t		at = off[t] + GJ_LIST_GAP,
				end = off[t + 1];
	uint32_t	seen = 0;

	beg[t] = at;
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

/* Fill, sort and bring back rows [r0, r0 + ch->n) into ch. */
static gj_status
lists_chunk(gj_gpu_lists *j, uint32_t r0, gj_chunk *ch)
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
		LAUNCH_DIMS(fill_kernel, j->dims, grid, r->stream, r->G, r->P, r0, k,
					(const int64_t *) j->d_off, j->d_beg, j->d_nb[0], j->d_nd[0], j->d_bad,
					(const int *) r->d_stop);
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
		e = cudaMemcpyAsync(ch->a, r->G.ids + r0, sizeof(int64_t) * k,
							cudaMemcpyDeviceToHost, r->stream);
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

/* The engine's thread: chunk after chunk of consecutive sorted rows. */
static void *
lists_main(void *arg)
{
	gj_gpu_lists *j = (gj_gpu_lists *) arg;
	gj_pair_queue *q = j->eng.q;
	int64_t		row = 0;
	gj_status	st = GJ_OK;

	while (row < j->n && st == GJ_OK && !__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
	{
		gj_chunk   *ch = gj_queue_get_free(q);
		int64_t		k = 0;
		double		t0 = gj_now_ms();

		if (ch == NULL)
			break;				/* cancelled */
		ch->off[0] = 0;
		while (row + k < j->n && k < ch->cap)
		{
			int64_t		len = GJ_LIST_GAP + j->counts[row + k] - 1;

			if (k > 0 && ch->off[k] + len > j->ncap)
				break;
			ch->off[k + 1] = ch->off[k] + len;
			k++;
		}
		ch->n = (int32_t) k;
		st = lists_chunk(j, (uint32_t) row, ch);
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
	if (st != GJ_OK && st != GJ_ERR_CANCELED)
		gj_engine_fail(&j->eng, st);
	j->info.done_ms = gj_now_ms();
	gj_queue_producer_done(q);
	return NULL;
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
	if (j->r.stream)
		cudaStreamSynchronize(j->r.stream);
	cudaFree(j->d_off);
	cudaFree(j->d_beg);
	cudaFree(j->d_bad);
	cudaFree(j->d_tmp);
	for (int b = 0; b < 2; b++)
	{
		cudaFree(j->d_nb[b]);
		cudaFree(j->d_nd[b]);
	}
	run_free(&j->r);
	for (int c = 0; c < GJ_LISTS_CHUNKS; c++)
		if (j->pinned[c] != NULL)
			gj_pinned_free(j->pinned[c]);
	gj_queue_destroy(j->eng.q);
	free(j->counts);
	free(j);
}

/* Device buffers and pinned chunks for lists of up to j->ncap entries. */
static gj_status
lists_buffers(gj_gpu_lists *j, char *err, size_t errlen)
{
	int64_t		rows = GJ_CHUNK_PAIRS;
	size_t		chunk_bytes = sizeof(int64_t) * (2 * rows + 1) + 16 * (size_t) j->ncap;
	cudaError_t e;

	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_off, sizeof(int64_t) * (rows + 1)));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_beg, sizeof(int64_t) * rows));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_bad, sizeof(int)));
	GJ_CUDA_CHECK(err, errlen, cudaMemsetAsync(j->d_bad, 0, sizeof(int), j->r.stream));
	for (int b = 0; b < 2; b++)
	{
		GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_nb[b], sizeof(int64_t) * j->ncap));
		GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_nd[b], sizeof(double) * j->ncap));
	}
	GJ_CUDA_CHECK(err, errlen,
				  cub::DeviceSegmentedSort::StableSortPairs((void *) NULL, j->tmp_bytes,
															j->d_nb[0], j->d_nb[1], j->d_nd[0],
															j->d_nd[1], j->ncap, rows, j->d_beg,
															j->d_off + 1, j->r.stream));
	{
		size_t		b2 = 0;

		GJ_CUDA_CHECK(err, errlen,
					  cub::DeviceSegmentedSort::StableSortPairs((void *) NULL, b2,
																j->d_nd[1], j->d_nd[0],
																j->d_nb[1], j->d_nb[0], j->ncap,
																rows, j->d_beg, j->d_off + 1,
																j->r.stream));
		if (b2 > j->tmp_bytes)
			j->tmp_bytes = b2;
	}
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_tmp, j->tmp_bytes));
	for (int c = 0; c < GJ_LISTS_CHUNKS; c++)
	{
		gj_chunk   *ch = &j->pool[c];
		char	   *m;

		e = gj_pinned_alloc(&j->pinned[c], chunk_bytes);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "pinned list chunks: %s", cudaGetErrorName(e));
			cudaGetLastError();
			return GJ_ERR_NOMEM;
		}
		m = (char *) j->pinned[c];
		ch->cap = (int32_t) rows;
		ch->a = (int64_t *) m;
		ch->off = ch->a + rows;
		ch->nb = ch->off + rows + 1;
		ch->nd = (double *) (ch->nb + j->ncap);
		ch->ncap = j->ncap;
	}
	return GJ_OK;
}

extern "C" gj_status
gj_gpu_lists_start(const gj_points *p, double eps2, const gj_gpu_options *opt,
				   gj_gpu_lists **out, char *err, size_t errlen)
{
	gj_gpu_lists *j;
	gj_gpu_density_info di;
	int64_t		n = p->n,
				longest = 0;
	double		t0 = gj_now_ms();
	gj_status	st;
	sigset_t	old;

	*out = NULL;
	err[0] = '\0';
	if (n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	if (!(eps2 >= 0.0) || p->dims < 1 || p->dims > GJ_MAX_DIMS)
		return GJ_ERR_ARG;
	j = (gj_gpu_lists *) calloc(1, sizeof(gj_gpu_lists));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = lists_free;
	j->n = n;
	j->dims = p->dims;
	memset(&di, 0, sizeof(di));
	st = n > 0 ? run_prepare(&j->r, p, eps2, opt, 0, 0, &di, err, errlen) : GJ_OK;

	/* every row's count, in the sorted order */
	if (st == GJ_OK && n > 0)
	{
		j->counts = (int32_t *) malloc(sizeof(int32_t) * n);
		if (j->counts == NULL)
			st = GJ_ERR_NOMEM;
	}
	if (st == GJ_OK && n > 0)
	{
		cudaError_t e;

		run_launch_counts(&j->r, p->dims, INT32_MAX);
		e = cudaGetLastError();
		if (e == cudaSuccess)
			st = gj_gpu_wait(j->r.stream, j->r.d_stop, j->r.stop_stream, err, errlen);
		else
		{
			snprintf(err, errlen, "count kernel launch: %s", cudaGetErrorName(e));
			st = GJ_ERR_CUDA;
		}
		if (st == GJ_OK)
		{
			e = cudaMemcpy(j->counts, j->r.d_val, sizeof(int32_t) * n, cudaMemcpyDeviceToHost);
			if (e != cudaSuccess)
			{
				snprintf(err, errlen, "counts download: %s", cudaGetErrorName(e));
				st = GJ_ERR_CUDA;
			}
		}
		for (int64_t i = 0; st == GJ_OK && i < n; i++)
		{
			j->info.entries += j->counts[i] - 1;
			if (j->counts[i] > longest)
				longest = j->counts[i];
		}
	}
	j->ncap = GJ_LIST_GAP + longest - 1 > GJ_LISTS_ENTRIES ? GJ_LIST_GAP + longest - 1 :
		GJ_LISTS_ENTRIES;
	if (st == GJ_OK && n > 0)
		st = lists_buffers(j, err, errlen);
	if (st == GJ_OK)
	{
		j->eng.q = gj_queue_create_external(j->pool, GJ_LISTS_CHUNKS);
		if (j->eng.q == NULL)
			st = GJ_ERR_NOMEM;
	}
	if (st == GJ_OK)
	{
		gj_queue_set_producers(j->eng.q, 1);
		gj_block_async_signals(&old);
		if (pthread_create(&j->thread, NULL, lists_main, j) == 0)
			j->started = 1;
		else
			st = GJ_ERR_THREAD;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	j->info.index_ms = di.index_ms;
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

extern "C" void
gj_gpu_lists_stats(const gj_gpu_lists *j, gj_gpu_lists_info *info)
{
	*info = j->info;
}

extern "C" const char *
gj_gpu_lists_error(const gj_gpu_lists *j)
{
	return j->err;
}
