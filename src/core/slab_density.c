/*
 * slab_density.c
 *		Neighbour counts and DBSCAN of more rows than the device holds, from
 *		an engine's answers on slabs that fit (slabs.c cuts them).
 *
 * Counts: the rows are the indexed set and the probing set at once (the
 * plan of a join of p with itself): each slab counts, for every row within
 * reach of it, that row's neighbours inside the slab, and a row's count is
 * the sum over slabs.
 *
 * DBSCAN, in three sweeps, each over windows of at most max_rows rows:
 *   1. core flags from the counts above;
 *   2. windows: a slab with (a part of) its halo, the later rows within
 *      reach, so that every pair within eps lies in some window.  The
 *      engine links each window's core rows on its own (core flags given);
 *      every core row is then joined, in a forest over all rows, to the
 *      representative its window gave it.  A window's components are
 *      connected in the whole graph, and every edge is in a window, so the
 *      forest's trees are exactly the components;
 *   3. each component's least id is its key, and each window's non-core
 *      rows pick, among the core rows within eps, the component of least
 *      key; each row keeps its least pick over windows (ties: the smaller
 *      root), which is the CPU engine's rule (the cluster of least
 *      smallest id).
 * The engine's windows are host copies only where a halo chunk does not
 * follow its slab directly (very wide halos); otherwise views of p.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

/* The engine told of the rows (and the probing rows) every step reads. */
static void
rows_told(const gj_slab_engine *e, const gj_points *p, const gj_points *qs, int on)
{
	if (e->rows == NULL)
		return;
	e->rows(e->arg, p, on);
	if (qs != NULL && qs != p)
		e->rows(e->arg, qs, on);
}

/* --- counts ---------------------------------------------------------------- */

/* Counts of qs's rows over the steps of pl (qs probing p's slabs), added up. */
static gj_status
counts_over(const gj_points *p, const gj_points *qs, double eps2, const gj_slab_plan *pl,
			int64_t max_rows, const gj_slab_engine *e, int32_t *counts, gj_slab_info *info)
{
	int32_t    *part = malloc(sizeof(int32_t) * (max_rows + 1));
	gj_status	st = part != NULL ? GJ_OK : GJ_ERR_NOMEM;

	memset(counts, 0, sizeof(int32_t) * qs->n);
	for (int t = 0; st == GJ_OK && t < pl->nsteps; t++)
	{
		const gj_slab_step *s = &pl->steps[t];
		gj_points	a,
					b;

		if (gj_interrupted())
		{
			st = GJ_ERR_CANCELED;
			break;
		}
		gj_points_view(&a, p, s->a0, s->a1);
		gj_points_view(&b, qs, s->b0, s->b1);
		st = e->join_counts(e->arg, &a, &b, eps2, part);
		for (int64_t i = 0; st == GJ_OK && i < b.n; i++)
			counts[s->b0 + i] += part[i];
		info->calls++;
	}
	free(part);
	return st;
}

gj_status
gj_slab_counts(gj_points *p, gj_points *qs, double eps2, int64_t max_rows,
			   const gj_slab_engine *e, int32_t *counts, gj_slab_info *info)
{
	gj_slab_plan pl;
	gj_status	st;
	double		t0 = gj_now_ms();

	memset(info, 0, sizeof(*info));
	if (qs == NULL)
		qs = p;
	if (p->n == 0)
	{
		memset(counts, 0, sizeof(int32_t) * qs->n);
		return GJ_OK;
	}
	st = gj_slabs_plan_ordered(p, qs, eps2, max_rows, e->order, e->arg, &pl);
	info->plan_ms = gj_now_ms() - t0;
	if (st == GJ_OK)
	{
		info->nslabs = pl.nslabs;
		rows_told(e, p, qs, 1);
		st = counts_over(p, qs, eps2, &pl, max_rows, e, counts, info);
		rows_told(e, p, qs, 0);
	}
	info->counts_ms = gj_now_ms() - t0 - info->plan_ms;
	gj_slabs_free(&pl);
	return st;
}

/* --- DBSCAN ---------------------------------------------------------------- */

