/*
 * bench_knn.c
 *		Benchmark of the CPU kNN engine on the workloads, against
 *		brute force in the same run; writes the data sets for the
 *		scikit-learn and SQL benchmarks (bench_knn_sklearn.py, bench_knn_sql.sh).
 *
 *	bench_knn [--data DIR] [--quick] [--big]
 *
 * Cases: the kNN paper's 1M references in 20 Gaussian clusters in
 * [0,100]^3 with 100K uniform queries (k = 20 and 100), and 1M uniform 2-D
 * references with 100K uniform queries (k = 20, the PostGIS comparison);
 * --big adds 5M clustered references.  For each: cell sizing + grid build,
 * search with all threads (array and heap k buffers), results consumed as
 * the SQL glue consumes them, and brute force (the engine's brute method,
 * all threads) on the first BF_Q queries; the two answers for those
 * queries must be identical, and the ratio is extrapolated per query.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core_internal.h"
#include "datagen.h"
#include "knnset.h"

#define BF_Q 2000

typedef struct bench_case
{
	const char *name;
	gj_kind		ref_kind;
	int64_t		nref;
	int64_t		nq;
	int			dims;
	int64_t		k;
	uint64_t	seed;
	int			big;
} bench_case;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The search on an existing grid, consuming rows; returns seconds. */
static double
run_search(const gj_points *refs, const gj_grid *g, const gj_points *qs,
		   const gj_knn_options *opt, int64_t *rows, gj_knnset *out)
{
	gj_cpu_knn *j;
	gj_chunk   *c;
	gj_status	st;
	double		t0 = now();
	volatile double sink = 0;

	*rows = 0;
	if (gj_cpu_knn_start(refs, g, qs, opt, 0, &j) != GJ_OK)
		exit(2);
	while ((st = gj_engine_next(GJ_ENGINE(j), 100, &c)) == GJ_OK || st == GJ_AGAIN)
	{
		if (st == GJ_AGAIN)
			continue;
		*rows += c->n;
		for (int i = 0; i < c->n; i++)
			sink += c->dist[i] + (double) c->a[i] + (double) c->b[i];
		if (out != NULL)
			gj_knnset_add_chunk(out, c, qs->ids, refs->ids);
		gj_engine_release(GJ_ENGINE(j), c);
	}
	gj_engine_free(GJ_ENGINE(j));
	if (st != GJ_DONE)
		exit(2);
	return now() - t0;
}

int
main(int argc, char **argv)
{
	const char *dir = NULL;
	int			quick = 0,
				big = 0;
	static bench_case cases[] = {
		{"clust3d_1m_k20", GJ_GEN_CLUSTERS, 1000000, 100000, 3, 20, 2001, 0},
		{"clust3d_1m_k100", GJ_GEN_CLUSTERS, 1000000, 100000, 3, 100, 2001, 0},
		{"unif2d_1m_k20", GJ_GEN_UNIFORM, 1000000, 100000, 2, 20, 2003, 0},
		{"clust3d_5m_k20", GJ_GEN_CLUSTERS, 5000000, 100000, 3, 20, 2005, 1},
	};

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else if (strcmp(argv[i], "--big") == 0)
			big = 1;
		else
		{
			fprintf(stderr, "usage: bench_knn [--data DIR] [--quick] [--big]\n");
			return 2;
		}
	}
	if (dir != NULL)
		mkdir(dir, 0755);

	printf("bench_knn: %d CPUs; brute force = the engine's brute method on the first %d queries, all threads\n",
		   gj_cpu_count(), BF_Q);
	printf("%-16s %8s %7s %4s %8s %8s %8s %9s | %8s %9s %7s\n",
		   "case", "refs", "queries", "k", "build_s", "array_s", "heap_s",
		   "Mrows/s", "bf_s/q", "grid_s/q", "bf/grid");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		bench_case *bc = &cases[c];
		int64_t		nref = quick ? bc->nref / 10 : bc->nref;
		int64_t		nq = quick ? bc->nq / 10 : bc->nq;
		gj_points	refs,
					qs,
					sub,
					bref;
		gj_grid		g;
		gj_knn_options opt = {.k = bc->k, .method = GJ_KNN_GRID};
		gj_knnset	want = {0},
					got = {0};
		double		t0,
					build,
					t_array,
					t_heap,
					t_bf,
					t_sub;
		int64_t		rows,
					rows2;

		if (bc->big && !big)
			continue;
		gj_gen_points(&refs, bc->ref_kind, nref, bc->dims, bc->seed);
		gj_gen_points(&qs, GJ_GEN_UNIFORM, nq, bc->dims, bc->seed + 1);
		if (dir != NULL && bc->k == 20)
		{
			char		name[256];

			snprintf(name, sizeof(name), "%s_refs", bc->name);
			gj_write_csv(dir, name, &refs);
			snprintf(name, sizeof(name), "%s_queries", bc->name);
			gj_write_csv(dir, name, &qs);
		}
		gj_points_copy(&bref, &refs, refs.n);
		gj_points_copy(&sub, &qs, nq < BF_Q ? nq : BF_Q);

		t0 = now();
		if (gj_knn_grid_build(&g, &refs) != GJ_OK)
			exit(2);
		build = now() - t0;
		opt.heap_min_k = 1 << 30;
		t_array = run_search(&refs, &g, &qs, &opt, &rows, NULL);
		opt.heap_min_k = 1;
		t_heap = run_search(&refs, &g, &qs, &opt, &rows2, NULL);
		opt.heap_min_k = 0;
		t_sub = run_search(&refs, &g, &sub, &opt, &rows2, &got);

		opt.method = GJ_KNN_BRUTE;
		t_bf = run_search(&bref, NULL, &sub, &opt, &rows2, &want);
		if (gj_knnset_diff(&want, &got) != NULL)
		{
			fprintf(stderr, "%s: grid and brute force differ\n", bc->name);
			return 1;
		}
		printf("%-16s %8lld %7lld %4lld %8.3f %8.3f %8.3f %9.1f | %8.2e %9.2e %7.0f\n",
			   bc->name, (long long) nref, (long long) nq, (long long) bc->k,
			   build, t_array, t_heap, rows / (build + (t_array < t_heap ? t_array : t_heap)) / 1e6,
			   t_bf / sub.n, t_sub / sub.n, t_bf / t_sub);
		fflush(stdout);
		gj_grid_free(&g);
		gj_knnset_free(&want);
		gj_knnset_free(&got);
		gj_points_free(&refs);
		gj_points_free(&qs);
		gj_points_free(&sub);
		gj_points_free(&bref);
	}
	return 0;
}
