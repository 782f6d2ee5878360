/*
 * knn_tiles.cu
 *		The GPU kNN join's brute force for many dimensions: the tensor-core
 *		filter of tile_math.cuh, each query's own k-th distance as the
 *		threshold, the float64 rule and the k buffer for what it keeps.
 *
 * A CTA holds 128 queries of a batch and sweeps every block of 128
 * references.  For each block it forms the TF32 products of the two
 * tiles, and keeps reference j for query i when the filter cannot rule out
 * S(i, j) <= tau_i, tau_i being the query's k-th squared distance so far
 * (until it holds k, the seed bound: the k-th distance to 4k + 64
 * references near it, seed_bound): the constant of tile_math.cuh at that
 * threshold, from the query's own norm bound and the block's, both about
 * the reference block's centre (see "The filter's centres" below).  The
 * kept references of each query wait in a list in shared
 * memory; a wave at a time the whole CTA tests them by the float64 rule
 * (refine_lists), stopping once past tau_i, and the query's thread offers
 * those that pass to its k buffer (knn_search.h, the CPU engine's, in
 * global memory as the other GPU kNN kernels keep it), which lowers
 * tau_i.  So even the first block passes few pairs, later ones about
 * k / rows seen of their rows (the k-th distance falls fast), and the answer is
 * exactly the CPU engine's: the (distance, id) order, ties included,
 * decided by the same rule and the same buffer.
 *
 * The references stay on the device whole (one partition); the queries of
 * a batch get their filter rows (prep_kernel) just before the sweep, and
 * the chunks of both arrive by cp.async into two buffers, the next while
 * this one multiplies.  The stop word is read every round of 8 blocks.
 *
 * With the blocks' index (gpujoin.knn_method = blocks; rows sorted by
 * block_index.c) a CTA starts at the reference block whose bounds are
 * nearest its queries' and works outward, 8 blocks a round, skipping a
 * block whose bounds are provably past every one of its queries' k-th
 * distance (block_bounds.h): the answer stays brute force's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tile_math.cuh"
#include "../src/core/knn_search.h"

/*
 * KT_PROFILE (regress builds only): per-CTA cycles in the filter, the
 * lists and the refine, and counts of exact tests and offers, summed over
 * the CTAs, for placing the kernel's time (gj_knn_prof_dump()).
 */
#ifdef KT_PROFILE
__device__ unsigned long long kt_prof[20];
#define KT_ADD(i, v) atomicAdd(&kt_prof[i], (unsigned long long) (v))
#else
#define KT_ADD(i, v) ((void) 0)
#endif

/*
 * The lists.  A query's kept references wait in its list (up to KT_CAP
 * entries: a block of the round, 3 bits, and a column, 7) until the round
 * ends or a list is full; then the whole CTA tests them (refine_lists).
 * A warp tests KT_PAIRS pairs at once, 32 coordinates at a time: its lanes
 * load 32 consecutive coordinates of one pair (coalesced), form the terms
 * and stage them in shared memory, where the pair's lane adds them in
 * coordinate order.  So the sum is the float64 rule's, while the loads of
 * 16 pairs are in flight together: testing a pair in one thread, one
 * coordinate after another, had every query wait on memory latency at
 * every block (measured: 5.5x the filter's time at 768 dims).
 */
#define KT_CAP TILE
#define KT_PAIRS 16
#define KT_STRIDE 33			/* a staged pair's 32 terms, padded: conflict-free sums */
#define KT_WAVE (KT_PAIRS * (TTHREADS / 32))	/* pairs a wave of the CTA tests */

#define KT_SMEM (4 * TILE * TSTRIDE * sizeof(float) + TILE * KT_CAP * sizeof(uint16_t) + \
				 TILE * (sizeof(int) + sizeof(float)))

typedef struct knn_tiles_params
{
	const double *rx;			/* references, float64, nref x dims */
	const int64_t *rid;
	const float *rf;			/* their filter rows, nref x dp */
	const float *rh;
	const double *rblockr;		/* per block of references: the largest R */
	int64_t		nref;
	const double *qx;			/* the batch's queries, float64 */
	const float *qf;			/* float32, about their block's centre (QB) */
	const double *qr;			/* per query: its R about that centre */
	int64_t		nq;
	int			dims;
	int			dp;
	int			k;
	int			heap;
	int64_t		self0;			/* queries are references self0.. (self join), or -1 */
	int			prune;			/* the blocks' index */
	dev_bounds	RB;				/* bounds of the reference blocks (their centres) */
	dev_bounds	QB;				/* ... and of the batch's query blocks */
	double	   *bd;				/* k buffers, entry e of query t at e * nq + t */
	int64_t    *bid;
	int32_t    *bn;
	int32_t    *btop;
	const int  *stop;
} knn_tiles_params;

/*
 * The order a CTA visits reference blocks in: from the block whose bounds
 * are nearest its queries' (start), outward in the blocks' order (sorted
 * rows make neighbouring blocks near), so the k-th distances fall early:
 * visit s is start, start + 1, start - 1, start + 2, ..., and once one
 * side is used up, the rest of the other; visits 0 .. nrb - 1 are every
 * block once.
 */
__device__ __forceinline__ int64_t
visit_block(int64_t start, int64_t nrb, int64_t s)
{
	int64_t		below = start,
				above = nrb - 1 - start,
				m = below < above ? below : above;

	if (s <= 2 * m)
	{
		int64_t		off = (s + 1) / 2;

		return s % 2 == 1 ? start + off : start - off;
	}
	return above > below ? start + (s - m) : start - (s - m);
}

