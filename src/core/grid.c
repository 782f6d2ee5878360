/*
 * grid.c
 *		The eps grid index: choice of indexed dimensions, cell geometry,
 *		sorting the points by linear cell id, and the non-empty cell arrays.
 *
 * Only non-empty cells are stored: cell_id[] holds their linear ids in
 * ascending order and cell_start[] where each one's points begin in the
 * sorted point array (the "point lookup array" of the GPU self-join papers,
 * here realised by physically sorting the points, which keeps each cell's
 * coordinates contiguous for the distance loops).
 *
 * Why a cell is a little wider than eps.  The search visits the cells at
 * most one step away in each indexed dimension, so every pair that passes
 * the float64 distance test must land in cells whose coordinates differ by
 * at most one.  Cell coordinates come from floor((x - origin) / width), which
 * rounds; and a pair can pass the test with |x_i - x_j| slightly above eps
 * because the squares and their sum round (badly so where eps*eps is
 * subnormal).  We therefore size cells from the largest per-dimension
 * difference that can pass, sqrt(eps2 + 2 * DBL_TRUE_MIN), widened by a
 * relative 2^-20; cell coordinates are kept below 2^24 so that their own
 * rounding error (about 2^24 * 2^-52) stays far inside that margin.  A
 * dimension whose range would need more cells gets proportionally wider
 * cells instead (coarser, still exact).
 *
 * Dimensions whose range overflows float64 or fits in one cell are not
 * indexed, nor is anything when eps*eps overflows (every pair then passes).
 * Of the rest, the highest-variance ones are taken first (REORDER) while the
 * product of cell counts stays below 2^62 and at most GJ_MAX_INDEXED_DIMS.
 * With no indexed dimension everything lies in one cell; the join still
 * finishes, splitting that cell's work across threads.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

#define GJ_WIDTH_MARGIN (1.0 + 1.0 / 1048576.0)
#define GJ_DBL_TRUE_MIN 4.9406564584124654e-324	/* C11 DBL_TRUE_MIN */

typedef struct dim_stat
{
	int			dim;
	double		var;
	double		min;
	double		width;
	int64_t		ncells;
} dim_stat;

/* Sort by variance, largest first; ties by dimension number. */
static int
cmp_var_desc(const void *a, const void *b)
{
	const dim_stat *x = a;
	const dim_stat *y = b;

	if (x->var > y->var)
		return -1;
	if (x->var < y->var)
		return 1;
	return x->dim - y->dim;
}

/* min, max, sum and sum of squares of every dimension, in one pass. */
gj_status
gj_points_stats(const gj_points *p, gj_dim_stats *st)
{
	int			dims = p->dims;

	for (int d = 0; d < dims; d++)
	{
		st[d].min = INFINITY;
		st[d].max = -INFINITY;
		st[d].sum = 0.0;
		st[d].sumsq = 0.0;
	}
	for (int64_t i = 0; i < p->n; i++)
	{
		const double *row = p->x + i * dims;

		if ((i & 0xffff) == 0 && gj_interrupted())
			return GJ_ERR_CANCELED;

		for (int d = 0; d < dims; d++)
		{
			double		v = row[d];

			st[d].min = v < st[d].min ? v : st[d].min;
			st[d].max = v > st[d].max ? v : st[d].max;
			st[d].sum += v;
			st[d].sumsq += v * v;
		}
	}
	return GJ_OK;
}

/*
 * Decide the grid geometry for n points of dims dimensions with the given
 * statistics.  Fills every field of g except the cell arrays.
 */
