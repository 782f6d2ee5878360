/*
 * density_boxes.cuh
 *		The GPU's boxes inside dense wide cells, for DBSCAN: the device form
 *		of src/core/density_boxes.h (why boxes: there), built by
 *		density_boxes.cu over the device grid, read by density.cu.
 *
 * A cut cell's rows are reordered box by box within the cell (the cell's
 * range of sorted positions does not move), so a box is a run of
 * positions [start, end) and a cut cell's boxes are the ids from its first
 * row's box to its last row's.
 */
#ifndef GJ_DENSITY_BOXES_CUH
#define GJ_DENSITY_BOXES_CUH

#include "gpu_common.cuh"
#include "../src/core/density_boxes.h"

typedef struct gj_dev_boxes
{
	int64_t		nbox;			/* 0: no cell is cut */
	int			dims;
	int32_t    *box_of_row;		/* per sorted position: its box, or -1 */
	uint32_t   *start;			/* per box: its positions [start, end) */
	uint32_t   *end;
	uint8_t    *compact;		/* per box: all its rows within eps of each other */
	int32_t    *core;			/* per box: its first core position, or -1 */
	double	   *lo;				/* per box: bounds, dims wide */
	double	   *hi;
} gj_dev_boxes;

/* Is cell c cut?  (The same test decides the build's keys.) */
__device__ __forceinline__ bool
gj_dev_cell_cut(const gj_dev_grid &G, const uint8_t *compact, int64_t c)
{
	return !compact[c] && G.cell_start[c + 1] - G.cell_start[c] >= GJ_BOX_MIN_ROWS;
}

/* Cut cell c's boxes: [*b0, *b1). */
__device__ __forceinline__ void
gj_dev_cell_boxes(const gj_dev_grid &G, const gj_dev_boxes &B, int64_t c,
				  int64_t *b0, int64_t *b1)
{
	*b0 = B.box_of_row[G.cell_start[c]];
	*b1 = (int64_t) B.box_of_row[G.cell_start[c + 1] - 1] + 1;
}

/*
 * Box b's nearest corner to x within eps (far = 0: can it hold a row within
 * eps?) or its farthest (far = 1: is every row within eps?); the corners
 * of src/core/density_boxes.h, the distance by the shared rule.
 */
template <int DIMS>
__device__ __forceinline__ bool
gj_dev_box_corner_within(const gj_dev_boxes &B, int64_t b, const double *x, int far,
						 double eps2)
{
	double		c[GJ_BOX_MAX_DIMS];
	int			dims = DIMS > 0 ? DIMS : B.dims;

	gj_box_corner(B.lo + b * dims, B.hi + b * dims, x, dims, far, c);
	return gj_dev_sqdist<DIMS>(x, c, dims, eps2) <= eps2;
}

/*
 * Cut G's dense non-compact cells into boxes (G's rows are reordered within
 * their cells); B->nbox == 0 when no cell needs it.  GJ_ERR_DEVICE_OOM when
 * the sort and the boxes would take more than room bytes of the device
 * (gpujoin.gpu_memory_limit's share): the caller goes on without boxes.
 */
extern gj_status gj_gpu_boxes_build(gj_dev_grid *G, const gj_grid_params *P,
									const uint8_t *d_compact, size_t room,
									gj_dev_boxes *B, cudaStream_t stream,
									char *err, size_t errlen);
extern void gj_gpu_boxes_free(gj_dev_boxes *B);

#endif							/* GJ_DENSITY_BOXES_CUH */