/*
 * The blocks' queue (with the index).  A CTA of 128 queries in many
 * dimensions keeps a few hundred blocks of thousands (1M x 128 in 20
 * clusters: 394 of 7,813), and a round of 8 visits that held none still
 * paid its bounds, barriers and an empty refine: 92% of the rounds, a
 * quarter of the kernel (KT_PROFILE).  So the bounds are taken apart from
 * the rounds: while the queue holds fewer than a round, the 8 warps bound
 * the next KT_SCAN visits, KT_SCAN_U blocks a warp with their loads in
 * flight together, and the kept blocks join the ring in visiting order;
 * a round takes the next 8.  Every kept block's bound is checked again
 * against the k-th distances when its round starts (they only fall).
 */
#define KT_SCAN_U 4
#define KT_SCAN (8 * KT_SCAN_U)
#define KT_QUEUE 64				/* a power of two over 7 + KT_SCAN */

/*
 * Warp warp's part of a pass of the queue: visits s0 + warp KT_SCAN_U + u
 * bounded against s0b (gj_rule_s0 of the CTA's largest k-th distance) and
 * written, uncompacted, at slot0 + warp KT_SCAN_U + u of the ring: the
 * block, or -1 past the last visit or when no pair can pass; its lower
 * bound rounded down to float and |c_Q - c_R| (filter_s0) rounded up, so
 * both stay bounds.
 */
__device__ __forceinline__ void
scan_visits(const knn_tiles_params &P, int64_t start, int64_t nrb, int64_t s0, double s0b,
			int slot0, int *kq_rb, float *kq_lb2, float *kq_dlen, int warp, int lane)
{
	int64_t		rb[KT_SCAN_U];
	double		gap2[KT_SCAN_U],
				cen2[KT_SCAN_U];

#pragma unroll
	for (int u = 0; u < KT_SCAN_U; u++)
	{
		int64_t		s = s0 + warp * KT_SCAN_U + u;

		rb[u] = s < nrb ? visit_block(start, nrb, s) : -1;
	}
	warp_block_sums_n<KT_SCAN_U>(P.QB, blockIdx.x, P.RB, rb, P.dims, lane, gap2, cen2);
	if (lane == 0)
#pragma unroll
		for (int u = 0; u < KT_SCAN_U; u++)
		{
			int			slot = (slot0 + warp * KT_SCAN_U + u) & (KT_QUEUE - 1);
			double		lb2 = rb[u] >= 0 ?
				gj_block_lb2(gap2[u], cen2[u], P.QB.r[blockIdx.x], P.RB.r[rb[u]], P.dims) : 0.0;
			int			keep = rb[u] >= 0 && !gj_block_far(lb2, s0b);

			kq_rb[slot] = keep ? (int) rb[u] : -1;
			kq_lb2[slot] = __double2float_rd(lb2);
			kq_dlen[slot] = __double2float_ru(filter_s0(cen2[u], P.dims));
#ifdef KT_PROFILE
			if (rb[u] >= 0 && !keep)
				KT_ADD(9, 1);
#endif
		}
}

/* Warp 0 packs a pass's kept blocks at the ring's tail, in visiting order. */
__device__ __forceinline__ void
compact_visits(int *kq_rb, float *kq_lb2, float *kq_dlen, int *kq_tail, int lane)
{
	int			tail = *kq_tail,
				slot = (tail + lane) & (KT_QUEUE - 1),
				rb = kq_rb[slot];
	float		lb2 = kq_lb2[slot],
				dlen = kq_dlen[slot];
	unsigned	kept = __ballot_sync(0xffffffffu, rb >= 0);

	__syncwarp();				/* every lane has read its slot */
	if (rb >= 0)
	{
		int			to = (tail + __popc(kept & ((1u << lane) - 1))) & (KT_QUEUE - 1);

		kq_rb[to] = rb;
		kq_lb2[to] = lb2;
		kq_dlen[to] = dlen;
	}
	if (lane == 0)
		*kq_tail = tail + __popc(kept);
}

/* The reference row of list entry e (a block of the round, a column). */
__device__ __forceinline__ int64_t
entry_ref(const int64_t *round_rb, uint16_t e)
{
	return round_rb[e >> 7] * TILE + (e & 127);
}

/*
 * First thresholds for the CTA's queries before any block is swept (the
 * seed bounds): for query qi, a bound on the k-th smallest float64-rule
 * distance to m = 4k + 64 distinct references near it: its neighbours in
 * the rows' order in a self join (sorted rows put them near), else the
 * rows the sweep starts at.  The query's k-th distance over all
 * references can only be smaller, so a pair beyond this bound is never in
 * the answer, and the sweep's first blocks filter at once instead of
 * testing all their pairs by the rule and offering each (measured: half
 * of all exact tests of a 1M x 128 self join were the first block's).
 * +inf when fewer than k references can be taken, or for large k
 * (KT_SEED_MAX_K).
 *
 * One warp a query, KT_SCAN_U references at a time: the lanes take
 * coordinates lane, lane + 32, ... (coalesced) and the sums meet by
 * shuffles.  That order is not the rule's, so each sum is within a
 * factor (1 + u)^(d - 1) / (1 - u)^(d - 1) < 1 + (d + 1) 2^-51 of the
 * rule's (u = 2^-53; nonnegative terms, the same terms), and the k-th
 * smallest of them, found by a radix select on its 32 high bits (the low
 * 32 set: not below it), times that factor rounded up, is not below the
 * rule's k-th.  (A query's thread summing in the rule's order waited on
 * memory at every coordinate: a quarter of the CTA's time, KT_PROFILE.)
 * The m sums of a warp wait in v (KT_SEED_MAX_M doubles a warp).
 */
#define KT_SEED_MAX_K 256
#define KT_SEED_MAX_M (4 * KT_SEED_MAX_K + 64)
static_assert(TTHREADS / 32 * KT_SEED_MAX_M * sizeof(double) <= 4 * TILE * TSTRIDE * sizeof(float),
			  "the seeds' sums fit in the filter's tiles");

