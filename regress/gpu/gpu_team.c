/*
 * gpu_team.c
 *		One join on several GPUs (kernels/team.cu) against the same join on
 *		one, then the benchmark of the two workloads.
 *
 *	gpu_team [check|bench]
 *
 * check: the tile join (eps, many dimensions: brute force and the blocks'
 * index, ids and rows, two sets, small buffers that overflow and rerun,
 * slices that do not fit at once) and the kNN join (brute force with the
 * filter, blocks in the device's order, the grid's device index, separate
 * queries, heap buffers) run by a team whose members are GPU 0 twice and,
 * where there are two GPUs, GPUs 0 and 1; the rows must be the single
 * GPU's exactly (as multisets: a pair found by two members, or by none,
 * fails), and the team must really have started (no silent fall back to
 * one GPU).  How the batches split is printed (GJ_VERBOSE), not checked:
 * on cases this small one member may take every batch before the other
 * has started, which is right; the benchmark's split is the real test.  Then the cases
 * where a team must not start (kNN references that the engine would
 * reorder on the host) fall back to one GPU with the same rows and say
 * why, and a team freed part-way stops within a second.
 * Last line: "gpu_team: N passed, N failed".
 *
 * bench: Syn32D2M eps 0.08 (2M exponential points in 32-D, brute force and
 * blocks) and 1M x 128-D clusters kNN k = 10 (brute force and blocks), on
 * GPU 0 alone and on every visible GPU: a run of each that stores the
 * rows, which are compared, then the best of two runs each that count
 * them (timed), and how the batches split between the members.  GJ_VERBOSE=1
 * prints each kNN member's start and search, GJ_VERBOSE=2 also each of its
 * batches (gj_gpu_knn_batches: queued, on the host, emitted, device time).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "core_internal.h"
#include "datagen.h"
#include "gj_cuda.h"
#include "gpu_bench.h"
#include "knnset.h"
#include "pairset.h"

static int	passed = 0;
static int	failed = 0;
static int	ngpus = 0;

/*
 * Where the run is, for the watchdog: a run that does not end within
 * GJ_TEAM_ALARM seconds (default 60 a case) says where it stopped and aborts,
 * rather than leaving only its step's timeout behind.
 */
static char stage[200] = "start";

static void
stage_set(const char *what, const char *name, int a, int b)
{
	snprintf(stage, sizeof(stage), "%s %s (GPUs %d,%d)\n", what, name, a, b);
	alarm(getenv("GJ_TEAM_ALARM") ? atoi(getenv("GJ_TEAM_ALARM")) : 60);
}

static void
watchdog(int sig)
{
	(void) sig;
	if (write(1, "WATCHDOG: stuck in ", 19) < 0 || write(1, stage, strlen(stage)) < 0)
		_exit(3);
	_exit(3);
}

/* GJ_TEAM_CASES: only the cases whose names contain one of its words */
static int
selected(const char *name)
{
	const char *only = getenv("GJ_TEAM_CASES");
	char		w[128];
	int			n;

	if (only == NULL)
		return 1;
	while (sscanf(only, " %127[^ ]%n", w, &n) == 1)
	{
		if (strstr(name, w) != NULL)
			return 1;
		only += n;
	}
	return 0;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
result(int ok, const char *what, const char *detail)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s: %s\n", what, detail);
	}
}

/* A team's members' batches ("12+15"), and whether each ran some. */
static int
member_batches(gj_engine *e, char *buf, size_t len)
{
	int			all = 1;
	size_t		at = 0;

	buf[0] = '\0';
	for (int i = 0; i < gj_team_size(e); i++)
	{
		gj_engine_report r;

		gj_engine_report_of(gj_team_member(e, i), &r);
		all &= r.batches > 0;
		at += snprintf(buf + at, at < len ? len - at : 0, "%s%lld", i ? "+" : "",
					   (long long) r.batches);
	}
	return all;
}

/* GPU options over devices (n of them; 0: one GPU, no team). */
static gj_gpu_options
options(const int *devices, int n)
{
	gj_gpu_options g;

	memset(&g, 0, sizeof(g));
	g.ndevices = n;
	for (int i = 0; i < n; i++)
		g.devices[i] = devices[i];
	return g;
}

/* --- the tile join ---------------------------------------------------------- */

typedef struct tiles_run
{
	gj_status	st;
	int			members;
	int			all_worked;
	char		batches[64];
	char		err[256];
	double		secs;
	double		start_ms;		/* the engine's start (the team's: all members') */
	int64_t		pairs;
} tiles_run;

