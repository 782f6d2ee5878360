/*
 * slab_cpu.c
 *		The slab engine's two questions (gj_slab_engine) answered by the CPU
 *		engine: so that the rules built on slabs (geography's band) run the
 *		same on a machine without a GPU.
 *
 * The rows asked about are views of the caller's rows, which must not
 * move: each answer builds its grid over a copy, whose ids are the rows'
 * positions, and maps the answers back through them.
 */
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

/* A copy of v whose ids are v's row numbers. */
static gj_status
copy_rows(gj_points *c, const gj_points *v)
{
	gj_points_init(c, v->dims);
	if (gj_points_reserve(c, v->n) != GJ_OK)
		return GJ_ERR_NOMEM;
	memcpy(c->x, v->x, sizeof(double) * v->dims * v->n);
	for (int64_t i = 0; i < v->n; i++)
		c->ids[i] = i;
	c->n = v->n;
	return GJ_OK;
}

static gj_status
cpu_join_counts(void *arg, const gj_points *s, const gj_points *r, double eps2,
				int32_t *counts)
{
	gj_points	c;
	gj_grid		g;
	gj_status	st;

	memset(&g, 0, sizeof(g));
	if (s->n == 0)
	{
		memset(counts, 0, sizeof(int32_t) * r->n);
		return GJ_OK;
	}
	st = copy_rows(&c, s);
	if (st == GJ_OK)
		st = gj_grid_build(&g, &c, eps2);
	if (st == GJ_OK)
		st = gj_cpu_count_queries(&g, &c, r, *(int *) arg, counts);
	gj_grid_free(&g);
	gj_points_free(&c);
	return st;
}

static gj_status
cpu_dbscan_given(void *arg, const gj_points *w, double eps2, const uint8_t *core,
				 const int64_t *key, int32_t *rep)
{
	int64_t		n = w->n;
	gj_points	c;
	gj_grid		g;
	uint8_t    *gcore = malloc(n + 1);
	int64_t    *gkey = malloc(sizeof(int64_t) * (n + 1));
	int32_t    *grep = malloc(sizeof(int32_t) * (n + 1));
	gj_status	st = gcore != NULL && gkey != NULL && grep != NULL ? GJ_OK : GJ_ERR_NOMEM;

	memset(&g, 0, sizeof(g));
	memset(&c, 0, sizeof(c));
	if (st == GJ_OK)
		st = copy_rows(&c, w);
	if (st == GJ_OK)
		st = gj_grid_build(&g, &c, eps2);
	if (st == GJ_OK)
	{
		/* flags and keys into the grid's order */
		for (int64_t j = 0; j < n; j++)
		{
			int64_t		r = c.ids[j];

			gcore[j] = core[r];
			gkey[j] = key != NULL ? key[r] : w->ids[r];
		}
		st = gj_cpu_dbscan_given(&g, &c, gcore, gkey, *(int *) arg, grep);
	}
	for (int64_t j = 0; st == GJ_OK && j < n; j++)
		rep[c.ids[j]] = grep[j] >= 0 ? (int32_t) c.ids[grep[j]] : -1;
	gj_grid_free(&g);
	gj_points_free(&c);
	free(gcore);
	free(gkey);
	free(grep);
	return st;
}

void
gj_cpu_slab_engine(gj_slab_engine *e, int *nthreads)
{
	memset(e, 0, sizeof(*e));
	e->arg = nthreads;
	e->join_counts = cpu_join_counts;
	e->dbscan_given = cpu_dbscan_given;
	e->order = NULL;			/* the host's sort */
}
