/*
 * block_index.c
 *		The index of the tile engines in many dimensions: rows sorted so that
 *		blocks of consecutive rows are small, and each block's bounds
 *		(block_bounds.h says why and proves the skipping exact).
 *
 * Order.  The m <= 16 dimensions of largest variance (REORDER, from a
 * strided sample) are cut at 2^b quantiles of the sample each, and rows
 * sorted by the Z-order (bit-interleaved) key of their quantile levels.  A
 * Z-order prefix is a box halved in every indexed dimension in turn, like
 * a k-d tree with median cuts, so a block of 128 consecutive rows is a
 * small box in those dimensions wherever the data is dense or sparse
 * (quantiles, not equal widths: 2M exponential points in 16-D put most
 * rows near the origin).  The plan (dimensions and cuts) comes from the
 * sample on the host; the keys (block_key.h) and their stable sort run on
 * the host's cores, or for the GPU kNN self join on the device
 * (kernels/order.cu), which finds the same order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "block_bounds.h"
#include "block_key.h"

#define ORDER_SAMPLE 16384			/* rows the quantiles come from, at most */
#define ORDER_MIN_ROWS 65536		/* rows a thread is worth starting for */

typedef struct key_arg
{
	const gj_points *p;
	const gj_block_plan *plan;
	int64_t    *keys;
	uint32_t   *perm;
} key_arg;

static void
key_rows(void *arg, int64_t r0, int64_t r1)
{
	key_arg    *k = arg;
	const gj_block_plan *o = k->plan;
	int			dims = k->p->dims;

	for (int64_t i = r0; i < r1; i++)
	{
		k->keys[i] = gj_block_key(k->p->x + i * dims, o->m, o->bits, o->dim, o->cut);
		k->perm[i] = (uint32_t) i;
	}
}

/* Sort the sample's columns r0 .. r1 - 1 (s values each, at col). */
typedef struct sort_cols_arg
{
	double	   *col;
	int64_t		s;
} sort_cols_arg;

static void
sort_cols(void *arg, int64_t r0, int64_t r1)
{
	sort_cols_arg *a = arg;

	for (int64_t j = r0; j < r1; j++)
		qsort(a->col + (size_t) j * a->s, a->s, sizeof(double), gj_cmp_double);
}

/*
 * A strided sample of the rows: the key's candidate dimensions (up to
 * GJ_BLOCK_KEY_DIMS, largest sample variance first, REORDER) and their
 * sampled columns, sorted, from which every plan's cuts are read.
 */
typedef struct order_sample
{
	int64_t		s,
				step;			/* sampled rows: i * step, i < s */
	int			m_max;
	int			dim[GJ_BLOCK_KEY_DIMS];
	double	   *col;			/* m_max sorted columns of s values */
} order_sample;

static gj_status
sample_columns(const gj_points *p, order_sample *os)
{
	int			dims = p->dims;
	int64_t		s = os->s,
				step = os->step;
	double	   *var = calloc(dims, sizeof(double)),
			   *sum = calloc(dims, sizeof(double));

	os->col = malloc(sizeof(double) * s * GJ_BLOCK_KEY_DIMS);
	if (var == NULL || sum == NULL || os->col == NULL)
	{
		free(var);
		free(sum);
		return GJ_ERR_NOMEM;
	}

	/*
	 * Row by row, each sampled row read once in order: column by column
	 * took 0.2 s at 768 dimensions (a cache miss per row and line).
	 */
	for (int64_t i = 0; i < s; i++)
	{
		const double *v = p->x + (i * step) * dims;

		for (int k = 0; k < dims; k++)
		{
			sum[k] += v[k];
			var[k] += v[k] * v[k];
		}
	}
	for (int k = 0; k < dims; k++)
	{
		var[k] = var[k] / s - (sum[k] / s) * (sum[k] / s);
		if (!(var[k] >= 0.0))
			var[k] = 0.0;		/* NaN or rounding below zero */
	}
	free(sum);
	os->m_max = dims < GJ_BLOCK_KEY_DIMS ? dims : GJ_BLOCK_KEY_DIMS;
	for (int j = 0; j < os->m_max; j++)
	{
		int			best = -1;

		for (int k = 0; k < dims; k++)
		{
			int			used = 0;

			for (int t = 0; t < j; t++)
				used |= os->dim[t] == k;
			if (!used && (best < 0 || var[k] > var[best]))
				best = k;
		}
		os->dim[j] = best;
	}
	free(var);
	/* the key's columns of the sample in one pass over its rows */
	for (int64_t i = 0; i < s; i++)
		for (int j = 0; j < os->m_max; j++)
			os->col[(size_t) j * s + i] = p->x[(i * step) * dims + os->dim[j]];
	{
		/* a column a core: 16 sorts of 16,384 took 20-25 ms on one */
		sort_cols_arg sa = {os->col, s};
		int			nt = gj_cpu_count();

		return gj_run_rows(sort_cols, &sa, 0, os->m_max, nt < os->m_max ? nt : os->m_max);
	}
}

