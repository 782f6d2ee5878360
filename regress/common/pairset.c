/*
 * pairset.c
 *		Pair sets for tests (see pairset.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pairset.h"
#include "datagen.h"

/* Append a pair, normalised to a <= b; exits on OOM (tests only). */
void
gj_pairset_add(gj_pairset *s, int64_t a, int64_t b, double dist)
{
	if (s->n == s->cap)
	{
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->v = realloc(s->v, sizeof(gj_pair) * s->cap);
		if (s->v == NULL)
		{
			fprintf(stderr, "pairset: out of memory\n");
			exit(2);
		}
	}
	if (a > b)
	{
		int64_t		t = a;

		a = b;
		b = t;
	}
	s->v[s->n].a = a;
	s->v[s->n].b = b;
	s->v[s->n].dist = dist;
	s->n++;
}

void
gj_pairset_free(gj_pairset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int
cmp_pair(const void *x, const void *y)
{
	const gj_pair *p = x,
			   *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	return memcmp(&p->dist, &q->dist, sizeof(double));
}

const char *
gj_pairset_diff(gj_pairset *want, gj_pairset *got, int64_t *at)
{
	*at = -1;
	qsort(want->v, want->n, sizeof(gj_pair), cmp_pair);
	qsort(got->v, got->n, sizeof(gj_pair), cmp_pair);
	for (int64_t k = 0; k < want->n && k < got->n; k++)
	{
		if (want->v[k].a != got->v[k].a || want->v[k].b != got->v[k].b)
		{
			*at = k;
			return "pair sets differ";
		}
		if (memcmp(&want->v[k].dist, &got->v[k].dist, sizeof(double)) != 0)
		{
			*at = k;
			return "distance differs";
		}
	}
	if (want->n != got->n)
		return "pair count differs";
	return NULL;
}

void
gj_pairset_print_at(const char *want_label, const gj_pairset *want,
					const char *got_label, const gj_pairset *got, int64_t at)
{
	if (at < 0 || at >= want->n || at >= got->n)
		return;
	printf("  first difference: %s (%lld, %lld, %.17g), %s (%lld, %lld, %.17g)\n",
		   want_label, (long long) want->v[at].a, (long long) want->v[at].b,
		   want->v[at].dist, got_label, (long long) got->v[at].a,
		   (long long) got->v[at].b, got->v[at].dist);
}

gj_status
gj_pairset_drain_cross(gj_engine *e, gj_pairset *got, int rows, const gj_points *q,
					   int64_t nr, int64_t *wrong)
{
	gj_status	st;
	gj_chunk   *c;

	*wrong = 0;
	while ((st = gj_engine_next(e, 100, &c)) == GJ_OK || st == GJ_AGAIN)
	{
		if (st == GJ_AGAIN)
			continue;
		for (int k = 0; k < c->n; k++)
		{
			int64_t		a = rows ? q->ids[c->a[k]] : c->a[k],
						b = rows ? q->ids[c->b[k]] : c->b[k];

			/* (R's, S's): rows below nr first, ids below GJ_GEN_S_ID */
			if (a >= GJ_GEN_S_ID || b < GJ_GEN_S_ID ||
				(rows && (c->a[k] >= nr || c->b[k] < nr)))
				(*wrong)++;
			gj_pairset_add(got, a, b, c->dist[k]);
		}
		gj_engine_release(e, c);
	}
	return st == GJ_DONE ? GJ_OK : st;
}
