/*
 * test_density.c
 *		Unit tests of the per-row engines (density.c, cpu_lists.c): neighbour
 *		counts, neighbour lists and DBSCAN against brute-force oracles.
 *
 * Counts are compared with the oracle's row by row; neighbour lists with
 * every oracle pair of the row, sorted by (distance, id), distances bit for
 * bit; DBSCAN with gj_oracle_dbscan (breadth-first search, no union-find)
 * exactly: core flags, cluster numbers, border choices and noise.  Ids are
 * a permutation of 0..n-1 scattered over the grid order, so numbering by
 * smallest id is tested, not the engines' row order.  Data: random, skewed,
 * clustered, duplicates, one dense cell, grid-snapped points exactly eps
 * apart, chains of clusters one eps apart, minpts 1, 2 and more, 1 to 6
 * threads.  A failure prints the case and seed:
 *		test_density [seed]
 * The last line is "density: N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "density_boxes.h"
#include "lattice.h"
#include "datagen.h"
#include "oracle.h"

static int	passed = 0;
static int	failed = 0;

static void
result(int ok, const char *what, const char *name, uint64_t seed, const char *detail)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s %s seed %llu: %s\n", what, name, (unsigned long long) seed, detail);
	}
}

/* Row of each id in p (ids are 0..n-1). */
static int64_t *
rows_by_id(const gj_points *p)
{
	int64_t    *r = malloc(sizeof(int64_t) * (p->n + 1));

	for (int64_t i = 0; i < p->n; i++)
		r[p->ids[i]] = i;
	return r;
}

typedef struct entry
{
	double		d;
	int64_t		id;
} entry;