/*
 * Levels a key dimension needs for n rows: the bits a block of
 * GJ_BLOCK_ROWS rows fixes in it (depth / m, rounded up), and two more, so
 * that a block that straddles two cells at that depth still gathers rows
 * of few sub-cells.  More only cost time: 2M rows keyed on 4 dimensions
 * at 15 bits (the old 62 / m) spent 0.8 s of 2 cores on the keys and 8
 * radix passes; the sample's 16,384 rows resolve 14 bits at most anyway.
 */
static int
plan_bits(int m, int64_t n)
{
	int			depth = 0,
				need;

	while (((int64_t) GJ_BLOCK_ROWS << depth) < n && depth < 62)
		depth++;
	need = (depth + m - 1) / m + 2;
	need = need < 62 / m ? need : 62 / m;
	return need < 16 ? need : 16;
}

/* The plan keyed on the first m of the sample's dimensions: levels at their quantiles. */
static gj_status
plan_for(const order_sample *os, int m, int64_t n, gj_block_plan *o)
{
	int			ncut;

	memset(o, 0, sizeof(*o));
	o->m = m;
	memcpy(o->dim, os->dim, sizeof(int) * m);
	o->bits = plan_bits(m, n);
	ncut = (1 << o->bits) - 1;
	o->cut = malloc(sizeof(double) * ncut * m);
	if (o->cut == NULL)
		return GJ_ERR_NOMEM;
	for (int j = 0; j < m; j++)
	{
		const double *c = os->col + (size_t) j * os->s;

		for (int t = 1; t <= ncut; t++)
			o->cut[(size_t) j * ncut + t - 1] = c[(int64_t) t * os->s / (ncut + 1)];
	}
	return GJ_OK;
}

/*
 * The sampled cost model of a plan for an eps join: the share of block
 * pairs the bounds keep (each kept pair costs as brute force does; a
 * skipped one nothing).  A block of GJ_BLOCK_ROWS consecutive rows in key
 * order is about a cell of the key's first L = log2(n / GJ_BLOCK_ROWS) bits:
 * in key dimension j it spans the quantile levels that the t_j of its bits
 * among them fix (L / m, one more for the first L mod m dimensions), its
 * box between those levels' cuts (the sample's least and greatest value at
 * the ends).  Two sampled rows' cells are ruled out when their boxes lie
 * farther apart than the bounds' threshold s0 over the key's dimensions;
 * the other dimensions' bounds can only rule out more, so the estimate errs
 * toward keeping.  Few key dimensions cut each one finely, many cut each
 * coarsely: measured on 200K exponential rows in 16-D at eps 0.03 with the
 * CPU engine, 16 key dimensions skipped no block pair, 3-4 skipped 56-59%
 * and took the join from 33.6 to 15 s.
 */
#define MODEL_ROWS 512			/* sampled rows whose pairs score a plan */

