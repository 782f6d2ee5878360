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
#include <stdlib.h>
#include <string.h>

#include "gj_core.h"

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
		st = counts_over(p, qs, eps2, &pl, max_rows, e, counts, info);
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

gj_status
gj_slab_dbscan(gj_points *p, double eps2, int32_t minpts, int64_t max_rows,
			   const gj_slab_engine *e, int32_t *root, uint8_t *core, gj_slab_info *info)
{
	int64_t		n = p->n;
	gj_slab_plan self,
				join;
	dbscan_state d;
	int64_t    *key = NULL;
	int64_t    *minid = NULL;
	gj_status	st;
	double		t0 = gj_now_ms();

	memset(info, 0, sizeof(*info));
	memset(&self, 0, sizeof(self));
	memset(&join, 0, sizeof(join));
	memset(&d, 0, sizeof(d));
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
	if (st == GJ_OK)
		st = counts_over(p, p, eps2, &join, max_rows, e, root, info);
	for (int64_t i = 0; st == GJ_OK && i < n; i++)
		core[i] = root[i] >= minpts;
	info->counts_ms = gj_now_ms() - t0;
	t0 = gj_now_ms();

	/* 2. components */
	d.e = e;
	d.eps2 = eps2;
	d.parent = root;
	d.rep = malloc(sizeof(int32_t) * (max_rows + 1));
	d.best = malloc(sizeof(int32_t) * (n + 1));
	key = malloc(sizeof(int64_t) * (n + 1));
	minid = malloc(sizeof(int64_t) * (n + 1));
	d.minid = minid;
	if (st == GJ_OK && (d.rep == NULL || d.best == NULL || key == NULL || minid == NULL))
		st = GJ_ERR_NOMEM;
	for (int64_t i = 0; st == GJ_OK && i < n; i++)
		root[i] = (int32_t) i;
	if (st == GJ_OK)
		st = over_windows(p, &self, core, NULL, link_window, &d, info);
	info->link_ms = gj_now_ms() - t0;
	t0 = gj_now_ms();

	/* 3. components keyed by least id; border rows take the least in reach */
	if (st == GJ_OK)
	{
		for (int64_t i = 0; i < n; i++)
			minid[i] = INT64_MAX;
		for (int64_t i = 0; i < n; i++)
			if (core[i])
			{
				int32_t		r = uf_find(root, (int32_t) i);

				root[i] = r;	/* flat from here on */
				if (p->ids[i] < minid[r])
					minid[r] = p->ids[i];
			}
		for (int64_t i = 0; i < n; i++)
		{
			key[i] = core[i] ? minid[root[i]] : INT64_MAX;
			d.best[i] = -1;
		}
		st = over_windows(p, &self, core, key, border_window, &d, info);
	}
	if (st == GJ_OK)
		for (int64_t i = 0; i < n; i++)
			if (!core[i])
				root[i] = d.best[i];
	info->border_ms = gj_now_ms() - t0;

	gj_slabs_free(&self);
	gj_slabs_free(&join);
	free(d.rep);
	free(d.best);
	free(key);
	free(minid);
	return st;
}
