/*
 * bound_filter.c
 *		knn_lateral_bound_filter: a condition on a table with a prepared
 *		statement's parameters in it ($1 ..), their values bound, as SQL.
 *
 * The LATERAL kNN rewrite (plain_knn.c) passes the outer WHERE on the
 * query table to knn_lateral_join as text, query_filter, so that only
 * those rows are query rows (WHERE a.id = 42: one row's neighbours).  A
 * custom plan binds a parameter's value while planning; a generic plan
 * (which the plan cache may choose after five runs of a prepared
 * statement) has none, and used to leave the condition out: every row's
 * neighbours, then one row's kept.  Now the generic plan passes
 *
 *	query_filter => knn_lateral_bound_filter('(id = $1)', ROW($1), tbl)
 *
 * which the executor evaluates with the values.  Here the condition is
 * parsed over tbl with the ROW's types as the parameters', each parameter
 * becomes a constant of its value, and the condition is written out
 * again, as ruleutils writes a view: unqualified columns, each constant a
 * literal cast to its type.  Its text must read back as the same value in
 * this session: floats in full (extra_float_digits 3), dates and
 * intervals in the ISO forms every DateStyle and IntervalStyle read.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/typcache.h"

#include "api/api.h"
#include "compat.h"
#include "dist/dist.h"

typedef struct BoundValues
{
	TupleDesc	td;
	Datum	   *values;
	bool	   *nulls;
} BoundValues;

/* $i: a constant of field i's value */
static Node *
BindParams(Node *n, BoundValues *b)
{
	if (n == NULL)
		return NULL;
	if (IsA(n, Param) && ((Param *) n)->paramkind == PARAM_EXTERN)
	{
		Param	   *p = (Param *) n;
		Form_pg_attribute a;
		int16		len;
		bool		byval;

		if (p->paramid < 1 || p->paramid > b->td->natts)
			elog(ERROR, "knn_lateral_bound_filter: parameter $%d of %d", p->paramid, b->td->natts);
		a = TupleDescAttr(b->td, p->paramid - 1);
		get_typlenbyval(a->atttypid, &len, &byval);
		return (Node *) makeConst(a->atttypid, a->atttypmod, p->paramcollid, len,
								  b->nulls[p->paramid - 1] ? (Datum) 0 : datumCopy(b->values[p->paramid - 1], byval, len),
								  b->nulls[p->paramid - 1], byval);
	}
	return expression_tree_mutator(n, BindParams, (void *) b);
}

/*
 * An analysis error (an unknown column, a parameter past the values) has
 * its position in our "SELECT FROM tbl WHERE filter", not in the caller's
 * query: it is shown as an internal query, as SPI shows its own.
 */
static void
AnalysisErrorPosition(void *arg)
{
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery((const char *) arg);
	}
}

PG_FUNCTION_INFO_V1(knn_lateral_bound_filter);

/* knn_lateral_bound_filter(filter text, params record, tbl regclass) RETURNS text */
Datum
knn_lateral_bound_filter(PG_FUNCTION_ARGS)
{
	char	   *filter;
	HeapTupleHeader rec;
	Oid			relid;
	HeapTupleData tup;
	BoundValues b;
	Oid		   *types;
	char	   *relname;
	char	   *sql;
	List	   *raw = NIL;
	Query	   *q;
	Node	   *cond;
	char	   *out;
	int			nest;
	ErrorContextCallback cb;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("knn_lateral_bound_filter: filter, params and tbl must not be NULL")));
	filter = text_to_cstring(PG_GETARG_TEXT_PP(0));
	rec = PG_GETARG_HEAPTUPLEHEADER(1);
	relid = PG_GETARG_OID(2);
	relname = get_rel_name(relid);
	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("knn_lateral_bound_filter: relation %u does not exist", relid)));

	b.td = lookup_rowtype_tupdesc_copy(HeapTupleHeaderGetTypeId(rec), HeapTupleHeaderGetTypMod(rec));
	tup.t_len = HeapTupleHeaderGetDatumLength(rec);
	ItemPointerSetInvalid(&tup.t_self);
	tup.t_tableOid = InvalidOid;
	tup.t_data = rec;
	b.values = palloc(sizeof(Datum) * Max(b.td->natts, 1));
	b.nulls = palloc(sizeof(bool) * Max(b.td->natts, 1));
	heap_deform_tuple(&tup, b.td, b.values, b.nulls);
	types = palloc(sizeof(Oid) * Max(b.td->natts, 1));
	for (int i = 0; i < b.td->natts; i++)
		types[i] = TupleDescAttr(b.td, i)->atttypid;

	/* one condition on tbl's columns, the parameters of these types, and nothing else */
	sql = psprintf("SELECT FROM %s WHERE %s",
				   quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), relname), filter);
	raw = GjParseCondition(sql, "knn_lateral_bound_filter", "filter", relname);
	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("knn_lateral_bound_filter: filter must be one condition on %s's columns", relname)));
	cb.callback = AnalysisErrorPosition;
	cb.arg = sql;
	cb.previous = error_context_stack;
	error_context_stack = &cb;
	q = parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql, types, b.td->natts, NULL);
	error_context_stack = cb.previous;
	if (q->commandType != CMD_SELECT || q->targetList != NIL || list_length(q->rtable) != 1 ||
		q->jointree == NULL || list_length(q->jointree->fromlist) != 1 || q->jointree->quals == NULL ||
		q->setOperations != NULL || q->groupClause != NIL || q->havingQual != NULL || q->hasAggs ||
		q->hasWindowFuncs || q->sortClause != NIL || q->limitCount != NULL || q->limitOffset != NULL ||
		q->distinctClause != NIL || q->rowMarks != NIL || q->cteList != NIL || q->hasTargetSRFs)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("knn_lateral_bound_filter: filter must be one condition on %s's columns", relname)));
	cond = BindParams(q->jointree->quals, &b);

	nest = NewGUCNestLevel();
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("datestyle", "ISO", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	out = deparse_expression(cond, deparse_context_for(relname, relid), false, false);
	AtEOXact_GUC(true, nest);
	PG_RETURN_TEXT_P(cstring_to_text(out));
}