static double
model_kept(const order_sample *os, const gj_block_plan *o, int64_t n, double s02,
		   const gj_points *p)
{
	int			m = o->m,
				ncut = (1 << o->bits) - 1,
				depth = 0,
				shift[GJ_BLOCK_KEY_DIMS];
	int64_t		t = os->s < MODEL_ROWS ? os->s : MODEL_ROWS,
				stride = os->s / t,
				kept = 0;
	double	   *lo = malloc(sizeof(double) * t * m),
			   *hi = malloc(sizeof(double) * t * m);

	if (lo == NULL || hi == NULL || t < 2)
	{
		free(lo);
		free(hi);
		return 1.0;
	}
	while (((int64_t) GJ_BLOCK_ROWS << depth) < n && depth < m * o->bits)
		depth++;
	for (int j = 0; j < m; j++)
	{
		int			tj = depth / m + (j < depth % m);

		shift[j] = o->bits - (tj < o->bits ? tj : o->bits);
	}
	for (int64_t i = 0; i < t; i++)
	{
		const double *v = p->x + (i * stride * os->step) * p->dims;

		for (int j = 0; j < m; j++)
		{
			const double *cut = o->cut + (size_t) j * ncut,
					   *col = os->col + (size_t) j * os->s;
			int64_t		lev = gj_block_level(cut, ncut, v[o->dim[j]]),
						first = lev >> shift[j] << shift[j],
						last = first + ((int64_t) 1 << shift[j]) - 1;

			lo[i * m + j] = first == 0 ? col[0] : cut[first - 1];
			hi[i * m + j] = last >= ncut ? col[os->s - 1] : cut[last];
		}
	}
	for (int64_t a = 0; a < t; a++)
		for (int64_t b = a + 1; b < t; b++)
		{
			double		g2 = 0.0;

			for (int j = 0; j < m && g2 <= s02; j++)
			{
				double		g = lo[b * m + j] - hi[a * m + j],
							h = lo[a * m + j] - hi[b * m + j];

				g = g > h ? g : h;
				g2 += g > 0.0 ? g * g : 0.0;
			}
			kept += !(g2 > s02);	/* NaN keeps */
		}
	free(lo);
	free(hi);
	return (double) kept / ((double) t * (t - 1) / 2);
}

/* One candidate plan and its score, for the plans' threads. */
typedef struct model_arg
{
	const order_sample *os;
	const gj_points *p;
	double		s02;
	gj_block_plan plan;
	double		kept;			/* out */
} model_arg;

static void
model_plans(void *arg, int64_t r0, int64_t r1)
{
	model_arg  *a = arg;

	for (int64_t c = r0; c < r1; c++)
		a[c].kept = model_kept(a[c].os, &a[c].plan, a[c].p->n, a[c].s02, a[c].p);
}

/*
 * The plan for p's rows; eps2 >= 0: an eps join's, the number of key
 * dimensions the one the model keeps fewest block pairs with (ties: more
 * dimensions), *kept that share; else every candidate dimension, as for
 * kNN, whose threshold is not known before the join (*kept 1).
 */
static gj_status
plan_order(const gj_points *p, gj_block_plan *o, int64_t s, int64_t step, double eps2,
		   double *kept)
{
	static const int tries[] = {16, 12, 8, 6, 5, 4, 3, 2, 1};
	model_arg	cand[1 + sizeof(tries) / sizeof(tries[0])];
	int			nc = 0,
				best = 0;
	order_sample os;
	gj_status	st;
	double		s0;

	memset(&os, 0, sizeof(os));
	memset(cand, 0, sizeof(cand));
	os.s = s;
	os.step = step;
	*kept = 1.0;
	st = sample_columns(p, &os);
	if (st == GJ_OK)
		st = plan_for(&os, os.m_max, p->n, o);
	s0 = eps2 >= 0.0 ? gj_rule_s0(eps2, p->dims) : INFINITY;
	if (st == GJ_OK && isfinite(s0))
	{
		/* every dimension first, then fewer: ties go to the earlier */
		cand[nc++].plan = *o;
		memset(o, 0, sizeof(*o));
		for (size_t k = 0; st == GJ_OK && k < sizeof(tries) / sizeof(tries[0]); k++)
			if (tries[k] < cand[0].plan.m)
				st = plan_for(&os, tries[k], p->n, &cand[nc++].plan);
		for (int c = 0; c < nc; c++)
		{
			cand[c].os = &os;
			cand[c].p = p;
			cand[c].s02 = s0 * s0;
		}
		/* the plans' scores on threads: 9 of them took 25 ms on one */
		if (st == GJ_OK)
			st = gj_run_rows(model_plans, cand, 0, nc, nc < gj_cpu_count() ? nc : gj_cpu_count());
		for (int c = 1; st == GJ_OK && c < nc; c++)
			if (cand[c].kept < cand[best].kept)
				best = c;
		if (st == GJ_OK)
		{
			*o = cand[best].plan;
			*kept = cand[best].kept;
			cand[best].plan.cut = NULL;
		}
		for (int c = 0; c < nc; c++)
			gj_block_plan_free(&cand[c].plan);
	}
	free(os.col);
	if (st != GJ_OK)
		gj_block_plan_free(o);
	return st;
}