__device__ static void
seed_bounds(const knn_tiles_params &P, int64_t q0, int64_t start, double *v, double *qseed,
			int warp, int lane)
{
	v += warp * KT_SEED_MAX_M;
	for (int r = warp; r < TILE; r += TTHREADS / 32)
	{
		int64_t		qi = q0 + r,
					self = P.self0 >= 0 ? P.self0 + qi : -1,
					avail = P.nref - (self >= 0 && self < P.nref),
					m = 4 * (int64_t) P.k + 64,
					j0,
					j1;
		const double *q = P.qx + qi * P.dims;
		int			n = 0;
		uint64_t	prefix = 0;
		int64_t		kk = P.k;

		if (qi >= P.nq || P.k > KT_SEED_MAX_K || avail < P.k)
		{
			if (lane == 0)
				qseed[r] = INFINITY;
			continue;			/* the same for the whole warp */
		}
		m = m < avail ? m : avail;
		j0 = self >= 0 ? self - m / 2 : start * TILE;
		if (j0 > P.nref - m - (self >= 0))
			j0 = P.nref - m - (self >= 0);
		if (j0 < 0)
			j0 = 0;
		/* m references besides the query itself: one more when it is among them */
		j1 = j0 + m + (self >= j0 && self < j0 + m);
		for (int64_t j = j0; j < j1; j += KT_SCAN_U)
		{
			int64_t		jj[KT_SCAN_U];
			double		sum[KT_SCAN_U];

#pragma unroll
			for (int u = 0; u < KT_SCAN_U; u++)
			{
				jj[u] = j + u < j1 && j + u != self ? j + u : -1;
				sum[u] = 0.0;
			}
			for (int d = lane; d < P.dims; d += 32)
			{
				double		x = q[d];

#pragma unroll
				for (int u = 0; u < KT_SCAN_U; u++)
					if (jj[u] >= 0)
					{
						double		t = __dsub_rn(x, P.rx[jj[u] * P.dims + d]);

						sum[u] = __dadd_rn(sum[u], __dmul_rn(t, t));
					}
			}
#pragma unroll
			for (int u = 0; u < KT_SCAN_U; u++)
			{
				for (int o = 16; o > 0; o >>= 1)
					sum[u] = __dadd_rn(sum[u], __shfl_xor_sync(0xffffffffu, sum[u], o));
				if (jj[u] >= 0)
				{
					if (lane == 0)
						v[n] = sum[u];
					n++;
				}
			}
		}
		__syncwarp();
		/* the k-th smallest's 32 high bits (NaN counts as +inf) */
		for (int bit = 63; bit >= 32; bit--)
		{
			uint64_t	above = bit == 63 ? 0 : ~0ULL << (bit + 1);
			int			c = 0;

			for (int i = lane; i < n; i += 32)
			{
				double		x = v[i];
				uint64_t	key = isnan(x) ? 0x7FF0000000000000ULL : (uint64_t) __double_as_longlong(x);

				c += (key & above) == prefix && !((key >> bit) & 1);
			}
			for (int o = 16; o > 0; o >>= 1)
				c += __shfl_xor_sync(0xffffffffu, c, o);
			if (kk > c)
			{
				prefix |= 1ULL << bit;
				kk -= c;
			}
		}
		__syncwarp();			/* v is read before the next query writes it */
		if (lane == 0)
			qseed[r] = prefix >= 0x7FF0000000000000ULL ? INFINITY :
				__dmul_ru(__longlong_as_double((long long) (prefix | 0xFFFFFFFFULL)),
						  1.0 + (P.dims + 1) * 0x1p-51);
	}
}

/*
 * Test every pair in the lists by the float64 rule, stopping once past the
 * query's k-th distance, and offer those that pass to the query's k
 * buffer, in list order (the owner thread, threadIdx.x < TILE, holds the
 * buffer and tau); then empty the lists.  Every thread calls it.  stage
 * is shared memory of KT_STAGE doubles a warp (the filter's tiles, free
 * here).
 */
