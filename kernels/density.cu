/*
 * density.cu
 *		Per-row answers on the GPU: neighbour counts and DBSCAN, over the
 *		self-join's device grid index, with memory O(rows).
 *
 * The same passes as the CPU engine (src/core/density.c), one thread per
 * point in cell order:
 *   count:   rows within eps over the point's whole 3^n neighbourhood,
 *            itself included, stopping at a cap (minpts for DBSCAN);
 *   link:    each core point with the core points after it in cell order,
 *            union-find with atomicCAS, a root only ever linked under a
 *            smaller one (so the forest has no cycle and every root is its
 *            component's smallest point); pairs already in one component
 *            cost no distance;
 *   flatten: every core point's parent becomes its root, and each root's
 *            smallest core id is found with atomicMin;
 *   border:  each non-core point takes, among the core points within eps,
 *            the component with the least smallest id;
 * then one scatter back to the caller's row order.  Compact cells (all
 * points within eps of each other, by their bounding box's diagonal) count
 * whole and link as one, as in the CPU engine (src/core/density.c); for
 * DBSCAN, dense cells that are not compact are cut into boxes first
 * (density_boxes.cu), through which core rows count, link and border rows
 * search box by box.  Distances follow the
 * shared rule (gj_dev_sqdist), so counts and core flags equal the CPU
 * engine's bit for bit, and so do clusters after gj_dbscan_number.
 * Loops read the stop word every 1024 candidates; the host waits with
 * gj_gpu_wait, which raises it on an interrupt.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "density_run.cuh"

/*
 * Is every pair of cell c's points within eps?  One warp a cell (a cell may
 * hold every point): the bounding box by a strided scan and shuffles, then
 * its corners by the shared rule (rounding is monotonic, so no pair inside
 * can compute a larger distance).  Linear in the points, so it reads no
 * stop word (the shuffles need every lane).
 */
__global__ static void
compact_kernel(gj_dev_grid G, gj_grid_params P, uint8_t *compact)
{
	uint64_t	c = (blockIdx.x * (uint64_t) blockDim.x + threadIdx.x) / 32;
	int			lane = threadIdx.x & 31;
	int			dims = P.dims;
	bool		ok = true;
	double		lo,
				hi;
	double		s = 0.0;

	if (c >= (uint64_t) G.ncells)
		return;
	uint32_t	r0 = G.cell_start[c],
				r1 = G.cell_start[c + 1];

	/* one dimension at a time, summed in order like gj_dev_sqdist */
	for (int d = 0; d < dims && ok; d++)
	{
		gj_dev_warp_bounds(G.xs, r0, r1, dims, d, &lo, &hi);
		{
			double		t = __dsub_rn(hi, lo);

			s = __dadd_rn(s, __dmul_rn(t, t));
			ok = s <= P.eps2;
		}
	}
	if (lane == 0)
		compact[c] = ok;
}

/* Rows within eps of sorted point i, itself included, up to cap. */
template <int DIMS>
__global__ static void
count_kernel(gj_dev_grid G, gj_grid_params P, int32_t cap, int32_t *count,
			 uint8_t *core, int32_t *parent, const uint8_t *compact, gj_dev_boxes B,
			 gj_lattice L, const int32_t *lat_of, const uint32_t *order, const int *stop)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) G.n)
		return;
	uint32_t	i = order != NULL ? order[t] : (uint32_t) t;
	point_reg<DIMS> xi(G, P.dims, i);
	int32_t		n = 0;
	uint32_t	seen = 0;
	uint32_t	own = G.pcell[i];
	int64_t		own_box = B.nbox > 0 ? B.box_of_row[i] : -1;

	if (compact[own])
	{
		uint32_t	size = G.cell_start[own + 1] - G.cell_start[own];

		n = size < (uint32_t) cap ? (int32_t) size : cap;
	}
	else if (own_box >= 0 && B.compact[own_box])
	{
		uint32_t	size = B.end[own_box] - B.start[own_box];

		n = size < (uint32_t) cap ? (int32_t) size : cap;
	}
	else
		own_box = -1;			/* no box counted whole */
	if (n < cap)
		for_each_neighbour(G, P, own, [&](int64_t k) {
		if (k == (int64_t) own && compact[own])
			return true;		/* counted whole */
		if constexpr (DIMS >= 1 && DIMS <= GJ_LATTICE_MAX_DIMS)
		{
			if (lat_of != NULL && lat_of[k] >= 0)
			{
				/* uncapped (no cap to stop at): the lattice's count, the loop's below */
				int64_t		c = gj_lattice_count(&L, lat_of[k], xi.p, P.eps2,
												 (const volatile int *) stop);

				if (c < 0)
					return false;
				n += (int32_t) c;
				return true;
			}
		}
		if (B.nbox > 0 && gj_dev_cell_cut(G, compact, k))
		{
			/* box by box: the own compact box is counted, far boxes skipped */
			int64_t		b0,
						b1;

			gj_dev_cell_boxes(G, B, k, &b0, &b1);
			for (int64_t b = b0; b < b1; b++)
			{
				if (b == own_box || !gj_dev_box_corner_within<DIMS>(B, b, xi.p, 0, P.eps2))
					continue;
				if (gj_dev_box_corner_within<DIMS>(B, b, xi.p, 1, P.eps2))
				{
					uint32_t	size = B.end[b] - B.start[b];

					n = size < (uint32_t) (cap - n) ? n + (int32_t) size : cap;
					if (n >= cap)
						return false;
					continue;	/* every row of it: counted whole */
				}
				for (uint32_t r = B.start[b]; r < B.end[b]; r++)
				{
					if (gj_dev_sqdist<DIMS>(xi.p, G.xs + (int64_t) r * P.dims, P.dims, P.eps2) <= P.eps2 &&
						++n >= cap)
						return false;
					if ((++seen & 1023) == 0 && gj_dev_stopped(stop))
						return false;
				}
			}
			return true;
		}
		for (uint32_t r = G.cell_start[k]; r < G.cell_start[k + 1]; r++)
		{
			if (gj_dev_sqdist<DIMS>(xi.p, G.xs + (int64_t) r * P.dims, P.dims, P.eps2) <= P.eps2 &&
				++n >= cap)
				return false;
			if ((++seen & 1023) == 0 && gj_dev_stopped(stop))
				return false;
		}
		return true;
	});
	if (count != NULL)
		count[i] = n;
	if (core != NULL)
	{
		core[i] = n >= cap;
		parent[i] = (int32_t) i;
	}
}

