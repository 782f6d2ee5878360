/*
 * custom_scan.c
 *		gpujoin's functions in FROM, streamed: a custom scan that takes the
 *		place of PostgreSQL's function scan.
 *
 * PostgreSQL 15 runs every function in FROM to completion into a tuplestore
 * before the first row moves on (nodeFunctionscan.c), whatever the
 * function's mode: a join of millions of pairs is written to memory or temp
 * files and read back, and LIMIT 10 waits for all of it.  So the planner
 * hook below offers, for a FROM item that is a single call of one of our
 * functions, a CustomScan path that returns each row as the engine makes
 * it.  The plan keeps the whole call (FuncExpr) in custom_exprs: LATERAL
 * references become executor parameters there, and the plan depends on the
 * function like any other.  Arguments are evaluated at the first fetch, so
 * parameters and outer references work, and a rescan starts a new job.
 *
 * Lifecycle.  The job starts at the first fetch and ends when the rows run
 * out, at a rescan, or in EndCustomScan, which runs when the executor stops
 * early too (LIMIT, EXISTS, a closed cursor): the engine's threads and
 * device work stop at once (GjJobEnd).  ShutdownCustomScan is deliberately
 * not used: a cursor calls it after every FETCH.  An ERROR skips
 * EndCustomScan; the job's memory-context callback cleans up then.
 *
 * Restriction.  An equality (a = 42) or = ANY qual on an id column that
 * can restrict the query side (GjFilterableColumn), whose other side is
 * free of this scan's columns and of volatile functions, is evaluated with
 * the arguments and restricts the join to the listed rows (job/plan.c).  The
 * qual stays in the plan as well, so it is rechecked on every row.  Not for
 * the keyed forms (key => ...), whose keys the qual filters as they come.
 *
 * What the custom scan does not take, it leaves alone: calls in the SELECT
 * list, WITH ORDINALITY, ROWS FROM with several functions, and everything
 * when gpujoin.custom_scan is off keep PostgreSQL's function scan (and the
 * materialising entry points in entry_points.c).  The path is never
 * parallel.
 */
#include "postgres.h"

#include "compat.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include GJ_EXPLAIN_FORMAT_H
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"

#include "api/api.h"

#define GJ_SCAN_NAME "GpuJoin"

static set_rel_pathlist_hook_type prev_set_rel_pathlist = NULL;
static bool custom_scan_guc = true;

/* custom_private: (function, filtered column or -1, filter is = ANY) */
enum
{
	PRIV_FUNCTION,
	PRIV_FILTER_COLUMN,
	PRIV_FILTER_ARRAY
};

typedef struct GjScanState
{
	CustomScanState css;
	GjFunction	fn;
	FuncExpr   *fexpr;
	List	   *args;			/* ExprState of each argument */
	int			filter_column;
	bool		filter_array;
	Expr	   *filter_expr;	/* the value side of the restricting qual */
	ExprState  *filter_state;
	MemoryContext spec_cxt;		/* the evaluated arguments, per run */
	GjJob	   *job;
	bool		started;
	GjJobStats	stats;			/* summed over runs */
	bool		direct;			/* no qual, nothing to project: GjExecScan */
} GjScanState;

static Plan *GjPlanPath(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
						List *tlist, List *clauses, List *custom_plans);
static Node *GjCreateScanState(CustomScan *cscan);
static void GjBeginScan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *GjExecScan(CustomScanState *node);
static void GjEndScan(CustomScanState *node);
static void GjReScan(CustomScanState *node);
static void GjExplainScan(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods gj_path_methods = {
	.CustomName = GJ_SCAN_NAME,
	.PlanCustomPath = GjPlanPath,
};

static const CustomScanMethods gj_scan_methods = {
	.CustomName = GJ_SCAN_NAME,
	.CreateCustomScanState = GjCreateScanState,
};

static const CustomExecMethods gj_exec_methods = {
	.CustomName = GJ_SCAN_NAME,
	.BeginCustomScan = GjBeginScan,
	.ExecCustomScan = GjExecScan,
	.EndCustomScan = GjEndScan,
	.ReScanCustomScan = GjReScan,
	.ExplainCustomScan = GjExplainScan,
};

/* --- planning ------------------------------------------------------------ */

/* The call of ours that rte is, or NULL. */
static FuncExpr *
OurCall(RangeTblEntry *rte, GjFunction *fn)
{
	RangeTblFunction *rtfunc;
	FuncExpr   *fexpr;

	if (rte->rtekind != RTE_FUNCTION || rte->funcordinality ||
		list_length(rte->functions) != 1)
		return NULL;
	rtfunc = linitial_node(RangeTblFunction, rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr))
		return NULL;
	fexpr = (FuncExpr *) rtfunc->funcexpr;
	if (!fexpr->funcretset)
		return NULL;
	*fn = GjLookupFunction(fexpr->funcid);
	return *fn == GJ_FN_NONE ? NULL : fexpr;
}

