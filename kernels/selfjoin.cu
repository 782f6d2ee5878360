/*
 * selfjoin.cu
 *		The GPU eps self-join over the grid: join kernel and its batches.
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
 * contiguous batches expected to fill about 70% of a result buffer, and
 * the batch driver (pair_driver.cu) runs them on several streams, splitting
 * those that overflow.  A single point with more pairs than a buffer is
 * rerun with skip windows: its one thread emits in a fixed order.
 *
 * Two sets (eps_join).  The grid is built over one set; the other set's
 * rows (the queries) are sorted into the same grid's cells on the device
 * (so a warp walks one neighbourhood) and each probes the whole 3^n block
 * of cells around its own coordinates, clamped into the grid exactly as
 * gj_grid_point_neighbourhood does on the CPU, with no LID-UNICOMP half:
 * every pair is met once, from its query.  The batches, the estimate and
 * the driver are the self-join's, over query positions.  The counts of
 * eps_join_counts are the same kernel writing one count per query.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_common.cuh"

#define GJ_GPU_DEFAULT_BATCH ((int64_t) 2 << 20)	/* pairs per buffer */
#define GJ_GPU_MIN_BATCH ((int64_t) 1 << 16)
#define GJ_GPU_SAMPLE_POINTS 32768
#define GJ_GPU_BLOCK 256
#define GJ_GPU_PAIR_BYTES 24	/* two ids and a distance */

