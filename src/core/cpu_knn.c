/*
 * cpu_knn.c
 *		The multi-threaded CPU k-nearest-neighbour engine, and the choices
 *		(method, cell width, effective k) that the GPU engine shares.
 *
 * Worker threads take blocks of queries from an atomic counter (the work
 * queue: blocks are small, so a thread that draws queries in empty space or
 * in a dense cluster does not hold the others up) and run the search of
 * knn_search.h on each, with one k buffer per thread.  Queries are visited
 * in the order of the reference grid's cells, so consecutive queries share
 * cells and their reference points stay in cache.  Each finished query's
 * list goes out through the same chunk queue as the self-join's pairs.  As
 * there, the workers have every signal blocked and touch nothing but this
 * file's data.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "knn_search.h"
#include "block_bounds.h"

#define GJ_KNN_BLOCK 64			/* queries per work-queue draw */
#define GJ_KNN_SAMPLE 65536		/* points sampled to size the cells */
#define GJ_KNN_CELL_POINTS 4.0	/* points per cell, as seen from a point */

int64_t
gj_knn_effective_k(const gj_knn_options *opt, int64_t nrefs)
{
	int64_t		avail = nrefs - (opt->exclude_self ? 1 : 0);

	if (avail < 0)
		avail = 0;
	return opt->k < avail ? opt->k : avail;
}

gj_knn_method
gj_knn_pick_method(const gj_knn_options *opt, int dims)
{
	if (opt->method != GJ_KNN_AUTO)
		return opt->method;
	return dims <= GJ_KNN_GRID_MAX_DIMS ? GJ_KNN_GRID : GJ_KNN_BLOCKS;
}

/*
 * Mean number of points sharing a point's cell under grid plan g, estimated
 * from sample, s points drawn evenly from n: a sampled point sees
 * 1 + f * (c - 1) sampled points in a cell of c points, f being s / n.
 */
static gj_status
occupancy(const double *sample, int64_t s, int64_t n, int dims, const gj_grid *g,
		  double *occ)
{
	int64_t    *ids = malloc(sizeof(int64_t) * (s + 1));
	uint32_t   *rows = malloc(sizeof(uint32_t) * (s + 1));
	double		seen = 0.0,
				f = (double) s / (double) n;
	int64_t		run = 0,
				maxkey = 0;
	gj_status	st;

	if (ids == NULL || rows == NULL)
	{
		free(ids);
		free(rows);
		return GJ_ERR_NOMEM;
	}
	for (int64_t i = 0; i < s; i++)
	{
		ids[i] = gj_grid_cell_of(g, sample + i * dims);
		rows[i] = (uint32_t) i;
		maxkey = ids[i] > maxkey ? ids[i] : maxkey;
	}
	st = gj_sort_by_key(ids, rows, s, maxkey);	/* a radix sort: ids only */
	free(rows);
	if (st != GJ_OK)
	{
		free(ids);
		return st;
	}
	for (int64_t i = 0; i <= s; i++)
	{
		if (i > 0 && (i == s || ids[i] != ids[i - 1]))
		{
			seen += (double) run * (double) run;
			run = 0;
		}
		run++;
	}
	free(ids);
	*occ = 1.0 + (seen / (double) s - 1.0) / f;
	return GJ_OK;
}

/*
 * The kNN grid's geometry: a first cell width from the bounding box of the
 * widest dimensions, shrunk while a sample shows points crowding more than
 * GJ_KNN_CELL_POINTS to a cell; then Z-order ids.
 */
