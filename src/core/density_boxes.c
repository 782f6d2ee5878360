/*
 * density_boxes.c
 *		Cutting the dense wide cells of a grid into boxes of side just under
 *		eps / sqrt(d) (why: density_boxes.h).
 *
 * Every row gets a key: its cell, then, in a dense non-compact cell, a
 * hash of its box on a global lattice of that side (as density_boxes.cu
 * does on the GPU); one stable parallel radix sort of the keys (sort.c)
 * lists each cell's rows box by box at the cell's own positions, so no
 * prefix sum over rows is needed, only one over the cells' box counts.
 * Two boxes whose hashes collide become one box with wider bounds, which
 * at worst is not compact.  A cell whose
 * boxes would hold fewer than GJ_BOX_MIN_FILL rows on average (sparse in
 * some dimension) is left whole: its rows then cost what they cost today.
 * Nothing here decides a pair: a box is compact only when its bounding
 * box's diagonal passes the shared rule, and the bounds only skip boxes
 * provably beyond eps, so DBSCAN's answer is the same with or without them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "density_boxes.h"

typedef struct cut_ctx
{
	const gj_grid *g;
	const gj_points *p;
	const uint8_t *compact;
	gj_boxes   *b;
	double		side;
	uint8_t    *cand;			/* per cell: dense and not compact */
	int64_t    *keys;			/* per row: cell << 31 | its box's hash */
	uint8_t    *starts;			/* per position: a box starts here */
	int64_t    *nbox_of_cell;	/* per cell: its boxes, 0 when not cut */
	int			any;			/* atomic: some cell is a candidate */
} cut_ctx;

/* The cells worth cutting: not compact, GJ_BOX_MIN_ROWS rows or more. */
static void
find_candidates(void *arg, int64_t c0, int64_t c1, const int *stop)
{
	cut_ctx    *c = arg;

	(void) stop;
	for (int64_t cell = c0; cell < c1; cell++)
	{
		c->cand[cell] = !c->compact[cell] &&
			c->g->cell_start[cell + 1] - c->g->cell_start[cell] >= GJ_BOX_MIN_ROWS;
		if (c->cand[cell])
			__atomic_store_n(&c->any, 1, __ATOMIC_RELAXED);
	}
}

/* Rows [r0, r1)'s keys: the cell, then (in a candidate cell) the box. */
static void
row_keys(void *arg, int64_t r0, int64_t r1, const int *stop)
{
	cut_ctx    *c = arg;
	int64_t		cell = -1;

	(void) stop;
	for (int64_t r = r0; r < r1; r++)
	{
		cell = gj_grid_cell_of_row(c->g, r, cell);
		c->keys[r] = cell << 31;
		if (c->cand[cell])
			c->keys[r] |= gj_box_hash(c->p->x + r * c->p->dims, c->p->dims, c->side);
		c->b->rows[r] = (uint32_t) r;
	}
}

/*
 * After the sort: a candidate cell's boxes are its runs of equal keys; it
 * is cut when they hold GJ_BOX_MIN_FILL rows or more on average.
 */
static void
count_boxes(void *arg, int64_t c0, int64_t c1, const int *stop)
{
	cut_ctx    *c = arg;

	for (int64_t cell = c0; cell < c1; cell++)
	{
		int64_t		r0 = c->g->cell_start[cell],
					r1 = c->g->cell_start[cell + 1],
					nbox = 0;

		c->nbox_of_cell[cell] = 0;
		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		if (!c->cand[cell])
			continue;
		for (int64_t pos = r0; pos < r1; pos++)
		{
			c->starts[pos] = pos == r0 || c->keys[pos] != c->keys[pos - 1];
			nbox += c->starts[pos];
		}
		if (nbox * GJ_BOX_MIN_FILL <= r1 - r0)
			c->nbox_of_cell[cell] = nbox;
	}
}

