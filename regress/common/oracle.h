/*
 * oracle.h
 *		Brute-force references the tests check every engine against:
 *		O(n^2), any order of the rows, written for obviousness rather than
 *		speed, and built into the tests and benchmarks only (never into
 *		gpujoin.so).
 */
#ifndef GJ_ORACLE_H
#define GJ_ORACLE_H

#include "gj_core.h"

/* counts[i]: rows within eps2 of row i, itself included */
extern void gj_oracle_count_within(const gj_points *p, double eps2,
								   int32_t *counts);

/*
 * DBSCAN as gj_cpu_dbscan defines it (cluster numbers, -1 noise), under
 * the rule within (gj_oracle_dbscan: the float64 rule at eps2).
 */
typedef int (*gj_oracle_rule) (void *arg, const gj_points *p, int64_t i, int64_t j);
extern gj_status gj_oracle_dbscan_by(const gj_points *p, gj_oracle_rule within, void *arg,
									 int32_t minpts, int32_t *cluster, uint8_t *core);
extern gj_status gj_oracle_dbscan(const gj_points *p, double eps2,
								  int32_t minpts, int32_t *cluster,
								  uint8_t *core);

/*
 * Every i < j of p, in p's current order, within eps2: emit for each pair
 * (NULL: only count); the number of pairs.
 */
typedef void (*gj_pair_fn) (void *arg, int64_t i, int64_t j, double dist);
extern int64_t gj_oracle_selfjoin(const gj_points *p, double eps2,
								  gj_pair_fn emit, void *arg);

/*
 * kNN, independent of the engines' k buffers: sorts all distances of each
 * query.  emit(arg, query, rank, ref, dist) in rank order.
 */
typedef void (*gj_knn_fn) (void *arg, int64_t q, int rank, int64_t r, double dist);
extern gj_status gj_oracle_knn(const gj_points *refs, const gj_points *queries,
							   int64_t k, int exclude_self,
							   gj_knn_fn emit, void *arg);

#endif							/* GJ_ORACLE_H */
