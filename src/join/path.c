/*
 * path.c
 *		The join path: a GpuJoin offered next to PostgreSQL's own join
 *		paths wherever a join's quals hold a distance predicate
 *		(clause.c), costed against them, and its plan.
 *
 * Offered for inner, left, semi and anti joins whose two sides are
 * unparameterized, when no qual is a pseudo-constant (those need a gating
 * Result the custom path cannot ask for) and the inner side's rows fit
 * gpujoin.host_memory_limit.  The planner calls the hook for both orders
 * of a pair of relations, so either side can be the one indexed.
 *
 * Cost.  Both inputs are read whole before the first row (startup), the
 * engine costs a few operators a row to index and probe in the grid's
 * dimensions, or a tiny cost per pair and dimension by brute force in
 * many (about 1.6e-6 cost units, 16 G multiply-adds a second on two
 * cores), and every candidate pair pays the join's other quals and, near
 * d only (GJ_BAND_SHARE of them, a guess on the safe side), the distance
 * predicate itself: PostGIS declares its functions costly to make the
 * planner probe an index, and the engine's distance decides most pairs
 * without the call.  Candidates are the pairs the predicate's
 * selectivity gives, or GJ_GUESS_PARTNERS a row where it is PostgreSQL's
 * default guess (pgvector's distances have no statistics).  So one point against a
 * table (a handful of index probes) keeps PostgreSQL's plan, and a join
 * of two tables takes the engine.
 *
 * The plan: a CustomScan over the two sides' plans (custom_plans: outer,
 * inner) whose scan tuple is the outer plan's columns followed by the
 * inner's (custom_scan_tlist), so that the join's quals and target list
 * refer to it as INDEX_VAR; setrefs.c does that translation.  Quals that
 * decide a match go to custom_exprs, the ones applied after an outer
 * join's null-extension to the plan's qual (as nodeNestloop.c splits them).
 */
#include "postgres.h"

#include <limits.h>

#include <math.h>

#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "join/join.h"
#include "machine.h"

#define GJ_JOIN_NAME "GpuJoin"

/* cost units of one multiply-add of the brute-force engine, on two cores */
#define GJ_BRUTE_PAIR_DIM_COST 1.6e-6
/* operators a row costs to read into the index or to probe it */
#define GJ_ROW_OPERATORS 10.0
/* dimensions the grid indexes; above them the engines compare by blocks */
#define GJ_GRID_DIMS 6
/* candidates a row, where the distance has no statistics */
#define GJ_GUESS_PARTNERS 10.0
/* candidates too near d for the engine's distance to decide: the predicate's */
#define GJ_BAND_SHARE 0.05

static set_join_pathlist_hook_type prev_join_pathlist = NULL;
static bool enable_join_guc = true;

static Plan *GjJoinPlanPath(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							List *tlist, List *clauses, List *custom_plans);

static const CustomPathMethods gj_join_path_methods = {
	.CustomName = GJ_JOIN_NAME,
	.PlanCustomPath = GjJoinPlanPath,
};

static const CustomScanMethods gj_join_scan_methods = {
	.CustomName = GJ_JOIN_NAME,
	.CreateCustomScanState = GjJoinCreateState,
};

/* Coordinates per row the engine takes for kind, or 0 when unknown. */
static int
KeyDims(GjJoinClause *jc)
{
	int32		typmod;

	if (jc->kind == GJ_KEY_GEOMETRY)
		return 2;
	if (jc->kind == GJ_KEY_GEOGRAPHY)
		return 3;
	typmod = exprTypmod((Node *) jc->inner_key);
	return typmod > 0 ? typmod : 0;
}

/* The quals that decide a match, and those applied after it. */
static void
SplitQuals(JoinType jointype, List *restrictlist, Relids joinrelids,
		   List **joinquals, List **otherquals)
{
	if (IS_OUTER_JOIN(jointype))
		extract_actual_join_clauses(restrictlist, joinrelids, joinquals, otherquals);
	else
	{
		*joinquals = extract_actual_clauses(restrictlist, false);
		*otherquals = NIL;
	}
}

/*
 * Add the GpuJoin of outer_path and inner_path (NULL: kNN's inner side,
 * scanned by a plan of our own) to joinrel.
 */
