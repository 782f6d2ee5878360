/*
 * test_tiles.c
 *		Unit tests of the many-dimension paths of the core: the tile join
 *		(cpu_tiles.c), the per-row shapes built from its pairs (pair_rows.c),
 *		the tiled kNN scan and the cosine normalisation, each against the
 *		brute-force oracles, from 1 to 16,000 dimensions.
 *
 * Data: equal variance in every dimension (uniform), low-variance
 * dimensions first, exponential, clustered, duplicates, steps of exactly
 * 0.5 and 1 (pairs exactly eps apart), large norms with tiny differences,
 * two far clusters.  eps is chosen from the data for about 0, 1 and 10
 * neighbours a row, and everything.  A failure prints the case and seed:
 *		test_tiles [seed]
 * The last line is "tiles: N passed, N failed".
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "block_key.h"
#include "datagen.h"
#include "oracle.h"
#include "knnset.h"
#include "pairset.h"

static int	passed = 0;
static int	failed = 0;

static void
result(bool ok, const char *what, const char *name, uint64_t seed, int64_t n,
	   int dims, double eps2, const char *detail)
{
	if (ok)
	{
		passed++;
		return;
	}
	failed++;
	printf("FAIL %s %s seed=%llu n=%lld dims=%d eps2=%.17g: %s\n", what, name,
		   (unsigned long long) seed, (long long) n, dims, eps2, detail ? detail : "");
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/*
 * A squared radius giving about nb neighbours a row: the matching quantile
 * of the squared distances from up to 40 rows to every row.
 */
static double
eps2_for(const gj_points *p, double nb)
{
	int64_t		ns = p->n < 40 ? p->n : 40;
	int64_t		m = 0;
	double	   *d = malloc(sizeof(double) * (ns * p->n + 1));
	double		e;
	int64_t		at;

	for (int64_t s = 0; s < ns; s++)
	{
		int64_t		i = s * (p->n / ns);

		for (int64_t j = 0; j < p->n; j++)
			if (j != i)
				d[m++] = gj_sqdist(p->x + i * p->dims, p->x + j * p->dims, p->dims);
	}
	if (m == 0)
	{
		free(d);
		return 1.0;
	}
	qsort(d, m, sizeof(double), cmp_double);
	at = (int64_t) (nb / (double) (p->n - 1) * (double) m);
	at = at < 0 ? 0 : at >= m ? m - 1 : at;
	e = d[at];
	free(d);
	return e;
}

typedef struct oracle_ctx
{
	gj_pairset *out;
	const int64_t *ids;
} oracle_ctx;

static void
oracle_emit(void *arg, int64_t i, int64_t j, double dist)
{
	oracle_ctx *ctx = arg;

	gj_pairset_add(ctx->out, ctx->ids[i], ctx->ids[j], dist);
}

/* Drain an engine into a pair set (the caller frees it); GJ_OK when it ended normally. */
static gj_status
drain(gj_engine *e, gj_pairset *out, bool rows, const gj_points *p)
{
	gj_status	st;

	for (;;)
	{
		gj_chunk   *c;

		st = gj_engine_next(e, 100, &c);
		if (st == GJ_AGAIN)
			continue;
		if (st != GJ_OK)
			break;
		for (int k = 0; k < c->n; k++)
		{
			if (c->a[k] >= c->b[k] && (rows || c->a[k] > c->b[k]))
				st = GJ_ERR_ARG;	/* rows must come smaller first */
			if (rows)
				gj_pairset_add(out, p->ids[c->a[k]], p->ids[c->b[k]], c->dist[k]);
			else
				gj_pairset_add(out, c->a[k], c->b[k], c->dist[k]);
		}
		gj_engine_release(e, c);
		if (st == GJ_ERR_ARG)
			break;
	}
	return st == GJ_DONE ? GJ_OK : st;
}

/* Pairs the block bounds let the CPU tile join skip, over every case. */
static int64_t skipped_total = 0;

/*
 * The tile join of p against the oracle, in ids and in rows mode: brute
 * force, the index (prune) on the rows as given, the index on the rows
 * sorted into blocks keyed on every dimension (gj_points_block_order, as
 * kNN keys them), and on the rows sorted as the eps functions sort them
 * (the key's dimensions by the model, gj_block_plan_make_for).
 */
