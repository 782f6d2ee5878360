/*
 * density.c
 *		Per-row answers about eps neighbourhoods on the CPU: neighbour counts
 *		and DBSCAN, with memory O(rows) and no pair ever stored.
 *
 * Both work on the grid-sorted points in blocks of consecutive rows taken
 * from an atomic counter by worker threads (rows of a block mostly share a
 * cell, so each cell's 3^n neighbourhood is looked up once).  The calling
 * thread waits for the workers, polling the interrupt hook, so a cancel
 * stops every phase within a few milliseconds.
 *
 * DBSCAN, in the order the fast exact codes use (Wang, Gu and Shun; ArborX):
 *   1. core flags: each row counts its neighbours and stops at minpts;
 *   2. core rows within eps are linked in a union-find forest (lock-free:
 *      a root is only ever linked under a smaller row with compare-and-swap,
 *      so every root is its component's smallest row and no cycle forms);
 *      each pair is tried from its lower row only, and a pair already in one
 *      component costs no distance;
 *   3. every component's smallest core id is found, and each border row
 *      picks, among the core rows within eps, the component whose smallest
 *      id is least, which is the lowest-numbered cluster;
 *   4. gj_dbscan_number numbers components by that smallest id.
 * Compact cells.  A cell whose points' bounding box has a diagonal within
 * eps (by the shared rule: IEEE rounding is monotonic, so no pair inside
 * the box can compute a larger distance than its corners) holds points all
 * within eps of each other: its size counts without distances, its core
 * rows are one cluster at once, and another row needs only one core row
 * of it within eps to reach that cluster.  This is the dense-box idea of
 * the fast DBSCAN codes (cells of side eps/sqrt(d)) applied to the cells
 * the grid already has: it turns duplicates and tight clumps (all points
 * in one cell, in the worst case) from quadratic to linear.  Cells of
 * side eps/sqrt(d) for every cell are not used: the eps grid is shared
 * with the joins, and the capped count stops early in dense cells anyway.
 * Dense cells that are not compact (a clump a few eps across) are cut into
 * such boxes for DBSCAN alone (density_boxes.h): their core rows link box
 * by box, not pair by pair.  Uncapped counts still test every pair there.
 */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "density_boxes.h"
#include "lattice.h"

/* A worker's view of its current cell and that cell's neighbourhood. */
typedef struct nbhd
{
	int64_t		cell;
	int			nn;
	int64_t		nbr[GJ_MAX_ALL_NEIGHBOURS];
} nbhd;

static inline void
nbhd_at(const gj_grid *g, nbhd *h, int64_t i)
{
	int64_t		c = gj_grid_cell_of_row(g, i, h->cell);

	if (c != h->cell)
	{
		h->cell = c;
		h->nn = gj_grid_neighbourhood(g, c, h->nbr);
	}
}

/* --- compact cells ------------------------------------------------------- */

typedef struct compact_ctx
{
	const gj_grid *g;
	const gj_points *p;
	uint8_t    *compact;
} compact_ctx;

static void
compact_block(void *arg, int64_t c0, int64_t c1, const int *stop)
{
	compact_ctx *c = arg;
	const gj_points *p = c->p;
	int			dims = p->dims;
	double	   *lo = malloc(sizeof(double) * 2 * dims);
	double	   *hi = lo + dims;

	for (int64_t cell = c0; cell < c1; cell++)
	{
		int64_t		r0 = c->g->cell_start[cell],
					r1 = c->g->cell_start[cell + 1];

		if (lo == NULL)
		{
			c->compact[cell] = 0;	/* no room to look: not compact, still exact */
			continue;
		}
		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			break;
		memcpy(lo, p->x + r0 * dims, sizeof(double) * dims);
		memcpy(hi, lo, sizeof(double) * dims);
		for (int64_t r = r0 + 1; r < r1; r++)
			for (int d = 0; d < dims; d++)
			{
				double		v = p->x[r * dims + d];

				lo[d] = v < lo[d] ? v : lo[d];
				hi[d] = v > hi[d] ? v : hi[d];
			}
		/* the corners' distance by the shared rule bounds every pair's */
		c->compact[cell] = gj_sqdist(lo, hi, dims) <= c->g->eps2;
	}
	free(lo);
}

/* Per cell: are all its points within eps of each other?  NULL on OOM. */
static uint8_t *
compact_cells(const gj_grid *g, const gj_points *p, int nthreads, gj_status *st)
{
	compact_ctx c;

	c.g = g;
	c.p = p;
	c.compact = malloc(g->ncells + 1);
	if (c.compact == NULL)
	{
		*st = GJ_ERR_NOMEM;
		return NULL;
	}
	*st = gj_par_for(compact_block, &c, g->ncells, nthreads);
	return c.compact;
}

