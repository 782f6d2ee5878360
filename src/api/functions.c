/*
 * functions.c
 *		The SQL-callable functions: their arguments checked into a job spec,
 *		and the entry points the executor calls where the custom scan does
 *		not run.
 *
 * Both ways of running a function share GjJobSpecFromArgs, so a call in
 * the SELECT list, a call with gpujoin.custom_scan off and a call the
 * custom scan takes check the same things and raise the same errors.  The
 * entry points below are the fallback: they materialise the rows into the
 * tuplestore that InitMaterializedSRF sets up (as every function in FROM is
 * materialised by PostgreSQL's own function scan).
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "gpujoin.h"

/*
 * The functions by their C symbol (pg_proc.prosrc) and argument count.
 * Since 0.6 every one ends with metric, use_spheroid.  Older definitions
 * still call this library until ALTER EXTENSION UPDATE: 0.4 and 0.5 end
 * with metric (use_spheroid as its default), 0.3 one argument shorter
 * again (l2).  The two-table eps functions came in 0.5, with metric.
 */
static const struct
{
	GjFunction	fn;
	const char *symbol;
	int			nargs;
	GjShape		shape;
}			functions[] =
{
	{GJ_FN_EPS_SELFJOIN, "eps_selfjoin", 7, GJ_SHAPE_PAIRS},
	{GJ_FN_EPS_SELFJOIN_SQL, "eps_selfjoin_sql", 5, GJ_SHAPE_PAIRS},
	{GJ_FN_KNN_JOIN, "knn_join", 9, GJ_SHAPE_KNN},
	{GJ_FN_KNN_SELFJOIN, "knn_selfjoin", 6, GJ_SHAPE_KNN},
	{GJ_FN_KNN_JOIN_SQL, "knn_join_sql", 5, GJ_SHAPE_KNN},
	{GJ_FN_KNN_SELFJOIN_SQL, "knn_selfjoin_sql", 4, GJ_SHAPE_KNN},
	{GJ_FN_NEIGHBOR_COUNTS, "eps_neighbor_counts", 6, GJ_SHAPE_COUNTS},
	{GJ_FN_NEIGHBOR_COUNTS_SQL, "eps_neighbor_counts_sql", 4, GJ_SHAPE_COUNTS},
	{GJ_FN_NEIGHBORS, "eps_neighbors", 6, GJ_SHAPE_LISTS},
	{GJ_FN_NEIGHBORS_SQL, "eps_neighbors_sql", 4, GJ_SHAPE_LISTS},
	{GJ_FN_DBSCAN, "dbscan", 7, GJ_SHAPE_DBSCAN},
	{GJ_FN_DBSCAN_SQL, "dbscan_sql", 5, GJ_SHAPE_DBSCAN},
	{GJ_FN_EPS_JOIN, "eps_join", 9, GJ_SHAPE_PAIRS},
	{GJ_FN_EPS_JOIN_SQL, "eps_join_sql", 5, GJ_SHAPE_PAIRS},
	{GJ_FN_JOIN_COUNTS, "eps_join_counts", 9, GJ_SHAPE_COUNTS},
	{GJ_FN_JOIN_COUNTS_SQL, "eps_join_counts_sql", 5, GJ_SHAPE_COUNTS},
};

/*
 * Which of our functions funcid is: a C function of this library (probin
 * naming gpujoin) whose symbol is one of the above.
 */
GjFunction
GjLookupFunction(Oid funcid)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	GjFunction	fn = GJ_FN_NONE;

	if (!HeapTupleIsValid(tup))
		return GJ_FN_NONE;
	if (((Form_pg_proc) GETSTRUCT(tup))->prolang == ClanguageId)
	{
		bool		isnull;
		Datum		bin = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_probin, &isnull);
		Datum		src;
		char	   *probin,
				   *prosrc,
				   *base;

		if (!isnull)
		{
			probin = TextDatumGetCString(bin);
			base = strrchr(probin, '/');
			base = base != NULL ? base + 1 : probin;
			src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
			if (!isnull && (strcmp(base, "gpujoin") == 0 ||
							strcmp(base, "gpujoin" DLSUFFIX) == 0))
			{
				prosrc = TextDatumGetCString(src);
				for (int i = 0; i < lengthof(functions); i++)
					if (strcmp(prosrc, functions[i].symbol) == 0)
						fn = functions[i].fn;
				pfree(prosrc);
			}
			pfree(probin);
		}
	}
	ReleaseSysCache(tup);
	return fn;
}

