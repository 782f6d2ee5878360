/*
 * gpu_knn.c
 *		The GPU kNN engine against the CPU engine (the reference), then the
 *		kNN benchmark on the GPU host.
 *
 *	gpu_knn [check|bench]
 *
 * check: seeded random and adversarial cases (kinds, 1-16 dims, k from 1
 * to 300, self and separate queries, grid and brute force, array and heap
 * buffers, reference partitions forced by a small memory limit, queries far
 * outside the data); the GPU answer must equal the CPU engine's, ranks and
 * distances bit for bit.  Last line: "gpu_knn: N passed, N failed".
 * bench: the workloads; GPU grid, GPU brute force (exact float64,
 * the bar's reference), CPU engine on every core, each on the same data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core_internal.h"
#include "gpu_bench.h"
#include "datagen.h"
#include "knnset.h"

static int	passed = 0;
static int	failed = 0;
static int	no_filter = 0;		/* runs without the tensor-core filter */
static int	sort_blocks = 0;	/* check(): rows sorted into blocks first (the index's order) */
static int	order_on_gpu = 0;	/* check(): a self join's block order given to the engine */
static const uint32_t *row_order = NULL;	/* run_gpu: gj_gpu_options.row_order */
static const gj_block_plan *block_plan = NULL;	/* ... and .block_plan */

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * GPU engine end to end on refs (it builds its own index: on the device, or
 * sorting refs on the host when they exceed the memory limit).
 */
static gj_status
run_gpu(gj_points *refs, const gj_points *queries, const gj_knn_options *opt,
		size_t mem_limit, gj_knnset *out, gj_gpu_knn_info *info, double *secs)
{
	gj_gpu_options gopt = {mem_limit, 0, 0, no_filter, 0, row_order, block_plan};
	gj_gpu_knn *j;
	gj_status	st;
	char		err[256];
	const gj_points *qs = queries != NULL ? queries : refs;
	double		t0 = now();

	st = gj_gpu_knn_start(refs, qs, opt, &gopt, &j, err, sizeof(err));
	if (st != GJ_OK)
	{
		printf("  gpu start: %s: %s\n", gj_status_name(st), err);
		return st;
	}
	for (;;)
	{
		gj_chunk   *c;

		st = gj_engine_next(GJ_ENGINE(j), 100, &c);
		if (st == GJ_AGAIN)
			continue;
		if (st != GJ_OK)
			break;
		if (out != NULL)
			gj_knnset_add_chunk(out, c, qs->ids, refs->ids);
		gj_engine_release(GJ_ENGINE(j), c);
	}
	*secs = now() - t0;
	if (info != NULL)
		gj_gpu_knn_stats(j, info);
	if (st != GJ_DONE)
		printf("  gpu: %s: %s\n", gj_status_name(st), gj_gpu_knn_error(j));
	gj_engine_free(GJ_ENGINE(j));
	return st;
}

static gj_gpu_knn_info last_info;	/* of the last check's GPU run */

