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
 * k buffer.  Holds the best k (d, id, row) seen so far.  Two layouts, as
 * compared in the kNN partition paper: an unsorted array that remembers
 * where its worst entry is (insertion O(1), replacing the worst O(k)), and
 * a max-heap (O(log k) for both).  Entries are strided so that the GPU can
 * interleave the buffers of a warp's queries for coalesced access.
 *
 * Grid search.  Rings of cells outward from the query's cell: after the box
 * of cells within r steps of the query's cell has been searched, no point
 * outside it is closer than the distance from the query to the box's
 * nearest face, so the search stops once the buffer's k-th distance is
 * below that.  A ring is enumerated in linear-id order by galloping
 * searches of the sorted non-empty cell ids: a search that lands outside
 * the shell jumps straight to the next shell cell at or after the cell it
 * found, so empty space costs one search per run of empty rows, not one
 * probe per empty cell, and dense clusters beside empty space do not turn
 * the search into a scan.  Once the buffer is full, whole runs of cells
 * whose box is farther than the k-th distance are skipped the same way.
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
	int64_t    *id;				/* reference ids (the tie-break) */
	uint32_t   *row;			/* reference rows */
	int64_t		stride;			/* entry e lives at [e * stride] */
	int			k;
	int			n;				/* entries held, <= k */
	int			heap;			/* max-heap, else array with worst at top */
	int			top;			/* array: index of the worst entry */
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
gj_kb_set(gj_kbuf *b, int i, double d, int64_t id, uint32_t row)
{
	int64_t		s = b->stride;

	b->d[i * s] = d;
	b->id[i * s] = id;
	b->row[i * s] = row;
}