static void
AddJoinPath(RelOptInfo *joinrel, Path *outer_path, Path *inner_path, JoinType jointype,
			List *restrictlist, int what, Index inner_relid, double startup, double total,
			double cand)
{
	CustomPath *cpath = makeNode(CustomPath);

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = joinrel;
	cpath->path.pathtarget = joinrel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = joinrel->rows;
	cpath->path.pathkeys = NIL;
	cpath->path.startup_cost = startup;
	cpath->path.total_cost = total;
	cpath->flags = 0;
	cpath->custom_paths = inner_path != NULL ? list_make2(outer_path, inner_path) :
		list_make1(outer_path);
	cpath->custom_private = list_make5(makeInteger(jointype), restrictlist, makeInteger(what),
									   makeInteger(inner_relid),
									   makeInteger(cand < 0 ? -1 : (int) Min(cand, (double) INT_MAX)));
	cpath->methods = &gj_join_path_methods;
	add_path(joinrel, &cpath->path);
}

static void
GjJoinPathlist(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
			   RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra)
{
	Path	   *outer_path,
			   *inner_path;
	List	   *joinquals,
			   *otherquals;
	GjJoinClause jc;
	QualCost	qc,
				pc;
	ListCell   *lc;
	double		outer_rows,
				inner_rows,
				sel,
				cand,
				dims,
				engine,
				inner_bytes,
				startup;
	bool		known;

	if (prev_join_pathlist)
		prev_join_pathlist(root, joinrel, outerrel, innerrel, jointype, extra);
	if (!enable_join_guc)
		return;
	if (jointype != JOIN_INNER && jointype != JOIN_LEFT && jointype != JOIN_SEMI &&
		jointype != JOIN_ANTI)
		return;
	outer_path = outerrel->cheapest_total_path;
	inner_path = innerrel->cheapest_total_path;
	if (outer_path == NULL || inner_path == NULL || PATH_REQ_OUTER(outer_path) != NULL ||
		!bms_is_empty(joinrel->lateral_relids))
		return;
	foreach(lc, extra->restrictlist)
		if (lfirst_node(RestrictInfo, lc)->pseudoconstant)
			return;
	SplitQuals(jointype, extra->restrictlist, joinrel->relids, &joinquals, &otherquals);
	if (!GjFindJoinClause(joinquals, outerrel->relids, innerrel->relids, &jc))
	{
		double		knn_startup,
					knn_total;

		/* q JOIN LATERAL (SELECT .. FROM r ORDER BY r.x <-> q.x LIMIT k) */
		if ((jointype == JOIN_INNER || jointype == JOIN_LEFT) &&
			GjLateralPath(root, joinrel, outerrel, innerrel, jointype, extra, outer_path,
						  &knn_startup, &knn_total))
			AddJoinPath(joinrel, outer_path, NULL, jointype, extra->restrictlist,
						GJ_JOIN_KNN, innerrel->relid, knn_startup, knn_total, -1);
		return;
	}

	if (PATH_REQ_OUTER(inner_path) != NULL)
		return;
	outer_rows = Max(outer_path->rows, 1.0);
	inner_rows = Max(inner_path->rows, 1.0);
	dims = KeyDims(&jc);
	if (dims == 0)
		dims = 128;				/* a vector column of no declared size: a guess */
	inner_bytes = inner_rows * (innerrel->reltarget->width + 48.0 + 8.0 * (dims + 1));
	if (inner_bytes > (double) GjHostMemoryLimit())
		return;

	sel = clause_selectivity(root, (Node *) jc.clause, 0, JOIN_INNER, NULL);
	known = sel != DEFAULT_INEQ_SEL;
	if (!known)
	{
		/*
		 * No statistics for the distance (pgvector's operators): a third of
		 * all pairs is PostgreSQL's guess for any inequality, and no
		 * similarity join anyone runs.  Costed so, the candidates' quals
		 * outweigh a parallel nested loop over every pair, which then runs
		 * for hours; take GJ_GUESS_PARTNERS partners a row instead.
		 */
		cand = GJ_GUESS_PARTNERS * Max(outer_rows, inner_rows);
	}
	else
		cand = clamp_row_est(outer_rows * inner_rows * Max(sel, 0.0));
	engine = (outer_rows + inner_rows) * (GJ_ROW_OPERATORS * cpu_operator_cost + cpu_tuple_cost);
	if (dims > GJ_GRID_DIMS)
		engine += outer_rows * inner_rows * dims * GJ_BRUTE_PAIR_DIM_COST;
	cost_qual_eval(&qc, list_delete_ptr(list_copy(joinquals), jc.clause), root);
	cost_qual_eval_node(&pc, (Node *) jc.clause, root);

	startup = outer_path->total_cost + inner_path->total_cost + engine + qc.startup;
	AddJoinPath(joinrel, outer_path, inner_path, jointype, extra->restrictlist,
				GJ_JOIN_DISTANCE, 0, startup,
				startup + cand * (qc.per_tuple + GJ_BAND_SHARE * pc.per_tuple + cpu_tuple_cost) +
				joinrel->rows * joinrel->reltarget->cost.per_tuple, known ? cand : -1);
}

