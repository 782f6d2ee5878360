/*
 * tile_math.cuh
 *		The tensor-core filter shared by the tile join (tiles.cu) and the
 *		kNN join's brute force (knn_tiles.cu): rows as TF32, block products
 *		on mma.sync, and the margin that makes the filter safe.
 *
 * Why.  In many dimensions the work is distance arithmetic, and the GPU's
 * fastest arithmetic is its tensor cores.  For vectors about a common
 * centre m, |a - b|^2 = |a|^2 + |b|^2 - 2 a.b: a matrix product of two
 * blocks of rows gives every pair's distance at once.
 *
 * Filter.  Each row's centred coordinates a = x - m (float64) are rounded
 * to TF32 (f, 10-bit mantissa, relative error at most delta = 2^-11 +
 * 2^-23), their squared norm N = |f|^2 is kept (in float64, then halved
 * and rounded to float: h), and a bound R >= |a|.  A CTA computes G = F_Q
 * F_B^T for a 128 x 128 tile with mma.sync m16n8k8 TF32 (float32
 * accumulation) and keeps a pair when G >= h_i + (h_j - c), where c is
 * proved wide enough that no pair the float64 rule puts at or under a
 * threshold b (eps2, or a query's k-th distance) is dropped, whatever the
 * rounding:
 *   - a pair with the float64 rule's sum S <= b has real squared distance
 *     T <= b (1 + (d + 3) 2^-52) =: s0^2 (each term of S is at least the
 *     real term times (1 - u)^3, and the sum of non-negative terms loses at
 *     most a factor (1 - u)^(d - 1));
 *   - |f_i - f_j| <= |a_i - a_j| + delta (|a_i| + |a_j|), so
 *     |f_i - f_j| <= rho = s0 + delta (R_Q + R_B), R_Q and R_B the largest
 *     R of each block;
 *   - the products of TF32 values are exact in float32 and the tensor
 *     core's sum of K of them is within TACC K 2^-23 sum |f_ik f_jk| <=
 *     TACC K 2^-23 |f_i| |f_j| (Cauchy-Schwarz; TACC = 2: K 2^-23 already
 *     bounds a float32 sum that truncates instead of rounding, and twice
 *     that leaves room for coarser alignment; measured on an H100 with
 *     cancelling rows from 8 to 4,096 dimensions, the error stays under
 *     0.19 of K 2^-23: regress/gpu/gpu_tiles checks it stays under 1);
 *   - the float32 epilogue adds roundings of h and of its subtraction
 *     and addition (in either order).
 * So c = rho^2 / 2 + E_G + E_h, where E_G bounds the product and E_h the
 * epilogue, both from R_Q and R_B (filter_constant()).  Every pair kept is
 * then decided by the float64 rule itself, in column order, so the answer
 * is exactly the CPU engine's.  The filter is only as tight as the data's
 * norms about the centre allow: for rows far from the centre relative to
 * the threshold (two far clusters, huge offsets with tiny differences) c
 * grows until most pairs pass, and the callers fall back to the float64
 * rule for every pair of such tiles.  The tile join centres every row on
 * one m; the kNN join (knn_tiles.cu) centres each block of rows on its
 * own and shifts the query fragments to the reference block's centre
 * (a_fragment), so its norms are those of two blocks.
 */
#ifndef GJ_TILE_MATH_CUH
#define GJ_TILE_MATH_CUH

#include <stdlib.h>
#include <string.h>

#include "gpu_common.cuh"
#include "../src/core/block_bounds.h"

#define TILE 128				/* rows of a block */
#define TK 32					/* filter coordinates per shared-memory chunk */
#define TSTRIDE (TK + 4)		/* padded row: conflict-free fragment loads */
#define TTHREADS 256			/* 8 warps: 2 x 4 of 64 x 32 */
#define TDELTA 4.9e-4			/* >= 2^-11 + 2^-23 + rounding of centring */
#define TACC 2.0				/* the tensor core's sum: within TACC K 2^-23 sum |products| */

/* The float32 round-to-nearest TF32 value of v (its low 13 bits zero). */
__device__ __forceinline__ float
to_tf32(float v)
{
	uint32_t	r;

	asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
	return __uint_as_float(r);
}

