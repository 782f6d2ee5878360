/*
 * oracle.c
 *		Brute-force self-join: the reference every engine is tested against.
 *
 * Deliberately the plainest possible code: every pair once, the distance by
 * gj_sqdist (the shared rule), no index, no threads.
 */
#include <math.h>
#include <stdlib.h>

#include "gj_core.h"

/* Emit every pair i < j of p within eps; returns their number. */
int64_t
gj_oracle_selfjoin(const gj_points *p, double eps, gj_pair_fn emit, void *arg)
{
	double		eps2 = eps * eps;
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
