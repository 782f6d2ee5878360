/*
 * oracle.c
 *		Brute-force self-join: the reference every engine is tested against.
 *
 * Deliberately the plainest possible code: every pair once, the distance by
 * gj_sqdist (the shared rule), no index, no threads.
 */
#include <math.h>

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
