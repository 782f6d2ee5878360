/*
 * gpu_density.c
 *		GPU check and benchmark of the per-row engines: neighbour counts and
 *		DBSCAN on the GPU (kernels/density.cu) against the CPU engine
 *		(src/core/density.c) and, on small sets, the brute-force oracles;
 *		neighbour lists (kernels/lists.cu) against the CPU list engine.
 *
 *		gpu_density check [seed]   GPU == CPU (== oracle) on random and
 *		                           adversarial data; last line
 *		                           "gpu_density: N passed, N failed"
 *		gpu_density cancel         the cancel cases alone
 *		gpu_density slabs          where a join in slabs spends its time
 *		gpu_density bench          2M and 10M points, 2-D and 3-D, uniform
 *		                           and clustered, ~30 and ~300 neighbours:
 *		                           GPU vs CPU engine (all cores), one table
 *
 * Results are compared row by row through the ids (the CPU engine sorts
 * its copy of the points, the GPU keeps the caller's order), counts and
 * core flags exactly, clusters exactly after gj_dbscan_number (ids are a
 * permutation, so numbering by smallest id is one answer).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_cuda.h"
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

/* The CPU engine's answers, mapped back to the rows of p by id. */
typedef struct cpu_answers
{
	int32_t    *counts;
	int32_t    *cluster;
	uint8_t    *core;
	double		count_ms;
	double		dbscan_ms;
	double		index_ms;
	int64_t		nclusters;
} cpu_answers;

static int64_t gpu_lattice_cells = 0;	/* dense cells the GPU counts cut */

static gj_status
cpu_run(const gj_points *p, double eps, int32_t minpts, int threads, cpu_answers *a)
{
	gj_points	s;
	gj_grid		g;
	int64_t		n = p->n;
	int64_t    *row = malloc(sizeof(int64_t) * (n + 1));
	int32_t    *c = malloc(sizeof(int32_t) * (n + 1));
	int32_t    *r = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *k = malloc(n + 1);
	gj_status	st;
	double		t0;

	a->counts = malloc(sizeof(int32_t) * (n + 1));
	a->cluster = malloc(sizeof(int32_t) * (n + 1));
	a->core = malloc(n + 1);
	for (int64_t i = 0; i < n; i++)
		row[p->ids[i]] = i;		/* ids are 0..n-1 */
	gj_points_copy(&s, p, n);
	t0 = gj_now_ms();
	st = gj_grid_build(&g, &s, eps * eps);
	a->index_ms = gj_now_ms() - t0;
	if (st == GJ_OK)
	{
		t0 = gj_now_ms();
		st = gj_cpu_count_within(&g, &s, 0, threads, c);
		a->count_ms = gj_now_ms() - t0;
	}
	else
		memset(c, 0, sizeof(int32_t) * (n + 1));
	if (st == GJ_OK)
	{
		t0 = gj_now_ms();
		st = gj_cpu_dbscan(&g, &s, minpts, threads, r, k);
		if (st == GJ_OK)
			st = gj_dbscan_number(&s, r, k, &a->nclusters);
		a->dbscan_ms = gj_now_ms() - t0;
	}
	for (int64_t i = 0; i < n && st == GJ_OK; i++)
	{
		int64_t		o = row[s.ids[i]];

		a->counts[o] = c[i];
		a->cluster[o] = r[i];
		a->core[o] = k[i];
	}
	if (st == GJ_OK)
		gj_grid_free(&g);
	gj_points_free(&s);
	free(row);
	free(c);
	free(r);
	free(k);
	return st;
}

static void
cpu_free(cpu_answers *a)
{
	free(a->counts);
	free(a->cluster);
	free(a->core);
}

/*
 * Counts and DBSCAN of p in slabs of at most max_rows rows on the GPU
 * (slab_density.c with the GPU engine), against the CPU engine's answers a
 * (rows of p; ids are 0..n-1, and the slabs sort a copy).
 */
static void
check_slabs(const char *name, const gj_points *p, double eps, int32_t minpts,
			int64_t max_rows, const cpu_answers *a, uint64_t seed)
{
	int64_t		n = p->n;
	int64_t    *row = malloc(sizeof(int64_t) * (n + 1));
	int32_t    *v = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *k = malloc(n + 1);
	gj_gpu_slab_ctx ctx;
	gj_slab_engine e;
	gj_slab_info info;
	gj_points	q;
	char		detail[512] = "",
				what[96];
	int64_t		bad = 0,
				ncl = -1;
	gj_status	st;

	for (int64_t i = 0; i < n; i++)
		row[p->ids[i]] = i;
	memset(&ctx, 0, sizeof(ctx));
	gj_gpu_slab_engine(&e, &ctx);

	gj_points_copy(&q, p, n);
	st = gj_slab_counts(&q, NULL, eps * eps, max_rows, &e, v, &info);
	for (int64_t i = 0; i < n && st == GJ_OK; i++)
		if (v[i] != a->counts[row[q.ids[i]]] && bad++ == 0)
			snprintf(detail, sizeof(detail), "id %lld: GPU slabs count %d, CPU %d",
					 (long long) q.ids[i], v[i], a->counts[row[q.ids[i]]]);
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "%s: %s", gj_status_name(st), ctx.err);
	snprintf(what, sizeof(what), "gpu slab counts (%lld slabs, %lld calls)",
			 (long long) info.nslabs, (long long) info.calls);
	result(st == GJ_OK && bad == 0 && info.nslabs > 1, what, name, seed,
		   detail[0] ? detail : "a single slab");
	gj_points_free(&q);

	bad = 0;
	detail[0] = '\0';
	gj_points_copy(&q, p, n);
	st = gj_slab_dbscan(&q, eps * eps, minpts, max_rows, &e, v, k, &info);
	if (st == GJ_OK)
		st = gj_dbscan_number(&q, v, k, &ncl);
	for (int64_t i = 0; i < n && st == GJ_OK; i++)
	{
		int64_t		o = row[q.ids[i]];

		if ((v[i] != a->cluster[o] || k[i] != a->core[o]) && bad++ == 0)
			snprintf(detail, sizeof(detail), "id %lld: GPU slabs (%d, core %d), CPU (%d, core %d)",
					 (long long) q.ids[i], v[i], k[i], a->cluster[o], a->core[o]);
	}
	if (st == GJ_OK && ncl != a->nclusters && bad++ == 0)
		snprintf(detail, sizeof(detail), "%lld clusters, CPU %lld", (long long) ncl,
				 (long long) a->nclusters);
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "%s: %s", gj_status_name(st), ctx.err);
	snprintf(what, sizeof(what), "gpu slab dbscan minpts %d (%lld slabs, %lld calls)", minpts,
			 (long long) info.nslabs, (long long) info.calls);
	result(st == GJ_OK && bad == 0 && info.nslabs > 1, what, name, seed,
		   detail[0] ? detail : "a single slab");
	gj_points_free(&q);
	free(row);
	free(v);
	free(k);
}

