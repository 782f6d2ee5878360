/*
 * lateral.c
 *		kNN written as LATERAL, planned as a GpuJoin:
 *
 *		q [LEFT] JOIN LATERAL (SELECT .. FROM r [WHERE ..]
 *							   ORDER BY r.x <-> q.x [, more keys] LIMIT k) s [ON true]
 *
 * PostgreSQL runs the subquery once per q row: an index's kNN scan (GiST
 * for PostGIS) or a sort of every r row (pgvector without an index).  The
 * GpuJoin reads r once, asks the kNN engine for each q row's k2 nearest
 * rows (k2 a little over k), and decides among them by the subquery
 * itself: its quals on the pair (r.id <> q.id), its ORDER BY keys as
 * PostgreSQL computes them, sorted by their operators; a q row for which
 * that cannot be proven to give the subquery's first k rows (see knn.c) is
 * answered from every r row.
 *
 * Recognised: a subquery over one plain table (no inheritance children, no
 * row-level security: those keep PostgreSQL's plan), no grouping,
 * aggregates, window functions, DISTINCT, set-returning functions,
 * sublinks, locking or OFFSET; LIMIT k free of q (a constant or a
 * parameter); the first ORDER BY key ascending, NULLS LAST, a distance
 * between a column of r and a column of q: <-> on geometry, geography
 * (PostGIS's sphere), vector and halfvec, <=> on vector and halfvec,
 * ST_Distance on geometry.  WHERE quals on r alone go to the scan of r;
 * those that refer to q are evaluated on each candidate pair.  Only Vars
 * of the subquery and of the one level above it.
 *
 * The plan.  The subquery stays in the query's range table (its RTE is
 * never scanned: setrefs.c expects it to be a SubqueryScan's, and it is
 * not one, so its own RTEs are not pulled up); r is added to the range
 * table again, a copy of the subquery's RTE, with the same permissions to
 * check, and scanned by a SeqScan of ours with the quals on r alone.  The
 * subquery's expressions move up one level: r's Vars to the new RTE,
 * q's (one level up) to this level.  The scan tuple is the outer plan's
 * columns, r's, then the subquery's output columns the join needs.
 */
#include "postgres.h"

#include "compat.h"

#include <math.h>

#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_statistic.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "join/join.h"

/* operators a row costs to read into the kNN index, or one candidate to probe */
#define GJ_KNN_ROW_OPERATORS 10.0
/* cost units of one multiply-add of brute force, on two cores (path.c's) */
#define GJ_KNN_PAIR_DIM_COST 1.6e-6

/* What the subquery is, as recognised. */
typedef struct GjLateral
{
	Query	   *sq;
	Index		r_rti;			/* r in the subquery's range table */
	RangeTblEntry *r_rte;
	GjJoinClause jc;			/* the first ORDER BY key (levels as in sq) */
	List	   *scan_quals;		/* on r alone */
	List	   *pair_quals;		/* referring to q */
	Node	   *limit;
} GjLateral;

/* The largest varlevelsup of a Var in n (PlaceHolderVars, Aggrefs: 99). */
static bool
MaxLevelWalker(Node *n, int *max)
{
	if (n == NULL)
		return false;
	if (IsA(n, Var))
	{
		*max = Max(*max, (int) ((Var *) n)->varlevelsup);
		return false;
	}
	if (IsA(n, PlaceHolderVar) || IsA(n, Aggref) || IsA(n, GroupingFunc) ||
		IsA(n, WindowFunc) || IsA(n, SubLink) || IsA(n, Query))
	{
		*max = 99;
		return false;
	}
	return expression_tree_walker(n, MaxLevelWalker, (void *) max);
}

static int
MaxLevel(Node *n)
{
	int			max = 0;

	(void) MaxLevelWalker(n, &max);
	return max;
}

typedef struct LateralSides
{
	Index		r_rti;
	Relids		outer;
} LateralSides;

/* 1: a column of r (this level), 0: a column of q (one level up), else -1 */
static int
LateralKeySide(Node *n, void *arg)
{
	LateralSides *ls = (LateralSides *) arg;
	Var		   *v;

	while (n != NULL && IsA(n, RelabelType))
		n = (Node *) ((RelabelType *) n)->arg;
	if (n == NULL || !IsA(n, Var))
		return -1;
	v = (Var *) n;
	if (v->varattno <= 0)
		return -1;
	if (v->varlevelsup == 0 && v->varno == ls->r_rti)
		return 1;
	if (v->varlevelsup == 1 && bms_is_member(v->varno, ls->outer))
		return 0;
	return -1;
}