static int
cmp_entry(const void *a, const void *b)
{
	const entry *x = a,
			   *y = b;

	if (x->d != y->d)
		return x->d < y->d ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Counts and lists of the CPU engines against the oracle on one point set. */
static void
check_counts_lists(const char *name, const gj_points *orig, double eps,
				   int threads, uint64_t seed)
{
	gj_points	p;
	gj_grid		g;
	int64_t		n = orig->n;
	int32_t    *want = malloc(sizeof(int32_t) * (n + 1));
	int32_t    *got = malloc(sizeof(int32_t) * (n + 1));
	int64_t    *orow;
	gj_cpu_lists *lj;
	gj_chunk   *c;
	gj_status	st;
	int64_t		seen = 0,
				bad = 0;
	char		detail[256] = "";
	uint8_t    *listed = calloc(n + 1, 1);
	entry	   *ref = malloc(sizeof(entry) * (n + 1));

	gj_oracle_count_within(orig, eps * eps, want);
	orow = rows_by_id(orig);
	gj_points_copy(&p, orig, n);
	if (gj_grid_build(&g, &p, eps * eps) != GJ_OK)
	{
		result(0, "grid", name, seed, "build failed");
		goto done;
	}

	/* counts, uncapped and capped */
	for (int cap = 0; cap <= 3; cap += 3)
	{
		bad = 0;
		st = gj_cpu_count_within(&g, &p, cap, threads, got);
		for (int64_t i = 0; i < n && st == GJ_OK; i++)
		{
			int32_t		w = want[orow[p.ids[i]]];

			if (cap > 0 && w > cap)
				w = cap;
			if (got[i] != w && bad++ == 0)
				snprintf(detail, sizeof(detail), "cap %d id %lld: %d, oracle %d", cap,
						 (long long) p.ids[i], got[i], w);
		}
		if (st != GJ_OK)
			snprintf(detail, sizeof(detail), "status %s", gj_status_name(st));
		result(st == GJ_OK && bad == 0, cap ? "capped counts" : "counts", name, seed, detail);
	}

	/* lists of every row, then of every third row only (a WHERE id = ...) */
	for (int subset = 0; subset <= 1; subset++)
	{
		uint32_t   *rows = malloc(sizeof(uint32_t) * (n + 1));
		int64_t		nrows = 0;
		uint8_t    *want_listed = calloc(n + 1, 1);
		int32_t    *sub_counts = malloc(sizeof(int32_t) * (n + 1));

		for (int64_t i = 0; i < n; i++)
			if (!subset || i % 3 == 0)
			{
				rows[nrows++] = (uint32_t) i;
				want_listed[p.ids[i]] = 1;
			}
		/* counts of the subset */
		bad = 0;
		st = gj_cpu_count_rows(&g, &p, rows, nrows, 0, threads, sub_counts);
		for (int64_t k = 0; k < nrows && st == GJ_OK; k++)
			if (sub_counts[k] != want[orow[p.ids[rows[k]]]] && bad++ == 0)
				snprintf(detail, sizeof(detail), "subset count of id %lld: %d, oracle %d",
						 (long long) p.ids[rows[k]], sub_counts[k], want[orow[p.ids[rows[k]]]]);
		result(st == GJ_OK && bad == 0, subset ? "subset counts" : "row counts", name, seed, detail);
		memset(listed, 0, n + 1);
		seen = 0;
		bad = 0;
		st = gj_cpu_lists_start(&g, &p, subset ? rows : NULL, nrows, threads, &lj);
		while (st == GJ_OK)
		{
			st = gj_engine_next(GJ_ENGINE(lj), 1000, &c);
			if (st == GJ_AGAIN)
			{
				st = GJ_OK;
				continue;
			}
			if (st != GJ_OK)
				break;
			for (int r = 0; r < c->n; r++)
			{
				int64_t		id = c->a[r];
				int64_t		row = orow[id];
				int64_t		m = 0;
				int64_t		len = c->off[r + 1] - c->off[r] - GJ_LIST_GAP;

				seen++;
				if (listed[id]++ && bad++ == 0)
					snprintf(detail, sizeof(detail), "id %lld listed twice", (long long) id);
				if (!want_listed[id] && bad++ == 0)
					snprintf(detail, sizeof(detail), "id %lld listed, not asked for", (long long) id);
				for (int64_t j = 0; j < n; j++)
				{
					double		s = gj_sqdist(orig->x + row * orig->dims,
											  orig->x + j * orig->dims, orig->dims);

					if (j != row && s <= eps * eps)
					{
						ref[m].d = sqrt(s);
						ref[m].id = orig->ids[j];
						m++;
					}
				}
				qsort(ref, m, sizeof(entry), cmp_entry);
				if (m != len)
				{
					if (bad++ == 0)
						snprintf(detail, sizeof(detail), "id %lld: %lld neighbours, oracle %lld",
								 (long long) id, (long long) len, (long long) m);
					continue;
				}
				for (int64_t e = 0; e < m; e++)
					if (c->nb[c->off[r] + GJ_LIST_GAP + e] != ref[e].id ||
						memcmp(&c->nd[c->off[r] + GJ_LIST_GAP + e], &ref[e].d, sizeof(double)) != 0)
					{
						if (bad++ == 0)
							snprintf(detail, sizeof(detail), "id %lld entry %lld: (%lld, %.17g), oracle (%lld, %.17g)",
									 (long long) id, (long long) e,
									 (long long) c->nb[c->off[r] + GJ_LIST_GAP + e], c->nd[c->off[r] + GJ_LIST_GAP + e],
									 (long long) ref[e].id, ref[e].d);
						break;
					}
			}
			gj_engine_release(GJ_ENGINE(lj), c);
		}
		if (st == GJ_DONE)
			st = GJ_OK;
		else
			snprintf(detail, sizeof(detail), "status %s", gj_status_name(st));
		if (st == GJ_OK && seen != nrows && bad++ == 0)
			snprintf(detail, sizeof(detail), "%lld rows listed of %lld", (long long) seen, (long long) n);
		gj_engine_free(GJ_ENGINE(lj));
		result(st == GJ_OK && bad == 0, subset ? "subset lists" : "lists", name, seed, detail);
		free(rows);
		free(want_listed);
		free(sub_counts);
	}
	gj_grid_free(&g);
done:
	gj_points_free(&p);
	free(want);
	free(got);
	free(orow);
	free(listed);
	free(ref);
}

/* DBSCAN of the CPU engine (and numbering) against the oracle. */
static void
check_dbscan(const char *name, const gj_points *orig, double eps, int32_t minpts,
			 int threads, uint64_t seed)
{
	gj_points	p;
	gj_grid		g;
	int64_t		n = orig->n;
	int32_t    *wc = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *wcore = malloc(n + 1);
	int32_t    *root = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *core = malloc(n + 1);
	int64_t    *orow = rows_by_id(orig);
	int64_t		nclusters = 0,
				bad = 0,
				wantn = -1;
	char		detail[256] = "";
	gj_status	st;

	gj_oracle_dbscan(orig, eps * eps, minpts, wc, wcore);
	for (int64_t i = 0; i < n; i++)
		if (wc[i] + 1 > wantn)
			wantn = wc[i] + 1;
	gj_points_copy(&p, orig, n);
	st = gj_grid_build(&g, &p, eps * eps);
	if (st == GJ_OK)
		st = gj_cpu_dbscan(&g, &p, minpts, threads, root, core);
	if (st == GJ_OK)
		st = gj_dbscan_number(&p, root, core, &nclusters);
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "status %s", gj_status_name(st));
	for (int64_t i = 0; i < n && st == GJ_OK; i++)
	{
		int64_t		o = orow[p.ids[i]];

		if ((core[i] != wcore[o] || root[i] != wc[o]) && bad++ == 0)
			snprintf(detail, sizeof(detail), "id %lld: cluster %d core %d, oracle %d core %d",
					 (long long) p.ids[i], root[i], core[i], wc[o], wcore[o]);
	}
	if (st == GJ_OK && nclusters != (wantn < 0 ? 0 : wantn) && bad++ == 0)
		snprintf(detail, sizeof(detail), "%lld clusters, oracle %lld",
				 (long long) nclusters, (long long) wantn);
	{
		char		what[64];

		snprintf(what, sizeof(what), "dbscan minpts %d", minpts);
		result(st == GJ_OK && bad == 0, what, name, seed, detail);
	}
	if (st != GJ_ERR_ARG)
		gj_grid_free(&g);
	gj_points_free(&p);
	free(wc);
	free(wcore);
	free(root);
	free(core);
	free(orow);
}

/*
 * Rows of p (by id through orow) whose cluster or core flag differ from the
 * oracle's, and a differing cluster count; the first difference in detail.
 */
static int64_t
differ_clusters(const gj_points *p, const int32_t *got, const uint8_t *core, int64_t ncl,
				const int64_t *orow, const int32_t *ocl, const uint8_t *ocore, int64_t wantn,
				char *detail, size_t len)
{
	int64_t		bad = 0;

	for (int64_t i = 0; i < p->n; i++)
	{
		int64_t		o = orow[p->ids[i]];

		if ((core[i] != ocore[o] || got[i] != ocl[o]) && bad++ == 0)
			snprintf(detail, len, "id %lld: cluster %d core %d, oracle %d core %d",
					 (long long) p->ids[i], got[i], core[i], ocl[o], ocore[o]);
	}
	if (ncl != wantn && bad++ == 0)
		snprintf(detail, len, "%lld clusters, oracle %lld", (long long) ncl, (long long) wantn);
	return bad;
}