/*
 * A band (geography's, slab_density.c): counts and DBSCAN under a rule
 * between 0.9 eps and eps (datagen's gj_gen_band_within), on engine e in
 * slabs of max_rows; answers by id (ids are 0..n-1).  *nband: its pairs.
 */
static gj_status
band_run(const gj_points *p, double eps, int32_t minpts, int64_t max_rows,
		 const gj_slab_engine *e, uint64_t seed, int32_t *count, int32_t *cluster,
		 uint8_t *core, int64_t *nband)
{
	int64_t		n = p->n;
	gj_gen_band rule = {0.81 * eps * eps, eps * eps, seed};
	gj_points	q;
	gj_band		band;
	gj_slab_info info;
	int32_t    *v = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *k = malloc(n + 1);
	int64_t		kept = 0,
				ncl;
	gj_status	st;

	gj_points_copy(&q, p, n);
	st = gj_slab_band(&q, rule.in2, rule.out2, max_rows, e, v, &band, &info);
	*nband = band.n;
	for (int64_t b = 0; st == GJ_OK && b < band.n; b++)
		if (gj_gen_band_within(&rule, &q, band.a[b], band.b[b]))
		{
			v[band.a[b]]++;
			v[band.b[b]]++;
			band.a[kept] = band.a[b];
			band.b[kept++] = band.b[b];
		}
	band.n = kept;
	for (int64_t i = 0; st == GJ_OK && i < n; i++)
	{
		count[q.ids[i]] = v[i];
		k[i] = v[i] >= minpts;
	}
	if (st == GJ_OK)
		st = gj_slab_band_dbscan(&q, rule.in2, rule.out2, k, &band, max_rows, e, v, &info);
	if (st == GJ_OK)
		st = gj_dbscan_number(&q, v, k, &ncl);
	for (int64_t i = 0; st == GJ_OK && i < n; i++)
	{
		cluster[q.ids[i]] = v[i];
		core[q.ids[i]] = k[i];
	}
	gj_band_free(&band);
	gj_points_free(&q);
	free(v);
	free(k);
	return st;
}

/* The band on the GPU in slabs against the CPU engine in one. */
static void
check_band(const char *name, const gj_points *p, double eps, int32_t minpts,
		   int64_t max_rows, uint64_t seed)
{
	int64_t		n = p->n;
	int32_t    *cc = malloc(sizeof(int32_t) * (n + 1)),
			   *ccl = malloc(sizeof(int32_t) * (n + 1)),
			   *gc = malloc(sizeof(int32_t) * (n + 1)),
			   *gcl = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *ck = malloc(n + 1),
			   *gk = malloc(n + 1);
	gj_gpu_slab_ctx ctx;
	gj_slab_engine cpu,
				gpu;
	int			nthreads = 4;
	int64_t		cband = 0,
				gband = -1,
				bad = 0;
	char		detail[512] = "",
				what[96];
	gj_status	st;

	memset(&ctx, 0, sizeof(ctx));
	gj_gpu_slab_engine(&gpu, &ctx);
	gj_cpu_slab_engine(&cpu, &nthreads);
	st = band_run(p, eps, minpts, 2 * n + 2, &cpu, seed, cc, ccl, ck, &cband);
	if (st == GJ_OK)
		st = band_run(p, eps, minpts, max_rows, &gpu, seed, gc, gcl, gk, &gband);
	if (st == GJ_OK && gband != cband && bad++ == 0)
		snprintf(detail, sizeof(detail), "%lld band pairs, CPU %lld", (long long) gband,
				 (long long) cband);
	for (int64_t i = 0; st == GJ_OK && i < n; i++)
		if ((gc[i] != cc[i] || gcl[i] != ccl[i] || gk[i] != ck[i]) && bad++ == 0)
			snprintf(detail, sizeof(detail), "id %lld: GPU (%d, %d, core %d), CPU (%d, %d, core %d)",
					 (long long) i, gc[i], gcl[i], gk[i], cc[i], ccl[i], ck[i]);
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "%s: %s", gj_status_name(st), ctx.err);
	snprintf(what, sizeof(what), "gpu band counts+dbscan minpts %d (%lld band pairs)", minpts,
			 (long long) cband);
	result(st == GJ_OK && bad == 0, what, name, seed, detail);
	free(cc);
	free(ccl);
	free(gc);
	free(gcl);
	free(ck);
	free(gk);
}

/* The sign-folded bits of x: numeric order, -0 before +0 (order.cu's key). */
static uint64_t
order_key_of(double x)
{
	uint64_t	b;

	memcpy(&b, &x, sizeof(b));
	return (b >> 63) ? ~b : b | 0x8000000000000000ull;
}

/*
 * The slabs' device sort (gj_gpu_order_along) against its definition: a
 * permutation, keys non-decreasing, ties in row order; on random, skewed,
 * duplicate and signed-zero data, along each dimension.
 */
static void
check_order(uint64_t seed)
{
	static const gj_kind kinds[] = {GJ_GEN_UNIFORM, GJ_GEN_EXPONENTIAL, GJ_GEN_DUPLICATES};

	for (int k = 0; k < 3; k++, seed++)
	{
		gj_points	p;
		int64_t		n = 100000 + (int64_t) (seed % 1000);
		uint32_t   *perm = malloc(sizeof(uint32_t) * n);
		uint8_t    *seen = calloc(n, 1);
		char		err[256],
					detail[512] = "";
		int64_t		bad = 0;
		gj_status	st = GJ_OK;

		gj_gen_points(&p, kinds[k], n, 3, seed);
		for (int64_t i = 0; i < n; i += 97)
			p.x[i * 3 + 1] = (i / 97) % 2 ? -0.0 : 0.0;	/* signed zeros, negatives */
		for (int64_t i = 0; i < n; i += 89)
			p.x[i * 3 + 2] = -p.x[i * 3 + 2] * 1e300;
		for (int d = 0; d < 3 && st == GJ_OK; d++)
		{
			memset(seen, 0, n);
			st = gj_gpu_order_along(&p, d, NULL, perm, err, sizeof(err));
			for (int64_t i = 0; i < n && st == GJ_OK; i++)
			{
				if (perm[i] >= (uint32_t) n || seen[perm[i]]++)
				{
					if (bad++ == 0)
						snprintf(detail, sizeof(detail), "dim %d: not a permutation at %lld", d,
								 (long long) i);
					break;
				}
				if (i > 0)
				{
					uint64_t	a = order_key_of(p.x[(int64_t) perm[i - 1] * 3 + d]),
								b = order_key_of(p.x[(int64_t) perm[i] * 3 + d]);

					if ((a > b || (a == b && perm[i - 1] > perm[i])) && bad++ == 0)
						snprintf(detail, sizeof(detail), "dim %d: rows %u, %u out of order at %lld",
								 d, perm[i - 1], perm[i], (long long) i);
				}
			}
		}
		if (st != GJ_OK)
			snprintf(detail, sizeof(detail), "%s: %s", gj_status_name(st), err);
		result(st == GJ_OK && bad == 0, "gpu order along", "mixed", seed, detail);
		gj_points_free(&p);
		free(perm);
		free(seen);
	}
}

