/*
 * team.c
 *		A team: several engines that each make part of one join's chunks
 *		(one engine a GPU, kernels/team.cu), seen by the caller as one.
 *
 * The members start at the same time, each on a thread of its own, because
 * a GPU engine's start (upload, index, filter rows) is most of a short
 * join: started one after the other, two GPUs would take the time of one.
 * Once every member has started, a forwarding thread per member takes its
 * chunks and hands them on through the team's queue.  The chunks stay the
 * member's: the team's queue has no pool, and the consumer's release sends
 * a chunk back to its home queue (gj_queue_release), so each member's
 * backpressure works as it does alone.  Chunks of different members
 * interleave; a member's chunks keep their order, and a chunk is whole
 * (a kNN chunk holds whole query lists), so whatever order rule a single
 * engine's chunks follow within a chunk still holds.
 */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

#define TEAM_POLL_MS 50

typedef struct team_fwd_arg team_fwd_arg;

typedef struct gj_team
{
	gj_engine	eng;			/* first: the queue the consumer takes from */
	int			n;
	gj_engine **members;
	pthread_t  *threads;		/* forwarders */
	team_fwd_arg *fwd;			/* ... and their arguments */
	int			nstarted;
	int			failed;			/* atomic: the first member that failed, or -1 */
	void		(*cleanup) (void *arg);	/* after the members are freed */
	void	   *cleanup_arg;
} gj_team;

typedef struct team_start_arg
{
	gj_member_start_fn start;
	void	   *arg;
	int			member;
	gj_engine  *out;
	gj_status	st;
} team_start_arg;

struct team_fwd_arg
{
	gj_team    *t;
	int			member;
};

static void *
start_main(void *p)
{
	team_start_arg *a = (team_start_arg *) p;

	a->st = a->start(a->arg, a->member, &a->out);
	return NULL;
}

/* Hand one member's chunks on until it ends, fails or the team is cancelled. */
static void *
forward_main(void *p)
{
	team_fwd_arg *a = (team_fwd_arg *) p;
	gj_team    *t = a->t;
	gj_engine  *m = t->members[a->member];

	for (;;)
	{
		gj_chunk   *c = NULL;
		gj_status	st = gj_engine_next(m, TEAM_POLL_MS, &c);

		if (st == GJ_OK)
		{
			if (gj_queue_canceled(t->eng.q))
			{
				gj_engine_release(m, c);
				break;
			}
			gj_queue_put_full(t->eng.q, c);
			continue;
		}
		if (st == GJ_AGAIN)
		{
			if (gj_queue_canceled(t->eng.q))
				break;
			continue;
		}
		if (st != GJ_DONE)
		{
			int			none = -1;

			__atomic_compare_exchange_n(&t->failed, &none, a->member, 0,
										__ATOMIC_RELAXED, __ATOMIC_RELAXED);
			gj_engine_fail(&t->eng, st);
		}
		break;
	}
	gj_queue_producer_done(t->eng.q);
	return NULL;
}

/* A member freed on a thread of its own (team_free). */
static void *
free_main(void *p)
{
	gj_engine_free(*(gj_engine **) p);
	return NULL;
}

static void
team_free(gj_engine *e)
{
	gj_team    *t = (gj_team *) e;
	int			freeing;

	gj_queue_cancel(t->eng.q);
	for (int i = 0; i < t->nstarted; i++)
		pthread_join(t->threads[i], NULL);

	/*
	 * Every member at once: each one's free stops its own kernels and waits
	 * for them, so freed one after another, a member searched on while the
	 * one before it stopped, and a cancel took the sum of their stops (a
	 * kNN join of k = 150,000 on two H200s missed pg_regress's 1.3 s).
	 * The forwarders are done: their threads serve again.
	 */
	freeing = gj_threads_start(t->threads, t->n, free_main, t->members, sizeof(gj_engine *));
	for (int i = 0; i < freeing; i++)
		pthread_join(t->threads[i], NULL);
	for (int i = freeing; i < t->n; i++)
		gj_engine_free(t->members[i]);
	if (t->cleanup != NULL)
		t->cleanup(t->cleanup_arg);
	gj_queue_destroy(t->eng.q);
	free(t->members);
	free(t->threads);
	free(t->fwd);
	free(t);
}

/* The failing member's own words, else the first member's. */
static const char *
team_error_text(const gj_engine *e)
{
	const gj_team *t = (const gj_team *) e;
	int			f = __atomic_load_n(&t->failed, __ATOMIC_RELAXED);

	return gj_engine_error_text(t->members[f >= 0 ? f : 0]);
}

