/*
 * plain_query.c
 *		What the planner hook's files (plain_sql.c, plain_pairs.c,
 *		plain_knn.c) do to a query before Citus plans it: find the sides of
 *		a distance, tell whether a table's entry may become a subquery and
 *		whether the caller reads it plainly, make it one, analyse the SQL
 *		that stands for it, and visit each level of the query.
 */
#include "postgres.h"

#include "access/table.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "compat.h"
#include "dist/plain_internal.h"

/* n without the binary-compatible casts around it */
Node *
GjPlainStripRelabel(Node *n)
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

	n = GjPlainStripRelabel(n);
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

/* A table's entry of q (rti) that a subquery could stand for. */
bool
GjPlainTableEntry(Query *q, Index rti)
{
	RangeTblEntry *rte = rt_fetch(rti, q->rtable);

	return rte->rtekind == RTE_RELATION && rte->tablesample == NULL &&
		get_parse_rowmark(q, rti) == NULL;
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

/* Whether rti is reached from n through FROM lists and inner joins only. */
bool
GjPlainInnerReach(Node *n, Index rti)
{
	ListCell   *lc;

	if (IsA(n, RangeTblRef))
		return ((RangeTblRef *) n)->rtindex == (int) rti;
	if (IsA(n, JoinExpr))
		return ((JoinExpr *) n)->jointype == JOIN_INNER &&
			(GjPlainInnerReach(((JoinExpr *) n)->larg, rti) || GjPlainInnerReach(((JoinExpr *) n)->rarg, rti));
	if (IsA(n, FromExpr))
		foreach(lc, ((FromExpr *) n)->fromlist)
			if (GjPlainInnerReach(lfirst(lc), rti))
				return true;
	return false;
}

/* The caller reads the entry's table plainly, every column of it. */
bool
GjPlainReadAsCaller(Query *q, RangeTblEntry *rte)
{
#if PG_VERSION_NUM >= 160000
	if (rte->perminfoindex != 0 &&
		OidIsValid(getRTEPermissionInfo(q->rteperminfos, rte)->checkAsUser))
		return false;
#else
	if (OidIsValid(rte->checkAsUser))
		return false;
#endif
	return rte->securityQuals == NIL &&
		pg_class_aclcheck(rte->relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK &&
		check_enable_rls(rte->relid, InvalidOid, true) == RLS_NONE;
}

static bool
CountCitusTables(Node *n, int *count)
{
	if (n == NULL)
		return false;
	if (IsA(n, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) n;

		if (rte->rtekind == RTE_RELATION && GjCitusTable(rte->relid))
			(*count)++;
		return false;
	}
	if (IsA(n, Query))
		return query_tree_walker((Query *) n, CountCitusTables, (void *) count,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(n, CountCitusTables, (void *) count);
}

/* The entries of Citus tables in parse, every level and sublink. */
int
GjPlainCitusTables(Query *parse)
{
	int			count = 0;

	query_tree_walker(parse, CountCitusTables, (void *) &count, QTW_EXAMINE_RTES_BEFORE);
	return count;
}

/*
 * The query of sql, a SELECT the hook wrote, analysed without
 * post_parse_analyze_hook: no statistics entry for SQL nobody wrote.
 */
Query *
GjPlainAnalyze(const char *sql)
{
	List	   *raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	ParseState *pstate = make_parsestate(NULL);
	Query	   *sub;

	pstate->p_sourcetext = sql;
	sub = transformTopLevelStmt(pstate, linitial_node(RawStmt, raw));
	free_parsestate(pstate);
	return sub;
}

/*
 * "(row).c1, .., (row).cn, " of table relid's columns by number, NULL for
 * a dropped one: the entry's columns out of a composite; *natts their count
 */
char *
GjPlainRowColumns(Oid relid, const char *row, int *natts)
{
	Relation	rel = table_open(relid, NoLock);	/* locked by the parser */
	TupleDesc	td = RelationGetDescr(rel);
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 0; i < td->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(td, i);

		if (att->attisdropped)
			appendStringInfoString(&s, "NULL::pg_catalog.int4, ");
		else
			appendStringInfo(&s, "(%s).%s, ", row, quote_identifier(NameStr(att->attname)));
	}
	*natts = td->natts;
	table_close(rel, NoLock);
	return s.data;
}
