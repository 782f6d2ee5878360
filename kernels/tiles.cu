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
	int64_t		split;			/* rows mode: rows before split are off_a + i, */
	int64_t		off_a;			/* ... the rest off_b + (i - split) (the window's */
	int64_t		off_b;			/* ... two slices) */
	int			dims;
	int			dp;				/* dims padded to a multiple of 8 */
	double		eps2;
	double		s0;				/* sqrt(eps2 (1 + (d + 3) 2^-52)), rounded up */
	int			use_filter;
	int			emit_rows;
	int			cross;			/* two sets: i (slice a) is the first set's row */
	int			prune;			/* skip units whose blocks' bounds are apart */
	dev_bounds	B;
	unsigned long long *skipped;	/* units skipped, for the stats */
	const int  *stop;
} tiles_params;

/*
 * Emit rows i < j at squared distance s: as rows, or as ids, smaller first
 * (two sets: the first set's, then the second's).
 */
__device__ __forceinline__ void
tiles_emit(const tiles_params &P, const gj_out &O, int64_t i, int64_t j, double s)
{
	if (P.emit_rows)
		gj_out_put(O, i < P.split ? P.off_a + i : P.off_b + (i - P.split),
				   j < P.split ? P.off_a + j : P.off_b + (j - P.split), sqrt(s));
	else if (P.cross)
		gj_out_put(O, P.ids[i], P.ids[j], sqrt(s));
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

/*
 * Rows too many for the device are cut into slices of m rows (a multiple
 * of TILE); a window is a pair of slices (a, b), a <= b, taken a-major:
 * (0,0), (0,1), ... (0,S-1), (1,1), ...  Window (a, a) joins slice a
 * with itself (every block pair of it); (a, b) joins every block of a
 * with every block of b, whose rows follow a's in the window.  Every pair
 * of rows lies in exactly one window.  Each window is a phase of the batch
 * driver, held in one of two slots, so that the next window's slice
 * uploads while the current window's last batches run; consecutive
 * windows of one a keep a's rows in the slot (only b's travel).  When
 * everything fits, one window (0,0) holds every row, as before slicing.
 */
typedef struct tiles_slot
{
	double	   *x;				/* rows: slice a, then slice b */
	int64_t    *ids;
	float	   *f;
	float	   *h;
	double	   *r;
	double	   *blockr;
	dev_bounds	bounds;
	int64_t    *runs;			/* run_qb, run_lo, run_u0 of the window */
	int64_t		slice_a;		/* the slice in the slot's first rows, -1: none */
	double		maxr_a;			/* its largest centred norm */
	tiles_params P;
} tiles_slot;

struct gj_gpu_tiles
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	gj_pair_driver drv;
	const gj_points *p;			/* the rows, read again for every window */
	gj_tiles_options opt;
	int64_t		m;				/* rows a slice */
	int64_t		nslices;
	int64_t		nslices_a;		/* two sets: the first set's slices come first */
	int64_t		nwin;
	int32_t    *win_a;			/* per window: its slices */
	int32_t    *win_b;
	int64_t    *win_u0;			/* nwin + 1: each window's first unit */
	int64_t    *hruns;			/* host scratch for a window's runs */
	int			nslots;
	tiles_slot	slot[GJ_DRIVER_MAX_SLOTS];
	double	   *d_m;			/* the centre of every window's filter rows */
	unsigned long long *d_skipped;
	int		   *d_stop;
	cudaStream_t stop_stream;
	cudaStream_t load_stream;
	int			registered;		/* p's rows pinned for the windows' uploads */
	double		load_ms;
	gj_gpu_tiles_info info;
};

static void gpu_tiles_free(gj_engine *e);

