/*
 * density_boxes.h
 *		Boxes inside the dense wide cells of a grid, for DBSCAN on the CPU
 *		(density_boxes.c builds them, density.c links through them).
 *
 * A cell whose points are not all within eps of each other (not compact)
 * but that holds many of them, such as the 3^n cells under a clump 2 eps
 * across, costs DBSCAN a union-find test for every pair of its core rows:
 * quadratic in the cell.  Such a cell is cut into boxes of side just under
 * eps / sqrt(d) in every dimension.  A box whose bounding box has a
 * diagonal within eps (the compact cells' rule) holds rows all within eps
 * of each other, so its core rows are one cluster at once, and another row
 * needs only one core row of it within eps to reach that cluster: linking
 * costs a few finds per box of a neighbourhood instead of one per row.
 * A box's bounds also skip it whole when it is provably beyond eps.
 */
#ifndef GJ_DENSITY_BOXES_H
#define GJ_DENSITY_BOXES_H

#include <math.h>

#include "gj_core.h"

#ifdef __cplusplus
extern "C"
{
#endif

#define GJ_BOX_MIN_ROWS 64		/* a cell smaller than this is not cut */
#define GJ_BOX_MIN_FILL 4		/* rows a box must hold on average, or no cut */
#define GJ_BOX_MAX_DIMS 8		/* beyond, boxes of side eps / sqrt(d) hold a row or two */

typedef struct gj_boxes
{
	int			dims;
	int64_t		nbox;
	int64_t    *cell_box;		/* per cell: its first box; ncells + 1 (equal: not cut) */
	int64_t    *box_start;		/* per box: its positions in rows, [start, end) */
	int64_t    *box_end;
	uint32_t   *rows;			/* a cut cell's rows, box by box, at the cell's own positions */
	int32_t    *box_of_row;		/* per row: its box, or -1 (its cell is not cut) */
	uint8_t    *compact;		/* per box: all its rows within eps of each other */
	double	   *lo;				/* per box: its bounding box, dims wide */
	double	   *hi;
} gj_boxes;

/*
 * Cut the dense non-compact cells of g (compact: the per-cell flags of
 * density.c) into boxes.  b->nbox == 0 when no cell is worth cutting.
 */
extern gj_status gj_boxes_build(gj_boxes *b, const gj_grid *g, const gj_points *p,
								const uint8_t *compact, int nthreads);
extern void gj_boxes_free(gj_boxes *b);

/* Is cell c cut into boxes? */
static inline int
gj_cell_cut(const gj_boxes *b, int64_t c)
{
	return b->nbox > 0 && b->cell_box[c + 1] > b->cell_box[c];
}

#ifdef __CUDACC__
#define GJ_BOX_HD static __host__ __device__ __forceinline__
#else
#define GJ_BOX_HD static inline
#endif

/*
 * A point's box on the global lattice of the given side, as a 31-bit mix
 * of its coordinates (the CPU's and the GPU's keys alike): equal boxes,
 * equal hashes; two boxes that collide become one wider box, at worst not
 * compact, so the answer does not depend on it.
 */
GJ_BOX_HD int64_t
gj_box_hash(const double *x, int dims, double side)
{
	uint64_t	h = 0x9e3779b97f4a7c15ull;

	for (int d = 0; d < dims; d++)
	{
		double		u = floor(x[d] / side);
		int64_t		k = u < -4.0e18 ? INT64_MIN / 2 : u > 4.0e18 ? INT64_MAX / 2 : (int64_t) u;

		h ^= (uint64_t) k + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 33;
	}
	return (int64_t) ((h ^ (h >> 32)) & 0x7fffffffu);
}

/*
 * The corner of bounds [lo, hi] nearest x (far = 0: x clamped into them)
 * or farthest from it (far = 1), into out.  By the shared rule no row
 * inside the bounds computes a smaller distance to x than the nearest
 * corner, nor a larger one than the farthest (rounding is monotonic and
 * symmetric, and the farthest corner is chosen by the rounded differences).
 */
GJ_BOX_HD void
gj_box_corner(const double *lo, const double *hi, const double *x, int dims, int far,
			  double *out)
{
	for (int d = 0; d < dims; d++)
		out[d] = far ? (x[d] - lo[d] > hi[d] - x[d] ? lo[d] : hi[d]) :
			(x[d] < lo[d] ? lo[d] : x[d] > hi[d] ? hi[d] : x[d]);
}

/* Can box k hold a row within eps of x (its nearest corner)? */
static inline int
gj_box_reachable(const gj_boxes *b, int64_t k, const double *x, double eps2)
{
	double		c[GJ_BOX_MAX_DIMS];

	gj_box_corner(b->lo + k * b->dims, b->hi + k * b->dims, x, b->dims, 0, c);
	return gj_sqdist(x, c, b->dims) <= eps2;
}

/* Is every row of box k within eps of x (its farthest corner)? */
static inline int
gj_box_within(const gj_boxes *b, int64_t k, const double *x, double eps2)
{
	double		c[GJ_BOX_MAX_DIMS];

	gj_box_corner(b->lo + k * b->dims, b->hi + k * b->dims, x, b->dims, 1, c);
	return gj_sqdist(x, c, b->dims) <= eps2;
}

#ifdef __cplusplus
}
#endif

#endif							/* GJ_DENSITY_BOXES_H */
