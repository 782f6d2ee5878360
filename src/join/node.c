/*
 * node.c
 *		The GpuJoin plan node: begin, next row, end, rescan, EXPLAIN.  The
 *		distance join's phases are in pairs.c, the LATERAL kNN join's in
 *		knn.c, what both do with their rows in exec.c.
 */
#include "postgres.h"

#include "compat.h"

#include "commands/explain.h"
#include GJ_EXPLAIN_FORMAT_H
#include "executor/tuptable.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "join/join_exec.h"

static void GjJoinBegin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *GjJoinExec(CustomScanState *node);
static void GjJoinEnd(CustomScanState *node);
static void GjJoinReScan(CustomScanState *node);
static void GjJoinExplain(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomExecMethods gj_join_exec_methods = {
	.CustomName = "GpuJoin",
	.BeginCustomScan = GjJoinBegin,
	.ExecCustomScan = GjJoinExec,
	.EndCustomScan = GjJoinEnd,
	.ReScanCustomScan = GjJoinReScan,
	.ExplainCustomScan = GjJoinExplain,
};

Node *
GjJoinCreateState(CustomScan *cscan)
{
	GjJoinState *st = palloc0(sizeof(GjJoinState));

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &gj_join_exec_methods;
	return (Node *) st;
}

/* The scan tuple's column a key Var (INDEX_VAR after setrefs) names. */
static AttrNumber
KeyColumn(Expr *e)
{
	while (IsA(e, RelabelType))
		e = ((RelabelType *) e)->arg;
	if (!IsA(e, Var) || ((Var *) e)->varno != INDEX_VAR)
		elog(ERROR, "GpuJoin: a join key is not a column of the scan tuple");
	return ((Var *) e)->varattno;
}

/* The gj_points of a side: freed with its context, by error or end. */
static void
FreePoints(void *arg)
{
	gj_points_free((gj_points *) arg);
}

static void
InitSide(GjSide *side, PlanState *ps, AttrNumber key, EState *estate, MemoryContext parent,
		 const char *name)
{
	MemoryContextCallback *cb;

	side->ps = ps;
	side->key = key;
	side->loaded = -1;
	side->held_row = -1;
	side->key_row = -1;
	side->slot = ExecInitExtraTupleSlot(estate, ExecGetResultType(ps), &TTSOpsMinimalTuple);
	side->cxt = AllocSetContextCreate(parent, "GpuJoin side", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSetIdentifier(side->cxt, name);

	/*
	 * The kept tuples, back to back: an AllocSet rounds each up to a power
	 * of two (a vector(128) row of 540 bytes takes 1 kB), and every page of
	 * it is a fault to zero (600 ms of an 850 ms read of 200K such rows on
	 * the 2-core machine)
	 */
	side->tup_cxt = GenerationContextCreate(side->cxt, "GpuJoin rows", 0, 1024 * 1024,
											64 * 1024 * 1024);
	gj_points_init(&side->pts, 0);
	cb = MemoryContextAlloc(parent, sizeof(MemoryContextCallback));
	cb->func = FreePoints;
	cb->arg = &side->pts;
	MemoryContextRegisterResetCallback(parent, cb);
}

static bool
IndexVars(Node *node, Bitmapset **cols)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR && ((Var *) node)->varattno > 0)
	{
		*cols = bms_add_member(*cols, ((Var *) node)->varattno);
		return false;
	}
	return expression_tree_walker(node, IndexVars, (void *) cols);
}

/*
 * Which of the node's expressions read each side's key column (okey,
 * ikey in the scan tuple): those evaluated on every scan tuple (the
 * output, the other quals, kNN's pair quals and subquery columns), and
 * those only where the engine's distance leaves a pair open (the join's
 * quals) or kNN ranks (its ORDER BY keys).  A side whose rows the read
 * carries (tid_read.c) makes its key from the coordinates for them.
 */