static void
check_join(const char *name, uint64_t seed, const gj_points *p, double eps2, int threads)
{
	gj_pairset	want = {0};
	oracle_ctx	ctx = {&want, p->ids};
	gj_points	sorted,
				modelled;
	gj_block_plan plan;
	double		kept;
	static const char *what[4][2] = {{"tiles", "tiles-rows"},
	{"blocks", "blocks-rows"}, {"blocks-sorted", "blocks-sorted-rows"},
	{"blocks-model", "blocks-model-rows"}};

	gj_oracle_selfjoin(p, eps2, oracle_emit, &ctx);
	gj_points_copy(&sorted, p, p->n);
	if (gj_points_block_order(&sorted) != GJ_OK)
		exit(2);
	/* sorted as an eps join's index sorts them: key dimensions by the model */
	gj_points_copy(&modelled, p, p->n);
	if (gj_block_plan_make_for(p, eps2, &plan, &kept) != GJ_OK ||
		gj_points_block_order_by(&modelled, &plan) != GJ_OK)
		exit(2);
	gj_block_plan_free(&plan);
	for (int mode = 0; mode < 4; mode++)
		for (int rows = 0; rows <= 1; rows++)
		{
			const gj_points *q = mode == 2 ? &sorted : mode == 3 ? &modelled : p;
			gj_pairset	got = {0};
			gj_tiles_options opt = {.eps2 = eps2, .emit_rows = rows, .prune = mode > 0};
			gj_cpu_tiles *j;
			gj_status	st = gj_cpu_tiles_start(q, &opt, threads, &j);
			const char *why = NULL;
			int64_t		at = -1;
			char		detail[256];

			if (st == GJ_OK)
			{
				st = drain(GJ_ENGINE(j), &got, rows, q);
				skipped_total += gj_cpu_tiles_skipped(j);
				gj_engine_free(GJ_ENGINE(j));
			}
			if (st != GJ_OK)
				why = gj_status_name(st);
			else
				why = gj_pairset_diff(&want, &got, &at);
			snprintf(detail, sizeof(detail), "%s (oracle %lld pairs, engine %lld, threads %d)",
					 why ? why : "", (long long) want.n, (long long) got.n, threads);
			result(why == NULL, what[mode][rows], name, seed, p->n, p->dims, eps2, detail);
			if (why != NULL)
				gj_pairset_print_at("oracle", &want, "engine", &got, at);
			gj_pairset_free(&got);
		}
	gj_points_free(&sorted);
	gj_points_free(&modelled);
	gj_pairset_free(&want);
}

/*
 * The join of two sets (eps_join by tiles, gj_gen_two_sets): R is rows [0,
 * nr) of p, S the rest, or with same R again (every row pairs with itself,
 * as eps_join(t, t) does).  Against the oracle over R x S: brute force, the
 * index on the rows as given, and each set sorted into blocks by R's model
 * plan (as the job does), in ids and rows mode; every pair must come
 * (R's, S's).
 */
