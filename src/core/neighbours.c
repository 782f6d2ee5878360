/*
 * neighbours.c
 *		Forward neighbour cells of a grid cell (LID-UNICOMP).
 *
 * Linear ids are linear in the cell coordinates, so the neighbour at offset
 * o of the cell with id c has id c + L(o).  A cell pair is compared once,
 * from the cell with the smaller id: the forward neighbours are exactly the
 * offsets o with L(o) > 0, i.e. those whose first non-zero component is +1.
 *
 * Offsets are grouped by their prefix (all indexed dimensions but the last):
 * for a prefix, the three cells that differ only in the last dimension have
 * consecutive ids, so one range probe finds all of them.  With n indexed
 * dimensions there are (3^(n-1) - 1) / 2 positive prefixes, each taking its
 * whole triple, plus the zero prefix, which takes only last-dimension +1.
 *
 * Instead of a binary search per probe (what a GPU thread does), each prefix
 * keeps a cursor into the sorted cell_id array: as cells are visited in
 * ascending order the probe targets ascend too, so cursors only move
 * forward, and a run of cells costs a merge rather than 3^n log|G| lookups.
 */
#include "core_internal.h"

/* First index in cell_id[0..n) with cell_id >= key. */
static int64_t
lower_bound(const int64_t *a, int64_t n, int64_t key)
{
	int64_t		lo = 0,
				hi = n;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The positive prefix offsets of g: their linear offsets in off[] and their
 * vectors in vec[]; returns how many (at most GJ_MAX_FWD_PREFIXES - 1).
 * The GPU kernels get the same table, so both engines visit the same cells.
 */
int
gj_grid_forward_prefixes(const gj_grid *g, int64_t *off,
						 int8_t (*vec)[GJ_MAX_INDEXED_DIMS])
{
	int			m = g->nidx - 1;	/* prefix dimensions */
	int			total = 1;
	int			n = 0;

	if (g->nidx < 2)
		return 0;
	for (int k = 0; k < m; k++)
		total *= 3;
	for (int t = 0; t < total; t++)
	{
		int8_t		v[GJ_MAX_INDEXED_DIMS] = {0};
		int			first_nonzero = 0;
		int64_t		o = 0;
		int			rest = t;

		for (int k = m - 1; k >= 0; k--)
		{
			v[k] = (int8_t) (rest % 3 - 1);
			rest /= 3;
		}
		for (int k = 0; k < m; k++)
			if (v[k] != 0)
			{
				first_nonzero = v[k];
				break;
			}
		if (first_nonzero != 1)
			continue;
		for (int k = 0; k < GJ_MAX_INDEXED_DIMS; k++)
		{
			o += k < m ? v[k] * g->stride[k] : 0;
			vec[n][k] = k < m ? v[k] : 0;
		}
		off[n++] = o;
	}
	return n;
}

/*
 * Prepare an iterator for a run of cells that starts at first_cell; the
 * cells passed to gj_nbr_forward must then ascend.
 */
void
gj_nbr_iter_init(gj_nbr_iter *it, const gj_grid *g, int64_t first_cell)
{
	int64_t		start;

	it->g = g;
	it->nprefix = 0;
	if (g->nidx < 2 || g->ncells == 0)
		return;
	it->nprefix = gj_grid_forward_prefixes(g, it->prefix_off, it->prefix_vec);
	start = g->cell_id[first_cell];
	for (int p = 0; p < it->nprefix; p++)
		it->cursor[p] = lower_bound(g->cell_id, g->ncells,
									start + it->prefix_off[p] - 1);
}

/*
 * Write the indexes of the non-empty forward neighbours of cell into out
 * (room for GJ_MAX_FWD_NEIGHBOURS); returns how many.
 */
int
gj_nbr_forward(gj_nbr_iter *it, int64_t cell, int64_t *out)
{
	const gj_grid *g = it->g;
	int64_t		id = g->cell_id[cell];
	int			last = g->nidx - 1;
	int64_t		c[GJ_MAX_INDEXED_DIMS];
	int			n = 0;
	int64_t		rest = id;
	int			has_lo,
				has_hi;

	if (g->nidx == 0)
		return 0;
	for (int k = last; k >= 0; k--)
	{
		c[k] = rest % g->ncell_dim[k];
		rest /= g->ncell_dim[k];
	}
	has_lo = c[last] > 0;
	has_hi = c[last] + 1 < g->ncell_dim[last];

	/* zero prefix: only the next cell along the last dimension */
	if (has_hi && cell + 1 < g->ncells && g->cell_id[cell + 1] == id + 1)
		out[n++] = cell + 1;

	for (int p = 0; p < it->nprefix; p++)
	{
		int			valid = 1;
		int64_t		base,
					lo,
					hi,
					cur;

		for (int k = 0; k < last; k++)
		{
			int64_t		ck = c[k] + it->prefix_vec[p][k];

			if (ck < 0 || ck >= g->ncell_dim[k])
			{
				valid = 0;
				break;
			}
		}
		if (!valid)
			continue;
		base = id + it->prefix_off[p];
		lo = base - has_lo;
		hi = base + has_hi;
		cur = it->cursor[p];
		/* gallop over long empty stretches, else step */
		if (cur + 16 < g->ncells && g->cell_id[cur + 16] < lo)
			cur += 16 + lower_bound(g->cell_id + cur + 16,
									g->ncells - cur - 16, lo);
		while (cur < g->ncells && g->cell_id[cur] < lo)
			cur++;
		it->cursor[p] = cur;
		while (cur < g->ncells && g->cell_id[cur] <= hi)
			out[n++] = cur++;
	}
	return n;
}

/*
 * The non-empty cells whose coordinates differ from c by at most one in
 * every indexed dimension (c itself within the grid), into out; one binary
 * search per prefix.
 */
static int
neighbourhood_of(const gj_grid *g, const int64_t *c, int64_t *out)
{
	int			last = g->nidx - 1;
	int64_t		id = 0;
	int			nprefix = 1,
				n = 0;

	for (int k = 0; k < g->nidx; k++)
		id += c[k] * g->stride[k];
	for (int k = 0; k < last; k++)
		nprefix *= 3;
	for (int t = 0; t < nprefix; t++)
	{
		int64_t		base = id;
		int			r = t,
					valid = 1;
		int64_t		lo,
					hi,
					cur;

		for (int k = last - 1; k >= 0; k--)
		{
			int			v = r % 3 - 1;
			int64_t		ck = c[k] + v;

			r /= 3;
			if (ck < 0 || ck >= g->ncell_dim[k])
			{
				valid = 0;
				break;
			}
			base += v * g->stride[k];
		}
		if (!valid)
			continue;
		lo = c[last] > 0 ? base - 1 : base;
		hi = c[last] + 1 < g->ncell_dim[last] ? base + 1 : base;
		if (g->cell_of != NULL)
		{
			for (int64_t idv = lo; idv <= hi; idv++)
				if (g->cell_of[idv] >= 0)
					out[n++] = g->cell_of[idv];
			continue;
		}
		for (cur = lower_bound(g->cell_id, g->ncells, lo);
			 cur < g->ncells && g->cell_id[cur] <= hi; cur++)
			out[n++] = cur;
	}
	return n;
}

/*
 * Write the indexes of every non-empty cell adjacent to cell, itself
 * included (room for GJ_MAX_ALL_NEIGHBOURS); returns how many.  For probes
 * from single points (restricted joins, estimates), which cannot rely on
 * LID-UNICOMP's one-sided visits.
 */
int
gj_grid_neighbourhood(const gj_grid *g, int64_t cell, int64_t *out)
{
	int64_t		c[GJ_MAX_INDEXED_DIMS];
	int64_t		rest = g->cell_id[cell];

	if (g->nidx == 0)
	{
		out[0] = cell;
		return 1;
	}
	for (int k = g->nidx - 1; k >= 0; k--)
	{
		c[k] = rest % g->ncell_dim[k];
		rest /= g->ncell_dim[k];
	}
	return neighbourhood_of(g, c, out);
}

/*
 * The same for any point x, in the grid's range or not (the other table of
 * a two-table join): the non-empty cells that can hold a row within eps of
 * x.  Its cell coordinate u = (x - origin) / width is clamped into the
 * grid, which only adds cells: a row within eps lies in a cell at most one
 * from floor(u), and for u in [-1, ncells + 1) the clamped cell's
 * neighbours include every such cell.  Beyond that range in any dimension
 * no row can be within eps: none (u is tested in float64, never converted
 * out of range).
 */
int
gj_grid_point_neighbourhood(const gj_grid *g, const double *x, int64_t *out)
{
	int64_t		c[GJ_MAX_INDEXED_DIMS];

	if (g->ncells == 0)
		return 0;
	if (g->nidx == 0)
	{
		out[0] = 0;
		return 1;
	}
	for (int k = 0; k < g->nidx; k++)
	{
		double		u = (x[g->idx_dim[k]] - g->origin[k]) / g->width[k];

		if (!(u >= -1.0 && u < (double) g->ncell_dim[k] + 1.0))
			return 0;
		c[k] = u < 0.0 ? 0 : (int64_t) u;
		if (c[k] >= g->ncell_dim[k])
			c[k] = g->ncell_dim[k] - 1;
	}
	return neighbourhood_of(g, c, out);
}

/*
 * The cell holding sorted row `row`: the hint or the cell after it when a
 * caller walks rows in order, else the last cell starting at or before it.
 */
int64_t
gj_grid_cell_of_row(const gj_grid *g, int64_t row, int64_t hint)
{
	int64_t		lo = 0,
				hi = g->ncells;

	if (hint >= 0 && hint < g->ncells)
	{
		if (row >= g->cell_start[hint] && row < g->cell_start[hint + 1])
			return hint;
		if (hint + 1 < g->ncells && row >= g->cell_start[hint + 1] &&
			row < g->cell_start[hint + 2])
			return hint + 1;
	}
	while (hi - lo > 1)
	{
		int64_t		mid = (lo + hi) / 2;

		if (g->cell_start[mid] <= row)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}
