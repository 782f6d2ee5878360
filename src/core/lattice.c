/*
 * lattice.c
 *		Building the lattices of dense cells for exact counts (why and how
 *		they are read: lattice.h).
 *
 * Per cell, on the threads of gj_par_for (a cell is one item): its
 * bounding box; slices of about equal side in every dimension with some
 * extent, so that a box holds a few rows (GJ_LATTICE_FILL); each row's box
 * by a monotonic formula (floor of the offset times slices over extent,
 * clamped), so slices are ordered; a counting sort of the rows box by box
 * into xs; and each slice's extent from its rows.  The caller's rows are
 * not moved.  Nothing here decides a pair: any cut gives the same counts,
 * only their cost changes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "density_boxes.h"
#include "lattice.h"

int64_t		gj_lattice_min_rows = 2048;
int64_t		gj_lattice_cells_cut = 0;

/*
 * Rows a box should hold on average, and how much thinner than the others
 * the last dimension's slices are.  A query pays a galloping search per
 * row of boxes its sphere spans and the rows of the boxes its surface
 * crosses: in 1-D there is one row of boxes and small boxes win; in 2-D
 * fewer, wider rows of thin boxes (16 rows a box, 2x thinner along the
 * last dimension) took 0.53-0.66 of the time of square boxes of 4 rows on
 * 100K-400K rows 2 eps across (one core); in 3-D, 16 and square.
 */
#define GJ_LATTICE_FILL(dims) ((dims) == 1 ? 4.0 : 16.0)
#define GJ_LATTICE_STRETCH(dims) ((dims) == 2 ? 2.0 : 1.0)

typedef struct lat_ctx
{
	const double *x;
	int			dims;
	const int64_t *range;
	int64_t    *cells;			/* the cut cells' numbers in the caller's list */
	gj_lattice *L;
	int			failed;			/* atomic: a cell found no memory */
} lat_ctx;

/* Cell c's slices per dimension into m (0 in m[0]: not cut). */
static void
choose_slices(const double *x, int dims, int64_t r0, int64_t r1, int32_t *m)
{
	double		lo[GJ_LATTICE_MAX_DIMS],
				hi[GJ_LATTICE_MAX_DIMS],
				logvol = 0.0,
				side;
	int64_t		n = r1 - r0;
	int			active = 0;

	m[0] = 0;
	for (int d = 0; d < dims; d++)
		lo[d] = hi[d] = x[r0 * dims + d];
	for (int64_t r = r0; r < r1; r++)
		for (int d = 0; d < dims; d++)
		{
			double		v = x[r * dims + d];

			lo[d] = v < lo[d] ? v : lo[d];
			hi[d] = v > hi[d] ? v : hi[d];
		}
	for (int d = 0; d < dims; d++)
	{
		if (!isfinite(lo[d]) || !isfinite(hi[d]) || !isfinite(hi[d] - lo[d]))
			return;				/* no lattice: the plain count */
		if (hi[d] > lo[d])
		{
			logvol += log(hi[d] - lo[d]);
			active++;
		}
	}
	/* a common side for the dimensions with extent: volume / side^a = n / fill */
	side = active > 0 ? exp((logvol - log(n / GJ_LATTICE_FILL(dims))) / active) : 0.0;
	for (int d = 0; d < dims; d++)
	{
		double		sd = d == dims - 1 ? side / GJ_LATTICE_STRETCH(dims) : side * GJ_LATTICE_STRETCH(dims),
					k = hi[d] > lo[d] && sd > 0.0 ? ceil((hi[d] - lo[d]) / sd) : 1.0;

		m[d] = (int32_t) (k < 1.0 ? 1.0 : k > GJ_LATTICE_MAX_SLICES ? GJ_LATTICE_MAX_SLICES : k);
	}
	/* rounding up must not multiply the boxes: at most 8 a row */
	for (;;)
	{
		double		boxes = 1.0;
		int			widest = 0;

		for (int d = 0; d < dims; d++)
		{
			boxes *= m[d];
			widest = m[d] > m[widest] ? d : widest;
		}
		if (boxes <= 8.0 * n || m[widest] == 1)
			break;
		m[widest] = (m[widest] + 1) / 2;
	}
}

/* Row r's slice in dimension d: monotonic in the coordinate. */
static inline int32_t
slice_of(double v, double lo, double scale, int32_t m)
{
	double		u = floor((v - lo) * scale);

	return u < 0.0 ? 0 : u >= (double) m ? m - 1 : (int32_t) u;
}

