/*
 * cpu_tiles.c
 *		The CPU eps self-join for many dimensions: blocks of rows against
 *		blocks of rows, vectorised, by a tile plan (tile_plan.c).
 *
 * In many dimensions a grid cell holds a large share of the data (2M
 * exponential points in 16-D: the 6-D grid still compares 41% of all
 * pairs) while true pairs are rare, so the work is the distance arithmetic
 * itself, and what pays is doing it at the vector units' rate and stopping
 * early.  A worker takes a piece of a run (a query block and a range of
 * reference rows), stores the query block transposed once, and tests each
 * reference row against all GJ_TILE_REFS query rows at once
 * (gj_tile_distances: one SIMD lane a pair, the shared rule exactly, an
 * early exit once every lane is past eps2).
 *
 * With opt.prune (the blocks' index, block_index.c), a block of
 * GJ_TILE_REFS reference rows whose bounds are provably farther than eps
 * from the query block's is skipped whole.
 *
 * Pieces are at most GJ_TILES_PIECE reference rows long, so the long runs
 * of the first query blocks do not leave one worker finishing alone; a
 * worker draws them from an atomic counter (the work queue).  Pairs go out
 * through the engine's chunk queue, as the other engines' do: (smaller id,
 * larger id, distance), or with emit_rows the two rows' numbers (smaller
 * first) for the per-row shapes (pair_rows.c).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "block_bounds.h"

#define GJ_TILES_PIECE 8192		/* reference rows in one piece of work */

struct gj_cpu_tiles
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	const gj_points *p;
	gj_tiles_options opt;
	gj_tile_plan plan;
	gj_block_bounds bounds;		/* with opt.prune: of each block of the plan */
	gj_block_bounds bounds_b;	/* ... cross: of the second set's blocks */
	double		s0;				/* gj_rule_s0(eps2) */
	int64_t    *piece_start;	/* per run, its first piece; nruns + 1 */
	int64_t		npieces;
	int64_t		next;			/* atomic: the next piece */
	int			stop;			/* atomic */
	int			nthreads;
	pthread_t  *threads;
	int64_t		tested;			/* atomic: pairs tested, for the stats */
	int64_t		skipped;		/* atomic: pairs the bounds ruled out */
};

static void cpu_tiles_free(gj_engine *e);

static inline int
stopped(struct gj_cpu_tiles *j)
{
	return __atomic_load_n(&j->stop, __ATOMIC_RELAXED);
}

/* Append one pair (rows i < j), swapping a full chunk for an empty one. */
static inline int
emit(struct gj_cpu_tiles *j, gj_chunk **chp, int64_t i, int64_t k, double s)
{
	gj_chunk   *ch = *chp;

	if (ch->n == ch->cap)
	{
		gj_queue_put_full(j->eng.q, ch);
		ch = *chp = gj_queue_get_free(j->eng.q);
		if (ch == NULL)
			return 0;
	}
	if (j->opt.emit_rows)
	{
		ch->a[ch->n] = i;
		ch->b[ch->n] = k;
	}
	else if (j->opt.cross)
	{
		ch->a[ch->n] = j->p->ids[i];
		ch->b[ch->n] = j->p->ids[k];
	}
	else
	{
		int64_t		a = j->p->ids[i],
					b = j->p->ids[k];

		ch->a[ch->n] = a < b ? a : b;
		ch->b[ch->n] = a < b ? b : a;
	}
	ch->dist[ch->n] = sqrt(s);
	ch->n++;
	return 1;
}

/* The run and reference rows of piece k. */
static void
piece_of(const struct gj_cpu_tiles *j, int64_t k, int64_t *run, int64_t *r0, int64_t *r1)
{
	int64_t		lo = 0,
				hi = j->plan.nruns;
	int64_t		first,
				last,
				end;

	while (hi - lo > 1)
	{
		int64_t		mid = (lo + hi) / 2;

		if (j->piece_start[mid] <= k)
			lo = mid;
		else
			hi = mid;
	}
	*run = lo;
	gj_tile_block_rows(&j->plan, j->plan.run_lo[lo], &first, &last);
	gj_tile_block_rows(&j->plan, j->plan.run_hi[lo] - 1, &last, &end);
	*r0 = first + (k - j->piece_start[lo]) * GJ_TILES_PIECE;
	*r1 = *r0 + GJ_TILES_PIECE < end ? *r0 + GJ_TILES_PIECE : end;
}