/*
 * Per row: f = the centred coordinates (zero past dims) as TF32 (tf32) or
 * plain float32, h = |f|^2 / 2 (when h is not NULL), r = a bound on
 * |x - m| (the real centred norm).  The centre of row i is m + (i / TILE)
 * mstride: mstride 0 centres every row on m, mstride dims each block of
 * TILE rows on its own (m then holds a centre a block).
 *
 * Each lane of a warp owns a row and sums its coordinates in order, as
 * one thread a row did; the warp moves 32 rows x 32 coordinates at a time
 * through shared memory, so that every load and store of the rows is
 * coalesced.  One thread a row reading its own row straight from memory
 * touched 32 cache lines an instruction (rows 1 KB apart at 128
 * dimensions): the kNN start's filter kernels for 1M x 128 rows took 7.6
 * ms, now 1.4 (H200), with the same values (gpu_tiles check:
 * filter-rows).  Launch: prep_launch.
 */
#define PREP_WARPS 4
#define PREP_ROWS (32 * PREP_WARPS)
static_assert(TILE % 32 == 0, "a warp's 32 rows share one block's centre");

__global__ static void __launch_bounds__(32 * PREP_WARPS)
prep_kernel(const double *x, const double *m, int64_t mstride, int64_t n, int dims, int dp,
			int tf32, float *f, float *h, double *r)
{
	/* a warp's 32 x 32 values, padded; the floats of f go back in place of their doubles */
	__shared__ double tile[PREP_WARPS][32][33];
	int			warp = threadIdx.x >> 5,
				lane = threadIdx.x & 31;
	int64_t		r0 = ((int64_t) blockIdx.x * PREP_WARPS + warp) * 32,
				i = r0 + lane;
	double		nf = 0.0,
				na = 0.0;
	const double *mi;
	double	   (*t)[33] = tile[warp];

	if (r0 >= n)
		return;					/* the whole warp: no barrier below is the CTA's */
	mi = m + (r0 / TILE) * mstride;	/* one centre for the warp's rows: 32 divides TILE */
	for (int k0 = 0; k0 < dp; k0 += 32)
	{
		for (int j = 0; j < 32; j++)
		{
			int64_t		row = r0 + j;

			t[j][lane] = row < n && k0 + lane < dims ? x[row * dims + k0 + lane] : 0.0;
		}
		__syncwarp();
		for (int kk = 0; kk < 32 && k0 + kk < dp; kk++)
		{
			int			k = k0 + kk;
			float		v = 0.0f;

			if (k < dims)
			{
				double		a = t[lane][kk] - mi[k];

				v = tf32 ? to_tf32((float) a) : (float) a;
				na += a * a;
			}
			((float *) &t[lane][kk])[0] = v;
			nf += (double) v * (double) v;
		}
		__syncwarp();
		for (int j = 0; j < 32; j++)
		{
			int64_t		row = r0 + j;

			if (row < n && k0 + lane < dp)
				f[row * dp + k0 + lane] = ((float *) &t[j][lane])[0];
		}
		__syncwarp();
	}
	if (i >= n)
		return;
	if (h != NULL)
		h[i] = (float) (nf * 0.5);
	/* the computed norm, widened past every rounding in it and in a */
	r[i] = sqrt(na) * (1.0 + 1e-9);
}

/* prep_kernel over n rows, on s. */
static inline void
prep_launch(const double *x, const double *m, int64_t mstride, int64_t n, int dims, int dp,
			int tf32, float *f, float *h, double *r, cudaStream_t s)
{
	prep_kernel<<<(unsigned) ((n + PREP_ROWS - 1) / PREP_ROWS), 32 * PREP_WARPS, 0, s>>>(
		x, m, mstride, n, dims, dp, tf32, f, h, r);
}

/* Per block of TILE rows: the largest r. */
__global__ static void
block_max_kernel(const double *r, int64_t n, int64_t nblocks, double *blockr)
{
	int64_t		b = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	double		mx = 0.0;

	if (b >= nblocks)
		return;
	for (int64_t i = b * TILE; i < n && i < (b + 1) * TILE; i++)
		mx = r[i] > mx ? r[i] : mx;
	blockr[b] = mx;
}

/*
 * Both joins' filter preparation for n rows (on the device): the TF32 rows
 * f and h (prep_kernel, r a scratch of n + 1) about the centre m, or with
 * mstride dims about each block's own centre in m, each block's largest
 * norm in blockr, and the largest of all on the host (*maxr: the callers'
 * test of whether float32 holds).  Waits for s.
 */
