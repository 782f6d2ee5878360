/*
 * test_join.c
 *		Unit tests of the join of two sets on the CPU (eps_join and
 *		eps_join_counts): cpu_probe.c with its queries from the other set,
 *		gj_grid_point_neighbourhood and gj_cpu_count_queries.
 *
 * Every case compares with the brute-force oracle, every (r, s) pair with
 * the float64 rule: the rows (r id, s id) as a multiset, distances bit for
 * bit, and each r row's count.  Each case runs four ways, the grid over s
 * (r rows probing) and over r (s rows probing, swapped rows), each by
 * brute force and over the grid, so the answer cannot depend on which set
 * the engine indexes.  The sets differ in range (r rows beyond the grid on
 * every side, far away, in one cell), share rows (the same set twice),
 * repeat ids and sit exactly eps apart (the boundary sets cut in two).
 * The slab plans (slabs.c) of self-joins and joins too big for a device
 * are run step by step by brute force: each pair exactly once.
 * A failure prints the case and seed:
 *		test_join [seed]
 * The last line is "join: N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "datagen.h"
#include "pairset.h"

static int	passed = 0;
static int	failed = 0;
static int	tables_seen = 0;	/* grids with a cell table (grid.c) */

/* Ordered rows (r, s) as one key: (1, 2) and (2, 1) stay different rows. */
static void
add_row(gj_pairset *s, int64_t r, int64_t sid, double d)
{
	gj_pairset_add(s, 0, r * 4294967296LL + sid, d);
}

/* The engine over idx (grid-sorted by g, or g NULL) probed by qs, into out. */
static gj_status
run_join(const gj_grid *g, const gj_points *idx, const gj_points *qs, double eps2,
		 int swap, int threads, gj_pairset *out)
{
	gj_probe_options po;
	gj_cpu_probe *j;
	gj_status	st;

	memset(&po, 0, sizeof(po));
	po.queries = qs;
	po.swap = swap;
	st = gj_cpu_probe_start(g, idx, eps2, &po, threads, &j);
	if (st != GJ_OK)
		return st;
	for (;;)
	{
		gj_chunk   *c;

		st = gj_engine_next(GJ_ENGINE(j), 100, &c);
		if (st == GJ_AGAIN)
			continue;
		if (st != GJ_OK)
			break;
		for (int k = 0; k < c->n; k++)
			add_row(out, c->a[k], c->b[k], c->dist[k]);
		gj_engine_release(GJ_ENGINE(j), c);
	}
	gj_engine_free(GJ_ENGINE(j));
	return st == GJ_DONE ? GJ_OK : st;
}

static void
report(int ok, const char *what, const char *name, uint64_t seed, const gj_points *r,
	   const gj_points *s, double eps, const char *why)
{
	if (ok)
	{
		passed++;
		return;
	}
	failed++;
	printf("FAIL %s %s seed=%llu r=%lld s=%lld dims=%d eps=%.17g: %s\n", what, name,
		   (unsigned long long) seed, (long long) r->n, (long long) s->n, r->dims, eps, why);
}