/* The members' batches summed; the last member's end. */
static void
team_report(const gj_engine *e, gj_engine_report *r)
{
	const gj_team *t = (const gj_team *) e;

	for (int i = 0; i < t->n; i++)
	{
		gj_engine_report m;

		gj_engine_report_of(t->members[i], &m);
		if (i == 0)
			*r = m;
		else
		{
			r->batches += m.batches;
			r->slices = r->slices > m.slices ? r->slices : m.slices;
			r->slice_pairs += m.slice_pairs;
			r->done_ms = r->done_ms > m.done_ms ? r->done_ms : m.done_ms;
		}
	}
	r->members = t->n;
}

/*
 * Start n members, start(arg, i, &engine) each on a thread of its own (every
 * signal blocked), and when all started, the team over them.  When any
 * member fails to start the others are freed and the result is that
 * failure: GJ_ERR_CANCELED if a member saw a cancel, else the failure of
 * the lowest-numbered member that failed (*failed_member says which).
 * cleanup(cleanup_arg) runs once the members are freed, also on failure.
 */
gj_status
gj_team_start(int n, gj_member_start_fn start, void *arg, void (*cleanup) (void *),
			  void *cleanup_arg, gj_engine **out, int *failed_member)
{
	team_start_arg *sa;
	team_fwd_arg *fa;
	pthread_t  *th;
	gj_team    *t;
	gj_status	st = GJ_OK;
	int			started;

	*out = NULL;
	*failed_member = -1;
	if (n < 1)
		return GJ_ERR_ARG;
	sa = calloc(n, sizeof(team_start_arg));
	th = calloc(n, sizeof(pthread_t));
	t = calloc(1, sizeof(gj_team));
	fa = calloc(n, sizeof(team_fwd_arg));
	if (t != NULL)
	{
		t->members = calloc(n, sizeof(gj_engine *));
		t->threads = calloc(n, sizeof(pthread_t));
	}
	if (sa == NULL || th == NULL || t == NULL || fa == NULL || t->members == NULL ||
		t->threads == NULL)
	{
		st = GJ_ERR_NOMEM;
		goto fail;
	}
	for (int i = 0; i < n; i++)
	{
		sa[i].start = start;
		sa[i].arg = arg;
		sa[i].member = i;
		sa[i].st = GJ_ERR_THREAD;	/* a thread that did not start */
	}
	started = gj_threads_start(th, n, start_main, sa, sizeof(team_start_arg));
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < n; i++)
	{
		t->members[i] = sa[i].out;
		if (sa[i].st == GJ_ERR_CANCELED)
			st = GJ_ERR_CANCELED;
		else if (sa[i].st != GJ_OK && st == GJ_OK)
		{
			st = sa[i].st;
			*failed_member = i;
		}
	}
	if (st != GJ_OK)
		goto fail;

	t->n = n;
	t->failed = -1;
	t->cleanup = cleanup;
	t->cleanup_arg = cleanup_arg;
	t->eng.on_gpu = t->members[0]->on_gpu;
	t->eng.free = team_free;
	t->eng.error_text = team_error_text;
	t->eng.report = team_report;
	t->eng.q = gj_queue_create_external(NULL, 0);
	if (t->eng.q == NULL)
	{
		st = GJ_ERR_NOMEM;
		goto fail;
	}
	for (int i = 0; i < n; i++)
	{
		fa[i].t = t;
		fa[i].member = i;
	}
	t->fwd = fa;				/* read by the forwarders until they end */
	free(sa);
	free(th);
	t->nstarted = gj_engine_start_workers(&t->eng, t->threads, n, forward_main, fa,
										  sizeof(team_fwd_arg));
	if (t->nstarted < n)
	{
		team_free(&t->eng);
		return GJ_ERR_THREAD;
	}
	*out = &t->eng;
	return GJ_OK;

fail:
	if (t != NULL && t->members != NULL)
		for (int i = 0; i < n; i++)
			gj_engine_free(t->members[i]);
	if (cleanup != NULL)
		cleanup(cleanup_arg);
	if (t != NULL)
	{
		gj_queue_destroy(t->eng.q);
		free(t->members);
		free(t->threads);
	}
	free(t);
	free(fa);
	free(sa);
	free(th);
	return st;
}

/* Member i of a team (i = 0: e itself when e is not a team). */
gj_engine *
gj_team_member(gj_engine *e, int i)
{
	if (e == NULL || e->free != team_free)
		return i == 0 ? e : NULL;
	return i < ((gj_team *) e)->n ? ((gj_team *) e)->members[i] : NULL;
}

/* How many engines make e's chunks: 1 unless e is a team. */
int
gj_team_size(const gj_engine *e)
{
	return e != NULL && e->free == team_free ? ((const gj_team *) e)->n : 1;
}
