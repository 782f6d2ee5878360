/*
 * knn_search.h
 *		The k-nearest-neighbour search of one query point, shared verbatim by
 *		the CPU engine (cpu_knn.c) and the GPU kernels (kernels/knn.cu).
 *
 * Everything here is a static inline function that nvcc also compiles as
 * __host__ __device__, so both engines run the same search, the same k
 * buffer and the same distance: that is how their answers are identical,
 * ties included, and why the CPU engine can serve as the GPU's oracle.
 *
 * The answer for a query is unique: the k reference rows that come first in
 * the order (squared distance, id), with the squared distance computed by the
 * shared rule (gj_sqdist's order of operations, no FMA).
 *
 * k buffer.  Holds the best k (d, id) seen so far.  Two layouts, as
 * compared in the kNN partition paper: an unsorted array that remembers
 * where its worst entry is (insertion O(1), replacing the worst O(k)), and
 * a max-heap (O(log k) for both).  Entries are strided so that the GPU can
 * interleave the buffers of a warp's queries for coalesced access.
 *
 * Grid search.  The grid is the self-join's (same plan, same sort, same
 * non-empty cell arrays) with Z-order cell ids, so blocks of 2^L cells per
 * dimension are contiguous id ranges: an implicit tree over the cells.  The
 * search starts in the query's own block and works outward, pruning blocks
 * whose box is farther than the k-th distance so far.  (Rings of cells
 * around the query's cell were tried first and measured: with 1M clustered
 * references and uniform queries, a query in empty space crossed dozens of
 * rings and searched ~2,000 rows of cells, 0.5 ms a query, no better than
 * a scan.  The tree skips empty space and far clusters a block at a time.)
 */
#ifndef GJ_KNN_SEARCH_H
#define GJ_KNN_SEARCH_H

#include <math.h>
#include <stdint.h>

#include "gj_core.h"

#ifdef __CUDACC__
#define GJ_HD static __host__ __device__ __forceinline__
#else
#define GJ_HD static inline
#endif

/* The shared distance rule, with the operations rounded one by one. */
#if defined(__CUDA_ARCH__)
#define GJ_SUB(a, b) __dsub_rn((a), (b))
#define GJ_MUL(a, b) __dmul_rn((a), (b))
#define GJ_ADD(a, b) __dadd_rn((a), (b))
#else
#define GJ_SUB(a, b) ((a) - (b))
#define GJ_MUL(a, b) ((a) * (b))
#define GJ_ADD(a, b) ((a) + (b))
#endif

/* --- the k buffer ------------------------------------------------------ */

typedef struct gj_kbuf
{
	double	   *d;				/* squared distances */
	int64_t    *id;				/* reference ids (the tie-break, and the answer) */
	int64_t		stride;			/* entry e lives at [e * stride] */
	int			k;
	int			n;				/* entries held, <= k */
	int			heap;			/* max-heap, else array with worst at top */
	int			top;			/* array: index of the worst entry */
	double		wd;				/* array: the worst entry's distance and id, */
	int64_t		wid;			/* ... kept here so no offer reads them back */
} gj_kbuf;

/* Does (d1, id1) rank after (d2, id2)? */
GJ_HD int
gj_kb_after(double d1, int64_t id1, double d2, int64_t id2)
{
	return d1 > d2 || (d1 == d2 && id1 > id2);
}

GJ_HD int
gj_kb_after_at(const gj_kbuf *b, int i, int j)
{
	int64_t		s = b->stride;

	return gj_kb_after(b->d[i * s], b->id[i * s], b->d[j * s], b->id[j * s]);
}

GJ_HD void
gj_kb_set(gj_kbuf *b, int i, double d, int64_t id)
{
	int64_t		s = b->stride;

	b->d[i * s] = d;
	b->id[i * s] = id;
}

GJ_HD void
gj_kb_swap(gj_kbuf *b, int i, int j)
{
	int64_t		s = b->stride;
	double		d = b->d[i * s];
	int64_t		id = b->id[i * s];

	b->d[i * s] = b->d[j * s];
	b->id[i * s] = b->id[j * s];
	b->d[j * s] = d;
	b->id[j * s] = id;
}

/* Restore the max-heap below i within the first n entries. */
GJ_HD void
gj_kb_sift_down(gj_kbuf *b, int i, int n)
{
	for (;;)
	{
		int			l = 2 * i + 1,
					m = i;

		if (l < n && gj_kb_after_at(b, l, m))
			m = l;
		if (l + 1 < n && gj_kb_after_at(b, l + 1, m))
			m = l + 1;
		if (m == i)
			return;
		gj_kb_swap(b, i, m);
		i = m;
	}
}

