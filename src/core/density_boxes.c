/*
 * density_boxes.c
 *		Cutting the dense wide cells of a grid into boxes of side just under
 *		eps / sqrt(d) (why: density_boxes.h).
 *
 * Each dense non-compact cell sorts its rows by their box (the floor of
 * each coordinate's offset from the cell's lower corner over the side,
 * every dimension, then the row) on a worker thread; the rows of a cut
 * cell are listed box by box at the cell's own positions, so no prefix sum
 * over rows is needed, only one over the cells' box counts.  A cell whose
 * boxes would hold fewer than GJ_BOX_MIN_FILL rows on average (sparse in
 * some dimension) is left whole: its rows then cost what they cost today.
 * Nothing here decides a pair: a box is compact only when its bounding
 * box's diagonal passes the shared rule, and the bounds only skip boxes
 * provably beyond eps, so DBSCAN's answer is the same with or without them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "density_boxes.h"

typedef struct box_key
{
	int64_t		k[GJ_BOX_MAX_DIMS];
	uint32_t	row;
} box_key;

static int
cmp_box_key(const void *a, const void *b)
{
	const box_key *x = a,
			   *y = b;

	for (int d = 0; d < GJ_BOX_MAX_DIMS; d++)
		if (x->k[d] != y->k[d])
			return x->k[d] < y->k[d] ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

typedef struct cut_ctx
{
	const gj_grid *g;
	const gj_points *p;
	const uint8_t *compact;
	gj_boxes   *b;
	double		side;
	uint8_t    *starts;			/* per position: a box starts here */
	int64_t    *nbox_of_cell;	/* per cell: its boxes, 0 when not cut */
} cut_ctx;

/* Sort the rows of cells [c0, c1) that are worth cutting by box. */
static void
cut_cells(void *arg, int64_t c0, int64_t c1, const int *stop)
{
	cut_ctx    *c = arg;
	const gj_points *p = c->p;
	int			dims = p->dims;

	for (int64_t cell = c0; cell < c1; cell++)
	{
		int64_t		r0 = c->g->cell_start[cell],
					r1 = c->g->cell_start[cell + 1],
					size = r1 - r0,
					nbox = 0;
		double		lo[GJ_BOX_MAX_DIMS];
		box_key    *e;

		c->nbox_of_cell[cell] = 0;
		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		if (c->compact[cell] || size < GJ_BOX_MIN_ROWS)
			continue;
		e = malloc(sizeof(box_key) * size);
		if (e == NULL)
			continue;			/* not cut: slower, still exact */
		for (int d = 0; d < dims; d++)
			lo[d] = p->x[r0 * dims + d];
		for (int64_t r = r0 + 1; r < r1; r++)
			for (int d = 0; d < dims; d++)
				lo[d] = p->x[r * dims + d] < lo[d] ? p->x[r * dims + d] : lo[d];
		for (int64_t r = r0; r < r1; r++)
		{
			box_key    *k = &e[r - r0];

			memset(k->k, 0, sizeof(k->k));
			for (int d = 0; d < dims; d++)
			{
				double		u = floor((p->x[r * dims + d] - lo[d]) / c->side);

				/* a huge offset in an unindexed dimension: its own box anyway */
				k->k[d] = u < 0.0 ? 0 : u > 1e18 ? (int64_t) 1e18 : (int64_t) u;
			}
			k->row = (uint32_t) r;
		}
		qsort(e, size, sizeof(box_key), cmp_box_key);
		for (int64_t j = 0; j < size; j++)
			nbox += j == 0 || memcmp(e[j].k, e[j - 1].k, sizeof(e[j].k)) != 0;
		if (nbox * GJ_BOX_MIN_FILL <= size)
		{
			for (int64_t j = 0; j < size; j++)
			{
				c->b->rows[r0 + j] = e[j].row;
				c->starts[r0 + j] = j == 0 || memcmp(e[j].k, e[j - 1].k, sizeof(e[j].k)) != 0;
			}
			c->nbox_of_cell[cell] = nbox;
		}
		free(e);
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
	b->rows = malloc(sizeof(uint32_t) * (p->n + 1));
	c.starts = malloc(p->n + 1);
	c.nbox_of_cell = malloc(sizeof(int64_t) * (g->ncells + 1));
	b->cell_box = malloc(sizeof(int64_t) * (g->ncells + 1));
	if (b->rows == NULL || c.starts == NULL || c.nbox_of_cell == NULL || b->cell_box == NULL)
	{
		st = GJ_ERR_NOMEM;
		goto done;
	}
	st = gj_par_for(cut_cells, &c, g->ncells, nthreads);
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