static void
check_cross(const char *name, uint64_t seed, const gj_points *p, int64_t nr, int same,
			double eps2, int threads)
{
	gj_points	two[2];			/* as given, then sorted */
	gj_pairset	want = {0};
	int64_t		ns;
	static const char *what[3][2] = {{"cross", "cross-rows"}, {"cross-blocks", "cross-blocks-rows"},
	{"cross-blocks-model", "cross-blocks-model-rows"}};

	gj_gen_two_sets_sorted(two, p, nr, same, eps2, &ns);
	for (int64_t i = 0; i < nr; i++)
		for (int64_t k = nr; k < nr + ns; k++)
		{
			double		s = gj_sqdist(two[0].x + i * p->dims, two[0].x + k * p->dims, p->dims);

			if (s <= eps2)
				gj_pairset_add(&want, two[0].ids[i], two[0].ids[k], sqrt(s));
		}
	for (int mode = 0; mode < 3; mode++)
		for (int rows = 0; rows <= 1; rows++)
		{
			const gj_points *q = &two[mode == 2 ? 1 : 0];
			gj_pairset	got = {0};
			gj_tiles_options opt = {.eps2 = eps2, .emit_rows = rows, .prune = mode > 0,
			.cross = 1, .split = nr};
			gj_cpu_tiles *j;
			gj_status	st = gj_cpu_tiles_start(q, &opt, threads, &j);
			const char *why = NULL;
			int64_t		at = -1,
						wrong = 0;
			char		detail[256];

			if (st == GJ_OK)
				st = gj_pairset_drain_cross(GJ_ENGINE(j), &got, rows, q, nr, &wrong);
			if (j != NULL)
			{
				skipped_total += gj_cpu_tiles_skipped(j);
				gj_engine_free(GJ_ENGINE(j));
			}
			if (st != GJ_OK)
				why = gj_status_name(st);
			else if (wrong > 0)
				why = "pairs not (R's, S's)";
			else
				why = gj_pairset_diff(&want, &got, &at);
			snprintf(detail, sizeof(detail), "%s (nr %lld, ns %lld%s; oracle %lld pairs, engine %lld, threads %d)",
					 why ? why : "", (long long) nr, (long long) ns, same ? ", S = R" : "",
					 (long long) want.n, (long long) got.n, threads);
			result(why == NULL, what[mode][rows], name, seed, p->n, p->dims, eps2, detail);
			if (why != NULL && at >= 0)
				gj_pairset_print_at("oracle", &want, "engine", &got, at);
			gj_pairset_free(&got);
		}
	gj_points_free(&two[0]);
	gj_points_free(&two[1]);
	gj_pairset_free(&want);
}

/*
 * The blocks' sampled model (block_index.c): on exponential rows in 16-D at
 * a small eps, where keying all 16 dimensions skips nothing, it keys fewer,
 * and the share of block pairs the CPU join then keeps is near the one it
 * predicted; the pairs are brute force's.  Without an eps (kNN) every
 * dimension up to 16 is keyed.
 */
static void
check_block_model(uint64_t seed)
{
	gj_points	p;
	gj_block_plan plan;
	double		kept,
				eps2 = 0.03 * 0.03,
				measured = -1.0;
	gj_pairset	want = {0},
				got = {0};
	gj_tiles_options brute = {.eps2 = eps2},
				index = {.eps2 = eps2, .prune = 1};
	gj_cpu_tiles *j;
	int64_t		at = -1;
	const char *why = NULL;
	char		detail[256];

	gj_gen_points(&p, GJ_GEN_EXPONENTIAL, 40000, 16, seed);
	if (gj_block_plan_make_for(&p, -1.0, &plan, &kept) != GJ_OK)
		exit(2);
	snprintf(detail, sizeof(detail), "no eps: %d key dimensions, kept %.3f", plan.m, kept);
	result(plan.m == 16 && kept == 1.0, "block-model-knn", "exponential", seed, p.n, p.dims, 0,
		   detail);
	gj_block_plan_free(&plan);
	if (gj_block_plan_make_for(&p, eps2, &plan, &kept) != GJ_OK ||
		gj_points_block_order_by(&p, &plan) != GJ_OK)
		exit(2);
	if (gj_cpu_tiles_start(&p, &brute, 2, &j) == GJ_OK)
	{
		drain(GJ_ENGINE(j), &want, 0, &p);
		gj_engine_free(GJ_ENGINE(j));
	}
	if (gj_cpu_tiles_start(&p, &index, 2, &j) == GJ_OK)
	{
		double		t,
					k;

		drain(GJ_ENGINE(j), &got, 0, &p);
		t = (double) gj_cpu_tiles_tested(j);
		k = (double) gj_cpu_tiles_skipped(j);
		measured = t / (t + k);
		gj_engine_free(GJ_ENGINE(j));
	}
	why = gj_pairset_diff(&want, &got, &at);
	snprintf(detail, sizeof(detail), "%d key dimensions, model keeps %.3f, the join kept %.3f; %s (%lld pairs, %lld)",
			 plan.m, kept, measured, why ? why : "same pairs", (long long) want.n,
			 (long long) got.n);
	result(plan.m < 16 && kept < 0.7 && fabs(measured - kept) < 0.15 && why == NULL && want.n > 0,
		   "block-model", "exponential", seed, p.n, p.dims, eps2, detail);
	printf("block model: %s\n", detail);
	gj_block_plan_free(&plan);
	gj_pairset_free(&want);
	gj_pairset_free(&got);
	gj_points_free(&p);
}