/*
 * Counts and DBSCAN in slabs (slab_density.c) with a brute-force engine of
 * the two questions, against the oracles: what the GPU engine answers on
 * the device, here by definition, so the slabs' plan, the windows and the
 * merging are what is tested.  gpu_density runs the same on the GPU.
 */
typedef struct brute_engine
{
	const gj_points *p;			/* the rows the windows are views of */
	int64_t		views;			/* windows that were views of p */
	int64_t		copies;			/* windows that were copies */
	int64_t		told;			/* rows arrays told on and not yet off */
	int64_t		untold;			/* calls outside on and off, or an off without its on */
} brute_engine;

/* The rows hook: the engine's calls come between on and off, which pair up. */
static void
brute_rows(void *arg, const gj_points *p, int on)
{
	brute_engine *b = arg;

	(void) p;
	if (!on && b->told == 0)
		b->untold++;
	b->told += on ? 1 : -1;
}

static gj_status
brute_join_counts(void *arg, const gj_points *s, const gj_points *r, double eps2,
				  int32_t *counts)
{
	brute_engine *b = arg;

	b->untold += b->told <= 0;
	for (int64_t i = 0; i < r->n; i++)
	{
		counts[i] = 0;
		for (int64_t j = 0; j < s->n; j++)
			counts[i] += gj_sqdist(r->x + i * r->dims, s->x + j * s->dims, s->dims) <= eps2;
	}
	return GJ_OK;
}

static int32_t
brute_find(int32_t *parent, int32_t x)
{
	while (parent[x] != x)
		x = parent[x];
	return x;
}

static gj_status
brute_dbscan_given(void *arg, const gj_points *w, double eps2, const uint8_t *core,
				   const int64_t *key, int32_t *rep)
{
	brute_engine *b = arg;
	int64_t		n = w->n;
	int32_t    *parent = malloc(sizeof(int32_t) * (n + 1));
	int64_t    *least = malloc(sizeof(int64_t) * (n + 1));

	b->untold += b->told <= 0;
	if (w->x >= b->p->x && w->x < b->p->x + b->p->n * b->p->dims)
		b->views++;
	else
		b->copies++;
	for (int64_t i = 0; i < n; i++)
	{
		parent[i] = (int32_t) i;
		least[i] = INT64_MAX;
	}
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = i + 1; j < n && core[i]; j++)
			if (core[j] && gj_sqdist(w->x + i * w->dims, w->x + j * w->dims, w->dims) <= eps2)
			{
				int32_t		a = brute_find(parent, (int32_t) i),
							c = brute_find(parent, (int32_t) j);

				if (a != c)
					parent[a > c ? a : c] = a < c ? a : c;
			}
	for (int64_t i = 0; i < n; i++)
		if (core[i])
		{
			int32_t		r = brute_find(parent, (int32_t) i);
			int64_t		k = key != NULL ? key[i] : w->ids[i];

			least[r] = k < least[r] ? k : least[r];
		}
	for (int64_t i = 0; i < n; i++)
	{
		int32_t		best = -1;

		if (core[i])
		{
			rep[i] = brute_find(parent, (int32_t) i);
			continue;
		}
		for (int64_t j = 0; j < n; j++)
			if (core[j] && gj_sqdist(w->x + i * w->dims, w->x + j * w->dims, w->dims) <= eps2)
			{
				int32_t		r = brute_find(parent, (int32_t) j);

				if (best < 0 || least[r] < least[best])
					best = r;
			}
		rep[i] = best;
	}
	free(parent);
	free(least);
	return GJ_OK;
}

static brute_engine slab_use;	/* windows seen over the whole run */
static int64_t band_cases = 0;	/* band cases with pairs both kept and not */

/* An order callback (as a device's sort): (coordinate, row) entries, qsort. */
static int64_t orders_asked = 0;

static gj_status
test_order(void *arg, const gj_points *p, int dim, uint32_t *perm)
{
	entry	   *it = malloc(sizeof(entry) * (p->n + 1));

	(void) arg;
	orders_asked++;
	for (int64_t i = 0; i < p->n; i++)
		it[i] = (entry) {p->x[i * p->dims + dim], i};
	qsort(it, p->n, sizeof(entry), cmp_entry);
	for (int64_t i = 0; i < p->n; i++)
		perm[i] = (uint32_t) it[i].id;
	free(it);
	return GJ_OK;
}