__device__ __forceinline__ void
refine_lists(const knn_tiles_params &P, int64_t q0, const uint16_t *list, int *nlist,
			 int *pre, double *sdw, double *stage, const int64_t *round_rb, double *qtau,
			 gj_kbuf *kb, double *tau, double tau0, int mine, int *listed)
{
	__shared__ const double *pq[TTHREADS / 32][KT_PAIRS];
	__shared__ const double *pr[TTHREADS / 32][KT_PAIRS];
	int			warp = threadIdx.x >> 5,
				lane = threadIdx.x & 31;
	double	   *T = stage + warp * KT_PAIRS * KT_STRIDE;
	int			M;
#ifdef KT_PROFILE
	long long	kt0 = clock64();
#endif

	/* the lists' offsets: a prefix sum by warp 0, four lists a lane */
	if (warp == 0)
	{
		int			c[4],
					sum = 0,
					incl;

		for (int i = 0; i < 4; i++)
		{
			c[i] = nlist[lane * 4 + i];
			sum += c[i];
		}
		incl = sum;
		for (int o = 1; o < 32; o <<= 1)
		{
			int			v = __shfl_up_sync(0xffffffffu, incl, o);

			if (lane >= o)
				incl += v;
		}
		sum = incl - sum;
		for (int i = 0; i < 4; i++)
		{
			pre[lane * 4 + i] = sum;
			sum += c[i];
		}
		if (lane == 31)
			pre[TILE] = incl;
	}
	__syncthreads();
	M = pre[TILE];
	if (threadIdx.x == 0)
	{
		KT_ADD(3, M);
		KT_ADD(M > 0 ? 10 : 11, 1);
	}

	for (int base = 0; base < M; base += KT_WAVE)
	{
#ifdef KT_PROFILE
		long long	kt_w = clock64();
#endif
		int			f = base + warp * KT_PAIRS + lane;
		int			valid = 0,
					act;
		double		s = 0.0,
					bound = 0.0;
		unsigned	am;

		if (lane < KT_PAIRS && f < M)
		{
			/* the pair's query: the last list with pre[row] <= f */
			int			lo = 0,
						hi = TILE;
			int64_t		j;

			while (hi - lo > 1)
			{
				int			mid = (lo + hi) / 2;

				if (pre[mid] <= f)
					lo = mid;
				else
					hi = mid;
			}
			j = entry_ref(round_rb, list[lo * KT_CAP + f - pre[lo]]);
			if (j < P.nref && !(P.self0 >= 0 && j == P.self0 + q0 + lo))
			{
				valid = 1;
				pq[warp][lane] = P.qx + (q0 + lo) * P.dims;
				pr[warp][lane] = P.rx + j * P.dims;
				bound = qtau[lo];
			}
		}
		act = valid;
		am = __ballot_sync(0xffffffffu, act);
		__syncwarp();
		for (int k0 = 0; k0 < P.dims && am != 0; k0 += 32)
		{
			int			w = P.dims - k0 < 32 ? P.dims - k0 : 32;

			if (lane < w)
			{
				/* every load first, so that they are in flight at once */
				double		ta[KT_PAIRS];

#pragma unroll
				for (int p = 0; p < KT_PAIRS; p++)
					ta[p] = (am >> p) & 1 ?
						__dsub_rn(__ldg(pq[warp][p] + k0 + lane), __ldg(pr[warp][p] + k0 + lane)) : 0.0;
#pragma unroll
				for (int p = 0; p < KT_PAIRS; p++)
					T[p * KT_STRIDE + lane] = __dmul_rn(ta[p], ta[p]);
			}
			__syncwarp();
			if (act)
				for (int d = 0; d < w; d++)
				{
					s = __dadd_rn(s, T[lane * KT_STRIDE + d]);
					/* exact_sqdist's early stop, at the same coordinates */
					if (((k0 + d) & 7) == 7 && s > bound)
					{
						act = 0;
						break;
					}
				}
			am = __ballot_sync(0xffffffffu, act);
			__syncwarp();
		}
#ifdef KT_PROFILE
		if (threadIdx.x == 0)
			KT_ADD(13, clock64() - kt_w);
#endif
		/* a stopped sum is past bound, so past tau: never offered */
		if (lane < KT_PAIRS && f < M)
			sdw[f - base] = valid ? s : NAN;
		__syncthreads();
#ifdef KT_PROFILE
		long long	kt_o = clock64();
#endif

		if (mine)
		{
			int			t = threadIdx.x,
						a = pre[t] > base ? pre[t] : base,
						b = pre[t + 1] < base + KT_WAVE ? pre[t + 1] : base + KT_WAVE;

			for (int g = a; g < b; g++)
			{
				double		sd = sdw[g - base];

				if (sd <= *tau)
				{
					KT_ADD(4, 1);
					gj_kb_offer(kb, sd, P.rid[entry_ref(round_rb, list[t * KT_CAP + g - pre[t]])]);
					*tau = fmin(gj_kb_bound(kb), tau0);
				}
			}
			qtau[t] = *tau;
		}
		__syncthreads();
#ifdef KT_PROFILE
		if (threadIdx.x == 0)
		{
			KT_ADD(6, clock64() - kt_o);
			KT_ADD(7, 1);
		}
#endif
	}
	if (threadIdx.x < TILE)
		nlist[threadIdx.x] = 0;
	if (threadIdx.x == 0)
		*listed = 0;
	__syncthreads();
#ifdef KT_PROFILE
	if (threadIdx.x == 0)
		KT_ADD(2, clock64() - kt0);
#endif
}

/*
 * The filter's centres.  Query rows are float32 about their own block's
 * centre c_Q, reference rows TF32 about theirs, c_R; for a pair of blocks
 * the query fragments are shifted by c_Q - c_R (a_fragment) so both sides
 * are about c_R, and the rows' norms in the filter's bound are those of
 * two blocks, not of the whole set about its mean: on clustered data ten
 * times smaller, and the TF32 roundings (TDELTA (R_Q + R_B)) with them.
 * The shifted query row's error: the float32 roundings of x - c_Q, of
 * c_Q - c_R and of their sum are each within 2^-24 of R_Q + |c_Q - c_R|,
 * which bounds |x - c_R|, and TF32 adds 2^-11 of it: inside TDELTA.
 */

/* A chunk's shift c_Q - c_R, coordinates k0 .. k0 + TK - 1 (zero past dims), into d. */
__device__ __forceinline__ void
chunk_delta(const knn_tiles_params &P, int64_t rb, int k0, float *d)
{
	if (threadIdx.x < TK)
	{
		int			k = k0 + threadIdx.x;

		d[threadIdx.x] = k < P.dims ?
			__double2float_rn(__dsub_rn(P.QB.c[blockIdx.x * P.dims + k], P.RB.c[rb * P.dims + k])) :
			0.0f;
	}
}

/*
 * The shifted query rows' h, from the parts the warps with wn = 0 summed
 * (a_fragment): the four lanes of a row add theirs, and hqc (the constant
 * c until now) becomes h - c for the epilogue.
 */
__device__ __forceinline__ void
finish_query_h(float nsq[4][2], int wm, int g, int t, float *hqc)
{
	for (int mi = 0; mi < 4; mi++)
		for (int h = 0; h < 2; h++)
		{
			float		v = nsq[mi][h];

			v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 1));
			v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 2));
			if (t == 0)
			{
				int			row = ACC_ROW(wm, mi, g, h * 2);

				hqc[row] = __fsub_rn(__fmul_rn(v, 0.5f), hqc[row]);
			}
		}
}