/* The forest over all rows: a root is its tree's smallest row. */
static int32_t
uf_find(int32_t *parent, int32_t x)
{
	while (parent[x] != x)
	{
		parent[x] = parent[parent[x]];	/* path halving */
		x = parent[x];
	}
	return x;
}

static void
uf_union(int32_t *parent, int32_t a, int32_t b)
{
	a = uf_find(parent, a);
	b = uf_find(parent, b);
	if (a < b)
		parent[b] = a;
	else if (b < a)
		parent[a] = b;
}

/*
 * A window: rows [a0, a1) and [b0, b1) of p (b0 >= a1), the engine's view
 * of them, and their core flags and keys alongside.
 */
typedef struct window
{
	int64_t		a0,
				a1,
				b0,
				b1;
	gj_points	w;				/* a view of p, or a copy (owned) */
	uint8_t    *core;
	int64_t    *key;
	int			copy;
} window;

static int64_t
window_row(const window *win, int64_t k)
{
	int64_t		na = win->a1 - win->a0;

	return k < na ? win->a0 + k : win->b0 + (k - na);
}

static void
window_free(window *win)
{
	if (win->copy)
	{
		free(win->w.x);
		free(win->w.ids);
		free(win->core);
		free(win->key);
	}
	memset(win, 0, sizeof(*win));
}

/* Window [a0, a1) + [b0, b1) of p, with its core flags and keys (key may be NULL). */
static gj_status
window_open(window *win, const gj_points *p, const uint8_t *core, const int64_t *key,
			int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	int64_t		n = (a1 - a0) + (b1 - b0);
	int			dims = p->dims;

	memset(win, 0, sizeof(*win));
	win->a0 = a0;
	win->a1 = a1;
	win->b0 = b0 == b1 ? a1 : b0;
	win->b1 = b0 == b1 ? a1 : b1;
	if (win->b0 == a1)
	{
		/* consecutive rows: a view */
		gj_points_view(&win->w, p, a0, win->b1);
		win->core = (uint8_t *) core + a0;
		win->key = key != NULL ? (int64_t *) key + a0 : NULL;
		return GJ_OK;
	}
	win->copy = 1;
	win->w.dims = dims;
	win->w.n = win->w.cap = n;
	win->w.x = malloc(sizeof(double) * dims * (n + 1));
	win->w.ids = malloc(sizeof(int64_t) * (n + 1));
	win->core = malloc(n + 1);
	win->key = key != NULL ? malloc(sizeof(int64_t) * (n + 1)) : NULL;
	if (win->w.x == NULL || win->w.ids == NULL || win->core == NULL ||
		(key != NULL && win->key == NULL))
	{
		window_free(win);
		return GJ_ERR_NOMEM;
	}
	for (int64_t k = 0; k < n; k++)
	{
		int64_t		r = window_row(win, k);

		memcpy(win->w.x + k * dims, p->x + r * dims, sizeof(double) * dims);
		win->w.ids[k] = p->ids[r];
		win->core[k] = core[r];
		if (key != NULL)
			win->key[k] = key[r];
	}
	return GJ_OK;
}

/*
 * The windows of the self plan pl: each halo step is its slab with a
 * chunk of the halo; a slab without halo is a window alone.
 */
typedef gj_status (*window_fn) (void *arg, window *win);

static gj_status
over_windows(const gj_points *p, const gj_slab_plan *pl, const uint8_t *core,
			 const int64_t *key, window_fn fn, void *arg, gj_slab_info *info)
{
	gj_status	st = GJ_OK;

	for (int t = 0; st == GJ_OK && t < pl->nsteps; t++)
	{
		const gj_slab_step *s = &pl->steps[t];
		window		win;

		if (s->self && t + 1 < pl->nsteps && !pl->steps[t + 1].self)
			continue;			/* its halo steps hold the slab too */
		if (gj_interrupted())
			return GJ_ERR_CANCELED;
		st = window_open(&win, p, core, key, s->a0, s->a1, s->b0, s->b1);
		if (st == GJ_OK)
			st = fn(arg, &win);
		window_free(&win);
		info->calls++;
	}
	return st;
}