/* Rows of a run into set (ids; rows mapped through p). */
static tiles_run
run_tiles(const gj_points *p, const gj_tiles_options *o, gj_gpu_options g, gj_pairset *set,
		  int stop_after_one)
{
	tiles_run	r;
	gj_gpu_tiles *j;
	double		t0 = now();

	memset(&r, 0, sizeof(r));
	if (gj_gpu_use_device(g.ndevices > 0 ? g.devices[0] : 0, r.err, sizeof(r.err)) != GJ_OK)
	{
		r.st = GJ_ERR_NODEVICE;
		return r;
	}
	r.st = gj_gpu_tiles_start(p, o, &g, &j, r.err, sizeof(r.err));
	r.start_ms = (now() - t0) * 1e3;
	if (r.st != GJ_OK)
		return r;
	for (;;)
	{
		gj_chunk   *c;

		r.st = gj_engine_next(GJ_ENGINE(j), 100, &c);
		if (r.st == GJ_AGAIN)
			continue;
		if (r.st != GJ_OK)
			break;
		r.pairs += c->n;
		for (int k = 0; set != NULL && k < c->n; k++)
			if (o->emit_rows)
				gj_pairset_add(set, p->ids[c->a[k]], p->ids[c->b[k]], c->dist[k]);
			else
				gj_pairset_add(set, c->a[k], c->b[k], c->dist[k]);
		gj_engine_release(GJ_ENGINE(j), c);
		if (stop_after_one)
		{
			r.st = GJ_DONE;
			break;
		}
	}
	r.secs = now() - t0;
	r.members = gj_team_size(GJ_ENGINE(j));
	r.all_worked = member_batches(GJ_ENGINE(j), r.batches, sizeof(r.batches));
	if (r.st != GJ_DONE)
		snprintf(r.err, sizeof(r.err), "%s", gj_gpu_tiles_error(j));
	t0 = now();
	gj_engine_free(GJ_ENGINE(j));
	if (stop_after_one)
		r.secs = now() - t0;	/* how long the free took */
	return r;
}

/* One tile case: one GPU, then each team; equal rows, every member working. */
static void
check_tiles(const char *name, const gj_points *p, gj_tiles_options o, int64_t batch,
			int64_t slice)
{
	static const int teams[][2] = {{0, 0}, {0, 1}};
	gj_pairset	want = {0};
	gj_gpu_options g1 = options(NULL, 0);
	tiles_run	one;
	char		what[160],
				detail[512];

	if (!selected(name))
		return;
	g1.batch_pairs = batch;
	g1.slice_rows = slice;
	stage_set("tiles, one GPU:", name, 0, 0);
	one = run_tiles(p, &o, g1, &want, 0);
	snprintf(what, sizeof(what), "tiles %s: one GPU", name);
	result(one.st == GJ_DONE && want.n > 0, what, one.err);
	for (int t = 0; t < 2 && one.st == GJ_DONE; t++)
	{
		gj_pairset	got = {0};
		gj_gpu_options g = options(teams[t], 2);
		tiles_run	r;
		const char *why;
		int64_t		at = -1;

		if (teams[t][1] >= ngpus)
			continue;
		g.batch_pairs = batch;
		g.slice_rows = slice;
		stage_set("tiles, team:", name, teams[t][0], teams[t][1]);
		r = run_tiles(p, &o, g, &got, 0);
		why = r.st != GJ_DONE ? gj_status_name(r.st) :
			r.members != 2 ? "the team did not start" :
			gj_pairset_diff(&want, &got, &at);
		snprintf(what, sizeof(what), "tiles %s: GPUs %d,%d", name, teams[t][0], teams[t][1]);
		snprintf(detail, sizeof(detail), "%s (%s; %lld pairs, one GPU %lld; batches %s; team: %s)",
				 why ? why : "", r.err, (long long) got.n, (long long) want.n, r.batches,
				 gj_gpu_team_failure());
		result(why == NULL, what, detail);
		if (getenv("GJ_VERBOSE"))
			printf("  %s: %lld pairs, batches %s, %.3f s (one GPU %.3f s)\n", what,
				   (long long) got.n, r.batches, r.secs, one.secs);
		gj_pairset_free(&got);
	}
	gj_pairset_free(&want);
}

/* --- the kNN join ----------------------------------------------------------- */

typedef struct knn_run
{
	gj_status	st;
	int			members;
	int			all_worked;
	char		batches[64];
	char		err[256];
	double		secs;
	double		start_ms;
	int64_t		rows;
} knn_run;

