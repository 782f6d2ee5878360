/*
 * points.c
 *		The growable point buffer the readers fill and the engines sort.
 */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

/* Names for statuses, for messages. */
const char *
gj_status_name(gj_status st)
{
	switch (st)
	{
		case GJ_OK:
			return "ok";
		case GJ_DONE:
			return "done";
		case GJ_AGAIN:
			return "again";
		case GJ_ERR_NOMEM:
			return "out of host memory";
		case GJ_ERR_LIMIT:
			return "input exceeds a limit";
		case GJ_ERR_THREAD:
			return "could not start a worker thread";
		case GJ_ERR_ARG:
			return "invalid argument";
		case GJ_ERR_CANCELED:
			return "canceled";
		case GJ_ERR_NODEVICE:
			return "no usable GPU";
		case GJ_ERR_DEVICE_OOM:
			return "out of GPU memory";
		case GJ_ERR_CUDA:
			return "CUDA error";
	}
	return "unknown status";
}

/* An empty point set of the given dimensionality. */
void
gj_points_init(gj_points *p, int dims)
{
	memset(p, 0, sizeof(*p));
	p->dims = dims;
}

/* Make room for at least n rows; grows geometrically. */
gj_status
gj_points_reserve(gj_points *p, int64_t n)
{
	int64_t		cap;
	double	   *x;
	int64_t    *ids;

	if (n <= p->cap)
		return GJ_OK;
	if (n > GJ_MAX_ROWS || (p->max_rows > 0 && n > p->max_rows))
		return GJ_ERR_LIMIT;
	cap = p->cap < 1024 ? 1024 : p->cap;
	while (cap < n)
		cap = cap > GJ_MAX_ROWS / 2 ? GJ_MAX_ROWS : cap * 2;
	if (p->max_rows > 0 && cap > p->max_rows)
		cap = p->max_rows;		/* the last growth stops at the limit */

	if (p->release != NULL)
	{
		/* borrowed storage cannot grow: move the rows to malloc'd arrays */
		x = malloc((size_t) cap * (size_t) p->dims * sizeof(double));
		gj_big_prepare(x, (size_t) n * (size_t) p->dims * sizeof(double));
		ids = malloc((size_t) cap * sizeof(int64_t));
		if (x == NULL || ids == NULL)
		{
			free(x);
			free(ids);
			return GJ_ERR_NOMEM;
		}
		memcpy(x, p->x, (size_t) p->n * (size_t) p->dims * sizeof(double));
		memcpy(ids, p->ids, (size_t) p->n * sizeof(int64_t));
		gj_points_replace(p, x, ids);
		p->cap = cap;
		return GJ_OK;
	}
	x = realloc(p->x, (size_t) cap * (size_t) p->dims * sizeof(double));
	if (x == NULL)
		return GJ_ERR_NOMEM;
	/*
	 * The rows asked for, faulted in on threads now (big_buffers.c): an
	 * explicit reservation (the reader's, from the table's statistics) is
	 * about to be filled; growth by doubling is not, and its spare half
	 * is left for the first writes, so it costs no memory until used.
	 */
	if (n > p->cap)
		gj_big_prepare(x + (size_t) p->cap * p->dims, (size_t) (n - p->cap) * p->dims * sizeof(double));
	p->x = x;
	ids = realloc(p->ids, (size_t) cap * sizeof(int64_t));
	if (ids == NULL)
		return GJ_ERR_NOMEM;
	p->ids = ids;
	p->cap = cap;
	return GJ_OK;
}

/* Append one row. */
gj_status
gj_points_push(gj_points *p, int64_t id, const double *coords)
{
	if (p->n == p->cap)
	{
		gj_status	st = gj_points_reserve(p, p->n + 1);

		if (st != GJ_OK)
			return st;
	}
	memcpy(p->x + p->n * p->dims, coords, sizeof(double) * p->dims);
	p->ids[p->n] = id;
	p->n++;
	return GJ_OK;
}

/* Let go of the buffers, whoever owns them. */
static void
release_storage(gj_points *p)
{
	if (p->release != NULL)
		p->release(p->release_arg);
	else
	{
		free(p->x);
		free(p->ids);
	}
	p->release = NULL;
	p->release_arg = NULL;
}

/*
 * Swap in malloc'd arrays holding the same n rows (cap n + 1), releasing
 * the old storage.
 */
void
gj_points_replace(gj_points *p, double *x, int64_t *ids)
{
	release_storage(p);
	p->x = x;
	p->ids = ids;
	p->cap = p->n + 1;
}

/* Free the buffers; the struct may be reused after gj_points_init. */
void
gj_points_free(gj_points *p)
{
	release_storage(p);
	p->x = NULL;
	p->ids = NULL;
	p->n = p->cap = 0;
}

/* gj_points_concat's rows [r0, r1) of a then b, on one thread. */
typedef struct concat_arg
{
	const gj_points *a;
	const gj_points *b;
	double	   *x;
	int64_t    *ids;
} concat_arg;

static void
concat_rows(void *arg, int64_t r0, int64_t r1)
{
	concat_arg *c = arg;
	int			dims = c->a->dims;
	int64_t		na = c->a->n;

	while (r0 < r1)
	{
		const gj_points *src = r0 < na ? c->a : c->b;
		int64_t		s0 = r0 < na ? r0 : r0 - na,
					end = r0 < na && r1 > na ? na : r1;

		memcpy(c->x + r0 * dims, src->x + s0 * dims, sizeof(double) * dims * (end - r0));
		memcpy(c->ids + r0, src->ids + s0, sizeof(int64_t) * (end - r0));
		r0 = end;
	}
}

#define GJ_CONCAT_MIN_ROWS 131072	/* rows of 2 dimensions a thread is worth starting for */

/*
 * out (initialised or freed) gets a's rows, then b's (the same dims), in
 * fresh arrays: a big buffer faulted in and copied on threads.  Copying two
 * 1M x 16 tables (256 MB) into fresh memory on one thread cost about as
 * much as sorting both into blocks.
 */
gj_status
gj_points_concat(gj_points *out, const gj_points *a, const gj_points *b)
{
	int64_t		n = a->n + b->n;
	concat_arg	c = {a, b, NULL, NULL};
	gj_status	st;

	if (a->dims != b->dims)
		return GJ_ERR_ARG;
	c.x = gj_big_alloc(sizeof(double) * (size_t) a->dims * (n + 1));
	c.ids = malloc(sizeof(int64_t) * (n + 1));
	st = c.x == NULL || c.ids == NULL ? GJ_ERR_NOMEM :
		gj_run_rows(concat_rows, &c, 0, n,
					gj_slices_for(n, 1 + GJ_CONCAT_MIN_ROWS * 2 / (a->dims > 0 ? a->dims : 1)));
	if (st != GJ_OK)
	{
		free(c.x);
		free(c.ids);
		return st;
	}
	gj_points_init(out, a->dims);
	out->n = n;
	gj_points_replace(out, c.x, c.ids);
	return GJ_OK;
}