static void
check_slabs(const char *name, const gj_points *orig, double eps, int32_t minpts,
			int64_t max_rows, uint64_t seed, int cpu)
{
	int64_t		n = orig->n;
	gj_points	p;
	int32_t    *oc = malloc(sizeof(int32_t) * (n + 1));
	int32_t    *ocl = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *ocore = malloc(n + 1);
	int32_t    *got = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *core = malloc(n + 1);
	int64_t    *orow = rows_by_id(orig);
	brute_engine b;
	gj_slab_engine e = {&b, brute_join_counts, brute_dbscan_given, seed % 2 ? test_order : NULL, brute_rows};
	gj_slab_info info;
	int64_t		bad = 0,
				ncl = 0,
				wantn = 0;
	char		detail[256] = "",
				what[64];
	const char *by = cpu ? ", cpu engine" : "";
	int			nthreads = 1 + (int) (seed % 3);
	gj_status	st;

	memset(&b, 0, sizeof(b));
	if (cpu)
		gj_cpu_slab_engine(&e, &nthreads);
	gj_oracle_count_within(orig, eps * eps, oc);
	gj_oracle_dbscan(orig, eps * eps, minpts, ocl, ocore);
	for (int64_t i = 0; i < n; i++)
		wantn = ocl[i] + 1 > wantn ? ocl[i] + 1 : wantn;

	gj_points_copy(&p, orig, n);
	b.p = &p;
	st = gj_slab_counts(&p, NULL, eps * eps, max_rows, &e, got, &info);
	for (int64_t i = 0; i < n && st == GJ_OK; i++)
		if (got[i] != oc[orow[p.ids[i]]] && bad++ == 0)
			snprintf(detail, sizeof(detail), "id %lld: count %d, oracle %d",
					 (long long) p.ids[i], got[i], oc[orow[p.ids[i]]]);
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "status %s", gj_status_name(st));
	snprintf(what, sizeof(what), "slab counts (%lld slabs%s)", (long long) info.nslabs, by);
	result(st == GJ_OK && bad == 0 && info.nslabs > 1, what, name, seed,
		   detail[0] ? detail : "a single slab");
	gj_points_free(&p);

	/* two sets (eps_join_counts): every third row shifted by eps/3 counts p's rows */
	{
		gj_points	r;
		int64_t		nr = 0;
		int32_t    *want = malloc(sizeof(int32_t) * (n + 1));
		int32_t    *rc = malloc(sizeof(int32_t) * (n + 1));

		bad = 0;
		detail[0] = '\0';
		gj_points_copy(&p, orig, n);
		gj_points_copy(&r, orig, n);
		for (int64_t i = 0; i < n; i += 3, nr++)
		{
			memmove(r.x + nr * r.dims, orig->x + i * r.dims, sizeof(double) * r.dims);
			r.x[nr * r.dims] += eps / 3;
			r.ids[nr] = orig->ids[i];
		}
		r.n = nr;
		for (int64_t k = 0; k < nr; k++)
		{
			want[k] = 0;		/* by id: r's ids are unique */
			for (int64_t j = 0; j < n; j++)
				want[k] += gj_sqdist(r.x + k * r.dims, orig->x + j * r.dims, r.dims) <= eps * eps;
		}
		{
			int64_t    *rrow = malloc(sizeof(int64_t) * (n + 1));

			for (int64_t k = 0; k < n; k++)
				rrow[k] = -1;
			for (int64_t k = 0; k < nr; k++)
				rrow[r.ids[k]] = k;
			b.p = &p;
			st = gj_slab_counts(&p, &r, eps * eps, max_rows, &e, rc, &info);
			for (int64_t k = 0; k < nr && st == GJ_OK; k++)
				if (rc[k] != want[rrow[r.ids[k]]] && bad++ == 0)
					snprintf(detail, sizeof(detail), "r id %lld: count %d, brute force %d",
							 (long long) r.ids[k], rc[k], want[rrow[r.ids[k]]]);
			free(rrow);
		}
		if (st != GJ_OK)
			snprintf(detail, sizeof(detail), "status %s", gj_status_name(st));
		snprintf(what, sizeof(what), "slab join counts (%lld slabs%s)", (long long) info.nslabs, by);
		result(st == GJ_OK && bad == 0 && info.nslabs > 1, what, name, seed,
			   detail[0] ? detail : "a single slab");
		gj_points_free(&r);
		gj_points_free(&p);
		free(want);
		free(rc);
	}

	bad = 0;
	detail[0] = '\0';
	gj_points_copy(&p, orig, n);
	b.p = &p;
	st = gj_slab_dbscan(&p, eps * eps, minpts, max_rows, &e, got, core, &info);
	if (st == GJ_OK)
		st = gj_dbscan_number(&p, got, core, &ncl);
	if (st == GJ_OK)
		bad += differ_clusters(&p, got, core, ncl, orow, ocl, ocore, wantn, detail, sizeof(detail));
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "status %s", gj_status_name(st));
	snprintf(what, sizeof(what), "slab dbscan minpts %d (%lld slabs%s)", minpts,
			 (long long) info.nslabs, by);
	result(st == GJ_OK && bad == 0 && info.nslabs > 1, what, name, seed,
		   detail[0] ? detail : "a single slab");
	slab_use.views += b.views;
	slab_use.copies += b.copies;
	if (!cpu)
	{
		snprintf(detail, sizeof(detail), "%lld calls outside the rows' on and off, %lld left on",
				 (long long) b.untold, (long long) b.told);
		result(b.untold == 0 && b.told == 0, "slab rows told", name, seed, detail);
	}
	gj_points_free(&p);
	free(oc);
	free(ocl);
	free(ocore);
	free(got);
	free(core);
	free(orow);
}

/*
 * A rule between two eps (slab_density.c's band, datagen's
 * gj_gen_band_within), as PostGIS decides geography's band pairs: counts
 * and DBSCAN from gj_slab_band and gj_slab_band_dbscan against the
 * oracles under the rule.
 */
