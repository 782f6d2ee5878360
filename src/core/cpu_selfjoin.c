/*
 * cpu_selfjoin.c
 *		The multi-threaded CPU eps self-join over a gj_grid.
 *
 * Work happens in two phases inside the worker threads, so that the backend
 * thread only ever waits on the result queue (and checks for interrupts):
 *
 * 1. Count.  Each worker takes a static slice of the cells and records, per
 *    cell, how many points its forward neighbours hold.  A cell of m points
 *    with q forward-neighbour points costs m(m-1)/2 + m*q distance tests;
 *    the sum over cells is the exact candidate count.
 *
 * 2. Join.  Worker 0 cuts the cells into tasks of about equal cost: runs of
 *    cheap consecutive cells, and for a cell costing more than one task (all
 *    points in one cell, a dense cluster) ranges of its points.  Tasks are
 *    sorted by cost, largest first (sort-by-workload), and taken through an
 *    atomic counter (the work queue), so the expensive ones start first and
 *    the cheap ones fill in the gaps at the end.
 *
 * Each pair (i, j) is tested once (i < j in sorted order: i's cell, or an
 * earlier point of the same cell, owns it) and emitted, as the ids of its
 * rows in ascending order, into a chunk that goes to the consumer through
 * gj_pair_queue.  The workers never touch
 * anything but this file's data; all signals are blocked in them.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

typedef struct join_task
{
	int64_t		cell_begin;
	int64_t		cell_end;
	int64_t		pt_begin;		/* for a split cell: its local point range */
	int64_t		pt_end;			/* -1 when the whole cells are covered */
	int64_t		work;
} join_task;

typedef struct worker_arg
{
	struct gj_cpu_selfjoin *j;
	int			index;
} worker_arg;

struct gj_cpu_selfjoin
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	const gj_grid *g;
	const gj_points *p;

	int			nthreads;		/* threads actually running */
	pthread_t  *threads;
	worker_arg *args;

	/* start gate and the phase barrier */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int			go;
	int			arrived;
	int			generation;

	int64_t    *nbr_points;		/* per cell, phase 1 */
	join_task  *tasks;
	int64_t		ntasks;
	int64_t		next_task;		/* atomic */
	int64_t		candidates;

	int			stop;			/* atomic: cancel or error */
};

static void cpu_selfjoin_free(gj_engine *e);

static inline int
should_stop(struct gj_cpu_selfjoin *j)
{
	return __atomic_load_n(&j->stop, __ATOMIC_RELAXED);
}

/* Record the first error and stop everyone. */
static void
fail(struct gj_cpu_selfjoin *j, gj_status st)
{
	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	gj_engine_fail(&j->eng, st);
}

/* All running workers meet here. */
static void
barrier_wait(struct gj_cpu_selfjoin *j)
{
	pthread_mutex_lock(&j->mu);
	{
		int			gen = j->generation;

		if (++j->arrived == j->nthreads)
		{
			j->arrived = 0;
			j->generation++;
			pthread_cond_broadcast(&j->cv);
		}
		else
			while (gen == j->generation)
				pthread_cond_wait(&j->cv, &j->mu);
	}
	pthread_mutex_unlock(&j->mu);
}

/* Phase 1: forward-neighbour point counts for a static slice of cells. */
static void
count_slice(struct gj_cpu_selfjoin *j, int w)
{
	const gj_grid *g = j->g;
	int64_t		begin = g->ncells * w / j->nthreads;
	int64_t		end = g->ncells * (w + 1) / j->nthreads;
	int64_t		nbr[GJ_MAX_FWD_NEIGHBOURS];
	gj_nbr_iter it;

	if (begin >= end)
		return;
	gj_nbr_iter_init(&it, g, begin);
	for (int64_t c = begin; c < end; c++)
	{
		int			nn = gj_nbr_forward(&it, c, nbr);
		int64_t		q = 0;

		for (int k = 0; k < nn; k++)
			q += g->cell_start[nbr[k] + 1] - g->cell_start[nbr[k]];
		j->nbr_points[c] = q;
		if ((c & 4095) == 0 && should_stop(j))
			return;
	}
}

static int
cmp_task_work_desc(const void *a, const void *b)
{
	const join_task *x = a;
	const join_task *y = b;

	if (x->work > y->work)
		return -1;
	if (x->work < y->work)
		return 1;
	return (x->cell_begin > y->cell_begin) - (x->cell_begin < y->cell_begin);
}

static gj_status
add_task(struct gj_cpu_selfjoin *j, int64_t *cap, join_task t)
{
	if (j->ntasks == *cap)
	{
		int64_t		ncap = *cap ? *cap * 2 : 256;
		join_task  *nt = realloc(j->tasks, sizeof(join_task) * ncap);

		if (nt == NULL)
			return GJ_ERR_NOMEM;
		j->tasks = nt;
		*cap = ncap;
	}
	j->tasks[j->ntasks++] = t;
	return GJ_OK;
}