/*
 * Does the query use the function's row as a whole (count(j.*),
 * row_to_json(j))?  The custom scan's tuple has only the columns, so such
 * a query keeps the function scan (materialised, same rows).
 */
static bool
NeedsWholeRow(RelOptInfo *rel)
{
	Bitmapset  *attrs = NULL;
	ListCell   *lc;

	pull_varattnos((Node *) rel->reltarget->exprs, rel->relid, &attrs);
	foreach(lc, rel->baserestrictinfo)
		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause, rel->relid, &attrs);
	return bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber, attrs);
}

/* Offer the streaming path next to the function scan. */
static void
GjSetRelPathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	GjFunction	fn;
	Path	   *fpath = NULL;
	CustomPath *cpath;
	ListCell   *lc;

	if (prev_set_rel_pathlist)
		prev_set_rel_pathlist(root, rel, rti, rte);
	/* a call of its own, or one of a UNION ALL's (dist/plain_knn.c's rewrite) */
	if (!custom_scan_guc ||
		(rel->reloptkind != RELOPT_BASEREL && rel->reloptkind != RELOPT_OTHER_MEMBER_REL) ||
		OurCall(rte, &fn) == NULL)
		return;
	foreach(lc, rel->pathlist)
	{
		Path	   *p = (Path *) lfirst(lc);

		if (p->pathtype == T_FunctionScan)
			fpath = p;
	}
	if (fpath == NULL || NeedsWholeRow(rel))
		return;

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = fpath->param_info;	/* LATERAL references */
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = fpath->rows;
	cpath->path.pathkeys = NIL;

	/*
	 * The same work as the function scan without the tuplestore, and the
	 * first row comes long before the last: half the startup cost and the
	 * total less that, so that this path wins (the function scan is
	 * dominated and dropped) and LIMIT plans see cheap first rows.
	 */
	cpath->path.startup_cost = fpath->startup_cost * 0.5;
	cpath->path.total_cost = fpath->total_cost - fpath->startup_cost * 0.5;
	cpath->flags = 0;
	cpath->methods = &gj_path_methods;
	add_path(rel, &cpath->path);
}

/*
 * Is op an equality of the integer btree family (int2/int4/int8 in any
 * mix), so that the qual compares ids as numbers?
 */
static bool
IsIntegerEquality(Oid op)
{
	return get_op_opfamily_strategy(op, INTEGER_BTREE_FAM_OID) == BTEqualStrategyNumber;
}

/* The output column (0-based) clause compares, if it is one of ours. */
static int
OutputColumn(Node *n, Index relid)
{
	if (n != NULL && IsA(n, RelabelType))
		n = (Node *) ((RelabelType *) n)->arg;
	if (n != NULL && IsA(n, Var) && ((Var *) n)->varno == relid &&
		((Var *) n)->varlevelsup == 0 && ((Var *) n)->varattno >= 1)
		return ((Var *) n)->varattno - 1;
	return -1;
}

/* A value side we can evaluate once: no Var of ours, nothing volatile. */
static bool
UsableValue(Node *n)
{
	return !contain_var_clause(n) && !contain_volatile_functions(n);
}

/*
 * Find a qual that restricts the query side: id_column = value or
 * id_column = ANY (array).  Sets *column, *is_array and returns the value
 * expression, or NULL.
 */