/* One piece: the query block against reference rows [r0, r1). */
static int
run_piece(struct gj_cpu_tiles *j, int64_t run, int64_t r0, int64_t r1,
		  double *T, gj_chunk **chp)
{
	const gj_points *p = j->p;
	int			dims = p->dims;
	double		eps2 = j->opt.eps2;
	int64_t		q0,
				q1;
	double		s[GJ_TILE_REFS];
	int64_t		qb = j->plan.run_qb[run],
				skipped = 0;

	gj_tile_block_rows(&j->plan, qb, &q0, &q1);
	gj_tile_transpose(p->x, q1, dims, q0, T);
	for (int64_t k = r0; k < r1; k++)
	{
		/* within the query block itself only the rows before k pair with it */
		int			lanes = k < q1 ? (int) (k - q0) : (int) (q1 - q0);
		/* the reference block's bounds: the second set's blocks start at split */
		int64_t		kr = k - j->plan.split;
		const gj_block_bounds *rb = j->opt.cross ? &j->bounds_b : &j->bounds;

		if ((k & 255) == 0 && stopped(j))
			return 0;
		if (j->opt.prune && kr % GJ_TILE_REFS == 0 && (j->opt.cross || k / GJ_TILE_REFS != qb) &&
			gj_block_far(gj_block_pair_lb2(&j->bounds, qb, rb, kr / GJ_TILE_REFS), j->s0))
		{
			/* no pair of the two blocks can pass: the next block */
			int64_t		next = k + GJ_TILE_REFS < r1 ? k + GJ_TILE_REFS : r1;

			skipped += next - k;
			k = next - 1;
			continue;
		}
		if (lanes <= 0 || !gj_tile_distances(p->x + k * dims, T, dims, eps2, s))
			continue;
		for (int l = 0; l < lanes; l++)
			if (s[l] <= eps2 && !emit(j, chp, q0 + l, k, s[l]))
				return 0;
	}
	__atomic_fetch_add(&j->tested, (r1 - r0 - skipped) * (q1 - q0), __ATOMIC_RELAXED);
	__atomic_fetch_add(&j->skipped, skipped * (q1 - q0), __ATOMIC_RELAXED);
	return 1;
}

static void *
tiles_worker(void *arg)
{
	struct gj_cpu_tiles *j = arg;
	double	   *T = malloc(sizeof(double) * GJ_TILE_REFS * (size_t) j->p->dims);
	gj_chunk   *ch = NULL;

	if (T == NULL)
	{
		__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
		gj_engine_fail(&j->eng, GJ_ERR_NOMEM);
	}
	else
		ch = gj_queue_get_free(j->eng.q);
	while (ch != NULL && !stopped(j))
	{
		int64_t		k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		int64_t		run,
					r0,
					r1;

		if (k >= j->npieces)
			break;
		piece_of(j, k, &run, &r0, &r1);
		if (!run_piece(j, run, r0, r1, T, &ch))
			break;
	}
	if (ch != NULL)
		gj_queue_put_full(j->eng.q, ch);	/* an empty one goes back to the pool */
	free(T);
	gj_queue_producer_done(j->eng.q);
	return NULL;
}

/*
 * Start the tile join of p's rows in their current order (brute force:
 * every pair) on up to nthreads threads (0 or less: every CPU).
 */
