/*
 * test_team.c
 *		Unit tests of a team of engines (team.c): several engines making
 *		parts of one join's chunks, seen as one engine, as the GPUs of a
 *		host are (kernels/team.cu).
 *
 * No GPU here: the members are the CPU's eps_join engine, each probing a
 * part of the query rows, whose union must be the brute-force oracle's
 * pairs (as a multiset: a pair found twice or lost fails), and a scripted
 * engine whose chunks, failures and pace a test sets.  The scripted
 * members run with a pool of two chunks and make hundreds, so a chunk
 * released to the team's queue instead of its member's would stall or
 * corrupt the run; a member that fails mid-way must fail the team with its
 * own status and words; a member that cannot start must leave nothing
 * running; a team freed part-way (a cancel) must stop at once.
 *		test_team [seed]
 * The last line is "team: N passed, N failed".
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core_internal.h"
#include "datagen.h"
#include "pairset.h"

static int	passed = 0;
static int	failed = 0;

static void
check(int ok, const char *what)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s\n", what);
	}
}

/* --- a scripted engine -------------------------------------------------- */

typedef struct script
{
	gj_engine	eng;
	pthread_t	thread;
	int			member;
	int			chunks;			/* to make */
	int			rows;			/* in each */
	int			fail_after;		/* chunks made before it fails (-1: never) */
	int			slow_us;		/* between chunks */
	int			made;
} script;

static int	scripts_freed = 0;

static void *
script_main(void *arg)
{
	script	   *s = (script *) arg;

	for (int c = 0; c < s->chunks; c++)
	{
		gj_chunk   *ch;

		if (c == s->fail_after)
		{
			gj_engine_fail(&s->eng, GJ_ERR_CUDA);
			break;
		}
		ch = gj_queue_get_free(s->eng.q);
		if (ch == NULL)
			break;				/* cancelled */
		for (int r = 0; r < s->rows; r++)
		{
			ch->a[r] = s->member;
			ch->b[r] = (int64_t) c * s->rows + r;
			ch->dist[r] = 0.0;
		}
		ch->n = s->rows;
		gj_queue_put_full(s->eng.q, ch);
		s->made++;
		if (s->slow_us > 0)
			usleep(s->slow_us);
	}
	gj_queue_producer_done(s->eng.q);
	return NULL;
}

static void
script_free(gj_engine *e)
{
	script	   *s = (script *) e;

	gj_queue_cancel(s->eng.q);
	pthread_join(s->thread, NULL);
	gj_queue_destroy(s->eng.q);
	free(s);
	__atomic_fetch_add(&scripts_freed, 1, __ATOMIC_RELAXED);
}

static const char *
script_error_text(const gj_engine *e)
{
	static char words[4][64];
	const script *s = (const script *) e;

	snprintf(words[s->member & 3], sizeof(words[0]), "member %d's own words", s->member);
	return words[s->member & 3];
}

typedef struct team_plan
{
	int			chunks;
	int			rows;
	int			fail_member;	/* fails mid-way, or -1 */
	int			nostart_member; /* fails to start, or -1 */
	int			slow_us;
	int			cleanups;
} team_plan;

static gj_status
script_start(void *arg, int member, gj_engine **out)
{
	team_plan  *p = (team_plan *) arg;
	script	   *s;

	*out = NULL;
	if (member == p->nostart_member)
		return GJ_ERR_DEVICE_OOM;
	s = calloc(1, sizeof(script));
	s->eng.q = gj_queue_create(2, 0);
	s->eng.free = script_free;
	s->eng.error_text = script_error_text;
	s->eng.on_gpu = 1;
	s->member = member;
	s->chunks = p->chunks;
	s->rows = p->rows;
	s->fail_after = member == p->fail_member ? p->chunks / 2 : -1;
	s->slow_us = p->slow_us;
	gj_queue_set_producers(s->eng.q, 1);
	pthread_create(&s->thread, NULL, script_main, s);
	*out = &s->eng;
	return GJ_OK;
}

static void
plan_cleanup(void *arg)
{
	((team_plan *) arg)->cleanups++;
}

