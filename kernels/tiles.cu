/*
 * tiles.cu
 *		The GPU eps self-join for many dimensions: blocks of 128 rows against
 *		blocks of 128 rows, a tensor-core filter, and the exact rule for the
 *		pairs the filter cannot rule out.
 *
 * The filter and its proof are in tile_math.cuh; here, the work and the
 * kernel.  A tile whose kept pairs overflow the CTA's list, or whose
 * constant c is unusable, is computed whole by the float64 rule (the slow
 * path, exact as ever).
 *
 * Work.  The tile plan's units are (query block, reference block) pairs,
 * every pair of blocks for brute force (tile_plan.c); the batch driver
 * (pair_driver.cu) runs ranges of units, each CTA a run of consecutive
 * units of one or two query blocks, keeping the query block in shared
 * memory while it stays the same and the rows fit one chunk.  A unit makes
 * at most 128 x 128 pairs, fewer than a result buffer holds, so a batch
 * that overflows is split and never needs skip windows.  The stop word is
 * read at every unit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tile_math.cuh"

#define TCAND 2048				/* kept pairs a CTA refines per unit */
#define TUNITS_PER_CTA 32
#define TILES_DEFAULT_BATCH ((int64_t) 2 << 20)
#define TILES_MIN_BATCH ((int64_t) 1 << 16)
#define TILES_MAX_UNITS_PER_BATCH ((uint64_t) 1 << 20)

typedef struct tiles_params
{
	const double *x;			/* n x dims, float64 */
	const int64_t *ids;			/* n, or NULL (rows mode) */
	const float *f;				/* n x dp, TF32 values of the centred rows */
	const float *h;				/* n: |f|^2 / 2 */
	const double *blockr;		/* per block: the largest R of its rows */
	const int64_t *run_qb;
	const int64_t *run_lo;
	const int64_t *run_u0;		/* nruns + 1: each run's first unit */
	int64_t		nruns;
	int64_t		n;
	int			dims;
	int			dp;				/* dims padded to a multiple of 8 */
	double		eps2;
	double		s0;				/* sqrt(eps2 (1 + (d + 3) 2^-52)), rounded up */
	int			use_filter;
	int			emit_rows;
	int			prune;			/* skip units whose blocks' bounds are apart */
	dev_bounds	B;
	unsigned long long *skipped;	/* units skipped, for the stats */
	const int  *stop;
} tiles_params;

/* Emit rows i < j at squared distance s: as rows, or as ids, smaller first. */
__device__ __forceinline__ void
tiles_emit(const tiles_params &P, const gj_out &O, int64_t i, int64_t j, double s)
{
	if (P.emit_rows)
		gj_out_put(O, i, j, sqrt(s));
	else
	{
		int64_t		a = P.ids[i],
					b = P.ids[j];

		gj_out_put(O, a < b ? a : b, a < b ? b : a, sqrt(s));
	}
}

/*
 * Rows [row0, row0 + TILE) of f when one chunk holds them (dp <= TK),
 * copied into s asynchronously (cp.async, zero past n): the next unit's
 * reference block travels while the current unit's comparisons run, and
 * costs no registers.  async_wait, then a barrier, before s is read.
 */
__device__ __forceinline__ void
async_rows(const tiles_params &P, int64_t row0, float *s)
{
	int			w4 = P.dp / 4;

	for (int e = threadIdx.x; e < TILE * w4; e += TTHREADS)
	{
		int			r = e / w4,
					c = e - r * w4;
		int			inside = row0 + r < P.n;
		const float *src = P.f + (inside ? (row0 + r) * P.dp + 4 * c : 0);
		unsigned	dst = (unsigned) __cvta_generic_to_shared(s + r * TSTRIDE + 4 * c);

		asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
					 :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
	}
	asm volatile("cp.async.commit_group;");
}

__device__ __forceinline__ void
async_wait(void)
{
	asm volatile("cp.async.wait_group 0;" ::: "memory");
}

/*
 * Where a CTA is in the plan: the unit, its blocks, and the run's bounds
 * kept in registers, so that moving to the next unit reads global memory
 * only at the end of a run.
 */
