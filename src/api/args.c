/*
 * args.c
 *		A call's arguments checked into a job spec.
 *
 * Both ways of running a function share GjJobSpecFromArgs, so a call in
 * the SELECT list, a call with gpujoin.custom_scan off and a call the
 * custom scan takes check the same things and raise the same errors.
 * Older definitions of a function still call this library until ALTER
 * EXTENSION UPDATE, with fewer arguments (functions.c's table says which).
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "nodes/params.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "api/api.h"

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
	/* any case, as PostgreSQL's own settings take their names */
	if (pg_strcasecmp(m, "l2") == 0)
		return GJ_METRIC_L2;
	if (pg_strcasecmp(m, "cosine") == 0)
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

/*
 * params, a row of any types: the values of $1, $2, ... of the _sql
 * form's queries (both of a join's), typed as the row's fields are, as a
 * prepared statement's parameters are.
 */
static void
QueryParams(GjJobSpec *spec, Datum params)
{
	HeapTupleHeader th = DatumGetHeapTupleHeader(params);
	TupleDesc	td = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(th),
											HeapTupleHeaderGetTypMod(th));
	HeapTupleData tuple;
	int			n = td->natts;
	Datum	   *values = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(n, 1));
	Oid		   *types = palloc(sizeof(Oid) * Max(n, 1));
	ParamListInfo list;

	tuple.t_len = HeapTupleHeaderGetDatumLength(th);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = th;
	heap_deform_tuple(&tuple, td, values, nulls);
	list = makeParamList(n);
	for (int i = 0; i < n; i++)
	{
		Form_pg_attribute att = TupleDescAttr(td, i);

		types[i] = att->atttypid;
		list->params[i].isnull = nulls[i];
		list->params[i].value = nulls[i] ? (Datum) 0 :
			datumCopy(values[i], att->attbyval, att->attlen);
		list->params[i].pflags = PARAM_FLAG_CONST;
		list->params[i].ptype = types[i];
	}
	ReleaseTupleDesc(td);
	spec->input.nparams = spec->query.nparams = n;
	spec->input.param_types = spec->query.param_types = types;
	spec->input.params = spec->query.params = list;
}

/* A side's keys, of the witness's type (kept), or not returned (any type). */
static GjKeys *
MakeKeys(Oid witness, bool kept)
{
	GjKeys	   *keys = palloc0(sizeof(GjKeys));

	keys->kept = kept;
	if (kept)
	{
		if (!OidIsValid(witness))
			elog(ERROR, "gpujoin: the key's type is not known in this call");
		keys->type = witness;	/* a domain stays one: the result's type */
	}
	return keys;
}

/* The keyed form's witnesses (kpos) give the sides their keys. */
static void
SetKeys(GjJobSpec *spec, GjFunction fn, const Oid *argtypes, const int kpos[2])
{
	if (!GjTwoSets(fn))
	{
		spec->input.keys = MakeKeys(argtypes[kpos[0]], true);
		return;
	}
	/* knn_join, eps_join: both sides' keys; eps_join_counts returns only r's */
	spec->query.keys = MakeKeys(argtypes[kpos[0]], true);
	spec->input.keys = kpos[1] >= 0 ? MakeKeys(argtypes[kpos[1]], true) :
		MakeKeys(InvalidOid, false);
}

/* The planner's view of a call's arguments: a keyed form's as the classic form's. */
List *
GjArgsWithoutKeys(Oid funcid, List *args)
{
	int			map[FUNC_MAX_ARGS],
				kpos[2],
				n = GjKeyedArgs(funcid, map, kpos);
	List	   *out = NIL;

	if (n == 0)
		return args;
	for (int j = 0; j < n; j++)
		out = lappend(out, list_nth(args, map[j]));
	return out;
}

/*
 * knn_lateral_join's ref_filter and query_filter: the rewrite's WHERE on
 * the reference table alone, and the outer query's on the query table,
 * deparsed (plain_knn.c), which dist/ puts in the queries that read the
 * rows (GjDistSource).  Each must be one condition and nothing else:
 * "SELECT FROM t WHERE <filter>" parses to a SELECT with a WHERE and no
 * other clause, so it cannot end the WHERE and add a LIMIT, a UNION or
 * another statement.  It runs as the caller, as their query.
 */
