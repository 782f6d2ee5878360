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

/*
 * Number of online CPUs, at least 1, counted once a process: sysconf reads
 * /sys on every call, and the engines ask before every parallel step.
 */
int
gj_cpu_count(void)
{
	static int	cached = 0;		/* atomic */
	int			n = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (n == 0)
	{
		long		online = sysconf(_SC_NPROCESSORS_ONLN);

		n = online < 1 ? 1 : (int) online;
		__atomic_store_n(&cached, n, __ATOMIC_RELAXED);
	}
	return n;
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
	pthread_mutex_t mu;
	pthread_cond_t done;		/* signalled by the last worker to end */
	int			active;			/* under mu: workers still running */
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
	pthread_mutex_lock(&r->mu);
	if (--r->active == 0)
		pthread_cond_signal(&r->done);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/*
 * fn over rows [0, n) in blocks on up to nthreads threads; the calling
 * thread polls the interrupt hook every millisecond until they finish,
 * and returns as soon as the last one does (a sleep of a millisecond
 * between polls cost every call up to a millisecond, and 5 such phases
 * make a DBSCAN).
 */
gj_status
gj_par_for(gj_block_fn fn, void *arg, int64_t n, int nthreads)
{
	par_run		r;
	pthread_t  *threads;
	int			started;
	pthread_condattr_t ca;

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
	pthread_mutex_init(&r.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);	/* a clock step must not stall the polls */
	pthread_cond_init(&r.done, &ca);
	pthread_condattr_destroy(&ca);
	started = gj_threads_start(threads, nthreads, par_worker, &r, 0);
	pthread_mutex_lock(&r.mu);
	r.active -= nthreads - started;
	while (r.active > 0)
	{
		struct timespec deadline;

		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_nsec += 1000000L;
		if (deadline.tv_nsec >= 1000000000L)
		{
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&r.done, &r.mu, &deadline);
		if (r.active > 0 && gj_interrupted())
			__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&r.mu);
	for (int t = 0; t < started; t++)
		pthread_join(threads[t], NULL);
	pthread_cond_destroy(&r.done);
	pthread_mutex_destroy(&r.mu);
	free(threads);
	if (started == 0)
		return GJ_ERR_THREAD;
	return r.stop ? GJ_ERR_CANCELED : GJ_OK;
}

