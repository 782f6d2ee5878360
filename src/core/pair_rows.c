/*
 * pair_rows.c
 *		Per-row answers (neighbour counts, neighbour lists, DBSCAN) built
 *		from any engine's stream of pairs.
 *
 * The grid engines answer per-row questions from each row's own cell
 * neighbourhood (density.c, cpu_lists.c).  In many dimensions that
 * neighbourhood is most of the data, and what is fast is the tile join,
 * CPU or GPU, which streams pairs.  So the shapes are built here from an
 * engine run with emit_rows (chunks of row numbers a < b and distances),
 * on the calling thread, which polls the interrupt hook between chunks:
 *   counts:  every pair adds one to both rows;
 *   lists:   a first run counts, the lists are laid out (CSR), a second run
 *            fills them, and each is sorted by (distance, id) on threads;
 *   DBSCAN:  the counts give the core rows; core pairs are linked in a
 *            union-find forest (the larger root under the smaller); each
 *            component's smallest core id is found; a non-core row takes,
 *            among its core neighbours, the component whose smallest id is
 *            least.  The pairs of the first run are kept for the other two
 *            passes when they fit GJ_PAIR_STORE_BYTES, else the engine runs
 *            again for each.
 * The results are those of density.c's functions, row for row, so
 * gj_dbscan_number and the job's output serve both.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

#define GJ_PAIR_STORE_BYTES ((int64_t) 1 << 30)	/* pairs kept for DBSCAN's later passes */
#define GJ_PAIR_WAIT_MS 50

/* One pass over the pairs of a fresh run: fn(arg, a, b, dist) for each. */
typedef void (*pair_visit_fn) (void *arg, int64_t a, int64_t b, double dist);

static gj_status
visit_run(const gj_pair_source *src, pair_visit_fn fn, void *arg)
{
	gj_engine  *e = NULL;
	gj_status	st = src->start(src->arg, &e);

	if (st != GJ_OK)
		return st;
	for (;;)
	{
		gj_chunk   *c;

		if (gj_interrupted())
		{
			st = GJ_ERR_CANCELED;
			break;
		}
		st = gj_engine_next(e, GJ_PAIR_WAIT_MS, &c);
		if (st == GJ_AGAIN)
			continue;
		if (st != GJ_OK)
			break;
		for (int k = 0; k < c->n; k++)
			fn(arg, c->a[k], c->b[k], c->dist[k]);
		gj_engine_release(e, c);
	}
	gj_engine_free(e);
	return st == GJ_DONE ? GJ_OK : st;
}

/* --- counts -------------------------------------------------------------- */

typedef struct count_state
{
	int32_t    *counts;
	uint32_t   *store;			/* pairs kept (a, b), or NULL */
	int64_t		nstore;
	int64_t		capstore;
	int64_t		maxstore;		/* bytes */
	int			overflow;		/* more pairs than the store may hold */
} count_state;

static void
count_visit(void *arg, int64_t a, int64_t b, double dist)
{
	count_state *s = arg;

	(void) dist;
	s->counts[a]++;
	s->counts[b]++;
	if (s->store == NULL || s->overflow)
		return;
	if (s->nstore == s->capstore)
	{
		int64_t		ncap = s->capstore ? 2 * s->capstore : 65536;
		uint32_t   *nst = NULL;

		if (ncap * 2 * (int64_t) sizeof(uint32_t) <= s->maxstore)
			nst = realloc(s->store, sizeof(uint32_t) * 2 * ncap);
		if (nst == NULL)
		{
			s->overflow = 1;
			return;
		}
		s->store = nst;
		s->capstore = ncap;
	}
	s->store[2 * s->nstore] = (uint32_t) a;
	s->store[2 * s->nstore + 1] = (uint32_t) b;
	s->nstore++;
}

/* counts[i] = rows within eps of row i, itself included. */
gj_status
gj_pairs_count(const gj_pair_source *src, int64_t n, int32_t *counts)
{
	count_state s;

	memset(&s, 0, sizeof(s));
	s.counts = counts;
	for (int64_t i = 0; i < n; i++)
		counts[i] = 1;
	return visit_run(src, count_visit, &s);
}

/* --- DBSCAN -------------------------------------------------------------- */

typedef struct dbscan_state
{
	const gj_points *p;
	uint8_t    *core;
	int32_t    *parent;
	int64_t    *minid;			/* per root: its component's smallest core id */
	int32_t    *best;			/* per non-core row: its chosen root, or -1 */
} dbscan_state;

static inline int32_t
find(int32_t *parent, int32_t x)
{
	while (parent[x] != x)
	{
		parent[x] = parent[parent[x]];
		x = parent[x];
	}
	return x;
}

static void
link_visit(void *arg, int64_t a, int64_t b, double dist)
{
	dbscan_state *s = arg;
	int32_t		ra,
				rb;

	(void) dist;
	if (!s->core[a] || !s->core[b])
		return;
	ra = find(s->parent, (int32_t) a);
	rb = find(s->parent, (int32_t) b);
	if (ra < rb)
		s->parent[rb] = ra;
	else if (rb < ra)
		s->parent[ra] = rb;
}