__global__ static void __launch_bounds__(TTHREADS, 2)
knn_tiles_kernel(knn_tiles_params P)
{
	extern __shared__ __align__(16) unsigned char kt_smem[];
	/* two buffers of query and reference chunks: one loads while one multiplies */
	float	   *sa0 = (float *) kt_smem;
	float	   *sb0 = sa0 + TILE * TSTRIDE;
	float	   *sa1 = sb0 + TILE * TSTRIDE;
	float	   *sb1 = sa1 + TILE * TSTRIDE;
	float	   *hqc = sb1 + TILE * TSTRIDE;	/* per query row: h_i - c_i */
	int		   *nlist = (int *) (hqc + TILE);
	uint16_t   *list = (uint16_t *) (nlist + TILE);	/* TILE x KT_CAP */
	__shared__ int stopped;
	__shared__ int pre[TILE + 1];	/* refine_lists: the lists' offsets */
	__shared__ double sdw[KT_WAVE];	/* ... and a wave's sums */
	__shared__ int listed;		/* pairs in the lists */
	__shared__ int64_t round_rb[8];	/* a round's blocks (-1: none) */
	__shared__ int round_keep[8];
	__shared__ double qtau[TILE];
	__shared__ double round_dlen[8];	/* per block of the round: |c_Q - c_R|, rounded up */
	__shared__ float sdelta[2][TK];	/* a chunk's c_Q - c_R, per buffer */
	__shared__ double best_lb[8];
	__shared__ int64_t best_rb[8];
	__shared__ int64_t visited;	/* the next visit to bound (or, no index, to take) */
	__shared__ int kq_rb[KT_QUEUE];	/* the blocks' queue, a ring: head .. tail - 1 */
	__shared__ float kq_lb2[KT_QUEUE];
	__shared__ float kq_dlen[KT_QUEUE];
	__shared__ int kq_head,
				kq_tail;
#ifdef KT_PROFILE
	long long	kt_c0 = clock64();
#endif
	int64_t		q0 = (int64_t) blockIdx.x * TILE;
	int			warp = threadIdx.x >> 5,
				lane = threadIdx.x & 31;
	int			g = lane >> 2,
				t = lane & 3;
	int			wm = warp >> 2,
				wn = warp & 3;
	int			one_chunk = P.dp <= TK;
	int			qloaded = 0;	/* one chunk: the queries are in sa0 */
	int			nch = (P.dp + TK - 1) / TK;
	int64_t		nrb = (P.nref + TILE - 1) / TILE;
	int64_t		qi = q0 + threadIdx.x;	/* this thread's query (threads < TILE) */
	int			mine = threadIdx.x < TILE && qi < P.nq;
	int64_t		start = 0;
	gj_kbuf		kb;
	double		tau = INFINITY,
				tau0 = INFINITY;	/* seed_bounds: a bound before any block */

	if (mine)
		gj_kb_init(&kb, P.bd + qi, P.bid + qi, P.nq, P.k, P.heap);
	if (threadIdx.x < TILE)
		nlist[threadIdx.x] = 0;
	if (threadIdx.x == 0)
	{
		visited = 0;
		listed = 0;
		kq_head = 0;
		kq_tail = 0;
	}

	if (P.prune && P.self0 >= 0)
	{
		/* a self join starts at the block holding its queries (bound 0) */
		start = (P.self0 + q0) / TILE;
		start = start < nrb ? start : nrb - 1;
	}
	else if (P.prune)
	{
		/* the start: the reference block of least bound (the first of equals) */
		double		bl = INFINITY;
		int64_t		brb = 0;

		for (int64_t r0 = warp * KT_SCAN_U; r0 < nrb; r0 += 8 * KT_SCAN_U)
		{
			int64_t		rb[KT_SCAN_U];
			double		gap2[KT_SCAN_U],
						cen2[KT_SCAN_U];

#pragma unroll
			for (int u = 0; u < KT_SCAN_U; u++)
				rb[u] = r0 + u < nrb ? r0 + u : -1;
			warp_block_sums_n<KT_SCAN_U>(P.QB, blockIdx.x, P.RB, rb, P.dims, lane, gap2, cen2);
#pragma unroll
			for (int u = 0; u < KT_SCAN_U; u++)
				if (rb[u] >= 0)
				{
					double		lb = gj_block_lb2(gap2[u], cen2[u], P.QB.r[blockIdx.x],
												  P.RB.r[rb[u]], P.dims);

					if (lb < bl)
					{
						bl = lb;
						brb = rb[u];
					}
				}
		}
		if (lane == 0)
		{
			best_lb[warp] = bl;
			best_rb[warp] = brb;
		}
		__syncthreads();
		for (int w = 0; w < 8; w++)
			if (best_lb[w] < bl || (best_lb[w] == bl && best_rb[w] < brb))
			{
				bl = best_lb[w];
				brb = best_rb[w];
			}
		start = brb;
	}
	/* the seeds, in the filter's tiles (free until the first block) */
	seed_bounds(P, q0, start, (double *) sa0, qtau, warp, lane);
	__syncthreads();
	if (mine)
		tau = tau0 = qtau[threadIdx.x];
#ifdef KT_PROFILE
	__syncthreads();
	if (threadIdx.x == 0)
		KT_ADD(15, clock64() - kt_c0);
#endif

	for (;;)
	{
#ifdef KT_PROFILE
		long long	kt_r0 = clock64();
#endif
		/*
		 * A round: the next 8 blocks, with the index from the queue (the
		 * bounds checked again against the largest k-th distance of the
		 * CTA's queries), else every block in order
		 */
		if (threadIdx.x == 0)
			stopped = gj_dev_stopped(P.stop);
		if (threadIdx.x < TILE)
			qtau[threadIdx.x] = mine ? tau : 0.0;
		__syncthreads();
		if (stopped)
			return;				/* the batch is discarded */
		if (P.prune)
		{
			double		worst = 0.0,
						s0b;
			int			at = kq_head + warp;
			int64_t		rb;

			for (int i = lane; i < TILE; i += 32)
				worst = qtau[i] > worst ? qtau[i] : worst;
			for (int o = 16; o > 0; o >>= 1)
			{
				double		v = __shfl_xor_sync(0xffffffffu, worst, o);

				worst = v > worst ? v : worst;
			}
			s0b = gj_rule_s0(worst, P.dims);
			while (kq_tail - kq_head < 8 && visited < nrb)
			{
				scan_visits(P, start, nrb, visited, s0b, kq_tail, kq_rb, kq_lb2, kq_dlen, warp,
							lane);
				__syncthreads();
				if (warp == 0)
				{
					compact_visits(kq_rb, kq_lb2, kq_dlen, &kq_tail, lane);
					if (lane == 0)
						visited += KT_SCAN;
				}
				__syncthreads();
			}
			if (kq_tail == kq_head)
				break;			/* every block visited */
			rb = at < kq_tail ? kq_rb[at & (KT_QUEUE - 1)] : -1;
			if (lane == 0)
			{
				round_rb[warp] = rb;
				round_dlen[warp] = kq_dlen[at & (KT_QUEUE - 1)];
				round_keep[warp] = rb >= 0 && !gj_block_far(kq_lb2[at & (KT_QUEUE - 1)], s0b);
#ifdef KT_PROFILE
				if (rb >= 0 && !round_keep[warp])
					KT_ADD(9, 1);
#endif
			}
			__syncthreads();
			if (threadIdx.x == 0)
				kq_head += kq_tail - kq_head < 8 ? kq_tail - kq_head : 8;
		}
		else
		{
			int64_t		rb = visited + warp < nrb ? visited + warp : -1;
			double		gap2,
						cen2;

			if (visited >= nrb)
				break;			/* every block visited */
			if (rb >= 0)
				warp_block_sums(P.QB, blockIdx.x, P.RB, rb, P.dims, lane, &gap2, &cen2);
			if (lane == 0)
			{
				round_rb[warp] = rb;
				round_dlen[warp] = rb >= 0 ? filter_s0(cen2, P.dims) : 0.0;
				round_keep[warp] = rb >= 0;
			}
			__syncthreads();
			if (threadIdx.x == 0)
				visited += 8;
		}
#ifdef KT_PROFILE
		if (threadIdx.x == 0)
		{
			KT_ADD(8, 1);
			KT_ADD(12, clock64() - kt_r0);
		}
#endif

		for (int w = 0; w < 8; w++)
		{
			int64_t		rb = round_rb[w],
						r0 = rb * TILE;
			float		acc[4][4][4];
			float		hcol[8],
						hrow[8];
			float		nsq[4][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}};

			if (!round_keep[w])
				continue;		/* the same for every thread */
#ifdef KT_PROFILE
			long long	kt0 = clock64();
#endif
			if (threadIdx.x < TILE)
			{
				/* the query's R about c_R: its R about c_Q, and |c_Q - c_R| */
				float		c = qi < P.nq ?
					filter_constant(filter_s0(tau, P.dims), P.dp, __dadd_ru(P.qr[qi], round_dlen[w]),
									P.rblockr[rb], 1) : 0.0f;

				/*
				 * the constant until the products give h (then hqc = h - c):
				 * +inf: everything passes; no query (-inf): nothing
				 */
				hqc[threadIdx.x] = qi >= P.nq ? -INFINITY : isinf(c) ? INFINITY : c;
			}
			for (int kk = 0; kk < 8; kk++)
			{
				int64_t		j = r0 + ACC_COL(wn, kk >> 1, t, kk & 1);

				hcol[kk] = j < P.nref ? P.rh[j] : INFINITY;
			}
			for (int mi = 0; mi < 4; mi++)
				for (int ni = 0; ni < 4; ni++)
					for (int e = 0; e < 4; e++)
						acc[mi][ni][e] = 0.0f;
			/* chunk c + 1 loads (cp.async) while chunk c multiplies */
			if (!(one_chunk && qloaded))
				load_chunk_async(P.qf, P.nq, P.dp, q0, 0, P.dp < TK ? P.dp : TK, sa0);
			load_chunk_async(P.rf, P.nref, P.dp, r0, 0, P.dp < TK ? P.dp : TK, sb0);
			chunk_delta(P, rb, 0, sdelta[0]);
			cp_async_commit();
			for (int c = 0; c < nch; c++)
			{
				int			k0 = c * TK,
							wd = P.dp - k0 < TK ? P.dp - k0 : TK;

				if (c + 1 < nch)
				{
					int			k1 = k0 + TK,
								w1 = P.dp - k1 < TK ? P.dp - k1 : TK;

					load_chunk_async(P.qf, P.nq, P.dp, q0, k1, w1, c & 1 ? sa0 : sa1);
					load_chunk_async(P.rf, P.nref, P.dp, r0, k1, w1, c & 1 ? sb0 : sb1);
					chunk_delta(P, rb, k1, sdelta[(c + 1) & 1]);
					cp_async_commit();
					cp_async_wait<1>();
				}
				else
					cp_async_wait<0>();
				__syncthreads();
				tile_products_by<true>(c & 1 ? sa1 : sa0, c & 1 ? sb1 : sb0, wd, wm, wn, g, t,
									   acc, sdelta[c & 1], wn == 0, nsq);
				if (c == nch - 1 && wn == 0)
					finish_query_h(nsq, wm, g, t, hqc);
				__syncthreads();
			}
			qloaded = 1;
#ifdef KT_PROFILE
			long long	kt1 = clock64();
#endif
			for (int kk = 0; kk < 8; kk++)
				hrow[kk] = hqc[ACC_ROW(wm, kk >> 1, g, (kk & 1) * 2)];

			/*
			 * keep reference col for query row when G >= (h_i - c_i) + h_j:
			 * the 64 tests as bits, then the kept ones into the lists; when
			 * a list is full, the lists are tested and emptied, and the rest
			 * go in after
			 */
			{
				uint32_t	keep[2];
				int			row,
							col;

				tile_keep_bits(acc, hrow, hcol, keep);
				for (;;)
				{
					int			full = 0;

					for (;;)
					{
						uint32_t	k0 = keep[0],
									k1 = keep[1];
						int			pos;

						if (!tile_next_kept(keep, wm, wn, g, t, &row, &col))
							break;
						pos = atomicAdd(&nlist[row], 1);
						if (pos >= KT_CAP)
						{
							keep[0] = k0;	/* not taken: put it back */
							keep[1] = k1;
							full = 1;
							break;
						}
						list[row * KT_CAP + pos] = (uint16_t) ((w << 7) | col);
						atomicAdd(&listed, 1);
					}
					/* a full list, or a wave's worth: tested now, while tau is fresh */
					full = __syncthreads_or(full);
					if (!full && listed < KT_WAVE)
						break;
					if (threadIdx.x < TILE && nlist[threadIdx.x] > KT_CAP)
						nlist[threadIdx.x] = KT_CAP;
					__syncthreads();
					refine_lists(P, q0, list, nlist, pre, sdw, (double *) sa0, round_rb, qtau,
								 &kb, &tau, tau0, mine, &listed);
					qloaded = 0;	/* sa0 held the staged terms */
					if (!full)
						break;
				}
			}
#ifdef KT_PROFILE
			if (threadIdx.x == 0)
			{
				KT_ADD(0, kt1 - kt0);
				KT_ADD(1, clock64() - kt1);
				KT_ADD(5, 1);
			}
#endif
		}
		/* the round's lists */
		refine_lists(P, q0, list, nlist, pre, sdw, (double *) sa0, round_rb, qtau, &kb, &tau,
					 tau0, mine, &listed);
		qloaded = 0;
		__syncthreads();		/* round_rb and round_keep are read up to here */
	}
