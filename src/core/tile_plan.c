/*
 * tile_plan.c
 *		Which blocks of rows the tile engines compare: the work of an eps
 *		self-join for many dimensions, shared by the CPU and GPU engines.
 *
 * The rows (in their current order) are cut into blocks of `block` rows.
 * The work is a list of runs: a query block qb and a range of reference
 * blocks [lo, hi), every rb in it >= qb, whose rows the engine compares
 * with qb's rows; within qb itself only the pairs i < j.  Each unordered
 * pair of rows must lie in exactly one run, and a pair is never missed
 * unless it provably fails the distance rule.
 *
 * Brute force is one run per query block, [qb, nblocks): every pair.
 *
 * Two sets (a cross plan): rows [0, split) and [split, n), each cut into
 * blocks from its own first row, so that no block holds rows of both; a
 * run is a block of the first set with every block of the second, and
 * only pairs across are compared.
 */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

/* Room for n runs. */
static gj_status
plan_alloc(gj_tile_plan *tp, int64_t n)
{
	tp->run_qb = malloc(sizeof(int64_t) * (n + 1));
	tp->run_lo = malloc(sizeof(int64_t) * (n + 1));
	tp->run_hi = malloc(sizeof(int64_t) * (n + 1));
	if (tp->run_qb == NULL || tp->run_lo == NULL || tp->run_hi == NULL)
	{
		gj_tile_plan_free(tp);
		return GJ_ERR_NOMEM;
	}
	return GJ_OK;
}

/* Every pair of n rows in blocks of block rows. */
gj_status
gj_tile_plan_brute(gj_tile_plan *tp, int64_t n, int block)
{
	gj_status	st;

	memset(tp, 0, sizeof(*tp));
	if (block < 1 || n < 0)
		return GJ_ERR_ARG;
	tp->n = n;
	tp->block = block;
	tp->nblocks = (n + block - 1) / block;
	st = plan_alloc(tp, tp->nblocks);
	if (st != GJ_OK)
		return st;
	for (int64_t qb = 0; qb < tp->nblocks; qb++)
	{
		tp->run_qb[qb] = qb;
		tp->run_lo[qb] = qb;
		tp->run_hi[qb] = tp->nblocks;
	}
	tp->nruns = tp->nblocks;
	tp->units = tp->nblocks * (tp->nblocks + 1) / 2;
	return GJ_OK;
}

/* Every pair across rows [0, split) and [split, n), in blocks of block rows. */
gj_status
gj_tile_plan_cross(gj_tile_plan *tp, int64_t n, int64_t split, int block)
{
	int64_t		nb_a;
	gj_status	st;

	memset(tp, 0, sizeof(*tp));
	if (block < 1 || n < 0 || split < 0 || split > n)
		return GJ_ERR_ARG;
	nb_a = (split + block - 1) / block;
	tp->n = n;
	tp->block = block;
	tp->split = split;
	tp->split_block = nb_a;
	tp->nblocks = nb_a + (n - split + block - 1) / block;
	st = plan_alloc(tp, nb_a);
	if (st != GJ_OK)
		return st;
	if (tp->nblocks == nb_a)
		return GJ_OK;			/* the second set is empty: no runs */
	for (int64_t qb = 0; qb < nb_a; qb++)
	{
		tp->run_qb[qb] = qb;
		tp->run_lo[qb] = nb_a;
		tp->run_hi[qb] = tp->nblocks;
	}
	tp->nruns = nb_a;
	tp->units = nb_a * (tp->nblocks - nb_a);
	return GJ_OK;
}

void
gj_tile_plan_free(gj_tile_plan *tp)
{
	free(tp->run_qb);
	free(tp->run_lo);
	free(tp->run_hi);
	tp->run_qb = tp->run_lo = tp->run_hi = NULL;
	tp->nruns = 0;
}

/* Rows [*r0, *r1) of block b. */
void
gj_tile_block_rows(const gj_tile_plan *tp, int64_t b, int64_t *r0, int64_t *r1)
{
	int64_t		end = tp->split > 0 && b < tp->split_block ? tp->split : tp->n;

	*r0 = tp->split > 0 && b >= tp->split_block ?
		tp->split + (b - tp->split_block) * tp->block : b * tp->block;
	*r1 = *r0 + tp->block < end ? *r0 + tp->block : end;
}

/* One thread's share of the sample's pairs: the cells [c0, c1). */
typedef struct pair_slice
{
	const gj_grid *g;
	const gj_points *p;
	int64_t		c0,
				c1,
				same,
				other;
} pair_slice;

