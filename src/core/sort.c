/*
 * sort.c
 *		Sorting rows by cell: a stable LSD radix sort of (key, row) pairs,
 *		spread over threads for large inputs.
 *
 * The sort was the largest part of the CPU engine's grid build (35-60 ms of
 * 120-165 ms for 2M points on one core).  Each 8-bit pass is two parallel
 * steps: every slice counts its keys' digits, then, from offsets that put
 * the slices of one digit in slice order, scatters its rows.  Rows of equal
 * keys keep their order within and across slices, so the result is the
 * same as one thread's, which the tests compare against.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

#define GJ_SORT_MIN_ROWS 65536	/* rows a sorting thread is worth starting for */

/* qsort's comparator for doubles, ascending (NaN compares equal to all). */
int
gj_cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

typedef struct sort_slice
{
	const int64_t *sk;			/* this pass's source ... */
	const uint32_t *sv;
	int64_t    *dk;				/* ... and destination */
	uint32_t   *dv;
	int			shift;			/* the digit: bits shift .. shift + 7 */
	int64_t		at[256];		/* digit counts, then where each digit goes */
} sort_slice;

static void
count_digits(void *arg, int64_t r0, int64_t r1)
{
	sort_slice *s = arg;

	for (int64_t i = r0; i < r1; i++)
		s->at[(s->sk[i] >> s->shift) & 0xff]++;
}

static void
scatter_rows(void *arg, int64_t r0, int64_t r1)
{
	sort_slice *s = arg;

	for (int64_t i = r0; i < r1; i++)
	{
		int64_t		pos = s->at[(s->sk[i] >> s->shift) & 0xff]++;

		s->dk[pos] = s->sk[i];
		s->dv[pos] = s->sv[i];
	}
}

/*
 * Stable LSD radix sort of (key, val) by non-negative key, 8 bits a pass,
 * only over the bytes that the largest key uses.  The result ends in
 * keys/vals.  Polls the interrupt hook between passes.
 */
gj_status
gj_sort_by_key(int64_t *keys, uint32_t *vals, int64_t n, int64_t maxkey)
{
	return gj_sort_by_key_slices(keys, vals, n, maxkey, gj_slices_for(n, GJ_SORT_MIN_ROWS));
}

/* The same in nt slices (1 to GJ_MAX_SLICES), whatever the cores: tests. */
gj_status
gj_sort_by_key_slices(int64_t *keys, uint32_t *vals, int64_t n, int64_t maxkey, int nt)
{
	sort_slice	sl[GJ_MAX_SLICES];
	int64_t    *tk;
	uint32_t   *tv;
	int			passes = 0;
	gj_status	st = GJ_OK;

	nt = nt < 1 ? 1 : nt > GJ_MAX_SLICES ? GJ_MAX_SLICES : nt;
	if (nt > n)
		nt = n < 1 ? 1 : (int) n;

	while (passes < 8 && (maxkey >> (8 * passes)) != 0)
		passes++;
	if (passes == 0 || n < 2)
		return GJ_OK;

	tk = malloc(sizeof(int64_t) * n);
	tv = malloc(sizeof(uint32_t) * n);
	if (tk == NULL || tv == NULL)
	{
		free(tk);
		free(tv);
		return GJ_ERR_NOMEM;
	}

	for (int pass = 0; pass < passes && st == GJ_OK; pass++)
	{
		int64_t		sum = 0;

		for (int t = 0; t < nt; t++)
		{
			sl[t].sk = (pass % 2 == 0) ? keys : tk;
			sl[t].sv = (pass % 2 == 0) ? vals : tv;
			sl[t].dk = (pass % 2 == 0) ? tk : keys;
			sl[t].dv = (pass % 2 == 0) ? tv : vals;
			sl[t].shift = 8 * pass;
			memset(sl[t].at, 0, sizeof(sl[t].at));
		}
		st = gj_run_rows(count_digits, sl, sizeof(sort_slice), n, nt);
		if (st != GJ_OK)
			break;
		/* digit by digit, slice by slice: equal keys keep their order */
		for (int b = 0; b < 256; b++)
			for (int t = 0; t < nt; t++)
			{
				int64_t		c = sl[t].at[b];

				sl[t].at[b] = sum;
				sum += c;
			}
		st = gj_run_rows(scatter_rows, sl, sizeof(sort_slice), n, nt);
	}
	if (st != GJ_OK)
	{
		/* keys/vals hold a mix of two passes: the caller frees them */
		free(tk);
		free(tv);
		return st;
	}
	if (passes % 2 == 1)
	{
		memcpy(keys, tk, sizeof(int64_t) * n);
		memcpy(vals, tv, sizeof(uint32_t) * n);
	}
	free(tk);
	free(tv);
	return GJ_OK;
}
