/*
 * plain_sql.c
 *		Plain SQL distance joins of Citus-distributed tables: the join
 *		Citus refuses, made one it runs, with the GpuJoin doing the join.
 *
 * Citus plans a query over distributed tables before PostgreSQL does, and
 * a join of two of them on anything but their distribution columns
 * (ST_DWithin, <-> <= d) is an error:
 * "complex joins are only supported when all distributed tables are
 * joined on their distribution columns".  Citus does run such a join when
 * each table is a subquery it cannot push down: it reads each one's rows
 * from the workers into an intermediate result (its recursive planning),
 * then joins the results on the coordinator, where PostgreSQL's planner,
 * and so gpujoin's join path (join/path.c), plans the join.
 *
 * This planner hook, which runs before Citus's (gpujoin must be loaded
 * after citus), finds such joins and wraps each distributed table of one
 * in SELECT every column FROM t OFFSET 0: the same rows and columns, the
 * same permissions and row security (the table's entry moves into the
 * subquery whole), and a subquery Citus plans as an intermediate result.
 * The rows are PostgreSQL's: the GpuJoin decides every pair by the
 * query's own quals.  Every row of both tables travels to the
 * coordinator, as with the functions' calls that the coordinator runs.
 * Before that, the inner joins that the workers can answer exactly (on
 * columns that declare points or vectors) become one eps_join call each,
 * which runs there (plain_pairs.c); this path takes the others.
 *
 * Left alone: queries without Citus or without such a join, tables that
 * are not hash-distributed (a reference table joins anywhere already),
 * a table whose entry the query uses otherwise than by its columns (a
 * whole-row or system column, FOR UPDATE, TABLESAMPLE), and the LATERAL
 * kNN (ORDER BY <-> LIMIT k): wrapped so, its subquery re-read the whole
 * intermediate result for every outer row (20K x 50K rows: 9.6 minutes),
 * where knn_join runs on the workers.  Citus's error for that one gets a
 * hint naming knn_join.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "compat.h"
#include "dist/plain_internal.h"

static planner_hook_type prev_planner = NULL;

/*
 * Pairs of tables a distance joins, found in a query's quals: entries a
 * and b of query q.  Found without a catalog lookup; Citus is asked only
 * about the pairs.
 */
typedef struct DistancePair
{
	Query	   *q;
	Index		a;
	Index		b;
} DistancePair;

typedef struct Finder
{
	Query	   *q;
	List	   *pairs;			/* DistancePair * */
} Finder;

static void
AddPair(Finder *f, Index a, Index b)
{
	DistancePair *p = palloc(sizeof(DistancePair));

	p->q = f->q;
	p->a = a;
	p->b = b;
	f->pairs = lappend(f->pairs, p);
}

/*
 * Whether the first two arguments are columns of two entries of this level:
 * every planned query passes here, so the catalog lookups of
 * GjDistancePredicateOf wait for a call that could be a join's distance.
 */
static bool
JoinsTwoEntries(List *args)
{
	Node	   *a,
			   *b;

	if (list_length(args) < 2)
		return false;
	a = GjPlainStripRelabel(linitial(args));
	b = GjPlainStripRelabel(lsecond(args));
	return a != NULL && b != NULL && IsA(a, Var) && IsA(b, Var) &&
		((Var *) a)->varlevelsup == 0 && ((Var *) b)->varlevelsup == 0 &&
		((Var *) a)->varno != ((Var *) b)->varno;
}

static bool
FindDistances(Node *n, Finder *f)
{
	GjVarSides	vs = {0};
	GjJoinClause jc;

	if (n == NULL)
		return false;
	if (IsA(n, Query))
		return false;			/* a sublink's query: its own level */
	if (((IsA(n, FuncExpr) && JoinsTwoEntries(((FuncExpr *) n)->args)) ||
		 (IsA(n, OpExpr) && JoinsTwoEntries(((OpExpr *) n)->args))) &&
		GjDistancePredicateOf(n, GjPlainVarSide, &vs, &jc) &&
		vs.varno[0] != vs.varno[1] && GjPlainTableEntry(f->q, vs.varno[0]) &&
		GjPlainTableEntry(f->q, vs.varno[1]))
		AddPair(f, vs.varno[0], vs.varno[1]);
	return expression_tree_walker(n, FindDistances, (void *) f);
}