/* A pair of ids, smaller first, and its distance. */
__device__ __forceinline__ void
emit(const gj_out &O, int64_t a, int64_t b, double s)
{
	gj_out_put(O, a < b ? a : b, a < b ? b : a, sqrt(s));
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

/*
 * Two sets: query positions q0, q0 + stride, ... < q1 of Q (sorted by G's
 * cells) against the points of G near each.  Pairs go to O as (query id,
 * G's id), the other way round with swap = 1, smaller id first with swap =
 * 2 (a self-join's halo); with COUNT, counts[the
 * query's original row] gets its number of rows within eps instead.
 */
template <int DIMS, bool COUNT>
__global__ static void
probe_kernel(gj_dev_grid G, gj_grid_params P, gj_dev_grid Q, uint32_t q0,
			 uint32_t q1, uint32_t stride, gj_out O, int swap, int32_t *counts,
			 const int *stop)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;
	uint64_t	i64 = q0 + t * stride;
	int64_t		cc[GJ_MAX_INDEXED_DIMS];
	int			last = P.nidx - 1;
	int			dims = P.dims;
	double		xreg[DIMS > 0 ? DIMS : 1];
	const double *xi;
	const double *xq;
	int64_t		idq;
	int64_t		id = 0;
	int			nprefix = 1;
	int32_t		hits = 0;
	bool		near = true;

	if (i64 >= q1)
		return;
	xq = Q.xs + i64 * dims;
	if constexpr (DIMS > 0)
	{
#pragma unroll
		for (int d = 0; d < DIMS; d++)
			xreg[d] = xq[d];
		xi = xreg;
	}
	else
		xi = xq;
	idq = Q.ids[i64];

	/* its cell, clamped into the grid; beyond one cell outside, no neighbour */
	for (int k = 0; k < P.nidx; k++)
	{
		double		u = __ddiv_rn(__dsub_rn(xq[P.idx_dim[k]], P.origin[k]), P.width[k]);

		if (!(u >= -1.0 && u < (double) P.ncell_dim[k] + 1.0))
			near = false;
		cc[k] = u < 0.0 ? 0 : u >= (double) P.ncell_dim[k] ? P.ncell_dim[k] - 1 : (int64_t) u;
		id += cc[k] * P.stride[k];
	}
	for (int k = 0; k < last; k++)
		nprefix *= 3;
	if (!near || G.ncells == 0)
		nprefix = 0;

	for (int p = 0; p < nprefix; p++)
	{
		int64_t		base = id;
		int64_t		lo,
					hi,
					k0,
					k1;
		int			r = p;
		bool		valid = true;

		for (int k = last - 1; k >= 0; k--)
		{
			int			v = r % 3 - 1;
			int64_t		ck = cc[k] + v;

			r /= 3;
			if (ck < 0 || ck >= P.ncell_dim[k])
				valid = false;
			base += v * P.stride[k];
		}
		if (!valid)
			continue;
		if (P.nidx == 0)
		{
			k0 = 0;
			k1 = 1;
		}
		else
		{
			lo = cc[last] > 0 ? base - 1 : base;
			hi = cc[last] + 1 < P.ncell_dim[last] ? base + 1 : base;
			k0 = gj_dev_lower_bound(G.cell_id, G.ncells, lo);
			for (k1 = k0; k1 < G.ncells && G.cell_id[k1] <= hi; k1++)
				;
		}
		/* the cells [k0, k1) are consecutive: their points are one range */
		for (uint32_t j = G.cell_start[k0], j1 = G.cell_start[k1]; j < j1; j++)
		{
			double		s = gj_dev_sqdist<DIMS>(xi, G.xs + (int64_t) j * dims, dims, P.eps2);

			if (s <= P.eps2)
			{
				if constexpr (COUNT)
					hits++;
				else if (swap == 2)
					gj_out_put(O, idq < G.ids[j] ? idq : G.ids[j], idq < G.ids[j] ? G.ids[j] : idq,
							   sqrt(s));
				else if (swap)
					gj_out_put(O, G.ids[j], idq, sqrt(s));
				else
					gj_out_put(O, idq, G.ids[j], sqrt(s));
			}
			if (((j - G.cell_start[k0]) & 1023) == 1023 && gj_dev_stopped(stop))
				return;
		}
	}
	if constexpr (COUNT)
		counts[Q.perm[i64]] = hits;
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

/* The same for the two-set probe (counts != NULL: the counting kernel). */
static cudaError_t
launch_probe(const gj_dev_grid &G, const gj_grid_params &P, const gj_dev_grid &Q,
			 uint32_t q0, uint32_t q1, uint32_t stride, const gj_out &O, int swap,
			 int32_t *counts, const int *stop, cudaStream_t s)
{
	uint64_t	threads = (q1 - q0 + (uint64_t) stride - 1) / stride;
	unsigned	blocks = (unsigned) ((threads + GJ_GPU_BLOCK - 1) / GJ_GPU_BLOCK);

	if (threads == 0)
		return cudaSuccess;
	switch (counts != NULL ? -P.dims : P.dims)
	{
#define GJ_CASE(D) \
		case D: probe_kernel<D, false><<<blocks, GJ_GPU_BLOCK, 0, s>>>(G, P, Q, q0, q1, stride, O, swap, counts, stop); break; \
		case -D: probe_kernel<D, true><<<blocks, GJ_GPU_BLOCK, 0, s>>>(G, P, Q, q0, q1, stride, O, swap, counts, stop); break
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
			if (counts != NULL)
				probe_kernel<0, true><<<blocks, GJ_GPU_BLOCK, 0, s>>>(G, P, Q, q0, q1, stride, O, swap, counts, stop);
			else
				probe_kernel<0, false><<<blocks, GJ_GPU_BLOCK, 0, s>>>(G, P, Q, q0, q1, stride, O, swap, counts, stop);
	}
	return cudaGetLastError();
}

struct gj_gpu_selfjoin
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	gj_grid		plan;
	gj_grid_params P;
	gj_dev_grid G;
	gj_dev_grid Q;				/* two sets: the queries, sorted by G's cells */
	int			probe;			/* ... and then: join them, not G with itself */
	int			swap;			/* ... G's id first in the pairs */
	gj_pair_driver drv;			/* streams, result buffers, the driver thread */
	unsigned long long *d_sample;	/* the estimate's counter */
	int		   *d_stop;			/* raised by free: kernels return */
	cudaStream_t stop_stream;
	gj_gpu_stats stats;
};

