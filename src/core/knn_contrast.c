/*
 * knn_contrast.c
 *		auto's choice between the blocks' index and plain brute force for
 *		kNN in many dimensions, from a sample of the references.
 *
 * The blocks' bounds skip a block of references only when it lies farther
 * from a query block than each of its queries' k-th neighbour.  That
 * happens where neighbours are much nearer than most rows (clusters), and
 * not where every distance is about the same (uniform or random data in
 * many dimensions: the concentration of distances).  The sampled contrast
 * says which: for each of up to GJ_CONTRAST_SAMPLE rows drawn evenly, the
 * distance to its nearest other sampled row over the median distance to
 * them, and the median of that over the sample (512 rows, fewer in many
 * dimensions: 255 at 768, about 10 ms on the H100 host's cores).
 * Measured there (regress/gpu/gpu_knn benchhd, self kNN, k = 10):
 *   20 Gaussian clusters, 1M x 128: 0.061, blocks 4.4x faster
 *   the same, 100K x 768 cosine:     0.066, blocks 1.0-1.1x
 *   uniform 500K x 8:                0.369, blocks 12% slower
 *   exponential 1M x 16:             0.502, blocks 14% slower
 *   uniform 200K x 64 / 100K x 768:  0.79 / 0.94, blocks 27-46% slower
 * (where blocks lose, their bounds skip almost nothing and the sort is
 * the difference), so blocks only at 0.3 or below.
 */
#include <math.h>
#include <stdlib.h>

#include "core_internal.h"

#define GJ_CONTRAST_SAMPLE 512		/* rows sampled, at most ... */
#define GJ_CONTRAST_WORK 5e7		/* ... and at most this many pairs x dimensions */
#define GJ_CONTRAST_BLOCKS_MAX 0.3	/* blocks at most at this contrast */

typedef struct contrast_arg
{
	const gj_points *p;
	int64_t		m;				/* sampled rows */
	int64_t		step;			/* between them */
	double	   *ratio;			/* m: each row's nearest / median */
	double	   *scratch;		/* m per slice */
	int64_t		r0;				/* the slice's first row (its scratch) */
} contrast_arg;

static void
contrast_rows(void *arg, int64_t r0, int64_t r1)
{
	contrast_arg *c = arg;
	int			dims = c->p->dims;

	for (int64_t i = r0; i < r1; i++)
	{
		const double *a = c->p->x + i * c->step * dims;
		double	   *d2 = c->scratch;
		int64_t		nd = 0;
		double		nearest = INFINITY;

		for (int64_t j = 0; j < c->m; j++)
		{
			const double *b = c->p->x + j * c->step * dims;
			double		s = 0.0;

			if (j == i)
				continue;
			for (int k = 0; k < dims; k++)
			{
				double		t = a[k] - b[k];

				s += t * t;
			}
			d2[nd++] = s;
			nearest = s < nearest ? s : nearest;
		}
		qsort(d2, nd, sizeof(double), gj_cmp_double);
		c->ratio[i] = d2[nd / 2] > 0.0 ? sqrt(nearest / d2[nd / 2]) : 0.0;
	}
}

/*
 * The sampled contrast of p's rows (0: neighbours far nearer than most
 * rows, 1: every distance alike); -1 when there are too few rows or no
 * memory.
 */
double
gj_knn_contrast(const gj_points *p)
{
	contrast_arg args[GJ_MAX_SLICES];
	int64_t		m = (int64_t) sqrt(GJ_CONTRAST_WORK / (p->dims > 0 ? p->dims : 1));
	int			nt;
	double	   *ratio,
			   *scratch,
				out = -1.0;

	m = m < GJ_CONTRAST_SAMPLE ? m : GJ_CONTRAST_SAMPLE;
	m = m < p->n ? m : p->n;
	if (m < 16)
		return -1.0;
	nt = gj_slices_for(m, 32);
	ratio = malloc(sizeof(double) * m);
	scratch = malloc(sizeof(double) * m * nt);
	if (ratio != NULL && scratch != NULL)
	{
		for (int t = 0; t < nt; t++)
		{
			args[t].p = p;
			args[t].m = m;
			args[t].step = p->n / m;
			args[t].ratio = ratio;
			args[t].scratch = scratch + (size_t) t * m;
		}
		if (gj_run_rows(contrast_rows, args, sizeof(contrast_arg), m, nt) == GJ_OK)
		{
			qsort(ratio, m, sizeof(double), gj_cmp_double);
			out = ratio[m / 2];
		}
	}
	free(ratio);
	free(scratch);
	return out;
}

/*
 * auto's method for kNN over refs: the grid in few dimensions; above, the
 * blocks' index where the sampled contrast is low (clusters), else brute
 * force.  Other settings are kept.  *contrast: the sampled value, or -1
 * when none was taken.
 */
gj_knn_method
gj_knn_auto_method(const gj_knn_options *opt, const gj_points *refs, double *contrast)
{
	double		c;

	*contrast = -1.0;
	if (opt->method != GJ_KNN_AUTO || refs->dims <= GJ_KNN_GRID_MAX_DIMS)
		return gj_knn_pick_method(opt, refs->dims);
	c = gj_knn_contrast(refs);
	*contrast = c;
	return c >= 0.0 && c <= GJ_CONTRAST_BLOCKS_MAX ? GJ_KNN_BLOCKS : GJ_KNN_BRUTE;
}