typedef struct unit_cursor
{
	uint64_t	u;
	int64_t		run;
	uint64_t	run_end;		/* the run's last unit + 1 */
	int64_t		qb;
	int64_t		rb;
} unit_cursor;

__device__ __forceinline__ void
cursor_run(const tiles_params &P, unit_cursor *c)
{
	while ((uint64_t) P.run_u0[c->run + 1] <= c->u)
		c->run++;
	c->run_end = (uint64_t) P.run_u0[c->run + 1];
	c->qb = P.run_qb[c->run];
	c->rb = P.run_lo[c->run] + (int64_t) (c->u - (uint64_t) P.run_u0[c->run]);
}

__device__ __forceinline__ void
cursor_next(const tiles_params &P, unit_cursor *c)
{
	c->u++;
	if (c->u < c->run_end)
		c->rb++;
	else
		cursor_run(P, c);
}

/* The h values of this thread's 8 columns of reference block rb. */
__device__ __forceinline__ void
load_hcol(const tiles_params &P, int64_t rb, int wn, int t, float *hcol)
{
	for (int k = 0; k < 8; k++)
	{
		int64_t		j = rb * TILE + ACC_COL(wn, k >> 1, t, k & 1);

		hcol[k] = j < P.n ? P.h[j] : INFINITY;
	}
}

/*
 * Units [b0 + TUNITS_PER_CTA * blockIdx.x, ...) of a batch: for each, the
 * filter on the tensor cores, then the float64 rule for the pairs it keeps
 * (or for every pair, on the slow path).  A software pipeline: while a
 * unit's comparisons run, the next unit's reference rows (when one chunk
 * holds them), h values and block bound are already being fetched.  The
 * stop word is read every 8 units.
 */