static void gpu_selfjoin_free(gj_engine *e);

/* The driver's launch: sorted points [b0, b1) into O. */
static cudaError_t
launch_batch(void *ctx, uint64_t b0, uint64_t b1, const gj_out &O, cudaStream_t s)
{
	struct gj_gpu_selfjoin *j = (struct gj_gpu_selfjoin *) ctx;

	if (j->probe)
		return launch_probe(j->G, j->P, j->Q, (uint32_t) b0, (uint32_t) b1, 1, O,
							j->swap, NULL, j->d_stop, s);
	return launch_join(j->G, j->P, (uint32_t) b0, (uint32_t) b1, 1, O, j->d_stop, s);
}

/* Either kernel over every stride-th unit of [u0, u1), counting into O. */
static cudaError_t
launch_units(struct gj_gpu_selfjoin *j, uint32_t u0, uint32_t u1, uint32_t stride,
			 const gj_out &O, int32_t *counts, cudaStream_t s)
{
	if (j->probe)
		return launch_probe(j->G, j->P, j->Q, u0, u1, stride, O, j->swap, counts,
							j->d_stop, s);
	return launch_join(j->G, j->P, u0, u1, stride, O, j->d_stop, s);
}

/* A device copy of bytes from host src into *dst (allocated), on stream s. */
static cudaError_t
upload(void **dst, const void *src, size_t bytes, cudaStream_t s)
{
	cudaError_t e = cudaMalloc(dst, bytes);

	return e == cudaSuccess ? cudaMemcpyAsync(*dst, src, bytes, cudaMemcpyHostToDevice, s) : e;
}

/*
 * Upload p, plan and build its device grid; with qs (two sets), upload the
 * queries and sort them into the same grid's cells.  *index_b: the device
 * bytes this holds.
 */
static gj_status
prepare_index(struct gj_gpu_selfjoin *j, const gj_points *p, const gj_points *qs,
			  double eps2, size_t budget, size_t *index_b, char *err, size_t errlen)
{
	int64_t		n = p->n;
	double		t0;
	double	   *dx = NULL;
	int64_t    *dids = NULL;
	gj_dim_stats *st_dims;
	gj_status	st;
	cudaError_t e;

	*index_b = gj_gpu_grid_bytes(n, p->dims) +
		(qs != NULL ? gj_gpu_grid_bytes(qs->n, p->dims) : 0);
	if (*index_b > budget)
	{
		snprintf(err, errlen, "the grid index needs about %zu MB of GPU memory, %zu MB are available",
				 *index_b >> 20, budget >> 20);
		return GJ_ERR_DEVICE_OOM;
	}
	st = gj_gpu_stop_alloc(&j->d_stop, &j->stop_stream, err, errlen);
	if (st != GJ_OK)
		return st;

	/* upload, statistics on the device, the plan, the device index */
	st_dims = (gj_dim_stats *) malloc(sizeof(gj_dim_stats) * p->dims);
	if (st_dims == NULL)
		return GJ_ERR_NOMEM;
	st = gj_gpu_upload_stats(p, &dx, st_dims, j->drv.streams[0],
							 &j->stats.upload_ms, err, errlen);
	if (st == GJ_OK)
	{
		t0 = gj_now_ms();
		e = upload((void **) &dids, p->ids, sizeof(int64_t) * n, j->drv.streams[0]);
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
		st = gj_gpu_grid_build(dx, dids, n, p->dims, &j->plan, &j->G, j->drv.streams[0],
							   &j->stats.index_ms, err, errlen);
	cudaFree(dx);
	cudaFree(dids);
	dx = NULL;
	dids = NULL;
	free(st_dims);
	if (st == GJ_OK && qs != NULL)
	{
		/* the queries, sorted by the cells of p's grid (clamped into it) */
		t0 = gj_now_ms();
		e = upload((void **) &dx, qs->x, sizeof(double) * qs->n * p->dims, j->drv.streams[0]);
		if (e == cudaSuccess)
			e = upload((void **) &dids, qs->ids, sizeof(int64_t) * qs->n, j->drv.streams[0]);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "query upload: %s", cudaGetErrorName(e));
			cudaGetLastError();
			st = gj_cuda_status(e);
		}
		j->stats.upload_ms += gj_now_ms() - t0;
		if (st == GJ_OK)
			st = gj_gpu_grid_build(dx, dids, qs->n, p->dims, &j->plan, &j->Q,
								   j->drv.streams[0], &j->stats.index_ms, err, errlen);
		cudaFree(dx);
		cudaFree(dids);
		j->probe = 1;
	}
	if (st != GJ_OK)
		return st;
	j->stats.ncells = j->G.ncells;
	j->stats.nidx = j->plan.nidx;
	return GJ_OK;
}