__device__ __forceinline__ int32_t
uf_find(int32_t *parent, int32_t x)
{
	for (;;)
	{
		int32_t		p = *(volatile int32_t *) &parent[x];
		int32_t		gp;

		if (p == x)
			return x;
		gp = *(volatile int32_t *) &parent[p];
		if (gp != p)
			atomicCAS(&parent[x], p, gp);	/* path halving */
		x = gp;
	}
}

__device__ __forceinline__ void
uf_union(int32_t *parent, int32_t a, int32_t b, const int *stop)
{
	for (unsigned tries = 1;; tries++)
	{
		if ((tries & 63) == 0 && gj_dev_stopped(stop))
			return;				/* contended for long: the results go anyway */
		a = uf_find(parent, a);
		b = uf_find(parent, b);
		if (a == b)
			return;
		if (a > b)
		{
			int32_t		t = a;

			a = b;
			b = t;
		}
		if (atomicCAS(&parent[b], b, a) == b)
			return;
	}
}

/* Each compact cell's first core point (or -1). */
__global__ static void
first_core_kernel(gj_dev_grid G, const uint8_t *core, const uint8_t *compact,
				  int32_t *first_core)
{
	uint64_t	c = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;
	int32_t		first = -1;

	if (c >= (uint64_t) G.ncells)
		return;
	if (compact[c])
		for (uint32_t r = G.cell_start[c]; r < G.cell_start[c + 1]; r++)
			if (core[r])
			{
				first = (int32_t) r;
				break;
			}
	first_core[c] = first;
}

/* Each box's first core position (or -1): one warp a box, 32 rows a step. */
__global__ static void
box_core_kernel(gj_dev_boxes B, const uint8_t *core)
{
	uint64_t	b = (blockIdx.x * (uint64_t) blockDim.x + threadIdx.x) / 32;
	int			lane = threadIdx.x & 31;
	int32_t		first = -1;

	if (b >= (uint64_t) B.nbox)
		return;
	for (uint32_t r0 = B.start[b]; r0 < B.end[b] && first < 0; r0 += 32)
	{
		uint32_t	r = r0 + lane;
		unsigned	hit = __ballot_sync(0xffffffffu, r < B.end[b] && core[r]);

		if (hit != 0)
			first = (int32_t) (r0 + __ffs(hit) - 1);
	}
	if (lane == 0)
		B.core[b] = first;
}

/* A compact box's core points under its first, as a compact cell's. */
__global__ static void
join_boxes_kernel(int64_t n, gj_dev_boxes B, const uint8_t *core, int32_t *parent)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) n || !core[t])
		return;
	int32_t		b = B.box_of_row[t];

	if (b >= 0 && B.compact[b] && B.core[b] >= 0 && B.core[b] != (int32_t) t)
		parent[t] = B.core[b];	/* t is still a root; the box's first < t */
}

