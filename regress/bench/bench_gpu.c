/*
 * bench_gpu.c
 *		The GPU engine on issue 3's workloads, side by side in one run with
 *		the CPU engine (all cores) and a brute-force GPU kernel.
 *
 *	bench_gpu [--no-bf] [--reps N]
 *
 * GPU time = gj_gpu_selfjoin_start (upload, device index, estimate) until the
 * last chunk of pairs has arrived in pinned host memory and been handed to
 * the consumer (which only counts them: the pairs are in host memory).
 * Median of N repetitions after one cold run (cold_s: the first join in
 * the process pays for allocating and pinning its result buffers, which
 * later joins reuse).  Transfer rate = 16 bytes a pair (two 32-bit row
 * indexes and a float64 distance) over the GPU time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_bench.h"
#include "core_internal.h"
#include "datagen.h"

typedef struct bcase
{
	const char *name;
	gj_kind		kind;
	int			dims;
	double		eps;
	double		seed_code_s;	/* the seed authors' published code, join only */
} bcase;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

static int64_t
run_gpu(const gj_points *p, double eps, double *secs, gj_gpu_stats *stats)
{
	gj_gpu_selfjoin *j;
	gj_chunk   *c;
	gj_status	st;
	char		err[256];
	int64_t		pairs = 0;
	double		t0 = now();

	st = gj_gpu_selfjoin_start(p, eps * eps, NULL, &j, err, sizeof(err));
	if (st != GJ_OK)
	{
		fprintf(stderr, "gpu start: %s %s\n", gj_status_name(st), err);
		exit(1);
	}
	while ((st = gj_engine_next(GJ_ENGINE(j), 100, &c)) == GJ_OK || st == GJ_AGAIN)
	{
		if (st == GJ_AGAIN)
			continue;
		pairs += c->n;
		gj_engine_release(GJ_ENGINE(j), c);
	}
	*secs = now() - t0;
	gj_gpu_selfjoin_stats(j, stats);
	if (st != GJ_DONE)
	{
		fprintf(stderr, "gpu join: %s %s\n", gj_status_name(st), gj_gpu_selfjoin_error(j));
		exit(1);
	}
	gj_engine_free(GJ_ENGINE(j));
	return pairs;
}

static int64_t
run_cpu(const gj_points *src, double eps, double *secs)
{
	gj_points	p;
	gj_grid		g;
	gj_cpu_selfjoin *j;
	gj_chunk   *c;
	gj_status	st;
	int64_t		pairs = 0;
	double		t0;

	gj_points_init(&p, src->dims);
	gj_points_reserve(&p, src->n);
	for (int64_t i = 0; i < src->n; i++)
		gj_points_push(&p, src->ids[i], src->x + i * src->dims);
	t0 = now();
	if (gj_grid_build(&g, &p, eps * eps) != GJ_OK || gj_cpu_selfjoin_start(&g, &p, 0, &j) != GJ_OK)
		exit(1);
	while ((st = gj_engine_next(GJ_ENGINE(j), 100, &c)) == GJ_OK || st == GJ_AGAIN)
	{
		if (st == GJ_AGAIN)
			continue;
		pairs += c->n;
		gj_engine_release(GJ_ENGINE(j), c);
	}
	*secs = now() - t0;
	gj_engine_free(GJ_ENGINE(j));
	gj_grid_free(&g);
	gj_points_free(&p);
	return pairs;
}

int
main(int argc, char **argv)
{
	static const bcase cases[] = {
		{"unif2d eps0.1", GJ_GEN_UNIFORM, 2, 0.1, 0.36},
		{"unif2d eps0.3", GJ_GEN_UNIFORM, 2, 0.3, 0.95},
		{"unif2d eps1.0", GJ_GEN_UNIFORM, 2, 1.0, 2.35},
		{"unif6d eps8", GJ_GEN_UNIFORM, 6, 8.0, 0.89},
		{"unif6d eps10", GJ_GEN_UNIFORM, 6, 10.0, 1.12},
		{"unif6d eps12", GJ_GEN_UNIFORM, 6, 12.0, 1.46},
		{"expo2d eps0.0001", GJ_GEN_EXPONENTIAL, 2, 0.0001, 0.64},
		{"expo2d eps0.0003", GJ_GEN_EXPONENTIAL, 2, 0.0003, 1.99},
	};
	int64_t		n = 2000000;
	int			reps = 3;
	int			do_bf = 1;
	gj_cuda_device_info info;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--no-bf") == 0)
			do_bf = 0;
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
			n = atoll(argv[++i]);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (reps < 1 || reps > 15)
		reps = 3;
	if (gj_cuda_probe(&info) != GJ_OK)
	{
		printf("bench_gpu: no usable GPU: %s\n", info.error);
		return 1;
	}
	printf("bench_gpu: %s (%d SMs), %d CPUs, n=%lld, median of %d\n", info.name,
		   info.sm_count, gj_cpu_count(), (long long) n, reps);
	printf("%-17s %11s %6s | %7s %7s %7s %7s %7s %7s %7s %6s %5s | %7s %7s | %7s %9s | %7s %6s %6s\n",
		   "case", "pairs", "nb/pt", "gpu_s", "cold_s", "plan_ms", "alloc_ms", "up_ms", "idx_ms", "est_ms", "batch",
		   "ovfl", "Gpair/s", "GB/s", "cpu_s", "cpu/gpu", "bf_s", "seed_s", "x_seed");
	for (int c = 0; c < (int) (sizeof(cases) / sizeof(cases[0])); c++)
	{
		gj_points	p;
		double		times[15],
					gsec,
					csec,
					bfms = 0;
		int64_t		gp = 0,
					cp,
					bfp = -1;
		gj_gpu_stats stats;
		char		err[256];

		gj_gen_points(&p, cases[c].kind, n, cases[c].dims, 3000 + c);
		double		cold;

		gj_gpu_release_cache();
		run_gpu(&p, cases[c].eps, &cold, &stats);	/* cold: buffers allocated */
		for (int r = 0; r < reps; r++)
			gp = run_gpu(&p, cases[c].eps, &times[r], &stats);
		qsort(times, reps, sizeof(double), cmp_double);
		gsec = times[reps / 2];
		cp = run_cpu(&p, cases[c].eps, &csec);
		if (do_bf && gj_gpu_bruteforce_count(&p, cases[c].eps * cases[c].eps, &bfp, &bfms, err, sizeof(err)) != GJ_OK)
			fprintf(stderr, "brute force: %s\n", err);
		if (cp != gp || (bfp >= 0 && bfp != gp))
		{
			printf("MISMATCH %s: gpu %lld cpu %lld bf %lld\n", cases[c].name,
				   (long long) gp, (long long) cp, (long long) bfp);
			return 1;
		}
		printf("%-17s %11lld %6.1f | %7.4f %7.4f %7.1f %7.1f %7.1f %7.1f %7.1f %6lld %5lld | %7.2f %7.1f | %7.3f %9.1f | %7.3f %6.2f %6.1f\n",
			   cases[c].name, (long long) gp, 2.0 * gp / n, gsec, cold, stats.plan_ms,
			   stats.alloc_ms, stats.upload_ms,
			   stats.index_ms, stats.estimate_ms, (long long) stats.batches,
			   (long long) stats.overflows, gp / gsec / 1e9, gp * 16.0 / gsec / 1e9,
			   csec, csec / gsec, bfms / 1e3, cases[c].seed_code_s,
			   cases[c].seed_code_s / gsec);
		fflush(stdout);
		gj_points_free(&p);
	}
	gj_gpu_release_cache();
	return 0;
}