typedef struct dbscan_state
{
	const gj_slab_engine *e;
	double		eps2;
	int32_t    *parent;			/* the forest over p's rows */
	int32_t    *rep;			/* the engine's answers for one window */
	int64_t    *minid;			/* per root: its component's least id */
	int32_t    *best;			/* per row: the root of least key picked, or -1 */
	const gj_band *band;		/* pairs the engine's eps2 misses, within the caller's rule */
} dbscan_state;

static int64_t
window_cores(const window *win)
{
	int64_t		ncore = 0;

	for (int64_t k = 0; k < win->w.n; k++)
		ncore += win->core[k];
	return ncore;
}

/* Sweep 2: each core row joined to its window's representative. */
static gj_status
link_window(void *arg, window *win)
{
	dbscan_state *d = arg;
	gj_status	st;

	if (window_cores(win) < 2)
		return GJ_OK;			/* nothing to link */
	st = d->e->dbscan_given(d->e->arg, &win->w, d->eps2, win->core, NULL, d->rep);
	for (int64_t k = 0; st == GJ_OK && k < win->w.n; k++)
		if (win->core[k] && d->rep[k] >= 0)
			uf_union(d->parent, (int32_t) window_row(win, k),
					 (int32_t) window_row(win, d->rep[k]));
	return st;
}

/* Sweep 3: each non-core row's component of least key in this window. */
static gj_status
border_window(void *arg, window *win)
{
	dbscan_state *d = arg;
	int64_t		ncore = window_cores(win);
	gj_status	st;

	if (ncore == 0 || ncore == win->w.n)
		return GJ_OK;			/* no core row to reach, or none to reach it */
	st = d->e->dbscan_given(d->e->arg, &win->w, d->eps2, win->core, win->key, d->rep);
	for (int64_t k = 0; st == GJ_OK && k < win->w.n; k++)
		if (!win->core[k] && d->rep[k] >= 0)
		{
			int64_t		r = window_row(win, k);
			int32_t		c = uf_find(d->parent, (int32_t) window_row(win, d->rep[k])),
						b = d->best[r];

			if (b < 0 || d->minid[c] < d->minid[b] || (d->minid[c] == d->minid[b] && c < b))
				d->best[r] = c;
		}
	return st;
}

/* A border row's pick: root c if its key is less than that of the pick so far. */
static void
pick(dbscan_state *d, int64_t r, int32_t c)
{
	int32_t		b = d->best[r];

	if (b < 0 || d->minid[c] < d->minid[b] || (d->minid[c] == d->minid[b] && c < b))
		d->best[r] = c;
}

/*
 * Sweeps 2 and 3 over the windows of the self plan, with the core flags
 * given: root[] becomes each row's root (-1: noise).  The band's pairs
 * (within the rule, beyond the engine's eps2) link and reach as the
 * windows' do.
 */
static gj_status
components(gj_points *p, const gj_slab_plan *self, double eps2, const uint8_t *core,
		   const gj_band *band, int64_t max_rows, const gj_slab_engine *e,
		   int32_t *root, gj_slab_info *info)
{
	int64_t		n = p->n;
	dbscan_state d;
	int64_t    *key = NULL;
	gj_status	st = GJ_OK;
	double		t0 = gj_now_ms();

	memset(&d, 0, sizeof(d));
	d.e = e;
	d.eps2 = eps2;
	d.band = band;
	d.parent = root;
	d.rep = malloc(sizeof(int32_t) * (max_rows + 1));
	d.best = malloc(sizeof(int32_t) * (n + 1));
	d.minid = malloc(sizeof(int64_t) * (n + 1));
	key = malloc(sizeof(int64_t) * (n + 1));
	if (d.rep == NULL || d.best == NULL || key == NULL || d.minid == NULL)
		st = GJ_ERR_NOMEM;
	for (int64_t i = 0; st == GJ_OK && i < n; i++)
		root[i] = (int32_t) i;
	if (st == GJ_OK)
		st = over_windows(p, self, core, NULL, link_window, &d, info);
	for (int64_t k = 0; st == GJ_OK && band != NULL && k < band->n; k++)
		if (core[band->a[k]] && core[band->b[k]])
			uf_union(root, (int32_t) band->a[k], (int32_t) band->b[k]);
	info->link_ms = gj_now_ms() - t0;
	t0 = gj_now_ms();

	/* 3. components keyed by least id; border rows take the least in reach */
	if (st == GJ_OK)
	{
		for (int64_t i = 0; i < n; i++)
			d.minid[i] = INT64_MAX;
		for (int64_t i = 0; i < n; i++)
			if (core[i])
			{
				int32_t		r = uf_find(root, (int32_t) i);

				root[i] = r;	/* flat from here on */
				if (p->ids[i] < d.minid[r])
					d.minid[r] = p->ids[i];
			}
		for (int64_t i = 0; i < n; i++)
		{
			key[i] = core[i] ? d.minid[root[i]] : INT64_MAX;
			d.best[i] = -1;
		}
		st = over_windows(p, self, core, key, border_window, &d, info);
	}
	for (int64_t k = 0; st == GJ_OK && band != NULL && k < band->n; k++)
	{
		int64_t		a = band->a[k],
					b = band->b[k];

		if (core[a] && !core[b])
			pick(&d, b, root[a]);
		else if (core[b] && !core[a])
			pick(&d, a, root[b]);
	}
	if (st == GJ_OK)
		for (int64_t i = 0; i < n; i++)
			if (!core[i])
				root[i] = d.best[i];
	info->border_ms = gj_now_ms() - t0;
	free(d.rep);
	free(d.best);
	free(d.minid);
	free(key);
	return st;
}