/* Where each member's start and search went (GJ_VERBOSE: the benchmark's breakdown). */
/* GJ_VERBOSE=2: each batch of a member, where its time went. */
static void
print_knn_batches(const gj_gpu_knn *m)
{
	gj_knn_batch_log L[GJ_KNN_BATCH_LOG];
	int			n = gj_gpu_knn_batches(m, L, GJ_KNN_BATCH_LOG);

	for (int b = 0; b < n; b++)
		printf("      batch %2d: queries %7lld + %6lld, queued %6.1f ms, on the host %6.1f, "
			   "emitted %6.1f; device %5.1f ms\n", b, (long long) L[b].q0, (long long) L[b].n,
			   L[b].launched_ms, L[b].ready_ms, L[b].emitted_ms, L[b].gpu_ms);
}

static void
print_knn_members(gj_engine *team)
{
	for (int i = 0; i < gj_team_size(team); i++)
	{
		gj_gpu_knn_info st;

		gj_gpu_knn_stats((const gj_gpu_knn *) gj_team_member(team, i), &st);
		printf("    member %d: start %.1f ms (index %.1f, buffers %.1f, refs up %.1f, "
			   "order and gather %.1f, filter %.1f, plan's fingerprint %.1f), first list %.1f ms, "
			   "search %.1f ms, %lld batches\n",
			   i, st.upload_ms, st.index_ms, st.alloc_ms, st.refs_up_ms, st.gather_ms,
			   st.filter_ms, st.publish_ms,
			   st.first_ms, st.search_ms, (long long) st.batches);
		if (getenv("GJ_VERBOSE")[0] == '2')
			print_knn_batches((const gj_gpu_knn *) gj_team_member(team, i));
	}
}

static knn_run
run_knn(gj_points *refs, const gj_points *qs, const gj_knn_options *opt, gj_gpu_options g,
		gj_knnset *set)
{
	knn_run		r;
	gj_gpu_knn *j;
	double		t0 = now();

	memset(&r, 0, sizeof(r));
	if (gj_gpu_use_device(g.ndevices > 0 ? g.devices[0] : 0, r.err, sizeof(r.err)) != GJ_OK)
	{
		r.st = GJ_ERR_NODEVICE;
		return r;
	}
	stage[0] = 's';				/* "s..." : in the engine's start */
	r.st = gj_gpu_knn_start(refs, qs != NULL ? qs : refs, opt, &g, &j, r.err, sizeof(r.err));
	r.start_ms = (now() - t0) * 1e3;
	if (r.st != GJ_OK)
		return r;
	stage[0] = 'd';				/* "d..." : draining it */
	for (;;)
	{
		gj_chunk   *c;

		r.st = gj_engine_next(GJ_ENGINE(j), 100, &c);
		if (r.st == GJ_AGAIN)
			continue;
		if (r.st != GJ_OK)
			break;
		r.rows += c->n;
		for (int k = 0; set != NULL && k < c->n; k++)
			gj_knnset_add(set, c->a[k], c->rank[k], c->b[k], c->dist[k]);
		gj_engine_release(GJ_ENGINE(j), c);
	}
	r.secs = now() - t0;
	r.members = gj_team_size(GJ_ENGINE(j));
	r.all_worked = member_batches(GJ_ENGINE(j), r.batches, sizeof(r.batches));
	if (r.st != GJ_DONE)
		snprintf(r.err, sizeof(r.err), "%s", gj_gpu_knn_error(j));
	if (getenv("GJ_VERBOSE"))
		print_knn_members(GJ_ENGINE(j));
	stage[0] = 'f';				/* "f..." : freeing it */
	gj_engine_free(GJ_ENGINE(j));
	return r;
}

/*
 * One kNN case: one GPU on a copy of refs, each team on another (an engine
 * may sort its references).  team_starts 0: the team must fall back to one
 * GPU and say why.
 */
