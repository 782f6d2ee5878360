/*
 * knnset.h
 *		kNN result sets for tests: collect (query id, rank, reference id,
 *		dist) from any engine or the oracle, then compare two sets exactly
 *		(distances bit for bit, ranks included).  Also the one driver of the
 *		CPU kNN engine that the tests and benchmarks share.
 */
#ifndef GJ_KNNSET_H
#define GJ_KNNSET_H

#include <stdint.h>

#include "core_internal.h"

typedef struct gj_knn_row
{
	int64_t		q;
	int64_t		rank;
	int64_t		r;
	double		dist;
} gj_knn_row;

typedef struct gj_knnset
{
	gj_knn_row *v;
	int64_t		n;
	int64_t		cap;
} gj_knnset;

extern void gj_knnset_add(gj_knnset *s, int64_t q, int64_t rank, int64_t r,
						  double dist);
extern void gj_knnset_free(gj_knnset *s);

/* Sort both and compare: NULL when equal, else a reason (and print where). */
extern const char *gj_knnset_diff(gj_knnset *want, gj_knnset *got);

/*
 * Add a chunk stream's rows: a = query row, b = reference row, ranks from
 * first_rank; rows are mapped to ids through qids and rids.
 */
extern void gj_knnset_add_chunk(gj_knnset *s, const gj_chunk *c,
								const int64_t *qids, const int64_t *rids);

/*
 * The CPU engine end to end: for the grid method, sorts refs in place by
 * the level-0 grid of gj_knn_index_build; queries NULL means a self kNN of refs.
 * Fills out (if not NULL); returns the engine's status (GJ_DONE = success).
 */
extern gj_status gj_knn_run_cpu(gj_points *refs, const gj_points *queries,
								const gj_knn_options *opt, int threads,
								gj_knnset *out);

/* The oracle into a set (ids from the point sets). */
extern gj_status gj_knn_run_oracle(const gj_points *refs, const gj_points *queries,
								   const gj_knn_options *opt, gj_knnset *out);

#endif