gj_status
gj_slab_dbscan(gj_points *p, double eps2, int32_t minpts, int64_t max_rows,
			   const gj_slab_engine *e, int32_t *root, uint8_t *core, gj_slab_info *info)
{
	int64_t		n = p->n;
	gj_slab_plan self,
				join;
	gj_status	st;
	int			told;
	double		t0 = gj_now_ms();

	memset(info, 0, sizeof(*info));
	memset(&self, 0, sizeof(self));
	memset(&join, 0, sizeof(join));
	if (n == 0)
		return GJ_OK;
	if (minpts < 1 || n > GJ_MAX_ROWS)
		return GJ_ERR_ARG;

	/* the windows' plan sorts p; the counts' plan cuts the same order */
	st = gj_slabs_plan_ordered(p, NULL, eps2, max_rows, e->order, e->arg, &self);
	if (st == GJ_OK)
		st = gj_slabs_cut(p, p, self.dim, eps2, max_rows, &join);
	info->nslabs = self.nslabs;
	info->plan_ms = gj_now_ms() - t0;

	/* 1. core flags (the counts in root for now) */
	t0 = gj_now_ms();
	told = st == GJ_OK;
	if (told)
		rows_told(e, p, NULL, 1);
	if (st == GJ_OK)
		st = counts_over(p, p, eps2, &join, max_rows, e, root, info);
	for (int64_t i = 0; st == GJ_OK && i < n; i++)
		core[i] = root[i] >= minpts;
	info->counts_ms = gj_now_ms() - t0;

	/* 2, 3 */
	if (st == GJ_OK)
		st = components(p, &self, eps2, core, NULL, max_rows, e, root, info);
	if (told)
		rows_told(e, p, NULL, 0);
	gj_slabs_free(&self);
	gj_slabs_free(&join);
	return st;
}

/* --- a band the caller decides --------------------------------------------- */

void
gj_band_free(gj_band *band)
{
	free(band->a);
	free(band->b);
	free(band->c);
	memset(band, 0, sizeof(*band));
}

static gj_status
band_add(gj_band *band, int64_t a, int64_t b, double c)
{
	if (band->n == band->cap)
	{
		int64_t		cap = band->cap > 0 ? 2 * band->cap : 1024;
		int64_t    *na = realloc(band->a, sizeof(int64_t) * cap);
		int64_t    *nb = na != NULL ? realloc(band->b, sizeof(int64_t) * cap) : NULL;
		double	   *nc = nb != NULL ? realloc(band->c, sizeof(double) * cap) : NULL;

		if (na != NULL)
			band->a = na;
		if (nb != NULL)
			band->b = nb;
		if (nc == NULL)
			return GJ_ERR_NOMEM;
		band->c = nc;
		band->cap = cap;
	}
	band->a[band->n] = a;
	band->b[band->n] = b;
	band->c[band->n] = c;
	band->n++;
	return GJ_OK;
}

