/*
 * entry_points.c
 *		The SQL functions' C entry points, which the executor calls where
 *		the custom scan does not run (a call in the SELECT list, WITH
 *		ORDINALITY, gpujoin.custom_scan off): each runs its job and stores
 *		every row in the tuplestore InitMaterializedSRF sets up, as every
 *		function in FROM is materialised by PostgreSQL's own function scan.
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/tuplestore.h"

#include "api/api.h"

/* Outside the custom scan: run the job and store every row. */
static Datum
RunMaterialized(FunctionCallInfo fcinfo, GjFunction fn)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	Datum		args[FUNC_MAX_ARGS];
	bool		argnulls[FUNC_MAX_ARGS];
	Oid			argtypes[FUNC_MAX_ARGS];
	GjJobSpec	spec;
	GjJob	   *job;
	bool		restarted;

	for (int i = 0; i < PG_NARGS(); i++)
	{
		args[i] = fcinfo->args[i].value;
		argnulls[i] = fcinfo->args[i].isnull;
		argtypes[i] = get_fn_expr_argtype(fcinfo->flinfo, i);	/* a key witness's type */
	}
	GjJobSpecFromArgs(fn, fcinfo->flinfo->fn_oid, args, argnulls, argtypes, PG_NARGS(), &spec);
	InitMaterializedSRF(fcinfo, 0);
	job = GjJobStart(&spec, CurrentMemoryContext, true);
	while (GjJobNext(job, values, nulls, &restarted))
	{
		if (restarted)
			tuplestore_clear(rsinfo->setResult);	/* the GPU failed part-way */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (restarted)
		tuplestore_clear(rsinfo->setResult);
	GjJobEnd(job, NULL);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(eps_selfjoin);
PG_FUNCTION_INFO_V1(eps_selfjoin_sql);
PG_FUNCTION_INFO_V1(knn_join);
PG_FUNCTION_INFO_V1(knn_selfjoin);
PG_FUNCTION_INFO_V1(knn_join_sql);
PG_FUNCTION_INFO_V1(knn_selfjoin_sql);
PG_FUNCTION_INFO_V1(eps_neighbor_counts);
PG_FUNCTION_INFO_V1(eps_neighbor_counts_sql);
PG_FUNCTION_INFO_V1(eps_neighbors);
PG_FUNCTION_INFO_V1(eps_neighbors_sql);
PG_FUNCTION_INFO_V1(dbscan);
PG_FUNCTION_INFO_V1(dbscan_sql);
PG_FUNCTION_INFO_V1(eps_join);
PG_FUNCTION_INFO_V1(eps_join_sql);
PG_FUNCTION_INFO_V1(eps_join_counts);
PG_FUNCTION_INFO_V1(eps_join_counts_sql);

/* eps_selfjoin(tbl regclass, cols text[], eps, id_col, symmetric) */
Datum
eps_selfjoin(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_EPS_SELFJOIN);
}

/* eps_selfjoin_sql(query text, eps, symmetric) */
Datum
eps_selfjoin_sql(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_EPS_SELFJOIN_SQL);
}

/* knn_join(query_tbl, ref_tbl, cols, k, query_id_col, ref_id_col, ref_cols) */
Datum
knn_join(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_KNN_JOIN);
}

/* knn_selfjoin(tbl, cols, k, id_col) */
Datum
knn_selfjoin(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_KNN_SELFJOIN);
}

/* knn_join_sql(query_sql, ref_sql, k) */
Datum
knn_join_sql(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_KNN_JOIN_SQL);
}

/* knn_selfjoin_sql(query, k) */
Datum
knn_selfjoin_sql(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_KNN_SELFJOIN_SQL);
}

/* eps_neighbor_counts(tbl, cols, eps, id_col) */
Datum
eps_neighbor_counts(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_NEIGHBOR_COUNTS);
}

/* eps_neighbor_counts_sql(query, eps) */
Datum
eps_neighbor_counts_sql(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_NEIGHBOR_COUNTS_SQL);
}

/* eps_neighbors(tbl, cols, eps, id_col) */
Datum
eps_neighbors(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_NEIGHBORS);
}

/* eps_neighbors_sql(query, eps) */
Datum
eps_neighbors_sql(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_NEIGHBORS_SQL);
}

/* dbscan(tbl, cols, eps, minpts, id_col) */
Datum
dbscan(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_DBSCAN);
}

/* dbscan_sql(query, eps, minpts) */
Datum
dbscan_sql(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_DBSCAN_SQL);
}

/* eps_join(r_tbl, s_tbl, cols, eps, r_id_col, s_id_col, s_cols, metric) */
Datum
eps_join(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_EPS_JOIN);
}

/* eps_join_sql(r_query, s_query, eps, metric) */
Datum
eps_join_sql(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_EPS_JOIN_SQL);
}

/* eps_join_counts(r_tbl, s_tbl, cols, eps, r_id_col, s_id_col, s_cols, metric) */
Datum
eps_join_counts(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_JOIN_COUNTS);
}

/* eps_join_counts_sql(r_query, s_query, eps, metric) */
Datum
eps_join_counts_sql(PG_FUNCTION_ARGS)
{
	return RunMaterialized(fcinfo, GJ_FN_JOIN_COUNTS_SQL);
}