/* The device budget: 90% of free memory, or the limit when lower. */
static gj_status
device_budget(const gj_gpu_options *opt, size_t *budget, char *err, size_t errlen)
{
	size_t		free_b = 0,
				total_b = 0;

	GJ_CUDA_CHECK(err, errlen, cudaMemGetInfo(&free_b, &total_b));
	*budget = (size_t) (free_b * 0.9);
	if (opt != NULL && opt->memory_limit > 0 && opt->memory_limit < *budget)
		*budget = opt->memory_limit;
	return GJ_OK;
}

/* Build the index, size buffers from the budget, estimate pairs, cut the batches. */
static gj_status
prepare(struct gj_gpu_selfjoin *j, const gj_points *p, const gj_points *qs, double eps2,
		const gj_gpu_options *opt, char *err, size_t errlen)
{
	size_t		budget,
				index_b,
				left;
	int64_t		cap;
	int64_t		n = qs != NULL ? qs->n : p->n;	/* units: rows that probe */
	double		t0;
	uint32_t	stride;
	unsigned long long sample = 0;
	double		per_point;
	int64_t		ppb;
	gj_status	st;

	st = device_budget(opt, &budget, err, errlen);
	if (st == GJ_OK)
		st = prepare_index(j, p, qs, eps2, budget, &index_b, err, errlen);
	if (st != GJ_OK)
		return st;
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_sample, sizeof(unsigned long long)));

	/* the sampled estimate: count-only run over every stride-th unit */
	t0 = gj_now_ms();
	stride = (uint32_t) (n > GJ_GPU_SAMPLE_POINTS ? n / GJ_GPU_SAMPLE_POINTS : 1);
	{
		gj_out		O;

		memset(&O, 0, sizeof(O));
		O.count = j->d_sample;
		GJ_CUDA_CHECK(err, errlen, cudaMemsetAsync(O.count, 0, sizeof(unsigned long long), j->drv.streams[0]));
		GJ_CUDA_CHECK(err, errlen, launch_units(j, 0, (uint32_t) n, stride, O, NULL, j->drv.streams[0]));
		GJ_CUDA_CHECK(err, errlen, cudaMemcpyAsync(&sample, O.count, sizeof(sample),
												   cudaMemcpyDeviceToHost, j->drv.streams[0]));
		/* heavy inputs make this run long: wait with an eye on cancel */
		st = gj_gpu_wait(j->drv.streams[0], j->d_stop, j->stop_stream, err, errlen);
		if (st != GJ_OK)
			return st;
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
		if (cap * GJ_GPU_PAIR_BYTES * j->drv.nstreams > (int64_t) left)
			cap = (int64_t) (left / (GJ_GPU_PAIR_BYTES * (size_t) j->drv.nstreams));
	}
	st = gj_driver_buffers(&j->drv, cap, GJ_GPU_MIN_BATCH,
						   opt != NULL && opt->batch_pairs > 0, err, errlen);
	if (st != GJ_OK)
		return st;
	cap = j->drv.cap;
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

		if (!gj_driver_push(&j->drv, (uint64_t) p0, (uint64_t) p1, 0, 0))
			return GJ_ERR_NOMEM;
	}
	return GJ_OK;
}