/* A compact cell's core points under its first: one cluster, no distance. */
__global__ static void
join_compact_kernel(int64_t n, const uint32_t *pcell, const uint8_t *core,
					const int32_t *first_core, int32_t *parent)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) n || !core[t])
		return;
	int32_t		fc = first_core[pcell[t]];

	if (fc >= 0 && fc != (int32_t) t)
		parent[t] = fc;			/* t is still a root; fc < t */
}

/*
 * Core point i with every later core point within eps; a compact cell as a
 * whole: nothing when already in i's cluster, else its first core point
 * within eps.
 */
template <int DIMS>
__global__ static void
link_kernel(gj_dev_grid G, gj_grid_params P, const uint8_t *core,
			int32_t *parent, const uint8_t *compact, const int32_t *first_core,
			gj_dev_boxes B, const int *stop)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) G.n || !core[t])
		return;
	uint32_t	i = (uint32_t) t;
	point_reg<DIMS> xi(G, P.dims, i);
	uint32_t	seen = 0;

	for_each_neighbour(G, P, G.pcell[i], [&](int64_t k) {
		uint32_t	r1 = G.cell_start[k + 1];
		uint32_t	r = G.cell_start[k];

		if (B.nbox > 0 && gj_dev_cell_cut(G, compact, k))
		{
			/*
			 * box by box, from either side: a compact box already in i's
			 * cluster costs a find, else its first core row within eps
			 * links it; a non-compact box links each of its core rows
			 */
			int64_t		b0,
						b1;

			gj_dev_cell_boxes(G, B, k, &b0, &b1);
			for (int64_t b = b0; b < b1; b++)
			{
				int32_t		fc = B.core[b];

				if (fc < 0 ||
					(B.compact[b] && uf_find(parent, (int32_t) i) == uf_find(parent, fc)) ||
					!gj_dev_box_corner_within<DIMS>(B, b, xi.p, 0, P.eps2))
					continue;
				if (B.compact[b] && gj_dev_box_corner_within<DIMS>(B, b, xi.p, 1, P.eps2))
				{
					uf_union(parent, (int32_t) i, fc, stop);	/* all of it within eps */
					continue;
				}
				for (uint32_t q = B.start[b]; q < B.end[b]; q++)
				{
					if ((++seen & 1023) == 0 && gj_dev_stopped(stop))
						return false;
					if (q == i || !core[q])
						continue;
					if (uf_find(parent, (int32_t) i) == uf_find(parent, (int32_t) q))
					{
						if (B.compact[b])
							break;	/* linked meanwhile: the box is one cluster */
						continue;
					}
					if (gj_dev_sqdist<DIMS>(xi.p, G.xs + (int64_t) q * P.dims, P.dims, P.eps2) > P.eps2)
						continue;
					uf_union(parent, (int32_t) i, (int32_t) q, stop);
					if (B.compact[b])
						break;
				}
			}
			return true;
		}

		if (compact[k])
		{
			int32_t		fc = first_core[k];

			if (fc < 0 || uf_find(parent, (int32_t) i) == uf_find(parent, fc))
				return true;
			for (; r < r1; r++)
			{
				if ((++seen & 1023) == 0 && gj_dev_stopped(stop))
					return false;
				if (core[r] &&
					gj_dev_sqdist<DIMS>(xi.p, G.xs + (int64_t) r * P.dims, P.dims, P.eps2) <= P.eps2)
				{
					uf_union(parent, (int32_t) i, (int32_t) r, stop);
					break;
				}
			}
			return true;
		}

		if (r1 <= i + 1)
			return true;		/* the whole cell comes before i */
		if (r <= i)
			r = i + 1;
		for (; r < r1; r++)
		{
			if ((++seen & 1023) == 0 && gj_dev_stopped(stop))
				return false;
			if (!core[r] || uf_find(parent, (int32_t) i) == uf_find(parent, (int32_t) r))
				continue;
			if (gj_dev_sqdist<DIMS>(xi.p, G.xs + (int64_t) r * P.dims, P.dims, P.eps2) <= P.eps2)
				uf_union(parent, (int32_t) i, (int32_t) r, stop);
		}
		return true;
	});
}

/* Parents become roots; each root's smallest core id. */
__global__ static void
flatten_kernel(int64_t n, const uint8_t *core, const int64_t *ids,
			   int32_t *parent, long long *minid)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) n || !core[t])
		return;
	int32_t		root = uf_find(parent, (int32_t) t);

	atomicMin(&minid[root], (long long) ids[t]);
	parent[t] = root;			/* only ever moves a pointer up its own tree */
}