__global__ static void __launch_bounds__(TTHREADS, 2)
tiles_kernel(tiles_params P, uint64_t b0, uint64_t b1, gj_out O)
{
	__shared__ __align__(16) float sa[TILE * TSTRIDE];
	__shared__ __align__(16) float sb[TILE * TSTRIDE];
	__shared__ uint16_t cand[TCAND];
	__shared__ int ncand;
	__shared__ int stopped;
	__shared__ uint32_t far_units;	/* bit t: unit u_begin + t is skipped */
	uint64_t	u_begin = b0 + (uint64_t) blockIdx.x * TUNITS_PER_CTA;
	uint64_t	u_end = u_begin + TUNITS_PER_CTA < b1 ? u_begin + TUNITS_PER_CTA : b1;
	int			warp = threadIdx.x >> 5,
				lane = threadIdx.x & 31;
	int			g = lane >> 2,
				t = lane & 3;
	int			wm = warp >> 2,	/* rows wm * 64 .. */
				wn = warp & 3;	/* columns wn * 32 .. */
	int			one_chunk = P.dp <= TK;
	int64_t		lo = 0,
				hi = P.nruns;
	int64_t		loaded_qb = -1;	/* the query block in sa and hrow (one chunk) */
	int64_t		loaded_rb = -1;	/* the reference block already in sb */
	float		hrow[8];		/* h of this thread's 8 query rows */
	float		hcol[8];		/* ... and 8 reference columns */
	double		brq,
				brr;			/* the blocks' largest norms */
	unit_cursor cur;
	uint32_t	far,
				valid;			/* bits of the CTA's units: skipped, and there */
	int			nproc = 0;		/* units compared so far */

	if (u_begin >= u_end)
		return;
	/* the run holding the first unit */
	while (hi - lo > 1)
	{
		int64_t		mid = (lo + hi) / 2;

		if ((uint64_t) P.run_u0[mid] <= u_begin)
			lo = mid;
		else
			hi = mid;
	}
	cur.u = u_begin;
	cur.run = lo;
	cursor_run(P, &cur);

	/*
	 * The index: which of the CTA's units have blocks whose bounds are
	 * farther apart than eps (a warp a unit, every thread walking the same
	 * cursor); they are skipped below, none of their pairs can pass.
	 */
	if (threadIdx.x == 0)
		far_units = 0;
	__syncthreads();
	if (P.prune)
	{
		unit_cursor w = cur;

		for (uint64_t t = 0; u_begin + t < u_end; t++)
		{
			if ((int) (t & 7) == warp && w.qb != w.rb &&
				gj_block_far(warp_block_lb2(P.B, w.qb, P.B, w.rb, P.dims, lane), P.s0) && lane == 0)
				atomicOr(&far_units, 1u << t);
			if (u_begin + t + 1 < u_end)
				cursor_next(P, &w);
		}
		__syncthreads();
		if (threadIdx.x == 0 && far_units != 0)
			atomicAdd(P.skipped, (unsigned long long) __popc(far_units));
	}
	/* to the first unit not skipped */
	far = far_units;
	valid = u_end - u_begin >= 32 ? 0xffffffffu : (1u << (u_end - u_begin)) - 1u;
	if ((valid & ~far) == 0)
		return;
	while (far >> (cur.u - u_begin) & 1)
		cursor_next(P, &cur);
	brq = P.blockr[cur.qb];
	brr = P.blockr[cur.rb];
	load_hcol(P, cur.rb, wn, t, hcol);
	if (threadIdx.x == 0)
		ncand = 0;

	while (cur.u < u_end)
	{
		int64_t		qb = cur.qb,
					rb = cur.rb,
					q0 = qb * TILE,
					r0 = rb * TILE;
		bool		diag = qb == rb,
					slow,
					more;
		float		c;
		int			at = (int) (cur.u - u_begin);

		/* another unit not skipped after this one? */
		more = at + 1 < 32 && (valid & ~far & (0xffffffffu << (at + 1))) != 0;
		if ((nproc++ & 7) == 0)
		{
			if (threadIdx.x == 0)
				stopped = gj_dev_stopped(P.stop);
			__syncthreads();
			if (stopped)
			{
				async_wait();	/* no copy outlives the CTA */
				return;
			}
		}
		/* every thread the same constant: no wait on one thread */
		c = P.use_filter ? filter_constant(P.s0, P.dp, brq, brr, 0) : INFINITY;
		slow = isinf(c);

		if (!slow)
		{
			float		acc[4][4][4];

			for (int mi = 0; mi < 4; mi++)
				for (int ni = 0; ni < 4; ni++)
					for (int e = 0; e < 4; e++)
						acc[mi][ni][e] = 0.0f;
			if (qb != loaded_qb)
				for (int k = 0; k < 8; k++)
				{
					int64_t		i = q0 + ACC_ROW(wm, k >> 1, g, (k & 1) * 2);

					hrow[k] = i < P.n ? P.h[i] : INFINITY;
				}
			for (int k0 = 0; k0 < P.dp; k0 += TK)
			{
				int			w = P.dp - k0 < TK ? P.dp - k0 : TK;

				if (!(one_chunk && loaded_qb == qb))
					load_chunk(P.f, P.n, P.dp, q0, k0, w, sa);
				if (one_chunk && loaded_rb == rb)
					async_wait();	/* copied during the previous unit */
				else
					load_chunk(P.f, P.n, P.dp, r0, k0, w, sb);
				__syncthreads();
				tile_products(sa, sb, w, wm, wn, g, t, acc);
				__syncthreads();
			}
			loaded_qb = one_chunk ? qb : -1;
			loaded_rb = -1;

			/*
			 * keep a pair when G >= h_i + (h_j - c): the 64 tests as bits
			 * first (a few instructions each, no branch), then the rare
			 * kept ones; hcol is reloaded for the next unit anyway
			 */
			{
				uint32_t	keep[2];
				int			row,
							col;

				for (int k = 0; k < 8; k++)
					hcol[k] -= c;
				tile_keep_bits(acc, hrow, hcol, keep);
				while (tile_next_kept(keep, wm, wn, g, t, &row, &col))
					if (!diag || row < col)
					{
						int			slot = atomicAdd(&ncand, 1);

						if (slot < TCAND)
							cand[slot] = (uint16_t) (row << 7 | col);
					}
			}
		}
		else
		{
			async_wait();		/* a copy for this unit, unused: let it land first */
			loaded_qb = -1;
			loaded_rb = -1;
		}

		/* the next unit's reads, on their way during this one's comparisons */
		if (more)
		{
			do
				cursor_next(P, &cur);
			while (far >> (cur.u - u_begin) & 1);
			if (one_chunk && !slow)
			{
				async_rows(P, cur.rb * TILE, sb);	/* sb was last read before the barrier above */
				loaded_rb = cur.rb;
			}
			if (cur.qb != qb)
				brq = P.blockr[cur.qb];
			brr = P.blockr[cur.rb];
		}
		else
			cur.u = u_end;

		if (!slow)
		{
			__syncthreads();
			slow = ncand > TCAND;
			if (!slow)
				for (int k = threadIdx.x; k < ncand; k += TTHREADS)
				{
					int64_t		i = q0 + (cand[k] >> 7),
								j = r0 + (cand[k] & 127);
					double		s = exact_sqdist(P.x + i * P.dims, P.x + j * P.dims, P.dims, P.eps2);

					if (s <= P.eps2)
						tiles_emit(P, O, i, j, s);
				}
		}
		if (slow)
		{
			/* the float64 rule for every pair of the unit */
			for (int e = threadIdx.x; e < TILE * TILE; e += TTHREADS)
			{
				int64_t		i = q0 + (e >> 7),
							j = r0 + (e & 127);
				double		s;

				if (i >= P.n || j >= P.n || (diag && i >= j))
					continue;
				s = exact_sqdist(P.x + i * P.dims, P.x + j * P.dims, P.dims, P.eps2);
				if (s <= P.eps2)
					tiles_emit(P, O, i, j, s);
			}
		}
		if (more)
			load_hcol(P, cur.rb, wn, t, hcol);	/* hcol was last read in the epilogue */
		__syncthreads();
		if (threadIdx.x == 0)
			ncand = 0;
		/* the next unit's first reads of ncand, sa and sb come after a barrier */
	}
	async_wait();
}