/* Cut the cells into tasks of about equal cost and sort them by cost. */
static gj_status
build_tasks(struct gj_cpu_selfjoin *j)
{
	const gj_grid *g = j->g;
	int64_t		total = 0,
				target,
				cap = 0,
				acc = 0,
				run_begin = 0;
	gj_status	st;

	for (int64_t c = 0; c < g->ncells; c++)
	{
		int64_t		m = g->cell_start[c + 1] - g->cell_start[c];

		total += m * (m - 1) / 2 + m * j->nbr_points[c];
	}
	j->candidates = total;
	target = total / ((int64_t) j->nthreads * 32);
	if (target < 8192)
		target = 8192;

	for (int64_t c = 0; c < g->ncells; c++)
	{
		int64_t		m = g->cell_start[c + 1] - g->cell_start[c];
		int64_t		q = j->nbr_points[c];
		int64_t		w = m * (m - 1) / 2 + m * q;

		if (w > target)
		{
			int64_t		pacc = 0,
						p0 = 0;

			/* close the run before this cell, then split the cell */
			if (c > run_begin)
			{
				st = add_task(j, &cap, (join_task) {run_begin, c, 0, -1, acc});
				if (st != GJ_OK)
					return st;
			}
			for (int64_t t = 0; t < m; t++)
			{
				pacc += (m - 1 - t) + q;
				if (pacc >= target || t == m - 1)
				{
					st = add_task(j, &cap, (join_task) {c, c + 1, p0, t + 1, pacc});
					if (st != GJ_OK)
						return st;
					p0 = t + 1;
					pacc = 0;
				}
			}
			run_begin = c + 1;
			acc = 0;
			continue;
		}
		acc += w;
		if (acc >= target || c == g->ncells - 1)
		{
			st = add_task(j, &cap, (join_task) {run_begin, c + 1, 0, -1, acc});
			if (st != GJ_OK)
				return st;
			run_begin = c + 1;
			acc = 0;
		}
	}
	qsort(j->tasks, j->ntasks, sizeof(join_task), cmp_task_work_desc);
	return GJ_OK;
}

/*
 * Append pair (row a, row b) to the worker's chunk as (smaller id, larger
 * id, distance), swapping a full chunk for an empty one.
 */
static inline int
emit(struct gj_cpu_selfjoin *j, gj_chunk **chp, int64_t a, int64_t b, double s)
{
	gj_chunk   *ch = *chp;
	int64_t		ia = j->p->ids[a],
				ib = j->p->ids[b];

	if (ch->n == ch->cap)
	{
		gj_queue_put_full(j->eng.q, ch);
		ch = *chp = gj_queue_get_free(j->eng.q);
		if (ch == NULL)
			return 0;
	}
	ch->a[ch->n] = ia < ib ? ia : ib;
	ch->b[ch->n] = ia < ib ? ib : ia;
	ch->dist[ch->n] = sqrt(s);
	ch->n++;
	return 1;
}

/* Test row i against rows [b0, b1) and emit the pairs within eps. */
static inline int
test_range(struct gj_cpu_selfjoin *j, gj_chunk **chp, int64_t i,
		   int64_t b0, int64_t b1)
{
	const double *x = j->p->x;
	int			dims = j->p->dims;
	double		eps2 = j->g->eps2;
	const double *xi = x + i * dims;

	if (dims == 2)
	{
		double		x0 = xi[0],
					x1 = xi[1];

		for (int64_t k = b0; k < b1; k++)
		{
			double		d0 = x0 - x[2 * k];
			double		d1 = x1 - x[2 * k + 1];
			double		s = d0 * d0;

			s += d1 * d1;
			if (s <= eps2 && !emit(j, chp, i, k, s))
				return 0;
		}
		return 1;
	}
	for (int64_t k = b0; k < b1; k++)
	{
		const double *xk = x + k * dims;
		double		s = 0.0;
		int			d;

		/* same summation order as gj_sqdist; stop once s exceeds eps2 */
		for (d = 0; d < dims; d++)
		{
			double		t = xi[d] - xk[d];

			s += t * t;
			if ((d & 3) == 3 && s > eps2)
				break;
		}
		if (d == dims && s <= eps2 && !emit(j, chp, i, k, s))
			return 0;
	}
	return 1;
}

