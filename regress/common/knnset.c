/*
 * knnset.c
 *		kNN result sets for the tests, and the shared CPU engine driver.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knnset.h"
#include "oracle.h"

void
gj_knnset_add(gj_knnset *s, int64_t q, int64_t rank, int64_t r, double dist)
{
	if (s->n == s->cap)
	{
		int64_t		ncap = s->cap ? 2 * s->cap : 1024;
		gj_knn_row *nv = realloc(s->v, sizeof(gj_knn_row) * ncap);

		if (nv == NULL)
		{
			fprintf(stderr, "knnset: out of memory\n");
			exit(2);
		}
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n].q = q;
	s->v[s->n].rank = rank;
	s->v[s->n].r = r;
	s->v[s->n].dist = dist;
	s->n++;
}

void
gj_knnset_free(gj_knnset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int
cmp_row(const void *a, const void *b)
{
	const gj_knn_row *x = a;
	const gj_knn_row *y = b;

	if (x->q != y->q)
		return x->q < y->q ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

const char *
gj_knnset_diff(gj_knnset *want, gj_knnset *got)
{
	qsort(want->v, want->n, sizeof(gj_knn_row), cmp_row);
	qsort(got->v, got->n, sizeof(gj_knn_row), cmp_row);
	for (int64_t i = 0; i < want->n && i < got->n; i++)
	{
		gj_knn_row *w = &want->v[i];
		gj_knn_row *g = &got->v[i];

		if (w->q != g->q || w->rank != g->rank || w->r != g->r ||
			memcmp(&w->dist, &g->dist, sizeof(double)) != 0)
		{
			printf("  first difference at %lld: want q=%lld rank=%lld r=%lld d=%.17g,"
				   " got q=%lld rank=%lld r=%lld d=%.17g\n", (long long) i,
				   (long long) w->q, (long long) w->rank, (long long) w->r, w->dist,
				   (long long) g->q, (long long) g->rank, (long long) g->r, g->dist);
			return "rows differ";
		}
	}
	if (want->n != got->n)
	{
		printf("  want %lld rows, got %lld\n", (long long) want->n, (long long) got->n);
		return "row counts differ";
	}
	return NULL;
}

void
gj_knnset_add_chunk(gj_knnset *s, const gj_chunk *c, const int64_t *qids,
					const int64_t *rids)
{
	(void) qids;
	(void) rids;
	for (int i = 0; i < c->n; i++)
		gj_knnset_add(s, c->a[i], c->rank[i], c->b[i], c->dist[i]);
}

gj_status
gj_knn_run_cpu(gj_points *refs, const gj_points *queries,
			   const gj_knn_options *opt, int threads, gj_knnset *out)
{
	gj_grid		g;
	int			have_grid = 0;
	gj_cpu_knn *j;
	gj_status	st;
	const gj_points *qs = queries != NULL ? queries : refs;

	if (gj_knn_pick_method(opt, refs->dims) == GJ_KNN_GRID)
	{
		st = gj_knn_grid_build(&g, refs);
		if (st != GJ_OK)
			return st;
		have_grid = 1;
	}
	st = gj_cpu_knn_start(refs, have_grid ? &g : NULL, qs, opt, threads, &j);
	if (st == GJ_OK)
	{
		for (;;)
		{
			gj_chunk   *c;

			st = gj_engine_next(GJ_ENGINE(j), 100, &c);
			if (st == GJ_AGAIN)
				continue;
			if (st != GJ_OK)
				break;
			if (out != NULL)
				gj_knnset_add_chunk(out, c, qs->ids, refs->ids);
			gj_engine_release(GJ_ENGINE(j), c);
		}
		gj_engine_free(GJ_ENGINE(j));
	}
	if (have_grid)
		gj_grid_free(&g);
	return st;
}

typedef struct oracle_arg
{
	gj_knnset  *out;
	const int64_t *qids;
	const int64_t *rids;
} oracle_arg;

static void
oracle_emit(void *arg, int64_t q, int rank, int64_t r, double dist)
{
	oracle_arg *a = arg;

	gj_knnset_add(a->out, a->qids[q], rank, a->rids[r], dist);
}

gj_status
gj_knn_run_oracle(const gj_points *refs, const gj_points *queries,
				  const gj_knn_options *opt, gj_knnset *out)
{
	const gj_points *qs = queries != NULL ? queries : refs;
	oracle_arg	a = {out, qs->ids, refs->ids};

	return gj_oracle_knn(refs, qs, opt->k, opt->exclude_self, oracle_emit, &a);
}
