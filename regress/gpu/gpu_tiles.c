/*
 * gpu_tiles.c
 *		The GPU tile join (kernels/tiles.cu) against the CPU tile join
 *		(itself checked against brute force by test_tiles), and its timings.
 *
 *	gpu_tiles check [seed]   last line "gpu_tiles: N passed, N failed"
 *	gpu_tiles bench [what]   the benchmark table (what: syn, embed, all)
 *
 * check: the tensor core's measured error on adversarial rows against
 * the filter's assumed bound; every kind of data of test_tiles from 4 to
 * 16,000 dimensions, eps for about 0, 1 and 10 neighbours and everything,
 * as ids and as rows, with the filter and without, with tiny result
 * buffers (batches split and rerun); cosine rows; the per-row shapes with
 * the GPU as their pair source; cancel; a memory limit too small.  Pair
 * sets must be equal, distances bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_bench.h"
#include "core_internal.h"
#include "datagen.h"
#include "pairset.h"

static int	passed = 0;
static int	failed = 0;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
result(int ok, const char *what, const char *name, uint64_t seed, const gj_points *p,
	   double eps2, const char *detail)
{
	if (ok)
	{
		passed++;
		return;
	}
	failed++;
	printf("FAIL %s %s seed=%llu n=%lld dims=%d eps2=%.17g: %s\n", what, name,
		   (unsigned long long) seed, (long long) p->n, p->dims, eps2, detail);
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* A squared radius for about nb neighbours a row (as test_tiles.c). */
static double
eps2_for(const gj_points *p, double nb)
{
	int64_t		ns = p->n < 40 ? p->n : 40,
				m = 0,
				at;
	double	   *d = malloc(sizeof(double) * (ns * p->n + 1));
	double		e;

	for (int64_t s = 0; s < ns; s++)
		for (int64_t j = 0, i = s * (p->n / ns); j < p->n; j++)
			if (j != i)
				d[m++] = gj_sqdist(p->x + i * p->dims, p->x + j * p->dims, p->dims);
	qsort(d, m, sizeof(double), cmp_double);
	at = (int64_t) (nb / (double) (p->n - 1) * (double) m);
	at = at < 0 ? 0 : at >= m ? m - 1 : at;
	e = m > 0 ? d[at] : 1.0;
	free(d);
	return e;
}

/* Drain an engine into a pair set (rows mapped to ids); its status. */
static gj_status
drain(gj_engine *e, gj_pairset *out, int rows, const gj_points *p)
{
	gj_status	st;
	gj_chunk   *c;

	while ((st = gj_engine_next(e, 100, &c)) == GJ_OK || st == GJ_AGAIN)
	{
		if (st == GJ_AGAIN)
			continue;
		for (int k = 0; k < c->n; k++)
		{
			if (rows)
				gj_pairset_add(out, p->ids[c->a[k]], p->ids[c->b[k]], c->dist[k]);
			else
				gj_pairset_add(out, c->a[k], c->b[k], c->dist[k]);
		}
		gj_engine_release(e, c);
	}
	return st == GJ_DONE ? GJ_OK : st;
}

static gj_status
cpu_pairs(const gj_points *p, double eps2, gj_pairset *out)
{
	gj_tiles_options o = {eps2, 0, 0, 0};
	gj_cpu_tiles *j;
	gj_status	st = gj_cpu_tiles_start(p, &o, 0, &j);

	if (st != GJ_OK)
		return st;
	st = drain(GJ_ENGINE(j), out, 0, p);
	gj_engine_free(GJ_ENGINE(j));
	return st;
}

static gj_status
gpu_pairs(const gj_points *p, const gj_tiles_options *o, int64_t batch, int64_t slice,
		  gj_pairset *out, gj_gpu_tiles_info *info, char *err, size_t errlen)
{
	gj_gpu_options g = {.batch_pairs = batch, .slice_rows = slice};
	gj_gpu_tiles *j;
	gj_status	st = gj_gpu_tiles_start(p, o, &g, &j, err, errlen);

	if (st != GJ_OK)
		return st;
	st = drain(GJ_ENGINE(j), out, o->emit_rows, p);
	gj_gpu_tiles_stats(j, info);
	if (st != GJ_OK)
		snprintf(err, errlen, "%s", gj_gpu_tiles_error(j));
	gj_engine_free(GJ_ENGINE(j));
	return st;
}

/* Block pairs the GPU's index skipped, over every case: must not stay 0. */
static int64_t skipped_total = 0;

/*
 * GPU against CPU on p at eps2: as ids, as rows, unfiltered, small
 * buffers, and with the index (prune) on p as given and on p sorted into
 * blocks (as the SQL functions sort it), as ids and as rows; then in
 * slices of about a third of the rows (at least one block), as ids and as
 * sorted rows with the index.
 */