/* The boxes of the cut cells [c0, c1): extents, bounds, compactness. */
static void
fill_boxes(void *arg, int64_t c0, int64_t c1, const int *stop)
{
	cut_ctx    *c = arg;
	gj_boxes   *b = c->b;
	const gj_points *p = c->p;
	int			dims = p->dims;

	for (int64_t cell = c0; cell < c1; cell++)
	{
		int64_t		r0 = c->g->cell_start[cell],
					r1 = c->g->cell_start[cell + 1],
					k = b->cell_box[cell] - 1;

		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		if (c->nbox_of_cell[cell] == 0)
			continue;
		for (int64_t pos = r0; pos < r1; pos++)
		{
			uint32_t	row = b->rows[pos];
			const double *x = p->x + (int64_t) row * dims;

			if (c->starts[pos])
			{
				k++;
				b->box_start[k] = pos;
				memcpy(b->lo + k * dims, x, sizeof(double) * dims);
				memcpy(b->hi + k * dims, x, sizeof(double) * dims);
			}
			b->box_end[k] = pos + 1;
			b->box_of_row[row] = (int32_t) k;
			for (int d = 0; d < dims; d++)
			{
				b->lo[k * dims + d] = x[d] < b->lo[k * dims + d] ? x[d] : b->lo[k * dims + d];
				b->hi[k * dims + d] = x[d] > b->hi[k * dims + d] ? x[d] : b->hi[k * dims + d];
			}
		}
		for (k = b->cell_box[cell]; k < b->cell_box[cell + 1]; k++)
			b->compact[k] = gj_sqdist(b->lo + k * dims, b->hi + k * dims, dims) <= c->g->eps2;
	}
}

gj_status
gj_boxes_build(gj_boxes *b, const gj_grid *g, const gj_points *p,
			   const uint8_t *compact, int nthreads)
{
	cut_ctx		c;
	gj_status	st;
	int64_t		total = 0;

	memset(b, 0, sizeof(*b));
	b->dims = p->dims;
	if (p->dims > GJ_BOX_MAX_DIMS || p->n == 0)
		return GJ_OK;
	memset(&c, 0, sizeof(c));
	c.g = g;
	c.p = p;
	c.compact = compact;
	c.b = b;
	/* just under eps / sqrt(d): a full box's diagonal stays within eps */
	c.side = sqrt(g->eps2 / p->dims) * 0.99;
	if (!(c.side > 0.0))
		return GJ_OK;			/* eps 0: duplicates only, compact cells */
	c.cand = malloc(g->ncells + 1);
	if (c.cand == NULL)
		return GJ_ERR_NOMEM;
	st = gj_par_for(find_candidates, &c, g->ncells, nthreads);
	if (st != GJ_OK || !c.any)
		goto done;
	b->rows = malloc(sizeof(uint32_t) * (p->n + 1));
	c.keys = malloc(sizeof(int64_t) * (p->n + 1));
	c.starts = malloc(p->n + 1);
	c.nbox_of_cell = malloc(sizeof(int64_t) * (g->ncells + 1));
	b->cell_box = malloc(sizeof(int64_t) * (g->ncells + 1));
	if (b->rows == NULL || c.keys == NULL || c.starts == NULL || c.nbox_of_cell == NULL ||
		b->cell_box == NULL)
	{
		st = GJ_ERR_NOMEM;
		goto done;
	}
	/* every row keyed by (cell, box), sorted stably: cells keep their places */
	st = gj_par_for(row_keys, &c, p->n, nthreads);
	if (st == GJ_OK)
		st = gj_sort_by_key(c.keys, b->rows, p->n, (g->ncells << 31) | 0x7fffffff);
	if (st == GJ_OK)
		st = gj_par_for(count_boxes, &c, g->ncells, nthreads);
	if (st != GJ_OK)
		goto done;
	for (int64_t cell = 0; cell < g->ncells; cell++)
	{
		b->cell_box[cell] = total;
		total += c.nbox_of_cell[cell];
	}
	b->cell_box[g->ncells] = total;
	if (total == 0)
		goto done;
	b->box_start = malloc(sizeof(int64_t) * total);
	b->box_end = malloc(sizeof(int64_t) * total);
	b->box_of_row = malloc(sizeof(int32_t) * (p->n + 1));
	b->compact = malloc(total);
	b->lo = malloc(sizeof(double) * p->dims * total);
	b->hi = malloc(sizeof(double) * p->dims * total);
	if (b->box_start == NULL || b->box_end == NULL || b->box_of_row == NULL ||
		b->compact == NULL || b->lo == NULL || b->hi == NULL)
	{
		st = GJ_ERR_NOMEM;
		goto done;
	}
	memset(b->box_of_row, 0xff, sizeof(int32_t) * (p->n + 1));	/* -1: not cut */
	b->nbox = total;
	st = gj_par_for(fill_boxes, &c, g->ncells, nthreads);

done:
	free(c.cand);
	free(c.keys);
	free(c.starts);
	free(c.nbox_of_cell);
	if (st != GJ_OK || b->nbox == 0)
	{
		gj_boxes_free(b);
		b->dims = p->dims;
	}
	return st;
}

void
gj_boxes_free(gj_boxes *b)
{
	free(b->cell_box);
	free(b->box_start);
	free(b->box_end);
	free(b->rows);
	free(b->box_of_row);
	free(b->compact);
	free(b->lo);
	free(b->hi);
	memset(b, 0, sizeof(*b));
}