static int64_t lists_windowed = 0;	/* cases whose lists ran in several windows */

/* Every row's list from a list engine, by id (ids are 0..n-1). */
typedef struct id_lists
{
	int64_t    *len;			/* -1: not seen */
	int64_t    *at;
	int64_t    *nb;
	double	   *nd;
	int64_t		used;
	int64_t		cap;
	int64_t		repeated;		/* rows handed out more than once, or unknown ids */
} id_lists;

static gj_status
collect_lists(gj_engine *e, int64_t n, id_lists *L)
{
	gj_chunk   *c;
	gj_status	st;

	memset(L, 0, sizeof(*L));
	L->len = malloc(sizeof(int64_t) * (n + 1));
	L->at = malloc(sizeof(int64_t) * (n + 1));
	L->cap = 1024;
	L->nb = malloc(sizeof(int64_t) * L->cap);
	L->nd = malloc(sizeof(double) * L->cap);
	for (int64_t i = 0; i < n; i++)
		L->len[i] = -1;
	while ((st = gj_engine_next(e, 100, &c)) == GJ_OK || st == GJ_AGAIN)
	{
		if (st != GJ_OK)
			continue;
		for (int32_t i = 0; i < c->n; i++)
		{
			int64_t		id = c->a[i],
						e0 = c->off[i] + GJ_LIST_GAP,
						len = c->off[i + 1] - e0;

			if (id < 0 || id >= n || L->len[id] >= 0 || len < 0)
			{
				L->repeated++;
				continue;
			}
			while (L->used + len > L->cap)
			{
				L->cap *= 2;
				L->nb = realloc(L->nb, sizeof(int64_t) * L->cap);
				L->nd = realloc(L->nd, sizeof(double) * L->cap);
			}
			memcpy(L->nb + L->used, c->nb + e0, sizeof(int64_t) * len);
			memcpy(L->nd + L->used, c->nd + e0, sizeof(double) * len);
			L->len[id] = len;
			L->at[id] = L->used;
			L->used += len;
		}
		gj_engine_release(e, c);
	}
	return st == GJ_DONE ? GJ_OK : st;
}

static void
lists_free_ids(id_lists *L)
{
	free(L->len);
	free(L->at);
	free(L->nb);
	free(L->nd);
}

/* Rows whose lists differ between A (the CPU's) and B; the first described. */
static int64_t
lists_differ(const id_lists *A, const id_lists *B, int64_t n, char *detail, size_t len)
{
	int64_t		bad = 0;

	for (int64_t i = 0; i < n; i++)
	{
		int			same = A->len[i] == B->len[i] && A->len[i] >= 0;

		for (int64_t k = 0; same && k < A->len[i]; k++)
			same = A->nb[A->at[i] + k] == B->nb[B->at[i] + k] &&
				memcmp(&A->nd[A->at[i] + k], &B->nd[B->at[i] + k], sizeof(double)) == 0;
		if (!same && bad++ == 0)
			snprintf(detail, len, "row %lld: GPU list of %lld, CPU %lld, %s",
					 (long long) i, (long long) B->len[i], (long long) A->len[i],
					 A->len[i] == B->len[i] ? "different entries" : "different lengths");
	}
	return bad;
}

/*
 * GPU neighbour lists (kernels/lists.cu) against the CPU list engine: every
 * row once, the same ids in the same order, the distances bit for bit.
 */
static void
check_lists(const char *name, const gj_points *p, double eps, uint64_t seed)
{
	int64_t		n = p->n,
				bad = 0;
	gj_points	s;
	gj_grid		g;
	gj_cpu_lists *cl = NULL;
	gj_gpu_lists *gl = NULL;
	id_lists	A,
				B;
	char		err[256],
				detail[512] = "";
	gj_status	st;
	int			have_grid;

	memset(&A, 0, sizeof(A));
	memset(&B, 0, sizeof(B));
	gj_points_copy(&s, p, n);
	st = gj_grid_build(&g, &s, eps * eps);
	have_grid = st == GJ_OK;
	if (st == GJ_OK)
		st = gj_cpu_lists_start(&g, &s, NULL, n, 0, &cl);
	if (st == GJ_OK)
	{
		st = collect_lists(GJ_ENGINE(cl), n, &A);
		gj_engine_free(GJ_ENGINE(cl));
	}
	if (st != GJ_OK)
	{
		snprintf(detail, sizeof(detail), "CPU lists: %s", gj_status_name(st));
		result(0, "cpu lists", name, seed, detail);
		goto out;
	}
	st = gj_gpu_lists_start(p, eps * eps, NULL, &gl, err, sizeof(err));
	if (st == GJ_OK)
	{
		st = collect_lists(GJ_ENGINE(gl), n, &B);
		if (st != GJ_OK)
			snprintf(err, sizeof(err), "%s", gj_gpu_lists_error(gl));
		gj_engine_free(GJ_ENGINE(gl));
	}
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "%s: %s", gj_status_name(st), err);
	else if (B.repeated > 0 || A.repeated > 0)
		snprintf(detail, sizeof(detail), "%lld rows repeated (CPU %lld)",
				 (long long) B.repeated, (long long) A.repeated), bad++;
	if (st == GJ_OK)
		bad += lists_differ(&A, &B, n, detail, sizeof(detail));
	result(st == GJ_OK && bad == 0, "gpu lists", name, seed, detail);

	/* again beyond a device of a fifth of the rows: window by window */
	if (n >= 40 && isfinite(eps * eps))
	{
		gj_points	w;
		gj_slab_window *win = NULL;
		int64_t		nwin = 0;

		gj_points_copy(&w, p, n);
		st = gj_slabs_windows(&w, eps * eps, n / 5, NULL, NULL, &win, &nwin);
		if (st == GJ_OK)
		{
			lists_free_ids(&B);
			bad = 0;
			detail[0] = '\0';
			st = gj_gpu_lists_start_windows(&w, eps * eps, NULL, win, nwin, &gl, err, sizeof(err));
			if (st == GJ_OK)
			{
				st = collect_lists(GJ_ENGINE(gl), n, &B);
				if (st != GJ_OK)
					snprintf(err, sizeof(err), "%s", gj_gpu_lists_error(gl));
				gj_engine_free(GJ_ENGINE(gl));
			}
			if (st != GJ_OK)
				snprintf(detail, sizeof(detail), "%s: %s", gj_status_name(st), err);
			else if (B.repeated > 0)
				snprintf(detail, sizeof(detail), "%lld rows repeated", (long long) B.repeated), bad++;
			if (st == GJ_OK)
				bad += lists_differ(&A, &B, n, detail, sizeof(detail));
			result(st == GJ_OK && bad == 0, "gpu lists in windows", name, seed, detail);
			if (nwin > 1)
				lists_windowed++;
		}
		else if (st != GJ_ERR_DEVICE_OOM)
			result(0, "gpu lists in windows", name, seed, gj_status_name(st));
		free(win);
		gj_points_free(&w);
	}
