/*
 * normalize.c
 *		The cosine metric's one normalisation, applied to rows once as they
 *		are read, so that every engine then joins unit vectors by the shared
 *		Euclidean rule.
 *
 * For unit vectors a and b, 1 - cos(a, b) = |a - b|^2 / 2, so the cosine
 * distance of two rows is half the squared distance of their normalised
 * vectors and a pair is within eps exactly when that squared distance, by
 * the float64 rule, is <= 2 * eps (2 * eps is exact in float64).  The rule
 * for a row x, in float64, every operation rounded on its own:
 *   m = max |x_d|;  y_d = x_d / m;  r = sqrt(sum over d in order of y_d^2);
 *   the row becomes y_d / r.
 * Dividing by m first keeps the sum of squares from overflowing or
 * underflowing whatever the row's scale.  A row whose coordinates are all
 * zero has no direction: it is dropped and counted (the reader reports it
 * with the rows skipped for NULLs).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

/* Normalise one row in place; 0 for a zero row (left as it is). */
int
gj_normalize_row(double *x, int dims)
{
	double		m = 0.0,
				s = 0.0,
				r;

	for (int d = 0; d < dims; d++)
		m = fabs(x[d]) > m ? fabs(x[d]) : m;
	if (m == 0.0)
		return 0;
	for (int d = 0; d < dims; d++)
	{
		double		y = x[d] / m;

		x[d] = y;
		s += y * y;
	}
	r = sqrt(s);
	for (int d = 0; d < dims; d++)
		x[d] = x[d] / r;
	return 1;
}

typedef struct normalize_arg
{
	gj_points  *p;
	uint8_t    *zero;
	int64_t		nzero;			/* in this slice */
} normalize_arg;

static void
normalize_rows(void *arg, int64_t r0, int64_t r1)
{
	normalize_arg *a = arg;
	int			dims = a->p->dims;

	for (int64_t i = r0; i < r1; i++)
		if (!gj_normalize_row(a->p->x + i * dims, dims))
		{
			a->zero[i] = 1;
			a->nzero++;
		}
}

#define GJ_NORMALIZE_MIN_ROWS 16384	/* rows a thread is worth starting for */

/*
 * Normalise every row of p (on threads for many rows) and drop the zero
 * rows, keeping the others in order; *nzero says how many were dropped.
 */
gj_status
gj_points_normalize(gj_points *p, int64_t *nzero)
{
	normalize_arg args[GJ_MAX_SLICES];
	int			nt = gj_slices_for(p->n, GJ_NORMALIZE_MIN_ROWS);
	uint8_t    *zero = calloc((size_t) p->n + 1, 1);
	gj_status	st;
	int64_t		dropped = 0,
				out = 0;

	*nzero = 0;
	if (zero == NULL)
		return GJ_ERR_NOMEM;
	for (int t = 0; t < nt; t++)
	{
		args[t].p = p;
		args[t].zero = zero;
		args[t].nzero = 0;
	}
	st = gj_run_rows(normalize_rows, args, sizeof(normalize_arg), p->n, nt);
	for (int t = 0; t < nt; t++)
		dropped += args[t].nzero;
	if (st == GJ_OK && dropped > 0)
	{
		for (int64_t i = 0; i < p->n; i++)
		{
			if (zero[i])
				continue;
			if (out != i)
			{
				memmove(p->x + out * p->dims, p->x + i * p->dims, sizeof(double) * p->dims);
				p->ids[out] = p->ids[i];
			}
			out++;
		}
		p->n = out;
		*nzero = dropped;
	}
	free(zero);
	return st;
}
