/*
 * slabs.c
 *		An eps join too large for the device, cut into slabs along one
 *		dimension: the plan of steps each engine run can hold.
 *
 * The rows are sorted along the dimension of largest variance and cut into
 * slabs of consecutive rows.  Any pair within eps differs by at most w in
 * that dimension, w the widest per-dimension difference that can pass the
 * float64 test (the grid's own cell width rule), so:
 *	- a self-join is, per slab, the slab with itself, and the slab with its
 *	  halo: the later rows up to w beyond the slab's largest coordinate.
 *	  A pair in one slab is found by the first step, a pair across slabs
 *	  only from the lower slab's halo step: each pair exactly once;
 *	- a join of two sets slabs the indexed set; per slab, the other set's
 *	  rows within w of the slab's range (sorted the same way, so a run of
 *	  consecutive rows) probe it.  Every indexed row is in one slab: each
 *	  pair once.
 * A step whose rows exceed max_rows is cut again along its probing rows
 * (halo or queries), which only splits the probes; a slab alone larger
 * than max_rows means more slabs.  Steps are in the sorted rows' order, so
 * consecutive steps share their slab (the caller may keep it loaded).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

#define GJ_SLAB_WIDTH_MARGIN (1.0 + 1.0 / 1048576.0)	/* grid.c's */
#define GJ_DBL_TRUE_MIN_ 4.9406564584124654e-324

/*
 * A sort key of x preserving its order, less its lowest bit (the radix
 * sort takes 63 bits): two adjacent doubles may keep their input order.
 * That only matters at a coordinate exactly w beyond a slab, where no pair
 * can pass (w has a margin), and the slabs' ranges are scanned, not read
 * off their ends.
 */
static inline int64_t
order_key(double x)
{
	uint64_t	b;

	memcpy(&b, &x, sizeof(b));
	b = (b >> 63) ? ~b : b | 0x8000000000000000ull;
	return (int64_t) (b >> 1);
}

/* perm: p's rows in the order of coordinate dim (stable), on the host. */
static gj_status
order_on_host(const gj_points *p, int dim, uint32_t *perm)
{
	int64_t    *keys = malloc(sizeof(int64_t) * (p->n + 1));
	gj_status	st = GJ_ERR_NOMEM;

	if (keys != NULL)
	{
		for (int64_t i = 0; i < p->n; i++)
		{
			keys[i] = order_key(p->x[i * p->dims + dim]);
			perm[i] = (uint32_t) i;
		}
		st = gj_sort_by_key(keys, perm, p->n, INT64_MAX);
	}
	free(keys);
	return st;
}

/*
 * Sort p's rows by coordinate dim: the order from order(arg) (a device's
 * sort), or from the host's when there is none or it fails.
 */
static gj_status
sort_along(gj_points *p, int dim, gj_order_fn order, void *arg)
{
	uint32_t   *perm = malloc(sizeof(uint32_t) * (p->n + 1));
	gj_status	st = GJ_ERR_NOMEM;

	if (perm != NULL)
	{
		st = order != NULL ? order(arg, p, dim, perm) : GJ_ERR_NODEVICE;
		if (st != GJ_OK && st != GJ_ERR_CANCELED)
			st = order_on_host(p, dim, perm);
		if (st == GJ_OK)
			st = gj_points_apply_order(p, perm);
	}
	free(perm);
	return st;
}