static Expr *
FindRestriction(GjFunction fn, List *clauses, Index relid, int *column, bool *is_array)
{
	ListCell   *lc;

	foreach(lc, clauses)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		Node	   *clause = (Node *) ri->clause;

		if (ri->pseudoconstant)
			continue;
		if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2)
		{
			OpExpr	   *op = (OpExpr *) clause;
			Node	   *l = linitial(op->args),
					   *r = lsecond(op->args);
			int			lc0 = OutputColumn(l, relid),
						rc0 = OutputColumn(r, relid);

			if (!IsIntegerEquality(op->opno))
				continue;
			if (lc0 >= 0 && GjFilterableColumn(fn, lc0) && UsableValue(r))
			{
				*column = lc0;
				*is_array = false;
				return (Expr *) r;
			}
			if (rc0 >= 0 && GjFilterableColumn(fn, rc0) && UsableValue(l))
			{
				*column = rc0;
				*is_array = false;
				return (Expr *) l;
			}
		}
		else if (IsA(clause, ScalarArrayOpExpr))
		{
			ScalarArrayOpExpr *sa = (ScalarArrayOpExpr *) clause;
			Node	   *l = linitial(sa->args),
					   *r = lsecond(sa->args);
			int			c = OutputColumn(l, relid);

			if (sa->useOr && IsIntegerEquality(sa->opno) && c >= 0 &&
				GjFilterableColumn(fn, c) && UsableValue(r))
			{
				*column = c;
				*is_array = true;
				return (Expr *) r;
			}
		}
	}
	return NULL;
}

static Plan *
GjPlanPath(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
		   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	GjFunction	fn = GJ_FN_NONE;
	FuncExpr   *fexpr = OurCall(rte, &fn);
	int			column = GJ_FILTER_NONE;
	bool		is_array = false;
	Expr	   *filter;

	Assert(fexpr != NULL);
	/* a keyed call's ids are its keys' ranks, known only once read */
	filter = GjKeyedFunction(fexpr->funcid) ? NULL :
		FindRestriction(fn, clauses, rel->relid, &column, &is_array);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->scan.scanrelid = 0;	/* no relation to open: the scan tuple is ours */
	cscan->flags = best_path->flags;
	cscan->methods = &gj_scan_methods;
	cscan->custom_scan_tlist = build_physical_tlist(root, rel);
	cscan->custom_exprs = list_make1(copyObject(fexpr));
	if (filter != NULL)
		cscan->custom_exprs = lappend(cscan->custom_exprs, copyObject(filter));
	cscan->custom_private = list_make3(makeInteger(fn), makeInteger(column),
									   makeBoolean(is_array));
	return &cscan->scan.plan;
}

/* --- execution ------------------------------------------------------------ */

static Node *
GjCreateScanState(CustomScan *cscan)
{
	GjScanState *st = palloc0(sizeof(GjScanState));

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &gj_exec_methods;
	return (Node *) st;
}

