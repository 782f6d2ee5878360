/*
 * sort.c
 *		Sorting rows by cell: a stable LSD radix sort of (key, row) pairs,
 *		spread over threads for large inputs, and the helper that runs one
 *		function over slices of rows on threads.
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

#include "gj_core.h"

#define GJ_SORT_MIN_ROWS 65536	/* rows a sorting thread is worth starting for */

/*
 * Run fn over n slices (n <= GJ_MAX_SLICES), slice t getting
 * (char *) args + t * stride: slice 0 on this thread, the others on helper
 * threads, or here too when a helper does not start.  Returns when all are
 * done.  The helpers block every signal (gj_threads_start), so fn must not
 * call back into PostgreSQL (no interrupt checks).
 */
void
gj_run_slices(void *(*fn) (void *), void *args, size_t stride, int n)
{
	pthread_t	threads[GJ_MAX_SLICES];
	int			started;

	if (n > GJ_MAX_SLICES)
		n = GJ_MAX_SLICES;
	started = n > 1 ? gj_threads_start(threads, n - 1, fn, (char *) args + stride, stride) : 0;
	fn(args);
	for (int t = 1 + started; t < n; t++)
		fn((char *) args + t * stride);
	for (int t = 0; t < started; t++)
		pthread_join(threads[t], NULL);
}

/* Slices for n rows, each at least min_rows long, at most one per core. */
int
gj_slices_for(int64_t n, int64_t min_rows)
{
	int			nt = gj_cpu_count();

	if (nt > GJ_MAX_SLICES)
		nt = GJ_MAX_SLICES;
	if (nt > n / min_rows)
		nt = (int) (n / min_rows);
	return nt < 1 ? 1 : nt;
}

typedef struct sort_slice
{
	const int64_t *sk;			/* this pass's source ... */
	const uint32_t *sv;
	int64_t    *dk;				/* ... and destination */
	uint32_t   *dv;
	int64_t		r0;				/* the slice: rows [r0, r1) of the source */
	int64_t		r1;
	int			shift;			/* the digit: bits shift .. shift + 7 */
	int64_t		at[256];		/* digit counts, then where each digit goes */
} sort_slice;

static void *
count_digits(void *arg)
{
	sort_slice *s = arg;

	memset(s->at, 0, sizeof(s->at));
	for (int64_t i = s->r0; i < s->r1; i++)
		s->at[(s->sk[i] >> s->shift) & 0xff]++;
	return NULL;
}

static void *
scatter_rows(void *arg)
{
	sort_slice *s = arg;

	for (int64_t i = s->r0; i < s->r1; i++)
	{
		int64_t		pos = s->at[(s->sk[i] >> s->shift) & 0xff]++;

		s->dk[pos] = s->sk[i];
		s->dv[pos] = s->sv[i];
	}
	return NULL;
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

	for (int pass = 0; pass < passes; pass++)
	{
		int64_t		sum = 0;

		if (gj_interrupted())
		{
			free(tk);
			free(tv);
			return GJ_ERR_CANCELED;
		}
		for (int t = 0; t < nt; t++)
		{
			sl[t].sk = (pass % 2 == 0) ? keys : tk;
			sl[t].sv = (pass % 2 == 0) ? vals : tv;
			sl[t].dk = (pass % 2 == 0) ? tk : keys;
			sl[t].dv = (pass % 2 == 0) ? tv : vals;
			sl[t].r0 = n * t / nt;
			sl[t].r1 = n * (t + 1) / nt;
			sl[t].shift = 8 * pass;
		}
		gj_run_slices(count_digits, sl, sizeof(sort_slice), nt);
		/* digit by digit, slice by slice: equal keys keep their order */
		for (int b = 0; b < 256; b++)
			for (int t = 0; t < nt; t++)
			{
				int64_t		c = sl[t].at[b];

				sl[t].at[b] = sum;
				sum += c;
			}
		gj_run_slices(scatter_rows, sl, sizeof(sort_slice), nt);
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