gj_status
gj_grid_plan_from_stats(gj_grid *g, int dims, int64_t n, double eps2,
						const gj_dim_stats *st)
{
	dim_stat   *ds;
	double		base;
	int			ncand = 0;
	int64_t		product = 1;

	if (!(eps2 >= 0.0) || dims < 1 || dims > GJ_MAX_DIMS)
		return GJ_ERR_ARG;

	memset(g, 0, sizeof(*g));
	g->dims = dims;
	g->eps2 = eps2;
	g->npoints = n;

	/* eps*eps overflows: every finite pair passes, so use one cell */
	if (!isfinite(g->eps2) || n < 2)
		return GJ_OK;

	base = sqrt(g->eps2 + 2.0 * GJ_DBL_TRUE_MIN) * GJ_WIDTH_MARGIN;

	ds = malloc(sizeof(dim_stat) * dims);
	if (ds == NULL)
		return GJ_ERR_NOMEM;
	for (int d = 0; d < dims; d++)
	{
		double		mn = st[d].min,
					mx = st[d].max,
					mean = st[d].sum / (double) n,
					var = st[d].sumsq / (double) n - mean * mean,
					range = mx - mn,
					width;
		int64_t		ncells;

		if (!isfinite(range) || range < base)
			continue;			/* unindexable, or a single cell */

		width = base;
		if (range / width > (double) (GJ_MAX_CELLS_PER_DIM - 2))
			width = range / (double) (GJ_MAX_CELLS_PER_DIM - 2);
		ncells = (int64_t) floor(range / width) + 1;
		if (ncells > GJ_MAX_CELLS_PER_DIM)
			ncells = GJ_MAX_CELLS_PER_DIM;
		if (ncells < 2)
			continue;

		/* the variance only ranks dimensions: rounding is harmless */
		ds[ncand].dim = d;
		ds[ncand].var = isfinite(var) ? var : DBL_MAX;
		ds[ncand].min = mn;
		ds[ncand].width = width;
		ds[ncand].ncells = ncells;
		ncand++;
	}

	qsort(ds, ncand, sizeof(dim_stat), cmp_var_desc);
	for (int c = 0; c < ncand && g->nidx < GJ_MAX_INDEXED_DIMS; c++)
	{
		int			k;

		if (ds[c].ncells > GJ_MAX_LINEAR_ID / product)
			continue;			/* would overflow the linear id: skip it */
		k = g->nidx++;
		product *= ds[c].ncells;
		g->idx_dim[k] = ds[c].dim;
		g->origin[k] = ds[c].min;
		g->width[k] = ds[c].width;
		g->ncell_dim[k] = ds[c].ncells;
	}
	free(ds);

	if (g->nidx > 0)
	{
		g->stride[g->nidx - 1] = 1;
		for (int k = g->nidx - 2; k >= 0; k--)
			g->stride[k] = g->stride[k + 1] * g->ncell_dim[k + 1];
	}
	return GJ_OK;
}

/* The grid geometry for p and eps2, without touching the points. */
gj_status
gj_grid_plan(gj_grid *g, const gj_points *p, double eps2)
{
	gj_dim_stats *st;
	gj_status	res;

	if (p->dims < 1 || p->dims > GJ_MAX_DIMS)
		return GJ_ERR_ARG;
	st = malloc(sizeof(gj_dim_stats) * p->dims);
	if (st == NULL)
		return GJ_ERR_NOMEM;
	res = gj_points_stats(p, st);
	if (res == GJ_OK)
		res = gj_grid_plan_from_stats(g, p->dims, p->n, eps2, st);
	free(st);
	return res;
}

/*
 * Z-order (Morton) ids for kNN grids: the bits of the indexed cell
 * coordinates interleaved, most significant first, dimension 0 first within
 * each bit.  Every aligned block of 2^L cells per dimension is then one
 * contiguous id range, so the sorted cells form an implicit tree that the
 * kNN search descends (knn_search.h).  The cells themselves, their sort and
 * their arrays are exactly the self-join's.
 */
#define GJ_MORTON_MAX_BITS 21