/* Each point's representative: its root, its border choice, or -1. */
template <int DIMS>
__global__ static void
border_kernel(gj_dev_grid G, gj_grid_params P, const uint8_t *core,
			  const int32_t *parent, const long long *minid, int32_t *rep,
			  const uint8_t *compact, const int32_t *first_core, gj_dev_boxes B,
			  const int *stop)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) G.n)
		return;
	uint32_t	i = (uint32_t) t;

	if (core[i])
	{
		rep[i] = parent[i];
		return;
	}
	point_reg<DIMS> xi(G, P.dims, i);
	int32_t		best = -1;
	uint32_t	seen = 0;

	/* the least cluster among positions [r0, r1)'s core points within eps */
	auto		offer = [&](uint32_t r0, uint32_t r1, bool one_cluster) {
		for (uint32_t q = r0; q < r1; q++)
		{
			if ((++seen & 1023) == 0 && gj_dev_stopped(stop))
				return false;
			if (!core[q] ||
				gj_dev_sqdist<DIMS>(xi.p, G.xs + (int64_t) q * P.dims, P.dims, P.eps2) > P.eps2)
				continue;
			int32_t		root = parent[q];

			if (best < 0 || minid[root] < minid[best])
				best = root;
			if (one_cluster)
				break;			/* its core points are one cluster */
		}
		return true;
	};

	for_each_neighbour(G, P, G.pcell[i], [&](int64_t k) {
		if (B.nbox > 0 && gj_dev_cell_cut(G, compact, k))
		{
			int64_t		b0,
						b1;

			gj_dev_cell_boxes(G, B, k, &b0, &b1);
			for (int64_t b = b0; b < b1; b++)
			{
				if (B.core[b] < 0 || !gj_dev_box_corner_within<DIMS>(B, b, xi.p, 0, P.eps2))
					continue;
				if (B.compact[b] && gj_dev_box_corner_within<DIMS>(B, b, xi.p, 1, P.eps2))
				{
					/* its first core point is within eps, and speaks for the box */
					int32_t		root = parent[B.core[b]];

					if (best < 0 || minid[root] < minid[best])
						best = root;
					continue;
				}
				if (!offer(B.start[b], B.end[b], B.compact[b]))
					return false;
			}
			return true;
		}
		if (compact[k] && first_core[k] < 0)
			return true;		/* no core point there */
		return offer(G.cell_start[k], G.cell_start[k + 1], compact[k]);
	});
	rep[i] = best;
}

/* Sorted order back to the caller's rows (perm: sorted -> original). */
__global__ static void
scatter_kernel(int64_t n, const uint32_t *perm, const int32_t *val,
			   const uint8_t *flag, bool map_rep, int32_t *val_out,
			   uint8_t *flag_out)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) n)
		return;
	int32_t		v = val[t];

	if (map_rep && v >= 0)
		v = (int32_t) perm[v];
	val_out[perm[t]] = v;
	if (flag != NULL)
		flag_out[perm[t]] = flag[t];
}

/*
 * Core flags and keys given in the caller's order (dbscan_given), into the
 * sorted order; every row its own root.  key_in NULL: the ids, already in
 * the grid.
 */
__global__ static void
given_kernel(int64_t n, const uint32_t *perm, const uint8_t *core_in, const int64_t *key_in,
			 uint8_t *core, int32_t *parent, int64_t *key)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) n)
		return;
	uint32_t	o = perm[t];

	core[t] = core_in[o];
	parent[t] = (int32_t) t;
	if (key_in != NULL)
		key[t] = key_in[o];
}

void
run_free(density_run *r)
{
	if (r->stream)
		cudaStreamSynchronize(r->stream);
	if (r->have_grid)
		gj_gpu_grid_free(&r->G);
	cudaFree(r->d_val);
	cudaFree(r->d_parent);
	cudaFree(r->d_core);
	cudaFree(r->d_minid);
	cudaFree(r->d_compact);
	cudaFree(r->d_first_core);
	gj_gpu_boxes_free(&r->B);
	run_lattices_free(r);
	cudaFree(r->d_val_out);
	cudaFree(r->d_core_out);
	if (r->stream)
		cudaStreamDestroy(r->stream);
	gj_gpu_stop_free(r->d_stop, r->stop_stream);
	cudaGetLastError();
}

