/*
 * api.h
 *		What the SQL-facing files share (api/): which gpujoin function a
 *		call is, its arguments checked into a job, the custom scan that
 *		streams a call's rows, and the planner's row estimates.
 *
 * Every function is one job (job/job.h): functions.c and args.c turn a
 * call into a GjJobSpec; the custom scan (custom_scan.c) returns the job's
 * rows to the executor as the engine makes them, and where the planner
 * cannot use it the function itself materialises them (entry_points.c);
 * support.c gives the planner row estimates.
 */
#ifndef GJ_API_H
#define GJ_API_H

#include "fmgr.h"
#include "nodes/primnodes.h"

#include "job/job.h"

/* The SQL functions a job can be. */
typedef enum GjFunction
{
	GJ_FN_NONE = 0,
	GJ_FN_EPS_SELFJOIN,
	GJ_FN_EPS_SELFJOIN_SQL,
	GJ_FN_KNN_JOIN,
	GJ_FN_KNN_SELFJOIN,
	GJ_FN_KNN_JOIN_SQL,
	GJ_FN_KNN_SELFJOIN_SQL,
	GJ_FN_NEIGHBOR_COUNTS,
	GJ_FN_NEIGHBOR_COUNTS_SQL,
	GJ_FN_NEIGHBORS,
	GJ_FN_NEIGHBORS_SQL,
	GJ_FN_DBSCAN,
	GJ_FN_DBSCAN_SQL,
	GJ_FN_EPS_JOIN,
	GJ_FN_EPS_JOIN_SQL,
	GJ_FN_JOIN_COUNTS,
	GJ_FN_JOIN_COUNTS_SQL
} GjFunction;

/*
 * functions.c: which gpujoin function funcid is (GJ_FN_NONE for any
 * other), its C symbol (the SQL name messages use) and argument count of
 * this version, the shape of its rows and how many columns they have,
 * whether it joins two sets, and which output column (0 or 1) an equality
 * qual can restrict the query side by.
 */
extern GjFunction GjLookupFunction(Oid funcid);
extern const char *GjFunctionName(GjFunction fn);
extern int	GjFunctionArgs(GjFunction fn);
extern bool GjTakesParams(GjFunction fn);
extern GjShape GjFunctionShape(GjFunction fn);
extern int	GjOutputColumns(GjFunction fn);
extern bool GjTwoSets(GjFunction fn);
extern bool GjFilterableColumn(GjFunction fn, int column);
extern int	GjKeyedArgs(Oid funcid, int map[FUNC_MAX_ARGS], int pos[2]);
extern bool GjKeyedFunction(Oid funcid);
extern bool GjPgOrderFunction(Oid funcid);
extern int	GjArgPosition(Oid funcid, const char *name);
extern List *GjParseCondition(const char *sql, const char *fname, const char *argname, const char *table);

/*
 * args.c: check arguments (values/nulls as the function receives them,
 * defaults filled in, argtypes their types) and fill spec; ERRORs as the
 * functions raise them.  Strings and arrays are copied into the current
 * memory context.  A keyed form's witnesses are taken out first, so the
 * other arguments are where the classic form has them (also for the
 * planner's estimate: GjArgsWithoutKeys).
 */
extern void GjJobSpecFromArgs(GjFunction fn, Oid funcid, const Datum *values,
							  const bool *nulls, const Oid *argtypes, int nargs,
							  GjJobSpec *spec);
extern List *GjArgsWithoutKeys(Oid funcid, List *args);

/* custom_scan.c: the planner hook, the gpujoin.custom_scan setting. */
extern void GjCustomScanInit(void);

/* support.c: the planner's row estimate for a call of ours. */
extern bool GjEstimateRows(FuncExpr *fexpr, double *rows);

#endif							/* GJ_API_H */