/* Every member's rows, each once, whatever the interleaving. */
static void
test_scripted(int n)
{
	team_plan	p = {300, 7, -1, -1, 0, 0};
	gj_engine  *t;
	int			fm;
	gj_status	st;
	int64_t    *seen = calloc((size_t) n * p.chunks * p.rows, sizeof(int64_t));
	int64_t		rows = 0;
	int			bad = 0;
	char		what[96];

	scripts_freed = 0;
	st = gj_team_start(n, script_start, &p, plan_cleanup, &p, &t, &fm);
	snprintf(what, sizeof(what), "team of %d scripted members starts", n);
	check(st == GJ_OK && t != NULL && gj_team_size(t) == n, what);
	if (st != GJ_OK)
		return;
	for (;;)
	{
		gj_chunk   *c;

		st = gj_engine_next(t, 100, &c);
		if (st == GJ_AGAIN)
			continue;
		if (st != GJ_OK)
			break;
		for (int k = 0; k < c->n; k++)
		{
			int64_t		at = c->a[k] * p.chunks * p.rows + c->b[k];

			if (c->a[k] < 0 || c->a[k] >= n || c->b[k] < 0 || c->b[k] >= p.chunks * p.rows)
				bad++;
			else
				seen[at]++;
		}
		rows += c->n;
		gj_engine_release(t, c);
	}
	for (int64_t i = 0; i < (int64_t) n * p.chunks * p.rows; i++)
		bad += seen[i] != 1;
	snprintf(what, sizeof(what), "team of %d: every member's rows once (%lld rows)", n,
			 (long long) rows);
	check(st == GJ_DONE && bad == 0 && rows == (int64_t) n * p.chunks * p.rows, what);
	{
		gj_engine_report r;

		gj_engine_report_of(t, &r);
		snprintf(what, sizeof(what), "team of %d reports %d members", n, n);
		check(r.members == n && gj_engine_done_ms(t) > 0.0, what);
	}
	check(gj_team_member(t, 0) != t && gj_team_member(t, n) == NULL,
		  "a team's members are its engines");
	gj_engine_free(t);
	snprintf(what, sizeof(what), "team of %d: members freed, cleanup once", n);
	check(scripts_freed == n && p.cleanups == 1, what);
	free(seen);
}

/* A member failing mid-way fails the team with its status and its words. */
static void
test_member_fails(void)
{
	team_plan	p = {200, 3, 1, -1, 0, 0};
	gj_engine  *t;
	int			fm;
	gj_status	st = gj_team_start(3, script_start, &p, plan_cleanup, &p, &t, &fm);

	check(st == GJ_OK, "team with a failing member starts");
	if (st != GJ_OK)
		return;
	for (;;)
	{
		gj_chunk   *c;

		st = gj_engine_next(t, 100, &c);
		if (st == GJ_AGAIN)
			continue;
		if (st != GJ_OK)
			break;
		gj_engine_release(t, c);
	}
	check(st == GJ_ERR_CUDA, "the failing member's status ends the team");
	check(strcmp(gj_engine_error_text(t), "member 1's own words") == 0,
		  "the team's error text is the failing member's");
	scripts_freed = 0;
	gj_engine_free(t);
	check(scripts_freed == 3 && p.cleanups == 1, "failed team: members freed, cleanup once");
}

/* A member that cannot start: nothing left running, its number and status back. */
static void
test_member_cannot_start(void)
{
	team_plan	p = {50, 3, -1, 2, 0, 0};
	gj_engine  *t = NULL;
	int			fm = -1;
	gj_status	st;

	scripts_freed = 0;
	st = gj_team_start(4, script_start, &p, plan_cleanup, &p, &t, &fm);
	check(st == GJ_ERR_DEVICE_OOM && t == NULL && fm == 2,
		  "a member that cannot start fails the team's start, and says which");
	check(scripts_freed == 3 && p.cleanups == 1,
		  "the members that started are freed, cleanup once");
}

/* Freed after one chunk (a cancel): every member stops at once. */
static void
test_cancel(void)
{
	team_plan	p = {100000, 5, -1, -1, 200, 0};
	gj_engine  *t;
	gj_chunk   *c;
	int			fm;
	double		t0;
	gj_status	st = gj_team_start(2, script_start, &p, plan_cleanup, &p, &t, &fm);

	check(st == GJ_OK, "slow team starts");
	if (st != GJ_OK)
		return;
	while ((st = gj_engine_next(t, 100, &c)) == GJ_AGAIN)
		;
	check(st == GJ_OK, "slow team gives a first chunk");
	/* the consumer stops holding a chunk: the team's free must not wait on it */
	scripts_freed = 0;
	t0 = gj_now_ms();
	gj_engine_free(t);
	check(gj_now_ms() - t0 < 1000.0 && scripts_freed == 2 && p.cleanups == 1,
		  "a team freed part-way stops within a second");
}