GjShape
GjFunctionShape(GjFunction fn)
{
	for (int i = 0; i < lengthof(functions); i++)
		if (functions[i].fn == fn)
			return functions[i].shape;
	return GJ_SHAPE_PAIRS;
}

int
GjOutputColumns(GjFunction fn)
{
	if (fn == GJ_FN_NONE)
		return 0;
	switch (GjFunctionShape(fn))
	{
		case GJ_SHAPE_PAIRS:
		case GJ_SHAPE_LISTS:
		case GJ_SHAPE_DBSCAN:
			return 3;
		case GJ_SHAPE_KNN:
			return 4;
		case GJ_SHAPE_COUNTS:
			return 2;
	}
	return 0;
}

/*
 * Can an equality qual on output column `column` restrict the query side?
 * Both ids of a self-join; the query id of a kNN join (a filter on the
 * reference id would change which neighbours rank first).
 */
bool
GjFilterableColumn(GjFunction fn, int column)
{
	switch (fn)
	{
		case GJ_FN_EPS_SELFJOIN:
		case GJ_FN_EPS_SELFJOIN_SQL:
		case GJ_FN_EPS_JOIN:
		case GJ_FN_EPS_JOIN_SQL:
			return column == 0 || column == 1;	/* eps_join: fewer r or s rows read */
		case GJ_FN_JOIN_COUNTS:
		case GJ_FN_JOIN_COUNTS_SQL:
			return column == 0;
		case GJ_FN_KNN_JOIN:
		case GJ_FN_KNN_SELFJOIN:
		case GJ_FN_KNN_JOIN_SQL:
		case GJ_FN_KNN_SELFJOIN_SQL:
			return column == 0;
		case GJ_FN_NEIGHBOR_COUNTS:
		case GJ_FN_NEIGHBOR_COUNTS_SQL:
		case GJ_FN_NEIGHBORS:
		case GJ_FN_NEIGHBORS_SQL:
			return column == 0;	/* a row's count or list needs that row's probe */
		default:
			/* dbscan: a row's cluster depends on every row */
			break;
	}
	return false;
}

static inline void
CheckNotNull(const bool *nulls, int argno, const char *name)
{
	if (nulls[argno])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name)));
}

static inline void
CheckEps(double eps)
{
	if (isnan(eps) || isinf(eps) || eps <= 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must be a positive finite number, not %g", eps)));
}

static inline void
CheckMinpts(int32 minpts)
{
	if (minpts < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("minpts must be at least 1, not %d", minpts)));
}

/* The metric argument: l2 (the default) or cosine. */
static GjMetric
MetricFromArg(const Datum *values, const bool *nulls, int argno)
{
	char	   *m;

	if (argno < 0)
		return GJ_METRIC_L2;	/* a 0.3 definition: no metric argument */
	CheckNotNull(nulls, argno, "metric");
	m = TextDatumGetCString(values[argno]);
	if (strcmp(m, "l2") == 0)
		return GJ_METRIC_L2;
	if (strcmp(m, "cosine") == 0)
		return GJ_METRIC_COSINE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("metric must be l2 or cosine, not \"%s\"", m)));
	return GJ_METRIC_L2;		/* not reached */
}