/*
 * The filter's products for blocks qb and rb of P.f, written out (tiles x
 * tiles of float): what the tile kernel compares, for
 * gj_gpu_tiles_gram_error.
 */
__global__ static void __launch_bounds__(TTHREADS)
gram_kernel(tiles_params P, int64_t qb, int64_t rb, float *out)
{
	__shared__ __align__(16) float sa[TILE * TSTRIDE];
	__shared__ __align__(16) float sb[TILE * TSTRIDE];
	int			warp = threadIdx.x >> 5,
				lane = threadIdx.x & 31;
	int			g = lane >> 2,
				t = lane & 3;
	int			wm = warp >> 2,
				wn = warp & 3;
	float		acc[4][4][4];

	for (int mi = 0; mi < 4; mi++)
		for (int ni = 0; ni < 4; ni++)
			for (int e = 0; e < 4; e++)
				acc[mi][ni][e] = 0.0f;
	for (int k0 = 0; k0 < P.dp; k0 += TK)
	{
		int			w = P.dp - k0 < TK ? P.dp - k0 : TK;

		load_chunk(P.f, P.n, P.dp, qb * TILE, k0, w, sa);
		load_chunk(P.f, P.n, P.dp, rb * TILE, k0, w, sb);
		__syncthreads();
		tile_products(sa, sb, w, wm, wn, g, t, acc);
		__syncthreads();
	}
	for (int mi = 0; mi < 4; mi++)
		for (int ni = 0; ni < 4; ni++)
			for (int e = 0; e < 4; e++)
				out[ACC_ROW(wm, mi, g, e) * TILE + ACC_COL(wn, ni, t, e)] = acc[mi][ni][e];
}

struct gj_gpu_tiles
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	gj_pair_driver drv;
	tiles_params P;
	gj_tile_plan plan;
	double	   *d_x;
	int64_t    *d_ids;
	float	   *d_f;
	float	   *d_h;
	double	   *d_r;
	double	   *d_blockr;
	double	   *d_m;
	int64_t    *d_runs;			/* run_qb, run_lo, run_u0 */
	dev_bounds	d_bounds;		/* with opt.prune: the blocks' bounds */
	unsigned long long *d_skipped;
	int		   *d_stop;
	cudaStream_t stop_stream;
	gj_gpu_tiles_info info;
};

static void gpu_tiles_free(gj_engine *e);