/* The CPU eps_join, its queries split among members: the union is the oracle's. */
typedef struct split_join
{
	const gj_grid *g;
	const gj_points *s;
	gj_points  *parts;
	double		eps2;
} split_join;

static gj_status
split_start(void *arg, int member, gj_engine **out)
{
	split_join *j = (split_join *) arg;
	gj_probe_options po;
	gj_cpu_probe *e;
	gj_status	st;

	memset(&po, 0, sizeof(po));
	po.queries = &j->parts[member];
	st = gj_cpu_probe_start(j->g, j->s, j->eps2, &po, 2, &e);
	*out = st == GJ_OK ? GJ_ENGINE(e) : NULL;
	return st;
}

static void
test_split_join(uint64_t seed, int n)
{
	gj_points	r,
				s;
	gj_grid		g;
	double		eps;
	split_join	j;
	gj_pairset	want = {0},
				got = {0};
	gj_engine  *t;
	int			fm;
	gj_status	st;
	char		what[96];
	const char *why;
	int64_t		at;

	gj_gen_points(&r, GJ_GEN_CLUSTERS, 3000, 3, seed);
	gj_gen_points(&s, GJ_GEN_CLUSTERS, 2000, 3, seed + 7);
	eps = gj_gen_typical_eps(GJ_GEN_CLUSTERS, s.n, 3, 6.0);
	for (int64_t i = 0; i < r.n; i++)
		for (int64_t k = 0; k < s.n; k++)
		{
			double		d2 = gj_sqdist(r.x + i * 3, s.x + k * 3, 3);

			if (d2 <= eps * eps)
				gj_pairset_add(&want, r.ids[i], s.ids[k], sqrt(d2));
		}
	check(gj_grid_build(&g, &s, eps * eps) == GJ_OK, "grid over s");
	j.g = &g;
	j.s = &s;
	j.eps2 = eps * eps;
	j.parts = calloc(n, sizeof(gj_points));
	for (int m = 0; m < n; m++)
	{
		int64_t		r0 = r.n * m / n,
					r1 = r.n * (m + 1) / n;

		j.parts[m] = r;			/* a view of rows [r0, r1): r owns them */
		j.parts[m].n = r1 - r0;
		j.parts[m].x = r.x + r0 * 3;
		j.parts[m].ids = r.ids + r0;
	}
	st = gj_team_start(n, split_start, &j, NULL, NULL, &t, &fm);
	snprintf(what, sizeof(what), "split eps_join, %d members: starts", n);
	check(st == GJ_OK, what);
	if (st == GJ_OK)
	{
		for (;;)
		{
			gj_chunk   *c;

			st = gj_engine_next(t, 100, &c);
			if (st == GJ_AGAIN)
				continue;
			if (st != GJ_OK)
				break;
			for (int k = 0; k < c->n; k++)
				gj_pairset_add(&got, c->a[k], c->b[k], c->dist[k]);
			gj_engine_release(t, c);
		}
		gj_engine_free(t);
		why = gj_pairset_diff(&want, &got, &at);
		snprintf(what, sizeof(what), "split eps_join, %d members: the oracle's %lld pairs",
				 n, (long long) want.n);
		check(st == GJ_DONE && why == NULL && want.n > 0, what);
		if (why != NULL)
			printf("  %s (seed %llu)\n", why, (unsigned long long) seed);
	}
	free(j.parts);
	gj_grid_free(&g);
	gj_pairset_free(&want);
	gj_pairset_free(&got);
	gj_points_free(&r);
	gj_points_free(&s);
}

int
main(int argc, char **argv)
{
	uint64_t	seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261128;

	printf("test_team: seed %llu\n", (unsigned long long) seed);
	for (int n = 1; n <= 4; n++)
		test_scripted(n);
	test_member_fails();
	test_member_cannot_start();
	test_cancel();
	for (int n = 1; n <= 5; n += 2)
		test_split_join(seed + n, n);
	printf("team: %d passed, %d failed\n", passed, failed);
	return failed > 0;
}