/* Is innerrel a LATERAL kNN subquery over outerrel that the join can answer? */
static bool
FindLateral(PlannerInfo *root, RelOptInfo *outerrel, RelOptInfo *innerrel, GjLateral *lat)
{
	RangeTblEntry *rte;
	Query	   *sq;
	RangeTblRef *rtr;
	SortGroupClause *sgc;
	TargetEntry *tle;
	LateralSides ls;
	List	   *quals;
	ListCell   *lc;

	memset(lat, 0, sizeof(*lat));
	if (innerrel->reloptkind != RELOPT_BASEREL || innerrel->rtekind != RTE_SUBQUERY ||
		bms_is_empty(innerrel->lateral_relids) ||
		!bms_is_subset(innerrel->lateral_relids, outerrel->relids))
		return false;
	rte = planner_rt_fetch(innerrel->relid, root);
	if (!rte->lateral || rte->subquery == NULL)
		return false;
	sq = rte->subquery;
	if (sq->commandType != CMD_SELECT || sq->setOperations != NULL || sq->groupClause != NIL ||
		sq->groupingSets != NIL || sq->havingQual != NULL || sq->hasAggs ||
		sq->hasWindowFuncs || sq->hasTargetSRFs || sq->hasSubLinks || sq->hasDistinctOn ||
		sq->distinctClause != NIL || sq->rowMarks != NIL || sq->cteList != NIL ||
		sq->hasModifyingCTE || sq->hasForUpdate || sq->hasRowSecurity ||
		sq->limitOffset != NULL || sq->limitCount == NULL ||
		sq->limitOption != LIMIT_OPTION_COUNT || sq->sortClause == NIL ||
		list_length(sq->rtable) != 1 || list_length(sq->jointree->fromlist) != 1 ||
		!IsA(linitial(sq->jointree->fromlist), RangeTblRef))
		return false;
	rtr = linitial_node(RangeTblRef, sq->jointree->fromlist);
	lat->r_rti = rtr->rtindex;
	lat->r_rte = rt_fetch(rtr->rtindex, sq->rtable);
	if (lat->r_rte->rtekind != RTE_RELATION || lat->r_rte->tablesample != NULL ||
		lat->r_rte->securityQuals != NIL ||
		(lat->r_rte->relkind != RELKIND_RELATION && lat->r_rte->relkind != RELKIND_MATVIEW) ||
		(lat->r_rte->inh && has_subclass(lat->r_rte->relid)))
		return false;

	/* LIMIT k: free of this level's and the outer query's columns */
	if (MaxLevel(sq->limitCount) != 0 || contain_var_clause(sq->limitCount) ||
		contain_volatile_functions(sq->limitCount))
		return false;
	lat->limit = sq->limitCount;

	/* ORDER BY: the first key a distance between r and q, ascending */
	sgc = linitial_node(SortGroupClause, sq->sortClause);
	tle = get_sortgroupclause_tle(sgc, sq->targetList);
	if (sgc->nulls_first || get_opcode(sgc->sortop) != F_FLOAT8LT)
		return false;
	ls.r_rti = lat->r_rti;
	ls.outer = outerrel->relids;
	if (!GjDistanceOf((Node *) tle->expr, LateralKeySide, &ls, &lat->jc) ||
		lat->jc.metric == GJ_JM_GEODESIC)
		return false;
	lat->jc.clause = tle->expr;
	lat->jc.empty_false = false;	/* an ORDER BY ranks every row */

	/* every expression: Vars of r and of the level above only, nothing volatile */
	foreach(lc, sq->targetList)
	{
		Node	   *e = (Node *) lfirst_node(TargetEntry, lc)->expr;

		if (MaxLevel(e) > 1 || contain_volatile_functions(e))
			return false;
	}

	/* WHERE: on r alone to the scan, the rest on each candidate pair */
	quals = make_ands_implicit((Expr *) sq->jointree->quals);
	foreach(lc, quals)
	{
		Node	   *q = (Node *) lfirst(lc);
		int			lev = MaxLevel(q);

		if (lev > 1 || contain_volatile_functions(q))
			return false;
		if (lev == 1)
			lat->pair_quals = lappend(lat->pair_quals, q);
		else
			lat->scan_quals = lappend(lat->scan_quals, q);
	}
	lat->sq = sq;
	return true;
}