static void
KeyUse(GjJoinState *st, CustomScan *cscan, AttrNumber okey, AttrNumber ikey)
{
	List	   *ex = cscan->custom_exprs;
	Bitmapset  *always = NULL,
			   *lazy = NULL;

	IndexVars((Node *) cscan->scan.plan.targetlist, &always);
	IndexVars((Node *) cscan->scan.plan.qual, &always);
	IndexVars((Node *) list_nth(ex, GJ_JE_REST), &always);
	IndexVars((Node *) list_nth(ex, GJ_JE_JOINQUALS), st->what == GJ_JOIN_KNN ? &always : &lazy);
	if (st->what == GJ_JOIN_KNN)
	{
		IndexVars((Node *) list_nth(ex, GJ_JE_PAIRQUALS), &always);
		IndexVars((Node *) list_nth(ex, GJ_JE_SOUT), &always);
		IndexVars((Node *) list_nth(ex, GJ_JE_ORDERKEYS), &lazy);
	}
	GjColsKeyUse(st, &st->outer, bms_is_member(okey, always) || bms_is_member(okey, lazy),
				 bms_is_member(okey, always));
	GjColsKeyUse(st, &st->inner, bms_is_member(ikey, always) || bms_is_member(ikey, lazy),
				 bms_is_member(ikey, always));
}