#ifdef KT_PROFILE
	if (threadIdx.x == 0)
	{
		KT_ADD(14, clock64() - kt_c0);
		KT_ADD(16, 1);
	}
#endif
	if (mine && gj_kb_finish(&kb, P.stop))
	{
		P.bn[qi] = kb.n;
		P.btop[qi] = kb.top;
	}
}

#ifdef KT_PROFILE
/* Print and clear the counters (regress/gpu/gpu_knn built with -DKT_PROFILE). */
extern "C" void
gj_knn_prof_dump(const char *what)
{
	unsigned long long h[20];
	double		blocks,
				ctas;

	cudaDeviceSynchronize();
	cudaMemcpyFromSymbol(h, kt_prof, sizeof(h));
	blocks = h[5] ? (double) h[5] : 1.0;
	ctas = h[16] ? (double) h[16] : 1.0;
	{
		int			per_sm = 0;

		cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, knn_tiles_kernel, TTHREADS, KT_SMEM);
		printf("profile: %d CTAs an SM\n", per_sm);
	}
	printf("profile %s: %llu CTA-blocks; cycles a block: filter %.0f, lists %.0f, refine %.0f "
		   "(offers %.0f); exact tests %llu, offers %llu, waves %llu\n", what, h[5], h[0] / blocks,
		   h[1] / blocks, h[2] / blocks, h[6] / blocks, h[3], h[4], h[7]);
	printf("profile %s: rounds %llu, blocks skipped %llu, refines %llu (+%llu empty); cycles a "
		   "round's setup %.0f, a wave's tests %.0f a block\n", what, h[8], h[9],
		   h[10], h[11], h[8] ? (double) h[12] / h[8] : 0.0, h[13] / blocks);
	printf("profile %s: %llu CTAs; cycles a CTA: %.0f, before the first round %.0f\n", what,
		   h[16], h[14] / ctas, h[15] / ctas);
	memset(h, 0, sizeof(h));
	cudaMemcpyToSymbol(kt_prof, h, sizeof(h));
}
#endif