static void
border_visit(void *arg, int64_t a, int64_t b, double dist)
{
	dbscan_state *s = arg;
	int64_t		c,
				o;
	int32_t		r;

	(void) dist;
	if (s->core[a] == s->core[b])
		return;
	c = s->core[a] ? a : b;		/* the core row */
	o = s->core[a] ? b : a;		/* the border row */
	r = s->parent[c];			/* flattened: the root */
	if (s->best[o] < 0 || s->minid[r] < s->minid[s->best[o]])
		s->best[o] = r;
}

/* Visit the stored pairs, polling the interrupt hook now and then. */
static gj_status
visit_store(const uint32_t *store, int64_t n, pair_visit_fn fn, void *arg)
{
	for (int64_t k = 0; k < n; k++)
	{
		if ((k & 0xfffff) == 0 && gj_interrupted())
			return GJ_ERR_CANCELED;
		fn(arg, store[2 * k], store[2 * k + 1], 0.0);
	}
	return GJ_OK;
}

/*
 * DBSCAN of p's rows (gj_cpu_dbscan's answer: core flags and, per row, a
 * representative row of its cluster or -1, for gj_dbscan_number).
 */
gj_status
gj_pairs_dbscan(const gj_pair_source *src, const gj_points *p, int32_t minpts,
				int32_t *root, uint8_t *core)
{
	int64_t		n = p->n;
	count_state cs;
	dbscan_state ds;
	gj_status	st;

	if (minpts < 1)
		return GJ_ERR_ARG;
	memset(&cs, 0, sizeof(cs));
	memset(&ds, 0, sizeof(ds));
	cs.counts = root;			/* the counts first, then the answer */
	cs.store = malloc(sizeof(uint32_t) * 2);	/* grows as pairs come */
	cs.maxstore = src->store_bytes > 0 ? src->store_bytes : GJ_PAIR_STORE_BYTES;
	ds.p = p;
	ds.core = core;
	ds.parent = malloc(sizeof(int32_t) * (n + 1));
	ds.minid = malloc(sizeof(int64_t) * (n + 1));
	if (cs.store == NULL || ds.parent == NULL || ds.minid == NULL)
	{
		st = GJ_ERR_NOMEM;
		goto done;
	}
	for (int64_t i = 0; i < n; i++)
		root[i] = 1;
	st = visit_run(src, count_visit, &cs);
	if (st != GJ_OK)
		goto done;
	if (cs.overflow)
	{
		free(cs.store);			/* too many to keep: run again below */
		cs.store = NULL;
	}
	for (int64_t i = 0; i < n; i++)
	{
		core[i] = root[i] >= minpts;
		ds.parent[i] = (int32_t) i;
		ds.minid[i] = INT64_MAX;
	}

	st = cs.store != NULL ? visit_store(cs.store, cs.nstore, link_visit, &ds) :
		visit_run(src, link_visit, &ds);
	if (st != GJ_OK)
		goto done;
	for (int64_t i = 0; i < n; i++)
		if (core[i])
		{
			int32_t		r = find(ds.parent, (int32_t) i);

			ds.parent[i] = r;	/* flat: parent is the root from here on */
			if (p->ids[i] < ds.minid[r])
				ds.minid[r] = p->ids[i];
		}
	ds.best = root;
	for (int64_t i = 0; i < n; i++)
		root[i] = core[i] ? ds.parent[i] : -1;
	st = cs.store != NULL ? visit_store(cs.store, cs.nstore, border_visit, &ds) :
		visit_run(src, border_visit, &ds);

done:
	free(cs.store);
	free(ds.parent);
	free(ds.minid);
	return st;
}

/* --- lists --------------------------------------------------------------- */

typedef struct list_state
{
	const gj_points *p;
	int64_t    *pos;			/* per row: the next free entry */
	const int64_t *off;			/* per row: its list's first entry */
	int64_t    *nb;
	double	   *nd;
	int			mismatch;		/* the second run brought other pairs */
} list_state;

static void
fill_visit(void *arg, int64_t a, int64_t b, double dist)
{
	list_state *s = arg;
	int64_t		ka = s->pos[a],
				kb = s->pos[b];

	if (ka >= s->off[a + 1] || kb >= s->off[b + 1])
	{
		s->mismatch = 1;		/* never written past a list's end */
		return;
	}
	s->pos[a]++;
	s->pos[b]++;
	s->nb[ka] = s->p->ids[b];
	s->nd[ka] = dist;
	s->nb[kb] = s->p->ids[a];
	s->nd[kb] = dist;
}

typedef struct sort_lists_arg
{
	const int64_t *off;
	int64_t    *nb;
	double	   *nd;
} sort_lists_arg;