/* The window holding unit u. */
static int64_t
window_of(const struct gj_gpu_tiles *j, uint64_t u)
{
	int64_t		lo = 0,
				hi = j->nwin;

	while (hi - lo > 1)
	{
		int64_t		mid = (lo + hi) / 2;

		if ((uint64_t) j->win_u0[mid] <= u)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The driver's launch: units [b0, b1), all of one window, in its slot. */
static cudaError_t
launch_units(void *ctx, uint64_t b0, uint64_t b1, const gj_out &O, cudaStream_t s)
{
	struct gj_gpu_tiles *j = (struct gj_gpu_tiles *) ctx;
	int64_t		w = window_of(j, b0);
	uint64_t	u0 = (uint64_t) j->win_u0[w];
	uint64_t	ctas = (b1 - b0 + TUNITS_PER_CTA - 1) / TUNITS_PER_CTA;

	if (ctas == 0)
		return cudaSuccess;
	tiles_kernel<<<(unsigned) ctas, TTHREADS, 0, s>>>(j->slot[w % j->nslots].P, b0 - u0,
													  b1 - u0, O);
	return cudaGetLastError();
}

/*
 * Slice a's first row.  Two sets: the first set's slices from row 0, then
 * the second's from opt.split, so that no slice holds rows of both.
 */
static int64_t
slice_start(const struct gj_gpu_tiles *j, int64_t a)
{
	if (j->opt.cross && a >= j->nslices_a)
		return j->opt.split + (a - j->nslices_a) * j->m;
	return a * j->m;
}

/* Rows of slice a. */
static int64_t
slice_rows(const struct gj_gpu_tiles *j, int64_t a)
{
	int64_t		r0 = slice_start(j, a),
				end = j->opt.cross && a < j->nslices_a ? j->opt.split : j->p->n;

	return end - r0 < j->m ? (end - r0 > 0 ? end - r0 : 0) : j->m;
}

/* Where slice b goes in a slot after rows_a rows of slice a: a block boundary. */
static int64_t
slot_at_b(int64_t rows_a)
{
	return (rows_a + TILE - 1) / TILE * TILE;
}

/* Device bytes a row takes in a slot, and a block of TILE rows beyond that. */
static size_t
row_bytes(int dims, int dp)
{
	return (size_t) dims * 8 + (size_t) dp * 4 + 8 + 4 + 8;
}

static size_t
block_bytes(int dims)
{
	return 8 + 8 + 24 * (size_t) dims + 3 * 8;
}

/* Room in a slot for rows rows. */
static cudaError_t
slot_alloc(tiles_slot *sl, int64_t rows, int dims, int dp, int ids, int prune)
{
	int64_t		nb = (rows + TILE - 1) / TILE;
	cudaError_t e = cudaMalloc(&sl->x, sizeof(double) * (size_t) (rows + 1) * dims);

	sl->slice_a = -1;
	if (e == cudaSuccess && ids)
		e = cudaMalloc(&sl->ids, sizeof(int64_t) * (rows + 1));
	if (e == cudaSuccess)
		e = cudaMalloc(&sl->f, sizeof(float) * (size_t) (rows + 1) * dp);
	if (e == cudaSuccess)
		e = cudaMalloc(&sl->h, sizeof(float) * (rows + 1));
	if (e == cudaSuccess)
		e = cudaMalloc(&sl->r, sizeof(double) * (rows + 1));
	if (e == cudaSuccess)
		e = cudaMalloc(&sl->blockr, sizeof(double) * (nb + 1));
	if (e == cudaSuccess)
		e = cudaMalloc(&sl->runs, sizeof(int64_t) * (3 * nb + 1));
	if (e == cudaSuccess && prune)
		e = dev_bounds_alloc(&sl->bounds, nb, dims);
	return e;
}

static void
slot_free(tiles_slot *sl)
{
	cudaFree(sl->x);
	cudaFree(sl->ids);
	cudaFree(sl->f);
	cudaFree(sl->h);
	cudaFree(sl->r);
	cudaFree(sl->blockr);
	cudaFree(sl->runs);
	dev_bounds_free(&sl->bounds);
	memset(sl, 0, sizeof(*sl));
}

/*
 * Slice c's rows into the slot from row at (block at / TILE) on: the
 * points, their ids, filter rows and blocks' bounds; *maxr, their largest
 * centred norm.  Waits for the load stream.
 */
static cudaError_t
slot_put_slice(struct gj_gpu_tiles *j, tiles_slot *sl, int64_t c, int64_t at, double *maxr)
{
	const gj_points *p = j->p;
	int			dims = p->dims,
				dp = j->slot[0].P.dp;
	int64_t		r0 = slice_start(j, c),
				rows = slice_rows(j, c),
				b0 = at / TILE;
	cudaStream_t s = j->load_stream;
	cudaError_t e;

	/* staged by the host's copiers (pinned.cu): the driver's own staging is one thread's */
	e = gj_upload_staged(sl->x + at * dims, p->x + r0 * dims, sizeof(double) * rows * dims, s);
	if (e == cudaSuccess && sl->ids != NULL)
		e = cudaMemcpyAsync(sl->ids + at, p->ids + r0, sizeof(int64_t) * rows,
							cudaMemcpyHostToDevice, s);
	if (e == cudaSuccess && j->opt.prune && rows > 0)
	{
		dev_bounds	B = sl->bounds;

		B.lo += b0 * dims;
		B.hi += b0 * dims;
		B.c += b0 * dims;
		B.r += b0;
		bounds_kernel<<<(unsigned) ((rows + TILE - 1) / TILE), 256, 0, s>>>(sl->x + at * dims,
																			rows, dims, B);
		e = cudaGetLastError();
	}
	if (e == cudaSuccess)
		e = filter_rows(sl->x + at * dims, j->d_m, 0, rows, dims, dp, sl->f + at * dp, sl->h + at,
						sl->r + at, sl->blockr + b0, s, maxr);
	return e;
}

/*
 * Window w into slot k (the driver's load, and the first window's at the
 * start): slice a unless the slot already holds it, then slice b, the
 * window's runs, and the kernel's parameters.
 */
static gj_status
load_window(void *ctx, int64_t w, int k)
{
	struct gj_gpu_tiles *j = (struct gj_gpu_tiles *) ctx;
	tiles_slot *sl = &j->slot[k];
	int64_t		a = j->win_a[w],
				b = j->win_b[w];
	int64_t		rows_a = slice_rows(j, a),
				rows_b = a == b ? 0 : slice_rows(j, b),
				at_b = slot_at_b(rows_a),
				nba = (rows_a + TILE - 1) / TILE,
				nbb = (rows_b + TILE - 1) / TILE,
				nruns = nba,
				u = 0;
	double		maxr_b = 0.0,
				t0 = gj_now_ms();
	cudaError_t e = cudaSuccess;
	tiles_params *P = &sl->P;

	if (sl->slice_a != a)
	{
		sl->slice_a = -1;
		e = slot_put_slice(j, sl, a, 0, &sl->maxr_a);
		if (e == cudaSuccess)
			sl->slice_a = a;
	}
	/*
	 * Slice b from a block boundary.  Rows between (a's last block is short
	 * only where a is the first set's last slice) are NaN: no pair with
	 * them passes the filter or the rule.
	 */
	if (e == cudaSuccess && a != b && at_b > rows_a)
	{
		e = cudaMemsetAsync(sl->x + rows_a * P->dims, 0xff,
							sizeof(double) * (at_b - rows_a) * P->dims, j->load_stream);
		if (e == cudaSuccess)
			e = cudaMemsetAsync(sl->f + rows_a * P->dp, 0xff,
								sizeof(float) * (at_b - rows_a) * P->dp, j->load_stream);
		if (e == cudaSuccess)
			e = cudaMemsetAsync(sl->h + rows_a, 0xff, sizeof(float) * (at_b - rows_a),
								j->load_stream);
	}
	if (e == cudaSuccess && a != b)
		e = slot_put_slice(j, sl, b, at_b, &maxr_b);

	/* the runs: within a, every block pair; across, every block of a with every one of b */
	for (int64_t qb = 0; qb < nruns; qb++)
	{
		int64_t		lo = a == b ? qb : nba,
					hi = a == b ? nba : nba + nbb;

		j->hruns[qb] = qb;
		j->hruns[nruns + qb] = lo;
		j->hruns[2 * nruns + qb] = u;
		u += hi - lo;
	}
	j->hruns[3 * nruns] = u;
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(sl->runs, j->hruns, sizeof(int64_t) * (3 * nruns + 1),
							cudaMemcpyHostToDevice, j->load_stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(j->load_stream);
	if (e != cudaSuccess)
	{
		snprintf(j->drv.err, sizeof(j->drv.err), "slice upload: %s", cudaGetErrorName(e));
		cudaGetLastError();
		sl->slice_a = -1;
		return gj_cuda_status(e);
	}
	if (u != j->win_u0[w + 1] - j->win_u0[w])
	{
		snprintf(j->drv.err, sizeof(j->drv.err), "window %lld: %lld units, planned %lld",
				 (long long) w, (long long) u, (long long) (j->win_u0[w + 1] - j->win_u0[w]));
		return GJ_ERR_CUDA;	/* cannot happen: the plan and the load disagree */
	}

	P->x = sl->x;
	P->ids = sl->ids;
	P->f = sl->f;
	P->h = sl->h;
	P->blockr = sl->blockr;
	P->run_qb = sl->runs;
	P->run_lo = sl->runs + nruns;
	P->run_u0 = sl->runs + 2 * nruns;
	P->nruns = nruns;
	P->n = a == b ? rows_a : at_b + rows_b;
	P->split = a == b ? rows_a : at_b;
	P->off_a = slice_start(j, a);
	P->off_b = slice_start(j, b);
	P->B = sl->bounds;

	/*
	 * The filter, where its float32 arithmetic holds: eps2 well above
	 * float32's smallest numbers, squared norms well below its largest.
	 * Elsewhere every unit takes the slow path (the float64 rule).
	 */
	P->use_filter = j->opt.eps2 >= 1e-30 && j->opt.eps2 < 1e30 &&
		sl->maxr_a <= 1e18 && maxr_b <= 1e18 && !j->opt.no_filter;
	j->info.filter |= P->use_filter;
	j->load_ms += gj_now_ms() - t0;
	return GJ_OK;
}

/*
 * The rows' centre for the filter: the mean of up to 4,096 rows spread
 * over them (any centre keeps the filter exact; near the mean keeps the
 * rows' norms, and so its margin, small).
 */
static void
sample_centre(const gj_points *p, double *m)
{
	int64_t		cap = (int64_t) (4e6 / p->dims),
				k = p->n < 4096 ? p->n : 4096;

	k = k < cap ? k : cap < 1 ? 1 : cap;
	memset(m, 0, sizeof(double) * p->dims);
	if (p->n == 0)
		return;
	for (int64_t t = 0; t < k; t++)
	{
		const double *x = p->x + (t * (p->n / k)) * p->dims;

		for (int d = 0; d < p->dims; d++)
			m[d] += x[d];
	}
	for (int d = 0; d < p->dims; d++)
		m[d] /= (double) k;
}

/*
 * How the rows meet the device: one slot of every row when they fit the
 * budget beside the minimum result buffers, else two slots of two slices
 * each; then the windows and their units, the slots, the centre, and the
 * first window loaded.
 */
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
				fixed = ((size_t) 32 << 20) + (size_t) TILES_MIN_BATCH * 24 * j->drv.nstreams,
				per_row = row_bytes(dims, dp) + (block_bytes(dims) + TILE - 1) / TILE;
	int64_t		forced = gopt != NULL ? gopt->slice_rows : 0;
	double	   *m = NULL;
	gj_status	res;
	double		t0 = gj_now_ms();

	j->p = p;
	j->opt = *opt;
	GJ_CUDA_CHECK(err, errlen, cudaMemGetInfo(&free_b, &total_b));
	budget = (size_t) (free_b * 0.9);
	if (gopt != NULL && gopt->memory_limit > 0 && gopt->memory_limit < budget)
		budget = gopt->memory_limit;
	if (opt->cross && !(opt->split >= 0 && opt->split <= n))
		return GJ_ERR_ARG;
	if (opt->cross && fixed + (size_t) (n + TILE) * per_row <= budget &&
		(forced <= 0 || forced >= n))
	{
		/* two sets, each one slice: one window, the second set from a block boundary */
		int64_t		big = opt->split > n - opt->split ? opt->split : n - opt->split;

		j->m = big > 0 ? (big + TILE - 1) / TILE * TILE : TILE;
		j->nslots = 1;
	}
	else if (!opt->cross && fixed + (size_t) n * per_row <= budget && (forced <= 0 || forced >= n))
	{
		j->m = n > 0 ? n : 1;
		j->nslots = 1;
	}
	else
	{
		int64_t		most = budget > fixed ? (int64_t) ((budget - fixed) / (4 * per_row)) : 0;

		if (forced > 0 && forced < most)
			most = forced;
		j->m = most / TILE * TILE;
		j->nslots = 2;
		if (j->m < TILE || (n + j->m - 1) / j->m > 4096)
		{
			snprintf(err, errlen, "the points need about %zu MB of GPU memory, and slices of them at least %zu MB; %zu MB are available",
					 ((size_t) n * per_row + fixed) >> 20,
					 (4 * per_row * (size_t) (TILE > n / 4096 ? TILE : n / 4096) + fixed) >> 20,
					 budget >> 20);
			return GJ_ERR_DEVICE_OOM;
		}
	}
	if (opt->cross)
	{
		/* each set in its own slices (at least one, maybe empty); windows across */
		int64_t		sa = (opt->split + j->m - 1) / j->m,
					sb = (n - opt->split + j->m - 1) / j->m;

		j->nslices_a = sa > 0 ? sa : 1;
		j->nslices = j->nslices_a + (sb > 0 ? sb : 1);
		j->nwin = j->nslices_a * (j->nslices - j->nslices_a);
	}
	else
	{
		j->nslices = (n + j->m - 1) / j->m;
		if (j->nslices < 1)
			j->nslices = 1;
		j->nwin = j->nslices * (j->nslices + 1) / 2;
	}
	j->win_a = (int32_t *) malloc(sizeof(int32_t) * j->nwin);
	j->win_b = (int32_t *) malloc(sizeof(int32_t) * j->nwin);
	j->win_u0 = (int64_t *) malloc(sizeof(int64_t) * (j->nwin + 1));
	j->hruns = (int64_t *) malloc(sizeof(int64_t) * (3 * ((2 * j->m + TILE - 1) / TILE) + 1));
	m = (double *) malloc(sizeof(double) * dims);
	if (j->win_a == NULL || j->win_b == NULL || j->win_u0 == NULL || j->hruns == NULL || m == NULL)
	{
		free(m);
		return GJ_ERR_NOMEM;
	}
	{
		int64_t		w = 0,
					u = 0;

		for (int64_t a = 0; a < (opt->cross ? j->nslices_a : j->nslices); a++)
			for (int64_t b = opt->cross ? j->nslices_a : a; b < j->nslices; b++, w++)
			{
				int64_t		nba = (slice_rows(j, a) + TILE - 1) / TILE,
							nbb = (slice_rows(j, b) + TILE - 1) / TILE;

				j->win_a[w] = (int32_t) a;
				j->win_b[w] = (int32_t) b;
				j->win_u0[w] = u;
				u += a == b ? nba * (nba + 1) / 2 : nba * nbb;
			}
		j->win_u0[w] = u;
	}

	res = gj_gpu_stop_alloc(&j->d_stop, &j->stop_stream, err, errlen);
	if (res != GJ_OK)
	{
		free(m);
		return res;
	}
	GJ_CUDA_CHECK(err, errlen, cudaStreamCreateWithFlags(&j->load_stream, cudaStreamNonBlocking));
	sample_centre(p, m);
	{
		cudaError_t e = cudaMalloc(&j->d_m, sizeof(double) * dims);
		int64_t		fa = opt->split < j->m ? opt->split : j->m,
					fb = n - opt->split < j->m ? n - opt->split : j->m;
		/* self: a slice, or two; two sets: one of each, b from a block boundary */
		int64_t		rows = opt->cross ? slot_at_b(fa) + fb : j->nslots == 1 ? j->m : 2 * j->m;

		if (e == cudaSuccess)
			e = cudaMemcpy(j->d_m, m, sizeof(double) * dims, cudaMemcpyHostToDevice);
		for (int k = 0; e == cudaSuccess && k < j->nslots; k++)
			e = slot_alloc(&j->slot[k], rows, dims, dp, !opt->emit_rows, opt->prune);
		if (e == cudaSuccess && opt->prune)
			e = cudaMalloc(&j->d_skipped, sizeof(unsigned long long));
		if (e == cudaSuccess && opt->prune)
			e = cudaMemset(j->d_skipped, 0, sizeof(unsigned long long));
		free(m);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "tile buffers: %s", cudaGetErrorName(e));
			cudaGetLastError();
			return gj_cuda_status(e);
		}
	}
	for (int k = 0; k < j->nslots; k++)
	{
		tiles_params *P = &j->slot[k].P;

		memset(P, 0, sizeof(*P));
		P->dims = dims;
		P->dp = dp;
		P->eps2 = opt->eps2;
		P->s0 = filter_s0(opt->eps2, dims);
		P->emit_rows = opt->emit_rows;
		P->cross = opt->cross;
		P->prune = opt->prune;
		P->skipped = j->d_skipped;
		P->stop = j->d_stop;
	}
	/*
	 * the windows' uploads overlap kernels only from pinned rows; not in a
	 * team, whose members share the rows (one member's unregistering would
	 * pull the pages from under another's copies)
	 */
	if (j->nwin > 1 && n > 0 && j->drv.share == NULL &&
		cudaHostRegister(p->x, sizeof(double) * n * dims, cudaHostRegisterDefault) == cudaSuccess)
	{
		j->registered = 1;
		if (!opt->emit_rows &&
			cudaHostRegister(p->ids, sizeof(int64_t) * n, cudaHostRegisterDefault) == cudaSuccess)
			j->registered = 2;
	}
	cudaGetLastError();

	res = load_window(j, 0, 0);
	if (res != GJ_OK)
	{
		snprintf(err, errlen, "%s", j->drv.err);
		j->drv.err[0] = '\0';
		return res;
	}
	j->info.upload_ms = j->load_ms;
	j->info.units = j->win_u0[j->nwin];
	j->info.slices = j->nslices;
	j->info.windows = j->nwin;
	j->info.slice_rows = j->m;
	j->info.prep_ms = gj_now_ms() - t0;
	return GJ_OK;
}