/* The driver's launch: units [b0, b1). */
static cudaError_t
launch_units(void *ctx, uint64_t b0, uint64_t b1, const gj_out &O, cudaStream_t s)
{
	struct gj_gpu_tiles *j = (struct gj_gpu_tiles *) ctx;
	uint64_t	ctas = (b1 - b0 + TUNITS_PER_CTA - 1) / TUNITS_PER_CTA;

	if (ctas == 0)
		return cudaSuccess;
	tiles_kernel<<<(unsigned) ctas, TTHREADS, 0, s>>>(j->P, b0, b1, O);
	return cudaGetLastError();
}

/* Device bytes the points and the filter take. */
static size_t
tiles_bytes(int64_t n, int dims, int dp)
{
	return (size_t) n * ((size_t) dims * 8 + (size_t) dp * 4 + 8 + 4 + 8) +
		(size_t) ((n + TILE - 1) / TILE + 1) * (8 + 24 + 24 * (size_t) dims) +
		((size_t) 32 << 20);
}

/* Upload, centre, filter data, plan; fills j->P. */
static gj_status
prepare(struct gj_gpu_tiles *j, const gj_points *p, const gj_tiles_options *opt,
		const gj_gpu_options *gopt, char *err, size_t errlen)
{
	int64_t		n = p->n;
	int			dims = p->dims;
	int			dp = (dims + 7) / 8 * 8;
	size_t		free_b = 0,
				total_b = 0,
				budget,
				need;
	cudaStream_t s = j->drv.streams[0];
	gj_dim_stats *st = NULL;
	double	   *m = NULL,
				maxr = 0.0;
	int64_t    *runs = NULL;
	gj_status	res;
	double		t0 = gj_now_ms();

	GJ_CUDA_CHECK(err, errlen, cudaMemGetInfo(&free_b, &total_b));
	budget = (size_t) (free_b * 0.9);
	if (gopt != NULL && gopt->memory_limit > 0 && gopt->memory_limit < budget)
		budget = gopt->memory_limit;
	need = tiles_bytes(n, dims, dp) + (size_t) TILES_MIN_BATCH * 24 * j->drv.nstreams;
	if (need > budget)
	{
		snprintf(err, errlen, "the points and their filter need about %zu MB of GPU memory, %zu MB are available",
				 need >> 20, budget >> 20);
		return GJ_ERR_DEVICE_OOM;
	}
	res = gj_gpu_stop_alloc(&j->d_stop, &j->stop_stream, err, errlen);
	if (res != GJ_OK)
		return res;

	/* the points, and their per-dimension sums for the centre */
	st = (gj_dim_stats *) malloc(sizeof(gj_dim_stats) * dims);
	m = (double *) malloc(sizeof(double) * dims);
	if (st == NULL || m == NULL)
	{
		free(st);
		free(m);
		return GJ_ERR_NOMEM;
	}
	res = gj_gpu_upload_stats(p, &j->d_x, st, s, &j->info.upload_ms, err, errlen);
	for (int d = 0; res == GJ_OK && d < dims; d++)
		m[d] = n > 0 ? st[d].sum / (double) n : 0.0;
	free(st);
	if (res != GJ_OK)
	{
		free(m);
		return res;
	}
	if (!opt->emit_rows)
	{
		GJ_CUDA_CHECK(err, errlen, cudaMalloc(&j->d_ids, sizeof(int64_t) * (n + 1)));
		GJ_CUDA_CHECK(err, errlen, cudaMemcpyAsync(j->d_ids, p->ids, sizeof(int64_t) * n,
												   cudaMemcpyHostToDevice, s));
	}

	/* the plan: every pair of blocks */
	res = gj_tile_plan_brute(&j->plan, n, TILE);
	if (res != GJ_OK)
	{
		free(m);
		return res;
	}
	runs = (int64_t *) malloc(sizeof(int64_t) * (3 * j->plan.nruns + 1));
	if (runs == NULL)
	{
		free(m);
		return GJ_ERR_NOMEM;
	}
	{
		int64_t		u = 0;

		for (int64_t r = 0; r < j->plan.nruns; r++)
		{
			runs[r] = j->plan.run_qb[r];
			runs[j->plan.nruns + r] = j->plan.run_lo[r];
			runs[2 * j->plan.nruns + r] = u;
			u += j->plan.run_hi[r] - j->plan.run_lo[r];
		}
		runs[3 * j->plan.nruns] = u;
		j->plan.units = u;
	}

	{
		cudaError_t e = cudaSuccess;
		int64_t		nb = j->plan.nblocks;

		if (e == cudaSuccess)
			e = cudaMalloc(&j->d_m, sizeof(double) * dims);
		if (e == cudaSuccess)
			e = cudaMalloc(&j->d_f, sizeof(float) * (size_t) (n + 1) * dp);
		if (e == cudaSuccess)
			e = cudaMalloc(&j->d_h, sizeof(float) * (n + 1));
		if (e == cudaSuccess)
			e = cudaMalloc(&j->d_r, sizeof(double) * (n + 1));
		if (e == cudaSuccess)
			e = cudaMalloc(&j->d_blockr, sizeof(double) * (nb + 1));
		if (e == cudaSuccess)
			e = cudaMalloc(&j->d_runs, sizeof(int64_t) * (3 * j->plan.nruns + 1));
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(j->d_m, m, sizeof(double) * dims, cudaMemcpyHostToDevice, s);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(j->d_runs, runs, sizeof(int64_t) * (3 * j->plan.nruns + 1),
								cudaMemcpyHostToDevice, s);
		if (e == cudaSuccess && opt->prune)
			e = dev_bounds_alloc(&j->d_bounds, nb, dims);
		if (e == cudaSuccess && opt->prune)
			e = cudaMalloc(&j->d_skipped, sizeof(unsigned long long));
		if (e == cudaSuccess && opt->prune)
			e = cudaMemsetAsync(j->d_skipped, 0, sizeof(unsigned long long), s);
		if (e == cudaSuccess && opt->prune && nb > 0)
		{
			bounds_kernel<<<(unsigned) nb, 256, 0, s>>>(j->d_x, n, dims, j->d_bounds);
			e = cudaGetLastError();
		}
		if (e == cudaSuccess)
			e = filter_rows(j->d_x, j->d_m, n, dims, dp, j->d_f, j->d_h, j->d_r, j->d_blockr, s,
							&maxr);
		free(m);
		free(runs);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "tile filter: %s", cudaGetErrorName(e));
			cudaGetLastError();
			return gj_cuda_status(e);
		}
	}
	cudaFree(j->d_r);
	j->d_r = NULL;

	memset(&j->P, 0, sizeof(j->P));
	j->P.x = j->d_x;
	j->P.ids = j->d_ids;
	j->P.f = j->d_f;
	j->P.h = j->d_h;
	j->P.blockr = j->d_blockr;
	j->P.run_qb = j->d_runs;
	j->P.run_lo = j->d_runs + j->plan.nruns;
	j->P.run_u0 = j->d_runs + 2 * j->plan.nruns;
	j->P.nruns = j->plan.nruns;
	j->P.n = n;
	j->P.dims = dims;
	j->P.dp = dp;
	j->P.eps2 = opt->eps2;
	j->P.s0 = filter_s0(opt->eps2, dims);
	j->P.emit_rows = opt->emit_rows;
	j->P.prune = opt->prune;
	j->P.B = j->d_bounds;
	j->P.skipped = j->d_skipped;
	j->P.stop = j->d_stop;

	/*
	 * The filter, where its float32 arithmetic holds: eps2 well above
	 * float32's smallest numbers, squared norms well below its largest.
	 * Elsewhere every unit takes the slow path (the float64 rule).
	 */
	j->P.use_filter = opt->eps2 >= 1e-30 && opt->eps2 < 1e30 && maxr <= 1e18 &&
		!opt->no_filter;
	j->info.filter = j->P.use_filter;
	j->info.units = j->plan.units;
	j->info.prep_ms = gj_now_ms() - t0;
	return GJ_OK;
}