gj_status
gj_slab_band(gj_points *p, double eps2_in, double eps2_out, int64_t max_rows,
			 const gj_slab_engine *e, int32_t *counts_in, gj_band *band, gj_slab_info *info)
{
	int64_t		n = p->n;
	gj_slab_plan join;
	int32_t    *out = NULL;
	int64_t    *flagged = NULL;
	int64_t		nflagged = 0;
	gj_status	st;
	double		t0 = gj_now_ms();
	int			dim;

	memset(info, 0, sizeof(*info));
	memset(band, 0, sizeof(*band));
	memset(&join, 0, sizeof(join));
	if (n == 0)
		return GJ_OK;
	if (!(eps2_in <= eps2_out) || n > GJ_MAX_ROWS)
		return GJ_ERR_ARG;

	/* one plan at the outer eps serves both: its halos reach the inner too */
	st = gj_slabs_plan_ordered(p, p, eps2_out, max_rows, e->order, e->arg, &join);
	dim = band->dim = join.dim;
	info->nslabs = join.nslabs;
	info->plan_ms = gj_now_ms() - t0;
	t0 = gj_now_ms();
	out = malloc(sizeof(int32_t) * (n + 1));
	flagged = malloc(sizeof(int64_t) * (n + 1));
	if (st == GJ_OK && (out == NULL || flagged == NULL))
		st = GJ_ERR_NOMEM;
	if (st == GJ_OK)
	{
		rows_told(e, p, NULL, 1);
		st = counts_over(p, p, eps2_out, &join, max_rows, e, out, info);
		if (st == GJ_OK)
			st = counts_over(p, p, eps2_in, &join, max_rows, e, counts_in, info);
		rows_told(e, p, NULL, 0);
	}
	info->counts_ms = gj_now_ms() - t0;
	t0 = gj_now_ms();

	/*
	 * Both ends of a band pair count it at the outer eps only, so the pairs
	 * lie among the rows whose counts differ; p is sorted along dim, and
	 * a pair is no closer than its gap there.
	 */
	for (int64_t i = 0; st == GJ_OK && i < n; i++)
		if (out[i] != counts_in[i])
			flagged[nflagged++] = i;
	for (int64_t f = 0; st == GJ_OK && f < nflagged; f++)
	{
		const double *xa = p->x + flagged[f] * p->dims;

		if ((f & 0xff) == 0 && gj_interrupted())
			st = GJ_ERR_CANCELED;
		for (int64_t t = f + 1; st == GJ_OK && t < nflagged; t++)
		{
			const double *xb = p->x + flagged[t] * p->dims;
			double		gap = xb[dim] - xa[dim],
						c2;

			if (gap * gap > eps2_out)
				break;
			c2 = gj_sqdist(xa, xb, p->dims);
			if (c2 > eps2_in && c2 <= eps2_out)
				st = band_add(band, flagged[f], flagged[t], sqrt(c2));
		}
	}
	info->link_ms = gj_now_ms() - t0;
	if (st != GJ_OK)
		gj_band_free(band);
	gj_slabs_free(&join);
	free(out);
	free(flagged);
	return st;
}

gj_status
gj_slab_band_dbscan(gj_points *p, double eps2_in, double eps2_out, const uint8_t *core,
					const gj_band *band, int64_t max_rows, const gj_slab_engine *e,
					int32_t *root, gj_slab_info *info)
{
	gj_slab_plan self;
	gj_status	st;
	double		t0 = gj_now_ms();

	memset(info, 0, sizeof(*info));
	if (p->n == 0)
		return GJ_OK;
	if (!(eps2_in <= eps2_out) || p->n > GJ_MAX_ROWS)
		return GJ_ERR_ARG;
	/* p as gj_slab_band left it: sorted along band->dim */
	st = gj_slabs_cut(p, NULL, band->dim, eps2_out, max_rows, &self);
	info->nslabs = self.nslabs;
	info->plan_ms = gj_now_ms() - t0;
	if (st == GJ_OK)
	{
		rows_told(e, p, NULL, 1);
		st = components(p, &self, eps2_in, core, band, max_rows, e, root, info);
		rows_told(e, p, NULL, 0);
	}
	gj_slabs_free(&self);
	return st;
}