/*
 * The block order's plan for p's rows (block_key.h): m = 0 when they keep
 * the order they have (too few rows, or no memory: the index is then
 * looser, never wrong).  eps2 >= 0: for an eps join at eps2, the number of
 * key dimensions by the sampled model (plan_order), *kept the share of
 * block pairs it expects the bounds to keep; eps2 < 0: all of them.
 */
gj_status
gj_block_plan_make_for(const gj_points *p, double eps2, gj_block_plan *plan, double *kept)
{
	int64_t		s,
				step;
	gj_status	st;

	memset(plan, 0, sizeof(*plan));
	*kept = 1.0;
	if (p->n < 2 * GJ_BLOCK_ROWS || p->dims < 1)
		return GJ_OK;
	if (p->n > GJ_MAX_ROWS)
		return GJ_ERR_LIMIT;
	s = p->n < ORDER_SAMPLE ? p->n : ORDER_SAMPLE;
	step = p->n / s;
	st = plan_order(p, plan, s, step, eps2, kept);
	if (st != GJ_OK)
		gj_block_plan_free(plan);
	return st == GJ_ERR_NOMEM ? GJ_OK : st;
}

gj_status
gj_block_plan_make(const gj_points *p, gj_block_plan *plan)
{
	double		kept;

	return gj_block_plan_make_for(p, -1.0, plan, &kept);
}

void
gj_block_plan_free(gj_block_plan *plan)
{
	free(plan->cut);
	memset(plan, 0, sizeof(*plan));
}

/*
 * The rows of p in plan's order: *perm (malloc'd, n entries), or NULL when
 * they keep their order (m = 0, or no memory for the keys).
 */
gj_status
gj_block_plan_perm(const gj_points *p, const gj_block_plan *plan, uint32_t **perm)
{
	key_arg		k = {p, plan, NULL, NULL};
	gj_status	st = GJ_OK;

	*perm = NULL;
	if (plan->m == 0)
		return GJ_OK;
	k.keys = malloc(sizeof(int64_t) * (p->n + 1));
	k.perm = malloc(sizeof(uint32_t) * (p->n + 1));
	if (k.keys == NULL || k.perm == NULL)
		st = GJ_ERR_NOMEM;
	if (st == GJ_OK)
		st = gj_run_rows(key_rows, &k, 0, p->n, gj_slices_for(p->n, ORDER_MIN_ROWS / 8));
	if (st == GJ_OK)
		st = gj_sort_by_key(k.keys, k.perm, p->n, (int64_t) 1 << (plan->m * plan->bits));
	free(k.keys);
	if (st == GJ_OK)
		*perm = k.perm;
	else
		free(k.perm);
	return st == GJ_ERR_NOMEM ? GJ_OK : st;
}

/* The block order of p's rows: gj_block_plan_make, then gj_block_plan_perm. */
gj_status
gj_points_block_perm(const gj_points *p, uint32_t **perm)
{
	gj_block_plan plan;
	gj_status	st = gj_block_plan_make(p, &plan);

	*perm = NULL;
	if (st == GJ_OK)
		st = gj_block_plan_perm(p, &plan, perm);
	gj_block_plan_free(&plan);
	return st;
}

/* Sort p's rows (and ids) into plan's block order, in place. */
gj_status
gj_points_block_order_by(gj_points *p, const gj_block_plan *plan)
{
	uint32_t   *perm;
	gj_status	st = gj_block_plan_perm(p, plan, &perm);

	if (st == GJ_OK && perm != NULL)
		st = gj_points_apply_order(p, perm);
	free(perm);
	return st == GJ_ERR_NOMEM ? GJ_OK : st;
}

/* Sort p's rows (and ids) into the block order of every key dimension, in place. */
gj_status
gj_points_block_order(gj_points *p)
{
	gj_block_plan plan;
	gj_status	st = gj_block_plan_make(p, &plan);

	if (st == GJ_OK)
		st = gj_points_block_order_by(p, &plan);
	gj_block_plan_free(&plan);
	return st;
}

/* --- bounds ------------------------------------------------------------- */

/*
 * Bounds of rows r0..r1-1 of x, or of rows[r0..r1-1] when rows is not
 * NULL: box lo/hi, centre c (their mean) and radius *r (an upper bound).
 */