static void
fill_cells(void *arg, int64_t k0, int64_t k1, const int *stop)
{
	lat_ctx    *c = arg;
	gj_lattice *L = c->L;
	int			dims = c->dims;

	for (int64_t k = k0; k < k1; k++)
	{
		int64_t		cell = c->cells[k],
					r0 = c->range[2 * cell],
					r1 = c->range[2 * cell + 1],
					n = r1 - r0,
					nbox = 1,
					out = L->start[L->box0[k]];
		const int32_t *m = L->m + k * dims;
		int64_t    *start = L->start + L->box0[k];
		double	   *lo = L->lo + L->slice0[k],
				   *hi = L->hi + L->slice0[k];
		double		blo[GJ_LATTICE_MAX_DIMS],
					scale[GJ_LATTICE_MAX_DIMS];
		int64_t    *box = malloc(sizeof(int64_t) * (n + 1));

		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		if (box == NULL)
		{
			__atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
			return;
		}
		for (int d = 0; d < dims; d++)
		{
			double		bhi = c->x[r0 * dims + d];

			blo[d] = bhi;
			for (int64_t r = r0; r < r1; r++)
			{
				double		v = c->x[r * dims + d];

				blo[d] = v < blo[d] ? v : blo[d];
				bhi = v > bhi ? v : bhi;
			}
			scale[d] = bhi > blo[d] ? m[d] / (bhi - blo[d]) : 0.0;
			nbox *= m[d];
		}
		/* each row's box, the last dimension fastest; counting sort into xs */
		memset(start, 0, sizeof(int64_t) * (nbox + 1));
		for (int64_t r = r0; r < r1; r++)
		{
			int64_t		b = 0;

			for (int d = 0; d < dims; d++)
				b = b * m[d] + slice_of(c->x[r * dims + d], blo[d], scale[d], m[d]);
			box[r - r0] = b;
			start[b + 1]++;
		}
		start[0] = out;
		for (int64_t b = 0; b < nbox; b++)
			start[b + 1] += start[b];
		for (int64_t r = r0; r < r1; r++)
		{
			L->src[start[box[r - r0]]] = r;
			memcpy(L->xs + (start[box[r - r0]]++) * dims, c->x + r * dims, sizeof(double) * dims);
		}
		/* the scatter advanced each start to its box's end: shift back */
		memmove(start + 1, start, sizeof(int64_t) * nbox);
		start[0] = out;
		free(box);
		/* slice extents from the rows, empty slices given a neighbour's bound */
		for (int d = 0, s0 = 0; d < dims; s0 += m[d], d++)
		{
			for (int32_t j = 0; j < m[d]; j++)
			{
				lo[s0 + j] = INFINITY;
				hi[s0 + j] = -INFINITY;
			}
			for (int64_t r = r0; r < r1; r++)
			{
				double		v = c->x[r * dims + d];
				int32_t		j = slice_of(v, blo[d], scale[d], m[d]);

				lo[s0 + j] = v < lo[s0 + j] ? v : lo[s0 + j];
				hi[s0 + j] = v > hi[s0 + j] ? v : hi[s0 + j];
			}
			for (int32_t j = 0, seen = 0; j < m[d]; j++)
			{
				if (lo[s0 + j] <= hi[s0 + j])
				{
					seen = 1;
					continue;
				}
				if (seen)
					lo[s0 + j] = hi[s0 + j] = hi[s0 + j - 1];
				else
				{
					int32_t		f = j;

					while (!(lo[s0 + f] <= hi[s0 + f]))
						f++;	/* a cell has rows: some slice is filled */
					lo[s0 + j] = hi[s0 + j] = lo[s0 + f];
				}
			}
		}
	}
}

