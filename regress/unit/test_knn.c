/*
 * test_knn.c
 *		Unit tests of the CPU kNN engine (grid and brute force, array and heap
 *		k buffers) against the sorting oracle, on seeded random and
 *		adversarial data: ties at equal distances (lattices), distance-0
 *		duplicates, all points in one cell, clusters with queries in empty
 *		space and far outside the data, k above the number of references,
 *		empty and one-row inputs, the shared boundary sets.
 *
 * Ids are a scrambled permutation of the row numbers, so that breaking ties
 * by row instead of by id would fail.  A failure prints the case and seed:
 *		test_knn [seed]
 * The last line is "knn: N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core_internal.h"
#include "datagen.h"
#include "knnset.h"

static int	passed = 0;
static int	failed = 0;

/* Ids that do not follow row order: tie-breaks must use them. */
static void
scramble_ids(gj_points *p, int64_t salt)
{
	for (int64_t i = 0; i < p->n; i++)
		p->ids[i] = (p->n - 1 - i) * 1000003 % 2147483647 + salt;
}

/*
 * One case: refs and (unless self) queries; the engine gets copies (it
 * sorts refs in place), the oracle the originals.
 */
static void
check(const char *name, uint64_t seed, const gj_points *refs,
	  const gj_points *queries, int64_t k, gj_knn_method method, int heap_min_k,
	  int threads)
{
	gj_knn_options opt = {.k = k, .exclude_self = queries == NULL, .method = method, .heap_min_k = heap_min_k};
	gj_points	r;
	gj_knnset	want = {0},
				got = {0};
	gj_status	st;
	const char *why;

	struct timespec t0, t1, t2;
	gj_points_copy(&r, refs, refs->n);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (refs->n <= 5000)
		st = gj_knn_run_oracle(refs, queries, &opt, &want);
	else
	{
		/* too big for the sorting oracle: brute force, itself checked above */
		gj_knn_options bopt = opt;
		gj_points	b;

		bopt.method = GJ_KNN_BRUTE;
		gj_points_copy(&b, refs, refs->n);
		st = gj_knn_run_cpu(&b, queries, &bopt, 4, &want);
		st = st == GJ_DONE ? GJ_OK : st;
		gj_points_free(&b);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (st == GJ_OK)
		st = gj_knn_run_cpu(&r, queries, &opt, threads, &got);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	if (getenv("GJ_TIME")) printf("%s dims=%d k=%lld m=%d self=%d oracle %.3f engine %.3f\n", name, refs->dims, (long long)k, method, queries==NULL,
		(t1.tv_sec-t0.tv_sec)+(t1.tv_nsec-t0.tv_nsec)*1e-9, (t2.tv_sec-t1.tv_sec)+(t2.tv_nsec-t1.tv_nsec)*1e-9);
	if (st != GJ_DONE)
		why = gj_status_name(st);
	else
		why = gj_knnset_diff(&want, &got);
	if (why == NULL)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s seed=%llu n=%lld q=%lld dims=%d k=%lld method=%s heap_min_k=%d: %s\n",
			   name, (unsigned long long) seed, (long long) refs->n,
			   (long long) (queries ? queries->n : refs->n), refs->dims,
			   (long long) k, method == GJ_KNN_GRID ? "grid" :
			   method == GJ_KNN_BRUTE ? "brute" : "auto", heap_min_k, why);
	}
	gj_knnset_free(&want);
	gj_knnset_free(&got);
	gj_points_free(&r);
}

/* Both methods, both buffers, self and separate queries. */
static void
check_all(const char *name, uint64_t seed, const gj_points *refs,
		  const gj_points *queries, int64_t k, int threads)
{
	check(name, seed, refs, queries, k, GJ_KNN_GRID, 0, threads);
	check(name, seed, refs, NULL, k, GJ_KNN_GRID, 1, threads);
	check(name, seed, refs, queries, k, GJ_KNN_BRUTE, 1 << 30, threads);
	check(name, seed, refs, NULL, k, GJ_KNN_AUTO, 0, threads);
}

/* Queries: another draw of the same kind, or the data stretched far out. */
static void
make_queries(gj_points *q, gj_kind kind, int64_t n, int dims, uint64_t seed,
			 double stretch)
{
	gj_gen_points(q, kind, n, dims, seed);
	for (int64_t i = 0; i < q->n * dims; i++)
		q->x[i] = (q->x[i] - 50.0) * stretch + 50.0;
	scramble_ids(q, 7);
}

static void
run_kind(gj_kind kind, const char *name, uint64_t seed, int64_t n, int dims,
		 int64_t k, double stretch)
{
	gj_points	refs,
				qs;

	gj_gen_points(&refs, kind, n, dims, seed);
	scramble_ids(&refs, 0);
	make_queries(&qs, kind == GJ_GEN_CLUSTERS ? GJ_GEN_UNIFORM : kind,
				 n / 5 + 1, dims, seed ^ 0x9e3779b97f4a7c15ULL, stretch);
	check_all(name, seed, &refs, &qs, k, 1 + (int) (seed % 4));
	gj_points_free(&refs);
	gj_points_free(&qs);
}