void
gj_bound_rows(const double *x, int dims, const uint32_t *rows, int64_t r0, int64_t r1,
			  double *lo, double *hi, double *c, double *r)
{
	double		worst = 0.0;

	for (int64_t t = r0; t < r1; t++)
	{
		const double *v = x + (rows != NULL ? (int64_t) rows[t] : t) * dims;

		for (int k = 0; k < dims; k++)
		{
			if (t == r0)
			{
				lo[k] = hi[k] = v[k];
				c[k] = 0.0;
			}
			lo[k] = v[k] < lo[k] ? v[k] : lo[k];
			hi[k] = v[k] > hi[k] ? v[k] : hi[k];
			c[k] += v[k];
		}
	}
	for (int k = 0; k < dims; k++)
		c[k] /= (double) (r1 - r0);
	for (int64_t t = r0; t < r1; t++)
	{
		const double *v = x + (rows != NULL ? (int64_t) rows[t] : t) * dims;
		double		r2 = 0.0;

		for (int k = 0; k < dims; k++)
		{
			double		d = v[k] - c[k];

			r2 += d * d;
		}
		/* NaN: an infinite radius, so the ball never rules a pair out */
		if (r2 != r2)
			worst = INFINITY;
		else if (r2 > worst)
			worst = r2;
	}
	*r = gj_block_radius_up(worst, dims);
}

static void
bound_blocks(void *arg, int64_t b0, int64_t b1)
{
	gj_block_bounds *bb = arg;
	int			dims = bb->dims;

	for (int64_t b = b0; b < b1; b++)
	{
		int64_t		r0 = b * bb->block,
					r1 = r0 + bb->block < bb->n ? r0 + bb->block : bb->n;

		gj_bound_rows(bb->x, dims, NULL, r0, r1, bb->lo + b * dims, bb->hi + b * dims,
					  bb->c + b * dims, &bb->r[b]);
	}
}

/* Bounds of the blocks of `block` consecutive rows of x (n x dims). */
gj_status
gj_block_bounds_build(gj_block_bounds *bb, const double *x, int64_t n, int dims, int block)
{
	size_t		sz;

	memset(bb, 0, sizeof(*bb));
	bb->x = x;
	bb->n = n;
	bb->dims = dims;
	bb->block = block;
	bb->nblocks = (n + block - 1) / block;
	sz = sizeof(double) * (size_t) dims * (bb->nblocks + 1);
	bb->lo = malloc(sz);
	bb->hi = malloc(sz);
	bb->c = malloc(sz);
	bb->r = malloc(sizeof(double) * (bb->nblocks + 1));
	if (bb->lo == NULL || bb->hi == NULL || bb->c == NULL || bb->r == NULL)
	{
		gj_block_bounds_free(bb);
		return GJ_ERR_NOMEM;
	}
	/* a thread for each million coordinates or so */
	return gj_run_rows(bound_blocks, bb, 0, bb->nblocks,
					   gj_slices_for(bb->nblocks, 1 + (1 << 20) / ((int64_t) block * dims)));
}

void
gj_block_bounds_free(gj_block_bounds *bb)
{
	free(bb->lo);
	free(bb->hi);
	free(bb->c);
	free(bb->r);
	bb->lo = bb->hi = bb->c = bb->r = NULL;
}

/* gj_block_lb2 of two bounds (box lo/hi, centre c, radius r) in dims. */
double
gj_bounds_lb2(const double *lo1, const double *hi1, const double *c1, double r1,
			  const double *lo2, const double *hi2, const double *c2, double r2, int dims)
{
	double		gap2 = 0.0,
				cen2 = 0.0;

	for (int k = 0; k < dims; k++)
		gj_block_terms(lo1[k], hi1[k], c1[k], lo2[k], hi2[k], c2[k], &gap2, &cen2);
	return gj_block_lb2(gap2, cen2, r1, r2, dims);
}

/* The same for block i of a and block j of b. */
double
gj_block_pair_lb2(const gj_block_bounds *a, int64_t i, const gj_block_bounds *b, int64_t j)
{
	int			dims = a->dims;

	return gj_bounds_lb2(a->lo + i * dims, a->hi + i * dims, a->c + i * dims, a->r[i],
						 b->lo + j * dims, b->hi + j * dims, b->c + j * dims, b->r[j], dims);
}