/* Result buffers and the batches: ranges of units, none across windows. */
static gj_status
plan_batches(struct gj_gpu_tiles *j, const gj_tiles_options *opt,
			 const gj_gpu_options *gopt, char *err, size_t errlen)
{
	int64_t		cap;
	uint64_t	units = (uint64_t) j->win_u0[j->nwin],
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
	/*
	 * A team's members must plan the same batches, so the plan follows the
	 * buffers asked for, not those a device's cache or memory gave: a
	 * buffer smaller than asked splits a batch that overflows it, as ever.
	 */
	if (j->drv.share == NULL)
		cap = j->drv.cap;
	st = gj_driver_phases(&j->drv, j->nwin, j->nslots, load_window);
	if (st != GJ_OK)
		return st;
	j->drv.slot_phase[0] = 0;	/* prepare loaded the first window */
	/* units expected to fill 70% of a buffer, at most a bounded run of work */
	per_unit = units > 0 ? opt->expected_pairs / (double) units : 0.0;
	per = per_unit > 0 ? (uint64_t) (0.7 * (double) cap / per_unit) : units;
	if (per > TILES_MAX_UNITS_PER_BATCH)
		per = TILES_MAX_UNITS_PER_BATCH;
	if (j->drv.share != NULL)
	{
		/*
		 * a team: eight batches a member at least, so that each has some to
		 * take and the last ones, taken as the others finish, are short
		 */
		uint64_t	most = units / (8 * (uint64_t) gj_gpu_share_members(j->drv.share));

		per = per < most ? per : most;
	}
	if (per < TUNITS_PER_CTA)
		per = TUNITS_PER_CTA;
	/* pushed last first: the driver pops them in order */
	for (int64_t w = j->nwin; w-- > 0;)
	{
		uint64_t	w0 = (uint64_t) j->win_u0[w],
					w1 = (uint64_t) j->win_u0[w + 1];

		for (uint64_t b = (w1 - w0 + per - 1) / per; b-- > 0;)
		{
			uint64_t	u0 = w0 + b * per,
						u1 = u0 + per < w1 ? u0 + per : w1;

			if (!gj_driver_push(&j->drv, u0, u1, 0, w))
				return GJ_ERR_NOMEM;
		}
	}
	return GJ_OK;
}