/* First row of sorted p (along dim) at or after from whose coordinate is > v (or >= v). */
static int64_t
bound(const gj_points *p, int dim, int64_t from, double v, int strict)
{
	int64_t		lo = from,
				hi = p->n;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;
		double		x = p->x[mid * p->dims + dim];

		if (strict ? x <= v : x < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The widest difference along one dimension that can pass the float64 test. */
static double
slab_width(double eps2)
{
	return sqrt(eps2 + 2.0 * GJ_DBL_TRUE_MIN_) * GJ_SLAB_WIDTH_MARGIN;
}

static int
push_step(gj_slab_plan *pl, int self, int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	if (pl->nsteps == pl->cap)
	{
		int			cap = pl->cap ? 2 * pl->cap : 64;
		gj_slab_step *s = realloc(pl->steps, sizeof(gj_slab_step) * cap);

		if (s == NULL)
			return 0;
		pl->steps = s;
		pl->cap = cap;
	}
	pl->steps[pl->nsteps++] = (gj_slab_step) {self, a0, a1, b0, b1};
	return 1;
}

/* Probing rows [b0, b1) against slab [a0, a1), cut so each step holds max_rows. */
static int
push_probes(gj_slab_plan *pl, int64_t a0, int64_t a1, int64_t b0, int64_t b1,
			int64_t max_rows)
{
	int64_t		room = max_rows - (a1 - a0);

	for (int64_t c = b0; c < b1; c += room)
		if (!push_step(pl, 0, a0, a1, c, c + room < b1 ? c + room : b1))
			return 0;
	return 1;
}

gj_status
gj_slabs_plan(gj_points *p, gj_points *qs, double eps2, int64_t max_rows,
			  gj_slab_plan *pl)
{
	return gj_slabs_plan_ordered(p, qs, eps2, max_rows, NULL, NULL, pl);
}

/* The dimension of p's largest variance into *dim. */
static gj_status
widest_dim(const gj_points *p, int *dim)
{
	gj_dim_stats *st = malloc(sizeof(gj_dim_stats) * p->dims);
	double		best = -1.0;
	gj_status	s;

	*dim = 0;
	if (st == NULL)
		return GJ_ERR_NOMEM;
	s = gj_points_stats(p, st);
	for (int d = 0; s == GJ_OK && d < p->dims; d++)
	{
		double		mean = st[d].sum / (double) p->n,
					var = st[d].sumsq / (double) p->n - mean * mean;

		if (isfinite(var) && var > best)
		{
			best = var;
			*dim = d;
		}
	}
	free(st);
	return s;
}

gj_status
gj_slabs_plan_ordered(gj_points *p, gj_points *qs, double eps2, int64_t max_rows,
					  gj_order_fn order, void *arg, gj_slab_plan *pl)
{
	int			dim = 0;
	gj_status	s;

	memset(pl, 0, sizeof(*pl));
	if (p->n == 0 || max_rows < 2 || (qs != NULL && qs->dims != p->dims))
		return GJ_ERR_ARG;
	if (!isfinite(slab_width(eps2)))
		return GJ_ERR_DEVICE_OOM;	/* every pair passes: no slab is smaller than all */
	s = widest_dim(p, &dim);
	if (s == GJ_OK)
		s = sort_along(p, dim, order, arg);
	if (s == GJ_OK && qs != NULL && qs != p)
		s = sort_along(qs, dim, order, arg);
	if (s != GJ_OK)
		return s;
	return gj_slabs_cut(p, qs, dim, eps2, max_rows, pl);
}

/*
 * Whether slab [a0, a1) of sorted p and the rows of qs within w of it fit
 * in max_rows, judged from the slab's end rows widened by an ulp (the sort
 * keys drop one bit): a bound on the probes the slab will really get.
 */
static int
probes_fit(const gj_points *p, const gj_points *qs, int dim, double w, int64_t a0,
		   int64_t a1, int64_t max_rows)
{
	double		lo = nextafter(p->x[a0 * p->dims + dim], -INFINITY) - w,
				hi = nextafter(p->x[(a1 - 1) * p->dims + dim], INFINITY) + w;
	int64_t		b0 = bound(qs, dim, 0, lo, 0),
				b1 = bound(qs, dim, b0, hi, 1);

	return (a1 - a0) + (b1 - b0) <= max_rows;
}

gj_status
gj_slabs_cut(const gj_points *p, const gj_points *qs, int dim, double eps2,
			 int64_t max_rows, gj_slab_plan *pl)
{
	double		w = slab_width(eps2);

	memset(pl, 0, sizeof(*pl));
	pl->dim = dim;
	if (p->n == 0 || max_rows < 2 || dim < 0 || dim >= p->dims ||
		(qs != NULL && qs->dims != p->dims))
		return GJ_ERR_ARG;
	if (!isfinite(w))
		return GJ_ERR_DEVICE_OOM;

	/* slabs of half the room: the rest for halos or queries */
	for (int64_t per = max_rows / 2 > 0 ? max_rows / 2 : 1, a0 = 0, a1; a0 < p->n; a0 = a1)
	{
		double		lo = INFINITY,
					hi = -INFINITY;

		a1 = a0 + per < p->n ? a0 + per : p->n;
		if (qs != NULL && !probes_fit(p, qs, dim, w, a0, a1, max_rows) &&
			probes_fit(p, qs, dim, w, a0, a0 + 1, max_rows))
		{
			/*
			 * a slab as large as its probes leave room for: one step, not
			 * a full one and a sliver of the halo (each step's start costs)
			 */
			int64_t		ok = a0 + 1,
						bad = a1;

			while (bad - ok > 1)
			{
				int64_t		mid = ok + (bad - ok) / 2;

				if (probes_fit(p, qs, dim, w, a0, mid, max_rows))
					ok = mid;
				else
					bad = mid;
			}
			a1 = ok;
		}

		/* the slab's range (scanned: the sort keys drop one bit) */
		for (int64_t i = a0; i < a1; i++)
		{
			double		x = p->x[i * p->dims + dim];

			lo = x < lo ? x : lo;
			hi = x > hi ? x : hi;
		}

		pl->nslabs++;
		if (qs == NULL)
		{
			int64_t		h1 = bound(p, dim, a1, hi + w, 1);

			if (!push_step(pl, 1, a0, a1, 0, 0) ||
				(h1 > a1 && !push_probes(pl, a0, a1, a1, h1, max_rows)))
				return GJ_ERR_NOMEM;
		}
		else
		{
			int64_t		b0 = bound(qs, dim, 0, lo - w, 0),
						b1 = bound(qs, dim, b0, hi + w, 1);

			if (b1 > b0 && !push_probes(pl, a0, a1, b0, b1, max_rows))
				return GJ_ERR_NOMEM;
		}
	}
	return GJ_OK;
}

/* The window of own rows [o0, o1) of sorted p: every row within w of their range. */
static void
window_of(const gj_points *p, int dim, double w, int64_t o0, int64_t o1, gj_slab_window *win)
{
	double		lo = INFINITY,
				hi = -INFINITY;

	/* the range scanned, widened by an ulp: the sort keys drop one bit */
	for (int64_t i = o0; i < o1; i++)
	{
		double		x = p->x[i * p->dims + dim];

		lo = x < lo ? x : lo;
		hi = x > hi ? x : hi;
	}
	win->o0 = o0;
	win->o1 = o1;
	win->w0 = bound(p, dim, 0, nextafter(lo, -INFINITY) - w, 0);
	win->w1 = bound(p, dim, win->w0, nextafter(hi, INFINITY) + w, 1);
	if (win->w0 > o0)
		win->w0 = o0;
	if (win->w1 < o1)
		win->w1 = o1;
}

gj_status
gj_slabs_windows(gj_points *p, double eps2, int64_t max_rows, gj_order_fn order, void *arg,
				 gj_slab_window **out, int64_t *nwin)
{
	double		w = slab_width(eps2);
	int64_t		cap = 16,
				nw = 0;
	gj_slab_window *win;
	int			dim = 0;
	gj_status	s;

	*out = NULL;
	*nwin = 0;
	if (p->n == 0 || max_rows < 2)
		return GJ_ERR_ARG;
	if (!isfinite(w))
		return GJ_ERR_DEVICE_OOM;
	s = widest_dim(p, &dim);
	if (s == GJ_OK)
		s = sort_along(p, dim, order, arg);
	if (s != GJ_OK)
		return s;
	win = malloc(sizeof(gj_slab_window) * cap);
	if (win == NULL)
		return GJ_ERR_NOMEM;
	for (int64_t o0 = 0, per = max_rows / 2; o0 < p->n;)
	{
		gj_slab_window cur;
		int64_t		o1 = o0 + per < p->n ? o0 + per : p->n;

		window_of(p, dim, w, o0, o1, &cur);
		if (cur.w1 - cur.w0 > max_rows)
		{
			/* as many own rows as their window leaves room for */
			int64_t		ok = o0,
						bad = o1;

			while (bad - ok > 1)
			{
				int64_t		mid = ok + (bad - ok) / 2;

				window_of(p, dim, w, o0, mid, &cur);
				if (cur.w1 - cur.w0 <= max_rows)
					ok = mid;
				else
					bad = mid;
			}
			if (ok == o0)
			{
				free(win);
				return GJ_ERR_DEVICE_OOM;	/* one row's window is too large */
			}
			window_of(p, dim, w, o0, ok, &cur);
		}
		if (nw == cap)
		{
			gj_slab_window *nwn = realloc(win, sizeof(gj_slab_window) * cap * 2);

			if (nwn == NULL)
			{
				free(win);
				return GJ_ERR_NOMEM;
			}
			win = nwn;
			cap *= 2;
		}
		win[nw++] = cur;
		o0 = cur.o1;
	}
	*out = win;
	*nwin = nw;
	return GJ_OK;
}

void
gj_slabs_free(gj_slab_plan *pl)
{
	free(pl->steps);
	memset(pl, 0, sizeof(*pl));
}

/* A view of rows [r0, r1) of p: no copy, nothing to free. */
void
gj_points_view(gj_points *v, const gj_points *p, int64_t r0, int64_t r1)
{
	memset(v, 0, sizeof(*v));
	v->dims = p->dims;
	v->n = r1 - r0;
	v->cap = v->n;
	v->x = p->x + r0 * p->dims;
	v->ids = p->ids + r0;
}
