/*
 * gpu_check.c
 *		The GPU engine against the CPU engine (itself checked against brute
 *		force by test_core), on seeded random and adversarial cases: every
 *		kind of data of regress/datagen, 1-8 and 12/16 dims, eps from tiny to
 *		huge, automatic and forced tiny result buffers (so that batches
 *		overflow, split and rerun, and single points span several buffers).
 *		Pair sets must be equal, distances bit for bit.  Also: cancel mid-join,
 *		and GPU memory too small for the index (must fail cleanly with
 *		GJ_ERR_DEVICE_OOM, the CPU-fallback signal).  Joins of two sets
 *		(eps_join): the GPU with either set indexed, and its counts, against
 *		the CPU probe (checked against brute force by test_join).
 *
 *	gpu_check [seed]      last line: "gpu_check: N passed, N failed"
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gj_cuda.h"
#include "core_internal.h"
#include "datagen.h"
#include "pairset.h"

static int	passed = 0;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int	failed = 0;

/* CPU engine result of p (a sorted copy is used; p is untouched). */
static void
cpu_pairs(const gj_points *p, double eps, gj_pairset *out)
{
	gj_points	c;
	gj_grid		g;
	gj_cpu_selfjoin *j;
	gj_chunk   *ch;
	gj_status	st;

	gj_points_init(&c, p->dims);
	gj_points_reserve(&c, p->n > 0 ? p->n : 1);
	for (int64_t i = 0; i < p->n; i++)
		gj_points_push(&c, p->ids[i], p->x + i * p->dims);
	if (gj_grid_build(&g, &c, eps * eps) != GJ_OK ||
		gj_cpu_selfjoin_start(&g, &c, 0, &j) != GJ_OK)
	{
		fprintf(stderr, "cpu engine failed to start\n");
		exit(2);
	}
	while ((st = gj_engine_next(GJ_ENGINE(j), 100, &ch)) == GJ_OK || st == GJ_AGAIN)
	{
		if (st == GJ_AGAIN)
			continue;
		for (int k = 0; k < ch->n; k++)
			gj_pairset_add(out, ch->a[k], ch->b[k], ch->dist[k]);
		gj_engine_release(GJ_ENGINE(j), ch);
	}
	gj_engine_free(GJ_ENGINE(j));
	gj_grid_free(&g);
	gj_points_free(&c);
}

/* GPU engine result of p; returns its status. */
static gj_status
gpu_pairs(const gj_points *p, double eps, int64_t batch_pairs, gj_pairset *out,
		  gj_gpu_stats *stats, char *err, size_t errlen)
{
	gj_gpu_options opt = {0, batch_pairs, 0};
	gj_gpu_selfjoin *j;
	gj_chunk   *ch;
	gj_status	st;

	st = gj_gpu_selfjoin_start(p, eps * eps, &opt, &j, err, errlen);
	if (st != GJ_OK)
		return st;
	while ((st = gj_engine_next(GJ_ENGINE(j), 100, &ch)) == GJ_OK || st == GJ_AGAIN)
	{
		if (st == GJ_AGAIN)
			continue;
		for (int k = 0; k < ch->n; k++)
			gj_pairset_add(out, ch->a[k], ch->b[k], ch->dist[k]);
		gj_engine_release(GJ_ENGINE(j), ch);
	}
	gj_gpu_selfjoin_stats(j, stats);
	if (st != GJ_DONE)
		snprintf(err, errlen, "%s", gj_gpu_selfjoin_error(j));
	gj_engine_free(GJ_ENGINE(j));
	return st == GJ_DONE ? GJ_OK : st;
}

static void
check(const char *name, uint64_t seed, const gj_points *p, double eps,
	  int64_t batch_pairs)
{
	gj_pairset	want = {0},
				got = {0};
	gj_gpu_stats stats;
	char		err[256] = "";
	const char *why = NULL;
	int64_t		at = -1;
	gj_status	st;

	double		t0 = now();

	memset(&stats, 0, sizeof(stats));
	cpu_pairs(p, eps, &want);
	st = gpu_pairs(p, eps, batch_pairs, &got, &stats, err, sizeof(err));
	if (getenv("GJ_VERBOSE"))
		printf("case %s n=%lld dims=%d eps=%g batch=%lld: %lld pairs, %lld batches, %lld overflows, %.3f s\n",
			   name, (long long) p->n, p->dims, eps, (long long) batch_pairs,
			   (long long) got.n, (long long) stats.batches,
			   (long long) stats.overflows, now() - t0);
	if (st != GJ_OK)
		why = gj_status_name(st);
	else
		why = gj_pairset_diff(&want, &got, &at);
	if (why == NULL)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s seed=%llu n=%lld dims=%d eps=%.17g batch=%lld: %s %s "
			   "(cpu %lld pairs, gpu %lld; %lld batches, %lld overflows)\n",
			   name, (unsigned long long) seed, (long long) p->n, p->dims, eps,
			   (long long) batch_pairs, why, err, (long long) want.n,
			   (long long) got.n, (long long) stats.batches,
			   (long long) stats.overflows);
		gj_pairset_print_at("cpu", &want, "gpu", &got, at);
	}
	gj_pairset_free(&want);
	gj_pairset_free(&got);
}

