/*
 * cpu_probe.c
 *		Joins driven from a few rows: the eps self-join restricted by its
 *		output (WHERE a = 42), and the sampled size estimate of a join.
 *
 * Restricted join.  Filtering the output of a full self-join on an id
 * column keeps exactly the pairs with an endpoint whose id is in the
 * filter's set; those endpoints are the query rows.  Each query row probes
 * its whole 3^n neighbourhood (not LID-UNICOMP's forward half: the other
 * endpoint need not be a query row), or with no grid every row.  A pair of
 * two query rows is met twice and kept from the lower row only.  What is
 * then emitted follows the output's rule (the smaller id first, or both
 * orientations with symmetric) followed by the filter, decided here from
 * "is the other row a query row", so the chunks carry final rows.
 *
 * Threads take blocks of query rows from an atomic counter; query rows
 * ascend, so with a grid consecutive rows share a cell and its
 * neighbourhood is looked up once.
 *
 * Join of two sets (eps_join).  The same engine with the query rows taken
 * from the other set: each probes the cells around its own coordinates
 * (gj_grid_point_neighbourhood) and every pair within eps is a row, with
 * nothing to deduplicate.  The queries are in any order; sorted by the
 * grid's cells (gj_knn_query_order does that for kNN) they would share
 * lookups, which measurement has not yet asked for.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

#define GJ_PROBE_BLOCK 64
#define GJ_ESTIMATE_CANDIDATES 4096	/* tested per sampled row, at most */

struct gj_cpu_probe
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	const gj_grid *g;
	const gj_points *p;
	double		eps2;
	gj_probe_options opt;
	uint8_t    *inq;			/* per row: is it a query row */
	uint32_t   *rows;			/* copy of the query rows */

	int			nthreads;
	pthread_t  *threads;
	int64_t		next;			/* atomic: next query block */
	int			stop;			/* atomic */
};

static void cpu_probe_free(gj_engine *e);

/* Append one output row; 0 once the queue was cancelled. */
static inline int
put_row(struct gj_cpu_probe *j, gj_chunk **chp, int64_t a, int64_t b, double d)
{
	gj_chunk   *ch = *chp;

	if (ch->n == ch->cap)
	{
		gj_queue_put_full(j->eng.q, ch);
		ch = *chp = gj_queue_get_free(j->eng.q);
		if (ch == NULL)
			return 0;
	}
	ch->a[ch->n] = a;
	ch->b[ch->n] = b;
	ch->dist[ch->n] = d;
	ch->n++;
	return 1;
}

/*
 * The rows a full join's pair {q, r} (q a query row) leaves after the
 * filter.  u and v are the ids of q and r; r_in: r is a query row too.
 */
static inline int
emit_pair(struct gj_cpu_probe *j, gj_chunk **chp, int64_t u, int64_t v,
		  int r_in, double s)
{
	double		d = sqrt(s);

	if (!j->opt.symmetric)
	{
		/* one row (min, max); its filtered column must be a query id */
		int			pass = j->opt.column == 0 ? (u <= v || r_in) : (u >= v || r_in);

		return !pass || put_row(j, chp, u < v ? u : v, u < v ? v : u, d);
	}
	if (j->opt.column == 0)
		return put_row(j, chp, u, v, d) && (!r_in || put_row(j, chp, v, u, d));
	return (!r_in || put_row(j, chp, u, v, d)) && put_row(j, chp, v, u, d);
}

/* Query row q against rows [r0, r1). */
static inline int
probe_range(struct gj_cpu_probe *j, gj_chunk **chp, int64_t q, int64_t r0,
			int64_t r1)
{
	const gj_points *p = j->p;
	const double *xq = p->x + q * p->dims;

	for (int64_t r = r0; r < r1; r++)
	{
		double		s;

		if (r == q || (j->inq[r] && r < q))
			continue;			/* itself, or a pair found from r */
		s = gj_sqdist(xq, p->x + r * p->dims, p->dims);
		if (s <= j->eps2 &&
			!emit_pair(j, chp, p->ids[q], p->ids[r], j->inq[r], s))
			return 0;
	}
	return 1;
}

/* Query row i of the other set against every row of p near it. */
static int
probe_other(struct gj_cpu_probe *j, gj_chunk **chp, int64_t i, int64_t *nbr)
{
	const gj_points *p = j->p;
	const gj_points *qs = j->opt.queries;
	const double *xq = qs->x + i * p->dims;
	int64_t		qid = qs->ids[i];
	int			nn = 1;

	if (j->g != NULL)
		nn = gj_grid_point_neighbourhood(j->g, xq, nbr);
	for (int k = 0; k < nn; k++)
	{
		int64_t		r0 = j->g != NULL ? j->g->cell_start[nbr[k]] : 0;
		int64_t		r1 = j->g != NULL ? j->g->cell_start[nbr[k] + 1] : p->n;

		for (int64_t r = r0; r < r1; r++)
		{
			double		s = gj_sqdist(xq, p->x + r * p->dims, p->dims);

			if (s <= j->eps2 &&
				!(j->opt.swap ? put_row(j, chp, p->ids[r], qid, sqrt(s)) :
				  put_row(j, chp, qid, p->ids[r], sqrt(s))))
				return 0;
		}
	}
	return 1;
}

