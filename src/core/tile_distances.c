/*
 * tile_distances.c
 *		The CPU's inner loop for many dimensions: one query row against a
 *		block of GJ_TILE_REFS reference rows, vectorised across the block.
 *
 * The block is stored transposed (T[d * GJ_TILE_REFS + j] is coordinate d
 * of the block's row j), so each SIMD lane accumulates one pair's sum over
 * the dimensions in column order with a subtraction, a multiplication and
 * an addition each rounded on their own (the build has no FMA contraction):
 * lane by lane this is exactly gj_sqdist, the shared rule, whatever the
 * vector width.  After every GJ_TILE_DIM_STEP dimensions the block stops
 * once every lane's partial sum exceeds the bound (SHORTC): partial sums in
 * column order only grow and IEEE rounding is monotonic, so such a lane's
 * full sum would exceed it too.  Lanes of rows past the block's end hold
 * NaN, which never passes a bound.
 *
 * The function is compiled for AVX-512, AVX2 and the baseline, picked at
 * load time (target_clones), so one build runs everywhere and vectorises
 * as wide as the machine allows.
 */
#include <math.h>
#include <string.h>

#include "core_internal.h"

typedef double gj_v4d __attribute__((vector_size(32)));
typedef long long gj_v4l __attribute__((vector_size(32)));

#define GJ_TILE_DIM_STEP 8		/* dimensions between early-exit checks */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define GJ_TILE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GJ_TILE_CLONES
#endif

/*
 * s[j] = the squared distance from q to row j of the transposed block T,
 * for the block's GJ_TILE_REFS rows; returns 0, with s undefined, when
 * every lane's sum is known to exceed bound.
 */
GJ_TILE_CLONES int
gj_tile_distances(const double *q, const double *T, int dims, double bound, double *s)
{
	gj_v4d		a[GJ_TILE_REFS / 4];
	gj_v4d		b = {bound, bound, bound, bound};

	for (int v = 0; v < GJ_TILE_REFS / 4; v++)
		a[v] = (gj_v4d) {0.0, 0.0, 0.0, 0.0};
	for (int d0 = 0; d0 < dims; d0 += GJ_TILE_DIM_STEP)
	{
		int			d1 = d0 + GJ_TILE_DIM_STEP < dims ? d0 + GJ_TILE_DIM_STEP : dims;
		gj_v4l		any = {0, 0, 0, 0};

		for (int d = d0; d < d1; d++)
		{
			gj_v4d		qd = {q[d], q[d], q[d], q[d]};
			const double *t = T + (size_t) d * GJ_TILE_REFS;

			for (int v = 0; v < GJ_TILE_REFS / 4; v++)
			{
				gj_v4d		tv;
				gj_v4d		u;

				memcpy(&tv, t + 4 * v, sizeof(tv));
				u = qd - tv;
				a[v] = a[v] + u * u;
			}
		}
		for (int v = 0; v < GJ_TILE_REFS / 4; v++)
			any |= a[v] <= b;
		if ((any[0] | any[1] | any[2] | any[3]) == 0)
			return 0;
	}
	memcpy(s, a, sizeof(a));
	return 1;
}

/*
 * Rows [r0, r0 + GJ_TILE_REFS) of x (n rows of dims) transposed into T,
 * NaN past row n.
 */
void
gj_tile_transpose(const double *x, int64_t n, int dims, int64_t r0, double *T)
{
	for (int j = 0; j < GJ_TILE_REFS; j++)
	{
		const double *row = x + (r0 + j) * dims;

		if (r0 + j < n)
			for (int d = 0; d < dims; d++)
				T[(size_t) d * GJ_TILE_REFS + j] = row[d];
		else
			for (int d = 0; d < dims; d++)
				T[(size_t) d * GJ_TILE_REFS + j] = NAN;
	}
}
