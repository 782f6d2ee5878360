/*
 * block_bounds.h
 *		The index of the tile engines in many dimensions: bounds of blocks of
 *		consecutive rows, and the proof that two blocks hold no pair the
 *		distance rule can accept.  Shared verbatim by the CPU engines and the
 *		GPU kernels (static inline, also __host__ __device__ under nvcc).
 *
 * Why.  A grid indexes a few dimensions and its cells must be eps wide, so
 * in 16 or 128 dimensions a cell holds a large share of the data.  Rows
 * sorted so that consecutive rows are near each other (block_order.c) make
 * blocks that are small in every dimension; a block pair whose bounds are
 * farther apart than the threshold is skipped whole, and every other pair
 * of blocks runs as brute force does.  Nothing else changes, so the answer
 * is brute force's answer.
 *
 * Bounds of a block: per dimension its least and greatest coordinate (the
 * box), and a ball: a centre c (the rows' mean, any point would do) and a
 * radius r at least the real distance of every row from c.  In a few
 * dimensions the box is the tighter bound; in many, where a box's corners
 * are far from its rows, the ball is (two Gaussian clusters in 128
 * dimensions: boxes overlap, balls are apart).
 *
 * Proof.  For rows x of block A and y of block B the real distance
 * |x - y| is at least the box gap sqrt(sum_k gap_k^2) and at least
 * |c_A - c_B| - r_A - r_B.  Both are computed in float64 and made smaller
 * by more than their rounding (a sum of d non-negative terms, each from a
 * rounded subtraction and product: relative error under (d + 2) 2^-53), so
 * gj_block_lb2 is at most the real squared distance of every such pair
 * (the small constants cover products that underflow: each loses at most
 * 2^-1075, d of them far less than 1e-300, and under 1e-159 on a radius).
 * A pair the float64 rule accepts at threshold b has real distance at most
 * s0 = gj_rule_s0(b, d) (tile_math.cuh's filter uses the same s0), so a
 * block pair with lb2 > s0^2 holds none, and skipping it loses nothing.
 * NaN anywhere makes every comparison false: nothing is skipped.
 */
#ifndef GJ_BLOCK_BOUNDS_H
#define GJ_BLOCK_BOUNDS_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define GJ_BB static __host__ __device__ __forceinline__
#else
#define GJ_BB static inline
#endif

/*
 * The largest real distance a pair can have when the float64 rule puts its
 * sum at or under b: sqrt(b (1 + (d + 3) 2^-52)), rounded up.
 */
GJ_BB double
gj_rule_s0(double b, int dims)
{
	return sqrt(b * (1.0 + (dims + 3) * 0x1p-52)) * (1.0 + 0x1p-50);
}

/* Per dimension k: the box gap and the centres' difference, squared. */
GJ_BB void
gj_block_terms(double lo1, double hi1, double c1, double lo2, double hi2, double c2,
			   double *gap2, double *cen2)
{
	double		g = lo2 - hi1 > lo1 - hi2 ? lo2 - hi1 : lo1 - hi2;
	double		t = c1 - c2;

	g = g > 0.0 ? g : 0.0;
	*gap2 += g * g;
	*cen2 += t * t;
}

/*
 * A lower bound on the real squared distance of every pair of rows of two
 * blocks, from the sums of gj_block_terms over every dimension (in any
 * order) and the blocks' radii.
 */
GJ_BB double
gj_block_lb2(double gap2, double cen2, double r1, double r2, int dims)
{
	double		f = 1.0 - (dims + 8) * 0x1p-52;
	double		c = cen2 * f - 1e-300;
	double		a = c > 0.0 ? sqrt(c) * (1.0 - 0x1p-50) : 0.0;
	double		ball = a - r1 - r2 - a * 0x1p-50;
	double		box = gap2 * f - 1e-300;
	double		ball2 = ball > 0.0 ? ball * ball * (1.0 - 0x1p-50) : 0.0;

	return box > ball2 ? box : ball2;
}

/* Can no pair of two blocks with lower bound lb2 pass the rule at s0? */
GJ_BB int
gj_block_far(double lb2, double s0)
{
	return lb2 > s0 * s0 * (1.0 + 0x1p-50);
}

/* A computed radius made an upper bound of the real one. */
GJ_BB double
gj_block_radius_up(double r2, int dims)
{
	return sqrt(r2) * (1.0 + (dims + 8) * 0x1p-52) + 1e-159;
}

#endif							/* GJ_BLOCK_BOUNDS_H */