static void
check_join(const char *name, uint64_t seed, const gj_points *p, double eps2)
{
	gj_pairset	want = {0};
	gj_status	st = cpu_pairs(p, eps2, &want);
	gj_points	sorted;

	gj_points_copy(&sorted, p, p->n);
	if (gj_points_block_order(&sorted) != GJ_OK)
		exit(2);
	for (int v = 0; v < 9; v++)
	{
		gj_tiles_options o = {eps2, v == 1 || v == 6 || v == 8, 0, v == 2, v >= 4 && v != 7};
		const gj_points *q = v >= 5 && v != 7 ? &sorted : p;
		int64_t		batch = v == 3 ? 65536 : 0;
		int64_t		slice = v >= 7 ? (p->n / 3 > 128 ? p->n / 3 : 128) : 0;
		gj_pairset	got = {0};
		gj_gpu_tiles_info info;
		char		err[256] = "",
					detail[512];
		const char *why = NULL;
		int64_t		at = -1;
		static const char *what[] = {"ids", "rows", "no-filter", "small-buffers",
		"blocks", "blocks-sorted", "blocks-sorted-rows", "slices", "slices-blocks-sorted-rows"};

		memset(&info, 0, sizeof(info));
		if (st == GJ_OK)
			st = gpu_pairs(q, &o, batch, slice, &got, &info, err, sizeof(err));
		skipped_total += info.units_skipped;
		why = st != GJ_OK ? gj_status_name(st) : gj_pairset_diff(&want, &got, &at);
		if (why == NULL && slice > 0 && p->n > slice + 128 && info.slices < 2)
			why = "not sliced";
		snprintf(detail, sizeof(detail), "%s: %s %s (cpu %lld pairs, gpu %lld, filter %d, %lld batches, %lld overflows, %lld of %lld units skipped, %lld slices)",
				 what[v], why ? why : "", err, (long long) want.n, (long long) got.n,
				 info.filter, (long long) info.batches, (long long) info.overflows,
				 (long long) info.units_skipped, (long long) info.units,
				 (long long) info.slices);
		result(why == NULL, "tiles", name, seed, p, eps2, detail);
		if (why != NULL)
			gj_pairset_print_at("cpu", &want, "gpu", &got, at);
		gj_pairset_free(&got);
	}
	gj_points_free(&sorted);
	gj_pairset_free(&want);
}

/*
 * Two sets (eps_join by tiles, gj_gen_two_sets: R rows [0, nr) of p, S the
 * rest or, with same, R again): the GPU against the CPU engine as ids, as
 * rows, unfiltered, with the index on each set sorted by R's model plan,
 * and in slices of about a quarter of the rows; every pair (R's, S's).
 */