static void
check_band(const char *name, const gj_points *orig, double eps_in, double eps, int32_t minpts,
		   int64_t max_rows, uint64_t seed, int cpu)
{
	int64_t		n = orig->n;
	gj_gen_band rule = {eps_in * eps_in, eps * eps, seed};
	gj_points	p;
	gj_band		band;
	int32_t    *ocl = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *ocore = malloc(n + 1);
	int32_t    *cnt = malloc(sizeof(int32_t) * (n + 1));
	int32_t    *got = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *core = malloc(n + 1);
	int64_t    *orow = rows_by_id(orig);
	brute_engine b;
	gj_slab_engine e = {&b, brute_join_counts, brute_dbscan_given, seed % 2 ? test_order : NULL, brute_rows};
	gj_slab_info info;
	int			nthreads = 2;
	int64_t		bad = 0,
				want_band = 0,
				kept = 0,
				ncl = 0,
				wantn = 0;
	char		detail[256] = "",
				what[160];
	gj_status	st;

	memset(&b, 0, sizeof(b));
	if (cpu)
		gj_cpu_slab_engine(&e, &nthreads);
	gj_oracle_dbscan_by(orig, gj_gen_band_within, &rule, minpts, ocl, ocore);
	for (int64_t i = 0; i < n; i++)
	{
		wantn = ocl[i] + 1 > wantn ? ocl[i] + 1 : wantn;
		for (int64_t j = i + 1; j < n; j++)
		{
			double		d2 = gj_sqdist(orig->x + i * orig->dims, orig->x + j * orig->dims,
									   orig->dims);

			want_band += d2 > rule.in2 && d2 <= rule.out2;
		}
	}
	gj_points_copy(&p, orig, n);
	b.p = &p;
	st = gj_slab_band(&p, rule.in2, rule.out2, max_rows, &e, cnt, &band, &info);
	if (st == GJ_OK && band.n != want_band && bad++ == 0)
		snprintf(detail, sizeof(detail), "%lld band pairs, brute force %lld",
				 (long long) band.n, (long long) want_band);
	/* the caller's part: decide, keep, count */
	for (int64_t k = 0; st == GJ_OK && k < band.n; k++)
		if (gj_gen_band_within(&rule, &p, band.a[k], band.b[k]))
		{
			cnt[band.a[k]]++;
			cnt[band.b[k]]++;
			band.a[kept] = band.a[k];
			band.b[kept] = band.b[k];
			band.c[kept++] = band.c[k];
		}
	band.n = kept;
	for (int64_t i = 0; st == GJ_OK && i < n; i++)
	{
		int32_t		want = 0;
		int64_t		o = orow[p.ids[i]];

		for (int64_t j = 0; j < n; j++)
			want += gj_gen_band_within(&rule, orig, o, j);
		if (cnt[i] != want && bad++ == 0)
			snprintf(detail, sizeof(detail), "id %lld: count %d, oracle %d",
					 (long long) p.ids[i], cnt[i], want);
		core[i] = cnt[i] >= minpts;
	}
	if (st == GJ_OK)
		st = gj_slab_band_dbscan(&p, rule.in2, rule.out2, core, &band, max_rows, &e, got, &info);
	if (st == GJ_OK)
		st = gj_dbscan_number(&p, got, core, &ncl);
	if (st == GJ_OK)
		bad += differ_clusters(&p, got, core, ncl, orow, ocl, ocore, wantn, detail, sizeof(detail));
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "status %s", gj_status_name(st));
	snprintf(what, sizeof(what), "band counts+dbscan minpts %d (%lld slabs, %lld of %lld band pairs%s)",
			 minpts, (long long) info.nslabs, (long long) kept, (long long) want_band,
			 cpu ? ", cpu engine" : "");
	result(st == GJ_OK && bad == 0, what, name, seed, detail);
	band_cases += want_band > 0 && kept > 0 && kept < want_band;
	if (!cpu)
	{
		snprintf(detail, sizeof(detail), "%lld calls outside the rows' on and off, %lld left on",
				 (long long) b.untold, (long long) b.told);
		result(b.untold == 0 && b.told == 0, "band rows told", name, seed, detail);
	}
	gj_band_free(&band);
	gj_points_free(&p);
	free(ocl);
	free(ocore);
	free(cnt);
	free(got);
	free(core);
	free(orow);
}

/*
 * gj_slabs_windows: the own rows cut [0, n) into runs, in order; every
 * window holds its own rows and at most max_rows; and every pair within
 * eps (brute force, on the sorted copy) of an own row lies in its window.
 * 0 windows and GJ_ERR_DEVICE_OOM are right only when one row's window is
 * larger than max_rows, which the check confirms.
 */