/* A pair source for the shapes: the CPU tile join of p in rows mode. */
typedef struct tiles_source
{
	const gj_points *p;
	double		eps2;
	int			threads;
	int			prune;
	int			runs;			/* how many times it started */
} tiles_source;

static gj_status
start_tiles(void *arg, gj_engine **out)
{
	tiles_source *s = arg;
	gj_tiles_options opt = {.eps2 = s->eps2, .emit_rows = 1, .prune = s->prune};
	gj_cpu_tiles *j;
	gj_status	st = gj_cpu_tiles_start(s->p, &opt, s->threads, &j);

	s->runs++;
	*out = st == GJ_OK ? GJ_ENGINE(j) : NULL;
	return st;
}

/*
 * Counts, DBSCAN and lists from the tile join's pairs, against the oracles
 * (prune: the join skips blocks by their bounds).
 */
static void
check_shapes(const char *name, uint64_t seed, const gj_points *p, double eps2, int threads,
			 int prune)
{
	int64_t		n = p->n;
	tiles_source ts = {p, eps2, threads, prune, 0};
	gj_pair_source src = {start_tiles, &ts, 0};
	int32_t    *want = malloc(sizeof(int32_t) * (n + 1));
	int32_t    *got = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *wcore = malloc(n + 1);
	uint8_t    *core = malloc(n + 1);
	char		detail[256] = "";
	int64_t		bad = 0;
	gj_status	st;

	/* counts */
	gj_oracle_count_within(p, eps2, want);
	st = gj_pairs_count(&src, n, got);
	for (int64_t i = 0; i < n && st == GJ_OK; i++)
		if (got[i] != want[i] && bad++ == 0)
			snprintf(detail, sizeof(detail), "row %lld: %d, oracle %d", (long long) i,
					 got[i], want[i]);
	result(st == GJ_OK && bad == 0, "pairs-count", name, seed, n, p->dims, eps2,
		   st != GJ_OK ? gj_status_name(st) : detail);

	/* DBSCAN, minpts 1 (every row core), 3 and 10 */
	for (int m = 0; m < 3; m++)
	{
		int32_t		minpts = m == 0 ? 1 : m == 1 ? 3 : 10;
		int64_t		ncl = 0;

		/* minpts 3: the pairs are kept; else a store of 1 kB: runs again */
		src.store_bytes = m == 1 ? 0 : 1024;
		bad = 0;
		detail[0] = '\0';
		gj_oracle_dbscan(p, eps2, minpts, want, wcore);
		st = gj_pairs_dbscan(&src, p, minpts, got, core);
		if (st == GJ_OK)
			st = gj_dbscan_number(p, got, core, &ncl);
		for (int64_t i = 0; i < n && st == GJ_OK; i++)
			if ((got[i] != want[i] || core[i] != wcore[i]) && bad++ == 0)
				snprintf(detail, sizeof(detail), "row %lld: cluster %d core %d, oracle %d core %d",
						 (long long) i, got[i], core[i], want[i], wcore[i]);
		result(st == GJ_OK && bad == 0, "pairs-dbscan", name, seed, n, p->dims, eps2,
			   st != GJ_OK ? gj_status_name(st) : detail);
	}

	/* lists: every row's neighbours by (distance, id), distances bit for bit */
	{
		gj_pairset	pairs = {0};
		oracle_ctx	ctx = {&pairs, p->ids};
		int64_t    *off,
				   *nb;
		double	   *nd;
		int64_t		entries;

		bad = 0;
		detail[0] = '\0';
		gj_oracle_selfjoin(p, eps2, oracle_emit, &ctx);
		st = gj_pairs_lists(&src, p, INT64_MAX, &off, &nb, &nd, &entries);
		if (st == GJ_OK && entries != 2 * pairs.n && bad++ == 0)
			snprintf(detail, sizeof(detail), "%lld entries, oracle pairs %lld",
					 (long long) entries, (long long) pairs.n);
		for (int64_t i = 0; i < n && st == GJ_OK && bad == 0; i++)
		{
			/* the oracle's list of row i: brute force, then sorted */
			int64_t		len = off[i + 1] - off[i],
						m = 0;

			for (int64_t k = 0; k < n; k++)
			{
				double		s;

				if (k == i)
					continue;
				s = gj_sqdist(p->x + i * p->dims, p->x + k * p->dims, p->dims);
				if (s <= eps2)
					m++;
			}
			if (m != len && bad++ == 0)
				snprintf(detail, sizeof(detail), "row %lld: %lld entries, oracle %lld",
						 (long long) i, (long long) len, (long long) m);
			for (int64_t e = off[i]; e < off[i + 1] && bad == 0; e++)
			{
				int64_t		k;

				/* each entry is a true neighbour, at its exact distance ... */
				for (k = 0; k < n && p->ids[k] != nb[e]; k++)
					;
				if (k == n || k == i ||
					sqrt(gj_sqdist(p->x + i * p->dims, p->x + k * p->dims, p->dims)) != nd[e])
				{
					bad++;
					snprintf(detail, sizeof(detail), "row %lld: entry %lld is no neighbour",
							 (long long) i, (long long) (e - off[i]));
				}
				/* ... in (distance, id) order */
				else if (e > off[i] && (nd[e] < nd[e - 1] ||
										(nd[e] == nd[e - 1] && nb[e] <= nb[e - 1])))
				{
					bad++;
					snprintf(detail, sizeof(detail), "row %lld: entry %lld out of order",
							 (long long) i, (long long) (e - off[i]));
				}
			}
		}
		result(st == GJ_OK && bad == 0, "pairs-lists", name, seed, n, p->dims, eps2,
			   st != GJ_OK ? gj_status_name(st) : detail);
		if (st == GJ_OK)
		{
			free(off);
			free(nb);
			free(nd);
		}
		gj_pairset_free(&pairs);
	}
	free(want);
	free(got);
	free(wcore);
	free(core);
}