out:
	if (have_grid)
		gj_grid_free(&g);
	gj_points_free(&s);
	lists_free_ids(&A);
	lists_free_ids(&B);
}

/* GPU counts and DBSCAN of p against the CPU engine (and the oracle). */
static void
check_case(const char *name, const gj_points *p, double eps, int32_t minpts,
		   uint64_t seed, int with_oracle)
{
	int64_t		n = p->n;
	cpu_answers a;
	int32_t    *gc = malloc(sizeof(int32_t) * (n + 1));
	int32_t    *gr = malloc(sizeof(int32_t) * (n + 1));
	uint8_t    *gk = malloc(n + 1);
	gj_gpu_density_info info;
	char		err[256],
				detail[512] = "";
	gj_status	st;
	int64_t		bad = 0,
				ncl = 0;

	if (cpu_run(p, eps, minpts, 0, &a) != GJ_OK)
	{
		result(0, "cpu", name, seed, "CPU engine failed");
		goto out;
	}
	if (with_oracle)
	{
		int32_t    *oc = malloc(sizeof(int32_t) * (n + 1));
		int32_t    *ocl = malloc(sizeof(int32_t) * (n + 1));
		uint8_t    *ok = malloc(n + 1);

		gj_oracle_count_within(p, eps * eps, oc);
		gj_oracle_dbscan(p, eps * eps, minpts, ocl, ok);
		for (int64_t i = 0; i < n; i++)
			if ((oc[i] != a.counts[i] || ocl[i] != a.cluster[i] || ok[i] != a.core[i]) &&
				bad++ == 0)
				snprintf(detail, sizeof(detail), "row %lld: CPU (%d, %d, %d), oracle (%d, %d, %d)",
						 (long long) i, a.counts[i], a.cluster[i], a.core[i], oc[i], ocl[i], ok[i]);
		result(bad == 0, "cpu vs oracle", name, seed, detail);
		free(oc);
		free(ocl);
		free(ok);
	}

	bad = 0;
	st = gj_gpu_count_within(p, eps * eps, 0, NULL, gc, &info, err, sizeof(err));
	gpu_lattice_cells += info.lattice_cells;
	for (int64_t i = 0; i < n && st == GJ_OK; i++)
		if (gc[i] != a.counts[i] && bad++ == 0)
			snprintf(detail, sizeof(detail), "row %lld: GPU count %d, CPU %d", (long long) i,
					 gc[i], a.counts[i]);
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "%s: %s", gj_status_name(st), err);
	result(st == GJ_OK && bad == 0, "gpu counts", name, seed, detail);

	bad = 0;
	st = gj_gpu_dbscan(p, eps * eps, minpts, NULL, gr, gk, &info, err, sizeof(err));
	if (st == GJ_OK)
		st = gj_dbscan_number(p, gr, gk, &ncl);
	for (int64_t i = 0; i < n && st == GJ_OK; i++)
		if ((gr[i] != a.cluster[i] || gk[i] != a.core[i]) && bad++ == 0)
			snprintf(detail, sizeof(detail), "row %lld: GPU (%d, core %d), CPU (%d, core %d)",
					 (long long) i, gr[i], gk[i], a.cluster[i], a.core[i]);
	if (st == GJ_OK && ncl != a.nclusters && bad++ == 0)
		snprintf(detail, sizeof(detail), "%lld clusters, CPU %lld", (long long) ncl,
				 (long long) a.nclusters);
	if (st != GJ_OK)
		snprintf(detail, sizeof(detail), "%s: %s", gj_status_name(st), err);
	{
		char		what[64];

		snprintf(what, sizeof(what), "gpu dbscan minpts %d", minpts);
		result(st == GJ_OK && bad == 0, what, name, seed, detail);
	}
	{
		double		entries = 0;

		for (int64_t i = 0; i < n; i++)
			entries += a.counts[i] - 1;
		if (entries < 5e7)
			check_lists(name, p, eps, seed);
	}
	/* every other case again in slabs of a fifth of the rows */
	if (seed % 2 == 0 && n >= 40 && isfinite(eps * eps))
	{
		check_slabs(name, p, eps, minpts, n / 5, &a, seed);
		if (n <= 100000)
			check_band(name, p, eps, minpts, n / 5, seed);	/* the band's sweep is the host's */
	}
	if (getenv("GJ_VERBOSE"))
		printf("ok? %s n %lld eps %.3g minpts %d: %lld clusters\n", name, (long long) n, eps,
			   minpts, (long long) a.nclusters);
	cpu_free(&a);
out:
	free(gc);
	free(gr);
	free(gk);
}

/*
 * The GPU lists under gpujoin.gpu_memory_limit: their own buffers (tens of
 * MB) count against it.  A limit just above the index's need must not
 * start the lists whole (the engine then runs windows, or the CPU); one
 * that also leaves the buffers' bytes lists every row.
 */
static int64_t drain(gj_engine *e);

static void
check_lists_budget(uint64_t seed)
{
	gj_points	p;
	int64_t		n = 60000;
	size_t		need = (size_t) n * (16 * 2 + 112) + ((size_t) 64 << 20) +
		(size_t) n * 27;	/* density.cu's own estimate, as check_room */
	gj_gpu_lists *gl = NULL;
	gj_gpu_lists_info li;
	char		err[256],
				detail[512];
	gj_status	st;
	int64_t		entries = -1;
	double		eps;

	gj_gen_points(&p, GJ_GEN_UNIFORM, n, 2, seed);
	eps = gj_gen_typical_eps(GJ_GEN_UNIFORM, n, 2, 30.0);
	gj_scramble_ids(&p, seed);
	memset(&li, 0, sizeof(li));
	st = gj_gpu_lists_start(&p, eps * eps, NULL, &gl, err, sizeof(err));
	if (st == GJ_OK)
	{
		gj_gpu_lists_stats(gl, &li);
		entries = li.entries;
		drain(GJ_ENGINE(gl));
		gj_engine_free(GJ_ENGINE(gl));
	}
	for (int room = 0; room < 2 && st == GJ_OK; room++)
	{
		gj_gpu_options opt;
		gj_gpu_lists_info l2;
		int64_t		rows = -1;

		memset(&opt, 0, sizeof(opt));
		memset(&l2, 0, sizeof(l2));
		opt.memory_limit = need + (room ? (size_t) li.device_bytes + ((size_t) 8 << 20) : (size_t) 1 << 20);
		st = gj_gpu_lists_start(&p, eps * eps, &opt, &gl, err, sizeof(err));
		if (st == GJ_OK)
		{
			gj_gpu_lists_stats(gl, &l2);
			rows = drain(GJ_ENGINE(gl));
			gj_engine_free(GJ_ENGINE(gl));
		}
		snprintf(detail, sizeof(detail), "%s %s; buffers %lld MB, %lld rows, %lld entries (%lld without a limit)",
				 gj_status_name(st), err, (long long) (li.device_bytes >> 20), (long long) rows,
				 (long long) l2.entries, (long long) entries);
		if (getenv("GJ_VERBOSE"))
			printf("lists budget %d: %s\n", room, detail);
		result(room ? st == GJ_OK && rows == n && l2.entries == entries : st == GJ_ERR_DEVICE_OOM,
			   room ? "lists within the limit" : "lists' buffers count in the limit", "uniform-60k",
			   seed, detail);
		st = GJ_OK;
	}
	if (st != GJ_OK)
		result(0, "lists without a limit", "uniform-60k", seed, err);
	gj_points_free(&p);
}

