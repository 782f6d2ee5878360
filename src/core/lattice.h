/*
 * lattice.h
 *		Exact neighbour counts against dense cells without a distance per
 *		pair: the cell's rows in a lattice of small boxes, counted row of
 *		boxes by row of boxes (lattice.c builds it; density.c and density.cu
 *		count through it with the function below, the same code on both).
 *
 * A cell of a grid of side >= eps holding N rows costs a plain count N
 * distances per query, so a clump a few eps across costs N^2 (1M rows:
 * 1e12 distances).  DBSCAN's boxes (density_boxes.h) do not help a count
 * without a cap: nearly every box of side eps / sqrt(d) straddles a row's
 * eps-sphere.  Here a cell of many rows is cut into m_0 x ... x m_{d-1}
 * boxes of a few rows each (d <= 3), numbered with the last dimension
 * fastest and its rows stored box by box, so that the rows of any run of
 * boxes along the last dimension are one range and a prefix difference
 * counts them.  For a query q, each row of boxes (fixed slices in the
 * first d - 1 dimensions) has along the last dimension a run of boxes
 * wholly within eps of q, inside a run of boxes that can hold a row within
 * eps; the inner run counts by a difference, the boxes between the two
 * runs are tested row by row, the rest is skipped.  A query thus costs
 * about the rows of boxes plus the rows of the boxes its sphere's surface
 * crosses, not N.
 *
 * Exact: a box's extent in dimension k is the extent of its slice, the
 * least and greatest coordinate k of the cell's rows in that slice.  By
 * the shared rule no row inside such an extent computes a smaller squared
 * distance to q than the extents' nearest corner, nor a larger one than
 * their farthest (rounding is monotonic and symmetric: density_boxes.h),
 * and a corner's distance is summed in the same order as a row's.  So a
 * box whose farthest corner passes the rule holds only rows that pass it,
 * and one whose nearest corner fails holds none.  Slices are cut by a
 * monotonic formula, so their extents are ordered, and along the last
 * dimension the corner distances grow away from q: each run is found by a
 * galloping search from the previous row's answer.
 */
#ifndef GJ_LATTICE_H
#define GJ_LATTICE_H

#include "gj_core.h"