/* One case: pairs four ways and counts two ways, against the oracle. */
static void
check_join(const char *name, uint64_t seed, const gj_points *r, const gj_points *s,
		   double eps)
{
	double		eps2 = eps * eps;
	gj_pairset	want = {0};
	int32_t    *want_n = calloc(r->n + 1, sizeof(int32_t));
	int32_t    *got_n = calloc(r->n + 1, sizeof(int32_t));

	for (int64_t i = 0; i < r->n; i++)
		for (int64_t k = 0; k < s->n; k++)
		{
			double		d2 = gj_sqdist(r->x + i * r->dims, s->x + k * s->dims, r->dims);

			if (d2 <= eps2)
			{
				add_row(&want, r->ids[i], s->ids[k], sqrt(d2));
				want_n[i]++;
			}
		}

	for (int swap = 0; swap <= 1; swap++)
		for (int use_grid = 0; use_grid <= 1; use_grid++)
		{
			gj_points	idx;
			gj_grid		g;
			gj_pairset	got = {0};
			gj_status	st = GJ_OK;
			const char *why;
			int64_t		at = -1;
			char		what[64];

			gj_points_copy(&idx, swap ? r : s, (swap ? r : s)->n);
			if (use_grid)
				st = gj_grid_build(&g, &idx, eps2);
			if (st == GJ_OK)
				st = run_join(use_grid ? &g : NULL, &idx, swap ? s : r, eps2, swap,
							  1 + (int) (seed % 3), &got);
			why = st != GJ_OK ? gj_status_name(st) : gj_pairset_diff(&want, &got, &at);
			snprintf(what, sizeof(what), "pairs(index %s, %s)", swap ? "r" : "s",
					 use_grid ? "grid" : "brute");
			report(why == NULL, what, name, seed, r, s, eps, why);
			if (why != NULL)
				gj_pairset_print_at("oracle", &want, "join", &got, at);

			/* counts: the grid over s only (as the engine does) */
			if (!swap && use_grid && st == GJ_OK)
			{
				int64_t		bad = -1;

				st = gj_cpu_count_queries(&g, &idx, r, 1 + (int) (seed % 3), got_n);
				for (int64_t i = 0; st == GJ_OK && i < r->n && bad < 0; i++)
					if (got_n[i] != want_n[i])
						bad = i;
				report(st == GJ_OK && bad < 0, "counts", name, seed, r, s, eps,
					   st != GJ_OK ? gj_status_name(st) : "a count differs");
				if (bad >= 0)
					printf("  r row %lld: want %d, got %d\n", (long long) bad,
						   want_n[bad], got_n[bad]);
			}
			/* ... and the grid over r, every s row probing it (the counts follow r's new order) */
			if (swap && use_grid && st == GJ_OK)
			{
				int64_t		bad = -1;
				gj_points	rc;
				gj_grid		rg;

				gj_points_copy(&rc, r, r->n);
				for (int64_t i = 0; i < r->n; i++)
					rc.ids[i] = i;	/* its row in r */
				st = gj_grid_build(&rg, &rc, eps2);
				if (st == GJ_OK)
					st = gj_cpu_count_into(&rg, &rc, s, 1 + (int) (seed % 3), got_n);
				for (int64_t j = 0; st == GJ_OK && j < rc.n && bad < 0; j++)
					if (got_n[j] != want_n[rc.ids[j]])
						bad = j;
				report(st == GJ_OK && bad < 0, "counts into r's grid", name, seed, r, s, eps,
					   st != GJ_OK ? gj_status_name(st) : "a count differs");
				/* again with the cells found by search, not by the grid's table */
				if (st == GJ_OK && rg.cell_of != NULL)
				{
					tables_seen++;
					free(rg.cell_of);
					rg.cell_of = NULL;
					st = gj_cpu_count_into(&rg, &rc, s, 1 + (int) (seed % 3), got_n);
					for (int64_t j = 0; st == GJ_OK && j < rc.n && bad < 0; j++)
						if (got_n[j] != want_n[rc.ids[j]])
							bad = j;
					report(st == GJ_OK && bad < 0, "counts into r's grid, cells searched", name,
						   seed, r, s, eps, st != GJ_OK ? gj_status_name(st) : "a count differs");
				}
				if (st != GJ_ERR_ARG)
					gj_grid_free(&rg);
				gj_points_free(&rc);
			}
			if (use_grid)
				gj_grid_free(&g);
			gj_pairset_free(&got);
			gj_points_free(&idx);
		}
	gj_pairset_free(&want);
	free(want_n);
	free(got_n);
}

/* Every coordinate of p scaled by a and moved by b; ids moved by id0. */
static void
affine(gj_points *p, double a, double b, int64_t id0)
{
	for (int64_t i = 0; i < p->n * p->dims; i++)
		p->x[i] = p->x[i] * a + b;
	for (int64_t i = 0; i < p->n; i++)
		p->ids[i] += id0;
}

/*
 * The slab plan of p (self, qs NULL) or of qs probing p, for at most
 * max_rows rows a step, run step by step by brute force: the same rows as
 * the oracle (self: (smaller id, larger id), ids being distinct here).
 */