GJ_HD void
gj_kb_init(gj_kbuf *b, double *d, int64_t *id, int64_t stride, int k, int heap)
{
	b->d = d;
	b->id = id;
	b->stride = stride;
	b->k = k;
	b->n = 0;
	b->heap = heap;
	b->top = 0;
	b->wd = 0.0;
	b->wid = 0;
}

/* Resume a buffer that holds n entries, its worst at top (array). */
GJ_HD void
gj_kb_resume(gj_kbuf *b, int n, int top)
{
	b->n = n;
	b->top = top;
	if (!b->heap && n > 0)
	{
		b->wd = b->d[top * b->stride];
		b->wid = b->id[top * b->stride];
	}
}

/* The k-th squared distance so far, or +inf while the buffer is not full. */
GJ_HD double
gj_kb_bound(const gj_kbuf *b)
{
	if (b->n < b->k)
		return INFINITY;
	return b->heap ? b->d[0] : b->wd;
}

/* Offer a candidate; kept if it ranks before the current k-th. */
GJ_HD void
gj_kb_offer(gj_kbuf *b, double d, int64_t id)
{
	if (b->n < b->k)
	{
		int			i = b->n++;

		gj_kb_set(b, i, d, id);
		if (b->heap)
		{
			while (i > 0 && gj_kb_after_at(b, i, (i - 1) / 2))
			{
				gj_kb_swap(b, i, (i - 1) / 2);
				i = (i - 1) / 2;
			}
		}
		else if (i == 0 || gj_kb_after(d, id, b->wd, b->wid))
		{
			b->top = i;
			b->wd = d;
			b->wid = id;
		}
		return;
	}
	if (b->heap)
	{
		if (!gj_kb_after(b->d[0], b->id[0], d, id))
			return;
		gj_kb_set(b, 0, d, id);
		gj_kb_sift_down(b, 0, b->n);
	}
	else
	{
		/*
		 * Replace the worst, then find the new worst.  The running worst
		 * stays in registers, so the entries' loads do not wait on one
		 * another (on the GPU each is a global-memory round trip: a chain
		 * of them made offers most of the tile kernel's refine time).
		 */
		int64_t		s = b->stride,
					wid;
		double		wd;
		int			top = 0;

		if (!gj_kb_after(b->wd, b->wid, d, id))
			return;
		gj_kb_set(b, b->top, d, id);
		wd = b->d[0];
		wid = b->id[0];
		for (int i = 1; i < b->n; i++)
		{
			double		di = b->d[i * s];
			int64_t		idi = b->id[i * s];

			if (gj_kb_after(di, idi, wd, wid))
			{
				top = i;
				wd = di;
				wid = idi;
			}
		}
		b->top = top;
		b->wd = wd;
		b->wid = wid;
	}
}

/* --- candidates --------------------------------------------------------- */

/*
 * Squared distance by the shared rule, abandoned (returning +inf) once the
 * partial sum exceeds bound: later terms only add, and rounding is
 * monotonic, so such a candidate could not be kept.  Candidates that are
 * kept always get the full, identical sum.
 */
GJ_HD double
gj_knn_sqdist(const double *a, const double *b, int dims, double bound)
{
	double		s = 0.0;

	for (int d = 0; d < dims; d++)
	{
		double		t = GJ_SUB(a[d], b[d]);

		s = GJ_ADD(s, GJ_MUL(t, t));
		if ((d & 3) == 3 && s > bound)
			return INFINITY;
	}
	return s;
}

/*
 * A stop word, raised to cancel (GPU: by the host; CPU: the engine's own
 * flag), read every 1024 rows of a scan, every 64 blocks of a descent and
 * every 1024 steps of the final sort; NULL never stops.  A stopped search
 * leaves a partial list, which the canceller discards.
 */
GJ_HD int
gj_knn_stopped(const int *stop)
{
	return stop != NULL && *(const volatile int *) stop != 0;
}

/*
 * Sort the held entries by (d, id), ascending (heapsort, in place); 0 when
 * stopped part-way (the stop word is read every 1024 steps: with a huge k
 * the sort alone runs for seconds on one GPU thread).
 */
GJ_HD int
gj_kb_finish(gj_kbuf *b, const int *stop)
{
	int			n = b->n;

	if (!b->heap)
		for (int i = n / 2 - 1; i >= 0; i--)
		{
			if ((i & 1023) == 0 && gj_knn_stopped(stop))
				return 0;
			gj_kb_sift_down(b, i, n);
		}
	for (int end = n - 1; end > 0; end--)
	{
		if ((end & 1023) == 0 && gj_knn_stopped(stop))
			return 0;
		gj_kb_swap(b, 0, end);
		gj_kb_sift_down(b, 0, end);
	}
	return 1;
}