/*
 * The tiled brute-force kNN (cpu_knn.c) against the sorting oracle: a self
 * join and a join of other queries, k from 1 to past the heap threshold.
 */
static void
check_knn(const char *name, uint64_t seed, const gj_points *p, int threads)
{
	gj_points	qs,
				sq;
	static const int64_t ks[] = {1, 10, 40};

	gj_gen_points(&qs, GJ_GEN_UNIFORM, p->n / 4 + 1, p->dims, seed + 1);
	for (int64_t i = 0; i < qs.n * qs.dims; i++)
		qs.x[i] = p->x[(i * 7) % (p->n * p->dims)] + 1e-3 * qs.x[i];	/* near the data */
	gj_points_copy(&sq, &qs, qs.n);
	if (gj_points_block_order(&sq) != GJ_OK)
		exit(2);
	for (int s = 0; s < 4; s++)
		for (int kk = 0; kk < 3; kk++)
		{
			/* s: self or join; brute force, or the blocks' index on sorted rows */
			bool		self = s % 2 == 0,
						blocks = s >= 2;
			gj_knn_options opt = {.k = ks[kk], .exclude_self = self,
			.method = blocks ? GJ_KNN_BLOCKS : GJ_KNN_BRUTE};
			gj_knnset	want = {0},
						got = {0};
			gj_points	r;
			gj_status	st;
			const char *why;

			gj_points_copy(&r, p, p->n);
			if (blocks && gj_points_block_order(&r) != GJ_OK)
				exit(2);
			st = gj_knn_run_oracle(p, self ? NULL : &qs, &opt, &want);
			if (st == GJ_OK)
				st = gj_knn_run_cpu(&r, self ? NULL : blocks ? &sq : &qs, &opt, threads, &got);
			why = st != GJ_DONE ? gj_status_name(st) : gj_knnset_diff(&want, &got);
			result(why == NULL, blocks ? (self ? "knn-blocks-self" : "knn-blocks-join") :
				   (self ? "knn-self" : "knn-join"), name, seed, p->n,
				   p->dims, (double) ks[kk], why);
			gj_knnset_free(&want);
			gj_knnset_free(&got);
			gj_points_free(&r);
		}
	gj_points_free(&sq);
	gj_points_free(&qs);
}