/*
 * The candidates a row to ask of the kNN engine for LIMIT k when the
 * subquery's quals on the pair pass a share p of pairs: k and a margin;
 * or, where most pairs fail (p < 0.9), as many as make about 2k pass, two
 * standard deviations over (a row with fewer than k passing is searched
 * whole, every inner row against it); at most 1024 unless the margin is
 * more.  The caller caps it at the inner rows.
 */
double
GjLateralCandidates(double k, double p)
{
	double		margin = Max(4.0, floor((k + 3) / 4)) + 1,
				m;

	if (p >= 0.9 || k <= 0)
		return k + margin;
	m = k / Max(p, 1e-9);
	return Max(k + margin, Min(ceil(2 * m + 4 * sqrt(m)) + margin, 1024.0));
}

/*
 * Whether op is an equality the LATERAL kNN's executor groups the inner
 * rows by (knn_key.c): two arguments, a strict operator of a hash family
 * whose hash functions for both sides exist.  *hl, *hr: those functions.
 */
bool
GjLateralKeyOperator(const OpExpr *op, Oid *hl, Oid *hr)
{
	return list_length(op->args) == 2 &&
		op_hashjoinable(op->opno, exprType(linitial(op->args))) && op_strict(op->opno) &&
		get_op_hash_functions(op->opno, hl, hr);
}

/*
 * The most inner rows a key of the pair quals' equality may have for its
 * outer rows to be answered from them outright, each checked, without the
 * engine (knn_key.c): about as many as the candidates a row's answer
 * checks where most fail, and at least 256.
 */
double
GjLateralKeyDirect(double k)
{
	return Max(256.0, 4 * (k + 1));
}

/*
 * The share of pairs the pair quals pass, as far as the statistics say:
 * each r.c = <an expression of q> by the equality's own estimator
 * (eqsel) passes 1 / (r.c's distinct values); the others are taken to pass
 * every pair (r.id <> q.id, the pgvector idiom, passes nearly all).
 * *group: the inner rows a key has, where such an equality is one the
 * executor groups the inner rows by (a strict operator of a hash family:
 * knn_key.c), else all of them.
 */
static double
PairPassEstimate(GjLateral *lat, double rows, double *group)
{
	double		p = 1.0;
	ListCell   *lc;
	Oid			hl,
				hr;

	*group = rows;

	foreach(lc, lat->pair_quals)
	{
		OpExpr	   *op = lfirst(lc);
		Var		   *v = NULL;
		HeapTuple	tp;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2 || get_oprrest(op->opno) != F_EQSEL)
			continue;
		for (int i = 0; i < 2 && v == NULL; i++)
		{
			Node	   *a = strip_implicit_coercions(list_nth(op->args, i));
			Node	   *b = list_nth(op->args, 1 - i);

			if (IsA(a, Var) && ((Var *) a)->varlevelsup == 0 && ((Var *) a)->varno == lat->r_rti &&
				((Var *) a)->varattno > 0 && MaxLevel(b) == 1)
				v = (Var *) a;
		}
		if (v == NULL)
			continue;
		tp = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(lat->r_rte->relid),
							 Int16GetDatum(v->varattno), BoolGetDatum(false));
		if (HeapTupleIsValid(tp))
		{
			float4		sd = ((Form_pg_statistic) GETSTRUCT(tp))->stadistinct;
			double		nd = sd > 0 ? sd : -sd * rows;

			if (nd >= 1)
			{
				p /= nd;
				if (GjLateralKeyOperator(op, &hl, &hr))
					*group = Min(*group, rows / nd);
			}
			ReleaseSysCache(tp);
		}
	}
	return p;
}

/* P(X < k) for X Poisson of mean lambda (a normal approximation past 1000 terms) */
static double
PoissonBelow(double lambda, double k)
{
	double		term,
				sum;

	if (k <= 0)
		return 0.0;
	if (k > 1000)
		return 0.5 * erfc((lambda - k + 0.5) / sqrt(2 * Max(lambda, 1e-9)));
	term = exp(-lambda);
	sum = 0;
	for (int i = 0; i < (int) k; i++)
	{
		sum += term;
		term *= lambda / (i + 1);
	}
	return Min(sum, 1.0);
}

