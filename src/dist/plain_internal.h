/*
 * plain_internal.h
 *		What the planner hook's files share (dist/): plain SQL distance joins
 *		of Citus-distributed tables.
 *
 *	plain_sql.c		the hook: joins Citus refuses, read as intermediate
 *					results on this node (the GpuJoin joins them here)
 *	plain_pairs.c	the inner joins whose pairs the workers can find: the
 *					two tables' entries become one eps_join call's rows
 *	plain_knn.c		the LATERAL kNN whose neighbours the workers can find:
 *					the query table's entry becomes knn_join's rows
 *	plain_query.c	what they do to a query tree (a leaf)
 */
#ifndef GJ_PLAIN_INTERNAL_H
#define GJ_PLAIN_INTERNAL_H

#include "nodes/parsenodes.h"

#include "dist/dist.h"
#include "join/join.h"

/* The two sides of a distance between Vars of one query level. */
typedef struct GjVarSides
{
	Index		varno[2];
} GjVarSides;

/* plain_query.c */
extern Node *GjPlainStripRelabel(Node *n);
extern int	GjPlainVarSide(Node *n, void *arg);
extern bool GjPlainTableEntry(Query *q, Index rti);
extern bool GjPlainOddUse(Query *q, Index rti);
extern void GjPlainEntryToSubquery(RangeTblEntry *rte, Query *sub);
typedef void (*GjPlainLevelFn) (Query *q, void *arg);
extern void GjPlainEachLevel(Query *q, GjPlainLevelFn fn, void *arg, int depth);
extern bool GjPlainInnerReach(Node *n, Index rti);
extern bool GjPlainReadAsCaller(Query *q, RangeTblEntry *rte);
extern int	GjPlainCitusTables(Query *parse);
extern Query *GjPlainAnalyze(const char *sql);
extern char *GjPlainRowColumns(Oid relid, const char *row, int *natts);

/*
 * plain_pairs.c: rewrite the inner distance joins of parse whose pairs
 * the workers can find, when they are all its Citus tables; the tables
 * they read are appended to *relids (the plan depends on them).
 */
extern void GjPlainPairs(Query *parse, List **relids);

/*
 * plain_knn.c: rewrite the LATERAL kNN subqueries of parse whose
 * neighbours the workers can find, likewise.
 */
extern void GjPlainKnn(Query *parse, List **relids, ParamListInfo params);

#endif							/* GJ_PLAIN_INTERNAL_H */