static void
check_knn(const char *name, const gj_points *refs, const gj_points *qs, gj_knn_options opt,
		  const gj_block_plan *plan, size_t mem, int team_starts)
{
	static const int teams[][2] = {{0, 0}, {0, 1}};
	gj_knnset	want = {0};
	gj_points	r1;
	gj_gpu_options g1 = options(NULL, 0);
	knn_run		one;
	char		what[160],
				detail[512];

	if (!selected(name))
		return;
	g1.block_plan = plan;
	g1.memory_limit = mem;
	stage_set("knn, one GPU:", name, 0, 0);
	gj_points_copy(&r1, refs, refs->n);
	one = run_knn(&r1, qs, &opt, g1, &want);
	gj_points_free(&r1);
	snprintf(what, sizeof(what), "knn %s: one GPU", name);
	result(one.st == GJ_DONE && want.n > 0, what, one.err);
	if (one.st == GJ_DONE && getenv("GJ_TEAM_CPU") != NULL)
	{
		/* the one GPU against the CPU engine, where a team's failure needs a referee */
		gj_knnset	cpu = {0};
		gj_knn_options o1 = opt;
		const char *why;

		if (o1.method == GJ_KNN_BLOCKS)
			o1.method = GJ_KNN_BRUTE;
		gj_points_copy(&r1, refs, refs->n);
		why = gj_knn_run_cpu(&r1, qs, &o1, 0, &cpu) != GJ_DONE ? "cpu failed" :
			gj_knnset_diff(&cpu, &want);
		gj_points_free(&r1);
		snprintf(what, sizeof(what), "knn %s: one GPU = CPU engine", name);
		result(why == NULL, what, why != NULL ? why : "");
		gj_knnset_free(&cpu);
	}
	for (int t = 0; t < 2 && one.st == GJ_DONE; t++)
	{
		gj_knnset	got = {0};
		gj_gpu_options g = options(teams[t], 2);
		knn_run		r;
		const char *why;

		if (teams[t][1] >= ngpus)
			continue;
		g.block_plan = plan;
		g.memory_limit = mem;
		gj_points_copy(&r1, refs, refs->n);
		stage_set("knn, team:", name, teams[t][0], teams[t][1]);
		r = run_knn(&r1, qs, &opt, g, &got);
		gj_points_free(&r1);
		why = r.st != GJ_DONE ? gj_status_name(r.st) :
			team_starts && r.members != 2 ? "the team did not start" :
			!team_starts && (r.members != 1 || gj_gpu_team_failure()[0] == '\0') ?
			"the team started, or fell back without a reason" :
			gj_knnset_diff(&want, &got);
		snprintf(what, sizeof(what), "knn %s: GPUs %d,%d%s", name, teams[t][0], teams[t][1],
				 team_starts ? "" : " (falls back to one)");
		snprintf(detail, sizeof(detail), "%s (%s; %lld rows, one GPU %lld; batches %s; team: %s)",
				 why ? why : "", r.err, (long long) got.n, (long long) want.n, r.batches,
				 gj_gpu_team_failure());
		result(why == NULL, what, detail);
		if (getenv("GJ_VERBOSE"))
			printf("  %s: %lld rows, batches %s, %.3f s (one GPU %.3f s) %s\n", what,
				   (long long) got.n, r.batches, r.secs, one.secs, gj_gpu_team_failure());
		gj_knnset_free(&got);
	}
	gj_knnset_free(&want);
}

/* eps giving about nb neighbours a row: the median over 40 rows of their nb-th. */
static double
eps_for(const gj_points *p, int nb)
{
	double		kth[40];

	for (int s = 0; s < 40; s++)
	{
		int64_t		i = (int64_t) s * (p->n / 40);
		double		best[64];
		int			m = 0;

		for (int64_t k = 0; k < p->n; k++)
		{
			double		d = gj_sqdist(p->x + i * p->dims, p->x + k * p->dims, p->dims);
			int			at;

			if (m < nb + 1)
				m++;
			else if (d >= best[m - 1])
				continue;
			for (at = m - 1; at > 0 && best[at - 1] > d; at--)
				best[at] = best[at - 1];
			best[at] = d;
		}
		kth[s] = best[m - 1];
	}
	for (int a = 1; a < 40; a++)
		for (int b = a; b > 0 && kth[b - 1] > kth[b]; b--)
		{
			double		t = kth[b];

			kth[b] = kth[b - 1];
			kth[b - 1] = t;
		}
	return sqrt(kth[20]);
}