/* The r row estimate of the subquery's own plan, and its pages. */
static void
ScanSize(RelOptInfo *innerrel, GjLateral *lat, double *rows, double *pages)
{
	PlannerInfo *sub = innerrel->subroot;
	RelOptInfo *r = (sub != NULL && lat->r_rti < (Index) sub->simple_rel_array_size) ?
		sub->simple_rel_array[lat->r_rti] : NULL;

	*rows = r != NULL ? Max(r->tuples, 1.0) : 1000.0;
	*pages = r != NULL ? Max((double) r->pages, 1.0) : 10.0;
}

bool
GjLateralPath(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
			  RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra,
			  Path *outer_path, double *startup, double *total)
{
	GjLateral	lat;
	double		outer_rows,
				n,
				pages,
				k = 10,
				k2,
				p,
				group,
				base,
				checked,
				whole,
				dims = 2,
				engine,
				scan,
				key;
	List	   *joinquals,
			   *otherquals;
	QualCost	qc;

	if (!FindLateral(root, outerrel, innerrel, &lat))
		return false;
	if (IS_OUTER_JOIN(jointype))
	{
		/* LEFT JOIN LATERAL (..) ON true: nothing may decide a match but the rows */
		extract_actual_join_clauses(extra->restrictlist, joinrel->relids, &joinquals, &otherquals);
		if (joinquals != NIL || innerrel->baserestrictinfo != NIL)
			return false;
	}
	if (IsA(lat.limit, Const) && !((Const *) lat.limit)->constisnull)
		k = Max((double) DatumGetInt64(((Const *) lat.limit)->constvalue), 0.0);
	if (lat.jc.kind == GJ_KEY_GEOGRAPHY)
		dims = 3;
	else if (lat.jc.kind == GJ_KEY_VECTOR || lat.jc.kind == GJ_KEY_HALFVEC)
		dims = Max(exprTypmod((Node *) lat.jc.inner_key), 1);
	outer_rows = Max(outer_path->rows, 1.0);
	ScanSize(innerrel, &lat, &n, &pages);
	p = PairPassEstimate(&lat, n, &group);
	k2 = Min(GjLateralCandidates(k, p), n);
	/*
	 * Where most pairs fail the pair quals: a row's candidates are checked
	 * until k pass (about k / p of them), and a row with fewer than k
	 * passing among its k2 is searched whole (the passing ones taken as a
	 * Poisson count of mean k2 p), among its key's rows where the quals
	 * have one (knn_key.c)
	 */
	checked = p < 0.9 ? Min(k2, k / Max(p, 1e-9)) : k2;
	whole = p < 0.9 && k2 < n ? PoissonBelow(k2 * p, k) : 0.0;
	/* the scan of r, the index, each q row's probe and its k2 candidates */
	scan = seq_page_cost * pages + cpu_tuple_cost * n;
	base = Min(GjLateralCandidates(k, 1.0), n);
	engine = (outer_rows + n) * GJ_KNN_ROW_OPERATORS * cpu_operator_cost +
		outer_rows * base * GJ_KNN_ROW_OPERATORS * cpu_operator_cost;
	/* more candidates a row (most pairs failing the pair quals): a compare and a move each */
	engine += outer_rows * Max(k2 - base, 0.0) * cpu_operator_cost;
	if (dims > 6)
		engine += outer_rows * n * dims * GJ_KNN_PAIR_DIM_COST;
	if (group <= GjLateralKeyDirect(k))
	{
		/* a small key's rows answer its rows outright: no engine, each row checked */
		engine = (outer_rows + n) * GJ_KNN_ROW_OPERATORS * cpu_operator_cost;
		checked = group;
		whole = 0.0;
	}
	/*
	 * Each candidate: the subquery's quals on the pair at their cost, and its
	 * distance as a loop over the coordinates, whatever the function's
	 * declared COST (PostGIS declares its functions costly to steer the
	 * planner to an index scan, which computes the same distance per row).
	 */
	cost_qual_eval(&qc, lat.pair_quals, root);
	key = cpu_operator_cost * (GJ_KNN_ROW_OPERATORS + dims / 4.0);
	*startup = outer_path->total_cost + scan + engine;
	*total = *startup + outer_rows * (checked + whole * group) * (key + qc.per_tuple + cpu_tuple_cost) +
		joinrel->rows * (cpu_tuple_cost + joinrel->reltarget->cost.per_tuple);
	return true;
}

/* A subquery expression at this level: r's Vars to rti, q's one level down. */
static Node *
ToJoinLevel(PlannerInfo *root, Node *n, Index from, Index rti)
{
	n = copyObject(n);
	ChangeVarNodes(n, from, rti, 0);
	IncrementVarSublevelsUp(n, -1, 1);
	return eval_const_expressions(root, n);
}