/*
 * The references' filter rows (centre: their column means) and the
 * queries' buffers for batches of up to batch queries; *usable is 0 when
 * the references' norms put the filter beyond float32 (the caller keeps
 * its plain scan).
 */
/*
 * The next bytes of the filter's one allocation (kf->arena, cur the bytes
 * taken so far), aligned for any access; NULL when only counting.
 */
static void *
arena_take(const gj_knn_filter *kf, size_t *cur, size_t bytes)
{
	size_t		at = *cur;

	*cur += (bytes + 255) & ~(size_t) 255;
	return kf->arena != NULL ? (char *) kf->arena + at : NULL;
}

/* Room in kf's arena for the bounds of nb blocks in dims (dev_bounds_alloc's shapes). */
static void
arena_bounds(const gj_knn_filter *kf, size_t *cur, dev_bounds *B, int64_t nb, int dims)
{
	size_t		sz = sizeof(double) * (size_t) (nb + 1) * dims;

	B->lo = (double *) arena_take(kf, cur, sz);
	B->hi = (double *) arena_take(kf, cur, sz);
	B->c = (double *) arena_take(kf, cur, sz);
	B->r = (double *) arena_take(kf, cur, sizeof(double) * (nb + 1));
}

/*
 * Every buffer of the filter, carved from kf->arena, or (arena NULL) only
 * counted; the bytes.  r: the references' norms, scratch of the
 * preparation.
 */