static void
check_slabs(const char *name, uint64_t seed, const gj_points *p0, const gj_points *q0,
			double eps, int64_t max_rows)
{
	double		eps2 = eps * eps;
	gj_points	p,
				q;
	gj_slab_plan pl;
	gj_pairset	want = {0},
				got = {0};
	const char *why;
	int64_t		at = -1;
	gj_status	st;

	gj_points_copy(&p, p0, p0->n);
	if (q0 != NULL)
		gj_points_copy(&q, q0, q0->n);
	for (int64_t i = 0; i < p.n; i++)
		for (int64_t k = q0 != NULL ? 0 : i + 1; k < (q0 != NULL ? q.n : p.n); k++)
		{
			const gj_points *o = q0 != NULL ? &q : &p;
			double		d2 = gj_sqdist(p.x + i * p.dims, o->x + k * p.dims, p.dims);

			if (d2 <= eps2)
			{
				if (q0 != NULL)
					add_row(&want, o->ids[k], p.ids[i], sqrt(d2));
				else
					add_row(&want, p.ids[i] < p.ids[k] ? p.ids[i] : p.ids[k],
							p.ids[i] < p.ids[k] ? p.ids[k] : p.ids[i], sqrt(d2));
			}
		}
	st = gj_slabs_plan(&p, q0 != NULL ? &q : NULL, eps2, max_rows, &pl);
	for (int t = 0; st == GJ_OK && t < pl.nsteps; t++)
	{
		gj_slab_step *s = &pl.steps[t];
		gj_points	a,
					b;
		int64_t		rows = (s->a1 - s->a0) + (s->b1 - s->b0);

		if (rows > max_rows)
			st = GJ_ERR_LIMIT;
		gj_points_view(&a, &p, s->a0, s->a1);
		gj_points_view(&b, q0 != NULL ? &q : &p, s->b0, s->b1);
		for (int64_t i = 0; i < a.n; i++)
			for (int64_t k = s->self ? i + 1 : 0; k < (s->self ? a.n : b.n); k++)
			{
				const gj_points *o = s->self ? &a : &b;
				double		d2 = gj_sqdist(a.x + i * a.dims, o->x + k * a.dims, a.dims);
				int64_t		u = a.ids[i],
							v = o->ids[k];

				if (d2 > eps2)
					continue;
				if (q0 != NULL)
					add_row(&got, v, u, sqrt(d2));
				else
					add_row(&got, u < v ? u : v, u < v ? v : u, sqrt(d2));
			}
	}
	why = st != GJ_OK ? gj_status_name(st) : gj_pairset_diff(&want, &got, &at);
	report(why == NULL && pl.nslabs > 1, "slabs", name, seed, q0 != NULL ? &q : &p, &p, eps,
		   why != NULL ? why : "a single slab");
	if (why != NULL)
		gj_pairset_print_at("oracle", &want, "slabs", &got, at);
	gj_slabs_free(&pl);
	gj_pairset_free(&want);
	gj_pairset_free(&got);
	gj_points_free(&p);
	if (q0 != NULL)
		gj_points_free(&q);
}