gj_status
gj_cpu_tiles_start(const gj_points *p, const gj_tiles_options *opt, int nthreads,
				   gj_cpu_tiles **out)
{
	struct gj_cpu_tiles *j;
	gj_status	st;
	int			want;

	*out = NULL;
	if (!(opt->eps2 >= 0.0) || p->n > GJ_MAX_ROWS)
		return GJ_ERR_ARG;
	if (nthreads <= 0)
		nthreads = gj_cpu_count();
	j = calloc(1, sizeof(struct gj_cpu_tiles));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = cpu_tiles_free;
	j->p = p;
	j->opt = *opt;
	if (opt->cross && !(opt->split >= 0 && opt->split <= p->n))
		st = GJ_ERR_ARG;
	else if (opt->cross)
		st = gj_tile_plan_cross(&j->plan, p->n, opt->split, GJ_TILE_REFS);
	else
		st = gj_tile_plan_brute(&j->plan, p->n, GJ_TILE_REFS);
	j->s0 = gj_rule_s0(opt->eps2, p->dims);
	if (st == GJ_OK && opt->prune)
		st = gj_block_bounds_build(&j->bounds, p->x, opt->cross ? opt->split : p->n, p->dims,
								   GJ_TILE_REFS);
	if (st == GJ_OK && opt->prune && opt->cross)
		st = gj_block_bounds_build(&j->bounds_b, p->x + opt->split * p->dims, p->n - opt->split,
								   p->dims, GJ_TILE_REFS);
	if (st == GJ_OK)
	{
		j->piece_start = malloc(sizeof(int64_t) * (j->plan.nruns + 1));
		if (j->piece_start == NULL)
			st = GJ_ERR_NOMEM;
	}
	if (st != GJ_OK)
	{
		cpu_tiles_free(&j->eng);
		return st;
	}
	for (int64_t r = 0; r < j->plan.nruns; r++)
	{
		int64_t		first,
					last,
					end,
					rows;

		gj_tile_block_rows(&j->plan, j->plan.run_lo[r], &first, &last);
		gj_tile_block_rows(&j->plan, j->plan.run_hi[r] - 1, &last, &end);
		rows = end - first;

		j->piece_start[r] = j->npieces;
		j->npieces += (rows + GJ_TILES_PIECE - 1) / GJ_TILES_PIECE;
	}
	j->piece_start[j->plan.nruns] = j->npieces;

	want = (int) (j->npieces < nthreads ? j->npieces : nthreads);
	j->threads = calloc(want > 0 ? want : 1, sizeof(pthread_t));
	j->eng.q = gj_queue_create(2 * (want > 0 ? want : 1) + 2, 0);
	if (j->threads == NULL || j->eng.q == NULL)
	{
		cpu_tiles_free(&j->eng);
		return GJ_ERR_NOMEM;
	}
	if (want == 0)
	{
		gj_queue_set_producers(j->eng.q, 0);	/* fewer than two rows */
		*out = j;
		return GJ_OK;
	}
	j->nthreads = gj_engine_start_workers(&j->eng, j->threads, want, tiles_worker, j, 0);
	if (j->nthreads == 0)
	{
		cpu_tiles_free(&j->eng);
		return GJ_ERR_THREAD;
	}
	*out = j;
	return GJ_OK;
}

/* Pairs tested so far (valid once GJ_DONE for the whole join). */
int64_t
gj_cpu_tiles_tested(const gj_cpu_tiles *j)
{
	return __atomic_load_n(&j->tested, __ATOMIC_RELAXED);
}

/* Pairs the block bounds ruled out without a test (opt.prune). */
int64_t
gj_cpu_tiles_skipped(const gj_cpu_tiles *j)
{
	return __atomic_load_n(&j->skipped, __ATOMIC_RELAXED);
}

static void
cpu_tiles_free(gj_engine *e)
{
	struct gj_cpu_tiles *j = (struct gj_cpu_tiles *) e;

	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	if (j->eng.q != NULL)
		gj_queue_cancel(j->eng.q);
	for (int t = 0; t < j->nthreads; t++)
		pthread_join(j->threads[t], NULL);
	gj_queue_destroy(j->eng.q);
	gj_tile_plan_free(&j->plan);
	gj_block_bounds_free(&j->bounds);
	gj_block_bounds_free(&j->bounds_b);
	free(j->piece_start);
	free(j->threads);
	free(j);
}