static void
check_kind(gj_kind kind, const char *name, uint64_t seed, int64_t n, int dims,
		   double eps, int64_t batch_pairs)
{
	gj_points	p;

	gj_gen_points(&p, kind, n, dims, seed);
	check(name, seed, &p, eps, batch_pairs);
	gj_points_free(&p);
}

/* The shared hand-made boundary sets (datagen.c), with and without tiny buffers. */
static void
check_boundaries(void)
{
	gj_points	p;
	const char *name;
	double		eps[GJ_GEN_MAX_EPS];
	int			neps;
	int64_t		batches[] = {0, 100};

	for (int b = 0; b < 2; b++)
		for (int k = 0; gj_gen_boundary_case(k, &p, &name, eps, &neps); k++)
		{
			for (int e = 0; e < neps; e++)
				check(name, 0, &p, eps[e], batches[b]);
			gj_points_free(&p);
		}
}

/* Cancel after the first chunk: free must return promptly. */
static void
check_cancel(uint64_t seed)
{
	gj_points	p;
	gj_gpu_options opt = {0, 1 << 16, 0};
	gj_gpu_selfjoin *j;
	gj_chunk   *ch;
	gj_status	st;
	char		err[256];

	gj_gen_points(&p, GJ_GEN_ONE_CELL, 200000, 2, seed);
	st = gj_gpu_selfjoin_start(&p, 1.0 * 1.0, &opt, &j, err, sizeof(err));
	if (st != GJ_OK)
	{
		failed++;
		printf("FAIL cancel: start %s %s\n", gj_status_name(st), err);
		gj_points_free(&p);
		return;
	}
	do
		st = gj_engine_next(GJ_ENGINE(j), 100, &ch);
	while (st == GJ_AGAIN);
	if (st == GJ_OK)
	{
		gj_engine_release(GJ_ENGINE(j), ch);
		passed++;
	}
	else
	{
		failed++;
		printf("FAIL cancel: no first chunk (%s)\n", gj_status_name(st));
	}
	gj_engine_free(GJ_ENGINE(j));	/* 2e10 pairs still to come */
	gj_points_free(&p);
}

/* A memory limit below the index size: GJ_ERR_DEVICE_OOM, nothing leaked. */
static void
check_oom(uint64_t seed)
{
	gj_points	p;
	gj_gpu_options opt = {1 << 20, 0, 0};
	gj_gpu_selfjoin *j = NULL;
	gj_status	st;
	char		err[256];

	gj_gen_points(&p, GJ_GEN_UNIFORM, 500000, 2, seed);
	st = gj_gpu_selfjoin_start(&p, 0.5 * 0.5, &opt, &j, err, sizeof(err));
	if (st == GJ_ERR_DEVICE_OOM && j == NULL)
		passed++;
	else
	{
		failed++;
		printf("FAIL oom: got %s\n", gj_status_name(st));
		gj_engine_free(GJ_ENGINE(j));
	}
	gj_points_free(&p);
}

/* --- two sets ------------------------------------------------------------- */

/* Ordered rows (r, s) as one key: (1, 2) and (2, 1) stay different rows. */
static void
add_rs(gj_pairset *s, int64_t r, int64_t sid, double d)
{
	gj_pairset_add(s, 0, r * 4294967296LL + sid, d);
}

/* Every row of an engine into out (rows (r, s) as add_rs keys); its status. */
static gj_status
drain(gj_engine *e, gj_pairset *out)
{
	gj_chunk   *ch;
	gj_status	st;

	while ((st = gj_engine_next(e, 100, &ch)) == GJ_OK || st == GJ_AGAIN)
	{
		if (st == GJ_AGAIN)
			continue;
		for (int k = 0; k < ch->n; k++)
			add_rs(out, ch->a[k], ch->b[k], ch->dist[k]);
		gj_engine_release(e, ch);
	}
	return st == GJ_DONE ? GJ_OK : st;
}