#ifdef __cplusplus
extern "C"
{
#endif

#define GJ_LATTICE_MAX_DIMS 3		/* beyond, rows of boxes outnumber rows */
#define GJ_LATTICE_MAX_SLICES 4096	/* per dimension */
#define GJ_LATTICE_STOP_ROWS 64		/* rows of boxes between reads of the stop word */

/* Cells with fewer rows get no lattice (a test lowers it to cut small cells). */
extern int64_t gj_lattice_min_rows;
/* Cells cut into lattices so far in this process (tests: were they used?). */
extern int64_t gj_lattice_cells_cut;

/*
 * The lattices of some cells (the cut cells, numbered 0..ncut-1).  The
 * arrays are host memory from gj_lattice_build, or device copies of them
 * with the same layout.
 */
typedef struct gj_lattice
{
	int			dims;
	int64_t		ncut;			/* 0: no lattice */
	int64_t		nrows;			/* rows of xs */
	int64_t		nslices;		/* entries of lo, hi */
	int64_t		nstart;			/* entries of start */
	int32_t    *m;				/* per cut cell: its slices in each dimension, dims wide */
	int64_t    *slice0;			/* per cut cell: its first slice in lo and hi, dimension by dimension */
	int64_t    *box0;			/* per cut cell: its first entry of start */
	int64_t    *start;			/* per box and one more per cell: its first row of xs */
	double	   *lo;				/* per slice: least coordinate of its rows (empty: a neighbour's bound) */
	double	   *hi;				/* per slice: greatest */
	double	   *xs;				/* the cut cells' rows, box by box, dims wide */
	int64_t    *src;			/* host only: per row of xs, its row of the caller's x */
} gj_lattice;

/*
 * Lattices for the cells whose rows are x[range[2k] .. range[2k+1]) (dims
 * wide), those of gj_lattice_min_rows rows or more with finite
 * coordinates; cut[k] gets cell k's lattice number, or -1.  L->ncut == 0
 * when none is cut (or dims > GJ_LATTICE_MAX_DIMS).
 */
extern gj_status gj_lattice_build(gj_lattice *L, const double *x, int dims,
								  const int64_t *range, int64_t ncells, int32_t *cut,
								  int nthreads);
extern void gj_lattice_free(gj_lattice *L);

/*
 * The cut cells' rows in their lattice's order, for the counts' workers:
 * queries taken box by box share their rows of boxes and runs, so a warp
 * (or a core's cache) works on one neighbourhood.  order (n rows) is
 * 0, 1, ... except that for each cut cell k of the build's list,
 * order[first[k] + t] = first[k] + (its t-th row of xs as an offset in its
 * range), first NULL meaning the range's start.
 */
extern void gj_lattice_order(const gj_lattice *L, const int64_t *range, const int32_t *cut,
							 int64_t ncells, const int64_t *first, uint32_t *order, int64_t n);

#ifdef __CUDACC__
#define GJ_LAT_HD static __host__ __device__ __forceinline__
#else
#define GJ_LAT_HD static inline
#endif

/* Slice j's squared term to q in its dimension: its nearest bound (far = 0) or farthest. */
GJ_LAT_HD double
gj_lat_term(const double *lo, const double *hi, int64_t j, double q, int far)
{
	double		c = far ? (q - lo[j] > hi[j] - q ? lo[j] : hi[j]) :
		(q < lo[j] ? lo[j] : q > hi[j] ? hi[j] : q);
	double		t = q - c;

	return t * t;
}

/*
 * How many of the n slices j0, j0 + dir, j0 + 2 dir, ... pass the rule
 * with base (the row's partial sum) added: they pass in a prefix, which
 * is found by galloping from hint (the previous row's answer).
 */
GJ_LAT_HD int64_t
gj_lat_run(const double *lo, const double *hi, int64_t j0, int dir, int64_t n, double q,
		   int far, double base, double eps2, int64_t hint)
{
#define GJ_LAT_PASS(i) (base + gj_lat_term(lo, hi, j0 + dir * (i), q, far) <= eps2)
	int64_t		a,
				b,
				step = 1;

	hint = hint < 0 ? 0 : hint > n ? n : hint;
	if (hint > 0 && !GJ_LAT_PASS(hint - 1))
	{
		/* the run ends before hint: gallop down from a failing slice b */
		b = hint - 1;
		for (;;)
		{
			int64_t		i = b - step;

			if (i < 0)
			{
				a = 0;
				break;
			}
			if (GJ_LAT_PASS(i))
			{
				a = i + 1;
				break;
			}
			b = i;
			step *= 2;
		}
	}
	else
	{
		/* slices before hint pass: gallop up */
		a = hint;
		for (;;)
		{
			int64_t		i = a + step - 1;

			if (i >= n)
			{
				b = n;
				break;
			}
			if (!GJ_LAT_PASS(i))
			{
				b = i;
				break;
			}
			a = i + 1;
			step *= 2;
		}
	}
	/* slices before a pass, b fails (or is n): the first failing one */
	while (a < b)
	{
		int64_t		mid = a + (b - a) / 2;

		if (GJ_LAT_PASS(mid))
			a = mid + 1;
		else
			b = mid;
	}
	return a;
#undef GJ_LAT_PASS
}

/* Rows [r0, r1) of xs within eps of q, by the shared rule. */
GJ_LAT_HD int64_t
gj_lat_rows(const double *xs, int dims, int64_t r0, int64_t r1, const double *q, double eps2)
{
	int64_t		n = 0;

	for (int64_t r = r0; r < r1; r++)
	{
		double		s = 0.0;

		for (int d = 0; d < dims; d++)
		{
			double		t = q[d] - xs[r * dims + d];

			s += t * t;
		}
		n += s <= eps2;
	}
	return n;
}

/*
 * Rows of cut cell k within eps of q (q itself included when it is one),
 * the same number as testing every row; -1 when *stop was raised.
 */
GJ_LAT_HD int64_t
gj_lattice_count(const gj_lattice *L, int64_t k, const double *q, double eps2,
				 const volatile int *stop)
{
	int			dims = L->dims,
				last = dims - 1;
	const int32_t *m = L->m + k * dims;
	const double *lo[GJ_LATTICE_MAX_DIMS],
			   *hi[GJ_LATTICE_MAX_DIMS];
	const int64_t *start = L->start + L->box0[k];
	int64_t		s0 = L->slice0[k],
				mL = m[last],
				m0 = dims > 1 ? m[0] : 1,
				m1 = dims > 2 ? m[1] : 1,
				jp = 0,
				nl,
				nr,
				hint[4] = {0, 0, 0, 0},
				n = 0,
				rows = 0;
	double		qL = q[last];

	for (int d = 0; d < dims; d++)
	{
		lo[d] = L->lo + s0;
		hi[d] = L->hi + s0;
		s0 += m[d];
	}
	/* jp: the first slice reaching q along the last dimension; before it, all below q */
	{
		int64_t		b = mL;

		while (jp < b)
		{
			int64_t		mid = jp + (b - jp) / 2;

			if (hi[last][mid] < qL)
				jp = mid + 1;
			else
				b = mid;
		}
	}
	nl = jp;
	nr = jp < mL ? mL - jp - 1 : 0;
	for (int64_t j0 = 0; j0 < m0; j0++)
	{
		double		n0 = dims > 1 ? gj_lat_term(lo[0], hi[0], j0, q[0], 0) : 0.0,
					f0 = dims > 1 ? gj_lat_term(lo[0], hi[0], j0, q[0], 1) : 0.0;

		if (n0 > eps2)
			continue;
		for (int64_t j1 = 0; j1 < m1; j1++)
		{
			double		pn = n0,
						pf = f0;
			int64_t		row = (j0 * m1 + j1) * mL,
						rl,
						il,
						rr,
						ir;

			if (dims > 2)
			{
				pn = pn + gj_lat_term(lo[1], hi[1], j1, q[1], 0);
				pf = pf + gj_lat_term(lo[1], hi[1], j1, q[1], 1);
				if (pn > eps2)
					continue;
			}
			if (stop != NULL && (++rows % GJ_LATTICE_STOP_ROWS) == 0 && *stop)
				return -1;
			/* below q: slices jp - 1, jp - 2, ... */
			rl = hint[0] = gj_lat_run(lo[last], hi[last], jp - 1, -1, nl, qL, 0, pn, eps2, hint[0]);
			il = hint[1] = gj_lat_run(lo[last], hi[last], jp - 1, -1, rl, qL, 1, pf, eps2, hint[1]);
			n += start[row + jp] - start[row + jp - il];
			n += gj_lat_rows(L->xs, dims, start[row + jp - rl], start[row + jp - il], q, eps2);
			if (jp == mL)
				continue;
			/* slice jp, which may hold q */
			if (pf + gj_lat_term(lo[last], hi[last], jp, qL, 1) <= eps2)
				n += start[row + jp + 1] - start[row + jp];
			else if (pn + gj_lat_term(lo[last], hi[last], jp, qL, 0) <= eps2)
				n += gj_lat_rows(L->xs, dims, start[row + jp], start[row + jp + 1], q, eps2);
			/* above q: slices jp + 1, jp + 2, ... */
			rr = hint[2] = gj_lat_run(lo[last], hi[last], jp + 1, 1, nr, qL, 0, pn, eps2, hint[2]);
			ir = hint[3] = gj_lat_run(lo[last], hi[last], jp + 1, 1, rr, qL, 1, pf, eps2, hint[3]);
			n += start[row + jp + 1 + ir] - start[row + jp + 1];
			n += gj_lat_rows(L->xs, dims, start[row + jp + 1 + ir], start[row + jp + 1 + rr], q, eps2);
		}
	}
	return n;
}

#ifdef __cplusplus
}
#endif

#endif							/* GJ_LATTICE_H */