static void
check(const char *name, gj_kind kind, int64_t n, int64_t nq, int dims, int64_t k,
	  int self, gj_knn_method method, int heap_min_k, size_t mem, double stretch,
	  uint64_t seed)
{
	gj_points	refs,
				qs,
				r1,
				r2;
	gj_knn_options opt = {.k = k, .exclude_self = self, .method = method, .heap_min_k = heap_min_k};
	gj_knnset	want = {0},
				got = {0};
	gj_gpu_knn_info info = {0};
	gj_status	st;
	const char *why = NULL;
	double		secs;
	uint32_t   *perm = NULL;
	gj_block_plan plan = {0};

	gj_gen_points(&refs, kind, n, dims, seed);
	gj_gen_points(&qs, kind == GJ_GEN_CLUSTERS ? GJ_GEN_UNIFORM : kind, nq, dims, seed + 7);
	for (int64_t i = 0; i < qs.n * dims; i++)
		qs.x[i] = (qs.x[i] - 50.0) * stretch + 50.0;
	for (int64_t i = 0; i < refs.n; i++)
		refs.ids[i] = (refs.n - i) * 7919 % 1000003;
	if (sort_blocks && (gj_points_block_order(&refs) != GJ_OK ||
						gj_points_block_order(&qs) != GJ_OK))
		exit(2);
	gj_points_copy(&r1, &refs, refs.n);
	gj_points_copy(&r2, &refs, refs.n);
	{
		/* the CPU by plain brute force where the GPU runs the blocks' index */
		gj_knn_options o1 = opt;

		if (method == GJ_KNN_BLOCKS)
			o1.method = GJ_KNN_BRUTE;
		st = gj_knn_run_cpu(&r1, self ? NULL : &qs, &o1, 0, &want);
	}
	if (st != GJ_DONE)
		why = "cpu engine failed";
	else if (order_on_gpu == 1 && self && gj_points_block_perm(&r2, &perm) != GJ_OK)
		why = "block order failed";
	else if (order_on_gpu == 2 && self && gj_block_plan_make(&r2, &plan) != GJ_OK)
		why = "block plan failed";
	else if ((row_order = perm, block_plan = order_on_gpu == 2 && self ? &plan : NULL,
			  st = run_gpu(&r2, self ? NULL : &qs, &opt, mem, &got, &info, &secs)) != GJ_DONE)
		why = gj_status_name(st);
	else
		why = gj_knnset_diff(&want, &got);
	last_info = info;
	row_order = NULL;
	block_plan = NULL;
	free(perm);
	gj_block_plan_free(&plan);
	if (why == NULL)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s n=%lld q=%lld dims=%d k=%lld self=%d method=%d heap_min_k=%d mem=%zu: %s\n",
			   name, (long long) n, (long long) nq, dims, (long long) k, self, method,
			   heap_min_k, mem, why);
	}
	if (getenv("GJ_VERBOSE"))
		printf("  %s dims=%d k=%lld: %lld rows, partitions %d, batches %lld, %.3f s\n", name, dims,
			   (long long) k, (long long) got.n, info.partitions, (long long) info.batches, secs);
	gj_knnset_free(&want);
	gj_knnset_free(&got);
	gj_points_free(&refs);
	gj_points_free(&qs);
	gj_points_free(&r1);
	gj_points_free(&r2);
}

/* The block order found on the device is the host's, row for row. */
static void
check_block_order(const char *name, gj_kind kind, int64_t n, int dims, uint64_t seed)
{
	gj_points	p;
	gj_block_plan plan;
	uint32_t   *host = NULL,
			   *dev;
	char		err[256];
	const char *why = NULL;

	gj_gen_points(&p, kind, n, dims, seed);
	dev = malloc(sizeof(uint32_t) * (n + 1));
	if (dev == NULL || gj_block_plan_make(&p, &plan) != GJ_OK)
		exit(2);
	if (plan.m == 0)
		why = "no plan";
	else if (gj_block_plan_perm(&p, &plan, &host) != GJ_OK || host == NULL)
		why = "host order failed";
	else if (gj_gpu_block_order(&p, &plan, dev, err, sizeof(err)) != GJ_OK)
		why = err;
	else
		for (int64_t i = 0; i < n && why == NULL; i++)
			if (host[i] != dev[i])
				why = "the device's order differs from the host's";
	if (why == NULL)
		passed++;
	else
	{
		failed++;
		printf("FAIL block order %s n=%lld dims=%d (m=%d, bits=%d): %s\n", name, (long long) n,
			   dims, plan.m, plan.bits, why);
	}
	gj_block_plan_free(&plan);
	free(host);
	free(dev);
	gj_points_free(&p);
}

static void
expect(const char *what, int ok)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s (device order %d, batches %lld, partitions %d)\n", what,
			   last_info.device_order, (long long) last_info.batches, last_info.partitions);
	}
}