/* The engine interface's hooks (gj_core.h): what failed, what ran. */
static const char *
gpu_selfjoin_error_text(const gj_engine *e)
{
	return gj_gpu_selfjoin_error((const gj_gpu_selfjoin *) e);
}

static void
gpu_selfjoin_report(const gj_engine *e, gj_engine_report *r)
{
	gj_gpu_stats gs;

	gj_gpu_selfjoin_stats((const gj_gpu_selfjoin *) e, &gs);
	r->batches = gs.batches;
	r->done_ms = gs.done_ms;
}

/* The self-join (qs NULL) or the join of qs with p. */
static gj_status
start(const gj_points *p, const gj_points *qs, double eps2, int swap,
	  const gj_gpu_options *opt, gj_gpu_selfjoin **out, char *err, size_t errlen)
{
	struct gj_gpu_selfjoin *j;
	gj_status	st;

	*out = NULL;
	err[0] = '\0';
	if (p->n > GJ_MAX_ROWS || (qs != NULL && qs->n > GJ_MAX_ROWS))
		return GJ_ERR_LIMIT;
	j = (struct gj_gpu_selfjoin *) calloc(1, sizeof(struct gj_gpu_selfjoin));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = gpu_selfjoin_free;
	j->eng.on_gpu = 1;
	j->eng.error_text = gpu_selfjoin_error_text;
	j->eng.report = gpu_selfjoin_report;
	j->swap = swap;

	if (!(eps2 >= 0.0) || p->dims < 1 || p->dims > GJ_MAX_DIMS ||
		(qs != NULL && qs->dims != p->dims))
		st = GJ_ERR_ARG;
	else
		st = gj_driver_init(&j->drv, &j->eng, opt != NULL ? opt->nstreams : 0, NULL, err, errlen);
	if (st == GJ_OK)
		st = prepare(j, p, qs, eps2, opt, err, errlen);
	if (st == GJ_OK)
		st = gj_driver_start(&j->drv, launch_batch, j, 1);
	if (st != GJ_OK)
	{
		gpu_selfjoin_free(&j->eng);
		return st;
	}
	*out = j;
	return GJ_OK;
}

extern "C" gj_status
gj_gpu_selfjoin_start(const gj_points *p, double eps2, const gj_gpu_options *opt,
					  gj_gpu_selfjoin **out, char *err, size_t errlen)
{
	return start(p, NULL, eps2, 0, opt, out, err, errlen);
}

extern "C" gj_status
gj_gpu_join_start(const gj_points *p, const gj_points *queries, double eps2, int swap,
				  const gj_gpu_options *opt, gj_gpu_selfjoin **out, char *err,
				  size_t errlen)
{
	return start(p, queries, eps2, swap, opt, out, err, errlen);
}

#define GJ_COUNT_LAUNCH_ROWS ((uint32_t) 1 << 20)	/* queries a counting launch */

/*
 * eps_join_counts: counts[i] = rows of p within eps of row i of queries,
 * synchronous.  The probe kernel in counting mode, a launch per
 * GJ_COUNT_LAUNCH_ROWS queries, the calling thread waiting with an eye on
 * cancel; counts come back in the queries' own order.
 */