/* --- counts -------------------------------------------------------------- */

typedef struct count_ctx
{
	const gj_grid *g;
	const gj_points *p;
	int32_t		cap;			/* INT32_MAX: no cap */
	int32_t    *counts;
	const uint8_t *compact;
	const uint32_t *rows;		/* NULL: every row */
	const gj_lattice *lat;		/* uncapped counts: the dense cells' lattices */
	const int32_t *lat_of;		/* per cell: its lattice, or -1 (NULL: none) */
	const uint32_t *order;		/* rows NULL: the rows in this order (NULL: 0, 1, ...) */
} count_ctx;

/*
 * Rows within eps of row i, itself included, stopping at cap; a compact
 * own cell counts whole.
 */
static inline int32_t
count_row(const gj_grid *g, const gj_points *p, const nbhd *h, int64_t i,
		  int32_t cap, const uint8_t *compact, const gj_lattice *lat, const int32_t *lat_of)
{
	const double *xi = p->x + i * p->dims;
	int32_t		n = 0;
	int64_t		own = compact[h->cell] ? h->cell : -1;

	if (own >= 0)
	{
		int64_t		size = g->cell_start[own + 1] - g->cell_start[own];

		n = size < cap ? (int32_t) size : cap;
		if (n >= cap)
			return n;
	}
	for (int k = 0; k < h->nn; k++)
	{
		int64_t		r1 = g->cell_start[h->nbr[k] + 1];

		if (h->nbr[k] == own)
			continue;
		if (lat_of != NULL && lat_of[h->nbr[k]] >= 0)
		{
			/* no cap here: the lattice's count, equal to the loop's */
			n += (int32_t) gj_lattice_count(lat, lat_of[h->nbr[k]], xi, g->eps2, NULL);
			continue;
		}
		for (int64_t r = g->cell_start[h->nbr[k]]; r < r1; r++)
			if (gj_sqdist(xi, p->x + r * p->dims, p->dims) <= g->eps2 && ++n >= cap)
				return n;
	}
	return n;
}

static void
count_block(void *arg, int64_t r0, int64_t r1, const int *stop)
{
	count_ctx  *c = arg;
	nbhd		h;

	h.cell = -1;
	for (int64_t k = r0; k < r1; k++)
	{
		int64_t		i = c->rows != NULL ? c->rows[k] : c->order != NULL ? c->order[k] : k;

		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		nbhd_at(c->g, &h, i);
		c->counts[c->rows != NULL ? k : i] = count_row(c->g, c->p, &h, i, c->cap, c->compact,
													  c->lat, c->lat_of);
	}
}

gj_status
gj_cpu_count_within(const gj_grid *g, const gj_points *p, int32_t cap,
					int nthreads, int32_t *counts)
{
	return gj_cpu_count_rows(g, p, NULL, p->n, cap, nthreads, counts);
}

/*
 * Lattices for g's cells of gj_lattice_min_rows rows or more (uncapped
 * counts): *lat_of per cell, NULL when no cell is cut; with order, p's
 * rows in the order to count them (the cut cells' box by box; NULL: as
 * they are).  Without memory for them the counts go row by row, as exact.
 */
static gj_status
dense_lattices(const gj_grid *g, const gj_points *p, int nthreads, gj_lattice *lat,
			   int32_t **lat_of, uint32_t **order)
{
	int64_t		nbig = 0;
	int64_t    *range;
	int32_t    *cut;
	gj_status	st;

	memset(lat, 0, sizeof(*lat));
	*lat_of = NULL;
	if (order != NULL)
		*order = NULL;
	if (p->dims > GJ_LATTICE_MAX_DIMS)
		return GJ_OK;
	for (int64_t c = 0; c < g->ncells; c++)
		nbig += g->cell_start[c + 1] - g->cell_start[c] >= gj_lattice_min_rows;
	if (nbig == 0)
		return GJ_OK;
	range = malloc(sizeof(int64_t) * 2 * nbig);
	cut = malloc(sizeof(int32_t) * nbig);
	*lat_of = malloc(sizeof(int32_t) * (g->ncells + 1));
	if (range == NULL || cut == NULL || *lat_of == NULL)
	{
		free(range);
		free(cut);
		free(*lat_of);
		*lat_of = NULL;
		return GJ_OK;
	}
	nbig = 0;
	for (int64_t c = 0; c < g->ncells; c++)
		if (g->cell_start[c + 1] - g->cell_start[c] >= gj_lattice_min_rows)
		{
			range[2 * nbig] = g->cell_start[c];
			range[2 * nbig + 1] = g->cell_start[c + 1];
			nbig++;
		}
	st = gj_lattice_build(lat, p->x, p->dims, range, nbig, cut, nthreads);
	if (st == GJ_OK && lat->ncut > 0)
	{
		if (order != NULL && (*order = malloc(sizeof(uint32_t) * (p->n + 1))) != NULL)
			gj_lattice_order(lat, range, cut, nbig, NULL, *order, p->n);
		nbig = 0;
		for (int64_t c = 0; c < g->ncells; c++)
			(*lat_of)[c] = g->cell_start[c + 1] - g->cell_start[c] >= gj_lattice_min_rows ?
				cut[nbig++] : -1;
	}
	else
	{
		free(*lat_of);
		*lat_of = NULL;
	}
	free(range);
	free(cut);
	return st == GJ_ERR_CANCELED ? st : GJ_OK;
}