static void
check_windows(const char *name, const gj_points *p, double eps, int64_t max_rows, uint64_t seed)
{
	gj_points	s;
	gj_slab_window *win = NULL;
	int64_t		nwin = 0,
				bad = 0;
	char		detail[256] = "";
	gj_status	st;

	gj_points_copy(&s, p, p->n);
	st = gj_slabs_windows(&s, eps * eps, max_rows, NULL, NULL, &win, &nwin);
	if (st == GJ_OK)
	{
		int64_t		next = 0;

		for (int64_t w = 0; w < nwin; w++)
		{
			gj_slab_window *c = &win[w];

			if ((c->o0 != next || c->o1 <= c->o0 || c->w0 > c->o0 || c->w1 < c->o1 ||
				 c->w1 - c->w0 > max_rows) && bad++ == 0)
				snprintf(detail, sizeof(detail), "window %lld: own [%lld, %lld), rows [%lld, %lld)",
						 (long long) w, (long long) c->o0, (long long) c->o1,
						 (long long) c->w0, (long long) c->w1);
			next = c->o1;
			for (int64_t a = c->o0; a < c->o1; a++)
				for (int64_t b = 0; b < s.n; b++)
					if ((b < c->w0 || b >= c->w1) &&
						gj_sqdist(s.x + a * s.dims, s.x + b * s.dims, s.dims) <= eps * eps &&
						bad++ == 0)
						snprintf(detail, sizeof(detail), "row %lld's neighbour %lld outside its window [%lld, %lld)",
								 (long long) a, (long long) b, (long long) c->w0, (long long) c->w1);
		}
		if (next != s.n && bad++ == 0)
			snprintf(detail, sizeof(detail), "own rows end at %lld of %lld", (long long) next,
					 (long long) s.n);
	}
	else if (st == GJ_ERR_DEVICE_OOM)
	{
		/*
		 * right only if, along a dimension the rows are now sorted by (the
		 * one cut), some row has more than max_rows rows within reach
		 */
		int			found = 0;
		/* eps, or more where eps^2 is subnormal (the slabs' width allows for rounding) */
		double		reach = sqrt(eps * eps + 1e-323) * (1 + 1e-6);

		for (int d = 0; d < s.dims && !found; d++)
		{
			int			sorted = 1;

			for (int64_t a = 1; a < s.n && sorted; a++)
				sorted = s.x[(a - 1) * s.dims + d] <= s.x[a * s.dims + d];
			for (int64_t a = 0; a < s.n && sorted && !found; a++)
			{
				int64_t		k = 0;

				for (int64_t b = 0; b < s.n; b++)
					k += fabs(s.x[a * s.dims + d] - s.x[b * s.dims + d]) <= reach;
				found = k > max_rows;
			}
		}
		if (!found && bad++ == 0)
			snprintf(detail, sizeof(detail), "no windows, though every row's reach fits %lld rows",
					 (long long) max_rows);
	}
	else
		snprintf(detail, sizeof(detail), "%s", gj_status_name(st)), bad++;
	result(bad == 0, "slab windows", name, seed, detail);
	free(win);
	gj_points_free(&s);
}

/*
 * Uncapped counts through lattices (lattice.h): every cell of min_rows
 * rows or more cut, against the oracle; all rows, a subset, and the rows
 * as queries of their own grid (gj_cpu_count_queries).  Returns the cells
 * cut, so that callers can check the lattices were there.
 */
static int64_t
check_lattice_counts(const char *name, const gj_points *orig, double eps, int64_t min_rows,
					 int threads, uint64_t seed)
{
	gj_points	p;
	gj_grid		g;
	int64_t		n = orig->n,
				bad = 0,
				before = gj_lattice_cells_cut,
				saved = gj_lattice_min_rows;
	int32_t    *want = malloc(sizeof(int32_t) * (n + 1));
	int32_t    *got = malloc(sizeof(int32_t) * (n + 1));
	uint32_t   *rows = malloc(sizeof(uint32_t) * (n + 1));
	int64_t    *orow = rows_by_id(orig);
	char		detail[160] = "";
	gj_status	st;

	gj_oracle_count_within(orig, eps * eps, want);
	gj_points_copy(&p, orig, n);
	gj_lattice_min_rows = min_rows;
	st = gj_grid_build(&g, &p, eps * eps);
	for (int way = 0; way < 3 && st == GJ_OK; way++)
	{
		int64_t		nrows = 0;

		for (int64_t i = 0; i < n; i++)
			if (way != 1 || i % 3 == 1)
				rows[nrows++] = (uint32_t) i;
		st = way == 0 ? gj_cpu_count_within(&g, &p, 0, threads, got) :
			way == 1 ? gj_cpu_count_rows(&g, &p, rows, nrows, 0, threads, got) :
			gj_cpu_count_queries(&g, &p, &p, threads, got);
		for (int64_t k = 0; k < nrows && st == GJ_OK; k++)
		{
			int64_t		id = p.ids[rows[k]];

			if (got[k] != want[orow[id]] && bad++ == 0)
				snprintf(detail, sizeof(detail), "%s: id %lld counts %d, oracle %d",
						 way == 0 ? "all rows" : way == 1 ? "a third" : "as queries",
						 (long long) id, got[k], want[orow[id]]);
		}
	}
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "status %s", gj_status_name(st)), bad++;
	result(bad == 0, "lattice counts", name, seed, detail);
	gj_lattice_min_rows = saved;
	gj_grid_free(&g);
	gj_points_free(&p);
	free(want);
	free(got);
	free(rows);
	free(orow);
	return gj_lattice_cells_cut - before;
}

static int	interrupt_now = 0;

static int
interrupt_hook(void)
{
	return interrupt_now;
}