static inline void
CheckK(int32 k)
{
	if (k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 1, not %d", k)));
}

/* The relation form's input from (tbl, cols, id_col) arguments. */
static void
RelationInput(GjInputSpec *in, const char *fname, const Datum *values,
			  const bool *nulls, int tbl_arg, Datum cols, int id_arg)
{
	memset(in, 0, sizeof(*in));
	in->fname = fname;
	in->relid = DatumGetObjectId(values[tbl_arg]);
	in->cols = DatumGetArrayTypePCopy(cols);
	in->id_col = nulls[id_arg] ? NULL : DatumGetTextPCopy(values[id_arg]);
}

/* The query form's input. */
static void
QueryInput(GjInputSpec *in, const char *fname, Datum query)
{
	memset(in, 0, sizeof(*in));
	in->fname = fname;
	in->is_query = true;
	in->query = TextDatumGetCString(query);
}

/*
 * The two-table functions (knn_join, eps_join, eps_join_counts): arguments
 * 0 and 1 the query (r) and reference (s) tables, 2 cols, 4 and 5 their
 * id columns, 6 the s side's cols (NULL: cols).
 */
static void
TwoRelationInputs(GjJobSpec *spec, const Datum *values, const bool *nulls)
{
	RelationInput(&spec->query, spec->fname, values, nulls, 0, values[2], 4);
	RelationInput(&spec->input, spec->fname, values, nulls, 1,
				  nulls[6] ? values[2] : values[6], 5);
	spec->has_query = true;
}

/* Their _sql forms: arguments 0 and 1 the two queries. */
static void
TwoQueryInputs(GjJobSpec *spec, const Datum *values)
{
	QueryInput(&spec->query, spec->fname, values[0]);
	QueryInput(&spec->input, spec->fname, values[1]);
	spec->has_query = true;
}

void
GjJobSpecFromArgs(GjFunction fn, Oid funcid, const Datum *values,
				  const bool *nulls, int nargs, GjJobSpec *spec)
{
	int			metric_arg = -1,
				spheroid_arg = -1;

	memset(spec, 0, sizeof(*spec));
	spec->fn = fn;
	spec->filter_column = GJ_FILTER_NONE;
	for (int i = 0; i < lengthof(functions); i++)
		if (functions[i].fn == fn)
		{
			spec->fname = functions[i].symbol;
			spec->shape = functions[i].shape;
			spec->is_knn = functions[i].shape == GJ_SHAPE_KNN;
			if (nargs == functions[i].nargs)
			{
				metric_arg = nargs - 2;
				spheroid_arg = nargs - 1;
			}
			else if (nargs == functions[i].nargs - 1)
				metric_arg = nargs - 1;
			else if (nargs != functions[i].nargs - 2)
				elog(ERROR, "%s: expected %d arguments, got %d",
					 spec->fname, functions[i].nargs, nargs);
		}
	if (spec->fname == NULL)
		elog(ERROR, "gpujoin: not a gpujoin function");

	switch (fn)
	{
		case GJ_FN_EPS_SELFJOIN:
			/* (tbl regclass, cols text[], eps, id_col, symmetric) */
			CheckNotNull(nulls, 0, "tbl");
			CheckNotNull(nulls, 1, "cols");
			CheckNotNull(nulls, 2, "eps");
			CheckNotNull(nulls, 4, "symmetric");
			spec->eps = DatumGetFloat8(values[2]);
			CheckEps(spec->eps);
			spec->symmetric = DatumGetBool(values[4]);
			RelationInput(&spec->input, spec->fname, values, nulls, 0, values[1], 3);
			break;
		case GJ_FN_EPS_SELFJOIN_SQL:
			/* (query, eps, symmetric) */
			CheckNotNull(nulls, 0, "query");
			CheckNotNull(nulls, 1, "eps");
			CheckNotNull(nulls, 2, "symmetric");
			spec->eps = DatumGetFloat8(values[1]);
			CheckEps(spec->eps);
			spec->symmetric = DatumGetBool(values[2]);
			QueryInput(&spec->input, spec->fname, values[0]);
			break;
		case GJ_FN_KNN_JOIN:
			/* (query_tbl, ref_tbl, cols, k, query_id_col, ref_id_col, ref_cols) */
			CheckNotNull(nulls, 0, "query_tbl");
			CheckNotNull(nulls, 1, "ref_tbl");
			CheckNotNull(nulls, 2, "cols");
			CheckNotNull(nulls, 3, "k");
			spec->k = DatumGetInt32(values[3]);
			CheckK(spec->k);
			TwoRelationInputs(spec, values, nulls);
			break;
		case GJ_FN_KNN_SELFJOIN:
			/* (tbl, cols, k, id_col) */
			CheckNotNull(nulls, 0, "tbl");
			CheckNotNull(nulls, 1, "cols");
			CheckNotNull(nulls, 2, "k");
			spec->k = DatumGetInt32(values[2]);
			CheckK(spec->k);
			RelationInput(&spec->input, spec->fname, values, nulls, 0, values[1], 3);
			break;
		case GJ_FN_KNN_JOIN_SQL:
			/* (query_sql, ref_sql, k) */
			CheckNotNull(nulls, 0, "query_sql");
			CheckNotNull(nulls, 1, "ref_sql");
			CheckNotNull(nulls, 2, "k");
			spec->k = DatumGetInt32(values[2]);
			CheckK(spec->k);
			TwoQueryInputs(spec, values);
			break;
		case GJ_FN_KNN_SELFJOIN_SQL:
			/* (query, k) */
			CheckNotNull(nulls, 0, "query");
			CheckNotNull(nulls, 1, "k");
			spec->k = DatumGetInt32(values[1]);
			CheckK(spec->k);
			QueryInput(&spec->input, spec->fname, values[0]);
			break;
		case GJ_FN_NEIGHBOR_COUNTS:
		case GJ_FN_NEIGHBORS:
			/* (tbl, cols, eps, id_col) */
			CheckNotNull(nulls, 0, "tbl");
			CheckNotNull(nulls, 1, "cols");
			CheckNotNull(nulls, 2, "eps");
			spec->eps = DatumGetFloat8(values[2]);
			CheckEps(spec->eps);
			RelationInput(&spec->input, spec->fname, values, nulls, 0, values[1], 3);
			break;
		case GJ_FN_NEIGHBOR_COUNTS_SQL:
		case GJ_FN_NEIGHBORS_SQL:
			/* (query, eps) */
			CheckNotNull(nulls, 0, "query");
			CheckNotNull(nulls, 1, "eps");
			spec->eps = DatumGetFloat8(values[1]);
			CheckEps(spec->eps);
			QueryInput(&spec->input, spec->fname, values[0]);
			break;
		case GJ_FN_DBSCAN:
			/* (tbl, cols, eps, minpts, id_col) */
			CheckNotNull(nulls, 0, "tbl");
			CheckNotNull(nulls, 1, "cols");
			CheckNotNull(nulls, 2, "eps");
			CheckNotNull(nulls, 3, "minpts");
			spec->eps = DatumGetFloat8(values[2]);
			CheckEps(spec->eps);
			spec->minpts = DatumGetInt32(values[3]);
			CheckMinpts(spec->minpts);
			RelationInput(&spec->input, spec->fname, values, nulls, 0, values[1], 4);
			break;
		case GJ_FN_DBSCAN_SQL:
			/* (query, eps, minpts) */
			CheckNotNull(nulls, 0, "query");
			CheckNotNull(nulls, 1, "eps");
			CheckNotNull(nulls, 2, "minpts");
			spec->eps = DatumGetFloat8(values[1]);
			CheckEps(spec->eps);
			spec->minpts = DatumGetInt32(values[2]);
			CheckMinpts(spec->minpts);
			QueryInput(&spec->input, spec->fname, values[0]);
			break;
		case GJ_FN_EPS_JOIN:
		case GJ_FN_JOIN_COUNTS:
			/* (r_tbl, s_tbl, cols, eps, r_id_col, s_id_col, s_cols) */
			CheckNotNull(nulls, 0, "r_tbl");
			CheckNotNull(nulls, 1, "s_tbl");
			CheckNotNull(nulls, 2, "cols");
			CheckNotNull(nulls, 3, "eps");
			spec->eps = DatumGetFloat8(values[3]);
			CheckEps(spec->eps);
			TwoRelationInputs(spec, values, nulls);
			break;
		case GJ_FN_EPS_JOIN_SQL:
		case GJ_FN_JOIN_COUNTS_SQL:
			/* (r_query, s_query, eps) */
			CheckNotNull(nulls, 0, "r_query");
			CheckNotNull(nulls, 1, "s_query");
			CheckNotNull(nulls, 2, "eps");
			spec->eps = DatumGetFloat8(values[2]);
			CheckEps(spec->eps);
			TwoQueryInputs(spec, values);
			break;
		case GJ_FN_NONE:
			break;
	}
	/*
	 * The engines compare squared distances with eps2: eps * eps, or for
	 * the cosine distance of normalised rows, which is half their squared
	 * distance, 2 * eps (exact in float64).
	 */
	spec->metric = MetricFromArg(values, nulls, metric_arg);
	spec->eps2 = spec->metric == GJ_METRIC_COSINE ? 2.0 * spec->eps : spec->eps * spec->eps;
	spec->input.metric = spec->query.metric = spec->metric;
	/* the kNN joins rank on the sphere, as PostGIS's <-> (their default) */
	spec->use_spheroid = !spec->is_knn;
	if (spheroid_arg >= 0)
	{
		CheckNotNull(nulls, spheroid_arg, "use_spheroid");
		spec->use_spheroid = DatumGetBool(values[spheroid_arg]);
	}
	spec->spheroid_given = spec->use_spheroid != !spec->is_knn;
	/* the parallel read calls our aggregate by this schema, not search_path */
	spec->input.nsp = spec->query.nsp = get_func_namespace(funcid);
}

/* Outside the custom scan: run the job and store every row. */
static Datum
RunMaterialized(FunctionCallInfo fcinfo, GjFunction fn)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	Datum		args[FUNC_MAX_ARGS];
	bool		argnulls[FUNC_MAX_ARGS];
	GjJobSpec	spec;
	GjJob	   *job;
	bool		restarted;

	for (int i = 0; i < PG_NARGS(); i++)
	{
		args[i] = fcinfo->args[i].value;
		argnulls[i] = fcinfo->args[i].isnull;
	}
	GjJobSpecFromArgs(fn, fcinfo->flinfo->fn_oid, args, argnulls, PG_NARGS(), &spec);
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