gj_status
gj_cpu_count_rows(const gj_grid *g, const gj_points *p, const uint32_t *rows,
				  int64_t nrows, int32_t cap, int nthreads, int32_t *counts)
{
	count_ctx	c;
	gj_status	st;
	uint8_t    *compact;
	gj_lattice	lat;
	int32_t    *lat_of = NULL;
	uint32_t   *order = NULL;

	if (p->n == 0 || nrows == 0)
		return GJ_OK;
	compact = compact_cells(g, p, nthreads, &st);
	if (st != GJ_OK)
	{
		free(compact);
		return st;
	}
	memset(&lat, 0, sizeof(lat));
	if (cap <= 0)
		st = dense_lattices(g, p, nthreads, &lat, &lat_of, rows == NULL ? &order : NULL);
	c.g = g;
	c.p = p;
	c.cap = cap > 0 ? cap : INT32_MAX;
	c.counts = counts;
	c.compact = compact;
	c.rows = rows;
	c.lat = &lat;
	c.lat_of = lat_of;
	c.order = order;
	if (st == GJ_OK)
		st = gj_par_for(count_block, &c, nrows, nthreads);
	free(compact);
	free(lat_of);
	free(order);
	gj_lattice_free(&lat);
	return st;
}

/*
 * Two sets (eps_join_counts): counts[i] = rows of the grid-sorted p within
 * eps of row i of qs, each probing its neighbourhood among p's cells.
 */
typedef struct count_q_ctx
{
	const gj_grid *g;
	const gj_points *p;
	const gj_points *qs;
	int32_t    *counts;
	const gj_lattice *lat;		/* count_queries: p's dense cells' lattices */
	const int32_t *lat_of;		/* per cell: its lattice, or -1 (NULL: none) */
} count_q_ctx;

static void
count_q_block(void *arg, int64_t r0, int64_t r1, const int *stop)
{
	count_q_ctx *c = arg;
	const gj_points *p = c->p;
	int64_t		nbr[GJ_MAX_ALL_NEIGHBOURS];

	for (int64_t i = r0; i < r1; i++)
	{
		const double *xq = c->qs->x + i * p->dims;
		int			nn = gj_grid_point_neighbourhood(c->g, xq, nbr);
		int32_t		n = 0;

		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		for (int k = 0; k < nn; k++)
		{
			int64_t		r1c = c->g->cell_start[nbr[k] + 1];

			if (c->lat_of != NULL && c->lat_of[nbr[k]] >= 0)
			{
				n += (int32_t) gj_lattice_count(c->lat, c->lat_of[nbr[k]], xq, c->g->eps2, NULL);
				continue;
			}
			for (int64_t r = c->g->cell_start[nbr[k]]; r < r1c; r++)
				n += gj_sqdist(xq, p->x + r * p->dims, p->dims) <= c->g->eps2;
		}
		c->counts[i] = n;
	}
}

gj_status
gj_cpu_count_queries(const gj_grid *g, const gj_points *p, const gj_points *qs,
					 int nthreads, int32_t *counts)
{
	count_q_ctx c;
	gj_lattice	lat;
	int32_t    *lat_of = NULL;
	gj_status	st;

	if (qs->n == 0)
		return GJ_OK;
	if (p->n == 0)
	{
		memset(counts, 0, sizeof(int32_t) * qs->n);
		return GJ_OK;
	}
	if (qs->dims != p->dims)
		return GJ_ERR_ARG;
	c.g = g;
	c.p = p;
	c.qs = qs;
	c.counts = counts;
	st = dense_lattices(g, p, nthreads, &lat, &lat_of, NULL);
	c.lat = &lat;
	c.lat_of = lat_of;
	if (st == GJ_OK)
		st = gj_par_for(count_q_block, &c, qs->n, nthreads);
	free(lat_of);
	gj_lattice_free(&lat);
	return st;
}