/*
 * r joined with s: the CPU probe over s's grid against the GPU with s
 * indexed and with r indexed (rows swapped back), and the GPU's counts
 * against the CPU's.
 */
static void
check_join(const char *name, uint64_t seed, const gj_points *r, const gj_points *s,
		   double eps, int64_t batch_pairs)
{
	gj_points	c;
	gj_grid		g;
	gj_probe_options po;
	gj_cpu_probe *pj;
	gj_pairset	want = {0};
	int32_t    *want_n = calloc(r->n + 1, sizeof(int32_t));
	int32_t    *got_n = calloc(r->n + 1, sizeof(int32_t));
	gj_status	st;

	gj_points_copy(&c, s, s->n);
	memset(&po, 0, sizeof(po));
	po.queries = r;
	if (gj_grid_build(&g, &c, eps * eps) != GJ_OK ||
		gj_cpu_probe_start(&g, &c, eps * eps, &po, 0, &pj) != GJ_OK ||
		drain(GJ_ENGINE(pj), &want) != GJ_OK ||
		gj_cpu_count_queries(&g, &c, r, 0, want_n) != GJ_OK)
	{
		fprintf(stderr, "cpu join failed\n");
		exit(2);
	}
	gj_engine_free(GJ_ENGINE(pj));

	for (int swap = 0; swap <= 1; swap++)
	{
		gj_gpu_options opt = {0, batch_pairs, 0};
		gj_gpu_selfjoin *j;
		gj_pairset	got = {0};
		char		err[256] = "";
		const char *why;
		int64_t		at = -1;

		st = gj_gpu_join_start(swap ? r : s, swap ? s : r, eps * eps, swap, &opt, &j,
							   err, sizeof(err));
		if (st == GJ_OK)
		{
			st = drain(GJ_ENGINE(j), &got);
			if (st != GJ_OK)
				snprintf(err, sizeof(err), "%s", gj_gpu_selfjoin_error(j));
			gj_engine_free(GJ_ENGINE(j));
		}
		why = st != GJ_OK ? gj_status_name(st) : gj_pairset_diff(&want, &got, &at);
		if (why == NULL)
			passed++;
		else
		{
			failed++;
			printf("FAIL join %s seed=%llu r=%lld s=%lld dims=%d eps=%.17g index=%s batch=%lld: "
				   "%s %s (cpu %lld rows, gpu %lld)\n", name, (unsigned long long) seed,
				   (long long) r->n, (long long) s->n, r->dims, eps, swap ? "r" : "s",
				   (long long) batch_pairs, why, err, (long long) want.n, (long long) got.n);
			gj_pairset_print_at("cpu", &want, "gpu", &got, at);
		}
		gj_pairset_free(&got);
	}
	{
		gj_gpu_density_info gi;
		char		err[256] = "";
		int64_t		bad = -1;

		st = gj_gpu_join_counts(s, r, eps * eps, NULL, got_n, &gi, err, sizeof(err));
		for (int64_t i = 0; st == GJ_OK && i < r->n && bad < 0; i++)
			if (got_n[i] != want_n[i])
				bad = i;
		if (st == GJ_OK && bad < 0)
			passed++;
		else
		{
			failed++;
			printf("FAIL join counts %s seed=%llu r=%lld s=%lld dims=%d eps=%.17g: %s %s\n",
				   name, (unsigned long long) seed, (long long) r->n, (long long) s->n,
				   r->dims, eps, st != GJ_OK ? gj_status_name(st) : "a count differs", err);
			if (bad >= 0)
				printf("  r row %lld: cpu %d, gpu %d\n", (long long) bad, want_n[bad], got_n[bad]);
		}
	}
	gj_pairset_free(&want);
	gj_grid_free(&g);
	gj_points_free(&c);
	free(want_n);
	free(got_n);
}

/* r and s of one kind, r wider than s (beyond its grid on every side). */
static void
check_join_kind(gj_kind kind, const char *name, uint64_t seed, int64_t nr, int64_t ns,
				int dims, double eps, int64_t batch_pairs)
{
	gj_points	r,
				s;

	gj_gen_points(&r, kind, nr, dims, seed);
	gj_gen_points(&s, kind, ns, dims, seed + 7777);
	for (int64_t i = 0; i < r.n * dims; i++)
		r.x[i] = r.x[i] * 1.3 - 15.0;
	check_join(name, seed, &r, &s, eps, batch_pairs);
	gj_points_free(&r);
	gj_points_free(&s);
}

/* The boundary sets cut in two: pairs exactly eps apart across the sets. */
static void
check_join_boundaries(void)
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
		for (int e = 0; e < neps; e++)
			check_join(name, 0, &r, &s, eps[e], 100);
		gj_points_free(&r);
		gj_points_free(&s);
		gj_points_free(&p);
	}
}