/*
 * Offer the reference rows [j0, j1) of x (row-major, dims wide); 0 when
 * stopped.
 */
GJ_HD int
gj_knn_scan(const double *x, const int64_t *ids, int dims, const double *q,
			int64_t j0, int64_t j1, int64_t self, gj_kbuf *b, const int *stop)
{
	for (int64_t j = j0; j < j1; j++)
	{
		double		bound = gj_kb_bound(b);
		double		s;

		if (((j - j0) & 1023) == 1023 && gj_knn_stopped(stop))
			return 0;
		if (j == self)
			continue;
		s = gj_knn_sqdist(q, x + j * dims, dims, bound);
		if (s <= bound)
			gj_kb_offer(b, s, ids[j]);
	}
	return 1;
}

/* --- the grid search ---------------------------------------------------- */

/* A Z-order grid over sorted reference points, as the search sees it. */
typedef struct gj_knn_grid
{
	int			dims;
	int			m;				/* indexed dimensions */
	int			bits;			/* tree height: 2^bits >= every ncell */
	int			idx_dim[GJ_MAX_INDEXED_DIMS];
	double		origin[GJ_MAX_INDEXED_DIMS];
	double		width[GJ_MAX_INDEXED_DIMS];
	int64_t		ncell[GJ_MAX_INDEXED_DIMS];
	int64_t		ncells;			/* non-empty cells */
	int64_t		npoints;
	const int64_t *cell_id;		/* ascending */
	const int64_t *start64;		/* cell starts: the CPU's ... */
	const uint32_t *start32;	/* ... or the GPU's */
	const double *x;			/* points in cell order */
	const int64_t *ids;			/* their ids */
	const int  *stop;			/* GPU: the cancel word; NULL on the CPU */
} gj_knn_grid;

GJ_HD int64_t
gj_knn_cell_start(const gj_knn_grid *G, int64_t c)
{
	return G->start64 != NULL ? G->start64[c] : (int64_t) G->start32[c];
}