/* Cancel a large kNN after its first chunk: returns at once, no leak. */
static void
check_cancel(uint64_t seed)
{
	gj_points	p;
	gj_cpu_knn *j;
	gj_chunk   *c = NULL;
	gj_status	st;
	gj_knn_options opt = {.k = 50, .exclude_self = 1, .method = GJ_KNN_BRUTE};

	gj_gen_points(&p, GJ_GEN_UNIFORM, 60000, 3, seed);
	if (gj_cpu_knn_start(&p, NULL, &p, &opt, 4, &j) != GJ_OK)
	{
		failed++;
		printf("FAIL knn cancel: could not start\n");
		gj_points_free(&p);
		return;
	}
	do
		st = gj_engine_next(GJ_ENGINE(j), 100, &c);
	while (st == GJ_AGAIN);
	if (st == GJ_OK && c->n > 0 && c->rank[0] == 1)
	{
		gj_engine_release(GJ_ENGINE(j), c);
		passed++;
	}
	else
	{
		failed++;
		printf("FAIL knn cancel: no first chunk (%s)\n", gj_status_name(st));
	}
	gj_engine_free(GJ_ENGINE(j));			/* 3.6e9 distances still to go */
	gj_points_free(&p);
}

/*
 * Self kNN of some rows only (knn_selfjoin ... WHERE a IN S): the rows of
 * the full self kNN whose query id is listed, exactly.
 */
static void
check_subset(const char *name, uint64_t seed, const gj_points *refs, int64_t k,
			 gj_knn_method method, double frac)
{
	gj_knn_options opt = {.k = k, .exclude_self = 1, .method = method};
	gj_knnset	all = {0},
				want = {0},
				got = {0};
	gj_points	r;
	gj_grid		g;
	int			grid = gj_knn_pick_method(&opt, refs->dims) == GJ_KNN_GRID;
	uint64_t	rng = seed;
	uint8_t    *in = calloc(refs->n + 1, 1);
	uint32_t   *rows = malloc(sizeof(uint32_t) * (refs->n + 1));
	int64_t		nrows = 0;
	gj_cpu_knn *j = NULL;
	gj_status	st;
	const char *why;

	/* ids are a permutation of 0..n-1 scrambled: mark some */
	for (int64_t i = 0; i < refs->n; i++)
		in[i] = gj_rng_uniform(&rng) < frac;
	st = gj_knn_run_oracle(refs, NULL, &opt, &all);
	for (int64_t i = 0; i < all.n; i++)
		if (in[all.v[i].q % refs->n])
			gj_knnset_add(&want, all.v[i].q, all.v[i].rank, all.v[i].r, all.v[i].dist);

	gj_points_copy(&r, refs, refs->n);
	if (grid && gj_knn_grid_build(&g, &r) != GJ_OK)
		st = GJ_ERR_NOMEM;
	for (int64_t i = 0; i < r.n; i++)
		if (in[r.ids[i] % refs->n])
			rows[nrows++] = (uint32_t) i;
	opt.self_rows = rows;
	opt.nself = nrows;
	if (st == GJ_OK || st == GJ_DONE)
		st = gj_cpu_knn_start(&r, grid ? &g : NULL, &r, &opt, 3, &j);
	while (st == GJ_OK || st == GJ_AGAIN)
	{
		gj_chunk   *c;

		st = gj_engine_next(GJ_ENGINE(j), 100, &c);
		if (st == GJ_OK)
		{
			gj_knnset_add_chunk(&got, c, NULL, NULL);
			gj_engine_release(GJ_ENGINE(j), c);
		}
	}
	why = st != GJ_DONE ? gj_status_name(st) : gj_knnset_diff(&want, &got);
	if (why == NULL)
		passed++;
	else
	{
		failed++;
		printf("FAIL subset %s seed=%llu n=%lld k=%lld method=%d: %s\n", name,
			   (unsigned long long) seed, (long long) refs->n, (long long) k, method, why);
	}
	gj_engine_free(GJ_ENGINE(j));
	if (grid)
		gj_grid_free(&g);
	gj_points_free(&r);
	gj_knnset_free(&all);
	gj_knnset_free(&want);
	gj_knnset_free(&got);
	free(in);
	free(rows);
}

/* The shared boundary sets as self kNN: exact lattices give many ties. */
static void
check_boundaries(void)
{
	gj_points	p;
	const char *name;
	double		eps[GJ_GEN_MAX_EPS];
	int			neps;

	for (int c = 0; gj_gen_boundary_case(c, &p, &name, eps, &neps); c++)
	{
		scramble_ids(&p, 3);
		check(name, 0, &p, NULL, 1, GJ_KNN_GRID, 0, 2);
		check(name, 0, &p, NULL, 7, GJ_KNN_GRID, 1, 2);
		check(name, 0, &p, NULL, 7, GJ_KNN_BRUTE, 0, 2);
		gj_points_free(&p);
	}
}