/* Run one task; returns 0 if the join was stopped meanwhile. */
static int
run_task(struct gj_cpu_selfjoin *j, const join_task *t, gj_chunk **chp)
{
	const gj_grid *g = j->g;
	int64_t		nbr[GJ_MAX_FWD_NEIGHBOURS];
	gj_nbr_iter it;

	gj_nbr_iter_init(&it, g, t->cell_begin);
	for (int64_t c = t->cell_begin; c < t->cell_end; c++)
	{
		int			nn = gj_nbr_forward(&it, c, nbr);
		int64_t		a0 = g->cell_start[c];
		int64_t		a1 = g->cell_start[c + 1];
		int64_t		i0 = t->pt_end < 0 ? a0 : a0 + t->pt_begin;
		int64_t		i1 = t->pt_end < 0 ? a1 : a0 + t->pt_end;

		for (int64_t i = i0; i < i1; i++)
		{
			if (!test_range(j, chp, i, i + 1, a1))
				return 0;
			for (int k = 0; k < nn; k++)
				if (!test_range(j, chp, i, g->cell_start[nbr[k]],
								g->cell_start[nbr[k] + 1]))
					return 0;
			if ((i & 15) == 0 && should_stop(j))
				return 0;
		}
	}
	return 1;
}

static void *
worker_main(void *varg)
{
	worker_arg *arg = varg;
	struct gj_cpu_selfjoin *j = arg->j;
	gj_chunk   *ch = NULL;

	pthread_mutex_lock(&j->mu);
	while (!j->go)
		pthread_cond_wait(&j->cv, &j->mu);
	pthread_mutex_unlock(&j->mu);

	if (!should_stop(j))
		count_slice(j, arg->index);
	barrier_wait(j);
	if (arg->index == 0 && !should_stop(j))
	{
		gj_status	st = build_tasks(j);

		if (st != GJ_OK)
			fail(j, st);
	}
	barrier_wait(j);

	if (!should_stop(j))
		ch = gj_queue_get_free(j->eng.q);
	while (ch != NULL && !should_stop(j))
	{
		int64_t		t = __atomic_fetch_add(&j->next_task, 1, __ATOMIC_RELAXED);

		if (t >= j->ntasks)
			break;
		if (!run_task(j, &j->tasks[t], &ch))
			break;
	}
	if (ch != NULL)
		gj_queue_put_full(j->eng.q, ch);
	gj_queue_producer_done(j->eng.q);
	return NULL;
}

/*
 * Start the join of the grid-sorted points p over g with up to nthreads
 * threads (0 or less: all CPUs).
 */
gj_status
gj_cpu_selfjoin_start(const gj_grid *g, const gj_points *p, int nthreads,
					  gj_cpu_selfjoin **out)
{
	struct gj_cpu_selfjoin *j;
	int			want;

	*out = NULL;
	if (nthreads <= 0)
		nthreads = gj_cpu_count();
	/* a thread per 4096 points at most: tiny joins need no crowd */
	want = (int) ((p->n + 4095) / 4096);
	if (want < nthreads)
		nthreads = want < 1 ? 1 : want;

	j = calloc(1, sizeof(struct gj_cpu_selfjoin));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = cpu_selfjoin_free;
	j->g = g;
	j->p = p;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->threads = calloc(nthreads, sizeof(pthread_t));
	j->args = calloc(nthreads, sizeof(worker_arg));
	j->nbr_points = malloc(sizeof(int64_t) * (g->ncells + 1));
	j->eng.q = gj_queue_create(2 * nthreads + 2, 0);
	if (j->threads == NULL || j->args == NULL || j->nbr_points == NULL ||
		j->eng.q == NULL)
	{
		cpu_selfjoin_free(&j->eng);
		return GJ_ERR_NOMEM;
	}

	for (int t = 0; t < nthreads; t++)
	{
		j->args[t].j = j;
		j->args[t].index = t;
	}
	j->nthreads = gj_engine_start_workers(&j->eng, j->threads, nthreads, worker_main, j->args,
										  sizeof(worker_arg));
	if (j->nthreads == 0)
	{
		cpu_selfjoin_free(&j->eng);
		return GJ_ERR_THREAD;
	}
	pthread_mutex_lock(&j->mu);
	j->go = 1;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	*out = j;
	return GJ_OK;
}

/* Counters for progress reports and benchmarks (valid once GJ_DONE). */
void
gj_cpu_selfjoin_stats(const gj_cpu_selfjoin *j, gj_join_stats *st)
{
	st->candidates = j->candidates;
	st->ntasks = j->ntasks;
	st->nthreads = j->nthreads;
}

/* Stop the workers, wait for them and free everything.  NULL is a no-op. */
static void
cpu_selfjoin_free(gj_engine *e)
{
	struct gj_cpu_selfjoin *j = (struct gj_cpu_selfjoin *) e;

	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	if (j->eng.q != NULL)
		gj_queue_cancel(j->eng.q);
	pthread_mutex_lock(&j->mu);
	j->go = 1;					/* release threads still at the gate */
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	for (int t = 0; t < j->nthreads; t++)
		pthread_join(j->threads[t], NULL);
	gj_queue_destroy(j->eng.q);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j->threads);
	free(j->args);
	free(j->nbr_points);
	free(j->tasks);
	free(j);
}