static cudaError_t
filter_rows(const double *x, const double *m, int64_t mstride, int64_t n, int dims, int dp,
			float *f, float *h, double *r, double *blockr, cudaStream_t s, double *maxr)
{
	int64_t		nb = (n + TILE - 1) / TILE;
	double	   *hb = (double *) malloc(sizeof(double) * (nb + 1));
	cudaError_t e = hb == NULL ? cudaErrorMemoryAllocation : cudaSuccess;

	*maxr = 0.0;
	if (e == cudaSuccess && n > 0)
	{
		prep_launch(x, m, mstride, n, dims, dp, 1, f, h, r, s);
		block_max_kernel<<<(unsigned) ((nb + 255) / 256), 256, 0, s>>>(r, n, nb, blockr);
		e = cudaGetLastError();
	}
	if (e == cudaSuccess && nb > 0)
		e = cudaMemcpyAsync(hb, blockr, sizeof(double) * nb, cudaMemcpyDeviceToHost, s);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(s);
	for (int64_t b = 0; e == cudaSuccess && b < nb; b++)
		*maxr = hb[b] > *maxr ? hb[b] : *maxr;
	free(hb);
	return e;
}

/*
 * s0 for a threshold b on squared distances (eps2, or a query's k-th
 * distance): sqrt(b (1 + (d + 3) 2^-52)), rounded up, the largest real
 * distance a pair passing the float64 rule at b can have.
 */
__device__ __host__ __forceinline__ double
filter_s0(double b, int dims)
{
	return gj_rule_s0(b, dims);
}

/*
 * The filter's constant c for blocks of largest norms rq and rb (float,
 * rounded up), or +inf when it cannot be used (see the file header).
 * qsum: the query row's h was summed in float32 from its dp squared TF32
 * coordinates (the shifted products below), not rounded once from float64.
 */
__device__ static float
filter_constant(double s0, int dp, double rq, double rb, int qsum)
{
	double		k = (double) dp;
	double		g1 = (1.0 + TDELTA) * (1.0 + TDELTA);
	double		rho = s0 + TDELTA * (rq + rb) + 1e-300;
	/* the products' error: TACC K units of 2^-23 |f_i| |f_j| (the file header) */
	double		nch = (double) ((dp + TK - 1) / TK);
	double		eg = TACC * k * 0x1p-23 * g1 * rq * rb + (k + nch) * 0x1p-148;
	double		c0 = rho * rho * 0.5 + eg;
	double		c = c0 + 0x1p-21 * (g1 * (rq * rq + rb * rb) + c0);

	/*
	 * a float32 sum of dp non-negative terms (squares of TF32 values are
	 * exact in float32), at most dp + 2 roundings deep: within
	 * (dp + 2) 2^-24 of N <= g1 rq^2, and h is half of it
	 */
	if (qsum)
		c += (k + 2.0) * 0x1p-25 * 1.01 * g1 * rq * rq;

	c *= 1.0 + 1e-12;
	if (!(c < 1e37))
		return INFINITY;
	return __double2float_ru(c);
}

/*
 * Rows [row0, row0 + TILE) x chunk [k0, k0 + w) of f (n x dp) into s (zero
 * past n): by plain loads and stores, or (ASYNC) by cp.async, so that the
 * next chunk arrives while this one is multiplied (commit and wait with
 * cp_async_commit/wait).
 */
template <bool ASYNC>
__device__ __forceinline__ void
load_chunk_by(const float *f, int64_t n, int dp, int64_t row0, int k0, int w, float *s)
{
	int			w4 = w / 4;

	for (int e = threadIdx.x; e < TILE * w4; e += TTHREADS)
	{
		int			r = e / w4,
					c = e - r * w4;
		int			ok = row0 + r < n;
		float	   *dst = s + r * TSTRIDE + 4 * c;

		if (ASYNC)
		{
			const float *src = ok ? f + (row0 + r) * dp + k0 + 4 * c : f;

			/* 16 bytes, or none read and 16 zeros written past n */
			asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
						 :: "r"((unsigned) __cvta_generic_to_shared(dst)), "l"(src),
						 "r"(ok ? 16 : 0) : "memory");
		}
		else
		{
			float4		v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

			if (ok)
				v = *(const float4 *) (f + (row0 + r) * dp + k0 + 4 * c);
			*(float4 *) dst = v;
		}
	}
}