/* Does entry i come before entry j: by (distance, id)? */
static inline int
entry_before(const int64_t *nb, const double *nd, int64_t i, int64_t j)
{
	return nd[i] < nd[j] || (nd[i] == nd[j] && nb[i] < nb[j]);
}

static inline void
entry_swap(int64_t *nb, double *nd, int64_t i, int64_t j)
{
	int64_t		ti = nb[i];
	double		td = nd[i];

	nb[i] = nb[j];
	nd[i] = nd[j];
	nb[j] = ti;
	nd[j] = td;
}

/* Restore the max-heap below r within [0, end). */
static void
sift_down(int64_t *nb, double *nd, int64_t r, int64_t end)
{
	for (;;)
	{
		int64_t		c = 2 * r + 1;

		if (c >= end)
			return;
		if (c + 1 < end && entry_before(nb, nd, c, c + 1))
			c++;
		if (!entry_before(nb, nd, r, c))
			return;
		entry_swap(nb, nd, r, c);
		r = c;
	}
}

/* Sort a list by (distance, id): insertion sort when short, else heapsort. */
static void
sort_list(int64_t *nb, double *nd, int64_t n)
{
	if (n <= 32)
	{
		for (int64_t i = 1; i < n; i++)
			for (int64_t k = i; k > 0 && entry_before(nb, nd, k, k - 1); k--)
				entry_swap(nb, nd, k, k - 1);
		return;
	}
	for (int64_t top = n / 2 - 1; top >= 0; top--)
		sift_down(nb, nd, top, n);
	for (int64_t end = n - 1; end > 0; end--)
	{
		entry_swap(nb, nd, 0, end);
		sift_down(nb, nd, 0, end);
	}
}

static void
sort_lists_rows(void *arg, int64_t r0, int64_t r1)
{
	sort_lists_arg *a = arg;

	for (int64_t i = r0; i < r1; i++)
		sort_list(a->nb + a->off[i], a->nd + a->off[i], a->off[i + 1] - a->off[i]);
}

/*
 * Every row's neighbours (ids and distances, by (distance, id), itself not
 * included) as CSR arrays: row i's are [off[i], off[i + 1]) of nb and nd.
 * max_entries bounds the memory: GJ_ERR_LIMIT when more are needed, with
 * *entries the number.  The arrays are malloc'd; the caller frees them.
 */
gj_status
gj_pairs_lists(const gj_pair_source *src, const gj_points *p, int64_t max_entries,
			   int64_t **off, int64_t **nb, double **nd, int64_t *entries)
{
	int64_t		n = p->n;
	int32_t    *counts = malloc(sizeof(int32_t) * (n + 1));
	list_state	ls;
	gj_status	st;
	int64_t		total = 0;

	*off = NULL;
	*nb = NULL;
	*nd = NULL;
	*entries = 0;
	memset(&ls, 0, sizeof(ls));
	if (counts == NULL)
		return GJ_ERR_NOMEM;
	st = gj_pairs_count(src, n, counts);
	if (st == GJ_OK)
	{
		for (int64_t i = 0; i < n; i++)
			total += counts[i] - 1;
		*entries = total;
		if (total > max_entries)
			st = GJ_ERR_LIMIT;
	}
	if (st == GJ_OK)
	{
		ls.p = p;
		ls.pos = malloc(sizeof(int64_t) * (n + 1));
		*off = malloc(sizeof(int64_t) * (n + 1));
		*nb = malloc(sizeof(int64_t) * (total + 1));
		*nd = malloc(sizeof(double) * (total + 1));
		if (ls.pos == NULL || *off == NULL || *nb == NULL || *nd == NULL)
			st = GJ_ERR_NOMEM;
	}
	if (st == GJ_OK)
	{
		int64_t		at = 0;

		for (int64_t i = 0; i < n; i++)
		{
			(*off)[i] = at;
			ls.pos[i] = at;
			at += counts[i] - 1;
		}
		(*off)[n] = at;
		ls.nb = *nb;
		ls.nd = *nd;
		ls.off = *off;
		st = visit_run(src, fill_visit, &ls);
	}
	if (st == GJ_OK)
	{
		/* a second run must bring the same pairs: check it did */
		st = ls.mismatch ? GJ_ERR_ARG : GJ_OK;
		for (int64_t i = 0; i < n && st == GJ_OK; i++)
			if (ls.pos[i] != (*off)[i + 1])
				st = GJ_ERR_ARG;
	}
	if (st == GJ_OK)
	{
		sort_lists_arg a = {*off, *nb, *nd};
		sort_lists_arg args[GJ_MAX_SLICES];
		int			nt = gj_slices_for(n, 4096);

		for (int t = 0; t < nt; t++)
			args[t] = a;
		st = gj_run_rows(sort_lists_rows, args, sizeof(sort_lists_arg), n, nt);
	}
	free(counts);
	free(ls.pos);
	if (st != GJ_OK)
	{
		free(*off);
		free(*nb);
		free(*nd);
		*off = NULL;
		*nb = NULL;
		*nd = NULL;
	}
	return st;
}
