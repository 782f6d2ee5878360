/*
 * test_probe.c
 *		Unit tests of the core's probes from single rows: the self-join
 *		restricted by an id filter (cpu_probe.c), the sampled size estimate,
 *		the planner's pair count, and the interrupt hook of index builds.
 *
 * The restricted join must return exactly the rows that filtering the full
 * join's output would keep (WHERE a IN S, or b IN S; with and without
 * symmetric), no more and none twice, so each case runs the brute-force
 * oracle, applies the filter to its rows, and compares multisets of ordered
 * rows, distances bit for bit.  Ids repeat in some cases (two rows with one
 * id are paired both ways).  A failure prints the case and seed:
 *		test_probe [seed]
 * The last line is "probe: N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "datagen.h"
#include "oracle.h"
#include "pairset.h"

static int	passed = 0;
static int	failed = 0;

/*
 * Ordered rows (a, b) go into a pair set as one key, so that (a, b) and
 * (b, a) stay different rows (pairset normalises a <= b).
 */
static void
add_row(gj_pairset *s, int64_t a, int64_t b, double d)
{
	gj_pairset_add(s, 0, a * 4294967296LL + b, d);
}

typedef struct filter
{
	const uint8_t *in;			/* in[id]: id is listed */
	int			column;
	int			symmetric;
	gj_pairset *out;
	const int64_t *ids;
} filter;

/* The output rows of full-join pair (i, j) that pass the filter. */
static void
oracle_filtered(void *arg, int64_t i, int64_t j, double d)
{
	filter	   *f = arg;
	int64_t		u = f->ids[i],
				v = f->ids[j];

	if (!f->symmetric)
	{
		int64_t		lo = u < v ? u : v,
					hi = u < v ? v : u;

		if (f->in[f->column == 0 ? lo : hi])
			add_row(f->out, lo, hi, d);
		return;
	}
	if (f->in[f->column == 0 ? u : v])
		add_row(f->out, u, v, d);
	if (f->in[f->column == 0 ? v : u])
		add_row(f->out, v, u, d);
}