/* First index in a[lo..hi) holding a value >= key. */
GJ_HD int64_t
gj_knn_lower_bound(const int64_t *a, int64_t lo, int64_t hi, int64_t key)
{
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * A margin for float64 rounding in cell assignment and in the bounds: a
 * point's cell comes from a rounded division, so it may sit a few ulps
 * outside its cell's exact box.  Bounds are shrunk by far more than that;
 * the only cost of a loose bound is a little more searching.
 */
GJ_HD double
gj_knn_slack(const gj_knn_grid *G, int k, double qv)
{
	return G->width[k] * 1e-7 +
		(fabs(G->origin[k]) + fabs(qv) + (double) G->ncell[k] * G->width[k]) * 1e-13;
}

/* Lower bounds of squared distances are scaled down by this (sum order). */
#define GJ_KNN_BOUND_SCALE (1.0 - 1e-12)

/*
 * Lower bound of the squared distance from q to any point in the block of
 * cells [base_k, base_k + 2^L) of every indexed dimension k (the first and
 * last cells of a dimension are open-ended: clamped points live there).
 */
GJ_HD double
gj_knn_block_bound(const gj_knn_grid *G, const double *qv, const uint32_t *base,
				   int L)
{
	double		s = 0.0;

	for (int k = 0; k < G->m; k++)
	{
		int64_t		c0 = base[k],
					c1 = (int64_t) base[k] + ((int64_t) 1 << L);	/* exclusive */
		double		g = 0.0;

		if (c0 > 0)
		{
			double		lo = G->origin[k] + (double) c0 * G->width[k];

			if (lo - qv[k] > g)
				g = lo - qv[k];
		}
		if (c1 < G->ncell[k])
		{
			double		hi = G->origin[k] + (double) c1 * G->width[k];

			if (qv[k] - hi > g)
				g = qv[k] - hi;
		}
		g -= gj_knn_slack(G, k, qv[k]);
		if (g > 0.0)
			s += g * g;
	}
	return s * GJ_KNN_BOUND_SCALE;
}

/* Blocks with at most this many points are scanned, not split. */
#define GJ_KNN_LEAF_POINTS 32
#define GJ_KNN_STACK 24			/* > the most Z-order bits per dim, 21 */

typedef struct gj_knn_node
{
	int64_t		a;				/* its non-empty cells: [a, b) */
	int64_t		b;
	int64_t		lo;				/* its first Z-order id */
	uint32_t	base[GJ_MAX_INDEXED_DIMS];	/* its first cell, per dim */
	int16_t		level;			/* 2^level cells per dimension */
	int16_t		next;			/* next child to visit; -1: not opened */
	int16_t		nchild;			/* children in order[] */
	uint8_t		order[1 << GJ_MAX_INDEXED_DIMS];	/* nearest first */
} gj_knn_node;

/* Fill G from a host grid over refs (host pointers; cpu_knn.c). */
#ifdef __cplusplus
extern "C"
#endif
void		gj_knn_grid_view(gj_knn_grid *G, const gj_grid *g, const gj_points *refs);

/*
 * The k nearest references of point q (skipping row self, or -1) offered
 * into b.  A depth-first descent of the implicit tree of Z-order blocks:
 * a block is skipped when it holds no cell (found by binary search within
 * its parent's cell range) or when its box is farther than the buffer's
 * k-th distance; a block of few points is scanned; otherwise its children
 * are visited nearest box first, so the buffer fills with near points
 * early and prunes the rest.  Exact: only provably farther blocks
 * are skipped.  Dense clusters are split finely and empty space is
 * skipped a whole block at a time, so skew does not turn it into a scan.
 */
GJ_HD void
gj_knn_search_grid(const gj_knn_grid *G, const double *q, int64_t self,
				   gj_kbuf *b)
{
	int			m = G->m;
	double		qv[GJ_MAX_INDEXED_DIMS];
	gj_knn_node stack[GJ_KNN_STACK];
	int			sp = 0;
	unsigned	visits = 0;

	if (m == 0)
	{
		gj_knn_scan(G->x, G->ids, G->dims, q, 0, G->npoints, self, b, G->stop);
		return;
	}
	for (int k = 0; k < m; k++)
		qv[k] = q[G->idx_dim[k]];

	stack[0].a = 0;
	stack[0].b = G->ncells;
	stack[0].lo = 0;
	for (int k = 0; k < m; k++)
		stack[0].base[k] = 0;
	stack[0].level = (int16_t) G->bits;
	stack[0].next = -1;
	sp = 1;
	while (sp > 0)
	{
		gj_knn_node *n = &stack[sp - 1];
		int			L = n->level;
		int			c;
		gj_knn_node *ch;

		if ((++visits & 63) == 0 && gj_knn_stopped(G->stop))
			return;

		if (n->next < 0)
		{
			int64_t		p0,
						p1;
			double		cb[1 << GJ_MAX_INDEXED_DIMS];
			double		kth = gj_kb_bound(b);

			/* opening a block: prune it, scan it, or order its children */
			if (gj_knn_block_bound(G, qv, n->base, L) > kth)
			{
				sp--;
				continue;
			}
			p0 = gj_knn_cell_start(G, n->a);
			p1 = gj_knn_cell_start(G, n->b);
			if (L == 0 || p1 - p0 <= GJ_KNN_LEAF_POINTS || n->b - n->a == 1)
			{
				if (!gj_knn_scan(G->x, G->ids, G->dims, q, p0, p1, self, b, G->stop))
					return;
				sp--;
				continue;
			}
			n->nchild = 0;
			for (int cc = 0; cc < (1 << m); cc++)
			{
				uint32_t	base[GJ_MAX_INDEXED_DIMS];
				double		d;
				int			i;

				for (int k = 0; k < m; k++)
					base[k] = n->base[k] |
						(uint32_t) (((cc >> (m - 1 - k)) & 1) << (L - 1));
				d = gj_knn_block_bound(G, qv, base, L - 1);
				if (d > kth)
					continue;
				/* insertion by (bound, child number): nearest first */
				for (i = n->nchild; i > 0 && cb[i - 1] > d; i--)
				{
					cb[i] = cb[i - 1];
					n->order[i] = n->order[i - 1];
				}
				cb[i] = d;
				n->order[i] = (uint8_t) cc;
				n->nchild++;
			}
			n->next = 0;
		}
		if (n->next == n->nchild)
		{
			sp--;
			continue;
		}
		c = n->order[n->next++];

		ch = &stack[sp];
		for (int k = 0; k < m; k++)
			ch->base[k] = n->base[k] |
				(uint32_t) (((c >> (m - 1 - k)) & 1) << (L - 1));
		ch->lo = n->lo | ((int64_t) c << (m * (L - 1)));
		ch->a = gj_knn_lower_bound(G->cell_id, n->a, n->b, ch->lo);
		ch->b = gj_knn_lower_bound(G->cell_id, ch->a, n->b,
								   ch->lo + ((int64_t) 1 << (m * (L - 1))));
		if (ch->a == ch->b)
			continue;			/* no points there */
		ch->level = (int16_t) (L - 1);
		ch->next = -1;
		sp++;
	}
}

#endif							/* GJ_KNN_SEARCH_H */