static int
check_main(void)
{
	gj_points	p,
				sorted,
				two[2],
				q;
	double		eps;
	int64_t		ns;
	gj_block_plan plan = {0};

	/*
	 * the staged upload that every member's references take (pageable
	 * memory through the copiers' pinned chunks; page-locked memory by one
	 * DMA), on each device, past the size where staging starts
	 */
	for (int dev = 0; dev < ngpus && dev < 2; dev++)
		for (int pin = 0; pin < 2; pin++)
		{
			char		what[64],
						err[256];
			int			r;

			snprintf(what, sizeof(what), "staged upload, GPU %d, %s", dev,
					 pin ? "page-locked" : "pageable");
			r = gj_gpu_use_device(dev, err, sizeof(err)) == GJ_OK ?
				gj_bench_upload_roundtrip(((size_t) 200 << 20) + 12345, pin) : -2;
			result(r == 0, what, r == -1 ? "bytes differ" : "no device or no buffers");
		}

	/* the tile join */
	gj_gen_points(&p, GJ_GEN_UNIFORM, 24000, 16, 11);
	eps = eps_for(&p, 8);
	check_tiles("uniform 24K x 16 brute", &p, (gj_tiles_options) {.eps2 = eps * eps}, 0, 0);
	check_tiles("uniform 24K x 16 rows", &p, (gj_tiles_options) {.eps2 = eps * eps, .emit_rows = 1},
				0, 0);
	check_tiles("uniform 24K x 16 small buffers", &p, (gj_tiles_options) {.eps2 = eps * eps},
				4096, 0);
	check_tiles("uniform 24K x 16 in slices", &p, (gj_tiles_options) {.eps2 = eps * eps}, 0, 7000);
	gj_points_free(&p);

	gj_gen_points(&p, GJ_GEN_CLUSTERS, 40000, 32, 12);
	eps = eps_for(&p, 20);
	gj_points_copy(&sorted, &p, p.n);
	if (gj_points_block_order(&sorted) != GJ_OK)
		return 2;
	check_tiles("clusters 40K x 32 blocks", &sorted,
				(gj_tiles_options) {.eps2 = eps * eps, .prune = 1}, 0, 0);
	check_tiles("clusters 40K x 32 blocks, slices", &sorted,
				(gj_tiles_options) {.eps2 = eps * eps, .prune = 1}, 0, 9000);
	gj_gen_two_sets_sorted(two, &p, 15000, 0, eps * eps, &ns);
	check_tiles("clusters two sets", &two[0],
				(gj_tiles_options) {.eps2 = eps * eps, .cross = 1, .split = 15000}, 0, 0);
	check_tiles("clusters two sets, blocks", &two[1],
				(gj_tiles_options) {.eps2 = eps * eps, .cross = 1, .split = 15000, .prune = 1}, 0, 0);
	gj_points_free(&two[0]);
	gj_points_free(&two[1]);

	/* a team freed after its first chunk stops within a second */
	{
		static const int devs[2] = {0, 0};
		tiles_run	r = run_tiles(&p, &(gj_tiles_options) {.eps2 = eps * eps}, options(devs, 2),
								  NULL, 1);
		char		detail[320];

		snprintf(detail, sizeof(detail), "%s: freed in %.3f s", r.err, r.secs);
		result(r.st == GJ_DONE && r.members == 2 && r.secs < 1.0,
			   "tiles: a team freed after its first chunk", detail);
	}
	gj_points_free(&sorted);
	gj_points_free(&p);

	/* the kNN join */
	gj_gen_points(&p, GJ_GEN_CLUSTERS, 30000, 128, 21);
	check_knn("clusters 30K x 128 brute", &p, NULL,
			  (gj_knn_options) {.k = 10, .exclude_self = 1, .method = GJ_KNN_BRUTE}, NULL, 0, 1);
	if (gj_block_plan_make(&p, &plan) != GJ_OK)
		return 2;
	check_knn("clusters 30K x 128 blocks (device order)", &p, NULL,
			  (gj_knn_options) {.k = 10, .exclude_self = 1, .method = GJ_KNN_BLOCKS}, &plan, 0, 1);
	check_knn("clusters 30K x 128 heap k 40", &p, NULL,
			  (gj_knn_options) {.k = 40, .exclude_self = 1, .method = GJ_KNN_BRUTE}, NULL, 0, 1);
	gj_gen_points(&q, GJ_GEN_UNIFORM, 7000, 128, 22);
	check_knn("clusters 30K x 128, separate queries", &p, &q,
			  (gj_knn_options) {.k = 5, .method = GJ_KNN_BRUTE}, NULL, 0, 1);
	/* fewer queries than a thread block: one small batch, which one member takes */
	q.n = 3;
	check_knn("clusters 30K x 128, 3 separate queries", &p, &q,
			  (gj_knn_options) {.k = 5, .method = GJ_KNN_BRUTE}, NULL, 0, 1);
	q.n = 7000;
	/*
	 * k so large that a batch holds fewer queries than a team's smallest
	 * batch (16M entries / 17,000 = 986 < 1024): the team must not ask for
	 * more queries than its buffers hold (745d2e5 did, past their end)
	 */
	{
		gj_points	big;

		gj_gen_points(&big, GJ_GEN_UNIFORM, 20000, 8, 25);
		gj_gen_points(&q, GJ_GEN_UNIFORM, 1800, 8, 26);
		check_knn("uniform 20K x 8, 1,800 queries, k 17000", &big, &q,
				  (gj_knn_options) {.k = 17000, .method = GJ_KNN_BRUTE}, NULL, 0, 1);
		gj_points_free(&big);
		gj_points_free(&q);
		gj_gen_points(&q, GJ_GEN_UNIFORM, 7000, 128, 22);
	}
	/* no room for the rows twice: the order would be applied on the host */
	check_knn("clusters 30K x 128 blocks, host order", &p, NULL,
			  (gj_knn_options) {.k = 10, .exclude_self = 1, .method = GJ_KNN_BLOCKS}, &plan,
			  (size_t) 40 << 20, 0);
	gj_block_plan_free(&plan);
	gj_points_free(&q);
	gj_points_free(&p);

	gj_gen_points(&p, GJ_GEN_CLUSTERS, 300000, 3, 23);
	gj_gen_points(&q, GJ_GEN_UNIFORM, 50000, 3, 24);
	check_knn("clusters 300K x 3 grid (device index)", &p, NULL,
			  (gj_knn_options) {.k = 8, .exclude_self = 1, .method = GJ_KNN_GRID}, NULL, 0, 1);
	check_knn("clusters 300K x 3 grid, separate queries", &p, &q,
			  (gj_knn_options) {.k = 8, .method = GJ_KNN_GRID}, NULL, 0, 1);
	/* references past the memory limit: sorted on the host, so one GPU runs it */
	check_knn("clusters 300K x 3 grid, host partitions", &p, &q,
			  (gj_knn_options) {.k = 8, .method = GJ_KNN_GRID}, NULL, (size_t) 6 << 20, 0);
	gj_points_free(&q);
	gj_points_free(&p);

	printf("gpu_team: %d passed, %d failed\n", passed, failed);
	return failed > 0;
}