static void *
probe_worker(void *arg)
{
	struct gj_cpu_probe *j = arg;
	const gj_grid *g = j->g;
	int64_t		nbr[GJ_MAX_ALL_NEIGHBOURS];
	int			nn = 0;
	int64_t		cur_cell = -1;
	gj_chunk   *ch = gj_queue_get_free(j->eng.q);

	while (ch != NULL && !__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
	{
		int64_t		b0 = __atomic_fetch_add(&j->next, GJ_PROBE_BLOCK, __ATOMIC_RELAXED);
		int64_t		b1 = b0 + GJ_PROBE_BLOCK < j->opt.nrows ? b0 + GJ_PROBE_BLOCK : j->opt.nrows;
		int			ok = 1;

		if (b0 >= j->opt.nrows)
			break;
		for (int64_t i = b0; i < b1 && ok; i++)
		{
			int64_t		q = j->rows != NULL ? j->rows[i] : i;

			if (__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
			{
				ok = 0;
				break;
			}
			if (j->opt.queries != NULL)
			{
				ok = probe_other(j, &ch, i, nbr);
				continue;
			}
			if (g == NULL)
			{
				ok = probe_range(j, &ch, q, 0, j->p->n);
				continue;
			}
			/* the cell of q: the last cell starting at or before it */
			if (cur_cell < 0 || q < g->cell_start[cur_cell] ||
				q >= g->cell_start[cur_cell + 1])
			{
				cur_cell = gj_grid_cell_of_row(g, q, cur_cell);
				nn = gj_grid_neighbourhood(g, cur_cell, nbr);
			}
			for (int k = 0; k < nn && ok; k++)
				ok = probe_range(j, &ch, q, g->cell_start[nbr[k]],
								 g->cell_start[nbr[k] + 1]);
		}
		if (!ok)
			break;
	}
	if (ch != NULL)
		gj_queue_put_full(j->eng.q, ch);
	gj_queue_producer_done(j->eng.q);
	return NULL;
}

/*
 * Start the restricted join of the points p (sorted by g when g is given)
 * from opt->rows.  Returns at once; rows come from gj_engine_next.
 */
gj_status
gj_cpu_probe_start(const gj_grid *g, const gj_points *p, double eps2,
				   const gj_probe_options *opt, int nthreads,
				   gj_cpu_probe **out)
{
	struct gj_cpu_probe *j;
	int			want;

	int64_t		nrows = opt->queries != NULL ? opt->queries->n : opt->nrows;

	*out = NULL;
	if (!(eps2 >= 0.0) || (opt->column != 0 && opt->column != 1) ||
		(opt->queries != NULL && opt->queries->dims != p->dims))
		return GJ_ERR_ARG;
	if (nthreads <= 0)
		nthreads = gj_cpu_count();
	want = (int) ((nrows + GJ_PROBE_BLOCK - 1) / GJ_PROBE_BLOCK);
	if (want < nthreads)
		nthreads = want < 1 ? 1 : want;

	j = calloc(1, sizeof(struct gj_cpu_probe));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = cpu_probe_free;
	j->g = g;
	j->p = p;
	j->eps2 = eps2;
	j->opt = *opt;
	j->opt.nrows = nrows;
	j->threads = calloc(nthreads, sizeof(pthread_t));
	j->eng.q = gj_queue_create(2 * nthreads + 2, 0);
	if (opt->queries == NULL)
	{
		j->inq = calloc((size_t) p->n + 1, 1);
		j->rows = malloc(sizeof(uint32_t) * (opt->nrows + 1));
	}
	if ((opt->queries == NULL && (j->inq == NULL || j->rows == NULL)) ||
		j->threads == NULL || j->eng.q == NULL)
	{
		cpu_probe_free(&j->eng);
		return GJ_ERR_NOMEM;
	}
	for (int64_t i = 0; opt->queries == NULL && i < opt->nrows; i++)
	{
		j->rows[i] = opt->rows[i];
		j->inq[opt->rows[i]] = 1;
	}
	j->opt.rows = j->rows;
	if (nrows == 0 || p->n == 0)
	{
		gj_queue_set_producers(j->eng.q, 0);
		*out = j;
		return GJ_OK;
	}
	j->nthreads = gj_engine_start_workers(&j->eng, j->threads, nthreads, probe_worker, j, 0);
	if (j->nthreads == 0)
	{
		cpu_probe_free(&j->eng);
		return GJ_ERR_THREAD;
	}
	*out = j;
	return GJ_OK;
}

/* Stop the workers, wait for them and free everything.  NULL is a no-op. */
static void
cpu_probe_free(gj_engine *e)
{
	struct gj_cpu_probe *j = (struct gj_cpu_probe *) e;

	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	if (j->eng.q != NULL)
		gj_queue_cancel(j->eng.q);
	for (int t = 0; t < j->nthreads; t++)
		pthread_join(j->threads[t], NULL);
	gj_queue_destroy(j->eng.q);
	free(j->threads);
	free(j->inq);
	free(j->rows);
	free(j);
}

/*
 * The rows of the grid-sorted points p within eps of xq among the nn cells
 * nbr (row self, if any, left out), estimated: every step-th row of the
 * concatenated cells is tested, step chosen so that at most
 * GJ_ESTIMATE_CANDIDATES are, and the hits are scaled by step.
 */
static double
sample_hits(const gj_grid *g, const gj_points *p, const double *xq, const int64_t *nbr,
			int nn, int64_t self)
{
	int64_t		total = 0,
				step,
				seen = 0,
				found = 0;

	for (int k = 0; k < nn; k++)
		total += g->cell_start[nbr[k] + 1] - g->cell_start[nbr[k]];
	step = total / GJ_ESTIMATE_CANDIDATES + 1;
	for (int k = 0; k < nn; k++)
	{
		int64_t		r0 = g->cell_start[nbr[k]],
					r1 = g->cell_start[nbr[k] + 1];

		for (int64_t r = r0 + (step - seen % step) % step; r < r1; r += step)
			if (r != self && gj_sqdist(xq, p->x + r * p->dims, p->dims) <= g->eps2)
				found++;
		seen += r1 - r0;
	}
	return (double) found * (double) step;
}

/*
 * Sampled estimate of the unordered pairs of the grid-sorted points p:
 * nsample rows spread over p, each counting its neighbours (sample_hits).
 */
double
gj_grid_estimate_pairs(const gj_grid *g, const gj_points *p, int64_t nsample)
{
	int64_t		nbr[GJ_MAX_ALL_NEIGHBOURS];
	double		hits = 0.0;
	int64_t		cell = 0;

	if (p->n < 2 || g->ncells == 0)
		return 0.0;
	if (nsample > p->n)
		nsample = p->n;
	for (int64_t s = 0; s < nsample; s++)
	{
		int64_t		q = s * p->n / nsample;

		while (g->cell_start[cell + 1] <= q)
			cell++;
		hits += sample_hits(g, p, p->x + q * p->dims, nbr, gj_grid_neighbourhood(g, cell, nbr), q);
	}
	return hits * (double) p->n / (double) nsample / 2.0;
}

/*
 * The same for a join: the pairs of a row of probe and a row of the
 * grid-sorted points p within eps, from nsample rows spread over probe.
 */
double
gj_grid_estimate_join_pairs(const gj_grid *g, const gj_points *p, const gj_points *probe,
							int64_t nsample)
{
	int64_t		nbr[GJ_MAX_ALL_NEIGHBOURS];
	double		hits = 0.0;

	if (p->n == 0 || probe->n == 0 || g->ncells == 0)
		return 0.0;
	if (nsample > probe->n)
		nsample = probe->n;
	for (int64_t s = 0; s < nsample; s++)
	{
		const double *xq = probe->x + s * probe->n / nsample * probe->dims;

		hits += sample_hits(g, p, xq, nbr, gj_grid_point_neighbourhood(g, xq, nbr), -1);
	}
	return hits * (double) probe->n / (double) nsample;
}

/*
 * Count the pairs within the grid's eps of the grid-sorted points p, split
 * by whether the two rows have the same id (*same) or not (*other); every
 * pair once, on the calling thread.  For small samples (the planner's).
 */
void
gj_grid_count_pairs(const gj_grid *g, const gj_points *p, int64_t *same,
					int64_t *other)
{
	*same = *other = 0;
	if (p->n < 2 || g->ncells == 0)
		return;
	gj_grid_count_pairs_cells(g, p, 0, g->ncells, same, other);
}

/* The same for the pairs whose first row is in cells [c0, c1), added to *same and *other. */
void
gj_grid_count_pairs_cells(const gj_grid *g, const gj_points *p, int64_t c0, int64_t c1,
						  int64_t *same, int64_t *other)
{
	int64_t		nbr[GJ_MAX_FWD_NEIGHBOURS];
	gj_nbr_iter it;

	if (c0 >= c1)
		return;
	gj_nbr_iter_init(&it, g, c0);
	for (int64_t c = c0; c < c1; c++)
	{
		int			nn = gj_nbr_forward(&it, c, nbr);
		int64_t		a1 = g->cell_start[c + 1];

		for (int64_t i = g->cell_start[c]; i < a1; i++)
		{
			const double *xi = p->x + i * p->dims;

			for (int k = -1; k < nn; k++)
			{
				int64_t		r0 = k < 0 ? i + 1 : g->cell_start[nbr[k]];
				int64_t		r1 = k < 0 ? a1 : g->cell_start[nbr[k] + 1];

				for (int64_t r = r0; r < r1; r++)
					if (gj_sqdist(xi, p->x + r * p->dims, p->dims) <= g->eps2)
					{
						if (p->ids[i] == p->ids[r])
							(*same)++;
						else
							(*other)++;
					}
			}
		}
	}
}