/* Budget check, upload, device index; the per-row arrays. */
gj_status
run_prepare(density_run *r, const gj_points *p, double eps2,
			const gj_gpu_options *opt, int dbscan, size_t extra_per_row,
			gj_gpu_density_info *info, char *err, size_t errlen)
{
	size_t		free_b = 0,
				total_b = 0,
				budget,
				need;
	int64_t		n = p->n;
	double		t0 = gj_now_ms();
	double	   *dx = NULL;
	int64_t    *dids = NULL;
	gj_dim_stats *st_dims;
	gj_status	st;
	sigset_t	old;
	cudaError_t e;

	/* the runtime may start helper threads here: keep signals off them */
	gj_block_async_signals(&old);
	e = cudaMemGetInfo(&free_b, &total_b);
	if (e == cudaSuccess)
		e = cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	GJ_CUDA_CHECK(err, errlen, e);
	budget = (size_t) (free_b * 0.9);
	if (opt != NULL && opt->memory_limit > 0 && opt->memory_limit < budget)
		budget = opt->memory_limit;
	need = gj_gpu_grid_bytes(n, p->dims) + (size_t) n * (GJ_GPU_DENSITY_ROW_BYTES + extra_per_row);
	r->room = need < budget ? budget - need : 0;
	if (need > budget)
	{
		snprintf(err, errlen, "the grid index and per-row arrays need about %zu MB of GPU memory, %zu MB are available",
				 need >> 20, budget >> 20);
		return GJ_ERR_DEVICE_OOM;
	}
	st = gj_gpu_stop_alloc(&r->d_stop, &r->stop_stream, err, errlen);
	if (st != GJ_OK)
		return st;
	st_dims = (gj_dim_stats *) malloc(sizeof(gj_dim_stats) * p->dims);
	if (st_dims == NULL)
		return GJ_ERR_NOMEM;
	st = gj_gpu_upload_stats(p, &dx, st_dims, r->stream, &info->upload_ms, err, errlen);
	if (st == GJ_OK)
	{
		e = cudaMalloc(&dids, sizeof(int64_t) * n);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(dids, p->ids, sizeof(int64_t) * n,
								cudaMemcpyHostToDevice, r->stream);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "id upload: %s", cudaGetErrorName(e));
			cudaGetLastError();
			st = gj_cuda_status(e);
		}
	}
	if (st == GJ_OK)
	{
		st = gj_grid_plan_from_stats(&r->plan, p->dims, n, eps2, st_dims);
		gj_grid_params_fill(&r->P, &r->plan);
	}
	free(st_dims);
	if (st == GJ_OK)
	{
		double		index_ms = 0;

		st = gj_gpu_grid_build(dx, dids, n, p->dims, &r->plan, &r->G, r->stream,
							   &index_ms, err, errlen);
		r->have_grid = st == GJ_OK;
	}
	cudaFree(dx);
	cudaFree(dids);
	if (st != GJ_OK)
		return st;
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&r->d_val, sizeof(int32_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&r->d_val_out, sizeof(int32_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&r->d_compact, r->G.ncells + 1));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&r->d_first_core, sizeof(int32_t) * (r->G.ncells + 1)));
	if (dbscan)
	{
		GJ_CUDA_CHECK(err, errlen, cudaMalloc(&r->d_parent, sizeof(int32_t) * n));
		GJ_CUDA_CHECK(err, errlen, cudaMalloc(&r->d_core, n));
		GJ_CUDA_CHECK(err, errlen, cudaMalloc(&r->d_core_out, n));
		GJ_CUDA_CHECK(err, errlen, cudaMalloc(&r->d_minid, sizeof(long long) * n));
		/* 0x7f.. bytes: every minid starts near INT64_MAX */
		GJ_CUDA_CHECK(err, errlen, cudaMemsetAsync(r->d_minid, 0x7f, sizeof(long long) * n, r->stream));
	}
	GJ_CUDA_CHECK(err, errlen, cudaStreamSynchronize(r->stream));
	info->index_ms = gj_now_ms() - t0;
	return GJ_OK;
}

/* Compact cells, first of the launches that gj_gpu_wait oversees. */
static void
launch_compact(density_run *r)
{
	unsigned	wgrid = (unsigned) ((r->G.ncells * 32 + GJ_DENSITY_BLOCK - 1) / GJ_DENSITY_BLOCK);

	compact_kernel<<<wgrid, GJ_DENSITY_BLOCK, 0, r->stream>>>(r->G, r->P, r->d_compact);
}

void
run_launch_counts(density_run *r, int dims, int32_t cap)
{
	unsigned	grid = (unsigned) ((r->G.n + GJ_DENSITY_BLOCK - 1) / GJ_DENSITY_BLOCK);

	launch_compact(r);
	LAUNCH_DIMS(count_kernel, dims, grid, r->stream, r->G, r->P, cap, r->d_val,
				(uint8_t *) NULL, (int32_t *) NULL, (const uint8_t *) r->d_compact, r->B,
				r->L, (const int32_t *) (cap == INT32_MAX ? r->d_lat_of : NULL),
				(const uint32_t *) (cap == INT32_MAX ? r->d_order : NULL), r->d_stop);
}