/* --- the benchmark ------------------------------------------------------------ */

/*
 * The faster of two timed runs.  The timed runs only count the rows: the
 * run that stores them for the comparison (each way's first, which also
 * pays for a cold start: contexts, peer access, pinned blocks) times the
 * bench's own set more than the engine (12-17 ms a kNN batch to store,
 * 4.5 to count), and a team's members emit twice as fast into it.
 */
static tiles_run
best_tiles(tiles_run x, tiles_run y)
{
	return x.st == GJ_DONE && (y.st != GJ_DONE || x.secs <= y.secs) ? x : y;
}

static knn_run
best_knn(knn_run x, knn_run y)
{
	return x.st == GJ_DONE && (y.st != GJ_DONE || x.secs <= y.secs) ? x : y;
}

static void
bench_tiles(const char *name, const gj_points *p, gj_tiles_options o, const int *all, int n)
{
	gj_pairset	a = {0},
				b = {0};
	tiles_run	r1,
				r2,
				t1,
				t2;
	const char *why;
	int64_t		at;

	/* the rows first (each way's first run, cold), then two timed runs each that count them */
	r2 = run_tiles(p, &o, options(NULL, 0), &a, 0);
	t2 = run_tiles(p, &o, options(all, n), &b, 0);
	r1 = best_tiles(run_tiles(p, &o, options(NULL, 0), NULL, 0), run_tiles(p, &o, options(NULL, 0), NULL, 0));
	t1 = best_tiles(run_tiles(p, &o, options(all, n), NULL, 0), run_tiles(p, &o, options(all, n), NULL, 0));
	why = r2.st != GJ_DONE || t2.st != GJ_DONE ? "failed" : gj_pairset_diff(&a, &b, &at);
	printf("| %s | %lld | %.3f | %.3f | %d | **%.2fx** | %s | %s | %.0f / %.0f |\n", name,
		   (long long) a.n, r1.secs, t1.secs, t1.members, r1.secs / t1.secs, why ? why : "same",
		   t1.batches, r1.start_ms, t1.start_ms);
	if (why != NULL || r1.st != GJ_DONE || t1.st != GJ_DONE)
		failed++;
	gj_pairset_free(&a);
	gj_pairset_free(&b);
}