static void
count_pair_slice(void *arg, int64_t r0, int64_t r1)
{
	pair_slice *ps = arg;

	(void) r0;
	(void) r1;
	gj_grid_count_pairs_cells(ps->g, ps->p, ps->c0, ps->c1, &ps->same, &ps->other);
}

#define GJ_SAMPLE_SLICE_PAIRS 200000	/* candidate pairs a thread is worth starting for */

/*
 * The sample's pairs within eps2 on threads, the cells cut where the
 * candidate pairs before them (acc, per cell and one more) reach each
 * thread's equal share: a sample's dense cells would leave an even cut of
 * its rows on one thread.  One thread took 30-71 ms for 3,535 rows of 16-D
 * on the GPU host, 4% to 7% of the joins it chose for.
 */
static gj_status
count_sample_pairs(const gj_grid *g, const gj_points *s, const double *acc, int64_t *within)
{
	pair_slice	ps[GJ_MAX_SLICES];
	double		total = acc[g->ncells];
	int			nt = gj_cpu_count();
	int64_t		cell = 0;
	gj_status	st;

	if (total / GJ_SAMPLE_SLICE_PAIRS < nt)
		nt = (int) (total / GJ_SAMPLE_SLICE_PAIRS);
	nt = nt < 1 ? 1 : nt > GJ_MAX_SLICES ? GJ_MAX_SLICES : nt;
	for (int t = 0; t < nt; t++)
	{
		ps[t].g = g;
		ps[t].p = s;
		ps[t].c0 = cell;
		while (cell < g->ncells && (t == nt - 1 || acc[cell] < total * (t + 1) / nt))
			cell++;
		ps[t].c1 = cell;
		ps[t].same = ps[t].other = 0;
	}
	st = gj_run_rows(count_pair_slice, ps, sizeof(pair_slice), nt, nt);
	*within = 0;
	for (int t = 0; t < nt; t++)
		*within += ps[t].same + ps[t].other;
	return st;
}

/*
 * What the grid would cost against tiles, from a strided sample of up to m
 * rows of p: *cand, the share of all pairs the grid compares (pairs of
 * sampled rows in the same or adjacent cells, over all sampled pairs), and
 * *within, the share that is within eps2.  Pairs of a sample are a sample
 * of pairs, so both shares are unbiased; a few thousand rows give them to
 * a few per cent when they are not tiny, which is all the choice needs.
 */
gj_status
gj_sample_pair_shares(const gj_points *p, double eps2, int64_t m, double *cand,
					  double *within)
{
	gj_points	s;
	gj_grid		g;
	int64_t		step,
				nbr[GJ_MAX_FWD_NEIGHBOURS],
				pairs = 0;
	double		c = 0.0,
				all,
			   *acc;
	gj_nbr_iter it;
	gj_status	st;

	*cand = *within = 0.0;
	if (p->n < 2)
		return GJ_OK;
	m = m < p->n ? m : p->n;
	step = p->n / m;
	gj_points_init(&s, p->dims);
	st = gj_points_reserve(&s, m + 1);
	for (int64_t i = 0; st == GJ_OK && i < m; i++)
		st = gj_points_push(&s, i, p->x + (i * step) * p->dims);
	if (st == GJ_OK)
		st = gj_grid_build(&g, &s, eps2);
	if (st != GJ_OK)
	{
		gj_points_free(&s);
		return st;
	}
	/* acc[cell]: the candidate pairs of the cells before it */
	acc = malloc(sizeof(double) * (g.ncells + 1));
	if (acc == NULL)
		st = GJ_ERR_NOMEM;
	if (st == GJ_OK && g.ncells > 0)
	{
		gj_nbr_iter_init(&it, &g, 0);
		for (int64_t cell = 0; cell < g.ncells; cell++)
		{
			int			nn = gj_nbr_forward(&it, cell, nbr);
			double		mc = (double) (g.cell_start[cell + 1] - g.cell_start[cell]);

			acc[cell] = c;
			c += mc * (mc - 1) / 2;
			for (int k = 0; k < nn; k++)
				c += mc * (double) (g.cell_start[nbr[k] + 1] - g.cell_start[nbr[k]]);
		}
	}
	if (st == GJ_OK)
	{
		acc[g.ncells] = c;
		st = count_sample_pairs(&g, &s, acc, &pairs);
	}
	if (st == GJ_OK)
	{
		all = (double) m * (double) (m - 1) / 2;
		*cand = c / all;
		*within = (double) pairs / all;
	}
	free(acc);
	gj_grid_free(&g);
	gj_points_free(&s);
	return st;
}
