/*
 * threads.c
 *		The core's helper threads: starting them with PostgreSQL's signals
 *		kept off them, and the two loops that spread work over them.
 *
 * Every engine and every parallel step of the core starts its threads
 * here, so one place decides what a helper thread may receive: all
 * asynchronous signals are blocked in it (PostgreSQL's handlers run on the
 * backend thread only), faults are not.  Two loops share the rows of a
 * step between threads and poll the interrupt hook from the calling
 * thread, so a cancel never waits for a whole step:
 *	- gj_run_rows: static slices of rows, walked a step of GJ_STEP_ROWS
 *	  at a time (the sort, the gathers, the bounds);
 *	- gj_par_for: blocks of GJ_PAR_BLOCK rows taken from an atomic counter
 *	  (counts and DBSCAN, whose rows cost very different amounts).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core_internal.h"

#define GJ_STEP_ROWS ((int64_t) 1 << 20)	/* rows a slice does between interrupt polls */
#define GJ_PAR_BLOCK 256		/* rows a gj_par_for worker takes at a time */

/*
 * Block every signal but the synchronous ones, saving the old mask: threads
 * started meanwhile inherit it, so PostgreSQL's handlers only ever run on
 * the backend thread, while a fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE) in a
 * helper thread still reaches a handler instead of killing the process
 * unannounced.
 */
void
gj_block_async_signals(sigset_t *old)
{
	sigset_t	set;

	sigfillset(&set);
	sigdelset(&set, SIGSEGV);
	sigdelset(&set, SIGBUS);
	sigdelset(&set, SIGILL);
	sigdelset(&set, SIGFPE);
	pthread_sigmask(SIG_SETMASK, &set, old);
}

/*
 * Start up to n threads running fn, thread t getting (char *) args + t *
 * stride (stride 0: every thread the same argument), with every
 * asynchronous signal blocked; how many started.
 */