/* The entry points' common checks; info and err cleared. */
static gj_status
density_args(const gj_points *p, double eps2, gj_gpu_density_info *info, char *err)
{
	memset(info, 0, sizeof(*info));
	err[0] = '\0';
	if (p->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	if (!(eps2 >= 0.0) || p->dims < 1 || p->dims > GJ_MAX_DIMS)
		return GJ_ERR_ARG;
	return GJ_OK;
}

/* Wait for the stream (cancel-aware), then copy n results back. */
static gj_status
run_finish(density_run *r, int64_t n, int32_t *val, uint8_t *core,
		   gj_gpu_density_info *info, double t0, char *err, size_t errlen)
{
	gj_status	st = gj_gpu_wait(r->stream, r->d_stop, r->stop_stream, err, errlen);
	double		t1 = gj_now_ms();

	if (st != GJ_OK)
		return st;
	info->kernel_ms = t1 - t0;
	GJ_CUDA_CHECK(err, errlen, cudaMemcpy(val, r->d_val_out, sizeof(int32_t) * n,
										  cudaMemcpyDeviceToHost));
	if (core != NULL)
		GJ_CUDA_CHECK(err, errlen, cudaMemcpy(core, r->d_core_out, n, cudaMemcpyDeviceToHost));
	info->download_ms = gj_now_ms() - t1;
	return GJ_OK;
}

extern "C" gj_status
gj_gpu_count_within(const gj_points *p, double eps2, int32_t cap,
					const gj_gpu_options *opt, int32_t *counts,
					gj_gpu_density_info *info, char *err, size_t errlen)
{
	density_run r;
	gj_status	st;
	int64_t		n = p->n;

	memset(&r, 0, sizeof(r));
	st = density_args(p, eps2, info, err);
	if (st != GJ_OK || n == 0)
		return st;
	st = run_prepare(&r, p, eps2, opt, 0, 0, info, err, errlen);
	if (st == GJ_OK && cap <= 0)
	{
		double		t0 = gj_now_ms();

		st = run_lattices(&r, p->dims, err, errlen);
		info->index_ms += gj_now_ms() - t0;
		info->lattice_cells = r.L.ncut;
	}
	if (st == GJ_OK)
	{
		unsigned	grid = (unsigned) ((n + GJ_DENSITY_BLOCK - 1) / GJ_DENSITY_BLOCK);
		double		t0 = gj_now_ms();

		run_launch_counts(&r, p->dims, cap > 0 ? cap : INT32_MAX);
		scatter_kernel<<<grid, GJ_DENSITY_BLOCK, 0, r.stream>>>(n, r.G.perm, r.d_val, NULL,
																 false, r.d_val_out, NULL);
		info->launches = 3;
		if (cudaGetLastError() != cudaSuccess)
		{
			snprintf(err, errlen, "count kernel launch failed");
			st = GJ_ERR_CUDA;
		}
		else
			st = run_finish(&r, n, counts, NULL, info, t0, err, errlen);
	}
	run_free(&r);
	return st;
}

/* DBSCAN's passes after the compact cells and the boxes, on r's stream. */
static void
launch_dbscan(density_run *r, int64_t n, int dims, int32_t minpts, const int64_t *keys)
{
	unsigned	grid = (unsigned) ((n + GJ_DENSITY_BLOCK - 1) / GJ_DENSITY_BLOCK);
	unsigned	cgrid = (unsigned) ((r->G.ncells + GJ_DENSITY_BLOCK - 1) / GJ_DENSITY_BLOCK);
	unsigned	bgrid = (unsigned) ((r->B.nbox + GJ_DENSITY_BLOCK - 1) / GJ_DENSITY_BLOCK);

	if (minpts > 0)				/* else the core flags and roots are set */
		LAUNCH_DIMS(count_kernel, dims, grid, r->stream, r->G, r->P, minpts,
					(int32_t *) NULL, r->d_core, r->d_parent, (const uint8_t *) r->d_compact,
					r->B, r->L, (const int32_t *) NULL, (const uint32_t *) NULL, r->d_stop);
	first_core_kernel<<<cgrid, GJ_DENSITY_BLOCK, 0, r->stream>>>(r->G, r->d_core, r->d_compact,
																  r->d_first_core);
	join_compact_kernel<<<grid, GJ_DENSITY_BLOCK, 0, r->stream>>>(n, r->G.pcell, r->d_core,
																   r->d_first_core, r->d_parent);
	if (r->B.nbox > 0)
	{
		box_core_kernel<<<bgrid * 32, GJ_DENSITY_BLOCK, 0, r->stream>>>(r->B, r->d_core);
		join_boxes_kernel<<<grid, GJ_DENSITY_BLOCK, 0, r->stream>>>(n, r->B, r->d_core,
																	 r->d_parent);
	}
	LAUNCH_DIMS(link_kernel, dims, grid, r->stream, r->G, r->P, r->d_core,
				r->d_parent, (const uint8_t *) r->d_compact,
				(const int32_t *) r->d_first_core, r->B, r->d_stop);
	flatten_kernel<<<grid, GJ_DENSITY_BLOCK, 0, r->stream>>>(n, r->d_core, keys,
															  r->d_parent, r->d_minid);
	LAUNCH_DIMS(border_kernel, dims, grid, r->stream, r->G, r->P, r->d_core,
				r->d_parent, r->d_minid, r->d_val, (const uint8_t *) r->d_compact,
				(const int32_t *) r->d_first_core, r->B, r->d_stop);
	scatter_kernel<<<grid, GJ_DENSITY_BLOCK, 0, r->stream>>>(n, r->G.perm, r->d_val,
															  minpts > 0 ? r->d_core : NULL,
															  true, r->d_val_out, r->d_core_out);
}

extern "C" gj_status
gj_gpu_dbscan(const gj_points *p, double eps2, int32_t minpts,
			  const gj_gpu_options *opt, int32_t *root, uint8_t *core,
			  gj_gpu_density_info *info, char *err, size_t errlen)
{
	density_run r;
	gj_status	st;
	int64_t		n = p->n;

	memset(&r, 0, sizeof(r));
	st = density_args(p, eps2, info, err);
	if (st == GJ_OK && minpts < 1)
		st = GJ_ERR_ARG;
	if (st != GJ_OK || n == 0)
		return st;
	st = run_prepare(&r, p, eps2, opt, 1, 0, info, err, errlen);
	if (st == GJ_OK)
	{
		double		t0 = gj_now_ms();

		launch_compact(&r);
		/* dense wide cells: boxes (reorders rows within their cells) */
		st = gj_gpu_boxes_build(&r.G, &r.P, r.d_compact, r.room, &r.B, r.stream, err, errlen);
		if (st == GJ_ERR_DEVICE_OOM)
		{
			st = GJ_OK;			/* no room for them: pair by pair, as exact, slower */
			err[0] = '\0';
		}
		if (st == GJ_OK)
		{
			launch_dbscan(&r, n, p->dims, minpts, r.G.ids);
			info->launches = 8 + (r.B.nbox > 0 ? 9 : 0);
			if (cudaGetLastError() != cudaSuccess)
			{
				snprintf(err, errlen, "DBSCAN kernel launch failed");
				st = GJ_ERR_CUDA;
			}
			else
				st = run_finish(&r, n, root, core, info, t0, err, errlen);
		}
	}
	run_free(&r);
	return st;
}

/*
 * DBSCAN of p's rows alone with their core flags given, the components'
 * order by key (NULL: the ids): gj_slab_engine's dbscan_given, for
 * slab_density.c.  The same passes as gj_gpu_dbscan less the counting.
 */
extern "C" gj_status
gj_gpu_dbscan_given(const gj_points *p, double eps2, const uint8_t *core,
					const int64_t *key, const gj_gpu_options *opt, int32_t *rep,
					gj_gpu_density_info *info, char *err, size_t errlen)
{
	density_run r;
	gj_status	st;
	int64_t		n = p->n;
	uint8_t    *d_core_in = NULL;
	int64_t    *d_key_in = NULL;
	int64_t    *d_key = NULL;

	memset(&r, 0, sizeof(r));
	st = density_args(p, eps2, info, err);
	if (st != GJ_OK || n == 0)
		return st;
	/* the given flags, and the keys in and sorted */
	st = run_prepare(&r, p, eps2, opt, 1, GJ_GPU_DENSITY_GIVEN_ROW_BYTES, info, err, errlen);
	if (st == GJ_OK)
	{
		cudaError_t e = cudaMalloc(&d_core_in, n);

		if (e == cudaSuccess && key != NULL)
			e = cudaMalloc(&d_key_in, sizeof(int64_t) * n);
		if (e == cudaSuccess && key != NULL)
			e = cudaMalloc(&d_key, sizeof(int64_t) * n);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(d_core_in, core, n, cudaMemcpyHostToDevice, r.stream);
		if (e == cudaSuccess && key != NULL)
			e = cudaMemcpyAsync(d_key_in, key, sizeof(int64_t) * n, cudaMemcpyHostToDevice,
								r.stream);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "core flags upload: %s", cudaGetErrorName(e));
			cudaGetLastError();
			st = gj_cuda_status(e);
		}
	}
	if (st == GJ_OK)
	{
		double		t0 = gj_now_ms();
		unsigned	grid = (unsigned) ((n + GJ_DENSITY_BLOCK - 1) / GJ_DENSITY_BLOCK);

		launch_compact(&r);
		st = gj_gpu_boxes_build(&r.G, &r.P, r.d_compact, r.room, &r.B, r.stream, err, errlen);
		if (st == GJ_ERR_DEVICE_OOM)
		{
			st = GJ_OK;			/* pair by pair, as exact, slower */
			err[0] = '\0';
		}
		if (st == GJ_OK)
		{
			given_kernel<<<grid, GJ_DENSITY_BLOCK, 0, r.stream>>>(n, r.G.perm, d_core_in,
																   d_key_in, r.d_core,
																   r.d_parent, d_key);
			launch_dbscan(&r, n, p->dims, 0, key != NULL ? d_key : r.G.ids);
			info->launches = 8 + (r.B.nbox > 0 ? 9 : 0);
			if (cudaGetLastError() != cudaSuccess)
			{
				snprintf(err, errlen, "DBSCAN kernel launch failed");
				st = GJ_ERR_CUDA;
			}
			else
				st = run_finish(&r, n, rep, NULL, info, t0, err, errlen);
		}
	}
	if (r.stream)
		cudaStreamSynchronize(r.stream);
	cudaFree(d_core_in);
	cudaFree(d_key_in);
	cudaFree(d_key);
	run_free(&r);
	return st;
}