/* A pending interrupt stops counting and DBSCAN with GJ_ERR_CANCELED. */
static void
check_interrupt(uint64_t seed)
{
	gj_points	p;
	gj_grid		g;
	int32_t    *a;
	uint8_t    *core;
	gj_status	s1,
				s2;

	gj_gen_points(&p, GJ_GEN_UNIFORM, 200000, 2, seed);
	gj_grid_build(&g, &p, 0.5 * 0.5);
	a = malloc(sizeof(int32_t) * p.n);
	core = malloc(p.n);
	interrupt_now = 1;
	gj_set_interrupt_hook(interrupt_hook);
	s1 = gj_cpu_count_within(&g, &p, 0, 2, a);
	s2 = gj_cpu_dbscan(&g, &p, 5, 2, a, core);
	{
		brute_engine b = {&p, 0, 0, 0, 0};
		gj_slab_engine e = {&b, brute_join_counts, brute_dbscan_given, NULL, brute_rows};
		gj_slab_info info;

		s1 = s1 == GJ_ERR_CANCELED ? gj_slab_counts(&p, NULL, 0.5 * 0.5, 50000, &e, a, &info) : s1;
		s2 = s2 == GJ_ERR_CANCELED ? gj_slab_dbscan(&p, 0.5 * 0.5, 5, 50000, &e, a, core, &info) : s2;
	}
	gj_set_interrupt_hook(NULL);
	interrupt_now = 0;
	result(s1 == GJ_ERR_CANCELED && s2 == GJ_ERR_CANCELED, "interrupt", "uniform", seed,
		   "a pending interrupt did not cancel");
	free(a);
	free(core);
	gj_grid_free(&g);
	gj_points_free(&p);
}