/* Run the probe engine over p (grid-sorted by g, or g NULL) into out. */
static gj_status
run_probe(const gj_grid *g, const gj_points *p, double eps, const uint8_t *in,
		  int column, int symmetric, int threads, gj_pairset *out)
{
	uint32_t   *rows = malloc(sizeof(uint32_t) * (p->n + 1));
	int64_t		nrows = 0;
	gj_probe_options po;
	gj_cpu_probe *j;
	gj_status	st;

	for (int64_t i = 0; i < p->n; i++)
		if (in[p->ids[i]])
			rows[nrows++] = (uint32_t) i;
	memset(&po, 0, sizeof(po));
	po.column = column;
	po.symmetric = symmetric;
	po.rows = rows;
	po.nrows = nrows;
	st = gj_cpu_probe_start(g, p, eps * eps, &po, threads, &j);
	free(rows);
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

/* One restricted case, by brute force (no grid) and over the grid. */
static void
check_restricted(const char *name, uint64_t seed, gj_points *p, double eps,
				 int64_t nid, double frac, int column, int symmetric)
{
	uint8_t    *in = calloc(nid + 1, 1);
	uint64_t	rng = seed;
	gj_pairset	want = {0};
	filter		f;

	for (int64_t id = 0; id < nid; id++)
		in[id] = gj_rng_uniform(&rng) < frac;
	f.in = in;
	f.column = column;
	f.symmetric = symmetric;
	f.out = &want;
	f.ids = p->ids;
	gj_oracle_selfjoin(p, eps * eps, oracle_filtered, &f);

	for (int use_grid = 0; use_grid <= 1; use_grid++)
	{
		gj_points	c;
		gj_grid		g;
		gj_pairset	got = {0};
		gj_status	st = GJ_OK;
		const char *why;
		int64_t		at = -1;

		gj_points_copy(&c, p, p->n);
		if (use_grid)
			st = gj_grid_build(&g, &c, eps * eps);
		if (st == GJ_OK)
			st = run_probe(use_grid ? &g : NULL, &c, eps, in, column, symmetric,
						   1 + (int) (seed % 3), &got);
		why = st != GJ_OK ? gj_status_name(st) : gj_pairset_diff(&want, &got, &at);
		if (why == NULL)
			passed++;
		else
		{
			failed++;
			printf("FAIL restricted %s seed=%llu n=%lld dims=%d eps=%.17g column=%d "
				   "symmetric=%d grid=%d: %s (want %lld rows, got %lld)\n",
				   name, (unsigned long long) seed, (long long) p->n, p->dims, eps,
				   column, symmetric, use_grid, why, (long long) want.n, (long long) got.n);
			gj_pairset_print_at("oracle", &want, "probe", &got, at);
		}
		if (use_grid)
			gj_grid_free(&g);
		gj_pairset_free(&got);
		gj_points_free(&c);
	}
	gj_pairset_free(&want);
	free(in);
}

/* Counting oracle pairs, split by equal ids. */
typedef struct counts
{
	const int64_t *ids;
	int64_t		same;
	int64_t		other;
} counts;

static void
count_emit(void *arg, int64_t i, int64_t j, double d)
{
	counts	   *c = arg;

	(void) d;
	if (c->ids[i] == c->ids[j])
		c->same++;
	else
		c->other++;
}

/*
 * The estimate is exact when every row is sampled and no neighbourhood
 * needs subsampling; the planner's split count is always exact.
 */
static void
check_counts(const char *name, gj_kind kind, int64_t n, int dims, double nbrs,
			 uint64_t seed)
{
	gj_points	p,
				c;
	gj_grid		g;
	double		eps;
	counts		want = {0};
	int64_t		same,
				other;
	double		est;

	gj_gen_points(&p, kind, n, dims, seed);
	for (int64_t i = 0; i < n; i++)
		p.ids[i] = i / 7;		/* "blocks" of 7 rows */
	eps = gj_gen_typical_eps(kind, n, dims, nbrs);
	want.ids = p.ids;
	gj_oracle_selfjoin(&p, eps * eps, count_emit, &want);
	gj_points_copy(&c, &p, n);
	if (gj_grid_build(&g, &c, eps * eps) != GJ_OK)
	{
		failed++;
		printf("FAIL counts %s: grid\n", name);
		return;
	}
	gj_grid_count_pairs(&g, &c, &same, &other);
	if (same == want.same && other == want.other)
		passed++;
	else
	{
		failed++;
		printf("FAIL count_pairs %s seed=%llu: want %lld/%lld, got %lld/%lld\n", name,
			   (unsigned long long) seed, (long long) want.same, (long long) want.other,
			   (long long) same, (long long) other);
	}
	est = gj_grid_estimate_pairs(&g, &c, n);
	if (est == (double) (want.same + want.other))
		passed++;
	else
	{
		failed++;
		printf("FAIL estimate (all rows) %s seed=%llu: want %lld, got %.1f\n", name,
			   (unsigned long long) seed, (long long) (want.same + want.other), est);
	}
	gj_grid_free(&g);
	gj_points_free(&c);
	gj_points_free(&p);
}

/* A sampled estimate on a larger set: within 25% of the exact count. */
static void
check_estimate(const char *name, gj_kind kind, int64_t n, int dims, double nbrs,
			   double eps_scale, uint64_t seed)
{
	gj_points	p;
	gj_grid		g;
	double		eps,
				est;
	int64_t		same,
				other,
				exact;

	gj_gen_points(&p, kind, n, dims, seed);
	eps = gj_gen_typical_eps(kind, n, dims, nbrs) * eps_scale;
	if (gj_grid_build(&g, &p, eps * eps) != GJ_OK)
	{
		failed++;
		printf("FAIL estimate %s: grid\n", name);
		return;
	}
	gj_grid_count_pairs(&g, &p, &same, &other);
	exact = same + other;
	est = gj_grid_estimate_pairs(&g, &p, 1024);
	if (fabs(est - (double) exact) <= 0.25 * (double) exact)
		passed++;
	else
	{
		failed++;
		printf("FAIL estimate %s seed=%llu n=%lld eps=%g: exact %lld, estimate %.0f\n",
			   name, (unsigned long long) seed, (long long) n, eps, (long long) exact, est);
	}
	gj_grid_free(&g);
	gj_points_free(&p);
}

/*
 * The join's sampled estimate (gj_grid_estimate_join_pairs): exact when
 * every probe row is sampled and no neighbourhood is subsampled, within
 * 25% of the oracle's count on a sample, zero for sets far apart.
 */
static int64_t
count_join(const gj_points *q, const gj_points *p, double eps2)
{
	int64_t		n = 0;

	for (int64_t i = 0; i < q->n; i++)
		for (int64_t j = 0; j < p->n; j++)
			n += gj_sqdist(q->x + i * q->dims, p->x + j * p->dims, p->dims) <= eps2;
	return n;
}

static void
check_join_estimate(const char *name, gj_kind kind, int64_t n, int dims, double nbrs,
					int64_t nsample, double tolerance, double shift, uint64_t seed)
{
	gj_points	p,
				q;
	gj_grid		g;
	double		eps,
				est;
	int64_t		exact;

	gj_gen_points(&p, kind, n, dims, seed);
	gj_gen_points(&q, kind, n / 2, dims, seed + 1000);
	for (int64_t i = 0; i < q.n * q.dims; i++)
		q.x[i] += shift;
	eps = gj_gen_typical_eps(kind, n, dims, nbrs);
	exact = count_join(&q, &p, eps * eps);
	if (gj_grid_build(&g, &p, eps * eps) != GJ_OK)
	{
		failed++;
		printf("FAIL join estimate %s: grid\n", name);
		return;
	}
	est = gj_grid_estimate_join_pairs(&g, &p, &q, nsample);
	if (fabs(est - (double) exact) <= tolerance * (double) exact)
		passed++;
	else
	{
		failed++;
		printf("FAIL join estimate %s seed=%llu n=%lld: exact %lld, estimate %.1f\n", name,
			   (unsigned long long) seed, (long long) n, (long long) exact, est);
	}
	gj_grid_free(&g);
	gj_points_free(&p);
	gj_points_free(&q);
}

static int	interrupt_now = 0;
static int	interrupt_after = 0;	/* > 0: raise at that poll */
static int	polls = 0;

static int
test_interrupt(void)
{
	polls++;
	return interrupt_now || (interrupt_after > 0 && polls >= interrupt_after);
}

/*
 * The grid build cancelled part-way: at its Nth poll, inside the threaded
 * cell ids, radix passes or gather (3M rows: several steps per slice even
 * on one core's slice).  It must give up, and leave the points the same
 * rows as before (only their order may change).
 */
static void
check_interrupt_midway(uint64_t seed)
{
	gj_points	p;
	int			total;

	gj_gen_points(&p, GJ_GEN_UNIFORM, 3000000, 2, seed);
	/* how many polls a whole build makes */
	{
		gj_points	q;
		gj_grid		g;

		gj_points_copy(&q, &p, p.n);
		polls = 0;
		gj_set_interrupt_hook(test_interrupt);
		if (gj_grid_build(&g, &q, 0.1 * 0.1) == GJ_OK)
			gj_grid_free(&g);
		gj_set_interrupt_hook(NULL);
		total = polls;
		gj_points_free(&q);
	}
	for (int k = 1; k <= 4; k++)
	{
		gj_points	q;
		gj_grid		g;
		gj_status	st;
		int64_t		sum0 = 0,
					sum1 = 0;

		gj_points_copy(&q, &p, p.n);
		for (int64_t i = 0; i < q.n; i++)
			sum0 += q.ids[i];
		polls = 0;
		interrupt_after = 1 + (total - 1) * k / 5;
		gj_set_interrupt_hook(test_interrupt);
		st = gj_grid_build(&g, &q, 0.1 * 0.1);
		gj_set_interrupt_hook(NULL);
		for (int64_t i = 0; i < q.n; i++)
			sum1 += q.ids[i];
		if (st == GJ_ERR_CANCELED && sum0 == sum1 && total > 8)
			passed++;
		else
		{
			failed++;
			printf("FAIL interrupt at poll %d of %d: %s, ids %s\n", interrupt_after, total,
				   gj_status_name(st), sum0 == sum1 ? "kept" : "changed");
			if (st == GJ_OK)
				gj_grid_free(&g);
		}
		interrupt_after = 0;
		gj_points_free(&q);
	}
	gj_points_free(&p);
}

/* With the hook raised, every long single-threaded build gives up. */
static void
check_interrupt(uint64_t seed)
{
	gj_points	p,
				q;
	gj_grid		g;
	uint32_t   *order = NULL;
	gj_status	st1,
				st2,
				st3;

	gj_gen_points(&p, GJ_GEN_UNIFORM, 200000, 3, seed);
	gj_points_copy(&q, &p, p.n);
	gj_set_interrupt_hook(test_interrupt);
	interrupt_now = 1;
	st1 = gj_grid_build(&g, &p, 1.0 * 1.0);
	st2 = gj_knn_grid_build(&g, &q);
	interrupt_now = 0;
	if (gj_knn_grid_build(&g, &q) == GJ_OK)
	{
		interrupt_now = 1;
		st3 = gj_knn_query_order(&g, &p, &order);
		interrupt_now = 0;
		gj_grid_free(&g);
	}
	else
		st3 = GJ_ERR_ARG;
	gj_set_interrupt_hook(NULL);
	if (st1 == GJ_ERR_CANCELED && st2 == GJ_ERR_CANCELED && st3 == GJ_ERR_CANCELED)
		passed++;
	else
	{
		failed++;
		printf("FAIL interrupt: grid %s, knn grid %s, query order %s\n",
			   gj_status_name(st1), gj_status_name(st2), gj_status_name(st3));
	}
	free(order);
	gj_points_free(&p);
	gj_points_free(&q);
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
		{GJ_GEN_CLUSTERS, "clusters"},
		{GJ_GEN_DUPLICATES, "duplicates"},
		{GJ_GEN_ONE_CELL, "one-cell"},
		{GJ_GEN_GRID_SNAPPED, "grid-snapped"},
	};
	static const int dim_list[] = {1, 2, 3, 6, 9};

	printf("test_probe: base seed %llu\n", (unsigned long long) base);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (size_t d = 0; d < sizeof(dim_list) / sizeof(dim_list[0]); d++)
			for (int column = 0; column <= 1; column++)
				for (int sym = 0; sym <= 1; sym++, seed++)
				{
					gj_points	p;
					int64_t		n = 900;
					int			dims = dim_list[d];
					double		eps = gj_gen_typical_eps(kinds[k].kind, n, dims, 6.0);
					int			dup = seed % 2;		/* ids repeat: three rows an id */

					gj_gen_points(&p, kinds[k].kind, n, dims, seed);
					if (dup)
						for (int64_t i = 0; i < n; i++)
							p.ids[i] = (i * 7919) % (n / 3);
					check_restricted(kinds[k].name, seed, &p, eps, n,
									 seed % 3 == 0 ? 0.02 : 0.3, column, sym);
					gj_points_free(&p);
				}
	/* exactly eps apart: the shared boundary sets, restricted */
	{
		gj_points	p;
		const char *name;
		double		eps[GJ_GEN_MAX_EPS];
		int			neps;

		for (int k = 0; gj_gen_boundary_case(k, &p, &name, eps, &neps); k++)
		{
			for (int e = 0; e < neps; e++, seed++)
				check_restricted(name, seed, &p, eps[e], p.n, 0.5, (int) (seed % 2),
								 (int) (seed / 2 % 2));
			gj_points_free(&p);
		}
	}

	check_counts("uniform-2d", GJ_GEN_UNIFORM, 3000, 2, 8.0, seed++);
	check_counts("clusters-3d", GJ_GEN_CLUSTERS, 3000, 3, 20.0, seed++);
	check_counts("duplicates-2d", GJ_GEN_DUPLICATES, 2000, 2, 4.0, seed++);
	check_counts("one-cell", GJ_GEN_ONE_CELL, 2000, 2, 4.0, seed++);
	check_estimate("uniform-2d", GJ_GEN_UNIFORM, 60000, 2, 30.0, 1.0, seed++);
	check_estimate("clusters-2d", GJ_GEN_CLUSTERS, 60000, 2, 30.0, 1.0, seed++);
	check_estimate("uniform-3d", GJ_GEN_UNIFORM, 60000, 3, 10.0, 1.0, seed++);
	check_estimate("one-cell-2d", GJ_GEN_ONE_CELL, 20000, 2, 4.0, 1e6, seed++);
	check_join_estimate("join all sampled, 2-d", GJ_GEN_UNIFORM, 3000, 2, 8.0, 1500, 0.0, 0.0, seed++);
	check_join_estimate("join all sampled, clusters 3-d", GJ_GEN_CLUSTERS, 3000, 3, 20.0, 1500, 0.0, 0.0, seed++);
	check_join_estimate("join sampled, 2-d", GJ_GEN_UNIFORM, 20000, 2, 30.0, 1024, 0.25, 0.0, seed++);
	check_join_estimate("join sampled, clusters 2-d", GJ_GEN_CLUSTERS, 20000, 2, 30.0, 1024, 0.25, 0.0, seed++);
	check_join_estimate("join of sets far apart", GJ_GEN_UNIFORM, 20000, 2, 8.0, 1024, 0.0, 1e6, seed++);
	check_interrupt(seed++);
	check_interrupt_midway(seed++);

	printf("probe: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