int
gj_threads_start(pthread_t *threads, int n, void *(*fn) (void *), void *args,
				 size_t stride)
{
	sigset_t	old;
	int			started = 0;

	gj_block_async_signals(&old);
	for (int t = 0; t < n; t++)
	{
		if (pthread_create(&threads[t], NULL, fn, (char *) args + t * stride) != 0)
			break;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return started;
}

/* Number of online CPUs, at least 1. */
int
gj_cpu_count(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : (int) n;
}

/* Slices for n rows, each at least min_rows long, at most one per core. */
int
gj_slices_for(int64_t n, int64_t min_rows)
{
	int			nt = gj_cpu_count();

	if (nt > GJ_MAX_SLICES)
		nt = GJ_MAX_SLICES;
	if (nt > n / min_rows)
		nt = (int) (n / min_rows);
	return nt < 1 ? 1 : nt;
}

/* One slice's next step: fn over rows [r0, r1) with the slice's state. */
typedef struct row_step
{
	void		(*fn) (void *state, int64_t r0, int64_t r1);
	void	   *state;
	int64_t		r0;
	int64_t		r1;
} row_step;

static void *
run_step(void *arg)
{
	row_step   *s = arg;

	if (s->r0 < s->r1)
		s->fn(s->state, s->r0, s->r1);
	return NULL;
}

/*
 * fn over rows [0, n) in nt slices (slice t: rows n * t / nt up to
 * n * (t + 1) / nt, its state at (char *) args + t * stride; stride 0 shares
 * one), on helper threads and this one.  Every slice walks its rows in
 * order, GJ_STEP_ROWS at a time, all slices a step at once, and before each
 * step this thread polls the interrupt hook: a cancel waits for one step (a
 * few milliseconds), not for the whole job, however many rows.  The helpers
 * block every signal (gj_threads_start), so fn must not call into
 * PostgreSQL.  GJ_ERR_CANCELED: some rows were left undone.
 */
gj_status
gj_run_rows(void (*fn) (void *state, int64_t r0, int64_t r1), void *args, size_t stride,
			int64_t n, int nt)
{
	row_step	steps[GJ_MAX_SLICES];
	pthread_t	threads[GJ_MAX_SLICES];

	nt = nt < 1 ? 1 : nt > GJ_MAX_SLICES ? GJ_MAX_SLICES : nt;
	for (int64_t done = 0;; done += GJ_STEP_ROWS)
	{
		int			any = 0,
					started;

		for (int t = 0; t < nt; t++)
		{
			int64_t		lo = n * t / nt + done,
						end = n * (t + 1) / nt;

			steps[t].fn = fn;
			steps[t].state = (char *) args + t * stride;
			steps[t].r0 = lo < end ? lo : end;
			steps[t].r1 = lo + GJ_STEP_ROWS < end ? lo + GJ_STEP_ROWS : end;
			any |= steps[t].r0 < steps[t].r1;
		}
		if (!any)
			return GJ_OK;
		if (gj_interrupted())
			return GJ_ERR_CANCELED;
		/* slice 0 here, the others on helpers, or here too if one fails */
		started = nt > 1 ? gj_threads_start(threads, nt - 1, run_step, &steps[1],
											sizeof(row_step)) : 0;
		run_step(&steps[0]);
		for (int t = 1 + started; t < nt; t++)
			run_step(&steps[t]);
		for (int t = 0; t < started; t++)
			pthread_join(threads[t], NULL);
	}
}

typedef struct par_run
{
	gj_block_fn fn;
	void	   *arg;
	int64_t		n;
	int64_t		next;			/* atomic */
	int			stop;			/* atomic */
	int			active;			/* atomic: workers still running */
} par_run;

static void *
par_worker(void *a)
{
	par_run    *r = a;

	for (;;)
	{
		int64_t		b0 = __atomic_fetch_add(&r->next, GJ_PAR_BLOCK, __ATOMIC_RELAXED);

		if (b0 >= r->n || __atomic_load_n(&r->stop, __ATOMIC_RELAXED))
			break;
		r->fn(r->arg, b0, b0 + GJ_PAR_BLOCK < r->n ? b0 + GJ_PAR_BLOCK : r->n, &r->stop);
	}
	__atomic_fetch_sub(&r->active, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * fn over rows [0, n) in blocks on up to nthreads threads; the calling
 * thread polls the interrupt hook every millisecond until they finish.
 */
gj_status
gj_par_for(gj_block_fn fn, void *arg, int64_t n, int nthreads)
{
	par_run		r;
	pthread_t  *threads;
	int			started;
	struct timespec ms = {0, 1000000L};

	if (n <= 0)
		return GJ_OK;
	if (nthreads <= 0)
		nthreads = gj_cpu_count();
	if ((n + GJ_PAR_BLOCK - 1) / GJ_PAR_BLOCK < nthreads)
		nthreads = (int) ((n + GJ_PAR_BLOCK - 1) / GJ_PAR_BLOCK);
	memset(&r, 0, sizeof(r));
	r.fn = fn;
	r.arg = arg;
	r.n = n;
	r.active = nthreads;
	threads = calloc(nthreads, sizeof(pthread_t));
	if (threads == NULL)
		return GJ_ERR_NOMEM;
	started = gj_threads_start(threads, nthreads, par_worker, &r, 0);
	if (started < nthreads)
		__atomic_fetch_sub(&r.active, nthreads - started, __ATOMIC_RELAXED);
	if (started == 0)
	{
		free(threads);
		return GJ_ERR_THREAD;
	}
	while (__atomic_load_n(&r.active, __ATOMIC_ACQUIRE) > 0)
	{
		nanosleep(&ms, NULL);
		if (gj_interrupted())
			__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	}
	for (int t = 0; t < started; t++)
		pthread_join(threads[t], NULL);
	free(threads);
	return r.stop ? GJ_ERR_CANCELED : GJ_OK;
}