__device__ __forceinline__ void
load_chunk(const float *f, int64_t n, int dp, int64_t row0, int k0, int w, float *s)
{
	load_chunk_by<false>(f, n, dp, row0, k0, w, s);
}

__device__ __forceinline__ void
load_chunk_async(const float *f, int64_t n, int dp, int64_t row0, int k0, int w, float *s)
{
	load_chunk_by<true>(f, n, dp, row0, k0, w, s);
}

__device__ __forceinline__ void
cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;" ::: "memory");
}

/* Wait until at most n committed groups are still in flight. */
template <int n>
__device__ __forceinline__ void
cp_async_wait(void)
{
	asm volatile("cp.async.wait_group %0;" :: "n"(n) : "memory");
}

__device__ __forceinline__ void
mma_tf32(float *c, const uint32_t *a, const uint32_t *b)
{
	asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
				 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
				 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
				 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/*
 * The query fragments' shift (SHIFT): the query rows in sa are float32
 * coordinates about their own block's centre, dsh the chunk's offsets from
 * it to the reference block's centre; a fragment element is then the TF32
 * of their sum, and (norms) the thread adds its squares to nsq[mi][0] (row
 * g) and nsq[mi][1] (row g + 8), the rows' h in parts.
 */
template <bool SHIFT>
__device__ __forceinline__ void
a_fragment(const float *p, const float *dsh, int col, bool norms, float *nsq, uint32_t *a)
{
	float		v[4] = {p[0], p[8 * TSTRIDE], p[4], p[8 * TSTRIDE + 4]};

	if (SHIFT)
	{
		float		d0 = dsh[col],
					d1 = dsh[col + 4];

		v[0] = to_tf32(__fadd_rn(v[0], d0));
		v[1] = to_tf32(__fadd_rn(v[1], d0));
		v[2] = to_tf32(__fadd_rn(v[2], d1));
		v[3] = to_tf32(__fadd_rn(v[3], d1));
		if (norms)
		{
			nsq[0] = __fadd_rn(nsq[0], __fadd_rn(__fmul_rn(v[0], v[0]), __fmul_rn(v[2], v[2])));
			nsq[1] = __fadd_rn(nsq[1], __fadd_rn(__fmul_rn(v[1], v[1]), __fmul_rn(v[3], v[3])));
		}
	}
	for (int e = 0; e < 4; e++)
		a[e] = __float_as_uint(v[e]);
}

/*
 * One chunk of w coordinates (a multiple of 8) of the tile's products: the
 * warp's 64 x 32 of G += A B^T from the query rows in sa and the reference
 * rows in sb (row-major, TSTRIDE apart).  Fragments as mma.m16n8k8 .tf32
 * lays them out: lane (g, t) = (lane / 4, lane % 4) holds A at rows g and
 * g + 8, columns t and t + 4, B at column g, rows t and t + 4, and the
 * sums at row g (elements 0, 1) and g + 8 (2, 3), columns 2t and 2t + 1.
 * SHIFT: see a_fragment.
 */
template <bool SHIFT>
__device__ __forceinline__ void
tile_products_by(const float *sa, const float *sb, int w, int wm, int wn, int g, int t,
				 float acc[4][4][4], const float *dsh, bool norms, float nsq[4][2])
{
	for (int kk = 0; kk < w; kk += 8)
	{
		uint32_t	bf[4][2];

		for (int ni = 0; ni < 4; ni++)
		{
			const float *s = sb + (wn * 32 + ni * 8 + g) * TSTRIDE + kk + t;

			bf[ni][0] = __float_as_uint(s[0]);
			bf[ni][1] = __float_as_uint(s[4]);
		}
		/* a row block's A fragment at a time: fewer registers live beside acc */
		for (int mi = 0; mi < 4; mi++)
		{
			uint32_t	af[4];

			a_fragment<SHIFT>(sa + (wm * 64 + mi * 16 + g) * TSTRIDE + kk + t, dsh, kk + t, norms,
							  SHIFT ? nsq[mi] : NULL, af);
			for (int ni = 0; ni < 4; ni++)
				mma_tf32(acc[mi][ni], af, bf[ni]);
		}
	}
}

__device__ __forceinline__ void
tile_products(const float *sa, const float *sb, int w, int wm, int wn, int g, int t,
			  float acc[4][4][4])
{
	tile_products_by<false>(sa, sb, w, wm, wn, g, t, acc, NULL, false, NULL);
}

/* The row and column (within the tile) of element e of acc[mi][ni]. */
#define ACC_ROW(wm, mi, g, e) ((wm) * 64 + (mi) * 16 + (g) + ((e) >= 2 ? 8 : 0))
#define ACC_COL(wn, ni, t, e) ((wn) * 32 + (ni) * 8 + 2 * (t) + ((e) & 1))

/*
 * A thread's 64 filter tests, acc >= hrow + hcol (hrow: its 8 rows, hcol:
 * its 8 columns, in ACC_ROW/ACC_COL order), as bits: a few instructions a
 * test and no branch, since kept pairs are rare; element (mi, ni, e) is
 * bit (mi & 1) * 16 + ni * 4 + e of keep[mi >> 1].
 */
__device__ __forceinline__ void
tile_keep_bits(const float acc[4][4][4], const float *hrow, const float *hcol, uint32_t *keep)
{
	keep[0] = keep[1] = 0;
	for (int mi = 0; mi < 4; mi++)
		for (int ni = 0; ni < 4; ni++)
			for (int e = 0; e < 4; e++)
				keep[mi >> 1] |= (acc[mi][ni][e] >= hrow[mi * 2 + (e >> 1)] + hcol[ni * 2 + (e & 1)]) ?
					1u << ((mi & 1) * 16 + ni * 4 + e) : 0u;
}

/* Take the next kept element off keep (false: none left): its row and column in the tile. */
__device__ __forceinline__ bool
tile_next_kept(uint32_t *keep, int wm, int wn, int g, int t, int *row, int *col)
{
	int			b,
				mi,
				ni,
				e;

	/* words by name, not by a computed index: keep stays in registers */
	if (keep[0] != 0)
	{
		b = __ffs(keep[0]) - 1;
		keep[0] &= keep[0] - 1;
		mi = b >> 4;
	}
	else if (keep[1] != 0)
	{
		b = __ffs(keep[1]) - 1;
		keep[1] &= keep[1] - 1;
		mi = 2 + (b >> 4);
	}
	else
		return false;
	ni = (b >> 2) & 3;
	e = b & 3;
	*row = ACC_ROW(wm, mi, g, e);
	*col = ACC_COL(wn, ni, t, e);
	return true;
}

/*
 * The float64 rule for rows a and b (dims wide), stopping early once past
 * bound (a pair that passes gets the full, identical sum).
 */
__device__ __forceinline__ double
exact_sqdist(const double *a, const double *b, int dims, double bound)
{
	double		s = 0.0;

	for (int k = 0; k < dims; k++)
	{
		double		t = __dsub_rn(a[k], b[k]);

		s = __dadd_rn(s, __dmul_rn(t, t));
		if ((k & 7) == 7 && s > bound)
			break;
	}
	return s;
}

/*
 * The tiles' index on the device (block_bounds.h; dev_bounds in
 * gpu_common.cuh): per block of TILE rows its box, centre and radius.
 */
/* One CTA (256 threads) a block of TILE rows of x. */
__global__ static void __launch_bounds__(256)
bounds_kernel(const double *x, int64_t n, int dims, dev_bounds B)
{
	__shared__ double worst[8];
	int64_t		b = blockIdx.x,
				r0 = b * TILE,
				r1 = r0 + TILE < n ? r0 + TILE : n;
	int			warp = threadIdx.x >> 5,
				lane = threadIdx.x & 31;
	double		wmax = 0.0;

	for (int k = threadIdx.x; k < dims; k += blockDim.x)
	{
		double		l = x[r0 * dims + k],
					h = l,
					s = 0.0;

		for (int64_t i = r0; i < r1; i++)
		{
			double		v = x[i * dims + k];

			l = v < l ? v : l;
			h = v > h ? v : h;
			s = __dadd_rn(s, v);
		}
		B.lo[b * dims + k] = l;
		B.hi[b * dims + k] = h;
		B.c[b * dims + k] = s / (double) (r1 - r0);
	}
	__syncthreads();			/* the centre, written above, read below */
	for (int64_t i = r0 + warp; i < r1; i += 8)
	{
		double		s = 0.0;

		for (int k = lane; k < dims; k += 32)
		{
			double		t = __dsub_rn(x[i * dims + k], B.c[b * dims + k]);

			s = __dadd_rn(s, __dmul_rn(t, t));
		}
		for (int o = 16; o > 0; o >>= 1)
			s = __dadd_rn(s, __shfl_xor_sync(0xffffffffu, s, o));
		if (s != s)
			wmax = INFINITY;	/* NaN: the ball never rules a pair out */
		else if (s > wmax)
			wmax = s;
	}
	if (lane == 0)
		worst[warp] = wmax;
	__syncthreads();
	if (threadIdx.x == 0)
	{
		double		m = 0.0;

		for (int w = 0; w < 8; w++)
			m = worst[w] > m ? worst[w] : m;
		B.r[b] = gj_block_radius_up(m, dims);
	}
}

/*
 * The sums of gj_block_terms over every dimension for block i of A and
 * blocks j[0 .. U - 1] of B (-1: none), by one warp (every lane gets
 * them): gap2, and cen2 = |c_i - c_j|^2 (the kNN filter's shift between
 * the blocks' centres).  Several blocks at once keep their loads in
 * flight together: one at a time waited on L2 at every block (measured:
 * the kNN start's scan over 7,813 blocks took a third of a 1M x 128 CTA's
 * time).
 */
template <int U>
__device__ __forceinline__ void
warp_block_sums_n(const dev_bounds &A, int64_t i, const dev_bounds &B, const int64_t *j,
				  int dims, int lane, double *gap2, double *cen2)
{
	const double *lo1 = A.lo + i * dims,
			   *hi1 = A.hi + i * dims,
			   *c1 = A.c + i * dims;

#pragma unroll
	for (int u = 0; u < U; u++)
	{
		gap2[u] = 0.0;
		cen2[u] = 0.0;
	}
	for (int k = lane; k < dims; k += 32)
	{
		double		lo = lo1[k],
					hi = hi1[k],
					c = c1[k];

#pragma unroll
		for (int u = 0; u < U; u++)
			if (j[u] >= 0)
			{
				int64_t		o = j[u] * dims + k;

				gj_block_terms(lo, hi, c, B.lo[o], B.hi[o], B.c[o], &gap2[u], &cen2[u]);
			}
	}
#pragma unroll
	for (int u = 0; u < U; u++)
		for (int o = 16; o > 0; o >>= 1)
		{
			gap2[u] += __shfl_xor_sync(0xffffffffu, gap2[u], o);
			cen2[u] += __shfl_xor_sync(0xffffffffu, cen2[u], o);
		}
}

/* warp_block_sums_n for one block j of B. */
__device__ __forceinline__ void
warp_block_sums(const dev_bounds &A, int64_t i, const dev_bounds &B, int64_t j, int dims,
				int lane, double *gap2, double *cen2)
{
	warp_block_sums_n<1>(A, i, B, &j, dims, lane, gap2, cen2);
}

/* gj_block_lb2 of block i of A and block j of B, by one warp (every lane gets it). */
__device__ __forceinline__ double
warp_block_lb2(const dev_bounds &A, int64_t i, const dev_bounds &B, int64_t j, int dims,
			   int lane)
{
	double		gap2,
				cen2;

	warp_block_sums(A, i, B, j, dims, lane, &gap2, &cen2);
	return gj_block_lb2(gap2, cen2, A.r[i], B.r[j], dims);
}

/* Room for the bounds of nb blocks in dims (cudaMalloc'd; NULLs on failure). */
static cudaError_t
dev_bounds_alloc(dev_bounds *B, int64_t nb, int dims)
{
	size_t		sz = sizeof(double) * (size_t) (nb + 1) * dims;
	cudaError_t e;

	memset(B, 0, sizeof(*B));
	e = cudaMalloc(&B->lo, sz);
	if (e == cudaSuccess)
		e = cudaMalloc(&B->hi, sz);
	if (e == cudaSuccess)
		e = cudaMalloc(&B->c, sz);
	if (e == cudaSuccess)
		e = cudaMalloc(&B->r, sizeof(double) * (nb + 1));
	return e;
}

static void
dev_bounds_free(dev_bounds *B)
{
	cudaFree(B->lo);
	cudaFree(B->hi);
	cudaFree(B->c);
	cudaFree(B->r);
	memset(B, 0, sizeof(*B));
}

#endif							/* GJ_TILE_MATH_CUH */