/* Collect the Vars of rel rti in n into *vars (no duplicates). */
static List *
AddVarsOf(List *vars, Node *n, Index rti)
{
	List	   *all = pull_var_clause(n, PVC_RECURSE_PLACEHOLDERS);
	ListCell   *lc;

	foreach(lc, all)
	{
		Var		   *v = lfirst_node(Var, lc);

		if (v->varno == rti && !list_member(vars, v))
			vars = lappend(vars, v);
	}
	return vars;
}

Plan *
GjLateralPlan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *custom_plans, CustomScan *cscan)
{
	JoinType	jointype = (JoinType) intVal(linitial(best_path->custom_private));
	List	   *restrictlist = lsecond(best_path->custom_private);
	Index		inner_relid = (Index) intVal(lfourth(best_path->custom_private));
	RelOptInfo *innerrel = find_base_rel(root, inner_relid);
	Path	   *outer_path = linitial(best_path->custom_paths);
	Plan	   *outer_plan = linitial(custom_plans);
	GjLateral	lat;
	RangeTblEntry *nrte;
	Index		nrti;
	SeqScan    *scan;
	List	   *joinquals,
			   *otherquals,
			   *scan_quals = NIL,
			   *pair_quals = NIL,
			   *order_keys = NIL,
			   *souts = NIL,
			   *rvars = NIL,
			   *scan_tlist = NIL,
			   *sortops = NIL,
			   *colls = NIL,
			   *nfirst = NIL;
	Node	   *okey,
			   *ikey,
			   *limit,
			   *first;
	AttrNumber	resno = 1;
	ListCell   *lc;
	double		n,
				pages;
	bool		self = false;
	List	   *self_map = NIL;

	if (!FindLateral(root, outer_path->parent, innerrel, &lat))
		elog(ERROR, "GpuJoin: the LATERAL subquery is no longer a kNN search");

	/* r again, for our scan: the subquery's RTE, its permissions with it */
	nrte = copyObject(lat.r_rte);
	GjCopyRtePermissions(root->parse, lat.sq, nrte);
	root->parse->rtable = lappend(root->parse->rtable, nrte);
	nrti = list_length(root->parse->rtable);

	okey = ToJoinLevel(root, (Node *) lat.jc.outer_key, lat.r_rti, nrti);
	ikey = ToJoinLevel(root, (Node *) lat.jc.inner_key, lat.r_rti, nrti);
	first = ToJoinLevel(root, (Node *) lat.jc.clause, lat.r_rti, nrti);
	limit = ToJoinLevel(root, lat.limit, lat.r_rti, nrti);
	foreach(lc, lat.scan_quals)
		scan_quals = lappend(scan_quals, ToJoinLevel(root, lfirst(lc), lat.r_rti, nrti));
	foreach(lc, lat.pair_quals)
		pair_quals = lappend(pair_quals, ToJoinLevel(root, lfirst(lc), lat.r_rti, nrti));
	foreach(lc, lat.sq->sortClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, lat.sq->targetList);
		Node	   *key = ToJoinLevel(root, (Node *) tle->expr, lat.r_rti, nrti);

		order_keys = lappend(order_keys, key);
		sortops = lappend(sortops, makeInteger((int) sgc->sortop));
		colls = lappend(colls, makeInteger((int) exprCollation(key)));
		nfirst = lappend(nfirst, makeInteger(sgc->nulls_first));
	}
	/* the subquery's output columns the join needs: Var(s, i) is its column i */
	foreach(lc, innerrel->reltarget->exprs)
	{
		Var		   *v = (Var *) lfirst(lc);
		TargetEntry *tle;

		if (!IsA(v, Var) || v->varno != inner_relid || v->varattno <= 0)
			elog(ERROR, "GpuJoin: a LATERAL subquery's output is not one of its columns");
		tle = get_tle_by_resno(lat.sq->targetList, v->varattno);
		souts = lappend(souts, ToJoinLevel(root, (Node *) tle->expr, lat.r_rti, nrti));
	}

	/*
	 * One table on both sides, read with the same quals (q is r): the outer
	 * plan's columns come from our scan's rows too, read once.
	 */
	if (GjSameTableRows(root, outer_path->parent, nrte->relid, scan_quals, nrti))
	{
		self = true;
		foreach(lc, outer_plan->targetlist)
		{
			Var		   *v = (Var *) lfirst_node(TargetEntry, lc)->expr;

			if (!IsA(v, Var) || v->varno != outer_path->parent->relid)
				self = false;
		}
		if (self)
			foreach(lc, outer_plan->targetlist)
		{
			Var		   *v = (Var *) copyObject(lfirst_node(TargetEntry, lc)->expr);

			v->varno = v->varnosyn = nrti;
			rvars = AddVarsOf(rvars, (Node *) v, nrti);
		}
	}

	/* our scan of r: the columns anything above needs, the quals on r alone */
	rvars = AddVarsOf(rvars, ikey, nrti);
	rvars = AddVarsOf(rvars, (Node *) pair_quals, nrti);
	rvars = AddVarsOf(rvars, (Node *) order_keys, nrti);
	rvars = AddVarsOf(rvars, (Node *) souts, nrti);
	scan = makeNode(SeqScan);
	scan->scan.scanrelid = nrti;
	scan->scan.plan.qual = scan_quals;
	foreach(lc, rvars)
		scan->scan.plan.targetlist = lappend(scan->scan.plan.targetlist,
											 makeTargetEntry((Expr *) copyObject(lfirst(lc)),
															 resno++, NULL, false));
	ScanSize(innerrel, &lat, &n, &pages);
	scan->scan.plan.startup_cost = 0;
	scan->scan.plan.total_cost = seq_page_cost * pages + cpu_tuple_cost * n;
	scan->scan.plan.plan_rows = n;
	scan->scan.plan.plan_width = 32;
	scan->scan.plan.parallel_aware = false;
	scan->scan.plan.parallel_safe = false;

	if (self)
	{
		/* each outer column's place among our scan's */
		foreach(lc, outer_plan->targetlist)
		{
			Var		   *v = (Var *) lfirst_node(TargetEntry, lc)->expr;
			ListCell   *lc2;
			int			k = 0;

			foreach(lc2, scan->scan.plan.targetlist)
			{
				Var		   *w = (Var *) lfirst_node(TargetEntry, lc2)->expr;

				k++;
				if (w->varattno == v->varattno)
					break;
			}
			self_map = lappend(self_map, makeInteger(k));
		}
	}

	/* the scan tuple: q's columns, r's, the subquery's */
	resno = 1;
	foreach(lc, outer_plan->targetlist)
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) copyObject(lfirst_node(TargetEntry, lc)->expr),
											 resno++, NULL, false));
	foreach(lc, scan->scan.plan.targetlist)
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) copyObject(lfirst_node(TargetEntry, lc)->expr),
											 resno++, NULL, false));
	foreach(lc, innerrel->reltarget->exprs)
		scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr *) copyObject(lfirst(lc)),
														 resno++, NULL, false));

	/* quals of the join and on s: a filter on each output row (inner join) */
	if (IS_OUTER_JOIN(jointype))
		extract_actual_join_clauses(restrictlist, rel->relids, &joinquals, &otherquals);
	else
	{
		joinquals = extract_actual_clauses(restrictlist, false);
		otherquals = NIL;
	}
	joinquals = list_concat(joinquals, extract_actual_clauses(innerrel->baserestrictinfo, false));

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = otherquals;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = lappend(list_copy(custom_plans), scan);
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = bms_copy(rel->relids);
	cscan->custom_exprs = list_make5(joinquals, okey, ikey, limit, makeBoolConst(true, false));
	cscan->custom_exprs = lappend(cscan->custom_exprs, first);
	cscan->custom_exprs = lappend(cscan->custom_exprs, NIL);
	cscan->custom_exprs = lappend(cscan->custom_exprs, pair_quals);
	cscan->custom_exprs = lappend(cscan->custom_exprs, order_keys);
	cscan->custom_exprs = lappend(cscan->custom_exprs, souts);
	cscan->custom_private = list_make5(makeInteger(jointype), makeInteger(lat.jc.kind),
									   makeInteger(lat.jc.metric), makeInteger(0),
									   makeInteger(list_length(outer_plan->targetlist)));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger((int) lat.jc.postgis_nsp));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(GJ_JOIN_KNN));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(list_length(scan->scan.plan.targetlist)));
	cscan->custom_private = lappend(cscan->custom_private, sortops);
	cscan->custom_private = lappend(cscan->custom_private, colls);
	cscan->custom_private = lappend(cscan->custom_private, nfirst);
	cscan->custom_private = lappend(cscan->custom_private, self_map);
	GjAlignNullingMarks(cscan);
	return &cscan->scan.plan;
}