/*
 * auto's choice above the grid's dimensions (knn_contrast.c): clustered
 * rows have a low sampled contrast and get the blocks' index, uniform rows
 * in many dimensions a high one and brute force; explicit methods stay.
 */
static void
check_auto_choice(uint64_t seed)
{
	static const struct
	{
		gj_kind		kind;
		int			dims;
		gj_knn_method want;
	}			cases[] = {
		{GJ_GEN_CLUSTERS, 32, GJ_KNN_BLOCKS},
		{GJ_GEN_CLUSTERS, 300, GJ_KNN_BLOCKS},
		{GJ_GEN_UNIFORM, 64, GJ_KNN_BRUTE},
		{GJ_GEN_UNIFORM, 300, GJ_KNN_BRUTE},
		{GJ_GEN_UNIFORM, 3, GJ_KNN_GRID},
	};

	for (int c = 0; c < (int) (sizeof(cases) / sizeof(cases[0])); c++)
	{
		gj_points	p;
		gj_knn_options opt = {.k = 5, .exclude_self = 1, .method = GJ_KNN_AUTO};
		gj_knn_options forced = {.k = 5, .exclude_self = 1, .method = GJ_KNN_BLOCKS};
		double		contrast,
					ignored;
		gj_knn_method got;

		gj_gen_points(&p, cases[c].kind, 4000, cases[c].dims, seed + c);
		got = gj_knn_auto_method(&opt, &p, &contrast);
		if (got == cases[c].want && gj_knn_auto_method(&forced, &p, &ignored) == GJ_KNN_BLOCKS &&
			(cases[c].dims <= GJ_KNN_GRID_MAX_DIMS ? contrast == -1.0 : contrast >= 0.0 && contrast <= 1.0))
			passed++;
		else
		{
			printf("FAIL auto choice: kind %d, %d dims: method %d (want %d), contrast %.3f\n",
				   (int) cases[c].kind, cases[c].dims, (int) got, (int) cases[c].want, contrast);
			failed++;
		}
		gj_points_free(&p);
	}
}

int
main(int argc, char **argv)
{
	uint64_t	base = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261121;
	static const struct
	{
		gj_kind		kind;
		const char *name;
	}			kinds[] = {
		{GJ_GEN_UNIFORM, "uniform"},
		{GJ_GEN_EXPONENTIAL, "exponential"},
		{GJ_GEN_CLUSTERS, "clusters"},
		{GJ_GEN_DUPLICATES, "duplicates"},
		{GJ_GEN_ONE_CELL, "one-cell"},
		{GJ_GEN_GRID_SNAPPED, "grid-snapped"},
	};
	static const int dim_list[] = {1, 2, 3, 5, 6, 8, 16, 40};
	static const int64_t k_list[] = {1, 4, 20, 70};
	uint64_t	seed = base;

	printf("test_knn: base seed %llu\n", (unsigned long long) base);

	/* tiny inputs and k beyond the reference count */
	for (int n = 0; n <= 3; n++)
		for (int64_t k = 1; k <= 4; k++)
			run_kind(GJ_GEN_UNIFORM, "tiny", seed++, n, 2, k, 1.0);
	run_kind(GJ_GEN_UNIFORM, "k-above-n", seed++, 40, 3, 1000, 1.0);

	/* every kind and dimensionality, small to large k */
	for (int t = 0; t < (int) (sizeof(kinds) / sizeof(kinds[0])); t++)
		for (int d = 0; d < (int) (sizeof(dim_list) / sizeof(dim_list[0])); d++)
			for (int kk = 0; kk < 4; kk++, seed++)
				run_kind(kinds[t].kind, kinds[t].name, seed,
						 dim_list[d] <= 8 ? 500 : 250, dim_list[d],
						 k_list[kk], 1.0);

	/* skew: queries in empty space and far outside the clustered data */
	run_kind(GJ_GEN_CLUSTERS, "clusters-far", seed++, 1500, 3, 20, 10.0);
	run_kind(GJ_GEN_CLUSTERS, "clusters-very-far", seed++, 1500, 2, 5, 1e6);
	run_kind(GJ_GEN_EXPONENTIAL, "expo-big", seed++, 30000, 2, 30, 1.0);
	run_kind(GJ_GEN_CLUSTERS, "clusters-big", seed++, 30000, 3, 100, 1.0);

	check_boundaries();
	check_cancel(seed++);
	check_auto_choice(seed++);

	/* self kNN of some rows only */
	for (int t = 0; t < (int) (sizeof(kinds) / sizeof(kinds[0])); t++, seed++)
	{
		gj_points	p;

		gj_gen_points(&p, kinds[t].kind, 700, 3, seed);
		for (int64_t i = 0; i < p.n; i++)
			p.ids[i] = (i * 7919) % p.n;	/* a permutation: ids are distinct */
		check_subset(kinds[t].name, seed, &p, 5, GJ_KNN_GRID, 0.1);
		check_subset(kinds[t].name, seed, &p, 40, GJ_KNN_BRUTE, 0.3);
		check_subset(kinds[t].name, seed, &p, 3, GJ_KNN_GRID, 0.0);
		gj_points_free(&p);
	}

	printf("knn: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
