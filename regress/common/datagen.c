/*
 * datagen.c
 *		Seeded synthetic point sets (see datagen.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "datagen.h"

/* splitmix64: tiny, seedable, good enough for test data */
uint64_t
gj_rng_next(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
double
gj_rng_uniform(uint64_t *state)
{
	return (double) (gj_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

static double
gaussian(uint64_t *state)
{
	double		u = gj_rng_uniform(state),
				v = gj_rng_uniform(state);

	return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

/* n points of the given kind; ids are 0..n-1.  Exits on OOM (tests only). */
void
gj_gen_points(gj_points *p, gj_kind kind, int64_t n, int dims, uint64_t seed)
{
	uint64_t	st = seed * 2654435761u + 1;
	double	   *row = malloc(sizeof(double) * dims);
	double	   *centers = NULL;
	int			ncenters = 0;

	gj_points_init(p, dims);
	if (row == NULL || gj_points_reserve(p, n > 0 ? n : 1) != GJ_OK)
	{
		fprintf(stderr, "datagen: out of memory\n");
		exit(2);
	}
	if (kind == GJ_GEN_CLUSTERS || kind == GJ_GEN_DUPLICATES)
	{
		ncenters = kind == GJ_GEN_CLUSTERS ? 20 : (int) (n / 10 + 1);
		centers = malloc(sizeof(double) * dims * ncenters);
		if (centers == NULL)
			exit(2);
		for (int c = 0; c < ncenters * dims; c++)
			centers[c] = 100.0 * gj_rng_uniform(&st);
	}
	for (int64_t i = 0; i < n; i++)
	{
		int			c = ncenters ? (int) (gj_rng_next(&st) % ncenters) : 0;

		for (int d = 0; d < dims; d++)
		{
			double		u = gj_rng_uniform(&st);
			double		w = (double) (d + 1) / dims;

			switch (kind)
			{
				case GJ_GEN_UNIFORM:
					row[d] = 100.0 * u;
					break;
				case GJ_GEN_EXPONENTIAL:
					row[d] = -log(1.0 - u) / 40.0;
					break;
				case GJ_GEN_CLUSTERS:
					row[d] = centers[c * dims + d] + 2.0 * gaussian(&st);
					break;
				case GJ_GEN_DUPLICATES:
					row[d] = centers[c * dims + d];
					break;
				case GJ_GEN_ONE_CELL:
					row[d] = 1e-3 * u;
					break;
				case GJ_GEN_GRID_SNAPPED:
					row[d] = 0.5 * floor(21.0 * u);
					break;
				case GJ_GEN_LOWVAR_FIRST:
					row[d] = 100.0 * w * w * u;
					break;
				case GJ_GEN_OFFSET:
					row[d] = 1e4 + 0.01 * u;
					break;
				case GJ_GEN_FAR_CLUSTERS:
					row[d] = (i % 2 ? 1e4 : -1e4) + 0.01 * u;
					break;
				case GJ_GEN_LATTICE_STEPS:
					/* centre: row i / 8's integers; then a step in 1-2 dims */
					row[d] = (double) ((gj_rng_next(&st) >> 40) % 3);
					break;
			}
		}
		if (kind == GJ_GEN_LATTICE_STEPS)
		{
			/*
			 * Eight rows share each centre (the same seed for its draws);
			 * each moves 0.5 or 1 along one or two dimensions, so rows of a
			 * centre are exactly 0.5, 1, sqrt(0.5), sqrt(1.25) ... apart.
			 */
			uint64_t	cs = seed * 7919 + (uint64_t) (i / 8) + 1;

			for (int d = 0; d < dims; d++)
				row[d] = (double) ((gj_rng_next(&cs) >> 40) % 3);
			for (int s = 0; s < 1 + (int) (i % 2); s++)
			{
				int			d = (int) (gj_rng_next(&st) % (uint64_t) dims);

				row[d] += (gj_rng_next(&st) & 1) ? 0.5 : 1.0;
			}
		}
		gj_points_push(p, i, row);
	}
	free(row);
	free(centers);
}

/* An eps giving about `neighbours` neighbours a point, from the kind's extent. */
double
gj_gen_typical_eps(gj_kind kind, int64_t n, int dims, double neighbours)
{
	double		extent;
	double		vball;

	switch (kind)
	{
		case GJ_GEN_EXPONENTIAL:
			extent = 0.1;
			break;
		case GJ_GEN_ONE_CELL:
			extent = 1e-3;
			break;
		case GJ_GEN_GRID_SNAPPED:
			extent = 10.0;
			break;
		case GJ_GEN_OFFSET:
		case GJ_GEN_FAR_CLUSTERS:
			extent = 0.01;
			break;
		case GJ_GEN_LATTICE_STEPS:
			extent = 2.0;
			break;
		default:
			extent = 100.0;
	}
	if (n < 2)
		n = 2;
	vball = pow(M_PI, dims / 2.0) / tgamma(dims / 2.0 + 1.0);
	return extent * pow(neighbours / ((double) n * vball), 1.0 / dims);
}

static void
push_row(gj_points *p, double a, double b, double c)
{
	double		row[3] = {a, b, c};

	gj_points_push(p, p->n, row);
}

int
gj_gen_boundary_case(int k, gj_points *p, const char **name, double *eps,
					 int *neps)
{
	switch (k)
	{
		case 0:				/* integer lattice: axis neighbours exactly 1 apart */
			gj_points_init(p, 2);
			for (int i = 0; i < 40; i++)
				for (int j = 0; j < 40; j++)
					push_row(p, i, j, 0);
			*name = "lattice-int";
			eps[0] = 1.0;
			eps[1] = sqrt(2.0);
			*neps = 2;
			return 1;
		case 1:				/* decimal lattice: rounding decides at eps */
			gj_points_init(p, 2);
			for (int i = 0; i < 50; i++)
				for (int j = 0; j < 50; j++)
					push_row(p, i * 0.1, j * 0.1, 0);
			*name = "lattice-0.1";
			eps[0] = 0.1;
			eps[1] = 0.30000000000000004;
			eps[2] = sqrt(0.02);
			*neps = 3;
			return 1;
		case 2:				/* 3-4-5 triangles at exactly eps = 5 */
			gj_points_init(p, 2);
			for (int i = 0; i < 200; i++)
				push_row(p, 3.0 * i, 4.0 * i, 0);
			*name = "diagonal-345";
			eps[0] = 5.0;
			*neps = 1;
			return 1;
		case 3:				/* subnormal and underflowing eps*eps */
			gj_points_init(p, 1);
			for (int i = 0; i < 300; i++)
				push_row(p, 1.0e-162 * (i % 37) * 0.37, 0, 0);
			*name = "subnormal";
			eps[0] = 2.0e-162;
			eps[1] = 1.0e-170;
			*neps = 2;
			return 1;
		case 4:				/* a range that overflows float64; eps*eps overflow */
			gj_points_init(p, 2);
			for (int i = 0; i < 300; i++)
				push_row(p, (i % 3 - 1) * 1.5e308, (i % 17) * 0.5, 0);
			*name = "range-overflow";
			eps[0] = 1.0;
			eps[1] = 1.0e200;
			*neps = 2;
			return 1;
		case 5:				/* 3-D lattice: axis and space diagonals */
			gj_points_init(p, 3);
			for (int i = 0; i < 10; i++)
				for (int j = 0; j < 10; j++)
					for (int m = 0; m < 10; m++)
						push_row(p, i * 0.25, j * 0.25, m * 0.25);
			*name = "cube-lattice";
			eps[0] = 0.25;
			eps[1] = sqrt(3 * 0.0625);
			*neps = 2;
			return 1;
	}
	return 0;
}

void
gj_points_copy(gj_points *dst, const gj_points *src, int64_t n)
{
	gj_points_init(dst, src->dims);
	if (gj_points_reserve(dst, n + 1) != GJ_OK)
		exit(2);
	for (int64_t i = 0; i < n; i++)
		gj_points_push(dst, src->ids[i], src->x + i * src->dims);
}

void
gj_write_csv(const char *dir, const char *name, const gj_points *p)
{
	char		path[1024];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s.csv", dir, name);
	f = fopen(path, "w");
	if (f == NULL)
	{
		perror(path);
		exit(2);
	}
	for (int64_t i = 0; i < p->n; i++)
	{
		fprintf(f, "%lld", (long long) p->ids[i]);
		for (int d = 0; d < p->dims; d++)
			fprintf(f, ",%.17g", p->x[i * p->dims + d]);
		fputc('\n', f);
	}
	fclose(f);
}

void
gj_scramble_ids(gj_points *p, uint64_t seed)
{
	uint64_t	s = seed * 2654435761u + 1;

	for (int64_t i = 0; i < p->n; i++)
		p->ids[i] = i;
	for (int64_t i = p->n - 1; i > 0; i--)
	{
		int64_t		k = (int64_t) (gj_rng_next(&s) % (uint64_t) (i + 1));
		int64_t		t = p->ids[i];

		p->ids[i] = p->ids[k];
		p->ids[k] = t;
	}
}

void
gj_gen_chain(gj_points *p, int nclusters, double eps, uint64_t seed)
{
	uint64_t	s = seed;

	gj_points_init(p, 2);
	if (gj_points_reserve(p, (int64_t) nclusters * 7) != GJ_OK)
		exit(2);
	for (int c = 0; c < nclusters; c++)
	{
		double		x[2] = {c * 2.0 * eps, 5.0};
		double		b[2] = {x[0] + eps, 5.0};

		gj_points_push(p, p->n, x);
		for (int k = 0; k < 5; k++)
		{
			double		y[2] = {x[0] + (gj_rng_uniform(&s) - 0.5) * 0.2 * eps,
			5.0 + (gj_rng_uniform(&s) - 0.5) * 0.2 * eps};

			gj_points_push(p, p->n, y);
		}
		gj_points_push(p, p->n, b);
	}
}

void
gj_gen_clump(gj_points *p, int64_t n, int dims, int gap, uint64_t seed)
{
	gj_gen_points(p, GJ_GEN_UNIFORM, n, dims, seed);	/* [0, 100)^d */
	for (int64_t i = 0; i < p->n; i++)
		for (int k = 0; k < dims; k++)
		{
			double	   *v = &p->x[i * dims + k];

			*v = *v * 0.5 * (i % 40 == 0 ? 3.0 : 1.0);
			if (gap > 0 && k == 0 && i % 2 == 1)
				*v += 50.0 + (gap == 1 ? 24.0 : 26.0);
		}
}

void
gj_points_split_alternate(const gj_points *p, gj_points *r, gj_points *s)
{
	gj_points_init(r, p->dims);
	gj_points_init(s, p->dims);
	for (int64_t i = 0; i < p->n; i++)
		gj_points_push(i % 2 ? s : r, p->ids[i], p->x + i * p->dims);
}

int
gj_gen_band_within(void *arg, const gj_points *p, int64_t i, int64_t j)
{
	const gj_gen_band *r = arg;
	double		d2 = gj_sqdist(p->x + i * p->dims, p->x + j * p->dims, p->dims);
	int64_t		a = p->ids[i] < p->ids[j] ? p->ids[i] : p->ids[j],
				b = p->ids[i] < p->ids[j] ? p->ids[j] : p->ids[i];
	uint64_t	h = r->seed ^ (uint64_t) a * 0x9E3779B97F4A7C15ull ^ (uint64_t) b * 0xC2B2AE3D27D4EB4Full;

	if (d2 <= r->in2)
		return 1;
	h ^= h >> 31;
	h *= 0xBF58476D1CE4E5B9ull;
	return d2 <= r->out2 && ((h >> 29) & 1);
}

void
gj_gen_two_sets(gj_points *out, const gj_points *p, int64_t nr, int same,
				const gj_block_plan *plan, int64_t *ns)
{
	gj_points	r,
				sv;

	*ns = same ? nr : p->n - nr;
	gj_points_copy(&r, p, nr);
	gj_points_init(&sv, p->dims);
	gj_points_init(out, p->dims);
	if (gj_points_reserve(&sv, *ns + 1) != GJ_OK || gj_points_reserve(out, nr + *ns + 1) != GJ_OK)
		exit(2);
	for (int64_t i = 0; i < *ns; i++)
	{
		int64_t		row = same ? i : nr + i;

		gj_points_push(&sv, p->ids[row] + GJ_GEN_S_ID, p->x + row * p->dims);
	}
	if (plan != NULL &&
		(gj_points_block_order_by(&r, plan) != GJ_OK || gj_points_block_order_by(&sv, plan) != GJ_OK))
		exit(2);
	for (int64_t i = 0; i < nr; i++)
		gj_points_push(out, r.ids[i], r.x + i * p->dims);
	for (int64_t i = 0; i < *ns; i++)
		gj_points_push(out, sv.ids[i], sv.x + i * p->dims);
	gj_points_free(&r);
	gj_points_free(&sv);
}

void
gj_gen_two_sets_sorted(gj_points two[2], const gj_points *p, int64_t nr, int same, double eps2,
					   int64_t *ns)
{
	gj_points	r;
	gj_block_plan plan;
	double		kept;

	gj_points_copy(&r, p, nr);
	if (gj_block_plan_make_for(&r, eps2, &plan, &kept) != GJ_OK)
		exit(2);
	gj_gen_two_sets(&two[0], p, nr, same, NULL, ns);
	gj_gen_two_sets(&two[1], p, nr, same, &plan, ns);
	gj_block_plan_free(&plan);
	gj_points_free(&r);
}