extern "C" gj_status
gj_gpu_join_counts(const gj_points *p, const gj_points *queries, double eps2,
				   const gj_gpu_options *opt, int32_t *counts,
				   gj_gpu_density_info *info, char *err, size_t errlen)
{
	struct gj_gpu_selfjoin *j;
	gj_status	st;
	size_t		budget,
				index_b;
	int32_t    *d_counts = NULL;
	int64_t		nq = queries->n;
	double		t0 = gj_now_ms();

	memset(info, 0, sizeof(*info));
	err[0] = '\0';
	if (p->n > GJ_MAX_ROWS || nq > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	if (!(eps2 >= 0.0) || p->dims < 1 || p->dims > GJ_MAX_DIMS || queries->dims != p->dims)
		return GJ_ERR_ARG;
	j = (struct gj_gpu_selfjoin *) calloc(1, sizeof(struct gj_gpu_selfjoin));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = gpu_selfjoin_free;
	j->eng.on_gpu = 1;
	j->eng.error_text = gpu_selfjoin_error_text;
	j->eng.report = gpu_selfjoin_report;
	st = gj_driver_init(&j->drv, &j->eng, 1, NULL, err, errlen);
	if (st == GJ_OK)
		st = device_budget(opt, &budget, err, errlen);
	if (st == GJ_OK)
		st = prepare_index(j, p, queries, eps2,
						   budget > sizeof(int32_t) * (size_t) nq ? budget - sizeof(int32_t) * nq : 0,
						   &index_b, err, errlen);
	info->upload_ms = j->stats.upload_ms;
	info->index_ms = gj_now_ms() - t0;
	if (st == GJ_OK)
	{
		cudaError_t e = cudaMalloc(&d_counts, sizeof(int32_t) * (nq + 1));
		gj_out		O;

		memset(&O, 0, sizeof(O));
		t0 = gj_now_ms();
		for (int64_t q0 = 0; e == cudaSuccess && q0 < nq; q0 += GJ_COUNT_LAUNCH_ROWS)
		{
			uint32_t	q1 = (uint32_t) (q0 + GJ_COUNT_LAUNCH_ROWS < nq ? q0 + GJ_COUNT_LAUNCH_ROWS : nq);

			e = launch_probe(j->G, j->P, j->Q, (uint32_t) q0, q1, 1, O, 0, d_counts,
							 j->d_stop, j->drv.streams[0]);
			info->launches++;
		}
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "counting: %s", cudaGetErrorName(e));
			cudaGetLastError();
			st = gj_cuda_status(e);
		}
		if (st == GJ_OK)
			st = gj_gpu_wait(j->drv.streams[0], j->d_stop, j->stop_stream, err, errlen);
		info->kernel_ms = gj_now_ms() - t0;
		t0 = gj_now_ms();
		if (st == GJ_OK && nq > 0)
		{
			e = cudaMemcpy(counts, d_counts, sizeof(int32_t) * nq, cudaMemcpyDeviceToHost);
			if (e != cudaSuccess)
			{
				snprintf(err, errlen, "counts download: %s", cudaGetErrorName(e));
				cudaGetLastError();
				st = gj_cuda_status(e);
			}
		}
		info->download_ms = gj_now_ms() - t0;
	}
	cudaFree(d_counts);
	gpu_selfjoin_free(&j->eng);
	return st;
}

extern "C" void
gj_gpu_selfjoin_stats(const gj_gpu_selfjoin *j, gj_gpu_stats *st)
{
	*st = j->stats;
	st->batches = j->drv.batches;
	st->overflows = j->drv.overflows;
	st->pairs = j->drv.pairs;
	st->done_ms = j->eng.q != NULL ? gj_queue_done_ms(j->eng.q) : 0.0;
}

extern "C" const char *
gj_gpu_selfjoin_error(const gj_gpu_selfjoin *j)
{
	return j->drv.err;
}

/*
 * Stop the driver, wait for the streams, free device and pinned memory.
 * Never fails; after a sticky CUDA error the frees just return errors.
 */
static void
gpu_selfjoin_free(gj_engine *e)
{
	struct gj_gpu_selfjoin *j = (struct gj_gpu_selfjoin *) e;

	gj_gpu_stop_raise(j->d_stop, j->stop_stream);
	gj_driver_stop(&j->drv);
	gj_gpu_grid_free(&j->G);
	gj_gpu_grid_free(&j->Q);
	cudaFree(j->d_sample);
	gj_gpu_stop_free(j->d_stop, j->stop_stream);
	cudaGetLastError();
	gj_queue_destroy(j->eng.q);
	free(j);
}