/* A copy of each entry of tlist, numbered on from *resno. */
static List *
AppendColumns(List *scan_tlist, List *tlist, AttrNumber *resno)
{
	ListCell   *lc;

	foreach(lc, tlist)
	{
		TargetEntry *te = lfirst_node(TargetEntry, lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) copyObject(te->expr), (*resno)++,
											 NULL, false));
	}
	return scan_tlist;
}

static Plan *
GjJoinPlanPath(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	JoinType	jointype = (JoinType) intVal(linitial(best_path->custom_private));
	Path	   *outer_path;
	Path	   *inner_path;
	Plan	   *outer_plan;
	Plan	   *inner_plan;
	List	   *restrictlist = lsecond(best_path->custom_private),
			   *joinquals,
			   *otherquals;
	GjJoinClause jc;
	AttrNumber	resno = 1;
	List	   *scan_tlist = NIL;

	cscan->methods = &gj_join_scan_methods;
	if (intVal(lthird(best_path->custom_private)) == GJ_JOIN_KNN)
		return GjLateralPlan(root, rel, best_path, tlist, custom_plans, cscan);
	outer_path = linitial(best_path->custom_paths);
	inner_path = lsecond(best_path->custom_paths);
	outer_plan = linitial(custom_plans);
	inner_plan = lsecond(custom_plans);
	SplitQuals(jointype, restrictlist, rel->relids, &joinquals, &otherquals);
	if (!GjFindJoinClause(joinquals, outer_path->parent->relids, inner_path->parent->relids,
						  &jc))
		elog(ERROR, "GpuJoin: the distance predicate is gone from the join's quals");

	scan_tlist = AppendColumns(scan_tlist, outer_plan->targetlist, &resno);
	scan_tlist = AppendColumns(scan_tlist, inner_plan->targetlist, &resno);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = otherquals;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = bms_copy(rel->relids);
	cscan->custom_exprs = list_make5(joinquals, copyObject(jc.outer_key),
									 copyObject(jc.inner_key), copyObject(jc.bound),
									 copyObject(jc.spheroid));
	cscan->custom_exprs = lappend(cscan->custom_exprs, copyObject(jc.clause));
	cscan->custom_exprs = lappend(cscan->custom_exprs,
								  list_delete_ptr(list_copy(joinquals), jc.clause));
	cscan->custom_exprs = lappend(cscan->custom_exprs, NIL);
	cscan->custom_exprs = lappend(cscan->custom_exprs, NIL);
	cscan->custom_exprs = lappend(cscan->custom_exprs, NIL);
	cscan->custom_private = list_make5(makeInteger(jointype), makeInteger(jc.kind),
									   makeInteger(jc.metric), makeInteger(jc.empty_false),
									   makeInteger(list_length(outer_plan->targetlist)));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger((int) jc.postgis_nsp));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(GJ_JOIN_DISTANCE));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(list_length(inner_plan->targetlist)));
	cscan->custom_private = lappend(cscan->custom_private, NIL);
	cscan->custom_private = lappend(cscan->custom_private, NIL);
	cscan->custom_private = lappend(cscan->custom_private, NIL);
	cscan->custom_private = lappend(cscan->custom_private,
									GjSelfMap(root, outer_path->parent, inner_path->parent,
											  outer_plan->targetlist, inner_plan->targetlist));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(intVal(list_nth(best_path->custom_private, 4))));
	GjAlignNullingMarks(cscan);
	return &cscan->scan.plan;
}

/* Register the setting and the hook (from _PG_init). */
void
GjJoinPathInit(void)
{
	DefineCustomBoolVariable("gpujoin.enable_join",
							 "Plan joins on a distance predicate (ST_DWithin, <->, <=>) as a GpuJoin.",
							 "Off: such joins keep PostgreSQL's own plans.",
							 &enable_join_guc,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	prev_join_pathlist = set_join_pathlist_hook;
	set_join_pathlist_hook = GjJoinPathlist;
}