/*
 * DBSCAN's boxes under gpujoin.gpu_memory_limit: a 60,000-row clump 2 eps
 * across with the share just above the run's own need (no room for the
 * boxes: pair by pair) and 5 MB above it (boxes); both equal the CPU
 * engine, and the launches say which way each went (8 without boxes).
 */
static void
check_room(uint64_t seed)
{
	gj_points	p;
	cpu_answers a;
	int32_t    *r = malloc(sizeof(int32_t) * 60000);
	uint8_t    *k = malloc(60000);
	size_t		need = (size_t) 60000 * (16 * 2 + 112) + ((size_t) 64 << 20) +
		(size_t) 60000 * 27;	/* density.cu's own estimate */

	gj_gen_clump(&p, 60000, 2, 0, seed);
	gj_scramble_ids(&p, seed);
	cpu_run(&p, GJ_GEN_CLUMP_EPS, 5, 0, &a);
	for (int extra = 0; extra < 2; extra++)
	{
		gj_gpu_options opt;
		gj_gpu_density_info info;
		char		err[256],
					detail[512] = "";
		int64_t		ncl = -1,
					bad = 0;
		gj_status	st;

		memset(&opt, 0, sizeof(opt));
		opt.memory_limit = need + (extra ? (size_t) 5 << 20 : (size_t) 100 << 10);
		st = gj_gpu_dbscan(&p, GJ_GEN_CLUMP_EPS * GJ_GEN_CLUMP_EPS, 5, &opt, r, k, &info,
						   err, sizeof(err));
		if (st == GJ_OK)
			st = gj_dbscan_number(&p, r, k, &ncl);
		for (int64_t i = 0; i < p.n && st == GJ_OK; i++)
			bad += r[i] != a.cluster[i] || k[i] != a.core[i];
		snprintf(detail, sizeof(detail), "%s %s, %lld rows differ, %lld launches",
				 gj_status_name(st), err, (long long) bad, (long long) info.launches);
		result(st == GJ_OK && bad == 0 && ncl == a.nclusters &&
			   (extra ? info.launches > 8 : info.launches == 8),
			   extra ? "boxes within the share" : "no room for boxes", "clump-60k", seed, detail);
	}
	cpu_free(&a);
	gj_points_free(&p);
	free(r);
	free(k);
}

/* Cancel: the interrupt hook fires 100 ms in; the GPU must stop within 1 s. */
static double hook_at;

static int
hook(void)
{
	return gj_now_ms() >= hook_at;
}

static void
check_cancel(uint64_t seed)
{
	gj_points	p;
	int32_t    *v;
	uint8_t    *k;
	gj_gpu_density_info info;
	char		err[256],
				detail[128];
	double		t0;
	gj_status	st;
	int64_t		min_rows = gj_lattice_min_rows;

	/*
	 * 1M rows in one cell wider than eps (not compact: a compact cell
	 * counts and links without distances): 1e12 distances to count row by
	 * row (no lattice: as when the device has no room for one); for
	 * DBSCAN, whose boxes link such a cell at once, minpts past the rows,
	 * so that every row counts its reachable boxes' rows to the end; then
	 * 4M rows in one 3-D cell through its lattice (63^2 rows of boxes a
	 * row: seconds)
	 */
	for (int what = 0; what < 3; what++)
	{
		static const char *const names[] = {"cancel counts", "cancel dbscan", "cancel lattice counts"};

		gj_gen_points(&p, GJ_GEN_UNIFORM, what < 2 ? 1000000 : 4000000, what < 2 ? 2 : 3, seed);
		v = malloc(sizeof(int32_t) * p.n);
		k = malloc(p.n);
		gj_lattice_min_rows = what == 0 ? INT64_MAX : min_rows;
		memset(&info, 0, sizeof(info));
		t0 = gj_now_ms();
		hook_at = t0 + (what < 2 ? 100 : 1500);	/* 4M: past the upload and the lattice's build */
		gj_set_interrupt_hook(hook);
		st = what != 1 ? gj_gpu_count_within(&p, 110.0 * 110.0, 0, NULL, v, &info, err, sizeof(err)) :
			gj_gpu_dbscan(&p, 110.0 * 110.0, 2000000, NULL, v, k, &info, err, sizeof(err));
		gj_set_interrupt_hook(NULL);
		gj_lattice_min_rows = min_rows;
		snprintf(detail, sizeof(detail), "%s after %.0f ms (cancel at %.0f ms, %lld lattice cells)",
				 gj_status_name(st), gj_now_ms() - t0, hook_at - t0,
				 (long long) info.lattice_cells);
		printf("%s: %s\n", names[what], detail);
		result(st == GJ_ERR_CANCELED && gj_now_ms() - hook_at < 1000 &&
			   (what < 2 || info.lattice_cells > 0), names[what],
			   what < 2 ? "one-wide-cell-1m" : "one-wide-cell-3d-4m", seed, detail);
		free(v);
		free(k);
		gj_points_free(&p);
	}
}