static void
check_cross(const char *name, uint64_t seed, const gj_points *p, int64_t nr, int same,
			double eps2)
{
	gj_points	two[2];
	gj_pairset	want = {0};
	int64_t		ns;
	gj_tiles_options co = {.eps2 = eps2, .cross = 1, .split = nr};
	gj_cpu_tiles *cj;
	gj_status	cst;

	gj_gen_two_sets_sorted(two, p, nr, same, eps2, &ns);
	cst = gj_cpu_tiles_start(&two[0], &co, 0, &cj);
	if (cst == GJ_OK)
	{
		cst = drain(GJ_ENGINE(cj), &want, 0, &two[0]);
		gj_engine_free(GJ_ENGINE(cj));
	}
	for (int v = 0; v < 6; v++)
	{
		gj_tiles_options o = {.eps2 = eps2, .emit_rows = v == 1 || v == 4, .no_filter = v == 2,
		.prune = v >= 3, .cross = 1, .split = nr};
		const gj_points *q = &two[v >= 3 ? 1 : 0];
		int64_t		slice = v == 5 ? (p->n / 4 > 128 ? p->n / 4 : 128) : 0;
		gj_pairset	got = {0};
		gj_gpu_tiles_info info;
		gj_gpu_tiles *j = NULL;
		char		err[256] = "",
					detail[512];
		const char *why = NULL;
		int64_t		at = -1,
					wrong = 0;
		gj_status	st = cst;
		static const char *what[] = {"cross-ids", "cross-rows", "cross-no-filter",
		"cross-blocks-sorted", "cross-blocks-sorted-rows", "cross-slices-blocks-sorted"};

		memset(&info, 0, sizeof(info));
		if (st == GJ_OK)
		{
			gj_gpu_options g = {.slice_rows = slice};

			st = gj_gpu_tiles_start(q, &o, &g, &j, err, sizeof(err));
			if (st == GJ_OK)
				st = gj_pairset_drain_cross(GJ_ENGINE(j), &got, o.emit_rows, q, nr, &wrong);
			if (j != NULL)
			{
				gj_gpu_tiles_stats(j, &info);
				if (st != GJ_OK && err[0] == '\0')
					snprintf(err, sizeof(err), "%s", gj_gpu_tiles_error(j));
				gj_engine_free(GJ_ENGINE(j));
			}
		}
		skipped_total += info.units_skipped;
		why = st != GJ_OK ? gj_status_name(st) : wrong > 0 ? "pairs not (R's, S's)" :
			gj_pairset_diff(&want, &got, &at);
		if (why == NULL && slice > 0 && p->n > 2 * slice + 256 && info.windows < 2)
			why = "not sliced";
		snprintf(detail, sizeof(detail), "%s: %s %s (nr %lld, ns %lld%s; cpu %lld pairs, gpu %lld, filter %d, %lld of %lld units skipped, %lld windows)",
				 what[v], why ? why : "", err, (long long) nr, (long long) ns, same ? ", S = R" : "",
				 (long long) want.n, (long long) got.n, info.filter,
				 (long long) info.units_skipped, (long long) info.units, (long long) info.windows);
		result(why == NULL, "tiles", name, seed, p, eps2, detail);
		if (why != NULL && at >= 0)
			gj_pairset_print_at("cpu", &want, "gpu", &got, at);
		gj_pairset_free(&got);
	}
	gj_points_free(&two[0]);
	gj_points_free(&two[1]);
	gj_pairset_free(&want);
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

/* Rows with mixed signs and magnitudes whose products cancel: the worst for a sum. */
static void
check_gram(uint64_t seed)
{
	static const int dims_list[] = {8, 16, 64, 768, 4096};

	for (int d = 0; d < 5; d++)
	{
		gj_points	p;
		uint64_t	st = seed + d;
		double		worst = 0.0;
		char		err[256] = "",
					detail[300];
		gj_status	s;

		gj_points_init(&p, dims_list[d]);
		gj_points_reserve(&p, 1024);
		for (int64_t i = 0; i < 1024; i++)
		{
			double		row[4096];

			for (int k = 0; k < dims_list[d]; k++)
			{
				double		u = gj_rng_uniform(&st) - 0.5;

				/* magnitudes over 2^12, alternating signs: heavy cancellation */
				row[k] = ldexp(u, (int) (gj_rng_next(&st) % 13)) * ((k + i) % 2 ? 1 : -1);
			}
			gj_points_push(&p, i, row);
		}
		s = gj_gpu_tiles_gram_error(&p, &worst, err, sizeof(err));
		snprintf(detail, sizeof(detail), "measured %.3g x the float32 bound, the filter assumes 2 (%s)",
				 worst, err);
		printf("gram error, %d dims: %.3g x the float32 bound\n", dims_list[d], worst);
		result(s == GJ_OK && worst <= 1.0, "gram-error", "cancelling", seed, &p, 0, detail);
		gj_points_free(&p);
	}
}

/* A pair source on the GPU (rows), falling back to nothing: the check wants the GPU. */
typedef struct source_arg
{
	const gj_points *p;
	double		eps2;
	int			gpu;
	int			prune;
} source_arg;

static gj_status
start_source(void *arg, gj_engine **out)
{
	source_arg *s = arg;
	gj_tiles_options o = {s->eps2, 1, 0, 0, s->prune};
	char		err[256];

	if (s->gpu)
	{
		gj_gpu_tiles *j;
		gj_status	st = gj_gpu_tiles_start(s->p, &o, NULL, &j, err, sizeof(err));

		*out = st == GJ_OK ? GJ_ENGINE(j) : NULL;
		return st;
	}
	else
	{
		gj_cpu_tiles *j;
		gj_status	st = gj_cpu_tiles_start(s->p, &o, 0, &j);

		*out = st == GJ_OK ? GJ_ENGINE(j) : NULL;
		return st;
	}
}

/* Counts and DBSCAN from the GPU's pairs equal those from the CPU's. */
static void
check_shapes(const char *name, uint64_t seed, const gj_points *p, double eps2)
{
	int64_t		n = p->n;
	source_arg	ca = {p, eps2, 0, 0},
				ga = {p, eps2, 1, 1};
	gj_pair_source cs = {start_source, &ca, 0},
				gs = {start_source, &ga, 0};
	int32_t    *a = malloc(sizeof(int32_t) * (n + 1)),
			   *b = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *ka = malloc(n + 1),
			   *kb = malloc(n + 1);
	gj_status	s1 = gj_pairs_count(&cs, n, a),
				s2 = gj_pairs_count(&gs, n, b);

	result(s1 == GJ_OK && s2 == GJ_OK && memcmp(a, b, sizeof(int32_t) * n) == 0,
		   "shapes-count", name, seed, p, eps2, gj_status_name(s2));
	s1 = gj_pairs_dbscan(&cs, p, 4, a, ka);
	s2 = gj_pairs_dbscan(&gs, p, 4, b, kb);
	result(s1 == GJ_OK && s2 == GJ_OK && memcmp(a, b, sizeof(int32_t) * n) == 0 &&
		   memcmp(ka, kb, n) == 0, "shapes-dbscan", name, seed, p, eps2, gj_status_name(s2));
	free(a);
	free(b);
	free(ka);
	free(kb);
}

/* Stop a large join after its first chunk: back at once, nothing leaked; in slices too. */
static void
check_cancel(uint64_t seed, int64_t slice)
{
	gj_points	p;
	gj_tiles_options o = {1e300, 0, 0, 0};
	gj_gpu_options g = {.slice_rows = slice};
	gj_gpu_tiles *j;
	gj_chunk   *c;
	char		err[256] = "";
	gj_status	st;
	double		t0,
				t1;

	gj_gen_points(&p, GJ_GEN_UNIFORM, 200000, 64, seed);
	st = gj_gpu_tiles_start(&p, &o, &g, &j, err, sizeof(err));
	if (st == GJ_OK)
	{
		while ((st = gj_engine_next(GJ_ENGINE(j), 100, &c)) == GJ_AGAIN)
			;
		if (st == GJ_OK)
			gj_engine_release(GJ_ENGINE(j), c);
		t0 = now();
		gj_engine_free(GJ_ENGINE(j));	/* 2e10 pairs to come */
		t1 = now();
		printf("cancel%s: freed in %.1f ms\n", slice > 0 ? " (slices)" : "", (t1 - t0) * 1e3);
		if (st == GJ_OK && t1 - t0 > 1.0)
			st = GJ_ERR_ARG;
	}
	result(st == GJ_OK, slice > 0 ? "cancel-slices" : "cancel", "uniform", seed, &p, o.eps2, err);
	gj_points_free(&p);
}

static void
check_oom(uint64_t seed)
{
	gj_points	p;
	gj_tiles_options o = {1.0, 0, 0, 0};
	gj_gpu_options g = {1 << 20, 0, 0};
	gj_gpu_tiles *j;
	char		err[256] = "";
	gj_status	st;

	gj_gen_points(&p, GJ_GEN_UNIFORM, 100000, 64, seed);
	st = gj_gpu_tiles_start(&p, &o, &g, &j, err, sizeof(err));
	if (st == GJ_OK)
		gj_engine_free(GJ_ENGINE(j));
	result(st == GJ_ERR_DEVICE_OOM, "oom", "uniform", seed, &p, 1.0, err);
	gj_points_free(&p);
}

/*
 * Rows that do not fit a memory limit, but whose slices do: joined in
 * slices (many windows), with the same pairs as the CPU engine; as ids,
 * and as sorted rows with the index.
 */
static void
check_memory_slices(uint64_t seed)
{
	gj_points	p,
				sorted;
	gj_pairset	want = {0};
	gj_status	st;

	gj_gen_points(&p, GJ_GEN_CLUSTERS, 20000, 64, seed);
	gj_points_copy(&sorted, &p, p.n);
	gj_points_block_order(&sorted);
	{
		double		eps2 = eps2_for(&p, 10.0);

		st = cpu_pairs(&p, eps2, &want);
		for (int v = 0; v < 2; v++)
		{
			gj_tiles_options o = {eps2, v, 0, 0, v};
			gj_gpu_options g = {.memory_limit = (size_t) 40 << 20};
			gj_gpu_tiles *j = NULL;
			gj_gpu_tiles_info info;
			gj_pairset	got = {0};
			char		err[256] = "",
						detail[400];
			const char *why;
			int64_t		at = -1;
			gj_status	s2 = st;

			memset(&info, 0, sizeof(info));
			if (s2 == GJ_OK)
				s2 = gj_gpu_tiles_start(v ? &sorted : &p, &o, &g, &j, err, sizeof(err));
			if (s2 == GJ_OK)
			{
				s2 = drain(GJ_ENGINE(j), &got, o.emit_rows, v ? &sorted : &p);
				gj_gpu_tiles_stats(j, &info);
				if (s2 != GJ_OK)
					snprintf(err, sizeof(err), "%s", gj_gpu_tiles_error(j));
				gj_engine_free(GJ_ENGINE(j));
			}
			why = s2 != GJ_OK ? gj_status_name(s2) : gj_pairset_diff(&want, &got, &at);
			if (why == NULL && info.slices < 2)
				why = "not sliced";
			snprintf(detail, sizeof(detail), "%s, 40 MB: %s %s (cpu %lld pairs, gpu %lld, %lld slices of %lld rows, %lld windows)",
					 v ? "sorted rows, index" : "ids", why ? why : "", err,
					 (long long) want.n, (long long) got.n, (long long) info.slices,
					 (long long) info.slice_rows, (long long) info.windows);
			result(why == NULL, "memory-slices", "clusters", seed, &p, eps2, detail);
			printf("memory slices: %s\n", detail);
			if (why != NULL)
				gj_pairset_print_at("cpu", &want, "gpu", &got, at);
			gj_pairset_free(&got);
		}
	}
	gj_pairset_free(&want);
	gj_points_free(&sorted);
	gj_points_free(&p);
}

static int
check_main(uint64_t seed)
{
	static const int dim_list[] = {4, 8, 16, 33, 64, 128, 256, 768, 2000, 16000};
	/* GJ_GPU_CHECK_QUICK: every 5th case (for compute-sanitizer) */
	int			quick = getenv("GJ_GPU_CHECK_QUICK") != NULL;
	int			ncase = 0;

	check_gram(seed++);
	/* the filter rows: rows not a multiple of a warp's, dimensions past and within one tile */
	for (int c = 0; c < 8; c++)
	{
		static const int pd[] = {3, 37, 128, 130};
		char		name[64];
		gj_points	shape = {0};
		int			r = gj_bench_prep_check(1000 + 37 * c, pd[c % 4], c % 2, c / 4 == 0, seed++);

		snprintf(name, sizeof(name), "%d dims, %s centres, %s", pd[c % 4], c % 2 ? "block" : "one",
				 c / 4 == 0 ? "TF32" : "float32");
		shape.n = 1000 + 37 * c;
		shape.dims = pd[c % 4];
		result(r == 0, "filter-rows", name, seed, &shape, 0,
			   r == -1 ? "differs from the rule" : "no buffers");
	}
	for (int d = 0; d < (int) (sizeof(dim_list) / sizeof(dim_list[0])); d++)
		for (int k = 0; k < (int) (sizeof(kinds) / sizeof(kinds[0])); k++, seed++)
		{
			if (quick && ncase++ % 5 != 0)
				continue;
			{
			int			dims = dim_list[d];
			int64_t		n = dims <= 64 ? 3000 : dims <= 768 ? 1200 : dims <= 2000 ? 500 : 260;
			gj_points	p;
			double		e1,
						e10;

			gj_gen_points(&p, kinds[k].kind, n, dims, seed);
			e1 = eps2_for(&p, 1.0);
			e10 = eps2_for(&p, 10.0);
			check_join(kinds[k].name, seed, &p, e1 * 1e-6);
			check_join(kinds[k].name, seed, &p, e1);
			check_join(kinds[k].name, seed, &p, e10);
			if (kinds[k].kind == GJ_GEN_LATTICE_STEPS)
			{
				check_join(kinds[k].name, seed, &p, 0.25);
				check_join(kinds[k].name, seed, &p, 1.0);
			}
			if (n <= 1200)
				check_join(kinds[k].name, seed, &p, 1e300);
			if (dims <= 128)
				check_shapes(kinds[k].name, seed, &p, e10);
			/* two sets: R of odd size, S = R, a lone R row */
			check_cross(kinds[k].name, seed, &p, n / 3 + 1, 0, e1);
			check_cross(kinds[k].name, seed, &p, n - 200, 0, e10);
			check_cross(kinds[k].name, seed, &p, n / 2, 1, e10);
			check_cross(kinds[k].name, seed, &p, 1, 0, e10);
			gj_points_free(&p);
			}
		}
	{
		/* cosine: normalised clustered rows, 768 dims */
		gj_points	p;
		int64_t		nz;

		gj_gen_points(&p, GJ_GEN_CLUSTERS, 3000, 768, seed);
		gj_points_normalize(&p, &nz);
		check_join("cosine-768", seed, &p, 2 * 0.0005);
		check_join("cosine-768", seed, &p, 2 * 0.002);
		gj_points_free(&p);
		seed++;
	}
	if (!quick)
	{
		check_cancel(seed++, 0);
		check_cancel(seed++, 20000);
	}
	check_oom(seed++);
	check_memory_slices(seed++);
	gj_gpu_release_cache();
	{
		/* the index must have skipped block pairs somewhere, or it went untested */
		gj_points	none;

		gj_points_init(&none, 1);
		printf("index: %lld block pairs skipped on the GPU\n", (long long) skipped_total);
		result(skipped_total > 0, "index-skips", "all cases", 0, &none, 0, "no block pair skipped");
	}
	printf("gpu_tiles: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}

/* --- bench --------------------------------------------------------------- */

static int
cmp_dbl(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

static double eps_for(const gj_points *p, int nb);

/* The device's arithmetic rates, measured at the start of the benchmark. */
static gj_gpu_ceilings ceil_rate;

/* Pairs of a GPU run and its time (counting only); slice > 0: slices of that many rows. */
static double
time_gpu_sliced(const gj_points *p, double eps2, int prune, int64_t slice, int64_t *pairs,
				gj_gpu_tiles_info *info)
{
	gj_tiles_options o = {eps2, 1, 0, 0, prune};
	gj_gpu_options g = {.slice_rows = slice};
	gj_gpu_tiles *j;
	gj_chunk   *c;
	char		err[256];
	gj_status	st;
	double		t0 = now();

	*pairs = 0;
	st = gj_gpu_tiles_start(p, &o, &g, &j, err, sizeof(err));
	if (st != GJ_OK)
	{
		printf("gpu start: %s %s\n", gj_status_name(st), err);
		return -1;
	}
	while ((st = gj_engine_next(GJ_ENGINE(j), 100, &c)) == GJ_OK || st == GJ_AGAIN)
		if (st == GJ_OK)
		{
			*pairs += c->n;
			gj_engine_release(GJ_ENGINE(j), c);
		}
	gj_gpu_tiles_stats(j, info);
	gj_engine_free(GJ_ENGINE(j));
	return st == GJ_DONE ? now() - t0 : -1;
}

static double
time_gpu(const gj_points *p, double eps2, int prune, int64_t *pairs, gj_gpu_tiles_info *info)
{
	return time_gpu_sliced(p, eps2, prune, 0, pairs, info);
}

/*
 * Rows joined in slices (as when they do not fit the GPU) against all at
 * once: Syn16D2M in 2, 4 and 8 slices, brute force, and clustered rows
 * sorted into blocks with the index; best of two runs each.
 */
static void
bench_slices(void)
{
	static const int parts[] = {1, 2, 4, 8};
	gj_points	p,
				c;
	double		ce;

	gj_gen_points(&p, GJ_GEN_EXPONENTIAL, 2000000, 16, 1);
	gj_gen_points(&c, GJ_GEN_CLUSTERS, 2000000, 16, 3);
	ce = eps_for(&c, 10);
	gj_points_block_order(&c);
	printf("\n| case | slices | windows | rows a slice | pairs | GPU s | upload s | / all at once |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (int set = 0; set < 3; set++)
	{
		const gj_points *q = set < 2 ? &p : &c;
		double		eps = set == 0 ? 0.03 : set == 1 ? 0.04 : ce;
		double		base = 0.0;
		int64_t		base_pairs = 0;

		for (int k = 0; k < 4; k++)
		{
			int64_t		slice = parts[k] == 1 ? 0 : (q->n + parts[k] - 1) / parts[k];
			int64_t		pairs = 0;
			gj_gpu_tiles_info info;
			double		t = -1;

			memset(&info, 0, sizeof(info));
			for (int r = 0; r < 2; r++)
			{
				double		t1 = time_gpu_sliced(q, eps * eps, set == 2, slice, &pairs, &info);

				t = t < 0 || (t1 >= 0 && t1 < t) ? t1 : t;
			}
			if (k == 0)
			{
				base = t;
				base_pairs = pairs;
			}
			printf("| %s eps %.3g | %lld | %lld | %lld | %lld%s | %.3f | %.3f | %.2f |\n",
				   set < 2 ? "Syn16D2M" : "Clusters16D2M sorted, index", eps,
				   (long long) info.slices, (long long) info.windows,
				   (long long) info.slice_rows, (long long) pairs,
				   pairs == base_pairs ? "" : " DIFFERENT", t, info.upload_ms / 1e3,
				   base > 0 ? t / base : 0.0);
		}
	}
	gj_points_free(&p);
	gj_points_free(&c);
}

static double
time_cpu(const gj_points *p, double eps2, int64_t *pairs)
{
	gj_tiles_options o = {eps2, 1, 0, 0};
	gj_cpu_tiles *j;
	gj_chunk   *c;
	gj_status	st;
	double		t0 = now();

	*pairs = 0;
	if (gj_cpu_tiles_start(p, &o, 0, &j) != GJ_OK)
		return -1;
	while ((st = gj_engine_next(GJ_ENGINE(j), 100, &c)) == GJ_OK || st == GJ_AGAIN)
		if (st == GJ_OK)
		{
			*pairs += c->n;
			gj_engine_release(GJ_ENGINE(j), c);
		}
	gj_engine_free(GJ_ENGINE(j));
	return now() - t0;
}

/*
 * One case: the GPU tile join of n rows by brute force and by the blocks'
 * index (the host sort of the rows included, as in SQL), the CPU tile
 * join of a subset of m rows scaled by (n/m)^2 (brute force: exactly
 * quadratic), and the arithmetic limits of every pair: TF32 products (2
 * flops a pair-dimension at 495 TFLOP/s dense), the Gram form in FP64 on
 * the tensor cores (2 flops a pair-dimension at 67 TFLOP/s) and the
 * float64 rule (sub, mul, add: 3 instructions a pair-dimension at 33.5e12
 * a second on 132 SMs at 1.98 GHz).
 */
static void
bench_case(const char *name, const gj_points *p, double eps, int64_t m, int cosine)
{
	double		eps2 = cosine ? 2 * eps : eps * eps;
	double		pairs_all = 0.5 * (double) p->n * (double) (p->n - 1);
	int64_t		gp = 0,
				bp = 0,
				cp = 0;
	gj_gpu_tiles_info info,
				binfo;
	double		tg,
				tg2,
				tb,
				tsort,
				tc,
				tf32 = pairs_all * 2.0 * ((p->dims + 7) / 8 * 8) / ceil_rate.tf32_tensor,
				gram64 = pairs_all * 2.0 * p->dims / ceil_rate.fp64_tensor,
				fp64 = pairs_all * 3.0 * p->dims / (ceil_rate.fp64_fma / 2);
	gj_points	sub,
				sorted;

	memset(&info, 0, sizeof(info));
	memset(&binfo, 0, sizeof(binfo));
	tg = time_gpu(p, eps2, 0, &gp, &info);
	tg2 = time_gpu(p, eps2, 0, &gp, &info);
	tg = tg2 >= 0 && tg2 < tg ? tg2 : tg;
	gj_points_copy(&sorted, p, p->n);
	tsort = now();
	gj_points_block_order(&sorted);
	tsort = now() - tsort;
	tb = time_gpu(&sorted, eps2, 1, &bp, &binfo);
	tg2 = time_gpu(&sorted, eps2, 1, &bp, &binfo);
	tb = (tg2 >= 0 && tg2 < tb ? tg2 : tb) + tsort;
	gj_points_free(&sorted);
	gj_points_copy(&sub, p, m < p->n ? m : p->n);
	tc = time_cpu(&sub, eps2, &cp);
	tc *= pairs_all / (0.5 * (double) sub.n * (double) (sub.n - 1));
	printf("| %-24s | %10lld | %7.3f | %7.3f (sort %.3f) | %5.1f%% | %s | %8.1f | %6.1fx | %6.3f | %6.3f | %6.3f | %5.2f |\n",
		   name, (long long) gp, tg, tb, tsort,
		   binfo.units > 0 ? 100.0 * binfo.units_skipped / binfo.units : 0.0,
		   bp == gp ? "same" : "DIFFERENT", tc, tc / (tb < tg ? tb : tg), tf32, gram64, fp64,
		   (tb < tg ? tb : tg) / gram64);
	gj_points_free(&sub);
}

/* eps giving about nb (<= 32) neighbours a row: the median over 40 rows of their nb-th. */
static double
eps_for(const gj_points *p, int nb)
{
	double		kth[40];

	for (int a = 0; a < 40; a++)
	{
		const double *q = p->x + (a * (p->n / 40)) * p->dims;
		double		best[33];
		int			nbest = 0;

		for (int64_t i = 0; i < p->n; i++)
		{
			double		d = gj_sqdist(q, p->x + i * p->dims, p->dims);
			int			at;

			if (nbest == nb + 1 && d >= best[nb])
				continue;
			at = nbest < nb + 1 ? nbest++ : nb;
			while (at > 0 && best[at - 1] > d)
			{
				best[at] = best[at - 1];
				at--;
			}
			best[at] = d;
		}
		kth[a] = best[nbest - 1];	/* itself is the first */
	}
	qsort(kth, 40, sizeof(double), cmp_dbl);
	return sqrt(kth[20]);
}

static int
bench_main(const char *what)
{
	int			all = strcmp(what, "all") == 0;
	char		err[256] = "";

	if (gj_gpu_measure_ceilings(&ceil_rate, err, sizeof(err)) != GJ_OK)
	{
		printf("ceilings: %s\n", err);
		return 1;
	}
	printf("measured ceilings: FP64 mma %.1f TFLOP/s (m8n8k4 %.1f, m16n8k16 %.1f), TF32 mma.sync %.1f TFLOP/s, FP64 FMA %.1f TFLOP/s\n"
		   "(limits below: TF32 products 2 flops a pair-dimension, dimensions padded to 8; FP64 Gram "
		   "2 flops a pair-dimension on the FP64 mma; FP64 rule sub, mul, add: 3 instructions a "
		   "pair-dimension at the FMA instruction rate)\n\n",
		   ceil_rate.fp64_tensor / 1e12, ceil_rate.fp64_mma_m8n8k4 / 1e12,
		   ceil_rate.fp64_mma_m16n8k16 / 1e12, ceil_rate.tf32_tensor / 1e12,
		   ceil_rate.fp64_fma / 1e12);
	printf("| case | pairs | GPU brute s | GPU blocks s | units skipped | same | CPU s (scaled) | GPU vs CPU | TF32 limit s | FP64 Gram limit s | FP64 rule limit s | best / FP64 Gram |\n");
	printf("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	if (all || strstr(what, "syn") != NULL)
	{
		static const struct
		{
			int			dims;
			double		eps[3];
		}			syn[] = {{16, {0.03, 0.04, 0.05}}, {32, {0.08, 0.09, 0.10}},
		{64, {0.15, 0.16, 0.17}}};

		/* "syn16": only the 16 dimensions */
		for (int s = 0; s < (strstr(what, "syn16") != NULL ? 1 : 3); s++)
		{
			gj_points	p;

			gj_gen_points(&p, GJ_GEN_EXPONENTIAL, 2000000, syn[s].dims, 1);
			for (int e = 0; e < 3; e++)
			{
				char		name[64];

				snprintf(name, sizeof(name), "Syn%dD2M eps %.2f", syn[s].dims, syn[s].eps[e]);
				bench_case(name, &p, syn[s].eps[e], 200000, 0);
			}
			gj_points_free(&p);
		}
	}
	if (all || strstr(what, "clusters") != NULL)
	{
		static const int dl[] = {16, 64};

		for (int s = 0; s < 2; s++)
		{
			gj_points	p;
			char		name[64];
			double		e;

			gj_gen_points(&p, GJ_GEN_CLUSTERS, 2000000 / (s + 1), dl[s], 3);
			e = eps_for(&p, 10);
			snprintf(name, sizeof(name), "Clusters%dD%s eps %.3g", dl[s], s ? "1M" : "2M", e);
			bench_case(name, &p, e, 100000, 0);
			gj_points_free(&p);
		}
	}
	if (all || strstr(what, "embed") != NULL)
	{
		gj_points	p;
		int64_t		nz;

		gj_gen_points(&p, GJ_GEN_CLUSTERS, 100000, 768, 2);
		gj_points_normalize(&p, &nz);
		bench_case("100K x 768 cosine 0.01", &p, 0.01, 20000, 1);
		gj_points_free(&p);
	}
	if (all || strstr(what, "slices") != NULL)
		bench_slices();
	gj_gpu_release_cache();
	return 0;
}

/*
 * 20,000 rows of 16,000 dimensions (pgvector's largest) on both engines:
 * the tile join's pairs, and kNN of 500 of the rows against all of them
 * (brute force with the filter on the GPU), equal to the CPU's.
 */
static int
big_main(void)
{
	gj_points	p,
				q;
	gj_pairset	want = {0},
				got = {0};
	gj_tiles_options o = {0, 0, 0, 0};
	gj_gpu_tiles_info info;
	gj_knn_options ko = {.k = 10, .method = GJ_KNN_BRUTE};
	gj_gpu_options go = {0, 0, 0, 0};
	gj_cpu_knn *ck;
	gj_gpu_knn *gk;
	gj_chunk   *c;
	char		err[256] = "";
	const char *why;
	double		t0,
				tc,
				tg;
	int64_t		at = -1,
				nc = 0,
				ng = 0,
				differ = 0;
	gj_status	st;

	gj_gen_points(&p, GJ_GEN_CLUSTERS, 20000, 16000, 7);
	/* eps for about 3 neighbours a row, from 4 rows' distances to all */
	{
		double	   *d = malloc(sizeof(double) * 4 * p.n);
		int64_t		m = 0;

		for (int s = 0; s < 4; s++)
			for (int64_t j = 0; j < p.n; j++)
				if (j != s * 5000)
					d[m++] = gj_sqdist(p.x + (int64_t) s * 5000 * p.dims, p.x + j * p.dims, p.dims);
		qsort(d, m, sizeof(double), cmp_double);
		o.eps2 = d[(int64_t) (3.0 / (p.n - 1) * m)];
		free(d);
	}
	t0 = now();
	st = cpu_pairs(&p, o.eps2, &want);
	tc = now() - t0;
	t0 = now();
	if (st == GJ_OK)
		st = gpu_pairs(&p, &o, 0, 0, &got, &info, err, sizeof(err));
	tg = now() - t0;
	why = st != GJ_OK ? gj_status_name(st) : gj_pairset_diff(&want, &got, &at);
	printf("big tiles: 20000 x 16000, %lld pairs, cpu %.1f s, gpu %.1f s, filter %d: %s %s\n",
		   (long long) want.n, tc, tg, info.filter, why ? why : "equal", err);
	result(why == NULL && want.n > 0, "big-tiles", "clusters", 7, &p, o.eps2, why ? why : "");

	/* the same in slices of 5,000 rows (4,992, whole blocks: 5 slices, 15 windows), as beyond the GPU's memory */
	gj_pairset_free(&got);
	memset(&got, 0, sizeof(got));
	t0 = now();
	st = gpu_pairs(&p, &o, 0, 5000, &got, &info, err, sizeof(err));
	tg = now() - t0;
	why = st != GJ_OK ? gj_status_name(st) : gj_pairset_diff(&want, &got, &at);
	if (why == NULL && info.slices < 2)
		why = "not sliced";
	printf("big tiles in slices: %lld slices, %lld windows, gpu %.1f s (upload %.1f s): %s %s\n",
		   (long long) info.slices, (long long) info.windows, tg, info.upload_ms / 1e3,
		   why ? why : "equal", err);
	result(why == NULL, "big-tiles-slices", "clusters", 7, &p, o.eps2, why ? why : "");

	/* kNN: 500 queries (the first rows, moved a little) against all 20,000 */
	gj_points_copy(&q, &p, 500);
	for (int64_t i = 0; i < q.n * q.dims; i++)
		q.x[i] += 0.25;
	st = gj_cpu_knn_start(&p, NULL, &q, &ko, 0, &ck);
	if (st == GJ_OK)
		st = gj_gpu_knn_start(&p, &q, &ko, &go, &gk, err, sizeof(err));
	if (st == GJ_OK)
	{
		/* both lists in rank order, query by query: compare as they come */
		gj_pairset	a = {0},
					b = {0};

		while ((st = gj_engine_next(GJ_ENGINE(ck), 100, &c)) == GJ_OK || st == GJ_AGAIN)
			if (st == GJ_OK)
			{
				for (int k = 0; k < c->n; k++)
					gj_pairset_add(&a, c->a[k] * 100 + c->rank[k], c->b[k], c->dist[k]);
				nc += c->n;
				gj_engine_release(GJ_ENGINE(ck), c);
			}
		while ((st = gj_engine_next(GJ_ENGINE(gk), 100, &c)) == GJ_OK || st == GJ_AGAIN)
			if (st == GJ_OK)
			{
				for (int k = 0; k < c->n; k++)
					gj_pairset_add(&b, c->a[k] * 100 + c->rank[k], c->b[k], c->dist[k]);
				ng += c->n;
				gj_engine_release(GJ_ENGINE(gk), c);
			}
		why = st != GJ_DONE ? gj_status_name(st) : gj_pairset_diff(&a, &b, &at);
		differ = why != NULL;
		{
			gj_gpu_knn_info ki;

			gj_gpu_knn_stats(gk, &ki);
			printf("big knn: 500 x 20000 x 16000, k 10: cpu %lld rows, gpu %lld rows, filter %d: %s\n",
				   (long long) nc, (long long) ng, ki.filter, why ? why : "equal");
		}
		gj_engine_free(GJ_ENGINE(ck));
		gj_engine_free(GJ_ENGINE(gk));
		gj_pairset_free(&a);
		gj_pairset_free(&b);
	}
	else
		printf("big knn: could not start: %s %s\n", gj_status_name(st), err);
	result(st == GJ_DONE && !differ && nc == 5000, "big-knn", "clusters", 7, &q, 0, why ? why : "");
	gj_pairset_free(&want);
	gj_pairset_free(&got);
	gj_points_free(&p);
	gj_points_free(&q);
	gj_gpu_release_cache();
	printf("gpu_tiles big: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	gj_cuda_device_info info;
	const char *mode = argc > 1 ? argv[1] : "check";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (gj_cuda_probe(&info) != GJ_OK)
	{
		printf("gpu_tiles: no usable GPU: %s\n", info.error);
		printf("gpu_tiles: 0 passed, 1 failed\n");
		return 1;
	}
	printf("gpu_tiles: %s, %d SMs\n", info.name, info.sm_count);
	if (strcmp(mode, "bench") == 0)
		return bench_main(argc > 2 ? argv[2] : "all");
	if (strcmp(mode, "big") == 0)
		return big_main();
	if (strcmp(mode, "ceilings") == 0)
	{
		char		err[256] = "";

		if (gj_gpu_measure_ceilings(&ceil_rate, err, sizeof(err)) != GJ_OK)
		{
			printf("ceilings: %s\n", err);
			return 1;
		}
		printf("FP64 mma m8n8k4 %.1f, m16n8k16 %.1f, TF32 mma.sync m16n8k8 %.1f, FP64 FMA %.1f TFLOP/s\n",
			   ceil_rate.fp64_mma_m8n8k4 / 1e12, ceil_rate.fp64_mma_m16n8k16 / 1e12,
			   ceil_rate.tf32_tensor / 1e12, ceil_rate.fp64_fma / 1e12);
		return 0;
	}
	if (strcmp(mode, "slicecheck") == 0)
	{
		/* the slices alone, small enough for compute-sanitizer */
		static const int dl[] = {16, 768};

		for (int d = 0; d < 2; d++)
			for (int k = 0; k < 4; k++)
			{
				gj_points	p;

				gj_gen_points(&p, kinds[k].kind, d == 0 ? 3000 : 600, dl[d], 100 + k);
				check_join(kinds[k].name, 100 + k, &p, eps2_for(&p, 10.0));
				gj_points_free(&p);
			}
		check_memory_slices(7);
		gj_gpu_release_cache();
		printf("gpu_tiles slicecheck: %d passed, %d failed\n", passed, failed);
		return failed == 0 ? 0 : 1;
	}
	if (strcmp(mode, "profile") == 0)
	{
		/* a few launches of the kernel on Syn16 (200K rows) for a profiler */
		gj_points	p;
		int64_t		pairs = 0;
		gj_gpu_tiles_info ti;

		double		secs;

		gj_gen_points(&p, GJ_GEN_EXPONENTIAL, 200000, 16, 1);
		secs = time_gpu(&p, 0.03 * 0.03, 0, &pairs, &ti);
		printf("profile: %.3f s, %lld pairs\n", secs, (long long) pairs);
		gj_points_free(&p);
		return 0;
	}
	return check_main(argc > 2 ? strtoull(argv[2], NULL, 10) : 20261124);
}
