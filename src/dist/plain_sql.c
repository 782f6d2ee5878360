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

static Node *
StripRelabel(Node *n)
{
	while (n != NULL && IsA(n, RelabelType))
		n = (Node *) ((RelabelType *) n)->arg;
	return n;
}

/* GjKeySideFn: a Var of the level is side 0 until a Var of another entry makes side 1. */
int
GjPlainVarSide(Node *n, void *arg)
{
	GjVarSides *vs = (GjVarSides *) arg;
	Var		   *v;

	n = StripRelabel(n);
	if (n == NULL || !IsA(n, Var))
		return -1;
	v = (Var *) n;
	if (v->varlevelsup != 0)
		return -1;
	if (vs->varno[0] == 0 || vs->varno[0] == v->varno)
		return vs->varno[0] = v->varno, 0;
	vs->varno[1] = v->varno;
	return 1;
}

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

/* A table's entry of q (rti) that a subquery could stand for. */
bool
GjPlainTableEntry(Query *q, Index rti)
{
	RangeTblEntry *rte = rt_fetch(rti, q->rtable);

	return rte->rtekind == RTE_RELATION && rte->tablesample == NULL &&
		get_parse_rowmark(q, rti) == NULL;
}

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
bool
GjPlainJoinsTwoEntries(List *args)
{
	Node	   *a,
			   *b;

	if (list_length(args) < 2)
		return false;
	a = StripRelabel(linitial(args));
	b = StripRelabel(lsecond(args));
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
	if (((IsA(n, FuncExpr) && GjPlainJoinsTwoEntries(((FuncExpr *) n)->args)) ||
		 (IsA(n, OpExpr) && GjPlainJoinsTwoEntries(((OpExpr *) n)->args))) &&
		GjDistancePredicateOf(n, GjPlainVarSide, &vs, &jc) &&
		vs.varno[0] != vs.varno[1] && GjPlainTableEntry(f->q, vs.varno[0]) &&
		GjPlainTableEntry(f->q, vs.varno[1]))
		AddPair(f, vs.varno[0], vs.varno[1]);
	return expression_tree_walker(n, FindDistances, (void *) f);
}

/* A Var of entry rti (at levelsup) other than a user column: the entry must stay a table. */
typedef struct OddUse
{
	Index		rti;
	int			levelsup;
} OddUse;

static bool
FindOddUse(Node *n, OddUse *u)
{
	if (n == NULL)
		return false;
	if (IsA(n, Var))
		return ((Var *) n)->varno == u->rti && (int) ((Var *) n)->varlevelsup == u->levelsup &&
			((Var *) n)->varattno <= 0;
	if (IsA(n, Query))
	{
		bool		found;

		u->levelsup++;
		found = query_tree_walker((Query *) n, FindOddUse, (void *) u, 0);
		u->levelsup--;
		return found;
	}
	return expression_tree_walker(n, FindOddUse, (void *) u);
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

/*
 * A table's entry becomes subquery sub; its permissions, security quals
 * and lock are the subquery's business now (16+: the entry's permission
 * info stays in the query's list, checked as before).
 */
void
GjPlainEntryToSubquery(RangeTblEntry *rte, Query *sub)
{
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = sub;
	rte->relid = InvalidOid;
	rte->relkind = 0;
	rte->rellockmode = 0;
	rte->inh = false;
	rte->securityQuals = NIL;
#if PG_VERSION_NUM >= 160000
	rte->perminfoindex = 0;
#else
	rte->requiredPerms = 0;
	rte->checkAsUser = InvalidOid;
	rte->selectedCols = NULL;
	rte->insertedCols = NULL;
	rte->updatedCols = NULL;
	rte->extraUpdatedCols = NULL;
#endif
}

/*
 * Whether q uses entry rti otherwise than by its user columns (a whole-row
 * or system column), the range table too: a LATERAL subquery may use the
 * entry's whole row.
 */
bool
GjPlainOddUse(Query *q, Index rti)
{
	OddUse		u = {rti, 0};

	return query_tree_walker(q, FindOddUse, (void *) &u, 0);
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

/*
 * fn on q and on the queries in its FROM and WITH (a join written inside a
 * subquery, a set operation, a CTE), each its own level.
 */
void
GjPlainEachLevel(Query *q, GjPlainLevelFn fn, void *arg, int depth)
{
	ListCell   *lc;

	if (depth > 8)
		return;
	fn(q, arg);
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_SUBQUERY && rte->subquery != NULL)
			GjPlainEachLevel(rte->subquery, fn, arg, depth + 1);
	}
	foreach(lc, q->cteList)
	{
		CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);

		if (IsA(cte->ctequery, Query) && ((Query *) cte->ctequery)->commandType == CMD_SELECT)
			GjPlainEachLevel((Query *) cte->ctequery, fn, arg, depth + 1);
	}
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
	n = StripRelabel(n);
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
		if (GjDistanceOf((Node *) tle->expr, LateralSide, NULL, &jc) &&
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
			GjPlainPairs(parse, &relids);
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
		lateral_knn = GjCitusInstalled() && DistributedLateralKnn(parse);
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
