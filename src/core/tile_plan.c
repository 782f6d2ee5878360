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
 */
#include <stdlib.h>
#include <string.h>

#include "gj_core.h"

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
	*r0 = b * tp->block;
	*r1 = *r0 + tp->block < tp->n ? *r0 + tp->block : tp->n;
}