static void
GjBeginScan(CustomScanState *node, EState *estate, int eflags)
{
	GjScanState *st = (GjScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	AclResult	aclresult;

	st->fn = (GjFunction) intVal(list_nth(cscan->custom_private, PRIV_FUNCTION));
	st->filter_column = intVal(list_nth(cscan->custom_private, PRIV_FILTER_COLUMN));
	st->filter_array = boolVal(list_nth(cscan->custom_private, PRIV_FILTER_ARRAY));
	st->fexpr = linitial_node(FuncExpr, cscan->custom_exprs);
	st->filter_expr = list_length(cscan->custom_exprs) > 1 ?
		(Expr *) lsecond(cscan->custom_exprs) : NULL;

	/* what the function scan would have checked */
	aclresult = GjProcAclCheck(st->fexpr->funcid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(st->fexpr->funcid));
	InvokeFunctionExecuteHook(st->fexpr->funcid);

	if (node->ss.ss_ScanTupleSlot->tts_tupleDescriptor->natts != GjOutputColumns(st->fn))
		elog(ERROR, "gpujoin: scan tuple of %d columns for %s",
			 node->ss.ss_ScanTupleSlot->tts_tupleDescriptor->natts,
			 get_func_name(st->fexpr->funcid));
	st->args = ExecInitExprList(st->fexpr->args, &node->ss.ps);
	if (st->filter_expr != NULL)
		st->filter_state = ExecInitExpr(st->filter_expr, &node->ss.ps);
	st->spec_cxt = AllocSetContextCreate(estate->es_query_cxt, "gpujoin scan",
										 ALLOCSET_SMALL_SIZES);
	st->direct = node->ss.ps.qual == NULL &&
		(node->ss.ps.ps_ProjInfo == NULL || cscan->scan.plan.targetlist == NIL);
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/* An integer of any width as int64. */
static int64
IntDatum(Datum d, Oid type)
{
	if (type == INT2OID)
		return DatumGetInt16(d);
	if (type == INT4OID)
		return DatumGetInt32(d);
	return DatumGetInt64(d);
}

/*
 * The restricting qual's value(s) as sorted, distinct ids in the spec; a
 * NULL value restricts to nothing, as the qual then passes no row.
 */
static void
EvalFilter(GjScanState *st, ExprContext *econtext, GjJobSpec *spec)
{
	bool		isnull;
	Datum		v = ExecEvalExpr(st->filter_state, econtext, &isnull);
	Oid			type = exprType((Node *) st->filter_expr);
	int64	   *ids;
	int			n = 0;

	spec->filter_column = st->filter_column;
	spec->filter_ids = NULL;
	spec->nfilter = 0;
	if (isnull)
		return;
	if (!st->filter_array)
	{
		ids = palloc(sizeof(int64));
		ids[n++] = IntDatum(v, getBaseType(type));
	}
	else
	{
		ArrayType  *arr = DatumGetArrayTypeP(v);
		Oid			elem = ARR_ELEMTYPE(arr);
		int16		typlen;
		bool		typbyval;
		char		typalign;
		Datum	   *elems;
		bool	   *enulls;
		int			nelems;

		get_typlenbyvalalign(elem, &typlen, &typbyval, &typalign);
		deconstruct_array(arr, elem, typlen, typbyval, typalign, &elems, &enulls, &nelems);
		ids = palloc(sizeof(int64) * (nelems + 1));
		for (int i = 0; i < nelems; i++)
			if (!enulls[i])
				ids[n++] = IntDatum(elems[i], getBaseType(elem));
	}
	if (n > 1)
	{
		int			m = 1;

		qsort(ids, n, sizeof(int64), cmp_int64);
		for (int i = 1; i < n; i++)
			if (ids[i] != ids[m - 1])
				ids[m++] = ids[i];
		n = m;
	}
	spec->filter_ids = ids;
	spec->nfilter = n;
}

/* Evaluate the arguments (parameters, outer references) and start a job. */
static void
StartJob(GjScanState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	int			nargs = list_length(st->args);
	Datum	   *values = palloc(sizeof(Datum) * Max(nargs, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(nargs, 1));
	Oid		   *types = palloc(sizeof(Oid) * Max(nargs, 1));
	GjJobSpec	spec;
	MemoryContext old;
	ListCell   *lc;
	int			i = 0;

	MemoryContextReset(st->spec_cxt);
	ResetExprContext(econtext);
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	foreach(lc, st->args)
	{
		values[i] = ExecEvalExpr((ExprState *) lfirst(lc), econtext, &nulls[i]);
		types[i] = exprType(list_nth(st->fexpr->args, i));	/* a key witness's type */
		i++;
	}
	MemoryContextSwitchTo(st->spec_cxt);
	GjJobSpecFromArgs(st->fn, st->fexpr->funcid, values, nulls, types, nargs, &spec);
	if (st->filter_state != NULL)
		EvalFilter(st, econtext, &spec);
	MemoryContextSwitchTo(old);
	pfree(values);
	pfree(nulls);
	pfree(types);

	st->started = true;
	st->job = GjJobStart(&spec, st->css.ss.ps.state->es_query_cxt, false);
}

/* End the running job, adding up its stats. */
static void
EndJob(GjScanState *st)
{
	GjJobStats js;

	if (st->job == NULL)
		return;
	GjJobEnd(st->job, &js);
	st->job = NULL;
	st->stats.read.rows += js.read.rows;
	st->stats.read.skipped += js.read.skipped;
	st->stats.read.ms += js.read.ms;
	st->stats.read.workers = Max(st->stats.read.workers, js.read.workers);
	st->stats.engine = js.engine;
	st->stats.threads = js.threads;
	st->stats.index_ms += js.index_ms;
	st->stats.join_ms += js.join_ms;
	st->stats.wait_ms += js.wait_ms;
	st->stats.emit_ms += js.emit_ms;
	st->stats.rows_out += js.rows_out;
	st->stats.batches += js.batches;
	st->stats.gpus = Max(st->stats.gpus, js.gpus);
	if (js.gpu_team_why != NULL)
		st->stats.gpu_team_why = js.gpu_team_why;
	st->stats.slices = Max(st->stats.slices, js.slices);
	st->stats.slice_rows = Max(st->stats.slice_rows, js.slice_rows);
	st->stats.slice_pairs = Max(st->stats.slice_pairs, js.slice_pairs);
	st->stats.slab_steps = Max(st->stats.slab_steps, js.slab_steps);
	st->stats.slab_early = Max(st->stats.slab_early, js.slab_early);
	st->stats.geography = js.geography;
	st->stats.geo_spheroid = js.geo_spheroid;
	st->stats.geo_asked += js.geo_asked;
	if (js.estimated_pairs >= 0)
		st->stats.estimated_pairs = Max(st->stats.estimated_pairs, 0) + js.estimated_pairs;
	else if (st->stats.runs == 0)
		st->stats.estimated_pairs = -1;
	st->stats.runs += js.runs;
	if (js.dist.strips > 0)
		st->stats.dist = js.dist;	/* a rescan's run replaces the last one's */
	st->stats.knn_method = js.knn_method;
	st->stats.knn_contrast = js.knn_contrast;
	st->stats.knn_key_dims = js.knn_key_dims;
	if (js.tiles_method != NULL)
	{
		st->stats.tiles_method = js.tiles_method;
		st->stats.tiles_cheap = js.tiles_cheap;
		st->stats.tiles_key_dims = js.tiles_key_dims;
		st->stats.tiles_kept = js.tiles_kept;
	}
}

/* ExecScan's access method: the next row into the scan slot. */
static TupleTableSlot *
GjScanNext(ScanState *ss)
{
	GjScanState *st = (GjScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	bool		restarted;

	if (!st->started)
		StartJob(st);
	ExecClearTuple(slot);
	if (st->job == NULL)
		return slot;
	if (!GjJobNext(st->job, slot->tts_values, slot->tts_isnull, &restarted))
	{
		EndJob(st);				/* free the engine now, not at the end */
		return slot;
	}
	return ExecStoreVirtualTuple(slot);
}

/* No EvalPlanQual rows of our own: nothing to recheck. */
static bool
GjScanRecheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

/*
 * ExecScan's work, less what our rows never need: with no qual, no
 * EvalPlanQual recheck and no projection (or one to no columns, as under
 * count(*)), a row goes straight from the job to the caller, without the
 * per-row reset of the expression context and the empty projection
 * (nothing here allocates in it).  Everything else goes through ExecScan.
 */
static TupleTableSlot *
GjExecScan(CustomScanState *node)
{
	GjScanState *st = (GjScanState *) node;
	ScanState  *ss = &node->ss;
	ProjectionInfo *proj = ss->ps.ps_ProjInfo;
	TupleTableSlot *slot;
	TupleTableSlot *result;

	if (!st->direct || ss->ps.state->es_epq_active != NULL)
		return ExecScan(ss, GjScanNext, GjScanRecheck);
	slot = GjScanNext(ss);		/* (ExecCustomScan checked for interrupts) */
	if (proj == NULL)
		return slot;
	result = proj->pi_state.resultslot;
	ExecClearTuple(result);
	return TupIsNull(slot) ? result : ExecStoreVirtualTuple(result);
}

static void
GjEndScan(CustomScanState *node)
{
	EndJob((GjScanState *) node);
}

/* New parameters or a plain restart: the next fetch starts a new job. */
static void
GjReScan(CustomScanState *node)
{
	GjScanState *st = (GjScanState *) node;

	EndJob(st);
	st->started = false;
	ExecScanReScan(&node->ss);
}

/*
 * How an eps function's tile join ran: "blocks keyed on 4 of 16 dimensions
 * (the model kept 31.2% of block pairs)", "brute force", or "brute force
 * (cheaper than choosing)" where auto took it without the sample's choice.
 */
static const char *
TilesMethodText(const GjJobStats *js)
{
	if (strcmp(js->tiles_method, "blocks") != 0)
		return js->tiles_cheap ? psprintf("%s (cheaper than choosing)", js->tiles_method) :
			js->tiles_method;
	if (js->tiles_key_dims == 0)
		return "blocks in the rows' own order";	/* too few rows to sort */
	if (js->tiles_kept < 0)
		return psprintf("blocks keyed on %d dimensions", js->tiles_key_dims);
	return psprintf("blocks keyed on %d dimensions (the model keeps %.1f%% of block pairs)",
					js->tiles_key_dims, 100.0 * js->tiles_kept);
}

/* The output column's name as the function declares it. */
static const char *
OutputColumnName(GjFunction fn, int column)
{
	if (fn == GJ_FN_EPS_JOIN || fn == GJ_FN_EPS_JOIN_SQL ||
		fn == GJ_FN_JOIN_COUNTS || fn == GJ_FN_JOIN_COUNTS_SQL)
		return column == 0 ? "r" : "s";
	if (column == 1)
		return "b";
	if (GjFunctionShape(fn) != GJ_SHAPE_PAIRS && GjFunctionShape(fn) != GJ_SHAPE_KNN)
		return "id";
	return fn == GJ_FN_KNN_JOIN || fn == GJ_FN_KNN_JOIN_SQL ? "q" : "a";
}

/* A join run on Citus's workers: where its tasks ran, where the time went. */
static void
ExplainDistributed(const GjJobStats *js, ExplainState *es)
{
	ExplainPropertyText("Engine", js->engine, es);
	if (js->dist.by_shard)
		ExplainPropertyText("Distributed",
							psprintf(INT64_FORMAT " query rows to every worker, answered by the %d shards of the references, "
									 "tasks on %d nodes: %s", js->dist.query_rows, js->dist.strips,
									 js->dist.workers,
									 js->dist.placement != NULL ? js->dist.placement : "?"), es);
	else
		ExplainPropertyText("Distributed",
							psprintf("%d strips of %s, tasks on %d nodes: %s", js->dist.strips,
									 js->dist.match != NULL ? psprintf("the hash of %s", js->dist.match) :
									 js->dist.latitude ? "latitude" : psprintf("dimension %d", js->dist.dim + 1),
									 js->dist.workers,
									 js->dist.placement != NULL ? js->dist.placement : "?"), es);
	ExplainPropertyInteger("Rows Moved", NULL, js->dist.rows_moved, es);
	ExplainPropertyInteger("Rows Made", NULL, js->rows_out, es);
	if (es->timing)
	{
		ExplainPropertyFloat("Plan Time", "ms", js->dist.plan_ms, 3, es);
		ExplainPropertyFloat("Repartition Time", "ms", js->dist.move_ms, 3, es);
		ExplainPropertyFloat("Workers' Join Time", "ms", js->dist.join_ms, 3, es);
	}
}

static void
GjExplainScan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GjScanState *st = (GjScanState *) node;
	List	   *ctx = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan,
											   ancestors);
	char	   *call = deparse_expression((Node *) st->fexpr, ctx, es->verbose, false);
	GjJobStats *js = &st->stats;

	ExplainPropertyText("Function Call", call, es);
	if (st->filter_expr != NULL)
	{
		char	   *val = deparse_expression((Node *) st->filter_expr, ctx, es->verbose, false);

		ExplainPropertyText("Restricted To",
							psprintf(st->filter_array ? "%s = ANY (%s)" : "%s = %s",
									 OutputColumnName(st->fn, st->filter_column), val), es);
	}
	if (!es->analyze || js->runs == 0)
	{
		ExplainPropertyText("Engine", GjPlannedEngine(GjFunctionShape(st->fn), GjTwoSets(st->fn),
													  st->filter_expr != NULL), es);
		return;
	}
	if (js->dist.strips > 0)
	{
		ExplainDistributed(js, es);
		return;
	}
	if (es->verbose && js->threads > 0)
		ExplainPropertyText("Engine", psprintf("%s, %d threads", js->engine, js->threads), es);
	else
		ExplainPropertyText("Engine", js->engine, es);
	if (js->knn_method != NULL && js->knn_key_dims > 0 && strcmp(js->knn_method, "blocks") == 0)
		ExplainPropertyText("kNN Method",
							psprintf("blocks keyed on %d dimensions (sampled contrast %.3f)",
									 js->knn_key_dims, js->knn_contrast), es);
	else if (js->knn_method != NULL)
		ExplainPropertyText("kNN Method",
							psprintf("%s (sampled contrast %.3f)", js->knn_method, js->knn_contrast),
							es);
	if (js->tiles_method != NULL)
		ExplainPropertyText("Tiles", TilesMethodText(js), es);
	if (js->runs > 1)
		ExplainPropertyInteger("Runs", NULL, js->runs, es);
	ExplainPropertyInteger("Rows Read", NULL, js->read.rows, es);
	if (js->read.skipped > 0)
		ExplainPropertyInteger("Rows Skipped", NULL, js->read.skipped, es);
	if (js->read.workers > 0)
		ExplainPropertyInteger("Read Workers", NULL, js->read.workers, es);
	ExplainPropertyInteger("Rows Made", NULL, js->rows_out, es);
	if (strncmp(js->engine, "gpu", 3) == 0 || es->verbose)
		ExplainPropertyInteger("Batches", NULL, js->batches, es);
	if (js->gpus > 1)
		ExplainPropertyInteger("GPUs", NULL, js->gpus, es);
	else if (js->gpu_team_why != NULL)
		ExplainPropertyText("GPUs", psprintf("1, as the team did not start: %s",
											 js->gpu_team_why), es);
	if (js->slab_steps > 0)
		ExplainPropertyText("GPU Slabs",
							js->slab_early > 0 ?
							psprintf(INT64_FORMAT " slabs in " INT64_FORMAT " steps of up to " INT64_FORMAT " rows, " INT64_FORMAT " started early",
									 js->slices, js->slab_steps, js->slice_rows, js->slab_early) :
							psprintf(INT64_FORMAT " slabs in " INT64_FORMAT " steps of up to " INT64_FORMAT " rows",
									 js->slices, js->slab_steps, js->slice_rows), es);
	else if (js->slices > 1)
		ExplainPropertyText("GPU Slices",
							psprintf(INT64_FORMAT " of up to " INT64_FORMAT " rows, " INT64_FORMAT " pairs of slices",
									 js->slices, js->slice_rows, js->slice_pairs),
							es);
	if (js->geography)
		ExplainPropertyText("Geography",
							psprintf("metres on the %s, " INT64_FORMAT " pairs within a hair of d asked of PostGIS",
									 js->geo_spheroid ? "spheroid" : "sphere", js->geo_asked), es);
	if (js->estimated_pairs >= 0 && (strncmp(js->engine, "gpu", 3) == 0 || es->verbose))
		ExplainPropertyFloat("Estimated Pairs", NULL, js->estimated_pairs, 0, es);
	if (es->timing)
	{
		ExplainPropertyFloat("Read Time", "ms", js->read.ms, 3, es);
		ExplainPropertyFloat("Index Time", "ms", js->index_ms, 3, es);
		ExplainPropertyFloat("Join Time", "ms", js->join_ms, 3, es);
		ExplainPropertyFloat("Wait Time", "ms", js->wait_ms, 3, es);
		ExplainPropertyFloat("Emit Time", "ms", js->emit_ms, 3, es);
	}
}

/* Register the setting, the hook and the scan methods (from _PG_init). */
void
GjCustomScanInit(void)
{
	DefineCustomBoolVariable("gpujoin.custom_scan",
							 "Stream the rows of gpujoin functions in FROM through a custom scan.",
							 "Off: PostgreSQL's function scan runs them to completion into a "
							 "tuplestore first, as for any set-returning function.",
							 &custom_scan_guc,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	RegisterCustomScanMethods(&gj_scan_methods);
	prev_set_rel_pathlist = set_rel_pathlist_hook;
	set_rel_pathlist_hook = GjSetRelPathlist;
}
