/*
 * points.c
 *		The growable point buffer the readers fill and the engines sort.
 */
#include <stdlib.h>
#include <string.h>

#include "gj_core.h"

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