/* The engine interface's hooks (gj_core.h): what failed, what ran. */
static const char *
gpu_tiles_error_text(const gj_engine *e)
{
	return ((const struct gj_gpu_tiles *) e)->drv.err;
}

static void
gpu_tiles_report(const gj_engine *e, gj_engine_report *r)
{
	gj_gpu_tiles_info ti;

	gj_gpu_tiles_stats((const gj_gpu_tiles *) e, &ti);
	r->batches = ti.batches;
	/* eps_join: a slice of each set is one window, not a cut for memory */
	r->slices = ti.windows > 1 ? ti.slices : 1;
	r->slice_rows = ti.slice_rows;
	r->slice_pairs = ti.windows;
	r->done_ms = ti.done_ms;
}

typedef struct tiles_args
{
	const gj_points *p;
	const gj_tiles_options *opt;
} tiles_args;

/* A member of a team of GPUs: the same join on its device, its share of the batches. */
static gj_status
tiles_member(void *arg, const gj_gpu_options *gopt, gj_engine **out, char *err, size_t errlen)
{
	tiles_args *a = (tiles_args *) arg;

	return gj_gpu_tiles_start(a->p, a->opt, gopt, (gj_gpu_tiles **) out, err, errlen);
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
	if (gj_gpu_team_wanted(gopt))
	{
		/* several GPUs: the handle is the team's, gj_gpu_tiles_stats knows it */
		tiles_args	a = {p, opt};

		return gj_gpu_team_start(gopt, tiles_member, &a, (gj_engine **) out, err, errlen);
	}
	j = (struct gj_gpu_tiles *) calloc(1, sizeof(struct gj_gpu_tiles));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = gpu_tiles_free;
	j->eng.on_gpu = 1;
	j->eng.error_text = gpu_tiles_error_text;
	j->eng.report = gpu_tiles_report;
	st = gj_driver_init(&j->drv, &j->eng, gopt != NULL ? gopt->nstreams : 0,
						gopt != NULL ? gopt->share : NULL, err, errlen);
	if (st == GJ_OK)
		st = prepare(j, p, opt, gopt, err, errlen);
	if (st == GJ_OK)
		st = plan_batches(j, opt, gopt, err, errlen);
	if (st == GJ_OK)
		st = gj_driver_start(&j->drv, launch_units, j, 0);
	if (st != GJ_OK)
	{
		if (err[0] == '\0')
			snprintf(err, errlen, "%s", j->drv.err[0] != '\0' ? j->drv.err : gj_status_name(st));
		gpu_tiles_free(&j->eng);
		return st;
	}
	*out = j;
	return GJ_OK;
}