int
main(int argc, char **argv)
{
	uint64_t	seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261121;
	gj_cuda_device_info info;
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
	static const int dim_list[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16};
	static const double scales[] = {1e-9, 0.5, 1.0, 3.0, 1e6};
	static const int64_t batch_list[] = {0, 64, 4096};
	/* GJ_GPU_CHECK_QUICK: every 7th case, no large ones (for compute-sanitizer) */
	int			quick = getenv("GJ_GPU_CHECK_QUICK") != NULL;
	int			ncase = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (gj_cuda_probe(&info) != GJ_OK)
	{
		printf("gpu_check: no usable GPU: %s\n", info.error);
		printf("gpu_check: 0 passed, 1 failed\n");
		return 1;
	}
	printf("gpu_check: %s, %d SMs, compute %d.%d; base seed %llu\n", info.name,
		   info.sm_count, info.major, info.minor, (unsigned long long) seed);

	for (int k = 0; k < (int) (sizeof(kinds) / sizeof(kinds[0])); k++)
		for (int d = 0; d < (int) (sizeof(dim_list) / sizeof(dim_list[0])); d++)
			for (int s = 0; s < 5; s++)
			{
				int			dims = dim_list[d];
				int64_t		n = 1000 + (int64_t) (seed % 3000);
				double		eps = gj_gen_typical_eps(kinds[k].kind, n, dims, 4.0) * scales[s];

				/* tiny buffers only where pairs are few: launches stay bounded */
				int64_t		batch = s <= 2 ? batch_list[(k + d + s) % 3] : (s == 3 ? 4096 : 0);

				if (!quick || ncase % 7 == 0)
					check_kind(kinds[k].kind, kinds[k].name, seed, n, dims, eps, batch);
				ncase++;
				seed++;
			}
	for (int k = 0; k < (int) (sizeof(kinds) / sizeof(kinds[0])); k++)
		for (int d = 0; d < (int) (sizeof(dim_list) / sizeof(dim_list[0])); d++, seed++)
		{
			int			dims = dim_list[d];
			int64_t		nr = 500 + (int64_t) (seed % 2000),
						ns = 2500 - nr;
			double		eps = gj_gen_typical_eps(kinds[k].kind, ns, dims, 4.0);

			if (!quick || (k + d) % 7 == 0)
				check_join_kind(kinds[k].kind, kinds[k].name, seed, nr, ns, dims, eps,
								batch_list[(k + d) % 3]);
		}
	check_join_boundaries();
	if (quick)
	{
		check_boundaries();
		check_oom(seed++);
		gj_gpu_release_cache();
		printf("gpu_check: %d passed, %d failed\n", passed, failed);
		return failed == 0 ? 0 : 1;
	}
	/* large: many batches, skew, one dense cell spanning many buffers */
	check_kind(GJ_GEN_UNIFORM, "uniform-200k", seed++, 200000, 2,
			   gj_gen_typical_eps(GJ_GEN_UNIFORM, 200000, 2, 30.0), 0);
	check_kind(GJ_GEN_UNIFORM, "uniform-200k-small-batches", seed++, 200000, 2,
			   gj_gen_typical_eps(GJ_GEN_UNIFORM, 200000, 2, 30.0), 50000);
	check_kind(GJ_GEN_EXPONENTIAL, "expo-200k", seed++, 200000, 2,
			   gj_gen_typical_eps(GJ_GEN_EXPONENTIAL, 200000, 2, 50.0), 100000);
	check_kind(GJ_GEN_ONE_CELL, "one-cell-5k", seed++, 5000, 3, 1.0, 1 << 16);
	check_kind(GJ_GEN_UNIFORM, "uniform-6d-100k", seed++, 100000, 6,
			   gj_gen_typical_eps(GJ_GEN_UNIFORM, 100000, 6, 10.0), 0);
	check_join_kind(GJ_GEN_UNIFORM, "join-uniform-300k-50k", seed++, 300000, 50000, 2,
					gj_gen_typical_eps(GJ_GEN_UNIFORM, 50000, 2, 10.0), 0);
	check_join_kind(GJ_GEN_CLUSTERS, "join-clusters-6d-small-batches", seed++, 40000, 60000, 6,
					gj_gen_typical_eps(GJ_GEN_CLUSTERS, 60000, 6, 10.0), 20000);
	check_boundaries();
	check_cancel(seed++);
	check_oom(seed++);
	gj_gpu_release_cache();

	printf("gpu_check: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
