/*
 * bench_core.c
 *		Benchmark of the core's CPU self-join against brute force, on the
 *		issue's seeded workloads; also writes each data set for the scikit-learn
 *		and SQL benchmarks (regress/bench/bench_sklearn.py, regress/bench/bench_sql.sh).
 *
 *	bench_core [--data DIR] [--quick]
 *
 * For each case: grid build time, join time (all threads and one thread;
 * pairs consumed and counted as the SQL glue consumes them), pairs, and
 * brute force (the oracle, one thread) on the first BF_N points with the
 * engine on the same subset, so that both ratios come from one run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core_internal.h"
#include "datagen.h"
#include "oracle.h"

typedef struct bench_case
{
	const char *name;
	gj_kind		kind;
	int64_t		n;
	int			dims;
	double		eps;
	uint64_t	seed;			/* same seed: same points (for SQL cross-checks) */
} bench_case;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Build + join, counting pairs; returns pairs, times in *build, *join. */
static int64_t
run_engine(gj_points *p, double eps, int threads, double *build, double *join)
{
	gj_grid		g;
	gj_cpu_selfjoin *j;
	gj_chunk   *c;
	gj_status	st;
	int64_t		pairs = 0;
	double		t0 = now();
	volatile double sink = 0;

	if (gj_grid_build(&g, p, eps * eps) != GJ_OK)
	{
		fprintf(stderr, "grid build failed\n");
		exit(2);
	}
	*build = now() - t0;
	t0 = now();
	if (gj_cpu_selfjoin_start(&g, p, threads, &j) != GJ_OK)
		exit(2);
	while ((st = gj_engine_next(GJ_ENGINE(j), 100, &c)) == GJ_OK || st == GJ_AGAIN)
	{
		if (st == GJ_AGAIN)
			continue;
		pairs += c->n;
		/* touch what the glue reads: ids and distances */
		for (int k = 0; k < c->n; k++)
			sink += c->dist[k] + (double) c->a[k] + (double) c->b[k];
		gj_engine_release(GJ_ENGINE(j), c);
	}
	gj_engine_free(GJ_ENGINE(j));
	*join = now() - t0;
	gj_grid_free(&g);
	if (st != GJ_DONE)
		exit(2);
	return pairs;
}

int
main(int argc, char **argv)
{
	const char *dir = NULL;
	int			quick = 0;
	int64_t		bf_n = 100000;
	static bench_case cases[] = {
		{"unif2d_eps0.1", GJ_GEN_UNIFORM, 1000000, 2, 0.1, 1000},
		{"unif2d_eps0.3", GJ_GEN_UNIFORM, 1000000, 2, 0.3, 1000},
		{"unif2d_eps1.0", GJ_GEN_UNIFORM, 1000000, 2, 1.0, 1000},
		{"unif6d_eps11.2", GJ_GEN_UNIFORM, 1000000, 6, 11.2, 1003},
		{"unif6d_200k_eps14.6", GJ_GEN_UNIFORM, 200000, 6, 14.6, 1004},
		{"expo2d_eps0.00015", GJ_GEN_EXPONENTIAL, 1000000, 2, 0.00015, 1005},
		{"clusters3d_eps0.3", GJ_GEN_CLUSTERS, 1000000, 3, 0.3, 1006},
	};
	int			ncases = sizeof(cases) / sizeof(cases[0]);

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else
		{
			fprintf(stderr, "usage: bench_core [--data DIR] [--quick]\n");
			return 2;
		}
	}
	if (quick)
		bf_n = 20000;
	if (dir != NULL)
		mkdir(dir, 0755);

	printf("bench_core: %d CPUs; brute force = oracle on the first %lld points, 1 thread\n",
		   gj_cpu_count(), (long long) bf_n);
	printf("%-22s %8s %11s %8s %8s %8s %8s | %10s %8s %8s %7s\n",
		   "case", "n", "pairs", "build_s", "join_s", "join1_s", "Mpair/s",
		   "bf_pairs", "bf_s", "grid_s", "bf/grid");
	for (int c = 0; c < ncases; c++)
	{
		bench_case *bc = &cases[c];
		int64_t		n = quick ? bc->n / 10 : bc->n;
		gj_points	p,
					sub;
		double		build,
					join,
					build1,
					join1,
					sb,
					sj,
					t0,
					bf;
		int64_t		pairs,
					pairs1,
					bf_pairs,
					sub_pairs;

		gj_gen_points(&p, bc->kind, n, bc->dims, bc->seed);
		if (dir != NULL)
			gj_write_csv(dir, bc->name, &p);
		gj_points_copy(&sub, &p, n < bf_n ? n : bf_n);

		pairs = run_engine(&p, bc->eps, 0, &build, &join);
		pairs1 = run_engine(&p, bc->eps, 1, &build1, &join1);
		if (pairs1 != pairs)
		{
			fprintf(stderr, "%s: 1-thread pairs %lld != %lld\n", bc->name,
					(long long) pairs1, (long long) pairs);
			return 1;
		}
		t0 = now();
		bf_pairs = gj_oracle_selfjoin(&sub, bc->eps * bc->eps, NULL, NULL);
		bf = now() - t0;
		sub_pairs = run_engine(&sub, bc->eps, 0, &sb, &sj);
		if (sub_pairs != bf_pairs)
		{
			fprintf(stderr, "%s: engine %lld pairs, brute force %lld\n",
					bc->name, (long long) sub_pairs, (long long) bf_pairs);
			return 1;
		}
		printf("%-22s %8lld %11lld %8.3f %8.3f %8.3f %8.1f | %10lld %8.2f %8.4f %7.0f\n",
			   bc->name, (long long) n, (long long) pairs, build, join, join1,
			   pairs / (build + join) / 1e6, (long long) bf_pairs, bf, sb + sj,
			   bf / (sb + sj));
		fflush(stdout);
		gj_points_free(&p);
		gj_points_free(&sub);
	}
	return 0;
}