static size_t
filter_layout(gj_knn_filter *kf, int64_t nref, int64_t nrb, int64_t batch, double **r)
{
	size_t		cur = 0;

	kf->rf = (float *) arena_take(kf, &cur, sizeof(float) * (size_t) (nref + 1) * kf->dp);
	kf->rh = (float *) arena_take(kf, &cur, sizeof(float) * (nref + 1));
	*r = (double *) arena_take(kf, &cur, sizeof(double) * (nref + 1));
	kf->rblockr = (double *) arena_take(kf, &cur, sizeof(double) * (nrb + 1));
	for (int b = 0; b < 2; b++)
	{
		kf->qf[b] = (float *) arena_take(kf, &cur, sizeof(float) * (size_t) (batch + 1) * kf->dp);
		kf->qr[b] = (double *) arena_take(kf, &cur, sizeof(double) * (batch + 1));
	}
	arena_bounds(kf, &cur, &kf->rbnd, nrb, kf->dims);
	for (int b = 0; b < 2; b++)
		arena_bounds(kf, &cur, &kf->qbnd[b], (batch + TILE - 1) / TILE, kf->dims);
	return cur;
}

/*
 * The references' filter rows (centre: their column means) and the
 * queries' buffers for batches of up to batch queries; *usable is 0 when
 * the references' norms put the filter beyond float32 (the caller keeps
 * its plain scan).  The buffers are one cudaMalloc: a team's members
 * prepare at once, and their twenty allocations and a free each took the
 * preparation from 5 ms alone to 7-10 a member (two H200s).
 */
gj_status
gj_knn_filter_prepare(gj_knn_filter *kf, const double *rx, int64_t nref, int dims,
					  int64_t batch, int prune, cudaStream_t s, int *usable, char *err,
					  size_t errlen)
{
	double	   *r = NULL,
				maxr = 0.0;
	int64_t		nrb = (nref + TILE - 1) / TILE;
	cudaError_t e;

	memset(kf, 0, sizeof(*kf));
	*usable = 0;
	kf->dims = dims;
	kf->dp = (dims + 7) / 8 * 8;
	kf->nref = nref;
	kf->qcap = batch;
	kf->prune = prune && nref > TILE;
	e = cudaMalloc(&kf->arena, filter_layout(kf, nref, nrb, batch, &r));
	if (e == cudaSuccess)
		filter_layout(kf, nref, nrb, batch, &r);
	/* every block's bounds: their centres are the filter's, their boxes the index's */
	if (e == cudaSuccess && nref > 0)
	{
		bounds_kernel<<<(unsigned) nrb, 256, 0, s>>>(rx, nref, dims, kf->rbnd);
		e = cudaGetLastError();
	}
	if (e == cudaSuccess)
		e = filter_rows(rx, kf->rbnd.c, dims, nref, dims, kf->dp, kf->rf, kf->rh, r, kf->rblockr,
						s, &maxr);
	if (e == cudaSuccess)
		e = cudaFuncSetAttribute(knn_tiles_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
								 (int) KT_SMEM);
	/* two CTAs an SM need nearly all of its shared memory (2 x 112 KB) */
	if (e == cudaSuccess)
		e = cudaFuncSetAttribute(knn_tiles_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
								 cudaSharedmemCarveoutMaxShared);
	if (e != cudaSuccess)
	{
		snprintf(err, errlen, "kNN filter: %s", cudaGetErrorName(e));
		cudaGetLastError();
		return gj_cuda_status(e);
	}
	*usable = maxr <= 1e18;
	return GJ_OK;
}

/*
 * One batch (slot 0 or 1) of nq queries qx (float64, on the device): their
 * filter rows, then the sweep; the k buffers as knn.cu lays them out.
 */
cudaError_t
gj_knn_filter_launch(const gj_knn_filter *kf, int slot, const double *rx, const int64_t *rid,
					 const double *qx, int64_t nq, double *bd, int64_t *bid, int32_t *bn,
					 int32_t *btop, int k, int heap, int64_t self0, const int *stop,
					 cudaStream_t s)
{
	knn_tiles_params P;

	if (nq <= 0)
		return cudaSuccess;
	/* the query blocks' bounds, then the rows in float32 about their block's centre */
	bounds_kernel<<<(unsigned) ((nq + TILE - 1) / TILE), 256, 0, s>>>(qx, nq, kf->dims,
																	kf->qbnd[slot]);
	prep_launch(qx, kf->qbnd[slot].c, kf->dims, nq, kf->dims, kf->dp, 0, kf->qf[slot], NULL,
				kf->qr[slot], s);
	P.prune = kf->prune;
	P.RB = kf->rbnd;
	P.QB = kf->qbnd[slot];
	P.rx = rx;
	P.rid = rid;
	P.rf = kf->rf;
	P.rh = kf->rh;
	P.rblockr = kf->rblockr;
	P.nref = kf->nref;
	P.qx = qx;
	P.qf = kf->qf[slot];
	P.qr = kf->qr[slot];
	P.nq = nq;
	P.dims = kf->dims;
	P.dp = kf->dp;
	P.k = k;
	P.heap = heap;
	P.self0 = self0;
	P.bd = bd;
	P.bid = bid;
	P.bn = bn;
	P.btop = btop;
	P.stop = stop;
	knn_tiles_kernel<<<(unsigned) ((nq + TILE - 1) / TILE), TTHREADS, KT_SMEM, s>>>(P);
	return cudaGetLastError();
}

void
gj_knn_filter_free(gj_knn_filter *kf)
{
	cudaFree(kf->arena);		/* every buffer of the filter */
	memset(kf, 0, sizeof(*kf));
}