void
gj_grid_use_morton(gj_grid *g, const gj_dim_stats *st)
{
	int			bits;

	if (g->nidx == 0)
		return;
	bits = 62 / g->nidx;
	if (bits > GJ_MORTON_MAX_BITS)
		bits = GJ_MORTON_MAX_BITS;
	g->morton_bits = bits;
	for (int k = 0; k < g->nidx; k++)
	{
		double		range = st[g->idx_dim[k]].max - st[g->idx_dim[k]].min;
		int64_t		most = (INT64_C(1) << bits) - 2;

		if (range / g->width[k] > (double) most)
			g->width[k] = range / (double) most * GJ_WIDTH_MARGIN;
		g->ncell_dim[k] = (int64_t) floor(range / g->width[k]) + 1;
		if (g->ncell_dim[k] > most + 1)
			g->ncell_dim[k] = most + 1;
		g->stride[k] = 0;		/* unused in Z-order */
	}

	/*
	 * Interleave only the bits some cell coordinate uses: the ones above
	 * are zero in every id, so the ids are the same, but computing one
	 * (and sorting them) takes a third of the work for 300 cells a side.
	 */
	for (bits = 1; bits < g->morton_bits; bits++)
	{
		int			wide = 0;

		for (int k = 0; k < g->nidx; k++)
			wide |= g->ncell_dim[k] > (INT64_C(1) << bits);
		if (!wide)
			break;
	}
	g->morton_bits = bits;
}

/* Linear id of the cell holding a point. */
int64_t
gj_grid_cell_of(const gj_grid *g, const double *coords)
{
	int64_t		id = 0;
	int64_t		c[GJ_MAX_INDEXED_DIMS];

	for (int k = 0; k < g->nidx; k++)
	{
		double		u = (coords[g->idx_dim[k]] - g->origin[k]) / g->width[k];

		c[k] = (int64_t) u;
		if (c[k] < 0)
			c[k] = 0;
		if (c[k] >= g->ncell_dim[k])
			c[k] = g->ncell_dim[k] - 1;
	}
	if (g->morton_bits == 0)
	{
		for (int k = 0; k < g->nidx; k++)
			id += c[k] * g->stride[k];
		return id;
	}
	for (int b = g->morton_bits - 1; b >= 0; b--)
		for (int k = 0; k < g->nidx; k++)
			id = (id << 1) | ((c[k] >> b) & 1);
	return id;
}

/*
 * Reorder the points by perm into fresh arrays, on a few threads: reads
 * are random, writes sequential (measured: 4M 2-D points took 0.6 s with
 * the in-place cycle walk below, most of the grid build).  Needs a second
 * copy of the points for a moment; GJ_ERR_NOMEM, with p unchanged, when
 * that memory is not there (the caller then walks the cycles).
 */
typedef struct gather_arg
{
	const gj_points *p;
	const uint32_t *perm;
	double	   *x;
	int64_t    *ids;
} gather_arg;

static void
gather_rows(void *arg, int64_t r0, int64_t r1)
{
	gather_arg *a = arg;
	int			dims = a->p->dims;

	for (int64_t i = r0; i < r1; i++)
	{
		int64_t		src = a->perm[i];

		memcpy(a->x + i * dims, a->p->x + src * dims, sizeof(double) * dims);
		a->ids[i] = a->p->ids[src];
	}
}

#define GJ_GATHER_MIN_ROWS 65536	/* rows of 2 dimensions a thread is worth starting for */

static gj_status
gather_points(gj_points *p, const uint32_t *perm)
{
	gather_arg	a;
	gj_status	st;

	a.p = p;
	a.perm = perm;
	a.x = gj_big_alloc(sizeof(double) * p->dims * (p->n + 1));
	a.ids = malloc(sizeof(int64_t) * (p->n + 1));
	st = a.x == NULL || a.ids == NULL ? GJ_ERR_NOMEM :
		gj_run_rows(gather_rows, &a, 0, p->n,
					gj_slices_for(p->n, 1 + GJ_GATHER_MIN_ROWS * 2 / p->dims));
	if (st != GJ_OK)
	{
		free(a.x);
		free(a.ids);
		return st;
	}
	gj_points_replace(p, a.x, a.ids);
	return GJ_OK;
}

/*
 * Reorder the rows of p so that row k becomes old row perm[k], in place by
 * following permutation cycles (one spare row, one bit per row).
 */