static char *
RowFilter(const char *fname, const char *argname, const char *table, Datum d)
{
	char	   *filter = TextDatumGetCString(d);
	List	   *parsed = GjParseCondition(psprintf("SELECT FROM gpujoin_filtered WHERE %s", filter),
										  fname, argname, table);
	SelectStmt *s;

	s = list_length(parsed) == 1 && IsA(linitial_node(RawStmt, parsed)->stmt, SelectStmt) ?
		(SelectStmt *) linitial_node(RawStmt, parsed)->stmt : NULL;
	if (s == NULL || s->whereClause == NULL || s->targetList != NIL ||
		list_length(s->fromClause) != 1 || s->distinctClause != NIL || s->intoClause != NULL ||
		s->groupClause != NIL || s->havingClause != NULL || s->windowClause != NIL ||
		s->valuesLists != NIL || s->sortClause != NIL || s->limitOffset != NULL ||
		s->limitCount != NULL || s->lockingClause != NIL || s->withClause != NULL ||
		s->op != SETOP_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: %s must be one condition on %s's columns", fname, argname, table)));
	return filter;
}

/* The position of funcid's argument of this name where the call gives it, not NULL; else -1. */
static int
GivenArg(Oid funcid, const char *name, const bool *argnulls, int nargs)
{
	int			i = GjArgPosition(funcid, name);

	return i >= 0 && i < nargs && !argnulls[i] ? i : -1;
}

/*
 * knn_lateral_join's ref_order: column names of the references, at least
 * one, none NULL (dist/ checks them against the table), with a match only.
 */
static void
RefOrder(const GjJobSpec *spec, GjFunction fn, bool match, Datum d, char ***cols, int *n)
{
	Datum	   *elems;
	bool	   *nulls;

	if (!match)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: ref_order needs %s", spec->fname,
						fn == GJ_FN_KNN_JOIN ? "query_match and ref_match" : "match_col")));
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, n);
	if (*n < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: ref_order must name at least one column", spec->fname)));
	*cols = palloc(sizeof(char *) * *n);
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: ref_order must not hold a NULL", spec->fname)));
		(*cols)[i] = TextDatumGetCString(elems[i]);
	}
}

/*
 * The raw parse of sql, "SELECT FROM t WHERE <a condition given as
 * fname's argument argname>": a syntax error is that argument's error,
 * the parser's message in the detail (its position would point into the
 * caller's query).
 */
List *
GjParseCondition(const char *sql, const char *fname, const char *argname, const char *table)
{
	MemoryContext cxt = CurrentMemoryContext;
	List	   *parsed = NIL;

	PG_TRY();
	{
		parsed = raw_parser(sql, RAW_PARSE_DEFAULT);
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(cxt);
		e = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: %s must be one condition on %s's columns", fname, argname, table),
				 errdetail("%s", e->message)));
	}
	PG_END_TRY();
	return parsed;
}