/*
 * Entry rti of q becomes (SELECT every column FROM t OFFSET 0): the table's
 * entry, permissions and security quals move into the subquery; dropped
 * columns keep their numbers as NULLs, so q's Vars need no change.
 */
static void
WrapTable(Query *q, Index rti)
{
	RangeTblEntry *rte = rt_fetch(rti, q->rtable);
	RangeTblEntry *inner = copyObject(rte);
	Query	   *sub = makeNode(Query);
	RangeTblRef *ref = makeNode(RangeTblRef);
	Relation	rel = table_open(rte->relid, NoLock);	/* locked by the parser */
	TupleDesc	td = RelationGetDescr(rel);
	List	   *tlist = NIL;

	for (int a = 1; a <= td->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(td, a - 1);
		Expr	   *e = att->attisdropped ? (Expr *) makeNullConst(INT4OID, -1, InvalidOid) :
			(Expr *) makeVar(1, a, att->atttypid, att->atttypmod, att->attcollation, 0);

		tlist = lappend(tlist, makeTargetEntry(e, a, pstrdup(NameStr(att->attname)), false));
	}
	table_close(rel, NoLock);

	sub->commandType = CMD_SELECT;
	sub->querySource = QSRC_ORIGINAL;
	sub->canSetTag = true;
	sub->hasRowSecurity = q->hasRowSecurity;
	inner->lateral = false;
	inner->inFromCl = true;
#if PG_VERSION_NUM >= 160000
	inner->perminfoindex = 0;
	if (rte->perminfoindex != 0)
	{
		sub->rteperminfos = list_make1(copyObject(getRTEPermissionInfo(q->rteperminfos, rte)));
		inner->perminfoindex = 1;
	}
#endif
	sub->rtable = list_make1(inner);
	ref->rtindex = 1;
	sub->jointree = makeFromExpr(list_make1(ref), NULL);
	sub->targetList = tlist;
	sub->limitOffset = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
										  Int64GetDatum(0), false, FLOAT8PASSBYVAL);
	sub->limitOption = LIMIT_OPTION_COUNT;
	GjPlainEntryToSubquery(rte, sub);
}

/* A pair's entry: wrap it once (entries already wrapped are subqueries now). */
static int
WrapEntry(Query *q, Index rti)
{
	if (rt_fetch(rti, q->rtable)->rtekind != RTE_RELATION || GjPlainOddUse(q, rti))
		return 0;
	WrapTable(q, rti);
	return 1;
}

/* GjPlainLevelFn: the distance joins of one level. */
static void
FindInLevel(Query *q, void *arg)
{
	Finder	   *f = (Finder *) arg;

	f->q = q;
	FindDistances((Node *) q->jointree, f);
}

/* A Var of a LATERAL subquery's ORDER BY key: its own table's side 0, the query's side 1. */
static int
LateralSide(Node *n, void *arg)
{
	n = GjPlainStripRelabel(n);
	if (n == NULL || !IsA(n, Var) || ((Var *) n)->varlevelsup > 1)
		return -1;
	return (int) ((Var *) n)->varlevelsup;
}

static bool
HasDistributedTable(Query *q)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION && GjCitusDistributed(rte->relid))
			return true;
	}
	return false;
}

/*
 * A LATERAL kNN of two distributed tables in q's FROM: q JOIN LATERAL
 * (SELECT .. FROM r ORDER BY <distance of r and q> LIMIT k), which Citus
 * refuses.
 */
