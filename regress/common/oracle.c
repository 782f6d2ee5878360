/*
 * oracle.c
 *		Brute-force references every engine is tested against: the
 *		self-join, neighbour counts, DBSCAN and kNN (oracle.h).
 *
 * Deliberately the plainest possible code: every pair once, the distance by
 * gj_sqdist (the shared rule), no index, no threads.
 */
#include <math.h>
#include <stdlib.h>

#include "oracle.h"

/* Emit every pair i < j of p within eps (s <= eps2); returns their number. */
int64_t
gj_oracle_selfjoin(const gj_points *p, double eps2, gj_pair_fn emit, void *arg)
{
	int64_t		count = 0;

	for (int64_t i = 0; i < p->n; i++)
		for (int64_t j = i + 1; j < p->n; j++)
		{
			double		s = gj_sqdist(p->x + i * p->dims, p->x + j * p->dims,
									  p->dims);

			if (s <= eps2)
			{
				if (emit != NULL)
					emit(arg, i, j, sqrt(s));
				count++;
			}
		}
	return count;
}

typedef struct oracle_cand
{
	double		d;
	int64_t		id;
	int64_t		row;
} oracle_cand;

static int
cmp_cand(const void *a, const void *b)
{
	const oracle_cand *x = a;
	const oracle_cand *y = b;

	if (x->d != y->d)
		return x->d < y->d ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * kNN by sorting every distance of each query (no k buffer, no index, no
 * threads): the reference for both kNN engines.
 */
gj_status
gj_oracle_knn(const gj_points *refs, const gj_points *queries, int64_t k,
			  int exclude_self, gj_knn_fn emit, void *arg)
{
	oracle_cand *c = malloc(sizeof(oracle_cand) * (refs->n + 1));

	if (c == NULL)
		return GJ_ERR_NOMEM;
	for (int64_t q = 0; q < queries->n; q++)
	{
		int64_t		n = 0;

		for (int64_t r = 0; r < refs->n; r++)
		{
			if (exclude_self && r == q)
				continue;
			c[n].d = gj_sqdist(queries->x + q * queries->dims,
							   refs->x + r * refs->dims, refs->dims);
			c[n].id = refs->ids[r];
			c[n].row = r;
			n++;
		}
		qsort(c, n, sizeof(oracle_cand), cmp_cand);
		for (int64_t i = 0; i < n && i < k; i++)
			emit(arg, q, (int) (i + 1), c[i].row, sqrt(c[i].d));
	}
	free(c);
	return GJ_OK;
}

/* Rows within eps of each row, itself included, by testing every pair. */
void
gj_oracle_count_within(const gj_points *p, double eps2, int32_t *counts)
{
	for (int64_t i = 0; i < p->n; i++)
	{
		int32_t		n = 0;

		for (int64_t j = 0; j < p->n; j++)
			if (gj_sqdist(p->x + i * p->dims, p->x + j * p->dims, p->dims) <= eps2)
				n++;
		counts[i] = n;
	}
}

/*
 * DBSCAN by its definition, independent of the engines' union-find: core
 * rows by brute-force counts, clusters by breadth-first search over core
 * rows, border rows by the least smallest core id, clusters numbered by
 * their smallest core id.  cluster[i] = -1 for noise.
 */
static int
within_eps(void *arg, const gj_points *p, int64_t i, int64_t j)
{
	return gj_sqdist(p->x + i * p->dims, p->x + j * p->dims, p->dims) <= *(double *) arg;
}

gj_status
gj_oracle_dbscan(const gj_points *p, double eps2, int32_t minpts,
				 int32_t *cluster, uint8_t *core)
{
	return gj_oracle_dbscan_by(p, within_eps, &eps2, minpts, cluster, core);
}

/* The same under any symmetric rule within(arg, p, i, j) (i within of itself). */
gj_status
gj_oracle_dbscan_by(const gj_points *p, gj_oracle_rule within, void *arg, int32_t minpts,
					int32_t *cluster, uint8_t *core)
{
	int64_t		n = p->n;
	int32_t    *counts = malloc(sizeof(int32_t) * (n + 1));
	int64_t    *comp = malloc(sizeof(int64_t) * (n + 1));
	int64_t    *stack = malloc(sizeof(int64_t) * (n + 1));
	int64_t    *cmin = malloc(sizeof(int64_t) * (n + 1));
	int64_t    *rank = malloc(sizeof(int64_t) * (n + 1));
	int64_t		ncomp = 0;

	if (counts == NULL || comp == NULL || stack == NULL || cmin == NULL || rank == NULL)
	{
		free(counts);
		free(comp);
		free(stack);
		free(cmin);
		free(rank);
		return GJ_ERR_NOMEM;
	}
	for (int64_t i = 0; i < n; i++)
	{
		counts[i] = 0;
		for (int64_t j = 0; j < n; j++)
			counts[i] += within(arg, p, i, j) != 0;
		core[i] = counts[i] >= minpts;
		comp[i] = -1;
	}
	for (int64_t s = 0; s < n; s++)
	{
		int64_t		top = 0;

		if (!core[s] || comp[s] >= 0)
			continue;
		comp[s] = ncomp;
		cmin[ncomp] = p->ids[s];
		stack[top++] = s;
		while (top > 0)
		{
			int64_t		u = stack[--top];

			for (int64_t v = 0; v < n; v++)
				if (core[v] && comp[v] < 0 && within(arg, p, u, v))
				{
					comp[v] = ncomp;
					if (p->ids[v] < cmin[ncomp])
						cmin[ncomp] = p->ids[v];
					stack[top++] = v;
				}
		}
		ncomp++;
	}
	/* number of component c: how many components have a smaller minimum */
	for (int64_t c = 0; c < ncomp; c++)
	{
		rank[c] = 0;
		for (int64_t o = 0; o < ncomp; o++)
			if (cmin[o] < cmin[c] || (cmin[o] == cmin[c] && o < c))
				rank[c]++;
	}
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		best = -1;

		if (core[i])
		{
			cluster[i] = (int32_t) rank[comp[i]];
			continue;
		}
		for (int64_t j = 0; j < n; j++)
			if (core[j] && within(arg, p, i, j) &&
				(best < 0 || rank[comp[j]] < best))
				best = rank[comp[j]];
		cluster[i] = (int32_t) best;
	}
	free(counts);
	free(comp);
	free(stack);
	free(cmin);
	free(rank);
	return GJ_OK;
}