static void
GjJoinBegin(CustomScanState *node, EState *estate, int eflags)
{
	GjJoinState *st = (GjJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *ex = cscan->custom_exprs;
	PlanState  *outer_ps,
			   *inner_ps;
	AttrNumber	okey,
				ikey;

	st->what = intVal(list_nth(priv, GJ_JP_WHAT));
	st->est_cand = list_length(priv) > GJ_JP_CANDIDATES ?
		(double) intVal(list_nth(priv, GJ_JP_CANDIDATES)) : -1;
	st->jointype = (JoinType) intVal(list_nth(priv, GJ_JP_JOINTYPE));
	st->kind = (GjKeyKind) intVal(list_nth(priv, GJ_JP_KIND));
	st->metric = (GjJoinMetric) intVal(list_nth(priv, GJ_JP_METRIC));
	st->empty_false = intVal(list_nth(priv, GJ_JP_EMPTY_FALSE)) != 0;
	st->nouter = intVal(list_nth(priv, GJ_JP_OUTER_COLS));
	st->ninner = intVal(list_nth(priv, GJ_JP_INNER_COLS));
	st->postgis_nsp = (Oid) intVal(list_nth(priv, GJ_JP_POSTGIS_NSP));

	outer_ps = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	inner_ps = ExecInitNode(lsecond(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make2(outer_ps, inner_ps);

	st->joinqual = ExecInitQual((List *) list_nth(ex, GJ_JE_JOINQUALS), &node->ss.ps);
	st->restqual = ExecInitQual((List *) list_nth(ex, GJ_JE_REST), &node->ss.ps);
	st->bound_state = ExecInitExpr((Expr *) list_nth(ex, GJ_JE_BOUND), &node->ss.ps);
	st->spheroid_state = ExecInitExpr((Expr *) list_nth(ex, GJ_JE_SPHEROID), &node->ss.ps);
	st->clause = (Expr *) list_nth(ex, GJ_JE_CLAUSE);
	okey = KeyColumn((Expr *) list_nth(ex, GJ_JE_OUTER_KEY));
	ikey = KeyColumn((Expr *) list_nth(ex, GJ_JE_INNER_KEY));
	if (okey < 1 || okey > st->nouter || ikey <= st->nouter || ikey > st->nouter + st->ninner)
		elog(ERROR, "GpuJoin: the join keys are not one of each side");
	{
		List	   *map = (List *) list_nth(priv, GJ_JP_SELF_MAP);

		if (map != NIL)
		{
			/* a self join: the outer rows are the inner's, read once */
			st->self_map = palloc(sizeof(int) * list_length(map));
			for (int j = 0; j < list_length(map); j++)
				st->self_map[j] = intVal(list_nth(map, j));
		}
	}
	InitSide(&st->outer, st->self_map != NULL ? inner_ps : outer_ps, okey, estate,
			 estate->es_query_cxt, "GpuJoin outer");
	st->outer.ps = outer_ps;
	InitSide(&st->inner, inner_ps, ikey - st->nouter, estate, estate->es_query_cxt,
			 "GpuJoin inner");
	GjTidInit(st, &st->outer);
	GjTidInit(st, &st->inner);
	KeyUse(st, cscan, okey, ikey);
	if (st->self_map != NULL && st->outer.tid_ok && st->inner.tid_ok &&
		RelationGetRelid(((ScanState *) outer_ps)->ss_currentRelation) !=
		RelationGetRelid(((ScanState *) inner_ps)->ss_currentRelation))
		st->outer.tid_ok = st->inner.tid_ok = false;
	if (st->self_map != NULL &&
		!(st->outer.tid_ok && st->outer.cols_ok && st->inner.cols_ok &&
		  (st->outer.carry_att == 0 || st->outer.carry_att == st->inner.carry_att)))
		st->outer.cols_ok = st->inner.cols_ok = false;	/* the outer columns from the inner's */
	st->row = MemoryContextAlloc(estate->es_query_cxt, sizeof(double) * GJ_MAX_DIMS);
	if (st->what == GJ_JOIN_KNN)
		GjKnnInit(st, cscan);
	st->phase = PH_START;
}

static TupleTableSlot *
GjJoinExec(CustomScanState *node)
{
	GjJoinState *st = (GjJoinState *) node;
	TupleTableSlot *res;

	if (st->phase == PH_START)
		st->t0 = gj_now_ms();
	res = st->what == GJ_JOIN_KNN ? GjKnnNext(st) : GjPairsNext(st);
	return res != NULL ? res : ExecClearTuple(node->ss.ps.ps_ResultTupleSlot);
}

static void
GjJoinEnd(CustomScanState *node)
{
	GjJoinState *st = (GjJoinState *) node;

	GjJoinEndJob(st);
	GjSideReset(&st->outer);
	GjSideReset(&st->inner);
	ExecEndNode(st->outer.ps);
	ExecEndNode(st->inner.ps);
}


static void
GjJoinReScan(CustomScanState *node)
{
	GjJoinState *st = (GjJoinState *) node;

	GjJoinEndJob(st);
	GjSideReset(&st->outer);
	GjSideReset(&st->inner);
	st->outer.ended = st->inner.ended = false;
	st->outer.tid_tried = false;
	st->phase = PH_START;
	st->self_pend = false;
	if (st->outer.ps->chgParam == NULL)
		ExecReScan(st->outer.ps);
	if (st->inner.ps->chgParam == NULL)
		ExecReScan(st->inner.ps);
}

/* --- EXPLAIN ------------------------------------------------------------- */

static const char *
JoinTypeName(JoinType t)
{
	switch (t)
	{
		case JOIN_INNER:
			return "Inner";
		case JOIN_LEFT:
			return "Left";
		case JOIN_SEMI:
			return "Semi";
		case JOIN_ANTI:
			return "Anti";
		default:
			return "?";
	}
}

static void
GjJoinExplain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GjJoinState *st = (GjJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *ctx = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
	List	   *quals = (List *) list_nth(cscan->custom_exprs, GJ_JE_JOINQUALS);
	bool		prefix = es->verbose || list_length(es->rtable) > 1;

	ExplainPropertyText("Join Type", JoinTypeName(st->jointype), es);
	ExplainPropertyText(st->what == GJ_JOIN_KNN ? "Nearest By" : "Distance",
						deparse_expression((Node *) st->clause, ctx, prefix, false), es);
	if (st->what == GJ_JOIN_KNN)
	{
		List	   *keys = (List *) list_nth(cscan->custom_exprs, GJ_JE_ORDERKEYS);
		List	   *pq = (List *) list_nth(cscan->custom_exprs, GJ_JE_PAIRQUALS);

		if (list_length(keys) > 1)
			ExplainPropertyText("Order By", deparse_expression((Node *) keys, ctx, prefix, false),
								es);
		ExplainPropertyText("Limit", deparse_expression(list_nth(cscan->custom_exprs, GJ_JE_BOUND),
														ctx, prefix, false), es);
		if (pq != NIL)
			ExplainPropertyText("Pair Filter",
								deparse_expression((Node *) make_ands_explicit(pq), ctx, prefix,
												   false), es);
	}
	if (list_length(quals) > 1)
		ExplainPropertyText("Join Filter",
							deparse_expression((Node *) make_ands_explicit(quals), ctx,
											   prefix, false), es);
	if (!es->analyze || st->runs == 0)
	{
		ExplainPropertyText("Engine", GjPlannedEngine(st->what == GJ_JOIN_KNN ? GJ_SHAPE_KNN :
													  GJ_SHAPE_PAIRS, true, false), es);
		return;
	}
	ExplainPropertyText("Engine", st->js.engine != NULL ? st->js.engine : "none", es);
	if (st->js.knn_method != NULL)
		ExplainPropertyText("kNN Method", st->js.knn_method, es);
	if (st->js.tiles_method != NULL)
		ExplainPropertyText("Tiles", st->js.tiles_method, es);
	if (st->runs > 1)
		ExplainPropertyInteger("Runs", NULL, st->runs, es);
	if (st->self_map != NULL)
		ExplainPropertyText("Self Join", "one table's rows on both sides, read once", es);
	else
		ExplainPropertyInteger("Outer Rows", NULL, st->outer.total, es);
	ExplainPropertyInteger("Inner Rows", NULL, st->inner.total, es);
	if (st->outer.tid_rows + st->inner.tid_rows > 0)
	{
		const char *sides = st->outer.tid_rows == 0 ? "inner" :
			st->inner.tid_rows == 0 ? "outer" : "outer and inner";

		ExplainPropertyText("Parallel Read",
							psprintf("%s, %d workers%s", st->self_map != NULL ? "the table" : sides,
									 Max(st->outer.tid_workers, st->inner.tid_workers),
									 (st->outer.cols_ok && st->outer.tid_rows > 0) ||
									 (st->inner.cols_ok && st->inner.tid_rows > 0) ?
									 ", columns read with the keys" : ""),
							es);
		ExplainPropertyInteger("Rows Fetched By Ctid", NULL,
							   st->outer.fetches + st->inner.fetches, es);
	}
	ExplainPropertyInteger("Batches", NULL, st->batches, es);
	ExplainPropertyInteger("Candidates", NULL, st->candidates, es);
	if (st->what == GJ_JOIN_KNN)
	{
		if (st->pair_not_self)
			ExplainPropertyText("Pair Filter By", "row (a unique column)", es);
		if (st->pass_sampled > 0 && st->pass_rate < 0.9)
			ExplainPropertyText("Engine Candidates",
								psprintf(INT64_FORMAT " a row (the pair filter passed %.1f%% of %d pairs drawn)",
										 st->k2, 100.0 * st->pass_rate, st->pass_sampled), es);
		ExplainPropertyInteger("Rows In Engine Order", NULL, st->fast, es);
		if (st->retried > 0)
			ExplainPropertyInteger("Rows Asked Again", NULL, st->retried, es);
		if (st->kg_inner != NULL)
			ExplainPropertyInteger("Rows Searched By Key", NULL, st->by_key, es);
		ExplainPropertyInteger("Rows Searched Whole", NULL, st->fallbacks, es);
	}
	else
		ExplainPropertyInteger("Decided By Distance", NULL, st->decided, es);
	if (st->other_pairs > 0 || es->verbose)
		ExplainPropertyInteger("Pairs Outside The Engine", NULL, st->other_pairs, es);
	if (es->timing)
	{
		ExplainPropertyFloat("Read Time", "ms", st->read_ms, 3, es);
		ExplainPropertyFloat("Index Time", "ms", st->js.index_ms, 3, es);
		ExplainPropertyFloat("Engine Time", "ms", st->js.join_ms, 3, es);
		ExplainPropertyFloat("Engine Wait Time", "ms", st->js.wait_ms, 3, es);
	}
}