static const struct
{
	gj_kind		kind;
	const char *name;
}			kinds[] = {
	{GJ_GEN_UNIFORM, "uniform"},
	{GJ_GEN_LOWVAR_FIRST, "lowvar-first"},
	{GJ_GEN_EXPONENTIAL, "exponential"},
	{GJ_GEN_CLUSTERS, "clusters"},
	{GJ_GEN_DUPLICATES, "duplicates"},
	{GJ_GEN_LATTICE_STEPS, "lattice-steps"},
	{GJ_GEN_OFFSET, "offset"},
	{GJ_GEN_FAR_CLUSTERS, "far-clusters"},
};

#define NKINDS ((int) (sizeof(kinds) / sizeof(kinds[0])))

/* Every kind in dims dimensions, eps for 0, ~1, ~10 neighbours and all. */
static void
join_cases(int dims, int64_t n, uint64_t *seed)
{
	for (int k = 0; k < NKINDS; k++)
	{
		gj_points	p;
		double		e1,
					e10;

		gj_gen_points(&p, kinds[k].kind, n, dims, *seed);
		e1 = eps2_for(&p, 1.0);
		e10 = eps2_for(&p, 10.0);
		check_join(kinds[k].name, *seed, &p, e1 * 1e-6, 1 + (int) (*seed % 4));
		check_join(kinds[k].name, *seed, &p, e1, 1 + (int) ((*seed + 1) % 4));
		check_join(kinds[k].name, *seed, &p, e10, 1 + (int) ((*seed + 2) % 4));
		if (n <= 700 && dims <= 257)
		{
			gj_points	sorted;

			check_shapes(kinds[k].name, *seed, &p, e1, 2, 0);
			check_shapes(kinds[k].name, *seed, &p, e10, 3, 0);
			/* the rows sorted into blocks, as the SQL functions sort them */
			gj_points_copy(&sorted, &p, p.n);
			if (gj_points_block_order(&sorted) != GJ_OK)
				exit(2);
			check_shapes(kinds[k].name, *seed, &sorted, e1, 2, 1);
			check_shapes(kinds[k].name, *seed, &sorted, e10, 3, 1);
			gj_points_free(&sorted);
		}
		if (dims >= 7)
			check_knn(kinds[k].name, *seed, &p, 1 + (int) (*seed % 3));
		/* two sets: R of odd sizes (blocks restart at S), S = R, an empty side */
		check_cross(kinds[k].name, *seed, &p, n / 3 + 1, 0, e1, 1 + (int) (*seed % 3));
		check_cross(kinds[k].name, *seed, &p, n - 33, 0, e10, 2);
		check_cross(kinds[k].name, *seed, &p, n / 2, 1, e1, 3);
		check_cross(kinds[k].name, *seed, &p, 1, 0, e10, 2);
		check_cross(kinds[k].name, *seed, &p, n, 0, e10, 2);
		check_cross(kinds[k].name, *seed, &p, 0, 0, e10, 2);
		if (kinds[k].kind == GJ_GEN_LATTICE_STEPS)
		{
			/* the exact distances of the steps */
			check_join(kinds[k].name, *seed, &p, 0.25, 2);
			check_join(kinds[k].name, *seed, &p, 1.0, 3);
			check_join(kinds[k].name, *seed, &p, 0.5, 2);
		}
		if (n <= 400)
			check_join(kinds[k].name, *seed, &p, 1e300, 2);
		gj_points_free(&p);
		(*seed)++;
	}
}

/* The hand-made boundary sets of every engine (datagen.c). */
static void
check_boundaries(void)
{
	gj_points	p;
	const char *name;
	double		eps[GJ_GEN_MAX_EPS];
	int			neps;

	for (int k = 0; gj_gen_boundary_case(k, &p, &name, eps, &neps); k++)
	{
		for (int e = 0; e < neps; e++)
			check_join(name, 0, &p, eps[e] * eps[e], 2);
		gj_points_free(&p);
	}
}

