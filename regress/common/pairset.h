/*
 * pairset.h
 *		Pair sets for tests: collect (id, id, dist) triples from any engine,
 *		then compare two sets exactly (distances bit for bit).
 */
#ifndef GJ_PAIRSET_H
#define GJ_PAIRSET_H

#include <stdint.h>

#include "core_internal.h"

typedef struct gj_pair
{
	int64_t		a;				/* a <= b after gj_pairset_add */
	int64_t		b;
	double		dist;
} gj_pair;

typedef struct gj_pairset
{
	gj_pair    *v;
	int64_t		n;
	int64_t		cap;
} gj_pairset;

extern void gj_pairset_add(gj_pairset *s, int64_t a, int64_t b, double dist);
extern void gj_pairset_free(gj_pairset *s);

/*
 * Sort both sets and compare them: NULL when equal, else a reason, with the
 * first differing position in *at (-1 when the counts differ).
 */
extern const char *gj_pairset_diff(gj_pairset *want, gj_pairset *got, int64_t *at);

/* Print the pairs at position at of both sets, labelled (after gj_pairset_diff). */
extern void gj_pairset_print_at(const char *want_label, const gj_pairset *want,
								const char *got_label, const gj_pairset *got,
								int64_t at);

/*
 * Drain a join of two sets (tiles' cross plan, gj_gen_two_sets' layout: S's
 * rows from row nr of q, S's ids from GJ_GEN_S_ID) into got, as ids; rows:
 * the engine emits rows.  *wrong counts the pairs not (R's, S's).  GJ_OK
 * when the engine ended normally.
 */
extern gj_status gj_pairset_drain_cross(gj_engine *e, gj_pairset *got, int rows,
										const gj_points *q, int64_t nr, int64_t *wrong);

#endif