static gj_status
permute_points(gj_points *p, const uint32_t *perm)
{
	int			dims = p->dims;
	size_t		rowsz = sizeof(double) * dims;
	uint8_t    *done = calloc((size_t) p->n / 8 + 1, 1);
	double	   *tmp = malloc(rowsz);

	if (done == NULL || tmp == NULL)
	{
		free(done);
		free(tmp);
		return GJ_ERR_NOMEM;
	}
	for (int64_t s = 0; s < p->n; s++)
	{
		int64_t		k = s;
		int64_t		tmpid;

		if ((s & 0xffff) == 0 && gj_interrupted())
		{
			/* the rows are a valid permutation of the input at any point */
			free(done);
			free(tmp);
			return GJ_ERR_CANCELED;
		}
		if (done[s >> 3] & (1 << (s & 7)) || perm[s] == (uint32_t) s)
			continue;
		memcpy(tmp, p->x + s * dims, rowsz);
		tmpid = p->ids[s];
		for (;;)
		{
			int64_t		src = perm[k];

			done[k >> 3] |= (uint8_t) (1 << (k & 7));
			if (src == s)
			{
				memcpy(p->x + k * dims, tmp, rowsz);
				p->ids[k] = tmpid;
				break;
			}
			memcpy(p->x + k * dims, p->x + src * dims, rowsz);
			p->ids[k] = p->ids[src];
			k = src;
		}
	}
	free(done);
	free(tmp);
	return GJ_OK;
}

/*
 * Reorder p's rows so that row k becomes old row perm[k]: into fresh
 * arrays, or in place when there is no memory for a second copy.
 */
gj_status
gj_points_apply_order(gj_points *p, const uint32_t *perm)
{
	gj_status	st = gather_points(p, perm);

	if (st == GJ_ERR_NOMEM)
		st = permute_points(p, perm);
	return st;
}

/* The cell ids of rows, on threads: 2M rows take 11 ms on one. */
typedef struct cell_ids_arg
{
	const gj_grid *g;
	const gj_points *p;
	int64_t    *keys;
	uint32_t   *perm;
	int64_t		maxkey;			/* out: the slice's largest id */
} cell_ids_arg;

#define GJ_CELL_IDS_MIN_ROWS 131072	/* rows a thread is worth starting for */

static void
cell_ids_rows(void *arg, int64_t r0, int64_t r1)
{
	cell_ids_arg *a = arg;

	for (int64_t i = r0; i < r1; i++)
	{
		a->keys[i] = gj_grid_cell_of(a->g, a->p->x + i * a->p->dims);
		a->perm[i] = (uint32_t) i;
		a->maxkey = a->keys[i] > a->maxkey ? a->keys[i] : a->maxkey;
	}
}

/*
 * keys[i] = the cell id of p's row i under g, perm[i] = i, on threads;
 * *maxkey the largest id (0 for no rows).  Polls the interrupt hook.
 */
gj_status
gj_grid_cell_ids(const gj_grid *g, const gj_points *p, int64_t *keys, uint32_t *perm,
				 int64_t *maxkey)
{
	cell_ids_arg args[GJ_MAX_SLICES];
	int			nt = gj_slices_for(p->n, GJ_CELL_IDS_MIN_ROWS);
	gj_status	st;

	for (int t = 0; t < nt; t++)
	{
		args[t].g = g;
		args[t].p = p;
		args[t].keys = keys;
		args[t].perm = perm;
		args[t].maxkey = 0;
	}
	st = gj_run_rows(cell_ids_rows, args, sizeof(cell_ids_arg), p->n, nt);
	*maxkey = 0;
	for (int t = 0; t < nt; t++)
		*maxkey = args[t].maxkey > *maxkey ? args[t].maxkey : *maxkey;
	return st;
}

/*
 * Plan the grid, sort the points by cell (in place) and build the non-empty
 * cell arrays.  On failure g holds nothing to free.
 */