/* Stopping a large tile join part-way returns promptly and leaks nothing. */
static void
check_cancel(uint64_t seed)
{
	gj_points	p;
	gj_tiles_options opt = {.eps2 = 1e300};
	gj_cpu_tiles *j;
	gj_chunk   *c = NULL;
	gj_status	st;

	gj_gen_points(&p, GJ_GEN_UNIFORM, 20000, 16, seed);
	st = gj_cpu_tiles_start(&p, &opt, 4, &j);
	if (st == GJ_OK)
	{
		do
			st = gj_engine_next(GJ_ENGINE(j), 100, &c);
		while (st == GJ_AGAIN);
		if (st == GJ_OK)
			gj_engine_release(GJ_ENGINE(j), c);
		gj_engine_free(GJ_ENGINE(j));	/* 200M pairs still to come */
	}
	result(st == GJ_OK, "cancel", "uniform", seed, p.n, p.dims, opt.eps2,
		   gj_status_name(st));
	gj_points_free(&p);
}

/*
 * The cosine normalisation: known rows, zero rows dropped in order, and
 * scale invariance (a row times 2^k normalises to the same bits).
 */
static void
check_normalize(uint64_t seed)
{
	gj_points	p,
				q;
	double		r0[3] = {3, 0, 4},
				r1[3] = {0, 0, 0},
				r2[3] = {1e300, 1e300, 0},
				r3[3] = {1e-310, 0, 0};
	int64_t		nzero = 0;
	bool		ok;
	char		detail[128] = "";

	gj_points_init(&p, 3);
	gj_points_push(&p, 10, r0);
	gj_points_push(&p, 11, r1);
	gj_points_push(&p, 12, r2);
	gj_points_push(&p, 13, r3);
	ok = gj_points_normalize(&p, &nzero) == GJ_OK && nzero == 1 && p.n == 3 &&
		p.ids[0] == 10 && p.ids[1] == 12 && p.ids[2] == 13 &&
		p.x[0] == 0.6 && p.x[1] == 0.0 && p.x[2] == 0.8 &&
		p.x[3] == 1.0 / sqrt(2.0) && p.x[4] == 1.0 / sqrt(2.0) && p.x[6] == 1.0;
	if (!ok)
		snprintf(detail, sizeof(detail), "nzero %lld n %lld x %.17g %.17g %.17g",
				 (long long) nzero, (long long) p.n, p.x[0], p.x[2], p.x[3]);
	result(ok, "normalize", "known rows", 0, p.n, 3, 0, detail);
	gj_points_free(&p);

	gj_gen_points(&p, GJ_GEN_CLUSTERS, 500, 33, seed);
	gj_points_copy(&q, &p, p.n);
	for (int64_t i = 0; i < q.n * q.dims; i++)
		q.x[i] *= 1024.0;
	ok = gj_points_normalize(&p, &nzero) == GJ_OK &&
		gj_points_normalize(&q, &nzero) == GJ_OK &&
		memcmp(p.x, q.x, sizeof(double) * p.n * p.dims) == 0;
	result(ok, "normalize", "scale-invariant", seed, p.n, p.dims, 0, "");
	gj_points_free(&p);
	gj_points_free(&q);
}

/*
 * The sampled pair shares (tile_plan.c, auto's choice), the sample being
 * every row: within times all pairs is the oracle's count exactly, however
 * the threads cut the cells (one dense cell of 3,000 rows gives 4.5M
 * candidate pairs, several threads' worth), and the candidates include
 * every pair within.
 */
static void
check_pair_shares(uint64_t seed)
{
	static const gj_kind kinds[] = {GJ_GEN_UNIFORM, GJ_GEN_CLUSTERS, GJ_GEN_DUPLICATES,
	GJ_GEN_ONE_CELL, GJ_GEN_GRID_SNAPPED};
	static const int dims_list[] = {2, 7, 16};

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (size_t d = 0; d < sizeof(dims_list) / sizeof(dims_list[0]); d++)
		{
			gj_points	p;
			int64_t		n = 3000,
						want = 0;
			double		eps = kinds[k] == GJ_GEN_GRID_SNAPPED ? 0.5 :
				gj_gen_typical_eps(kinds[k], n, dims_list[d], 20.0),
						cand,
						within,
						all = (double) n * (n - 1) / 2;
			char		detail[160] = "";
			bool		ok;

			gj_gen_points(&p, kinds[k], n, dims_list[d], seed);
			for (int64_t i = 0; i < n; i++)
				for (int64_t j = i + 1; j < n; j++)
					want += gj_sqdist(p.x + i * p.dims, p.x + j * p.dims, p.dims) <= eps * eps;
			ok = gj_sample_pair_shares(&p, eps * eps, n, &cand, &within) == GJ_OK &&
				fabs(within * all - (double) want) < 0.5 && cand >= within && cand <= 1.0;
			if (!ok)
				snprintf(detail, sizeof(detail), "within %.17g of %.0f pairs, oracle %lld, cand %.6f",
						 within, all, (long long) want, cand);
			result(ok, "pair-shares", "whole sample", seed, n, dims_list[d], eps * eps, detail);
			gj_points_free(&p);
		}
}