/* The GPU as slab_density.c's engine: each call's timings added into ctx. */
static void
add_info(gj_gpu_density_info *sum, const gj_gpu_density_info *one)
{
	sum->upload_ms += one->upload_ms;
	sum->index_ms += one->index_ms;
	sum->kernel_ms += one->kernel_ms;
	sum->download_ms += one->download_ms;
	sum->launches += one->launches;
	sum->lattice_cells += one->lattice_cells;
}

static gj_status
slab_join_counts(void *arg, const gj_points *s, const gj_points *q, double eps2,
				 int32_t *counts)
{
	gj_gpu_slab_ctx *c = (gj_gpu_slab_ctx *) arg;
	gj_gpu_density_info one;
	gj_status	st = gj_gpu_join_counts(s, q, eps2, &c->opt, counts, &one, c->err,
										sizeof(c->err));

	add_info(&c->info, &one);
	return st;
}

static gj_status
slab_dbscan_given(void *arg, const gj_points *w, double eps2, const uint8_t *core,
				  const int64_t *key, int32_t *rep)
{
	gj_gpu_slab_ctx *c = (gj_gpu_slab_ctx *) arg;
	gj_gpu_density_info one;
	gj_status	st = gj_gpu_dbscan_given(w, eps2, core, key, &c->opt, rep, &one, c->err,
										 sizeof(c->err));

	add_info(&c->info, &one);
	return st;
}