gj_status
gj_grid_build(gj_grid *g, gj_points *p, double eps2)
{
	gj_status	st;

	if (p->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	st = gj_grid_plan(g, p, eps2);
	if (st != GJ_OK)
		return st;
	return gj_grid_build_planned(g, p);
}

/*
 * A table from every linear cell id to its non-empty cell, where it costs
 * little next to the rows (at most GJ_CELL_TABLE_PER_ROW entries a row, and
 * GJ_CELL_TABLE_MAX in all): a probe from a point then finds each cell of
 * its neighbourhood with one load instead of a binary search over cell_id.
 * Measured on 2 cores, 1M points probing a 100K-row 2-D grid of 1M cells:
 * 67 ms against 260 ms.  Without it (memory short, too many cells, Z-order
 * ids) the search answers the same.
 */
#define GJ_CELL_TABLE_PER_ROW 16
#define GJ_CELL_TABLE_MAX ((int64_t) 1 << 24)

int
gj_grid_table_fits(const gj_grid *g)
{
	int64_t		size;

	if (g->nidx == 0 || g->morton_bits != 0 || g->npoints >= INT32_MAX ||
		g->ncell_dim[0] > GJ_CELL_TABLE_MAX / g->stride[0])
		return 0;
	size = g->ncell_dim[0] * g->stride[0];
	return size <= GJ_CELL_TABLE_MAX && size <= GJ_CELL_TABLE_PER_ROW * g->npoints + 4096;
}

static void
cell_table(gj_grid *g)
{
	int64_t		size;

	g->cell_of = NULL;
	if (!gj_grid_table_fits(g))
		return;
	size = g->ncell_dim[0] * g->stride[0];
	g->cell_of = malloc(sizeof(int32_t) * size);
	if (g->cell_of == NULL)
		return;
	memset(g->cell_of, 0xff, sizeof(int32_t) * size);
	for (int64_t c = 0; c < g->ncells; c++)
		g->cell_of[g->cell_id[c]] = (int32_t) c;
}

/* Sort the points by the cells of an already planned g; build the arrays. */
gj_status
gj_grid_build_planned(gj_grid *g, gj_points *p)
{
	gj_status	st;
	int64_t    *keys;
	uint32_t   *perm;
	int64_t		maxkey = 0;
	int64_t		nc = 0;

	if (p->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	g->cell_id = NULL;
	g->cell_start = NULL;

	keys = malloc(sizeof(int64_t) * (p->n + 1));
	perm = malloc(sizeof(uint32_t) * (p->n + 1));
	if (keys == NULL || perm == NULL)
	{
		free(keys);
		free(perm);
		return GJ_ERR_NOMEM;
	}
	st = gj_grid_cell_ids(g, p, keys, perm, &maxkey);
	if (st == GJ_OK)
		st = gj_sort_by_key(keys, perm, p->n, maxkey);
	if (st == GJ_OK)
		st = gj_points_apply_order(p, perm);
	free(perm);
	if (st != GJ_OK)
	{
		free(keys);
		return st;
	}

	/* run-length encode the sorted keys into the cell arrays */
	for (int64_t i = 0; i < p->n; i++)
		if (i == 0 || keys[i] != keys[i - 1])
			nc++;
	g->cell_id = malloc(sizeof(int64_t) * (nc + 1));
	g->cell_start = malloc(sizeof(int64_t) * (nc + 1));
	if (g->cell_id == NULL || g->cell_start == NULL)
	{
		free(keys);
		gj_grid_free(g);
		return GJ_ERR_NOMEM;
	}
	nc = 0;
	for (int64_t i = 0; i < p->n; i++)
		if (i == 0 || keys[i] != keys[i - 1])
		{
			g->cell_id[nc] = keys[i];
			g->cell_start[nc] = i;
			nc++;
		}
	g->cell_start[nc] = p->n;
	g->ncells = nc;
	free(keys);
	cell_table(g);
	return GJ_OK;
}

/* Free the cell arrays. */
void
gj_grid_free(gj_grid *g)
{
	free(g->cell_id);
	free(g->cell_start);
	free(g->cell_of);
	g->cell_id = NULL;
	g->cell_start = NULL;
	g->cell_of = NULL;
	g->ncells = 0;
}