/*
 * The block key's level (block_key.h, the host's and the device's): the
 * cuts <= v, counted one by one, for sorted cuts with runs of equal values,
 * 1 to 65,535 of them (both of its paths), v on and between them, beyond
 * both ends, infinite and NaN (none).
 */
static void
check_block_level(uint64_t seed)
{
	uint64_t	rng = seed;
	int64_t		bad = 0,
				tried = 0;
	char		detail[128] = "";

	for (int trial = 0; trial < 600; trial++)
	{
		int			ncut = trial % 3 == 0 ? (1 << (1 + trial / 3 % 16)) - 1 :
			1 + (int) (gj_rng_next(&rng) % 5000),
					vals = 1 + (int) (gj_rng_next(&rng) % 50);
		double	   *cut = malloc(sizeof(double) * ncut);

		if (cut == NULL)
			exit(2);
		for (int i = 0; i < ncut; i++)
			cut[i] = (double) (gj_rng_next(&rng) % vals);
		qsort(cut, ncut, sizeof(double), cmp_double);
		for (int q = 0; q < 100; q++)
		{
			double		v = q == 0 ? NAN : q == 1 ? INFINITY : q == 2 ? -INFINITY :
				(double) (gj_rng_next(&rng) % (vals + 4)) - 2.0 + 0.5 * (q % 2);
			int64_t		want = 0,
						got = gj_block_level(cut, ncut, v);

			for (int i = 0; i < ncut; i++)
				want += cut[i] <= v;
			if (got != want && bad++ == 0)
				snprintf(detail, sizeof(detail), "ncut %d v %g: %lld, counted %lld", ncut, v,
						 (long long) got, (long long) want);
			tried++;
		}
		free(cut);
	}
	result(bad == 0, "block-level", "against counting", seed, tried, 1, 0, detail);
}

/* Cosine: the tile join of normalised rows at eps2 = 2 eps. */
static void
check_cosine(uint64_t seed)
{
	gj_points	p;
	int64_t		nzero;

	gj_gen_points(&p, GJ_GEN_CLUSTERS, 600, 48, seed);
	if (gj_points_normalize(&p, &nzero) != GJ_OK)
		exit(2);
	check_join("cosine-clusters", seed, &p, 2.0 * 0.0005, 3);
	check_join("cosine-clusters", seed, &p, 2.0 * 0.01, 2);
	gj_points_free(&p);
}

int
main(int argc, char **argv)
{
	uint64_t	base = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261124;
	uint64_t	seed = base;
	static const int dim_list[] = {1, 2, 3, 7, 8, 9, 16, 31, 33, 64, 100, 257, 768};

	printf("test_tiles: base seed %llu\n", (unsigned long long) base);
	for (int n = 0; n <= 3; n++)
	{
		gj_points	p;

		gj_gen_points(&p, GJ_GEN_UNIFORM, n, 20, seed);
		check_join("tiny", seed++, &p, 1e300, 2);
		gj_points_free(&p);
	}
	for (int d = 0; d < (int) (sizeof(dim_list) / sizeof(dim_list[0])); d++)
		join_cases(dim_list[d], dim_list[d] <= 64 ? 700 : 300, &seed);
	join_cases(2000, 120, &seed);
	join_cases(16000, 40, &seed);
	check_boundaries();
	check_normalize(seed++);
	check_cosine(seed++);
	check_cancel(seed++);
	check_block_model(seed++);
	check_block_level(seed++);
	check_pair_shares(seed++);
	/* the bounds must have skipped something on clustered data, or the index is untested */
	result(skipped_total > 0, "index-skips", "all cases", base, 0, 0, 0, "no pair skipped");
	printf("index: %lld pairs skipped by the block bounds\n", (long long) skipped_total);

	printf("tiles: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