/*
 * The other way round, for qs larger than p: counts[j] = rows of qs within
 * eps of row j of the grid-sorted p, each row of qs probing p's cells in
 * its own order.  A small grid stays in cache where a large one would not
 * (measured on 2 cores: 100K rows counted against 1M in 2-D at ~3
 * partners, indexing the 100K and probing with the 1M took 77-115 ms,
 * indexing the 1M 166 ms).  Each worker adds into counts of its own (their
 * sum is the answer): atomic adds to one array from every core cost 30 ns
 * each once the rows have hundreds of partners (445 ms against 186 ms
 * the other way round at ~310).  Workers beyond GJ_COUNT_SLOT_BYTES of
 * private counts, or without memory for them, add atomically.
 */
#define GJ_COUNT_SLOT_BYTES ((int64_t) 256 << 20)
#define GJ_COUNT_MAX_SLOTS 256

typedef struct count_into_ctx
{
	count_q_ctx q;
	int			nslots;			/* private counts arrays allowed */
	int			next_slot;		/* atomic: the next one to hand out */
	int32_t    *slot[GJ_COUNT_MAX_SLOTS];
} count_into_ctx;

/* The worker's own counts for run `run` (threads are new to each run). */
static __thread const count_into_ctx *my_run;
static __thread int32_t *my_counts;

static void
count_into_block(void *arg, int64_t r0, int64_t r1, const int *stop)
{
	count_into_ctx *c = arg;
	const gj_points *p = c->q.p;
	int64_t		nbr[GJ_MAX_ALL_NEIGHBOURS];

	if (my_run != c)
	{
		int			s = __atomic_fetch_add(&c->next_slot, 1, __ATOMIC_RELAXED);

		my_run = c;
		my_counts = s < c->nslots ? calloc(p->n + 1, sizeof(int32_t)) : NULL;
		if (my_counts != NULL)
			c->slot[s] = my_counts;
	}
	for (int64_t i = r0; i < r1; i++)
	{
		const double *xq = c->q.qs->x + i * p->dims;
		int			nn = gj_grid_point_neighbourhood(c->q.g, xq, nbr);

		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		for (int k = 0; k < nn; k++)
		{
			int64_t		r1c = c->q.g->cell_start[nbr[k] + 1];

			for (int64_t r = c->q.g->cell_start[nbr[k]]; r < r1c; r++)
				if (gj_sqdist(xq, p->x + r * p->dims, p->dims) <= c->q.g->eps2)
				{
					if (my_counts != NULL)
						my_counts[r]++;
					else
						__atomic_fetch_add(&c->q.counts[r], 1, __ATOMIC_RELAXED);
				}
		}
	}
}

gj_status
gj_cpu_count_into(const gj_grid *g, const gj_points *p, const gj_points *qs,
				  int nthreads, int32_t *counts)
{
	count_into_ctx *c;
	gj_status	st;
	int64_t		fit;

	memset(counts, 0, sizeof(int32_t) * p->n);
	if (qs->n == 0 || p->n == 0)
		return GJ_OK;
	if (qs->dims != p->dims)
		return GJ_ERR_ARG;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return GJ_ERR_NOMEM;
	c->q.g = g;
	c->q.p = p;
	c->q.qs = qs;
	c->q.counts = counts;
	fit = GJ_COUNT_SLOT_BYTES / (int64_t) (sizeof(int32_t) * (p->n + 1));
	c->nslots = (int) (fit < GJ_COUNT_MAX_SLOTS ? fit : GJ_COUNT_MAX_SLOTS);
	st = gj_par_for(count_into_block, c, qs->n, nthreads);
	for (int s = 0; s < c->nslots && s < GJ_COUNT_MAX_SLOTS; s++)
		if (c->slot[s] != NULL)
		{
			for (int64_t j = 0; j < p->n; j++)
				counts[j] += c->slot[s][j];
			free(c->slot[s]);
		}
	free(c);
	return st;
}

/* --- DBSCAN -------------------------------------------------------------- */

typedef struct dbscan_ctx
{
	const gj_grid *g;
	const gj_points *p;
	int32_t		minpts;			/* 0: the core flags are given */
	int32_t    *parent;			/* union-find over rows; root[] at the end */
	uint8_t    *core;
	const int64_t *key;			/* per row: its rank among clusters (NULL: its id) */
	int64_t    *minid;			/* per root: the least key of its core rows */
	const uint8_t *compact;		/* per cell */
	int64_t    *first_core;		/* per compact cell: its first core row, or -1 */
	gj_boxes	bx;				/* the dense wide cells' boxes (nbox 0: none) */
	int64_t    *box_core;		/* per box: its first core row, or -1 */
} dbscan_ctx;