int
main(int argc, char **argv)
{
	uint64_t	base = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261123;
	uint64_t	seed = base;
	static const struct
	{
		gj_kind		kind;
		const char *name;
	}			kinds[] = {
		{GJ_GEN_UNIFORM, "uniform"},
		{GJ_GEN_EXPONENTIAL, "skewed"},
		{GJ_GEN_CLUSTERS, "clusters"},
		{GJ_GEN_DUPLICATES, "duplicates"},
		{GJ_GEN_ONE_CELL, "one-cell"},
		{GJ_GEN_GRID_SNAPPED, "grid-snapped"},
	};
	static const int dim_list[] = {1, 2, 3, 5};
	static const int32_t minpts_list[] = {1, 2, 4, 12};
	int64_t		lattice_cut = 0;

	printf("test_density: base seed %llu\n", (unsigned long long) base);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (size_t d = 0; d < sizeof(dim_list) / sizeof(dim_list[0]); d++)
			for (int nb = 0; nb < 2; nb++, seed++)
			{
				gj_points	p;
				int64_t		n = 700;
				int			dims = dim_list[d];
				double		eps = gj_gen_typical_eps(kinds[k].kind, n, dims, nb ? 12.0 : 3.0);
				char		name[64];

				if (kinds[k].kind == GJ_GEN_GRID_SNAPPED)
					eps = nb ? 1.0 : 0.5;	/* pairs exactly eps apart */
				snprintf(name, sizeof(name), "%s-%dd-eps%.3g", kinds[k].name, dims, eps);
				gj_gen_points(&p, kinds[k].kind, n, dims, seed);
				gj_scramble_ids(&p, seed);
				check_counts_lists(name, &p, eps, 1 + (int) (seed % 4), seed);
				lattice_cut += check_lattice_counts(name, &p, eps, 4 + (int64_t) (seed % 29),
													1 + (int) (seed % 3), seed);
				for (size_t m = 0; m < sizeof(minpts_list) / sizeof(minpts_list[0]); m++)
					check_dbscan(name, &p, eps, minpts_list[m], 1 + (int) ((seed + m) % 6), seed);
				/* beyond a device of 60-140 rows: slabs */
				for (int cpu = 0; cpu < 2; cpu++)
					check_slabs(name, &p, eps, minpts_list[(k + d + nb) % 4],
								60 + (int64_t) (seed % 3) * 40, seed, cpu);
				check_windows(name, &p, eps, 60 + (int64_t) (seed % 3) * 40, seed);
				/* a band as wide as a tenth of eps, and one a rounding wide */
				check_band(name, &p, eps * (nb ? 0.9 : 1 - 1e-12), eps,
						   minpts_list[(k + d + nb + 1) % 4], 60 + (int64_t) (seed % 3) * 40,
						   seed, (int) (seed % 2));
				check_band(name, &p, eps * 0.9, eps, 3, n + 1, seed, 1);
				gj_points_free(&p);
			}
	/* huge and tiny eps */
	{
		gj_points	p;

		gj_gen_points(&p, GJ_GEN_UNIFORM, 400, 2, seed);
		gj_scramble_ids(&p, seed);
		check_counts_lists("uniform-huge-eps", &p, 1e6, 3, seed);
		lattice_cut += check_lattice_counts("uniform-huge-eps", &p, 1e6, 16, 2, seed);
		lattice_cut += check_lattice_counts("uniform-tiny-eps", &p, 1e-300, 1, 2, seed);
		check_dbscan("uniform-huge-eps", &p, 1e6, 5, 3, seed);
		check_counts_lists("uniform-tiny-eps", &p, 1e-300, 3, seed);
		check_dbscan("uniform-tiny-eps", &p, 1e-300, 1, 3, seed);
		check_dbscan("uniform-tiny-eps", &p, 1e-300, 2, 3, seed);
		gj_points_free(&p);
		seed++;
	}
	/*
	 * Long lists (cpu_lists.c's radix sort, from 1024 entries): distinct
	 * distances, duplicates (runs of equal distances, by id) and a lattice
	 * (many equal distances)
	 */
	{
		static const struct
		{
			gj_kind		kind;
			const char *name;
		}			longs[] = {
			{GJ_GEN_UNIFORM, "uniform-long-lists"},
			{GJ_GEN_DUPLICATES, "duplicates-long-lists"},
			{GJ_GEN_GRID_SNAPPED, "grid-snapped-long-lists"},
		};

		for (size_t k = 0; k < sizeof(longs) / sizeof(longs[0]); k++, seed++)
		{
			gj_points	p;

			gj_gen_points(&p, longs[k].kind, 1500, 2, seed);
			gj_scramble_ids(&p, seed);
			check_counts_lists(longs[k].name, &p, 1e6, 2, seed);
			gj_points_free(&p);
		}
	}
	/* the shared boundary sets: lattices exactly eps apart, 3-4-5 triangles */
	{
		gj_points	p;
		const char *name;
		double		eps[GJ_GEN_MAX_EPS];
		int			neps;

		for (int k = 0; gj_gen_boundary_case(k, &p, &name, eps, &neps); k++)
		{
			gj_scramble_ids(&p, seed);
			for (int e = 0; e < neps; e++, seed++)
			{
				if (p.n > 3000)
					continue;	/* the oracles are quadratic */
				check_counts_lists(name, &p, eps[e], 2, seed);
				lattice_cut += check_lattice_counts(name, &p, eps[e], 3 + (int64_t) (seed % 13), 2, seed);
				check_dbscan(name, &p, eps[e], 2, 2, seed);
				check_dbscan(name, &p, eps[e], 5, 3, seed);
				if (isfinite(eps[e] * eps[e]) && p.n >= 8)
				{
					check_slabs(name, &p, eps[e], 3, p.n / 4 > 4 ? p.n / 4 : 4, seed, (int) (seed % 2));
					check_windows(name, &p, eps[e], p.n / 4 > 4 ? p.n / 4 : 4, seed);
					check_band(name, &p, eps[e] * (1 - 1e-9), eps[e], 2, p.n / 4 > 4 ? p.n / 4 : 4,
							   seed, (int) (seed % 2));
				}
			}
			gj_points_free(&p);
		}
	}
	/* chains of clusters one eps apart: bridges, borders between clusters */
	for (int minpts = 2; minpts <= 8; minpts += 3, seed++)
	{
		gj_points	p;

		gj_gen_chain(&p, 40, 0.5, seed);
		gj_scramble_ids(&p, seed);
		check_dbscan("chain", &p, 0.5, minpts, 4, seed);
		check_slabs("chain", &p, 0.5, minpts, 50, seed, 0);
		check_slabs("chain", &p, 0.5, minpts, 50, seed, 1);
		check_band("chain", &p, 0.45, 0.5, minpts, 50, seed, (int) (seed % 2));
		check_counts_lists("chain", &p, 0.5, 4, seed);
		gj_points_free(&p);
	}
	/*
	 * dense wide cells: a clump 2 eps across (its cells hold hundreds of
	 * rows and are not compact, so DBSCAN cuts them into boxes), with every
	 * 40th row spread 3x wider (borders and noise), and two clumps with a
	 * gap just over and just under eps (a bridge or not)
	 */
	for (int d = 0; d < 4; d++)
	{
		int			dims = dim_list[d];

		for (int gap = 0; gap < 3; gap++, seed++)
		{
			gj_points	p;
			gj_grid		g;
			gj_boxes	bx;
			uint8_t    *none;
			char		name[64];
			double		eps = GJ_GEN_CLUMP_EPS;
			int64_t		cut;

			gj_gen_clump(&p, 1500, dims, gap, seed);
			gj_scramble_ids(&p, seed);
			snprintf(name, sizeof(name), "dense-wide-%dd-%s", dims,
					 gap == 0 ? "one" : gap == 1 ? "bridged" : "apart");
			for (int m = 0; m < 4; m++)
				check_dbscan(name, &p, eps, (int32_t[]) {1, 4, 40, 400}[m], 1 + m, seed);
			/*
			 * and the boxes were there to be used (in 5-D the clump's ~1,800
			 * boxes would hold under GJ_BOX_MIN_FILL rows each: left whole)
			 */
			gj_grid_build(&g, &p, eps * eps);
			none = calloc(g.ncells + 1, 1);
			cut = gj_boxes_build(&bx, &g, &p, none, 2) == GJ_OK ? bx.nbox : -1;
			result(dims > 3 ? cut == 0 : cut > 0, "boxes", name, seed,
				   dims > 3 ? "a sparse 5-D clump was cut" : "no dense cell was cut into boxes");
			gj_boxes_free(&bx);
			free(none);
			gj_grid_free(&g);
			/* counts of the clump through lattices (none beyond 3-D) */
			cut = check_lattice_counts(name, &p, eps, 64, 2, seed);
			result(dims > 3 ? cut == 0 : cut > 0, "lattices", name, seed,
				   dims > 3 ? "a 5-D cell was cut" : "no dense cell got a lattice");
			gj_points_free(&p);
		}
	}
	check_interrupt(seed++);
	/* the DBSCAN windows of the cases above: views of the rows, and copies (wide halos) */
	{
		char		detail[128];

		snprintf(detail, sizeof(detail), "%lld views, %lld copies",
				 (long long) slab_use.views, (long long) slab_use.copies);
		result(slab_use.views > 0 && slab_use.copies > 0, "slab windows", "all", base, detail);
		result(orders_asked > 0, "slab order callback", "all", base, "never asked");
		result(band_cases > 10, "band pairs both kept and dropped", "all", base, "too few cases");
		snprintf(detail, sizeof(detail), "%lld cells cut", (long long) lattice_cut);
		result(lattice_cut > 100, "lattices used", "all", base, detail);
	}

	printf("density: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