static void tiles_stats_one(const gj_gpu_tiles *j, gj_gpu_tiles_info *info);

/*
 * A team's statistics are its first member's, with the batches, the
 * overflows, the pairs and the skipped units of all of them.
 */
extern "C" void
gj_gpu_tiles_stats(const gj_gpu_tiles *j, gj_gpu_tiles_info *info)
{
	gj_engine  *team = (gj_engine *) GJ_ENGINE(j);

	tiles_stats_one((const gj_gpu_tiles *) gj_team_member(team, 0), info);
	for (int i = 1; i < gj_team_size(team); i++)
	{
		gj_gpu_tiles_info m;

		tiles_stats_one((const gj_gpu_tiles *) gj_team_member(team, i), &m);
		info->batches += m.batches;
		info->overflows += m.overflows;
		info->pairs += m.pairs;
		info->units_skipped += m.units_skipped;
		info->done_ms = info->done_ms > m.done_ms ? info->done_ms : m.done_ms;
	}
}

static void
tiles_stats_one(const gj_gpu_tiles *j, gj_gpu_tiles_info *info)
{
	gj_on_device on(j->drv.device);

	*info = j->info;
	info->batches = j->drv.batches;
	info->overflows = j->drv.overflows;
	info->pairs = j->drv.pairs;
	info->upload_ms = j->load_ms;
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
	return gj_engine_error_text(GJ_ENGINE(j));
}