/*
 * The sorted rows the steps read, pinned for the sweeps: each step's upload
 * is then a DMA at the bus's rate, where pageable memory goes through the
 * driver's staging buffers on the calling thread (counts of 10M rows in 11
 * steps: uploads and indexes 183 -> 120 ms, for 13 ms of pinning).  A
 * registration that fails leaves its array pageable: slower, as correct.
 */
static void
slab_pin(gj_gpu_slab_ctx *c, void *a, size_t bytes)
{
	int			k = 0;

	while (k < 4 && c->pinned[k] != NULL)
		k++;
	if (k == 4 || bytes == 0)
		return;
	if (cudaHostRegister(a, bytes, cudaHostRegisterDefault) == cudaSuccess)
		c->pinned[k] = a;
	else
		cudaGetLastError();
}

static void
slab_rows(void *arg, const gj_points *p, int on)
{
	gj_gpu_slab_ctx *c = (gj_gpu_slab_ctx *) arg;
	double		t0 = gj_now_ms();

	if (on)
	{
		slab_pin(c, p->x, sizeof(double) * p->dims * p->n);
		slab_pin(c, p->ids, sizeof(int64_t) * p->n);
	}
	else
		for (int k = 0; k < 4; k++)
			if (c->pinned[k] != NULL && (c->pinned[k] == p->x || c->pinned[k] == p->ids))
			{
				cudaHostUnregister(c->pinned[k]);
				cudaGetLastError();
				c->pinned[k] = NULL;
			}
	c->pin_ms += gj_now_ms() - t0;
}

/* The slabs' sort; its failure (no room) only means the host sorts: no message kept. */
static gj_status
slab_order(void *arg, const gj_points *p, int dim, uint32_t *perm)
{
	gj_gpu_slab_ctx *c = (gj_gpu_slab_ctx *) arg;
	char		err[256];
	double		t0 = gj_now_ms();
	gj_status	st = gj_gpu_order_along(p, dim, &c->opt, perm, err, sizeof(err));

	c->info.index_ms += gj_now_ms() - t0;
	return st;
}

extern "C" void
gj_gpu_slab_engine(gj_slab_engine *e, gj_gpu_slab_ctx *ctx)
{
	memset(ctx->err, 0, sizeof(ctx->err));
	memset(&ctx->info, 0, sizeof(ctx->info));
	memset(ctx->pinned, 0, sizeof(ctx->pinned));
	ctx->pin_ms = 0;
	e->arg = ctx;
	e->join_counts = slab_join_counts;
	e->dbscan_given = slab_dbscan_given;
	e->order = slab_order;
	e->rows = slab_rows;
}
