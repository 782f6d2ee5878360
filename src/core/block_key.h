/*
 * block_key.h
 *		The block order's key of one row, the same on the host
 *		(block_index.c) and the device (kernels/order.cu), so that both
 *		find the same order.
 *
 * A row's level in a key dimension is how many of that dimension's
 * ascending quantile cuts are <= its coordinate (NaN: none); its key
 * interleaves the levels' bits, highest first, dimension by dimension
 * (Z-order), in m * bits <= 62 bits.
 */
#ifndef GJ_BLOCK_KEY_H
#define GJ_BLOCK_KEY_H

#include <stdint.h>

#include "gj_core.h"			/* GJ_BLOCK_KEY_DIMS */

#ifdef __CUDACC__
#define GJ_BK static __host__ __device__ __forceinline__
#else
#define GJ_BK static inline
#endif

/*
 * Without branches: a binary search that branched on each comparison
 * mispredicted half its steps on the host, most of the keys' time.  Few
 * cuts (16 dimensions have 7) are counted; more are halved, the base
 * moving by a select.  Both count the cuts <= v (none for NaN).
 */
GJ_BK int64_t
gj_block_level(const double *cut, int ncut, double v)
{
	int			lo = 0,
				len = ncut;

	if (ncut <= 15)
	{
		for (int t = 0; t < ncut; t++)
			lo += cut[t] <= v;
		return lo;
	}
	/* invariant: cuts before lo are <= v, cuts from lo + len on are not */
	while (len > 1)
	{
		int			half = len / 2;

		lo = cut[lo + half - 1] <= v ? lo + half : lo;
		len -= half;
	}
	return lo + (cut[lo] <= v);
}

/* The key of row x (dims wide): dimensions dim[0 .. m - 1], cut m x ncut. */
GJ_BK int64_t
gj_block_key(const double *x, int m, int bits, const int *dim, const double *cut)
{
	int			ncut = (1 << bits) - 1;
	int64_t		lev[GJ_BLOCK_KEY_DIMS],
				key = 0;

	for (int j = 0; j < m; j++)
		lev[j] = gj_block_level(cut + (int64_t) j * ncut, ncut, x[dim[j]]);
	for (int bit = bits - 1; bit >= 0; bit--)
		for (int j = 0; j < m; j++)
			key = key << 1 | ((lev[j] >> bit) & 1);
	return key;
}

#endif							/* GJ_BLOCK_KEY_H */