static void
bench_knn(const char *name, const gj_points *refs, gj_knn_options opt, const gj_block_plan *plan,
		  const int *all, int n)
{
	gj_knnset	a = {0},
				b = {0};
	gj_gpu_options g1 = options(NULL, 0),
				gn = options(all, n);
	knn_run		r1,
				r2,
				t1,
				t2;
	gj_points	r;
	const char *why;
	int			pinned;

	g1.block_plan = gn.block_plan = plan;
	gj_points_copy(&r, refs, refs->n);
	pinned = getenv("GJ_TEAM_PINNED") != NULL &&
		gj_bench_pin(r.x, sizeof(double) * r.dims * r.n, 1) == 0;
	/* the rows first (each way's first run, cold), then two timed runs each that count them */
	r2 = run_knn(&r, NULL, &opt, g1, &a);
	t2 = run_knn(&r, NULL, &opt, gn, &b);
	r1 = best_knn(run_knn(&r, NULL, &opt, g1, NULL), run_knn(&r, NULL, &opt, g1, NULL));
	t1 = best_knn(run_knn(&r, NULL, &opt, gn, NULL), run_knn(&r, NULL, &opt, gn, NULL));
	why = r2.st != GJ_DONE || t2.st != GJ_DONE ? "failed" : gj_knnset_diff(&a, &b);
	printf("| %s%s | %lld | %.3f | %.3f | %d | **%.2fx** | %s | %s | %.0f / %.0f |\n", name,
		   pinned ? ", rows in pinned memory" : "",
		   (long long) a.n, r1.secs, t1.secs, t1.members, r1.secs / t1.secs, why ? why : "same",
		   t1.batches, r1.start_ms, t1.start_ms);
	if (why != NULL || r1.st != GJ_DONE || t1.st != GJ_DONE)
		failed++;
	if (pinned)
		gj_bench_pin(r.x, 0, 0);
	gj_points_free(&r);
	gj_knnset_free(&a);
	gj_knnset_free(&b);
}

static int
bench_main(void)
{
	int			all[GJ_MAX_GPUS];
	int			n = ngpus < GJ_MAX_GPUS ? ngpus : GJ_MAX_GPUS;
	gj_points	p,
				sorted;
	gj_block_plan plan = {0};
	const char *only = getenv("GJ_BENCH_CASES");

	for (int i = 0; i < n; i++)
		all[i] = i;
	/* another staging shape for every upload (the upload table's question) */
	if (getenv("GJ_STAGE_TEAM") != NULL)
	{
		/* GJ_STAGE_TEAM=KB,copiers: a team member's pieces and copiers (0: the defaults) */
		const char *t = getenv("GJ_STAGE_TEAM");
		size_t		kb = (size_t) atol(t);
		int			c = strchr(t, ',') != NULL ? atoi(strchr(t, ',') + 1) : 0;

		gj_upload_tune(0, 0, kb << 10, c);
		printf("a team member's staging: pieces of %zu KB, %d copiers (0: the defaults)\n", kb, c);
	}
	if (getenv("GJ_BENCH_TEAM") != NULL)
	{
		/* another team, as "0,0": one GPU's members, for the team's own costs */
		const char *t = getenv("GJ_BENCH_TEAM");

		for (n = 0; n < GJ_MAX_GPUS && *t != '\0'; n++)
		{
			all[n] = atoi(t);
			t += strcspn(t, ",");
			t += *t == ',';
		}
	}
	printf("%d GPUs; engine alone, host to host, best of two counting runs each after a run that stores the rows\n\n", n);
	printf("| case | rows | 1 GPU s | all GPUs s | GPUs | speed-up | rows equal | batches by member | start ms, 1 / all |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |\n");
	if (only == NULL || strstr(only, "syn") != NULL)
	{
		gj_gen_points(&p, GJ_GEN_EXPONENTIAL, 2000000, 32, 1);
		bench_tiles("Syn32D2M eps 0.08 brute force", &p, (gj_tiles_options) {.eps2 = 0.08 * 0.08},
					all, n);
		gj_points_copy(&sorted, &p, p.n);
		gj_points_block_order(&sorted);
		bench_tiles("Syn32D2M eps 0.08 blocks (rows pre-sorted)", &sorted,
					(gj_tiles_options) {.eps2 = 0.08 * 0.08, .prune = 1}, all, n);
		gj_points_free(&sorted);
		gj_points_free(&p);
	}
	if (only == NULL || strstr(only, "knn") != NULL)
	{
		gj_gen_points(&p, GJ_GEN_CLUSTERS, 1000000, 128, 3001);
		if (only == NULL || strstr(only, "knnblocks") == NULL)
			bench_knn("1M x 128 clusters kNN k 10 brute force", &p,
					  (gj_knn_options) {.k = 10, .exclude_self = 1, .method = GJ_KNN_BRUTE}, NULL,
					  all, n);
		gj_block_plan_make(&p, &plan);
		bench_knn("1M x 128 clusters kNN k 10 blocks (device order)", &p,
				  (gj_knn_options) {.k = 10, .exclude_self = 1, .method = GJ_KNN_BLOCKS}, &plan,
				  all, n);
		gj_block_plan_free(&plan);
		gj_points_free(&p);
	}
	printf("gpu_team bench: %d passed, %d failed\n", failed == 0, failed);
	return failed > 0;
}