/* The root of x, halving the path on the way (benign races: any ancestor). */
static inline int32_t
uf_find(int32_t *parent, int32_t x)
{
	for (;;)
	{
		int32_t		p = __atomic_load_n(&parent[x], __ATOMIC_RELAXED);
		int32_t		gp;

		if (p == x)
			return x;
		gp = __atomic_load_n(&parent[p], __ATOMIC_RELAXED);
		if (gp != p)
			__atomic_compare_exchange_n(&parent[x], &p, gp, 0, __ATOMIC_RELAXED,
										__ATOMIC_RELAXED);
		x = gp;
	}
}

/* Link the components of a and b: the larger root goes under the smaller. */
static inline void
uf_union(int32_t *parent, int32_t a, int32_t b)
{
	for (;;)
	{
		int32_t		expect;

		a = uf_find(parent, a);
		b = uf_find(parent, b);
		if (a == b)
			return;
		if (a > b)
		{
			int32_t		t = a;

			a = b;
			b = t;
		}
		expect = b;
		if (__atomic_compare_exchange_n(&parent[b], &expect, a, 0,
										__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return;
	}
}

/*
 * count_row where cells are cut into boxes: a compact own box counts
 * whole, boxes beyond reach are skipped whole.
 */
static int32_t
count_row_boxes(const dbscan_ctx *c, const nbhd *h, int64_t i, int32_t cap)
{
	const gj_boxes *bx = &c->bx;
	const gj_grid *g = c->g;
	const gj_points *p = c->p;
	const double *xi = p->x + i * p->dims;
	int64_t		own = bx->box_of_row[i];
	int32_t		n = 0;

	if (own < 0 || !bx->compact[own])
		return count_row(g, p, h, i, cap, c->compact, NULL, NULL);
	n = bx->box_end[own] - bx->box_start[own] < cap ?
		(int32_t) (bx->box_end[own] - bx->box_start[own]) : cap;
	if (n >= cap)
		return n;
	for (int k = 0; k < h->nn; k++)
	{
		int64_t		cell = h->nbr[k];

		if (!gj_cell_cut(bx, cell))
		{
			int64_t		r1 = g->cell_start[cell + 1];

			for (int64_t r = g->cell_start[cell]; r < r1; r++)
				if (gj_sqdist(xi, p->x + r * p->dims, p->dims) <= g->eps2 && ++n >= cap)
					return n;
			continue;
		}
		for (int64_t b = bx->cell_box[cell]; b < bx->cell_box[cell + 1]; b++)
		{
			if (b == own || !gj_box_reachable(bx, b, xi, g->eps2))
				continue;
			if (gj_box_within(bx, b, xi, g->eps2))
			{
				/* every row of it: counted whole */
				n = bx->box_end[b] - bx->box_start[b] < cap - n ?
					n + (int32_t) (bx->box_end[b] - bx->box_start[b]) : cap;
				if (n >= cap)
					return n;
				continue;
			}
			for (int64_t pos = bx->box_start[b]; pos < bx->box_end[b]; pos++)
				if (gj_sqdist(xi, p->x + (int64_t) bx->rows[pos] * p->dims, p->dims) <= g->eps2 &&
					++n >= cap)
					return n;
		}
	}
	return n;
}

static void
core_block(void *arg, int64_t r0, int64_t r1, const int *stop)
{
	dbscan_ctx *c = arg;
	nbhd		h;

	h.cell = -1;
	for (int64_t i = r0; i < r1; i++)
	{
		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		c->parent[i] = (int32_t) i;
		if (c->minpts == 0)
			continue;			/* given */
		nbhd_at(c->g, &h, i);
		c->core[i] = (c->bx.nbox > 0 ? count_row_boxes(c, &h, i, c->minpts) :
					  count_row(c->g, c->p, &h, i, c->minpts, c->compact, NULL, NULL)) >= c->minpts;
	}
}

/* Compact cells: their first core row, and every core row joined to it. */
static void
first_core_block(void *arg, int64_t c0, int64_t c1, const int *stop)
{
	dbscan_ctx *c = arg;

	for (int64_t cell = c0; cell < c1; cell++)
	{
		int64_t		first = -1;

		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		if (c->compact[cell])
			for (int64_t r = c->g->cell_start[cell]; r < c->g->cell_start[cell + 1]; r++)
				if (c->core[r])
				{
					if (first < 0)
						first = r;
					else
						uf_union(c->parent, (int32_t) first, (int32_t) r);
				}
		c->first_core[cell] = first;
		if (gj_cell_cut(&c->bx, cell))
			for (int64_t b = c->bx.cell_box[cell]; b < c->bx.cell_box[cell + 1]; b++)
			{
				/* a compact box's core rows are one cluster; any box: its first core */
				first = -1;
				for (int64_t pos = c->bx.box_start[b]; pos < c->bx.box_end[b]; pos++)
				{
					int64_t		r = c->bx.rows[pos];

					if (!c->core[r])
						continue;
					if (first < 0)
						first = r;
					else if (c->bx.compact[b])
						uf_union(c->parent, (int32_t) first, (int32_t) r);
				}
				c->box_core[b] = first;
			}
	}
}

/*
 * Core row i with the core rows of cut cell `cell`, box by box: a compact
 * box already in i's cluster costs one find; else its first core row within
 * eps links it (its core rows are one cluster); a non-compact box links
 * each of its core rows within eps.  From either side, as compact cells.
 */
static void
link_boxes(dbscan_ctx *c, int64_t i, const double *xi, int64_t cell)
{
	const gj_boxes *bx = &c->bx;
	const gj_points *p = c->p;

	for (int64_t b = bx->cell_box[cell]; b < bx->cell_box[cell + 1]; b++)
	{
		int64_t		fc = c->box_core[b];

		if (fc < 0 ||
			(bx->compact[b] && uf_find(c->parent, (int32_t) i) == uf_find(c->parent, (int32_t) fc)) ||
			!gj_box_reachable(bx, b, xi, c->g->eps2))
			continue;
		if (bx->compact[b] && gj_box_within(bx, b, xi, c->g->eps2))
		{
			uf_union(c->parent, (int32_t) i, (int32_t) fc);	/* all of it within eps */
			continue;
		}
		for (int64_t pos = bx->box_start[b]; pos < bx->box_end[b]; pos++)
		{
			int64_t		r = bx->rows[pos];

			if (r == i || !c->core[r])
				continue;
			if (uf_find(c->parent, (int32_t) i) == uf_find(c->parent, (int32_t) r))
			{
				if (bx->compact[b])
					break;		/* linked meanwhile: the box is one cluster */
				continue;
			}
			if (gj_sqdist(xi, p->x + r * p->dims, p->dims) > c->g->eps2)
				continue;
			uf_union(c->parent, (int32_t) i, (int32_t) r);
			if (bx->compact[b])
				break;
		}
	}
}

/*
 * Core row i with every core row r > i within eps; a compact cell as a
 * whole: nothing when it is already in i's cluster, else its first core
 * row within eps, from either side.
 */
static void
link_block(void *arg, int64_t r0, int64_t r1, const int *stop)
{
	dbscan_ctx *c = arg;
	const gj_grid *g = c->g;
	const gj_points *p = c->p;
	nbhd		h;

	h.cell = -1;
	for (int64_t i = r0; i < r1; i++)
	{
		const double *xi = p->x + i * p->dims;

		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		if (!c->core[i])
			continue;
		nbhd_at(g, &h, i);
		for (int k = 0; k < h.nn; k++)
		{
			int64_t		cell = h.nbr[k];
			int64_t		r1c = g->cell_start[cell + 1];
			int64_t		r = g->cell_start[cell];

			if (gj_cell_cut(&c->bx, cell))
			{
				link_boxes(c, i, xi, cell);
				continue;
			}
			if (c->compact[cell])
			{
				int64_t		fc = c->first_core[cell];

				if (fc < 0 || uf_find(c->parent, (int32_t) i) == uf_find(c->parent, (int32_t) fc))
					continue;
				for (; r < r1c; r++)
					if (c->core[r] &&
						gj_sqdist(xi, p->x + r * p->dims, p->dims) <= g->eps2)
					{
						uf_union(c->parent, (int32_t) i, (int32_t) r);
						break;
					}
				continue;
			}

			if (r1c <= i + 1)
				continue;		/* a cell wholly before i */
			if (r <= i)
				r = i + 1;
			for (; r < r1c; r++)
			{
				if (!c->core[r] ||
					uf_find(c->parent, (int32_t) i) == uf_find(c->parent, (int32_t) r))
					continue;
				if (gj_sqdist(xi, p->x + r * p->dims, p->dims) <= g->eps2)
					uf_union(c->parent, (int32_t) i, (int32_t) r);
			}
		}
	}
}

/* Final roots of core rows; -1 for the rest until the border pass. */
static void
flatten_block(void *arg, int64_t r0, int64_t r1, const int *stop)
{
	dbscan_ctx *c = arg;

	(void) stop;
	for (int64_t i = r0; i < r1; i++)
		if (c->core[i])
		{
			int32_t		root = uf_find(c->parent, (int32_t) i);
			int64_t		id = c->key != NULL ? c->key[i] : c->p->ids[i];
			int64_t		cur = __atomic_load_n(&c->minid[root], __ATOMIC_RELAXED);

			while (id < cur &&
				   !__atomic_compare_exchange_n(&c->minid[root], &cur, id, 1,
												__ATOMIC_RELAXED, __ATOMIC_RELAXED))
				;
		}
}

/*
 * Border rows: the cluster (root) with the least smallest id among the core
 * rows within eps; -1 (noise) when there is none.  Core rows get their root.
 * Reads the forest only, writes only row i's slot of out.
 */
typedef struct border_ctx
{
	dbscan_ctx *d;
	int32_t    *out;
} border_ctx;

/* border_block's search of cut cell `cell`, box by box; the best root so far. */
static int32_t
border_boxes(const dbscan_ctx *c, const double *xi, int64_t cell, int32_t best)
{
	const gj_boxes *bx = &c->bx;
	const gj_points *p = c->p;

	for (int64_t b = bx->cell_box[cell]; b < bx->cell_box[cell + 1]; b++)
	{
		if (c->box_core[b] < 0 || !gj_box_reachable(bx, b, xi, c->g->eps2))
			continue;
		if (bx->compact[b] && gj_box_within(bx, b, xi, c->g->eps2))
		{
			/* its first core row is within eps, and speaks for the box */
			int32_t		root = uf_find(c->parent, (int32_t) c->box_core[b]);

			if (best < 0 || c->minid[root] < c->minid[best])
				best = root;
			continue;
		}
		for (int64_t pos = bx->box_start[b]; pos < bx->box_end[b]; pos++)
		{
			int64_t		r = bx->rows[pos];
			int32_t		root;

			if (!c->core[r] || gj_sqdist(xi, p->x + r * p->dims, p->dims) > c->g->eps2)
				continue;
			root = uf_find(c->parent, (int32_t) r);
			if (best < 0 || c->minid[root] < c->minid[best])
				best = root;
			if (bx->compact[b])
				break;			/* its core rows are one cluster */
		}
	}
	return best;
}

static void
border_block(void *arg, int64_t r0, int64_t r1, const int *stop)
{
	border_ctx *b = arg;
	dbscan_ctx *c = b->d;
	const gj_grid *g = c->g;
	const gj_points *p = c->p;
	nbhd		h;

	h.cell = -1;
	for (int64_t i = r0; i < r1; i++)
	{
		const double *xi = p->x + i * p->dims;
		int32_t		best = -1;

		if (__atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		if (c->core[i])
		{
			b->out[i] = uf_find(c->parent, (int32_t) i);
			continue;
		}
		nbhd_at(g, &h, i);
		for (int k = 0; k < h.nn; k++)
		{
			int64_t		cell = h.nbr[k];
			int64_t		r1c = g->cell_start[cell + 1];

			if (gj_cell_cut(&c->bx, cell))
			{
				best = border_boxes(c, xi, cell, best);
				continue;
			}
			if (c->compact[cell] && c->first_core[cell] < 0)
				continue;		/* no core row there */
			for (int64_t r = g->cell_start[cell]; r < r1c; r++)
			{
				int32_t		root;

				if (!c->core[r] ||
					gj_sqdist(xi, p->x + r * p->dims, p->dims) > g->eps2)
					continue;
				root = uf_find(c->parent, (int32_t) r);
				if (best < 0 || c->minid[root] < c->minid[best])
					best = root;
				if (c->compact[cell])
					break;		/* its core rows are one cluster */
			}
		}
		b->out[i] = best;
	}
}

/*
 * DBSCAN with the core flags counted (minpts > 0) or given in core
 * (minpts 0), clusters ranked by key (NULL: the ids).
 */
static gj_status
dbscan_run(const gj_grid *g, const gj_points *p, int32_t minpts, const int64_t *key,
		   int nthreads, int32_t *root, uint8_t *core)
{
	dbscan_ctx	c;
	border_ctx	b;
	gj_status	st;

	if (p->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	memset(&c, 0, sizeof(c));
	c.g = g;
	c.p = p;
	c.minpts = minpts;
	c.core = core;
	c.key = key;
	c.parent = malloc(sizeof(int32_t) * (p->n + 1));
	c.minid = malloc(sizeof(int64_t) * (p->n + 1));
	c.first_core = malloc(sizeof(int64_t) * (g->ncells + 1));
	if (c.parent == NULL || c.minid == NULL || c.first_core == NULL)
	{
		free(c.parent);
		free(c.minid);
		free(c.first_core);
		return GJ_ERR_NOMEM;
	}
	c.compact = compact_cells(g, p, nthreads, &st);
	if (st != GJ_OK)
	{
		free(c.parent);
		free(c.minid);
		free(c.first_core);
		free((void *) c.compact);
		return st;
	}
	/*
	 * the dense wide cells' boxes (none when no cell is worth cutting, or
	 * when memory for them is short: pair by pair is as exact)
	 */
	st = gj_boxes_build(&c.bx, g, p, c.compact, nthreads);
	if (st == GJ_OK && c.bx.nbox > 0)
		c.box_core = malloc(sizeof(int64_t) * c.bx.nbox);
	if (st == GJ_ERR_NOMEM || (c.bx.nbox > 0 && c.box_core == NULL))
	{
		gj_boxes_free(&c.bx);
		st = GJ_OK;
	}
	for (int64_t i = 0; i < p->n; i++)
		c.minid[i] = INT64_MAX;
	b.d = &c;
	b.out = root;
	if (st == GJ_OK)
		st = gj_par_for(core_block, &c, p->n, nthreads);
	if (st == GJ_OK)
		st = gj_par_for(first_core_block, &c, g->ncells, nthreads);
	if (st == GJ_OK)
		st = gj_par_for(link_block, &c, p->n, nthreads);
	if (st == GJ_OK)
		st = gj_par_for(flatten_block, &c, p->n, nthreads);
	if (st == GJ_OK)
		st = gj_par_for(border_block, &b, p->n, nthreads);
	free(c.parent);
	free(c.minid);
	free(c.first_core);
	free(c.box_core);
	gj_boxes_free(&c.bx);
	free((void *) c.compact);
	return st;
}

gj_status
gj_cpu_dbscan(const gj_grid *g, const gj_points *p, int32_t minpts,
			  int nthreads, int32_t *root, uint8_t *core)
{
	if (minpts < 1)
		return GJ_ERR_ARG;
	return dbscan_run(g, p, minpts, NULL, nthreads, root, core);
}

gj_status
gj_cpu_dbscan_given(const gj_grid *g, const gj_points *p, const uint8_t *core,
					const int64_t *key, int nthreads, int32_t *rep)
{
	/* minpts 0: core_block leaves the flags as they are */
	return dbscan_run(g, p, 0, key, nthreads, rep, (uint8_t *) core);
}

/* --- numbering ----------------------------------------------------------- */

typedef struct root_key
{
	int64_t		minid;
	int32_t		root;
} root_key;

static int
cmp_root_key(const void *a, const void *b)
{
	const root_key *x = a,
			   *y = b;

	return x->minid < y->minid ? -1 : x->minid > y->minid;
}

/*
 * root[i] (a representative row, or -1) becomes the cluster number: the
 * rank of the smallest core id of the representative's cluster.
 */
gj_status
gj_dbscan_number(const gj_points *p, int32_t *root, const uint8_t *core,
				 int64_t *nclusters)
{
	int64_t    *minid = malloc(sizeof(int64_t) * (p->n + 1));
	int32_t    *num;
	root_key   *keys;
	int64_t		nk = 0;

	*nclusters = 0;
	if (minid == NULL)
		return GJ_ERR_NOMEM;
	for (int64_t i = 0; i < p->n; i++)
		minid[i] = INT64_MAX;
	for (int64_t i = 0; i < p->n; i++)
	{
		if (core[i] && p->ids[i] < minid[root[i]])
			minid[root[i]] = p->ids[i];
		if (core[i] && root[i] == i)
			nk++;
		if ((i & 0xfffff) == 0 && gj_interrupted())
		{
			free(minid);
			return GJ_ERR_CANCELED;
		}
	}
	keys = malloc(sizeof(root_key) * (nk + 1));
	if (keys == NULL)
	{
		free(minid);
		return GJ_ERR_NOMEM;
	}
	nk = 0;
	for (int64_t i = 0; i < p->n; i++)
		if (core[i] && root[i] == i)
		{
			keys[nk].minid = minid[i];
			keys[nk].root = (int32_t) i;
			nk++;
		}
	qsort(keys, nk, sizeof(root_key), cmp_root_key);
	/* reuse minid as the number of each root */
	num = (int32_t *) minid;
	for (int64_t k = 0; k < nk; k++)
		num[keys[k].root] = (int32_t) k;
	for (int64_t i = 0; i < p->n; i++)
		if (root[i] >= 0)
			root[i] = num[root[i]];
	free(keys);
	free(minid);
	*nclusters = nk;
	return GJ_OK;
}