static bool
DistributedLateralKnn(Query *q)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		Query	   *sq = rte->subquery;
		TargetEntry *tle;
		GjJoinClause jc;

		if (rte->rtekind != RTE_SUBQUERY || !rte->lateral || sq == NULL ||
			sq->limitCount == NULL || sq->sortClause == NIL)
			continue;
		tle = get_sortgroupclause_tle(linitial_node(SortGroupClause, sq->sortClause), sq->targetList);
		/* Citus asked only now: every query planned comes here */
		if (GjDistanceOf((Node *) tle->expr, LateralSide, NULL, &jc) && GjCitusInstalled() &&
			HasDistributedTable(sq) && HasDistributedTable(q))
			return true;
	}
	return false;
}

/*
 * Citus plans q; its error for a LATERAL kNN of distributed tables (a
 * feature it does not support) gets a hint: knn_join answers it on the
 * workers.
 */
static PlannedStmt *
CitusPlanner(Query *parse, const char *query_string, int cursor_options,
			 ParamListInfo bound_params, bool lateral_knn)
{
	MemoryContext cxt = CurrentMemoryContext;
	PlannedStmt *stmt = NULL;

	if (!lateral_knn)
		return prev_planner(parse, query_string, cursor_options, bound_params);
	PG_TRY();
	{
		stmt = prev_planner(parse, query_string, cursor_options, bound_params);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_FEATURE_NOT_SUPPORTED || edata->hint != NULL)
			PG_RE_THROW();
		FlushErrorState();
		edata->hint = pstrdup("gpujoin's knn_join(query_tbl, ref_tbl, cols, k) finds each row's k nearest "
							  "neighbours of distributed tables on the Citus workers.");
		ReThrowError(edata);
	}
	PG_END_TRY();
	return stmt;
}

/* The planner hook: wrap, then whoever planned before us (Citus). */
static PlannedStmt *
GjDistPlanner(Query *parse, const char *query_string, int cursor_options,
			  ParamListInfo bound_params)
{
	const char *join = GetConfigOption("gpujoin.enable_join", true, false);
	const char *dist = GetConfigOption("gpujoin.distributed", true, false);
	bool		lateral_knn = false;
	List	   *relids = NIL;
	PlannedStmt *stmt;

	if (parse->commandType == CMD_SELECT && parse->rtable != NIL &&
		join != NULL && strcmp(join, "on") == 0)
	{
		Finder		f = {parse, NIL};
		ListCell   *lc;
		int			n = 0;

		/*
		 * the joins the workers can answer, first (gpujoin.distributed off:
		 * none, every row is read here); then the others' tables read here
		 */
		if (dist != NULL && strcmp(dist, "on") == 0)
		{
			GjPlainPairs(parse, &relids);
			GjPlainKnn(parse, &relids, bound_params);
		}
		GjPlainEachLevel(parse, FindInLevel, &f, 0);
		if (f.pairs != NIL && !GjCitusInstalled())
			f.pairs = NIL;
		/* both tables hash-distributed: the join Citus refuses */
		foreach(lc, f.pairs)
		{
			DistancePair *p = (DistancePair *) lfirst(lc);
			RangeTblEntry *ra = rt_fetch(p->a, p->q->rtable);
			RangeTblEntry *rb = rt_fetch(p->b, p->q->rtable);

			if (ra->rtekind != RTE_RELATION || rb->rtekind != RTE_RELATION ||
				!GjCitusDistributed(ra->relid) || !GjCitusDistributed(rb->relid))
				continue;
			n += WrapEntry(p->q, p->a);
			n += WrapEntry(p->q, p->b);
		}
		if (n > 0)
			elog(DEBUG1, "gpujoin: %d distributed tables of distance joins read as subqueries", n);
		lateral_knn = DistributedLateralKnn(parse);
	}
	if (prev_planner)
		stmt = CitusPlanner(parse, query_string, cursor_options, bound_params, lateral_knn);
	else
		stmt = standard_planner(parse, query_string, cursor_options, bound_params);
	/* a plan that reads rewritten tables through a call still depends on them */
	stmt->relationOids = list_concat(stmt->relationOids, relids);
	return stmt;
}

/* From _PG_init: the hook, before any planner hook already there (Citus's). */
void
GjDistPlainInit(void)
{
	prev_planner = planner_hook;
	planner_hook = GjDistPlanner;
}