gj_status
gj_lattice_build(gj_lattice *L, const double *x, int dims, const int64_t *range,
				 int64_t ncells, int32_t *cut, int nthreads)
{
	lat_ctx		c;
	int32_t    *m = NULL;
	int64_t		ncut = 0,
				nslices = 0,
				nstart = 0,
				nrows = 0;
	gj_status	st = GJ_OK;

	memset(L, 0, sizeof(*L));
	L->dims = dims;
	for (int64_t k = 0; k < ncells; k++)
		cut[k] = -1;
	if (dims < 1 || dims > GJ_LATTICE_MAX_DIMS)
		return GJ_OK;
	memset(&c, 0, sizeof(c));
	for (int64_t k = 0; k < ncells; k++)
		ncut += range[2 * k + 1] - range[2 * k] >= gj_lattice_min_rows;
	if (ncut == 0)
		return GJ_OK;
	c.cells = malloc(sizeof(int64_t) * ncut);
	m = malloc(sizeof(int32_t) * dims * ncut);
	if (c.cells == NULL || m == NULL)
	{
		st = GJ_ERR_NOMEM;
		goto done;
	}
	/* which cells, and their slices (a cell's bounding box: serial, linear) */
	ncut = 0;
	for (int64_t k = 0; k < ncells; k++)
	{
		int64_t		r0 = range[2 * k],
					r1 = range[2 * k + 1];

		if (r1 - r0 < gj_lattice_min_rows)
			continue;
		choose_slices(x, dims, r0, r1, m + ncut * dims);
		if (m[ncut * dims] == 0)
			continue;
		c.cells[ncut] = k;
		cut[k] = (int32_t) ncut;
		ncut++;
	}
	if (ncut == 0)
		goto done;
	L->ncut = ncut;
	L->m = m;
	m = NULL;
	L->slice0 = malloc(sizeof(int64_t) * ncut);
	L->box0 = malloc(sizeof(int64_t) * ncut);
	if (L->slice0 == NULL || L->box0 == NULL)
	{
		st = GJ_ERR_NOMEM;
		goto done;
	}
	for (int64_t k = 0; k < ncut; k++)
	{
		int64_t		nbox = 1;

		L->slice0[k] = nslices;
		L->box0[k] = nstart;
		for (int d = 0; d < dims; d++)
		{
			nslices += L->m[k * dims + d];
			nbox *= L->m[k * dims + d];
		}
		nstart += nbox + 1;
		nrows += range[2 * c.cells[k] + 1] - range[2 * c.cells[k]];
	}
	L->nslices = nslices;
	L->nstart = nstart;
	L->nrows = nrows;
	L->start = malloc(sizeof(int64_t) * nstart);
	L->lo = malloc(sizeof(double) * nslices);
	L->hi = malloc(sizeof(double) * nslices);
	L->xs = malloc(sizeof(double) * dims * (nrows + 1));
	L->src = malloc(sizeof(int64_t) * (nrows + 1));
	if (L->start == NULL || L->lo == NULL || L->hi == NULL || L->xs == NULL || L->src == NULL)
	{
		st = GJ_ERR_NOMEM;
		goto done;
	}
	/* each cell's first row of xs, in start's first entry */
	nrows = 0;
	for (int64_t k = 0; k < ncut; k++)
	{
		L->start[L->box0[k]] = nrows;
		nrows += range[2 * c.cells[k] + 1] - range[2 * c.cells[k]];
	}
	c.x = x;
	c.dims = dims;
	c.range = range;
	c.L = L;
	st = gj_par_for(fill_cells, &c, ncut, nthreads);
	if (st == GJ_OK && c.failed)
		st = GJ_ERR_NOMEM;
	if (st == GJ_OK)
		__atomic_fetch_add(&gj_lattice_cells_cut, ncut, __ATOMIC_RELAXED);

done:
	free(c.cells);
	free(m);
	if (st != GJ_OK || L->ncut == 0)
	{
		gj_lattice_free(L);
		L->dims = dims;
		for (int64_t k = 0; k < ncells; k++)
			cut[k] = -1;
	}
	return st;
}

void
gj_lattice_free(gj_lattice *L)
{
	free(L->m);
	free(L->slice0);
	free(L->box0);
	free(L->start);
	free(L->lo);
	free(L->hi);
	free(L->xs);
	free(L->src);
	memset(L, 0, sizeof(*L));
}

void
gj_lattice_order(const gj_lattice *L, const int64_t *range, const int32_t *cut,
				 int64_t ncells, const int64_t *first, uint32_t *order, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		order[i] = (uint32_t) i;
	for (int64_t c = 0; c < ncells; c++)
	{
		int64_t		k = cut[c],
					r0 = range[2 * c],
					f = first != NULL ? first[c] : r0,
					x0;

		if (k < 0)
			continue;
		x0 = L->start[L->box0[k]];
		for (int64_t t = 0; t < range[2 * c + 1] - r0; t++)
			order[f + t] = (uint32_t) (f + L->src[x0 + t] - r0);
	}
}