GJ_HD void
gj_kb_swap(gj_kbuf *b, int i, int j)
{
	int64_t		s = b->stride;
	double		d = b->d[i * s];
	int64_t		id = b->id[i * s];
	uint32_t	row = b->row[i * s];

	b->d[i * s] = b->d[j * s];
	b->id[i * s] = b->id[j * s];
	b->row[i * s] = b->row[j * s];
	b->d[j * s] = d;
	b->id[j * s] = id;
	b->row[j * s] = row;
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
gj_kb_init(gj_kbuf *b, double *d, int64_t *id, uint32_t *row, int64_t stride,
		   int k, int heap)
{
	b->d = d;
	b->id = id;
	b->row = row;
	b->stride = stride;
	b->k = k;
	b->n = 0;
	b->heap = heap;
	b->top = 0;
}

/* The k-th squared distance so far, or +inf while the buffer is not full. */
GJ_HD double
gj_kb_bound(const gj_kbuf *b)
{
	if (b->n < b->k)
		return INFINITY;
	return b->d[(b->heap ? 0 : b->top) * b->stride];
}

/* Offer a candidate; kept if it ranks before the current k-th. */
GJ_HD void
gj_kb_offer(gj_kbuf *b, double d, int64_t id, uint32_t row)
{
	if (b->n < b->k)
	{
		int			i = b->n++;

		gj_kb_set(b, i, d, id, row);
		if (b->heap)
		{
			while (i > 0 && gj_kb_after_at(b, i, (i - 1) / 2))
			{
				gj_kb_swap(b, i, (i - 1) / 2);
				i = (i - 1) / 2;
			}
		}
		else if (i > 0 && gj_kb_after_at(b, i, b->top))
			b->top = i;
		return;
	}
	if (b->heap)
	{
		if (!gj_kb_after(b->d[0], b->id[0], d, id))
			return;
		gj_kb_set(b, 0, d, id, row);
		gj_kb_sift_down(b, 0, b->n);
	}
	else
	{
		int64_t		s = b->stride;

		if (!gj_kb_after(b->d[b->top * s], b->id[b->top * s], d, id))
			return;
		gj_kb_set(b, b->top, d, id, row);
		for (int i = 0; i < b->n; i++)
			if (gj_kb_after_at(b, i, b->top))
				b->top = i;
	}
}

/* Sort the held entries by (d, id), ascending (heapsort, in place). */
GJ_HD void
gj_kb_finish(gj_kbuf *b)
{
	int			n = b->n;

	if (!b->heap)
		for (int i = n / 2 - 1; i >= 0; i--)
			gj_kb_sift_down(b, i, n);
	for (int end = n - 1; end > 0; end--)
	{
		gj_kb_swap(b, 0, end);
		gj_kb_sift_down(b, 0, end);
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

/* Offer the reference rows [j0, j1) of x (row-major, dims wide). */
GJ_HD void
gj_knn_scan(const double *x, const int64_t *ids, int dims, const double *q,
			int64_t j0, int64_t j1, int64_t self, gj_kbuf *b)
{
	for (int64_t j = j0; j < j1; j++)
	{
		double		bound = gj_kb_bound(b);
		double		s;

		if (j == self)
			continue;
		s = gj_knn_sqdist(q, x + j * dims, dims, bound);
		if (s <= bound)
			gj_kb_offer(b, s, ids[j], (uint32_t) j);
	}
}

/* --- the grid search ---------------------------------------------------- */

/* A grid over sorted reference points, as the search sees it. */
typedef struct gj_knn_grid
{
	int			dims;
	int			m;				/* indexed dimensions */
	int			idx_dim[GJ_MAX_INDEXED_DIMS];
	double		origin[GJ_MAX_INDEXED_DIMS];
	double		width[GJ_MAX_INDEXED_DIMS];
	int64_t		ncell[GJ_MAX_INDEXED_DIMS];
	int64_t		stride[GJ_MAX_INDEXED_DIMS];
	int64_t		ncells;			/* non-empty cells */
	int64_t		npoints;
	const int64_t *cell_id;		/* ascending */
	const int64_t *start64;		/* cell starts: the CPU's ... */
	const uint32_t *start32;	/* ... or the GPU's */
	const double *x;			/* points in cell order */
	const int64_t *ids;			/* their ids */
} gj_knn_grid;

GJ_HD int64_t
gj_knn_cell_start(const gj_knn_grid *G, int64_t c)
{
	return G->start64 != NULL ? G->start64[c] : (int64_t) G->start32[c];
}

/* First index in a[lo..n) holding a value >= key, galloping from lo. */
GJ_HD int64_t
gj_knn_lower_bound(const int64_t *a, int64_t lo, int64_t n, int64_t key)
{
	int64_t		hi = lo,
				step = 1;

	while (hi < n && a[hi] < key)
	{
		lo = hi + 1;
		hi += step;
		step *= 2;
	}
	if (hi > n)
		hi = n;
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

/*
 * Lower bound of |x - qv| over points x in cell c of indexed dimension k
 * (the first and last cells are open-ended).
 */
GJ_HD double
gj_knn_cell_gap(const gj_knn_grid *G, int k, int64_t c, double qv)
{
	double		g = 0.0;

	if (c > 0)
	{
		double		lo = G->origin[k] + (double) c * G->width[k];

		if (lo - qv > g)
			g = lo - qv;
	}
	if (c < G->ncell[k] - 1)
	{
		double		hi = G->origin[k] + (double) (c + 1) * G->width[k];

		if (qv - hi > g)
			g = qv - hi;
	}
	g -= gj_knn_slack(G, k, qv);
	return g > 0.0 ? g * g : 0.0;
}

/* Lower bounds of squared distances are scaled down by this (sum order). */
#define GJ_KNN_BOUND_SCALE (1.0 - 1e-12)

/*
 * Move v to the smallest cell vector (in linear-id order) at or after it
 * that lies in the box [lo, hi], is not in the previous box [plo, phi] (when
 * has_prev), and whose prefix bound does not exceed the buffer's k-th
 * distance.  Returns 0 when there is none.
 */
GJ_HD int
gj_knn_next_cell(const gj_knn_grid *G, const double *qv, const int64_t *qc,
				 const int64_t *lo, const int64_t *hi, const int64_t *plo,
				 const int64_t *phi, int has_prev, double bound, int64_t *v)
{
	int			m = G->m;
	int			k = 0;
	double		part[GJ_MAX_INDEXED_DIMS];
	int			inprev[GJ_MAX_INDEXED_DIMS + 1];

	inprev[0] = has_prev;
	while (k < m)
	{
		double		p;

		if (v[k] < lo[k])
		{
			v[k] = lo[k];
			for (int t = k + 1; t < m; t++)
				v[t] = lo[t];
		}
		if (v[k] > hi[k])
		{
			/* carry into the previous dimension */
			if (k == 0)
				return 0;
			k--;
			v[k]++;
			for (int t = k + 1; t < m; t++)
				v[t] = lo[t];
			continue;
		}
		p = (k > 0 ? part[k - 1] : 0.0) +
			gj_knn_cell_gap(G, k, v[k], qv[k]) * GJ_KNN_BOUND_SCALE;
		if (p > bound)
		{
			if (v[k] >= qc[k])
				v[k] = hi[k] + 1;	/* farther on: the rest of this run too */
			else
			{
				v[k]++;			/* nearer on: try the next one */
				for (int t = k + 1; t < m; t++)
					v[t] = lo[t];
			}
			continue;
		}
		if (k == m - 1 && inprev[k] && v[k] >= plo[k] && v[k] <= phi[k])
		{
			v[k] = phi[k] + 1;	/* searched in an earlier ring */
			continue;
		}
		part[k] = p;
		inprev[k + 1] = inprev[k] && v[k] >= plo[k] && v[k] <= phi[k];
		k++;
	}
	return 1;
}

/*
 * The k nearest references of point q (skipping row self, or -1) offered
 * into b.  b must be empty or hold candidates from other reference sets.
 */
GJ_HD void
gj_knn_search_grid(const gj_knn_grid *G, const double *q, int64_t self,
				   gj_kbuf *b)
{
	int			m = G->m;
	double		qv[GJ_MAX_INDEXED_DIMS];
	int64_t		qc[GJ_MAX_INDEXED_DIMS],
				lo[GJ_MAX_INDEXED_DIMS],
				hi[GJ_MAX_INDEXED_DIMS],
				plo[GJ_MAX_INDEXED_DIMS],
				phi[GJ_MAX_INDEXED_DIMS],
				v[GJ_MAX_INDEXED_DIMS];

	if (m == 0)
	{
		gj_knn_scan(G->x, G->ids, G->dims, q, 0, G->npoints, self, b);
		return;
	}
	for (int k = 0; k < m; k++)
	{
		double		u;

		qv[k] = q[G->idx_dim[k]];
		u = (qv[k] - G->origin[k]) / G->width[k];
		/* clamp before converting: the query may lie far outside */
		qc[k] = u < 0.0 ? 0 :
			u >= (double) (G->ncell[k] - 1) ? G->ncell[k] - 1 : (int64_t) u;
	}

	for (int64_t r = 0;; r++)
	{
		int64_t		pos = 0;
		int			all = 1;
		double		gap = INFINITY;

		for (int k = 0; k < m; k++)
		{
			lo[k] = qc[k] - r < 0 ? 0 : qc[k] - r;
			hi[k] = qc[k] + r > G->ncell[k] - 1 ? G->ncell[k] - 1 : qc[k] + r;
			v[k] = lo[k];
		}

		/* the shell: cells of this box not in the previous one */
		while (gj_knn_next_cell(G, qv, qc, lo, hi, plo, phi, r > 0,
								gj_kb_bound(b), v))
		{
			int64_t		target = 0,
						id;

			for (int k = 0; k < m; k++)
				target += v[k] * G->stride[k];
			pos = gj_knn_lower_bound(G->cell_id, pos, G->ncells, target);
			if (pos == G->ncells)
				break;
			id = G->cell_id[pos];
			if (id == target)
			{
				gj_knn_scan(G->x, G->ids, G->dims, q,
							gj_knn_cell_start(G, pos),
							gj_knn_cell_start(G, pos + 1), self, b);
				pos++;
				v[m - 1]++;
			}
			else
			{
				/* jump to the cell found; next_cell moves on from there */
				for (int k = 0; k < m; k++)
					v[k] = (id / G->stride[k]) % G->ncell[k];
			}
		}

		/* nearest face of the box that still has cells beyond it */
		for (int k = 0; k < m; k++)
		{
			double		s = gj_knn_slack(G, k, qv[k]);

			if (lo[k] > 0)
			{
				double		g = qv[k] - (G->origin[k] + (double) lo[k] * G->width[k]) - s;

				gap = g < gap ? g : gap;
				all = 0;
			}
			if (hi[k] < G->ncell[k] - 1)
			{
				double		g = G->origin[k] + (double) (hi[k] + 1) * G->width[k] - qv[k] - s;

				gap = g < gap ? g : gap;
				all = 0;
			}
		}
		if (all)
			return;				/* the box holds every cell */
		if (gap > 0.0 && gj_kb_bound(b) < gap * gap * GJ_KNN_BOUND_SCALE)
			return;
		for (int k = 0; k < m; k++)
		{
			plo[k] = lo[k];
			phi[k] = hi[k];
		}
	}
}

#endif							/* GJ_KNN_SEARCH_H */