int
main(int argc, char **argv)
{
	uint64_t	base = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261124;
	uint64_t	seed = base;
	static const struct
	{
		gj_kind		kind;
		const char *name;
	}			kinds[] = {
		{GJ_GEN_UNIFORM, "uniform"},
		{GJ_GEN_CLUSTERS, "clusters"},
		{GJ_GEN_DUPLICATES, "duplicates"},
		{GJ_GEN_ONE_CELL, "one-cell"},
		{GJ_GEN_GRID_SNAPPED, "grid-snapped"},
	};
	static const int dim_list[] = {1, 2, 3, 6, 9};

	printf("test_join: base seed %llu\n", (unsigned long long) base);

	/*
	 * r and s of one kind, r a little wider and shifted so that its rows
	 * lie beyond s's grid on both sides, and larger or smaller than s.
	 */
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (size_t d = 0; d < sizeof(dim_list) / sizeof(dim_list[0]); d++)
			for (int shape = 0; shape < 3; shape++, seed++)
			{
				gj_points	r,
							s;
				int			dims = dim_list[d];
				int64_t		nr = shape == 0 ? 300 : shape == 1 ? 1200 : 700;
				int64_t		ns = shape == 0 ? 1200 : shape == 1 ? 300 : 700;
				double		eps = gj_gen_typical_eps(kinds[k].kind, ns, dims, 5.0);
				char		name[64];

				gj_gen_points(&r, kinds[k].kind, nr, dims, seed);
				gj_gen_points(&s, kinds[k].kind, ns, dims, seed + 1000003);
				if (shape == 2)
					affine(&r, 1.3, -15.0, 0);	/* beyond s on every side */
				if (seed % 2)
					for (int64_t i = 0; i < nr; i++)
						r.ids[i] = (i * 7919) % (nr / 3 + 1);	/* ids repeat */
				snprintf(name, sizeof(name), "%s-%dd-%s", kinds[k].name, dims,
						 shape == 0 ? "r-small" : shape == 1 ? "r-large" : "r-wider");
				check_join(name, seed, &r, &s, eps);
				gj_points_free(&r);
				gj_points_free(&s);
			}

	/* the same set on both sides: every (a, a) and both orders of each pair */
	for (size_t d = 0; d < sizeof(dim_list) / sizeof(dim_list[0]); d++, seed++)
	{
		gj_points	p;
		double		eps = gj_gen_typical_eps(GJ_GEN_UNIFORM, 800, dim_list[d], 6.0);

		gj_gen_points(&p, GJ_GEN_UNIFORM, 800, dim_list[d], seed);
		check_join("same-set", seed, &p, &p, eps);
		gj_points_free(&p);
	}

	/* r far beyond the grid, and s in a single cell */
	{
		gj_points	r,
					s;

		gj_gen_points(&r, GJ_GEN_UNIFORM, 500, 2, seed);
		gj_gen_points(&s, GJ_GEN_UNIFORM, 500, 2, seed + 1);
		affine(&r, 1.0, 1e6, 0);
		check_join("r-far", seed++, &r, &s, 2.0);
		affine(&r, 1e290, 0.0, 0);
		check_join("r-huge", seed++, &r, &s, 2.0);
		gj_points_free(&r);
		gj_points_free(&s);

		gj_gen_points(&r, GJ_GEN_UNIFORM, 600, 3, seed);
		gj_gen_points(&s, GJ_GEN_ONE_CELL, 400, 3, seed + 1);
		check_join("s-one-cell", seed++, &r, &s, 1.0);
		check_join("s-one-cell-huge-eps", seed++, &r, &s, 1e200);
		check_join("s-one-cell-tiny-eps", seed++, &s, &s, 1e-170);
		gj_points_free(&r);
		gj_points_free(&s);

		/* one s row: no dimension to index */
		gj_gen_points(&r, GJ_GEN_UNIFORM, 400, 2, seed);
		gj_gen_points(&s, GJ_GEN_UNIFORM, 1, 2, seed + 1);
		check_join("one-s-row", seed++, &r, &s, 30.0);
		gj_points_free(&r);
		gj_points_free(&s);
	}

	/* exactly eps apart: each boundary set cut in two, every eps it has */
	{
		gj_points	p;
		const char *name;
		double		eps[GJ_GEN_MAX_EPS];
		int			neps;

		for (int k = 0; gj_gen_boundary_case(k, &p, &name, eps, &neps); k++)
		{
			gj_points	r,
						s;

			gj_points_split_alternate(&p, &r, &s);
			for (int e = 0; e < neps; e++, seed++)
				check_join(name, seed, &r, &s, eps[e]);
			gj_points_free(&r);
			gj_points_free(&s);
			gj_points_free(&p);
		}
	}

	/* slabs: self-joins and joins cut for a small device, skew and exact eps included */
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (int dims = 1; dims <= 3; dims++, seed++)
		{
			gj_points	r,
						s;
			double		eps = gj_gen_typical_eps(kinds[k].kind, 1500, dims, 8.0);

			gj_gen_points(&r, kinds[k].kind, 700, dims, seed);
			gj_gen_points(&s, kinds[k].kind, 1500, dims, seed + 99991);
			affine(&r, 1.0, 0.0, 1000000);	/* distinct ids from s's */
			check_slabs(kinds[k].name, seed, &s, NULL, eps, 200 + (int64_t) (seed % 3) * 150);
			check_slabs(kinds[k].name, seed, &s, &r, eps, 150 + (int64_t) (seed % 3) * 200);
			gj_points_free(&r);
			gj_points_free(&s);
		}
	{
		gj_points	p;
		const char *name;
		double		eps[GJ_GEN_MAX_EPS];
		int			neps;

		for (int k = 0; gj_gen_boundary_case(k, &p, &name, eps, &neps); k++)
		{
			for (int e = 0; e < neps; e++, seed++)
				if (isfinite(eps[e] * eps[e]) && p.n >= 8)
					check_slabs(name, seed, &p, NULL, eps[e], p.n / 3 > 4 ? p.n / 3 : 4);
			gj_points_free(&p);
		}
	}

	if (tables_seen > 10)
		passed++;
	else
	{
		failed++;
		printf("FAIL cell tables: only %d grids had one\n", tables_seen);
	}
	printf("join: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