/* Result buffers and the batches: ranges of units. */
static gj_status
plan_batches(struct gj_gpu_tiles *j, const gj_tiles_options *opt,
			 const gj_gpu_options *gopt, char *err, size_t errlen)
{
	int64_t		cap;
	uint64_t	units = (uint64_t) j->plan.units,
				per;
	double		per_unit;
	gj_status	st;

	if (gopt != NULL && gopt->batch_pairs > 0)
		cap = gopt->batch_pairs;
	else if (opt->expected_pairs > 0)
	{
		/* no larger than the estimate needs: pinning host memory costs time */
		cap = (int64_t) (1.25 * opt->expected_pairs) + TILES_MIN_BATCH;
		cap = cap > TILES_DEFAULT_BATCH ? TILES_DEFAULT_BATCH : cap;
	}
	else
		cap = TILES_DEFAULT_BATCH;	/* nothing known: the largest buffers */
	st = gj_driver_buffers(&j->drv, cap, TILES_MIN_BATCH, gopt != NULL && gopt->batch_pairs > 0,
						   err, errlen);
	if (st != GJ_OK)
		return st;
	/* units expected to fill 70% of a buffer, at most a bounded run of work */
	per_unit = units > 0 ? opt->expected_pairs / (double) units : 0.0;
	per = per_unit > 0 ? (uint64_t) (0.7 * (double) j->drv.cap / per_unit) : units;
	if (per > TILES_MAX_UNITS_PER_BATCH)
		per = TILES_MAX_UNITS_PER_BATCH;
	if (per < TUNITS_PER_CTA)
		per = TUNITS_PER_CTA;
	/* pushed last first: the driver pops them in order */
	for (uint64_t b = (units + per - 1) / per; b-- > 0;)
	{
		uint64_t	u0 = b * per,
					u1 = u0 + per < units ? u0 + per : units;

		if (!gj_driver_push(&j->drv, u0, u1, 0))
			return GJ_ERR_NOMEM;
	}
	return GJ_OK;
}