static void
gpu_tiles_free(gj_engine *e)
{
	struct gj_gpu_tiles *j = (struct gj_gpu_tiles *) e;
	gj_on_device on(j->drv.device);

	gj_gpu_stop_raise(j->d_stop, j->stop_stream);
	gj_driver_stop(&j->drv);
	for (int k = 0; k < GJ_DRIVER_MAX_SLOTS; k++)
		slot_free(&j->slot[k]);
	cudaFree(j->d_m);
	cudaFree(j->d_skipped);
	if (j->load_stream != NULL)
	{
		cudaStreamSynchronize(j->load_stream);
		cudaStreamDestroy(j->load_stream);
	}
	if (j->registered >= 1)
		cudaHostUnregister(j->p->x);
	if (j->registered == 2)
		cudaHostUnregister(j->p->ids);
	gj_gpu_stop_free(j->d_stop, j->stop_stream);
	cudaGetLastError();
	free(j->win_a);
	free(j->win_b);
	free(j->win_u0);
	free(j->hruns);
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
	st = gj_driver_init(&j->drv, &j->eng, 1, NULL, err, errlen);
	if (st == GJ_OK)
		st = prepare(j, p, &opt, NULL, err, errlen);
	if (st == GJ_OK)
	{
		int64_t		nblocks = (p->n + TILE - 1) / TILE;
		int64_t		nb = nblocks < 8 ? nblocks : 8;
		int			dp = j->slot[0].P.dp;
		int64_t		rows = nb * TILE < p->n ? nb * TILE : p->n;
		cudaError_t e;

		hg = (float *) malloc(sizeof(float) * TILE * TILE);
		hf = (float *) malloc(sizeof(float) * (size_t) rows * dp);
		e = hg != NULL && hf != NULL ? cudaMalloc(&dg, sizeof(float) * TILE * TILE) :
			cudaErrorMemoryAllocation;
		if (e == cudaSuccess)
			e = cudaMemcpy(hf, j->slot[0].f, sizeof(float) * (size_t) rows * dp, cudaMemcpyDeviceToHost);
		for (int64_t qb = 0; e == cudaSuccess && qb < nb; qb++)
			for (int64_t rb = 0; e == cudaSuccess && rb < nb; rb++)
			{
				gram_kernel<<<1, TTHREADS>>>(j->slot[0].P, qb, rb, dg);
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
