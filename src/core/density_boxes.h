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

/*
 * Can box k hold a row within eps of x?  The box's nearest point to x, by
 * the shared rule: rounding is monotonic, so no row inside the bounds
 * computes a smaller distance than its clamp of x.
 */
static inline int
gj_box_reachable(const gj_boxes *b, int64_t k, const double *x, double eps2)
{
	const double *lo = b->lo + k * b->dims,
			   *hi = b->hi + k * b->dims;
	double		near[GJ_BOX_MAX_DIMS];

	for (int d = 0; d < b->dims; d++)
		near[d] = x[d] < lo[d] ? lo[d] : x[d] > hi[d] ? hi[d] : x[d];
	return gj_sqdist(x, near, b->dims) <= eps2;
}

/*
 * Is every row of box k within eps of x?  The box's farthest corner from x,
 * by the shared rule (no row inside can compute a larger distance).
 */
static inline int
gj_box_within(const gj_boxes *b, int64_t k, const double *x, double eps2)
{
	const double *lo = b->lo + k * b->dims,
			   *hi = b->hi + k * b->dims;
	double		far[GJ_BOX_MAX_DIMS];

	for (int d = 0; d < b->dims; d++)
		far[d] = x[d] - lo[d] > hi[d] - x[d] ? lo[d] : hi[d];
	return gj_sqdist(x, far, b->dims) <= eps2;
}

/* The parallel loop of density.c: fn over items [0, n) in blocks on threads. */
typedef void (*gj_block_fn) (void *arg, int64_t r0, int64_t r1, const int *stop);
extern gj_status gj_par_for(gj_block_fn fn, void *arg, int64_t n, int nthreads);

#ifdef __cplusplus
}
#endif

#endif							/* GJ_DENSITY_BOXES_H */