extern "C" gj_status
gj_gpu_tiles_start(const gj_points *p, const gj_tiles_options *opt,
				   const gj_gpu_options *gopt, gj_gpu_tiles **out, char *err, size_t errlen)
{
	struct gj_gpu_tiles *j;
	gj_status	st;

	*out = NULL;
	err[0] = '\0';
	if (!(opt->eps2 >= 0.0) || p->dims < 1 || p->dims > GJ_MAX_DIMS)
		return GJ_ERR_ARG;
	if (p->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	j = (struct gj_gpu_tiles *) calloc(1, sizeof(struct gj_gpu_tiles));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = gpu_tiles_free;
	st = gj_driver_init(&j->drv, &j->eng, gopt != NULL ? gopt->nstreams : 0, err, errlen);
	if (st == GJ_OK)
		st = prepare(j, p, opt, gopt, err, errlen);
	if (st == GJ_OK)
		st = plan_batches(j, opt, gopt, err, errlen);
	if (st == GJ_OK)
		st = gj_driver_start(&j->drv, launch_units, j, 0);
	if (st != GJ_OK)
	{
		if (err[0] == '\0')
			snprintf(err, errlen, "%s", gj_status_name(st));
		gpu_tiles_free(&j->eng);
		return st;
	}
	*out = j;
	return GJ_OK;
}

extern "C" void
gj_gpu_tiles_stats(const gj_gpu_tiles *j, gj_gpu_tiles_info *info)
{
	*info = j->info;
	info->batches = j->drv.batches;
	info->overflows = j->drv.overflows;
	info->pairs = j->drv.pairs;
	info->done_ms = j->eng.q != NULL ? gj_queue_done_ms(j->eng.q) : 0.0;
	info->units_skipped = 0;
	if (j->d_skipped != NULL)
	{
		unsigned long long sk = 0;

		if (cudaMemcpy(&sk, j->d_skipped, sizeof(sk), cudaMemcpyDeviceToHost) == cudaSuccess)
			info->units_skipped = (int64_t) sk;
		cudaGetLastError();
	}
}

extern "C" const char *
gj_gpu_tiles_error(const gj_gpu_tiles *j)
{
	return j->drv.err;
}

static void
gpu_tiles_free(gj_engine *e)
{
	struct gj_gpu_tiles *j = (struct gj_gpu_tiles *) e;

	gj_gpu_stop_raise(j->d_stop, j->stop_stream);
	gj_driver_stop(&j->drv);
	cudaFree(j->d_x);
	cudaFree(j->d_ids);
	cudaFree(j->d_f);
	cudaFree(j->d_h);
	cudaFree(j->d_r);
	cudaFree(j->d_blockr);
	cudaFree(j->d_m);
	cudaFree(j->d_runs);
	dev_bounds_free(&j->d_bounds);
	cudaFree(j->d_skipped);
	gj_gpu_stop_free(j->d_stop, j->stop_stream);
	cudaGetLastError();
	gj_tile_plan_free(&j->plan);
	gj_queue_destroy(j->eng.q);
	free(j);
}

/*
 * For the GPU check: the tensor core's error on the filter's products of
 * p's first blocks (up to 8 x 8 block pairs), as the largest ratio of
 * |G - exact| to K 2^-23 sum |f_ik f_jk|, the bound of a float32 sum.  The
 * filter assumes at most TACC; the check wants a wide margin below it.
 */
extern "C" gj_status
gj_gpu_tiles_gram_error(const gj_points *p, double *worst, char *err, size_t errlen)
{
	struct gj_gpu_tiles *j = (struct gj_gpu_tiles *) calloc(1, sizeof(struct gj_gpu_tiles));
	gj_tiles_options opt;
	gj_status	st;
	float	   *dg = NULL,
			   *hg = NULL,
			   *hf = NULL;

	*worst = 0.0;
	err[0] = '\0';
	if (j == NULL)
		return GJ_ERR_NOMEM;
	memset(&opt, 0, sizeof(opt));
	opt.eps2 = 1.0;
	opt.emit_rows = 1;
	j->eng.free = gpu_tiles_free;
	st = gj_driver_init(&j->drv, &j->eng, 1, err, errlen);
	if (st == GJ_OK)
		st = prepare(j, p, &opt, NULL, err, errlen);
	if (st == GJ_OK)
	{
		int64_t		nb = j->plan.nblocks < 8 ? j->plan.nblocks : 8;
		int			dp = j->P.dp;
		int64_t		rows = nb * TILE < p->n ? nb * TILE : p->n;
		cudaError_t e;

		hg = (float *) malloc(sizeof(float) * TILE * TILE);
		hf = (float *) malloc(sizeof(float) * (size_t) rows * dp);
		e = hg != NULL && hf != NULL ? cudaMalloc(&dg, sizeof(float) * TILE * TILE) :
			cudaErrorMemoryAllocation;
		if (e == cudaSuccess)
			e = cudaMemcpy(hf, j->d_f, sizeof(float) * (size_t) rows * dp, cudaMemcpyDeviceToHost);
		for (int64_t qb = 0; e == cudaSuccess && qb < nb; qb++)
			for (int64_t rb = 0; e == cudaSuccess && rb < nb; rb++)
			{
				gram_kernel<<<1, TTHREADS>>>(j->P, qb, rb, dg);
				e = cudaGetLastError();
				if (e == cudaSuccess)
					e = cudaMemcpy(hg, dg, sizeof(float) * TILE * TILE, cudaMemcpyDeviceToHost);
				for (int r = 0; e == cudaSuccess && r < TILE && qb * TILE + r < rows; r++)
					for (int c = 0; c < TILE && rb * TILE + c < rows; c++)
					{
						const float *fi = hf + (qb * TILE + r) * dp;
						const float *fj = hf + (rb * TILE + c) * dp;
						double		exact = 0.0,
									mag = 0.0,
									ratio;

						for (int k = 0; k < dp; k++)
						{
							exact += (double) fi[k] * (double) fj[k];
							mag += fabs((double) fi[k] * (double) fj[k]);
						}
						ratio = fabs((double) hg[r * TILE + c] - exact) /
							(dp * 0x1p-23 * mag + 1e-300);
						*worst = ratio > *worst ? ratio : *worst;
					}
			}
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "gram check: %s", cudaGetErrorName(e));
			cudaGetLastError();
			st = gj_cuda_status(e);
		}
	}
	cudaFree(dg);
	free(hg);
	free(hf);
	gpu_tiles_free(&j->eng);
	return st;
}