static int
do_check(void)
{
	static const gj_kind kinds[] = {GJ_GEN_UNIFORM, GJ_GEN_EXPONENTIAL, GJ_GEN_CLUSTERS,
	GJ_GEN_DUPLICATES, GJ_GEN_ONE_CELL, GJ_GEN_GRID_SNAPPED};
	static const char *names[] = {"uniform", "exponential", "clusters", "duplicates",
	"one-cell", "grid-snapped"};
	static const int dims[] = {1, 2, 3, 6, 9, 16};
	static const int64_t ks[] = {1, 20, 100};
	uint64_t	seed = 4242;

	if (getenv("GJ_CHECK_SMALL"))
	{
		/* for the sanitizers: the tile kernel's paths on a few blocks */
		check("small-hd-k10", GJ_GEN_CLUSTERS, 700, 300, 200, 10, 0, GJ_KNN_BRUTE, 0, 0, 1.0, seed++);
		check("small-hd-k150-self", GJ_GEN_UNIFORM, 700, 0, 40, 150, 1, GJ_KNN_BRUTE, 0, 0, 1.0, seed++);
		sort_blocks = 1;
		check("small-hd-blocks", GJ_GEN_CLUSTERS, 900, 0, 33, 5, 1, GJ_KNN_BLOCKS, 0, 0, 1.0, seed++);
		sort_blocks = 0;
		/* the block order found on the device, alone and in the self join (an odd row count) */
		check_block_order("small-order", GJ_GEN_CLUSTERS, 1001, 20, seed++);
		order_on_gpu = 2;
		check("small-plan-order", GJ_GEN_CLUSTERS, 1001, 0, 20, 5, 1, GJ_KNN_BLOCKS, 0, 0, 1.0, seed++);
		order_on_gpu = 0;
		gj_gpu_release_cache();	/* the pinned blocks the joins cached: not leaks */
		printf("gpu_knn: %d passed, %d failed\n", passed, failed);
		return failed != 0;
	}
	for (int t = 0; t < 6; t++)
		for (int d = 0; d < 6; d++)
			for (int k = 0; k < 3; k++, seed++)
			{
				check(names[t], kinds[t], 3000, 700, dims[d], ks[k], 0, GJ_KNN_AUTO, 0, 0, 1.0, seed);
				check(names[t], kinds[t], 3000, 0, dims[d], ks[k], 1, GJ_KNN_AUTO, 0, 0, 1.0, seed);
			}
	/* both methods and buffers on one set */
	check("brute-lowdim", GJ_GEN_CLUSTERS, 5000, 1000, 3, 30, 0, GJ_KNN_BRUTE, 1 << 30, 0, 1.0, seed++);
	check("grid-array-k64", GJ_GEN_UNIFORM, 5000, 1000, 2, 64, 1, GJ_KNN_GRID, 1 << 30, 0, 1.0, seed++);
	check("grid-heap-k2", GJ_GEN_UNIFORM, 5000, 1000, 2, 2, 1, GJ_KNN_GRID, 1, 0, 1.0, seed++);
	check("k300", GJ_GEN_EXPONENTIAL, 4000, 500, 3, 300, 0, GJ_KNN_AUTO, 0, 0, 1.0, seed++);
	check("k-above-n", GJ_GEN_UNIFORM, 50, 30, 3, 1000, 1, GJ_KNN_AUTO, 0, 0, 1.0, seed++);
	check("far-queries", GJ_GEN_CLUSTERS, 20000, 2000, 3, 20, 0, GJ_KNN_AUTO, 0, 0, 20.0, seed++);
	/* references in partitions: a memory limit far below their size */
	check("partitions-grid", GJ_GEN_CLUSTERS, 200000, 20000, 3, 20, 0, GJ_KNN_AUTO, 0, 6 << 20, 1.0, seed++);
	check("partitions-self", GJ_GEN_UNIFORM, 200000, 0, 2, 10, 1, GJ_KNN_AUTO, 0, 6 << 20, 1.0, seed++);
	check("partitions-brute", GJ_GEN_UNIFORM, 60000, 5000, 12, 15, 0, GJ_KNN_AUTO, 0, 4 << 20, 1.0, seed++);
	/*
	 * queries sorted on the device, in batches that ramp up (2048, 4096,
	 * 8192, then the rest); then queries too many to sort beside the
	 * index under the limit: 71 MB holds the index of 20K references
	 * (gj_gpu_grid_bytes: 70.3 MB) and two batches of 4096, not the sort
	 * of 200K queries (99 MB), so the host sorts them
	 */
	check("ramp-device-order", GJ_GEN_CLUSTERS, 100000, 30000, 3, 20, 0, GJ_KNN_AUTO, 0, 0, 1.0, seed++);
	expect("ramp-device-order: sorted on the device, 4 batches",
		   last_info.device_order == 1 && last_info.batches == 4);
	check("host-order", GJ_GEN_CLUSTERS, 20000, 200000, 3, 20, 0, GJ_KNN_AUTO, 0, (size_t) 71 << 20,
		  1.0, seed++);
	expect("host-order: sorted on the host", last_info.device_order == 0 && last_info.partitions == 1);
	check("brute-64d", GJ_GEN_UNIFORM, 3000, 500, 64, 10, 0, GJ_KNN_AUTO, 0, 0, 1.0, seed++);
	check("brute-256d", GJ_GEN_CLUSTERS, 1000, 200, 256, 5, 1, GJ_KNN_AUTO, 0, 0, 1.0, seed++);

	/*
	 * many dimensions: the tensor-core filter (knn_tiles.cu) on every kind
	 * of data, including the ones it cannot filter (far clusters, offsets:
	 * then it keeps everything, still exact), ties (duplicates), k past the
	 * heap threshold; and once without the filter
	 */
	{
		static const gj_kind hk[] = {GJ_GEN_UNIFORM, GJ_GEN_EXPONENTIAL, GJ_GEN_CLUSTERS,
		GJ_GEN_DUPLICATES, GJ_GEN_LOWVAR_FIRST, GJ_GEN_OFFSET, GJ_GEN_FAR_CLUSTERS,
		GJ_GEN_LATTICE_STEPS};
		static const char *hn[] = {"hd-uniform", "hd-exponential", "hd-clusters", "hd-duplicates",
		"hd-lowvar-first", "hd-offset", "hd-far-clusters", "hd-lattice-steps"};
		static const int hdims[] = {9, 16, 64, 200, 768};
		static const int64_t hks[] = {1, 10, 40};

		for (int t = 0; t < 8; t++)
			for (int d = 0; d < 5; d++, seed++)
			{
				int64_t		n = hdims[d] <= 64 ? 4000 : 1500;

				check(hn[t], hk[t], n, n / 5, hdims[d], hks[(t + d) % 3], 0, GJ_KNN_BRUTE, 0, 0, 1.0, seed);
				if (hdims[d] >= 16 && t != 5 && t != 6)
					expect("the tensor-core filter ran", last_info.filter == 1);
				check(hn[t], hk[t], n, 0, hdims[d], hks[(t + d + 1) % 3], 1, GJ_KNN_BRUTE, 0, 0, 1.0, seed);
			}
		/* the blocks' index: rows sorted, blocks skipped by their bounds */
		sort_blocks = 1;
		for (int t = 0; t < 8; t++)
			for (int d = 0; d < 5; d += 2, seed++)
			{
				int64_t		n = hdims[d] <= 64 ? 4000 : 1500;

				check(hn[t], hk[t], n, n / 5, hdims[d], hks[(t + d) % 3], 0, GJ_KNN_BLOCKS, 0, 0, 1.0, seed);
				check(hn[t], hk[t], n, 0, hdims[d], hks[(t + d + 1) % 3], 1, GJ_KNN_BLOCKS, 0, 0, 1.0, seed);
			}
		/* ~94 blocks: the blocks' queue fills over several passes, most blocks far */
		check("blocks-queue-far", GJ_GEN_FAR_CLUSTERS, 12000, 3000, 24, 10, 0, GJ_KNN_BLOCKS, 0, 0, 1.0,
			  seed++);
		check("blocks-queue-far-self", GJ_GEN_FAR_CLUSTERS, 12000, 0, 24, 7, 1, GJ_KNN_BLOCKS, 0, 0, 1.0,
			  seed++);
		check("blocks-queue-clusters-self", GJ_GEN_CLUSTERS, 12000, 0, 48, 10, 1, GJ_KNN_BLOCKS, 0, 0,
			  1.0, seed++);
		sort_blocks = 0;
		/* the block order found on the device is the host's */
		check_block_order("uniform-3d", GJ_GEN_UNIFORM, 1001, 3, seed++);	/* 65,535 cuts of 1,001 rows */
		check_block_order("duplicates-9d", GJ_GEN_DUPLICATES, 5000, 9, seed++);	/* equal keys */
		check_block_order("exponential-16d", GJ_GEN_EXPONENTIAL, 20001, 16, seed++);
		check_block_order("clusters-64d", GJ_GEN_CLUSTERS, 30000, 64, seed++);
		check_block_order("lattice-steps-200d", GJ_GEN_LATTICE_STEPS, 3001, 200, seed++);
		check_block_order("offset-768d", GJ_GEN_OFFSET, 2000, 768, seed++);

		/*
		 * a self join's block order given to the engine: as a permutation
		 * (1), or as job.c gives it, a plan whose order the engine finds
		 * (2); gathered on the device, or under a limit with no room for
		 * the rows twice by the host (20,000 x 64 under 40 MB: 10.4 MB of
		 * rows and 27.2 MB of k buffers leave 4.3 MB)
		 */
		for (order_on_gpu = 1; order_on_gpu <= 2; order_on_gpu++)
		{
			for (int t = 0; t < 8; t++)
				for (int d = 0; d < 5; d += 2, seed++)
				{
					check(hn[t], hk[t], hdims[d] <= 64 ? 4000 : 1500, 0, hdims[d], hks[(t + d) % 3], 1,
						  GJ_KNN_BLOCKS, 0, 0, 1.0, seed);
					expect("the rows gathered into block order on the device",
						   last_info.row_gather == 1);
				}
			check(order_on_gpu == 1 ? "order-host" : "plan-order-host", GJ_GEN_CLUSTERS, 20000, 0, 64,
				  10, 1, GJ_KNN_BLOCKS, 0, 40 << 20, 1.0, seed++);
			expect("the rows ordered by the host without room",
				   last_info.row_gather == 0 && last_info.partitions == 1);
		}
		order_on_gpu = 0;
		/* k past a list's capacity (128): every block passes all until k are held */
		check("hd-k300", GJ_GEN_CLUSTERS, 3000, 600, 64, 300, 0, GJ_KNN_BRUTE, 0, 0, 1.0, seed++);
		check("hd-k150-self", GJ_GEN_EXPONENTIAL, 2000, 0, 200, 150, 1, GJ_KNN_BRUTE, 0, 0, 1.0, seed++);
		no_filter = 1;
		check("hd-no-filter", GJ_GEN_CLUSTERS, 3000, 0, 64, 10, 1, GJ_KNN_BRUTE, 0, 0, 1.0, seed++);
		expect("no filter when told", last_info.filter == 0);
		no_filter = 0;
	}
	check("big-self", GJ_GEN_EXPONENTIAL, 300000, 0, 2, 16, 1, GJ_KNN_AUTO, 0, 0, 1.0, seed++);
	gj_gpu_release_cache();		/* the pinned blocks the joins cached */
	printf("gpu_knn: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}

static int
do_bench(void)
{
	static const struct
	{
		const char *name;
		gj_kind		kind;
		int64_t		nref;
		int			dims;
		int64_t		k;
		uint64_t	seed;
	}			cases[] = {
		{"clust3d_1m_k20", GJ_GEN_CLUSTERS, 1000000, 3, 20, 2001},
		{"clust3d_1m_k100", GJ_GEN_CLUSTERS, 1000000, 3, 100, 2001},
		{"clust3d_5m_k20", GJ_GEN_CLUSTERS, 5000000, 3, 20, 2005},
		{"unif2d_1m_k20", GJ_GEN_UNIFORM, 1000000, 2, 20, 2003},
	};

	printf("%-16s %8s %4s | %9s %9s %8s %8s %8s %8s | %9s %9s %8s\n", "case", "refs", "k",
		   "grid_s", "build_s", "start_ms", "index_ms", "alloc_ms", "search_ms", "brute_s", "cpu_s", "brute/grid");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		gj_points	refs,
					qs,
					r1,
					r2;
		gj_knn_options opt = {.k = cases[c].k, .method = GJ_KNN_GRID};
		gj_knnset	a = {0},
					b = {0};
		gj_gpu_knn_info info;
		double		t_grid,
					t_grid2,
					t_brute,
					t_cpu,
					t_build,
					t0;
		gj_grid		g;

		gj_gen_points(&refs, cases[c].kind, cases[c].nref, cases[c].dims, cases[c].seed);
		gj_gen_points(&qs, GJ_GEN_UNIFORM, 100000, cases[c].dims, cases[c].seed + 1);
		gj_points_copy(&r1, &refs, refs.n);
		gj_points_copy(&r2, &refs, refs.n);
		/* warm-up, then the measured run (grid build included) */
		run_gpu(&refs, &qs, &opt, 0, NULL, NULL, &t_grid);
		run_gpu(&refs, &qs, &opt, 0, &a, &info, &t_grid2);
		t_grid = t_grid2;
		t0 = now();
		gj_knn_grid_build(&g, &r2);
		t_build = now() - t0;
		gj_grid_free(&g);
		opt.method = GJ_KNN_BRUTE;
		run_gpu(&r1, &qs, &opt, 0, &b, NULL, &t_brute);
		if (gj_knnset_diff(&a, &b) != NULL)
		{
			printf("%s: GPU grid and GPU brute force differ\n", cases[c].name);
			return 1;
		}
		opt.method = GJ_KNN_GRID;
		t0 = now();
		gj_knn_run_cpu(&r2, &qs, &opt, 0, NULL);
		t_cpu = now() - t0;
		printf("%-16s %8lld %4lld | %9.3f %9.3f %8.1f %8.1f %8.1f %8.1f | %9.3f %9.3f %8.0f\n", cases[c].name,
			   (long long) cases[c].nref, (long long) cases[c].k, t_grid, t_build, info.upload_ms,
			   info.index_ms, info.alloc_ms, info.search_ms, t_brute, t_cpu, t_brute / t_grid);
		printf("%-16s   index: upload+stats %.1f ms, grid %.1f ms, query order %.1f ms; "
			   "first lists at %.1f ms, %lld batches\n", "", info.upload_stats_ms, info.grid_ms,
			   info.order_ms, info.first_ms, (long long) info.batches);
		fflush(stdout);
		gj_knnset_free(&a);
		gj_knnset_free(&b);
		gj_points_free(&refs);
		gj_points_free(&qs);
		gj_points_free(&r1);
		gj_points_free(&r2);
	}
	return 0;
}

#ifdef KT_PROFILE
extern void gj_knn_prof_dump(const char *what);
#define PROF_DUMP(what) gj_knn_prof_dump(what)
#else
#define PROF_DUMP(what) ((void) 0)
#endif

/* Is name one of the space-separated words of list, or does it contain one? */
static int
name_selected(const char *name, const char *list)
{
	char		w[128];
	int			n;

	while (sscanf(list, " %127[^ ]%n", w, &n) == 1)
	{
		if (strstr(name, w) != NULL)
			return 1;
		list += n;
	}
	return 0;
}

/*
 * Many dimensions, brute force: the GPU with the tensor-core filter, the
 * GPU without it (the plain float64 scan), and the CPU engine on a subset
 * of the queries, scaled to all of them (brute force costs the same per
 * query).  Self kNN, k = 10.
 */
static int
do_bench_hd(void)
{
	static const struct
	{
		const char *name;
		gj_kind		kind;
		int64_t		n;
		int			dims;
		int			cosine;
	}			cases[] = {
		{"clusters 1M x 128", GJ_GEN_CLUSTERS, 1000000, 128, 0},
		{"clusters 100K x 768 cosine", GJ_GEN_CLUSTERS, 100000, 768, 1},
		{"uniform 200K x 64", GJ_GEN_UNIFORM, 200000, 64, 0},
		{"uniform 100K x 768", GJ_GEN_UNIFORM, 100000, 768, 0},
		{"exponential 1M x 16", GJ_GEN_EXPONENTIAL, 1000000, 16, 0},
		{"uniform 500K x 8", GJ_GEN_UNIFORM, 500000, 8, 0},
	};
	/* GJ_BENCH_CASES: only the cases whose names contain one of its words; GJ_BENCH_QUICK: GPU only */
	const char *only = getenv("GJ_BENCH_CASES");
	int			quick = getenv("GJ_BENCH_QUICK") != NULL;

	gj_gpu_ceilings ceil_rate;
	char		cerr[256] = "";

	if (gj_gpu_measure_ceilings(&ceil_rate, cerr, sizeof(cerr)) != GJ_OK)
	{
		printf("ceilings: %s\n", cerr);
		return 1;
	}
	printf("measured ceilings: FP64 mma %.1f TFLOP/s, TF32 mma.sync %.1f TFLOP/s (limits: every "
		   "ordered pair, 2 flops a pair-dimension; TF32 dimensions padded to 8)\n\n",
		   ceil_rate.fp64_tensor / 1e12, ceil_rate.tf32_tensor / 1e12);
	printf("| case | GPU brute s | GPU blocks s (sort) | same | GPU float64 scan s | CPU s (scaled) | GPU vs CPU | TF32 limit s | FP64 Gram limit s | brute / FP64 Gram | contrast (ms) | auto: its time / best |\n");
	printf("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		gj_points	refs,
					sub;
		gj_knn_options opt = {.k = 10, .exclude_self = 1, .method = GJ_KNN_BRUTE};
		gj_knnset	a = {0},
					b = {0};
		gj_gpu_knn_info info;
		double		t1,
					t2,
					tb,
					tc,
					t0;
		int64_t		nz,
					m = 1000;
		double		limit = (double) cases[c].n * cases[c].n * 2.0 * ((cases[c].dims + 7) / 8 * 8) /
			ceil_rate.tf32_tensor;
		double		gram = (double) cases[c].n * cases[c].n * 2.0 * cases[c].dims / ceil_rate.fp64_tensor;

		if (only != NULL && !name_selected(cases[c].name, only))
			continue;
		gj_gen_points(&refs, cases[c].kind, cases[c].n, cases[c].dims, 3001 + c);
		if (cases[c].cosine)
			gj_points_normalize(&refs, &nz);
		if (getenv("GJ_BENCH_NO_BRUTE"))
		{
			/* profiling the blocks' kernel alone (ncu): brute force not run, "same" means nothing */
			memset(&info, 0, sizeof(info));
			t1 = -1.0;
			printf("%s: brute force not run (GJ_BENCH_NO_BRUTE)\n", cases[c].name);
		}
		else
		{
			run_gpu(&refs, NULL, &opt, 0, NULL, NULL, &t1);	/* warm-up */
			PROF_DUMP("warm-up");
			run_gpu(&refs, NULL, &opt, 0, &a, &info, &t1);
			PROF_DUMP(cases[c].name);
		}
		no_filter = 1;
		if (cases[c].n <= 200000 && !quick)
		{
			run_gpu(&refs, NULL, &opt, 0, &b, NULL, &t2);
			if (gj_knnset_diff(&a, &b) != NULL)
			{
				printf("%s: filter and plain scan differ\n", cases[c].name);
				return 1;
			}
		}
		else
			t2 = -1;
		no_filter = 0;
		/* the CPU: m queries against every reference */
		gj_points_copy(&sub, &refs, m);
		if (quick)
			tc = 0.0;
		else
		{
			gj_knn_options o2 = opt;
			gj_points	r = refs;

			o2.exclude_self = 0;
			t0 = now();
			gj_knn_run_cpu(&r, &sub, &o2, 0, NULL);
			tc = (now() - t0) * (double) cases[c].n / (double) m;
		}
		{
			/* the blocks' index: the host sort, then the GPU */
			gj_points	sorted;
			gj_knn_options ob = opt;
			gj_knnset	d = {0};
			double		ts;

			ob.method = GJ_KNN_BLOCKS;
			gj_points_copy(&sorted, &refs, refs.n);
			ts = now();
			gj_points_block_order(&sorted);
			ts = now() - ts;
			run_gpu(&sorted, NULL, &ob, 0, NULL, NULL, &tb);	/* warm-up */
			PROF_DUMP("warm-up");
			run_gpu(&sorted, NULL, &ob, 0, &d, NULL, &tb);
			PROF_DUMP("blocks");
			tb += ts;
			for (int mode = 1; mode <= 2; mode++)
			{
				/*
				 * the same with the rows gathered on the device: the order
				 * found on the host (1), or only planned there and found on
				 * the device (2, job.c's path)
				 */
				gj_points	rows;
				gj_knnset	e = {0};
				gj_gpu_knn_info gi = {0};
				uint32_t   *perm = NULL;
				gj_block_plan plan = {0};
				double		tp,
							tg;

				gj_points_copy(&rows, &refs, refs.n);
				tp = now();
				if (mode == 1)
					gj_points_block_perm(&rows, &perm);
				else
					gj_block_plan_make(&rows, &plan);
				tp = now() - tp;
				row_order = perm;
				block_plan = mode == 2 ? &plan : NULL;
				run_gpu(&rows, NULL, &ob, 0, &e, &gi, &tg);
				row_order = NULL;
				block_plan = NULL;
				PROF_DUMP(mode == 1 ? "blocks, gathered on the device" : "blocks, ordered on the device");
				printf("%s: blocks with the %s: %.3f s (host %s %.3f s, on the device %d), %s; "
					   "with the host's gather %.3f s (sort %.3f s)\n", cases[c].name,
					   mode == 1 ? "rows gathered on the device" : "order found on the device",
					   tg + tp, mode == 1 ? "order" : "plan", tp, gi.row_gather,
					   gj_knnset_diff(&d, &e) == NULL ? "same" : "DIFFERENT", tb, ts);
				free(perm);
				gj_block_plan_free(&plan);
				gj_knnset_free(&e);
				gj_points_free(&rows);
			}
			{
				/* auto's sampled choice (knn_contrast.c), timed: it runs in every auto query */
				gj_knn_options oa = opt;
				double		contrast,
							tcon = now();
				gj_knn_method am;

				oa.method = GJ_KNN_AUTO;
				am = gj_knn_auto_method(&oa, &refs, &contrast);
				tcon = now() - tcon;
				printf("| %s | %.3f (filter %d) | %.3f (%.3f) | %s | %.3f | %.1f | %.0fx | %.3f | %.3f | %.2f | %.3f (%.1f) | %s: %.2f |\n",
					   cases[c].name, t1, info.filter, tb, ts,
					   gj_knnset_diff(&a, &d) == NULL ? "same" : "DIFFERENT", t2, tc,
					   tc / (tb < t1 ? tb : t1), limit, gram, t1 / gram, contrast, tcon * 1e3,
					   am == GJ_KNN_BLOCKS ? "blocks" : "brute",
					   ((am == GJ_KNN_BLOCKS ? tb : t1) + tcon) / (tb < t1 ? tb : t1));
			}
			gj_knnset_free(&d);
			gj_points_free(&sorted);
		}
		gj_knnset_free(&a);
		gj_knnset_free(&b);
		gj_points_free(&refs);
		gj_points_free(&sub);
	}
	if (only == NULL || name_selected("join", only))
	{
		/*
		 * knn_join of two tables in many dimensions: the queries are
		 * uploaded once when they fit (upload_queries), else staged by
		 * batch through pinned buffers; the same neighbours either way
		 */
		gj_points	refs,
					qs;
		gj_knn_options oj = {.k = 10, .exclude_self = 0, .method = GJ_KNN_BRUTE};
		gj_knnset	a = {0},
					b = {0};
		double		t1,
					t2;

		gj_gen_points(&refs, GJ_GEN_UNIFORM, 100000, 768, 3101);
		gj_gen_points(&qs, GJ_GEN_UNIFORM, 100000, 768, 3102);
		run_gpu(&refs, &qs, &oj, 0, NULL, NULL, &t1);	/* warm-up */
		run_gpu(&refs, &qs, &oj, 0, &a, NULL, &t1);
		/* a memory limit that leaves no room for every query: staged */
		run_gpu(&refs, &qs, &oj, (size_t) 1400 << 20, &b, NULL, &t2);
		printf("knn_join 100K x 768 queries, 100K references, k = 10: %.3f s (queries uploaded once), "
			   "%.3f s (staged, 1400 MB limit), %s\n", t1, t2,
			   gj_knnset_diff(&a, &b) == NULL ? "same" : "DIFFERENT");
		gj_knnset_free(&a);
		gj_knnset_free(&b);
		gj_points_free(&refs);
		gj_points_free(&qs);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	gj_cuda_device_info dev;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (gj_cuda_probe(&dev) != GJ_OK)
	{
		printf("no usable GPU: %s\ngpu_knn: 0 passed, 1 failed\n", dev.error);
		return 1;
	}
	printf("device: %s (sm_%d%d, %d SMs)\n", dev.name, dev.major, dev.minor, dev.sm_count);
	if (argc > 1 && strcmp(argv[1], "bench") == 0)
		return do_bench();
	if (argc > 1 && strcmp(argv[1], "benchhd") == 0)
		return do_bench_hd();
	return do_check();
}