gj_status
gj_knn_grid_plan(gj_grid *g, const gj_points *refs, const gj_dim_stats *st)
{
	double		target = GJ_KNN_CELL_POINTS;
	double		logv = 0.0,
				w;
	int			m = 0;
	gj_status	res = GJ_OK;

	memset(g, 0, sizeof(*g));
	if (refs->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;

	/* first guess: the bounding box of the widest dims, evenly filled */
	{
		double	   *ranges = malloc(sizeof(double) * refs->dims);
		int			nr = 0;

		if (ranges == NULL)
			return GJ_ERR_NOMEM;
		for (int d = 0; d < refs->dims; d++)
		{
			double		r = st[d].max - st[d].min;

			if (r > 0.0 && isfinite(r))
				ranges[nr++] = r;
		}
		for (int i = 0; i < nr && m < GJ_MAX_INDEXED_DIMS; i++)
		{
			int			best = i;

			for (int j = i + 1; j < nr; j++)
				if (ranges[j] > ranges[best])
					best = j;
			{
				double		t = ranges[i];

				ranges[i] = ranges[best];
				ranges[best] = t;
			}
			logv += log(ranges[i]);
			m++;
		}
		free(ranges);
	}
	w = m == 0 ? 1.0 : exp((logv + log(target) - log((double) refs->n + 1.0)) / m);

	/*
	 * then shrink where the points are denser than the box suggests, as a
	 * strided sample shows; the sample is gathered once, since its rows
	 * are far apart (a cache miss each) and it is read up to four times
	 */
	if (m > 0)
	{
		int64_t		s = refs->n < GJ_KNN_SAMPLE ? refs->n : GJ_KNN_SAMPLE;
		int			dims = refs->dims;
		double	   *sample = malloc(sizeof(double) * dims * (s + 1));

		if (sample == NULL)
			return GJ_ERR_NOMEM;
		for (int64_t i = 0; i < s; i++)
			memcpy(sample + i * dims, refs->x + (i * (refs->n / s)) * dims,
				   sizeof(double) * dims);
		for (int iter = 0; iter < 4 && isfinite(w) && w > 0.0; iter++)
		{
			double		occ;

			res = gj_grid_plan_from_stats(g, dims, refs->n, w * w, st);
			if (res != GJ_OK || g->nidx == 0)
				break;
			res = occupancy(sample, s, refs->n, dims, g, &occ);
			if (res != GJ_OK || occ <= 2.0 * target)
				break;
			w *= pow(target / occ, 1.0 / g->nidx);
		}
		free(sample);
	}
	if (!(isfinite(w) && w > 0.0))
		w = 1.0;
	if (res == GJ_OK)
		res = gj_grid_plan_from_stats(g, refs->dims, refs->n, w * w, st);
	if (res == GJ_OK)
		gj_grid_use_morton(g, st);
	return res;
}

/* Build the kNN grid over refs, sorting them in place. */
gj_status
gj_knn_grid_build(gj_grid *g, gj_points *refs)
{
	gj_dim_stats *st;
	gj_status	res;

	memset(g, 0, sizeof(*g));
	if (refs->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	st = malloc(sizeof(gj_dim_stats) * (refs->dims + 1));
	if (st == NULL)
		return GJ_ERR_NOMEM;
	res = gj_points_stats(refs, st);
	if (res == GJ_OK)
		res = gj_knn_grid_plan(g, refs, st);
	if (res == GJ_OK)
		res = gj_grid_build_planned(g, refs);
	free(st);
	return res;
}

/* --- the engine --------------------------------------------------------- */

struct gj_cpu_knn
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	const gj_points *refs;
	const gj_points *queries;
	gj_knn_grid G;
	int			use_grid;
	int64_t		k;
	int			exclude_self;
	int			heap;
	uint32_t   *order;			/* queries in visiting order */
	int64_t		nq;				/* queries to visit */
	int			prune;			/* brute force skips blocks (GJ_KNN_BLOCKS) */
	gj_block_bounds rb;			/* then: the references' blocks of GJ_TILE_REFS */

	int			nthreads;
	pthread_t  *threads;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int			go;

	int64_t		next;			/* atomic: next query block */
	int			stop;			/* atomic: cancel or error */
};

static void cpu_knn_free(gj_engine *e);

static void
knn_fail(struct gj_cpu_knn *j, gj_status st)
{
	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	gj_engine_fail(&j->eng, st);
}

/* Send one query's sorted list as rows (query id, reference id, rank, dist). */
static int
emit_list(struct gj_cpu_knn *j, gj_chunk **chp, int64_t qid, const gj_kbuf *b)
{
	for (int e = 0; e < b->n; e++)
	{
		gj_chunk   *ch = *chp;

		if (ch != NULL && ch->n == ch->cap)
		{
			gj_queue_put_full(j->eng.q, ch);
			ch = *chp = NULL;
		}
		if (ch == NULL)
		{
			ch = *chp = gj_queue_get_free(j->eng.q);
			if (ch == NULL)
				return 0;
			ch->n = 0;
		}
		ch->a[ch->n] = qid;
		ch->b[ch->n] = b->id[e];
		ch->rank[ch->n] = e + 1;
		ch->dist[ch->n] = sqrt(b->d[e]);
		ch->n++;
	}
	return 1;
}

/*
 * Brute force for queries [b0, b1) of the visiting order, tiled: each block
 * of GJ_TILE_REFS references is transposed once for the whole batch and
 * tested against every query with gj_tile_distances, the query's k-th
 * distance so far as the bound (the scan's own early exit, vectorised), so
 * a block costs one pass of vector arithmetic and a few offers.  kb holds
 * the batch's buffers; 0 when stopped.
 */
static int
brute_block(struct gj_cpu_knn *j, int64_t b0, int64_t b1, int64_t r0, gj_kbuf *kb,
			double *T)
{
	const gj_points *refs = j->refs;
	int			dims = refs->dims;
	int			lanes = refs->n - r0 < GJ_TILE_REFS ? (int) (refs->n - r0) : GJ_TILE_REFS;
	double		s[GJ_TILE_REFS];

	gj_tile_transpose(refs->x, refs->n, dims, r0, T);
	for (int64_t i = b0; i < b1; i++)
	{
		uint32_t	qrow = j->order != NULL ? j->order[i] : (uint32_t) i;
		gj_kbuf    *b = &kb[i - b0];
		double		bound = gj_kb_bound(b);

		if (!gj_tile_distances(j->queries->x + (int64_t) qrow * dims, T, dims, bound, s))
			continue;
		for (int l = 0; l < lanes; l++)
			if (s[l] <= bound && !(j->exclude_self && r0 + l == qrow))
			{
				gj_kb_offer(b, s[l], refs->ids[r0 + l]);
				bound = gj_kb_bound(b);
			}
	}
	return 1;
}

typedef struct lb_block
{
	double		lb2;
	int64_t		block;
} lb_block;

static int
cmp_lb(const void *a, const void *b)
{
	const lb_block *x = a,
			   *y = b;

	if (x->lb2 != y->lb2)
		return x->lb2 < y->lb2 ? -1 : 1;
	return x->block < y->block ? -1 : x->block > y->block;
}

/* Per worker: the batch's bounds and the blocks in visiting order. */
typedef struct knn_scratch
{
	double	   *lo,
			   *hi,
			   *c;
	lb_block   *order;
} knn_scratch;

/*
 * Brute force for queries [b0, b1) (positions in the visiting order) into
 * their k buffers, then out as lists.  With the index (prune), the
 * reference blocks go nearest bound first, and the sweep ends at the first
 * block whose bound is past every query's k-th distance: the rest are
 * farther still (block_bounds.h proves the skip exact).  0 when stopped.
 */
static int
brute_batch(struct gj_cpu_knn *j, int64_t b0, int64_t b1, gj_kbuf *kb, double *T,
			knn_scratch *sc, gj_chunk **chp)
{
	const gj_points *refs = j->refs;
	int			dims = refs->dims;
	int64_t		nb = (refs->n + GJ_TILE_REFS - 1) / GJ_TILE_REFS;

	if (j->prune)
	{
		double		r;
		const uint32_t *rows = j->order != NULL ? j->order : NULL;

		gj_bound_rows(j->queries->x, dims, rows, b0, b1, sc->lo, sc->hi, sc->c, &r);
		for (int64_t b = 0; b < nb; b++)
		{
			sc->order[b].block = b;
			sc->order[b].lb2 = gj_bounds_lb2(sc->lo, sc->hi, sc->c, r,
											 j->rb.lo + b * dims, j->rb.hi + b * dims,
											 j->rb.c + b * dims, j->rb.r[b], dims);
			if (sc->order[b].lb2 != sc->order[b].lb2)
				sc->order[b].lb2 = 0.0;	/* NaN: no bound */
		}
		qsort(sc->order, nb, sizeof(lb_block), cmp_lb);
	}
	for (int64_t v = 0; v < nb; v++)
	{
		int64_t		blk = j->prune ? sc->order[v].block : v;

		if (__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
			return 0;
		if (j->prune)
		{
			double		worst = 0.0;

			for (int64_t i = b0; i < b1; i++)
			{
				double		bd = gj_kb_bound(&kb[i - b0]);

				worst = bd > worst ? bd : worst;
			}
			if (gj_block_far(sc->order[v].lb2, gj_rule_s0(worst, dims)))
				break;			/* this block and every later one */
		}
		brute_block(j, b0, b1, blk * GJ_TILE_REFS, kb, T);
	}
	for (int64_t i = b0; i < b1; i++)
	{
		uint32_t	qrow = j->order != NULL ? j->order[i] : (uint32_t) i;

		if (!gj_kb_finish(&kb[i - b0], &j->stop) ||
			!emit_list(j, chp, j->queries->ids[qrow], &kb[i - b0]))
			return 0;
	}
	return 1;
}

/*
 * Queries per draw of a worker: GJ_KNN_BLOCK, fewer for brute force with a
 * large k (the batch's k buffers stay under GJ_KNN_BATCH_ENTRIES).
 */
#define GJ_KNN_BATCH_ENTRIES (1 << 20)

static int64_t
draw_size(const struct gj_cpu_knn *j)
{
	int64_t		b = GJ_KNN_BATCH_ENTRIES / (j->k > 0 ? j->k : 1);

	if (j->use_grid || b > GJ_KNN_BLOCK)
		return GJ_KNN_BLOCK;
	return b < 1 ? 1 : b;
}

static void *
knn_worker(void *arg)
{
	struct gj_cpu_knn *j = arg;
	int64_t		nq = j->nq;
	int			dims = j->refs->dims;
	int64_t		draw = draw_size(j);
	int64_t		nbuf = j->use_grid ? 1 : draw;
	double	   *bd = malloc(sizeof(double) * j->k * nbuf);
	int64_t    *bid = malloc(sizeof(int64_t) * j->k * nbuf);
	gj_kbuf    *kb = malloc(sizeof(gj_kbuf) * nbuf);
	double	   *T = j->use_grid ? NULL : malloc(sizeof(double) * GJ_TILE_REFS * dims);
	gj_chunk   *ch = NULL;
	knn_scratch sc;
	int			sc_ok = 1;

	memset(&sc, 0, sizeof(sc));
	if (j->prune)
	{
		sc.lo = malloc(sizeof(double) * dims);
		sc.hi = malloc(sizeof(double) * dims);
		sc.c = malloc(sizeof(double) * dims);
		sc.order = malloc(sizeof(lb_block) * (j->rb.nblocks + 1));
		sc_ok = sc.lo != NULL && sc.hi != NULL && sc.c != NULL && sc.order != NULL;
	}

	pthread_mutex_lock(&j->mu);
	while (!j->go)
		pthread_cond_wait(&j->cv, &j->mu);
	pthread_mutex_unlock(&j->mu);

	if (bd == NULL || bid == NULL || kb == NULL || (!j->use_grid && T == NULL) || !sc_ok)
		knn_fail(j, GJ_ERR_NOMEM);
	while (!__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
	{
		int64_t		b0 = __atomic_fetch_add(&j->next, draw, __ATOMIC_RELAXED);
		int64_t		b1 = b0 + draw < nq ? b0 + draw : nq;

		if (b0 >= nq)
			break;
		if (!j->use_grid)
		{
			for (int64_t i = 0; i < b1 - b0; i++)
				gj_kb_init(&kb[i], bd + i * j->k, bid + i * j->k, 1, (int) j->k, j->heap);
			if (!brute_batch(j, b0, b1, kb, T, &sc, &ch))
				break;
			continue;
		}
		for (int64_t i = b0; i < b1; i++)
		{
			uint32_t	qrow = j->order != NULL ? j->order[i] : (uint32_t) i;
			const double *qx = j->queries->x + (int64_t) qrow * dims;
			int64_t		self = j->exclude_self ? (int64_t) qrow : -1;

			if (__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
				break;
			gj_kb_init(kb, bd, bid, 1, (int) j->k, j->heap);
			gj_knn_search_grid(&j->G, qx, self, kb);
			if (!gj_kb_finish(kb, &j->stop) ||
				!emit_list(j, &ch, j->queries->ids[qrow], kb))
				break;
		}
	}
	if (ch != NULL)
	{
		if (ch->n > 0)
			gj_queue_put_full(j->eng.q, ch);
		else
			gj_queue_release(j->eng.q, ch);
	}
	free(bd);
	free(bid);
	free(kb);
	free(T);
	free(sc.lo);
	free(sc.hi);
	free(sc.c);
	free(sc.order);
	gj_queue_producer_done(j->eng.q);
	return NULL;
}

/* The search's view of a host grid (host pointers). */
void
gj_knn_grid_view(gj_knn_grid *G, const gj_grid *g, const gj_points *refs)
{
	memset(G, 0, sizeof(*G));
	G->dims = refs->dims;
	G->m = g->nidx;
	/* the tree's root: the top Z-order bits of every cell are zero */
	G->bits = 0;
	for (int k = 0; k < g->nidx; k++)
	{
		while (((int64_t) 1 << G->bits) < g->ncell_dim[k])
			G->bits++;
		G->idx_dim[k] = g->idx_dim[k];
		G->origin[k] = g->origin[k];
		G->width[k] = g->width[k];
		G->ncell[k] = g->ncell_dim[k];
	}
	G->ncells = g->ncells;
	G->npoints = refs->n;
	G->cell_id = g->cell_id;
	G->start64 = g->cell_start;
	G->x = refs->x;
	G->ids = refs->ids;
}

/*
 * Queries sorted by the reference cell they fall in (malloc'd), stably, so
 * queries of one cell keep their row order.
 */
gj_status
gj_knn_query_order(const gj_grid *g, const gj_points *qs, uint32_t **out)
{
	int64_t    *keys = malloc(sizeof(int64_t) * (qs->n + 1));
	uint32_t   *order = malloc(sizeof(uint32_t) * (qs->n + 1));
	int64_t		maxkey = 0;
	gj_status	st;

	if (keys == NULL || order == NULL)
	{
		free(keys);
		free(order);
		return GJ_ERR_NOMEM;
	}
	st = gj_grid_cell_ids(g, qs, keys, order, &maxkey);
	if (st == GJ_OK)
		st = gj_sort_by_key(keys, order, qs->n, maxkey);
	free(keys);
	if (st != GJ_OK)
	{
		free(order);
		return st;
	}
	*out = order;
	return GJ_OK;
}

gj_status
gj_cpu_knn_start(const gj_points *refs, const gj_grid *g,
				 const gj_points *queries, const gj_knn_options *opt,
				 int nthreads, gj_cpu_knn **out)
{
	struct gj_cpu_knn *j;
	int			want;
	gj_status	st;

	*out = NULL;
	if (opt->k < 1 || refs->dims != queries->dims ||
		(opt->exclude_self && queries != refs))
		return GJ_ERR_ARG;
	if (refs->n > GJ_MAX_ROWS || queries->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	if (nthreads <= 0)
		nthreads = gj_cpu_count();
	want = (int) (((opt->self_rows != NULL ? opt->nself : queries->n) + 255) / 256);
	if (want < nthreads)
		nthreads = want < 1 ? 1 : want;

	j = calloc(1, sizeof(struct gj_cpu_knn));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = cpu_knn_free;
	j->refs = refs;
	j->queries = queries;
	j->nq = queries->n;
	j->k = gj_knn_effective_k(opt, refs->n);
	j->exclude_self = opt->exclude_self;
	j->heap = j->k >= (opt->heap_min_k > 0 ? opt->heap_min_k : GJ_KNN_HEAP_MIN_K);
	if (j->k > INT32_MAX)
	{
		free(j);
		return GJ_ERR_LIMIT;
	}
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	if (g != NULL)
	{
		j->use_grid = 1;
		gj_knn_grid_view(&j->G, g, refs);
		j->G.stop = &j->stop;	/* a huge k's search stops part-way */
		if (!opt->exclude_self && queries->n > 1)
		{
			st = gj_knn_query_order(g, queries, &j->order);
			if (st != GJ_OK)
			{
				cpu_knn_free(&j->eng);
				return st;
			}
		}
	}
	else if (gj_knn_pick_method(opt, refs->dims) == GJ_KNN_BLOCKS && refs->n > GJ_TILE_REFS)
	{
		/* brute force with the index: the references' block bounds */
		j->prune = 1;
		st = gj_block_bounds_build(&j->rb, refs->x, refs->n, refs->dims, GJ_TILE_REFS);
		if (st != GJ_OK)
		{
			cpu_knn_free(&j->eng);
			return st;
		}
	}
	if (opt->exclude_self && opt->self_rows != NULL)
	{
		/* some rows only: they are the visiting order (ascending rows) */
		j->nq = opt->nself;
		j->order = malloc(sizeof(uint32_t) * (opt->nself + 1));
		if (j->order == NULL)
		{
			cpu_knn_free(&j->eng);
			return GJ_ERR_NOMEM;
		}
		memcpy(j->order, opt->self_rows, sizeof(uint32_t) * opt->nself);
	}
	j->threads = calloc(nthreads, sizeof(pthread_t));
	j->eng.q = gj_queue_create(2 * nthreads + 2, 1);
	if (j->threads == NULL || j->eng.q == NULL)
	{
		cpu_knn_free(&j->eng);
		return GJ_ERR_NOMEM;
	}
	if (j->k == 0 || j->nq == 0)
	{
		gj_queue_set_producers(j->eng.q, 0);	/* nothing to find */
		*out = j;
		return GJ_OK;
	}

	j->nthreads = gj_engine_start_workers(&j->eng, j->threads, nthreads, knn_worker, j, 0);
	if (j->nthreads == 0)
	{
		cpu_knn_free(&j->eng);
		return GJ_ERR_THREAD;
	}
	pthread_mutex_lock(&j->mu);
	j->go = 1;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	*out = j;
	return GJ_OK;
}

/* Stop the workers, wait for them and free everything.  NULL is a no-op. */
static void
cpu_knn_free(gj_engine *e)
{
	struct gj_cpu_knn *j = (struct gj_cpu_knn *) e;

	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	if (j->eng.q != NULL)
		gj_queue_cancel(j->eng.q);
	pthread_mutex_lock(&j->mu);
	j->go = 1;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	for (int t = 0; t < j->nthreads; t++)
		pthread_join(j->threads[t], NULL);
	gj_queue_destroy(j->eng.q);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j->threads);
	free(j->order);
	gj_block_bounds_free(&j->rb);
	free(j);
}