/* fastest and slowest of reps runs of one way to the devices (ms), after a run unwatched */
static void
upload_team_way(const char *src, size_t bytes, int ndev, int mode, int reps, double *lo, double *hi)
{
	double		ms = 0;

	*lo = *hi = -1;
	if (gj_bench_upload_team(src, bytes, ndev, mode, &ms) != 0)
		return;
	for (int r = 0; r < reps; r++)
	{
		if (gj_bench_upload_team(src, bytes, ndev, mode, &ms) != 0)
		{
			*lo = *hi = -1;
			return;
		}
		*lo = r == 0 || ms < *lo ? ms : *lo;
		*hi = r == 0 || ms > *hi ? ms : *hi;
	}
}

/*
 * The team's question: 1 GB of pageable rows onto two GPUs at once, by
 * the staging's piece size and copiers a device.  One GPU alone, the
 * team's parts (each stages half, then copies the other half from the
 * other GPU), each GPU all of it, and one GPU all of it then the other
 * from it.  GJ_UPLOAD_QUICK: the engines' shape only.
 */
static void
upload_team_table(size_t bytes)
{
	static const size_t pieces[] = {256 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20};
	static const int threads[] = {4, 8, 16};
	char	   *src = malloc(bytes);

	if (src == NULL)
		return;
	memset(src, 3, bytes);
	printf("\n1 GB of pageable rows, ms, fastest-slowest of 3: one GPU; two GPUs: halves and peer copies "
		   "(the team's way), each all, one all then a peer copy\n\n");
	printf("| piece KB | copiers a GPU | one GPU | two: halves + peer | two: each all | two: one + peer |\n");
	printf("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (int p = 0; p < (int) (sizeof(pieces) / sizeof(pieces[0])); p++)
		for (int t = 0; t < (int) (sizeof(threads) / sizeof(threads[0])); t++)
		{
			double		lo[4],
						hi[4];

			if (getenv("GJ_UPLOAD_QUICK") != NULL && (pieces[p] != (4 << 20) || threads[t] != 8))
				continue;
			/* the pinned cache holds this shape's chunks only (not the last shapes', evicting these) */
			gj_gpu_release_cache();
			gj_upload_tune(pieces[p], threads[t], 0, threads[t]);
			upload_team_way(src, bytes, 1, 1, 3, &lo[0], &hi[0]);
			upload_team_way(src, bytes, 2, 0, 3, &lo[1], &hi[1]);
			upload_team_way(src, bytes, 2, 1, 3, &lo[2], &hi[2]);
			upload_team_way(src, bytes, 2, 2, 3, &lo[3], &hi[3]);
			printf("| %zu | %d |", pieces[p] >> 10, threads[t]);
			for (int w = 0; w < 4; w++)
				printf(" %.1f-%.1f |", lo[w], hi[w]);
			printf("\n");
		}
	gj_upload_tune(0, 0, 0, 0);
	free(src);
}

/*
 * upload: what 1 GB of rows costs to reach GPU 0 from pageable memory
 * (malloc, and gj_big_alloc's huge pages): staged through pinned chunks,
 * or page-locked in place and sent by one DMA.
 */
static int
upload_main(void)
{
	size_t		bytes = (size_t) 1 << 30;

	printf("| source | staged ms | register ms | DMA ms | unregister ms |\n| --- | ---: | ---: | ---: | ---: |\n");
	for (int big = 0; big < 2; big++)
		for (int rep = 0; rep < 3; rep++)
		{
			char	   *src = big ? gj_big_alloc(bytes) : malloc(bytes);
			double		ms[4] = {0};

			if (src == NULL)
				return 1;
			memset(src, 1, bytes);
			if (gj_bench_upload_ways(src, bytes, ms) != 0)
				printf("| %s | failed | | | |\n", big ? "huge pages" : "malloc");
			else
				printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", big ? "huge pages" : "malloc",
					   ms[0], ms[1], ms[2], ms[3]);
			free(src);
		}
	if (ngpus >= 2)
		upload_team_table(bytes);
	return 0;
}

int
main(int argc, char **argv)
{
	gj_cuda_device_info info;
	const char *mode = argc > 1 ? argv[1] : "check";

	setvbuf(stdout, NULL, _IOLBF, 0);	/* a run killed by its timeout still says where it was */
	signal(SIGALRM, watchdog);
	if (gj_cuda_probe(&info) != GJ_OK)
	{
		printf("no GPU: %s\n", info.error);
		printf("gpu_team: 0 passed, 1 failed\n");
		return 1;
	}
	ngpus = info.count;
	printf("gpu_team: %d GPUs (%s)\n", ngpus, info.name);
	if (strcmp(mode, "bench") == 0)
		return bench_main();
	if (strcmp(mode, "upload") == 0)
		return upload_main();
	return check_main();
}