/* The call of fn (funcid) with these arguments as a job. */
void
GjJobSpecFromArgs(GjFunction fn, Oid funcid, const Datum *args,
				  const bool *argnulls, const Oid *argtypes, int nargs, GjJobSpec *spec)
{
	int			metric_arg = -1,
				spheroid_arg = -1,
				params_arg = -1,
				full = GjFunctionArgs(fn),
				map[FUNC_MAX_ARGS],
				kpos[2],
				nclassic = GjKeyedArgs(funcid, map, kpos),
				nargs_given = nargs,
				filter_arg;
	char	   *filter = NULL,
			   *query_filter = NULL,
			   *query_match = NULL,
			   *ref_match = NULL;
	bool		keep_alone = false;
	char	  **ref_order = NULL;
	int			ref_order_n = 0;
	Datum		values[FUNC_MAX_ARGS];
	bool		nulls[FUNC_MAX_ARGS];

	if (nargs > FUNC_MAX_ARGS)
		elog(ERROR, "gpujoin: %d arguments", nargs);
	if (nclassic > 0)
	{
		/* a keyed form: its arguments where the classic form has them */
		for (int j = 0; j < nclassic; j++)
		{
			values[j] = args[map[j]];
			nulls[j] = argnulls[map[j]];
		}
		nargs = nclassic;
	}
	else
	{
		memcpy(values, args, sizeof(Datum) * nargs);
		memcpy(nulls, argnulls, sizeof(bool) * nargs);
	}

	memset(spec, 0, sizeof(*spec));
	spec->filter_column = GJ_FILTER_NONE;
	spec->fname = GjFunctionName(fn);
	if (spec->fname == NULL)
		elog(ERROR, "gpujoin: not a gpujoin function");
	if ((fn == GJ_FN_KNN_JOIN || fn == GJ_FN_KNN_SELFJOIN) && GjPgOrderFunction(funcid))
	{
		spec->pg_order = true;
		spec->fname = fn == GJ_FN_KNN_JOIN ? "knn_lateral_join" : "knn_lateral_selfjoin";
		/* 0.11's knn_lateral_join, 0.13's knn_lateral_selfjoin */
		if ((filter_arg = GivenArg(funcid, "ref_filter", argnulls, nargs_given)) >= 0)
			filter = RowFilter(spec->fname, "ref_filter",
							   fn == GJ_FN_KNN_JOIN ? "ref_tbl" : "tbl", args[filter_arg]);
		if ((filter_arg = GivenArg(funcid, "query_filter", argnulls, nargs_given)) >= 0)
			query_filter = RowFilter(spec->fname, "query_filter",
									 fn == GJ_FN_KNN_JOIN ? "query_tbl" : "tbl", args[filter_arg]);
		/* 0.14: the rows of the query row's own kind (dist/ checks the columns) */
		if ((filter_arg = GivenArg(funcid, fn == GJ_FN_KNN_JOIN ? "query_match" : "match_col",
								   argnulls, nargs_given)) >= 0)
			query_match = TextDatumGetCString(args[filter_arg]);
		if (fn != GJ_FN_KNN_JOIN)
			ref_match = query_match;
		else if ((filter_arg = GivenArg(funcid, "ref_match", argnulls, nargs_given)) >= 0)
			ref_match = TextDatumGetCString(args[filter_arg]);
		if ((filter_arg = GivenArg(funcid, "keep_alone", argnulls, nargs_given)) >= 0)
			keep_alone = DatumGetBool(args[filter_arg]);
		if ((query_match == NULL) != (ref_match == NULL))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: query_match and ref_match must be given together", spec->fname)));
		if (keep_alone && query_match == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: keep_alone needs %s", spec->fname,
							fn == GJ_FN_KNN_JOIN ? "query_match and ref_match" : "match_col")));
		if ((filter_arg = GivenArg(funcid, "ref_order", argnulls, nargs_given)) >= 0)
			RefOrder(spec, fn, query_match != NULL, args[filter_arg], &ref_order, &ref_order_n);
	}
	spec->shape = GjFunctionShape(fn);
	spec->is_knn = spec->shape == GJ_SHAPE_KNN;
	if (GjTakesParams(fn))
	{
		/* params last (0.7); the arguments before it as in 0.6 */
		if (nargs == full)
			params_arg = --nargs;
		full--;
	}
	if (nargs == full)
	{
		metric_arg = nargs - 2;
		spheroid_arg = nargs - 1;
	}
	else if (nargs == full - 1)
		metric_arg = nargs - 1;
	else if (nargs != full - 2)
		elog(ERROR, "%s: expected %d arguments, got %d",
			 spec->fname, GjFunctionArgs(fn), nargs);

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
	if (params_arg >= 0 && !nulls[params_arg])
		QueryParams(spec, values[params_arg]);
	if (nclassic > 0)
		SetKeys(spec, fn, argtypes, kpos);
	/* the parallel read calls our aggregate by this schema, not search_path */
	spec->input.nsp = spec->query.nsp = get_func_namespace(funcid);
	spec->input.where = filter;	/* the references' (knn_join's input is ref_tbl) */
	spec->query.where = query_filter;
	spec->input.match = ref_match;
	spec->query.match = query_match;
	spec->keep_alone = keep_alone;
	spec->ref_order = ref_order;
	spec->ref_order_n = ref_order_n;
	if ((query_filter != NULL || filter != NULL) && fn == GJ_FN_KNN_SELFJOIN)
	{
		/*
		 * knn_lateral_selfjoin's query rows, some of the table's, or its
		 * references: two sides, each row's nearest others among the
		 * references (the row itself is one only where ref_filter holds on it)
		 */
		spec->query = spec->input;
		spec->query.where = query_filter;
		spec->has_query = true;
		spec->others = true;
	}
}