static int
run_check(uint64_t seed)
{
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
	static const int dim_list[] = {1, 2, 3, 4, 6, 9};
	static const int32_t minpts_list[] = {1, 2, 5, 20};
	/* GJ_GPU_CHECK_QUICK: every 4th case, nothing large (compute-sanitizer) */
	int			quick = getenv("GJ_GPU_CHECK_QUICK") != NULL;
	int64_t		min_rows = gj_lattice_min_rows;

	/* uncapped counts cut cells of 256 rows or more into lattices, not 2048 */
	gj_lattice_min_rows = 256;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (size_t d = 0; d < sizeof(dim_list) / sizeof(dim_list[0]); d++)
			for (int s = 0; s < 3; s++, seed++)
			{
				gj_points	p;
				int64_t		n = 1500 + (int64_t) (seed % 1000);
				int			dims = dim_list[d];
				double		nb = s == 0 ? 3.0 : (s == 1 ? 12.0 : 60.0);
				double		eps = gj_gen_typical_eps(kinds[k].kind, n, dims, nb);
				char		name[96];

				if (quick && seed % 4 != 0)
					continue;
				if (kinds[k].kind == GJ_GEN_GRID_SNAPPED)
					eps = 0.5 * (s + 1);	/* pairs exactly eps apart */
				snprintf(name, sizeof(name), "%s-%dd-%lld-eps%.3g", kinds[k].name, dims,
						 (long long) n, eps);
				gj_gen_points(&p, kinds[k].kind, n, dims, seed);
				gj_scramble_ids(&p, seed);
				check_case(name, &p, eps, minpts_list[(k + d + s) % 4], seed, s == 1);
				gj_points_free(&p);
			}
	/* the shared boundary sets: exactly eps apart, subnormal eps, overflow */
	{
		gj_points	p;
		const char *name;
		double		eps[GJ_GEN_MAX_EPS];
		int			neps;

		for (int k = 0; gj_gen_boundary_case(k, &p, &name, eps, &neps); k++)
		{
			gj_scramble_ids(&p, seed);
			for (int e = 0; e < neps; e++, seed++)
				check_case(name, &p, eps[e], 1 + (int32_t) (seed % 5), seed, p.n <= 3000);
			gj_points_free(&p);
		}
	}
	/*
	 * dense wide cells (DBSCAN cuts them into boxes): a clump 2 eps across,
	 * every 40th row spread 3x wider, alone and as two clumps just under
	 * and just over eps apart; dimensions past the boxes' limit too
	 */
	for (int d = 0; d < 5; d++)
		for (int gap = 0; gap < 3; gap++, seed++)
		{
			static const int ddims[] = {1, 2, 3, 4, 9};
			int			dims = ddims[d];
			gj_points	p;
			char		name[96];

			if (quick && seed % 2 != 0)
				continue;
			gj_gen_clump(&p, 3000, dims, gap, seed);
			gj_scramble_ids(&p, seed);
			snprintf(name, sizeof(name), "dense-wide-%dd-%s", dims,
					 gap == 0 ? "one" : gap == 1 ? "bridged" : "apart");
			for (int m = 0; m < 4; m++)
				check_case(name, &p, GJ_GEN_CLUMP_EPS, (int32_t[]) {1, 4, 40, 400}[m], seed, m == 1);
			gj_points_free(&p);
		}
	{
		char		detail[64];

		snprintf(detail, sizeof(detail), "%lld cells cut", (long long) gpu_lattice_cells);
		printf("gpu counts through lattices: %s\n", detail);
		result(gpu_lattice_cells > (quick ? 20 : 100), "gpu counts through lattices", "all", seed, detail);
	}
	check_room(seed++);
	check_lists_budget(seed++);
	check_order(seed++);
	{
		char		detail[64];

		snprintf(detail, sizeof(detail), "%lld cases", (long long) lists_windowed);
		result(lists_windowed >= (quick ? 5 : 20), "lists ran in several windows", "all", seed, detail);
	}
	if (quick)
	{
		printf("gpu_density: %d passed, %d failed\n", passed, failed);
		return failed == 0 ? 0 : 1;
	}
	/* chains of clusters exactly eps apart; huge and tiny eps */
	for (int32_t minpts = 2; minpts <= 8; minpts += 3, seed++)
	{
		gj_points	p;

		gj_gen_chain(&p, 2000, 0.5, seed);
		gj_scramble_ids(&p, seed);
		check_case("chain-2000", &p, 0.5, minpts, seed, 0);
		gj_points_free(&p);
	}
	{
		gj_points	p;

		gj_gen_points(&p, GJ_GEN_UNIFORM, 3000, 2, seed);
		gj_scramble_ids(&p, seed);
		check_case("uniform-huge-eps", &p, 1e6, 5, seed, 1);
		check_case("uniform-tiny-eps", &p, 1e-300, 2, seed, 1);
		gj_points_free(&p);
		seed++;
	}
	/* large: many blocks, skew, one dense cell */
	{
		gj_points	p;

		gj_gen_points(&p, GJ_GEN_UNIFORM, 300000, 2, seed);
		gj_scramble_ids(&p, seed);
		check_case("uniform-300k", &p, gj_gen_typical_eps(GJ_GEN_UNIFORM, 300000, 2, 30.0), 5, seed, 0);
		gj_points_free(&p);
		gj_gen_points(&p, GJ_GEN_CLUSTERS, 300000, 3, ++seed);
		gj_scramble_ids(&p, seed);
		check_case("clusters-3d-300k", &p, gj_gen_typical_eps(GJ_GEN_CLUSTERS, 300000, 3, 30.0), 10, seed, 0);
		gj_points_free(&p);
		gj_gen_points(&p, GJ_GEN_ONE_CELL, 20000, 2, ++seed);
		gj_scramble_ids(&p, seed);
		check_case("one-cell-20k", &p, 1.0, 5, seed, 0);
		gj_points_free(&p);
	}
	gj_lattice_min_rows = min_rows;
	check_cancel(++seed);
	printf("gpu_density: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}

/* Rows of p (2-D) reordered by strips of width w in x, then by y. */
static const gj_points *sort_p;
static double sort_w;

static int
cmp_strip(const void *a, const void *b)
{
	const double *x = sort_p->x + 2 * *(const int64_t *) a,
			   *y = sort_p->x + 2 * *(const int64_t *) b;
	double		sa = floor(x[0] / sort_w),
				sb = floor(y[0] / sort_w);

	if (sa != sb)
		return sa < sb ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static void
sort_rows_spatially(gj_points *p, double w)
{
	int64_t    *o = malloc(sizeof(int64_t) * p->n);
	gj_points	q;

	for (int64_t i = 0; i < p->n; i++)
		o[i] = i;
	sort_p = p;
	sort_w = w;
	qsort(o, p->n, sizeof(int64_t), cmp_strip);
	gj_points_copy(&q, p, p->n);
	for (int64_t i = 0; i < p->n; i++)
	{
		p->ids[i] = q.ids[o[i]];
		p->x[2 * i] = q.x[2 * o[i]];
		p->x[2 * i + 1] = q.x[2 * o[i] + 1];
	}
	gj_points_free(&q);
	free(o);
}

/* Best of two: GPU and CPU engine, counts and DBSCAN (minpts 5). */
static void
run_bench(void)
{
	static const int64_t sizes[] = {2000000, 10000000};
	static const int dim_list[] = {2, 3};
	static const gj_kind kinds[] = {GJ_GEN_UNIFORM, GJ_GEN_CLUSTERS};
	static const double nbs[] = {30.0, 300.0};

	printf("| n | dims | data | neighbours | eps | clusters | GPU counts ms | GPU dbscan ms | "
		   "CPU counts ms | CPU dbscan ms | CPU index ms | counts CPU/GPU | dbscan CPU/GPU |\n");
	printf("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (size_t s = 0; s < 2; s++)
		for (size_t d = 0; d < 2; d++)
			for (size_t k = 0; k < 2; k++)
				for (size_t b = 0; b < 2; b++)
				{
					gj_points	p;
					int64_t		n = sizes[s];
					double		eps = gj_gen_typical_eps(kinds[k], n, dim_list[d], nbs[b]);
					int32_t    *v = malloc(sizeof(int32_t) * n);
					uint8_t    *c = malloc(n);
					gj_gpu_density_info info;
					char		err[256];
					double		gcount = 1e30,
								gdb = 1e30,
								t0;
					cpu_answers a;

					gj_gen_points(&p, kinds[k], n, dim_list[d], 20261123 + s * 7 + d * 3 + k + b);
					gj_scramble_ids(&p, 1 + s);
					for (int rep = 0; rep < 2; rep++)
					{
						int64_t		ncl;

						t0 = gj_now_ms();
						if (gj_gpu_count_within(&p, eps * eps, 0, NULL, v, &info, err, sizeof(err)) != GJ_OK)
							printf("GPU counts failed: %s\n", err);
						gcount = fmin(gcount, gj_now_ms() - t0);
						t0 = gj_now_ms();
						if (gj_gpu_dbscan(&p, eps * eps, 5, NULL, v, c, &info, err, sizeof(err)) != GJ_OK ||
							gj_dbscan_number(&p, v, c, &ncl) != GJ_OK)
							printf("GPU dbscan failed: %s\n", err);
						gdb = fmin(gdb, gj_now_ms() - t0);
					}
					cpu_run(&p, eps, 5, 0, &a);
					printf("| %lld | %d | %s | %.0f | %.4g | %lld | %.1f | %.1f | %.1f | %.1f | %.1f | %.1fx | %.1fx |\n",
						   (long long) n, dim_list[d], kinds[k] == GJ_GEN_UNIFORM ? "uniform" : "clusters",
						   nbs[b], eps, (long long) a.nclusters, gcount, gdb, a.count_ms + a.index_ms,
						   a.dbscan_ms + a.index_ms, a.index_ms,
						   (a.count_ms + a.index_ms) / gcount, (a.dbscan_ms + a.index_ms) / gdb);
					cpu_free(&a);
					free(v);
					free(c);
					gj_points_free(&p);
				}
}

/*
 * Issue 18's bar for DBSCAN in a dense wide cell: 1M rows uniform in a
 * square 2 eps across against 1M uniform rows at ~30 neighbours, GPU and
 * CPU engine (best of two), minpts 5; and the counts of the clump (still
 * pair by pair), once.
 */
static void
run_dense(void)
{
	gj_points	p;
	int64_t		n = 1000000;
	int32_t    *v = malloc(sizeof(int32_t) * n);
	uint8_t    *c = malloc(n);
	gj_gpu_density_info info;
	char		err[256];

	printf("| data | eps | clusters | GPU dbscan ms | CPU dbscan ms (index) | GPU counts ms (lattice cells) | CPU counts ms | counts equal |\n");
	printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
	for (int dense = 0; dense < 3; dense++)
	{
		double		eps = dense ? 50.0 : gj_gen_typical_eps(GJ_GEN_UNIFORM, n, 2, 30.0);
		double		gdb = 1e30,
					gcount = 1e30,
					t0;
		int64_t		ncl = -1,
					differ = 0;
		cpu_answers a;

		gj_gen_points(&p, GJ_GEN_UNIFORM, n, 2, 20261124 + (dense > 0));	/* [0, 100)^2 */
		gj_scramble_ids(&p, 7);
		if (dense == 2)
			sort_rows_spatially(&p, 0.2);
		for (int rep = 0; rep < 2; rep++)
		{
			t0 = gj_now_ms();
			if (gj_gpu_dbscan(&p, eps * eps, 5, NULL, v, c, &info, err, sizeof(err)) != GJ_OK ||
				gj_dbscan_number(&p, v, c, &ncl) != GJ_OK)
				printf("GPU dbscan failed: %s\n", err);
			gdb = fmin(gdb, gj_now_ms() - t0);
		}
		for (int rep = 0; rep < 2; rep++)
		{
			t0 = gj_now_ms();
			if (gj_gpu_count_within(&p, eps * eps, 0, NULL, v, &info, err, sizeof(err)) != GJ_OK)
				printf("GPU counts failed: %s\n", err);
			gcount = fmin(gcount, gj_now_ms() - t0);
		}
		cpu_run(&p, eps, 5, 0, &a);
		for (int64_t i = 0; i < n; i++)
			differ += v[i] != a.counts[i];
		printf("| %s | %.4g | %lld (CPU %lld) | %.1f | %.1f (%.1f) | %.1f (%lld) | %.1f | %s |\n",
			   dense == 2 ? "the same, rows in strips of 0.2 by y" :
			   dense ? "1M in a square 2 eps across" : "1M uniform, ~30 neighbours", eps,
			   (long long) ncl, (long long) a.nclusters, gdb, a.dbscan_ms + a.index_ms,
			   a.index_ms, gcount, (long long) info.lattice_cells, a.count_ms,
			   differ == 0 ? "yes" : "NO");
		if (differ != 0)
			printf("FAIL dense counts: %lld rows differ between GPU and CPU\n", (long long) differ);
		cpu_free(&a);
		gj_points_free(&p);
	}
	free(v);
	free(c);
}

/* Drain an engine: its pairs, counted. */
static int64_t
drain(gj_engine *e)
{
	int64_t		n = 0;
	gj_chunk   *c;
	gj_status	st;

	while ((st = gj_engine_next(e, 100, &c)) == GJ_OK || st == GJ_AGAIN)
		if (st == GJ_OK)
		{
			n += c->n;
			gj_engine_release(e, c);
		}
	return n;
}

/*
 * Counts (or DBSCAN, minpts 3) of p in slabs of 2,005,122 rows (as at
 * gpujoin.gpu_memory_limit = 650), the rows pinned for the sweeps or left
 * pageable; one line of timings.
 */
static void
time_slabs(const gj_points *p, double eps, int dbscan, int pin, int32_t *v, uint8_t *k)
{
	gj_gpu_slab_ctx ctx;
	gj_slab_engine e;
	gj_slab_info si;
	gj_points	q;
	double		t0;

	memset(&ctx, 0, sizeof(ctx));
	gj_points_copy(&q, p, p->n);
	gj_gpu_slab_engine(&e, &ctx);
	if (!pin)
		e.rows = NULL;
	t0 = gj_now_ms();
	if (dbscan)
		gj_slab_dbscan(&q, eps * eps, 3, 2005122, &e, v, k, &si);
	else
		gj_slab_counts(&q, NULL, eps * eps, 2005122, &e, v, &si);
	printf("| %s in slabs, rows %s | %.1f ms (%lld slabs, %lld calls; index %.1f, of which uploads %.1f; kernels %.1f, pinning %.1f ms) |\n",
		   dbscan ? "dbscan" : "counts", pin ? "pinned" : "pageable", gj_now_ms() - t0,
		   (long long) si.nslabs, (long long) si.calls, ctx.info.index_ms, ctx.info.upload_ms,
		   ctx.info.kernel_ms, ctx.pin_ms);
	printf("| ... plan, counts, link, border sweeps | %.1f, %.1f, %.1f, %.1f ms |\n",
		   si.plan_ms, si.counts_ms, si.link_ms, si.border_ms);
	gj_points_free(&q);
}

/*
 * Where the time of a join in slabs goes, phase by phase: 10M uniform 2-D
 * rows at ~3 neighbours cut as at gpujoin.gpu_memory_limit = 650 (2.6M
 * rows a step): the slabs' sort on the host and on the device, the rows'
 * reordering, each step's engine start and drain against the whole
 * self-join's, and counts and DBSCAN in slabs against whole.
 */
static void
run_slab_phases(void)
{
	int64_t		n = 10000000,
				max_rows = 2617799;
	double		eps = gj_gen_typical_eps(GJ_GEN_UNIFORM, n, 2, 3.0),
				t0,
				t_start = 0,
				t_drain = 0;
	gj_points	p,
				q;
	gj_slab_plan pl;
	uint32_t   *perm = malloc(sizeof(uint32_t) * n);
	int32_t    *v = malloc(sizeof(int32_t) * n);
	uint8_t    *k = malloc(n);
	char		err[256];
	gj_gpu_selfjoin *sj;
	int64_t		pairs = 0,
				whole_pairs = 0;
	gj_gpu_slab_ctx ctx;
	gj_slab_engine e;
	gj_gpu_density_info gi;

	gj_gen_points(&p, GJ_GEN_UNIFORM, n, 2, 7);
	gj_scramble_ids(&p, 7);
	memset(&ctx, 0, sizeof(ctx));
	gj_gpu_slab_engine(&e, &ctx);

	/* warm the device */
	gj_gpu_order_along(&p, 0, NULL, perm, err, sizeof(err));
	t0 = gj_now_ms();
	gj_gpu_order_along(&p, 0, NULL, perm, err, sizeof(err));
	printf("| device sort of one column | %.1f ms |\n", gj_now_ms() - t0);
	gj_points_copy(&q, &p, n);
	t0 = gj_now_ms();
	gj_points_apply_order(&q, perm);
	printf("| rows reordered (host gather) | %.1f ms |\n", gj_now_ms() - t0);
	gj_points_free(&q);
	gj_points_copy(&q, &p, n);
	t0 = gj_now_ms();
	gj_slabs_plan(&q, NULL, eps * eps, max_rows, &pl);
	printf("| plan, host sort | %.1f ms |\n", gj_now_ms() - t0);
	gj_slabs_free(&pl);
	gj_points_free(&q);
	gj_points_copy(&q, &p, n);
	t0 = gj_now_ms();
	gj_slabs_plan_ordered(&q, NULL, eps * eps, max_rows, e.order, e.arg, &pl);
	printf("| plan, device sort | %.1f ms (%lld slabs, %d steps) |\n", gj_now_ms() - t0,
		   (long long) pl.nslabs, pl.nsteps);
	for (int t = 0; t < pl.nsteps; t++)
	{
		gj_slab_step *s = &pl.steps[t];
		gj_points	a,
					b;
		gj_status	st;

		t0 = gj_now_ms();
		gj_points_view(&a, &q, s->a0, s->a1);
		gj_points_view(&b, &q, s->b0, s->b1);
		st = s->self ? gj_gpu_selfjoin_start(&a, eps * eps, NULL, &sj, err, sizeof(err)) :
			gj_gpu_join_start(&a, &b, eps * eps, 2, NULL, &sj, err, sizeof(err));
		t_start += gj_now_ms() - t0;
		if (st != GJ_OK)
		{
			printf("| step %d | failed: %s %s |\n", t, gj_status_name(st), err);
			break;
		}
		t0 = gj_now_ms();
		pairs += drain(GJ_ENGINE(sj));
		gj_engine_free(GJ_ENGINE(sj));
		t_drain += gj_now_ms() - t0;
	}
	printf("| %d steps: engine starts | %.1f ms |\n| %d steps: drains | %.1f ms (%lld pairs) |\n",
		   pl.nsteps, t_start, pl.nsteps, t_drain, (long long) pairs);
	gj_slabs_free(&pl);
	gj_points_free(&q);
	t0 = gj_now_ms();
	if (gj_gpu_selfjoin_start(&p, eps * eps, NULL, &sj, err, sizeof(err)) == GJ_OK)
	{
		double		t1 = gj_now_ms();

		whole_pairs = drain(GJ_ENGINE(sj));
		gj_engine_free(GJ_ENGINE(sj));
		printf("| whole self-join: start, drain | %.1f ms, %.1f ms (%lld pairs) |\n", t1 - t0,
			   gj_now_ms() - t1, (long long) whole_pairs);
	}

	/* counts and DBSCAN, whole and in slabs of the same size */
	t0 = gj_now_ms();
	gj_gpu_count_within(&p, eps * eps, 0, NULL, v, &gi, err, sizeof(err));
	printf("| counts whole | %.1f ms |\n", gj_now_ms() - t0);
	/* in slabs, the rows left pageable (the old way) and pinned for the sweeps */
	for (int pin = 0; pin <= 1; pin++)
		time_slabs(&p, eps, 0, pin, v, k);
	t0 = gj_now_ms();
	gj_gpu_dbscan(&p, eps * eps, 3, NULL, v, k, &gi, err, sizeof(err));
	printf("| dbscan whole | %.1f ms |\n", gj_now_ms() - t0);
	for (int pin = 0; pin <= 1; pin++)
		time_slabs(&p, eps, 1, pin, v, k);
	gj_points_free(&q);
	gj_points_free(&p);
	free(perm);
	free(v);
	free(k);
}

int
main(int argc, char **argv)
{
	gj_cuda_device_info info;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (gj_cuda_probe(&info) != GJ_OK)
	{
		printf("gpu_density: no usable GPU: %s\n", info.error);
		printf("gpu_density: 0 passed, 1 failed\n");
		return 1;
	}
	if (argc > 1 && strcmp(argv[1], "cancel") == 0)
	{
		check_cancel(1);
		printf("gpu_density: %d passed, %d failed\n", passed, failed);
		return failed == 0 ? 0 : 1;
	}
	if (argc > 1 && strcmp(argv[1], "slabs") == 0)
	{
		printf("gpu_density slabs: %s, %d CPU threads\n", info.name, gj_cpu_count());
		run_slab_phases();
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "dense") == 0)
	{
		printf("gpu_density dense: %s, %d CPU threads\n", info.name, gj_cpu_count());
		run_dense();
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "bench") == 0)
	{
		printf("gpu_density bench: %s, %d CPU threads\n", info.name, gj_cpu_count());
		run_bench();
		return 0;
	}
	printf("gpu_density check: %s\n", info.name);
	return run_check(argc > 2 ? strtoull(argv[2], NULL, 10) : 20261123);
}
