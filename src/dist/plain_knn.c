/*
 * plain_knn.c
 *		A LATERAL kNN of two Citus-distributed tables written in plain SQL,
 *		its neighbours found on the workers.
 *
 * SELECT .. FROM q CROSS JOIN LATERAL
 *	 (SELECT r.id, r.g <-> q.g AS d FROM r ORDER BY r.g <-> q.g LIMIT 5) n
 * is a query Citus refuses.  Where it is exact, entry q of the query
 * becomes
 *
 *	  (SELECT (p.q).c1, .., (p.q).cn, p.r
 *	   FROM knn_lateral_join(q, r, ARRAY['g'], 5, query_key => NULL::q,
 *							 ref_key => NULL::r, ref_cols => ARRAY['g']) p
 *	   UNION ALL
 *	   SELECT (f.q).c1, .., (f.q).cn, f.r
 *	   FROM knn_lateral_fill(q, r, 'g', 'g', 5, NULL::q, NULL::r) f)
 *
 * one row for each of a q row's neighbours, each row whole (a key of the
 * table's own row type is the row: dist/ moves it between the workers and
 * returns it), and the subquery becomes (SELECT (q.r).id, (q.r).g <-> q.g),
 * its own target list over the neighbour's row.  So PostgreSQL computes
 * every column, and only the neighbours' rows travel to this node.
 * knn_lateral_join (0.10) is knn_join asked for PostgreSQL's order and
 * without its NOTICE of the rows it skips (knn_lateral_fill returns
 * them); an installation of 0.9 gets knn_join itself, with the NOTICE.
 *
 * Why the rows are PostgreSQL's (the subquery's first k rows, of which
 * ties may give any):
 *	- the key columns declare 2-D points alike (geometry(Point) or
 *	  geometry(Point, SRID)), and the order is by <-> or ST_Distance,
 *	  which PostGIS computes as sqrt(dx * dx + dy * dy) in float64: the
 *	  engine's sum, without contraction, and sqrt keeps its order; the
 *	  engine breaks ties on the smaller row, which is one of the orders
 *	  PostgreSQL may give;
 *	- PostGIS's distance is NULL where either point is NULL, empty or not
 *	  finite (or the distance overflows), and NULLs sort last in no order.
 *	  knn_join skips rows without a point; knn_lateral_fill (plpgsql, in
 *	  the extension's script) returns what they get: a q row without a
 *	  point any k rows of r, and where r has fewer than k points, every
 *	  other q row r's rows without one, up to k in all.  A neighbour whose
 *	  distance overflows is inf to the engine, after every finite one, as
 *	  its NULL is to PostgreSQL.
 *
 * Where it applies, and only there (else Citus's error, with plain_sql.c's
 * hint):
 *	- the subquery reads one table, r, with no grouping, DISTINCT, window,
 *	  set-returning function, sublink, OFFSET, locking or WITH TIES; one
 *	  ORDER BY key (more only for the query row's own kind, below),
 *	  ascending with NULLS LAST, the distance of a column of
 *	  r and a column of a table q of the query; LIMIT a constant k; no
 *	  WHERE, or where r is q's table, r.c <> q.c on a column c NOT NULL and
 *	  alone a unique index's key: the other rows, and knn_selfjoin(q, ..,
 *	  key => NULL::q) in place of knn_join (its rows: each row's k nearest
 *	  others), knn_lateral_fill told so (other_col); or (0.11) a WHERE on
 *	  r alone, which knn_lateral_join and knn_lateral_fill apply to r's
 *	  rows as they read them (ref_filter): the subquery's rows are the
 *	  first k of the rows where it holds, whatever the query row; or
 *	  (0.13) both ANDed, knn_lateral_selfjoin's ref_filter: the first k
 *	  others among the rows where it holds (and the
 *	  query's own WHERE on q alone is passed on too, query_filter, so
 *	  that only the rows it keeps are query rows: QueryFilter, for the
 *	  other rows' form too); and with any of these (0.14) r.m = q.m, the
 *	  query row's own kind (MatchQual: one type, its own =, hashable,
 *	  one deterministic collation or none), unless m is both tables'
 *	  distribution column and they are co-located, which Citus pushes
 *	  down itself: knn_lateral_join's query_match and ref_match
 *	  (knn_lateral_selfjoin's match_col), whose strips each hold their
 *	  kinds whole and answer every row themselves, rows without a point
 *	  and a LEFT JOIN's row too (keep_alone): no knn_lateral_fill; only
 *	  this form takes ORDER BY keys past the distance, columns of r
 *	  ascending (ORDER BY r.g <-> q.g, r.id: ref_order), which each
 *	  strip's query sorts by itself;
 *	- q and the subquery are reached from the query's FROM through inner
 *	  joins only (a q row without neighbours has no rows), or the subquery
 *	  is the right of a LEFT JOIN .. ON true whose left reaches q through
 *	  inner joins and left joins' left sides: a q row gets at least one row
 *	  unless it has no references at all (r empty, or only the row itself),
 *	  and then knn_lateral_fill returns it with a NULL reference, for which
 *	  the subquery has no row (WHERE the neighbour IS NOT NULL), so the
 *	  LEFT JOIN gives it NULLs; or (grouped) of a LEFT JOIN on a condition,
 *	  where a q row none of whose neighbours meets it gets NULLs once: then
 *	  entry q is each q row once with the array of its neighbours (GROUP BY
 *	  the row: q's table has a column NOT NULL and alone a unique key, so
 *	  no two rows are alike), and the subquery reads the array
 *	  (generate_subscripts), the condition staying the join's;
 *	- both tables are hash-distributed, read plainly by the caller, who has
 *	  SELECT on the whole table (plain_pairs.c's conditions), and their
 *	  row types have an order (knn_join's ties);
 *	- the query's only Citus tables are these.
 *
 * pgvector's <-> ranks in float32, where the engine's float64 order may
 * differ: on vector or halfvec columns of one type and modifier the call
 * is knn_lateral_join (knn_lateral_selfjoin for the other rows), whose
 * strips each answer by their own LATERAL query on the worker, by <->
 * itself (dist_knn.c), knn_join's arguments and rows otherwise.  A NULL
 * vector is the only value without a distance, which knn_lateral_fill
 * handles as it does a point's.  So does <=> (metric => 'cosine'), whose
 * distance of a zero vector is NaN, which sorts after every number and
 * before NULL: knn_lateral_fill (op => '<=>') returns those rows in that
 * order too.
 */
#include "postgres.h"

#include <limits.h>

#include "access/table.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_func.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/typcache.h"

#include "api/api.h"
#include "compat.h"
#include "dist/plain_internal.h"
#include "read/read.h"

static bool HasFunction(Oid nsp, const char *name, const char *arg);

/* One LATERAL kNN to rewrite: entries qe (the table) and ne (the subquery) of q. */
typedef struct KnnCandidate
{
	Query	   *q;
	Index		qe;
	Index		ne;
	AttrNumber	q_col;
	Index		r_rti;			/* r in the subquery */
	AttrNumber	r_col;
	AttrNumber	other;			/* WHERE r.other <> q.other: the other rows (knn_selfjoin) */
	AttrNumber	match[2];		/* WHERE r.m = q.m: q's column, r's (0: none; 0.14) */
	List	   *ref_order;		/* ... and ORDER BY's keys past the distance: r's columns
								 * (Integer attnos), ascending */
	char	   *ref_filter;		/* WHERE on r alone, as SQL over r's columns (or NULL) */
	char	   *query_filter;	/* the query's WHERE on q alone, the same over q's */
	List	   *filter_params;	/* ... its parameters, $1 .. in it (a generic plan's), or NIL */
	bool		left;			/* LEFT JOIN LATERAL .. ON true, or on a condition: */
	bool		grouped;		/* ... on a condition: a q row once, its neighbours an array */
	bool		pg_order;		/* pgvector's <-> or <=>: only knn_lateral_join has its order */
	bool		cosine;			/* <=>: metric => 'cosine', and the fill's op */
	int			k;
} KnnCandidate;

typedef struct KnnFinder
{
	ParamListInfo params;		/* the values of $1 .. of a custom plan, or NULL */
	Query	   *q;
	int			citus;			/* Citus installed: -1 not asked yet */
	int			bind;			/* knn_lateral_bound_filter installed (0.12): -1 not asked yet */
	List	   *found;			/* KnnCandidate * */
} KnnFinder;

/* GjKeySideFn: a column of r (the subquery's own entry) 0, one of the query's 1 */
static int
KnnSide(Node *n, void *arg)
{
	Index		r_rti = *(Index *) arg;
	Var		   *v;

	n = GjPlainStripRelabel(n);
	if (n == NULL || !IsA(n, Var) || ((Var *) n)->varattno <= 0)
		return -1;
	v = (Var *) n;
	if (v->varlevelsup == 0)
		return v->varno == r_rti ? 0 : -1;
	return v->varlevelsup == 1 ? 1 : -1;
}

/* ORDER BY keys LIMIT k over one table and nothing else: r's entry, k (RefOrder: keys past the first). */
static bool
PlainKnnSubquery(Query *sq, Index *r_rti, int *k)
{
	Node	   *n;
	int64		v;

	if (sq->commandType != CMD_SELECT || sq->utilityStmt != NULL ||
		list_length(sq->rtable) != 1 || sq->jointree == NULL ||
		list_length(sq->jointree->fromlist) != 1 ||
		!IsA(linitial(sq->jointree->fromlist), RangeTblRef) ||
		sq->groupClause != NIL || sq->groupingSets != NIL || sq->havingQual != NULL ||
		sq->hasAggs || sq->hasWindowFuncs || sq->hasTargetSRFs || sq->hasSubLinks ||
		sq->distinctClause != NIL || sq->hasDistinctOn || sq->rowMarks != NIL || sq->hasForUpdate ||
		sq->limitOffset != NULL || sq->setOperations != NULL || sq->cteList != NIL ||
		sq->limitOption != LIMIT_OPTION_COUNT || sq->limitCount == NULL ||
		sq->sortClause == NIL)
		return false;
	*r_rti = linitial_node(RangeTblRef, sq->jointree->fromlist)->rtindex;
	n = eval_const_expressions(NULL, sq->limitCount);
	if (!IsA(n, Const) || ((Const *) n)->constisnull || ((Const *) n)->consttype != INT8OID)
		return false;
	v = DatumGetInt64(((Const *) n)->constvalue);
	if (v < 1 || v > INT_MAX)
		return false;
	*k = (int) v;
	return true;
}

/* Column att of rel: NOT NULL, and alone a unique index's key (so a row's own). */
static bool
UniqueNotNullOf(Relation rel, AttrNumber att)
{
	return att > 0 && att <= rel->rd_att->natts &&
		TupleDescAttr(rel->rd_att, att - 1)->attnotnull && GjUniqueColumn(rel, att);
}

/* ... of table relid */
static bool
UniqueNotNull(Oid relid, AttrNumber att)
{
	Relation	rel = table_open(relid, NoLock);
	bool		found = UniqueNotNullOf(rel, att);

	table_close(rel, NoLock);
	return found;
}

/*
 * qual is an operator of a user column of r (the subquery's entry r_rti)
 * and one of q (entry qe of the level above), either way round: the
 * operator, and the Vars (*r, *q), else NULL.
 */
static OpExpr *
ColumnsOperator(Node *qual, Index r_rti, Index qe, Var **r, Var **q)
{
	OpExpr	   *op;
	Var		   *a,
			   *b;

	if (!IsA(qual, OpExpr) || list_length(((OpExpr *) qual)->args) != 2)
		return NULL;
	op = (OpExpr *) qual;
	a = (Var *) GjPlainStripRelabel(linitial(op->args));
	b = (Var *) GjPlainStripRelabel(lsecond(op->args));
	if (a == NULL || b == NULL || !IsA(a, Var) || !IsA(b, Var))
		return NULL;
	if (a->varlevelsup == 1)
	{
		Var		   *t = a;

		a = b;
		b = t;
	}
	if (a->varlevelsup != 0 || a->varno != r_rti || b->varlevelsup != 1 || b->varno != qe ||
		a->varattno <= 0 || b->varattno <= 0)
		return NULL;
	*r = a;
	*q = b;
	return op;
}

/* r.c <> q.c (either way round), c a column of both, by its type's own <>: c, else 0 */
static AttrNumber
OtherRowQual(Node *qual, Index r_rti, Index qe)
{
	Var		   *a,
			   *b;
	OpExpr	   *op = ColumnsOperator(qual, r_rti, qe, &a, &b);
	TypeCacheEntry *tc;

	if (op == NULL || a->varattno != b->varattno || a->vartype != b->vartype)
		return 0;
	tc = lookup_type_cache(a->vartype, TYPECACHE_EQ_OPR);
	if (!OidIsValid(tc->eq_opr) || get_negator(tc->eq_opr) != op->opno)
		return 0;
	return a->varattno;
}

/*
 * r.m = q.m (either way round): an equality of the hash operator family
 * that both columns' types hash by (one type, or bigint = int), under
 * a deterministic collation (or none): the query row's
 * own kind, which dist/ moves the rows by (match.c), each side hashed by
 * its type's own hash, which the family makes agree for equal values.
 * match[0] is q's column, match[1] r's; false otherwise.
 */
static bool
MatchQual(Node *qual, Index r_rti, Index qe, AttrNumber match[2])
{
	Var		   *a,
			   *b;
	OpExpr	   *op = ColumnsOperator(qual, r_rti, qe, &a, &b);

	if (op == NULL || a->varcollid != b->varcollid || op->inputcollid != a->varcollid ||
		(OidIsValid(a->varcollid) && !get_collation_isdeterministic(a->varcollid)) ||
		!GjMatchHashFamily(a->vartype, b->vartype, op->opno))
		return false;
	match[0] = b->varattno;
	match[1] = a->varattno;
	return true;
}

typedef struct OneEntry
{
	Index		rti;
	bool		params;			/* a statement's parameters ($1 ..) allowed */
} OneEntry;

static bool
NotOnOneEntryWalker(Node *n, OneEntry *e)
{
	if (n == NULL)
		return false;
	if (IsA(n, Var))
		return ((Var *) n)->varlevelsup != 0 || ((Var *) n)->varno != e->rti ||
			((Var *) n)->varattno <= 0;
	if (IsA(n, Param))
		return !e->params || ((Param *) n)->paramkind != PARAM_EXTERN;
	if (IsA(n, SubLink) || IsA(n, Aggref) || IsA(n, GroupingFunc) ||
		IsA(n, WindowFunc) || IsA(n, CurrentOfExpr) || IsA(n, NextValueExpr))
		return true;
	return expression_tree_walker(n, NotOnOneEntryWalker, (void *) e);
}

/* Anything but entry rti's own user columns, constants and functions of them (and params: $1 ..)? */
static bool
NotOnOneEntry(Node *n, Index rti, bool params)
{
	OneEntry	e = {rti, params};

	return NotOnOneEntryWalker(n, &e);
}

/* The statement's parameters in n as $1, $2 .. in their order of first use (*params, the originals). */
static Node *
RenumberParams(Node *n, List **params)
{
	if (n == NULL)
		return NULL;
	if (IsA(n, Param) && ((Param *) n)->paramkind == PARAM_EXTERN)
	{
		Param	   *p = (Param *) copyObject(n);
		int			i = 0;
		ListCell   *lc;

		foreach(lc, *params)
		{
			i++;
			if (((Param *) lfirst(lc))->paramid == p->paramid)
				break;
		}
		if (lc == NULL)
		{
			*params = lappend(*params, copyObject(n));
			i = list_length(*params);
		}
		p->paramid = i;
		return (Node *) p;
	}
	return expression_tree_mutator(n, RenumberParams, (void *) params);
}

/* Conditions on entry rti (of relation relid) as SQL over its columns, unqualified. */
static char *
DeparseOnEntry(List *conds, Index rti, Oid relid)
{
	Node	   *e = copyObject((Node *) make_ands_explicit(conds));

	ChangeVarNodes(e, rti, 1, 0);
	return deparse_expression(e, deparse_context_for(get_rel_name(relid), relid), false, false);
}

/*
 * The subquery's WHERE, conditions ANDed: at most one r.c <> q.c, the
 * other rows (*other is c), and any on r alone, the references
 * (*ref_filter, deparsed over r's columns, unqualified, for
 * knn_lateral_join or knn_lateral_selfjoin, which read r's rows where they
 * hold, and knn_lateral_fill).  Such a condition reads no other table, no
 * parameter and no volatile function: it is evaluated once a row where
 * the rows are read (on the workers), not once a query row.  With both,
 * a row's references are the others among those where it holds: the row
 * itself is one of them only where it holds on the row.
 */
static bool
SubqueryWhere(Node *quals, Index r_rti, Index qe, Oid r_relid, AttrNumber *other, AttrNumber match[2],
			  char **ref_filter)
{
	List	   *conds = NIL;
	ListCell   *lc;

	*other = 0;
	match[0] = match[1] = 0;
	*ref_filter = NULL;
	if (quals == NULL)
		return true;
	foreach(lc, make_ands_implicit((Expr *) quals))
	{
		Node	   *c = lfirst(lc);
		AttrNumber	o;

		if (*other == 0 && (o = OtherRowQual(c, r_rti, qe)) != 0)
		{
			*other = o;
			continue;
		}
		if (match[0] == 0 && MatchQual(c, r_rti, qe, match))
			continue;
		if (NotOnOneEntry(c, r_rti, false) || contain_volatile_functions(c))
			return false;
		conds = lappend(conds, c);
	}
	if (conds != NIL)
		*ref_filter = DeparseOnEntry(conds, r_rti, r_relid);
	return true;
}

/*
 * The conditions of q's level's WHERE on table q (entry qe) alone, as SQL
 * over its columns for knn_lateral_join's and knn_lateral_fill's
 * query_filter, or NULL: those rows alone are query rows (`WHERE a.id =
 * 42`: one row's neighbours, not every row's).  The WHERE stays as it is,
 * so it is the same query either way; this only reads fewer rows.  The
 * value of a parameter of a custom plan is bound first, as the planner
 * binds it.  A generic plan has no values: where bind (0.12), its
 * conditions with the statement's parameters are taken too, written with
 * $1 .. (*params, in that order), which knn_lateral_bound_filter binds
 * when the plan runs; before 0.12 they are left out (every row is a
 * query row then: the same rows, slower).  After five runs of a prepared
 * statement the plan cache may choose the generic plan.  q is never on
 * the nullable side of a join here (Placement).  The other rows' form
 * passes it to knn_lateral_selfjoin: those rows' nearest others among all
 * of the table's.
 */
static char *
QueryFilter(Query *q, Index qe, Oid relid, ParamListInfo params, bool bind, List **filter_params)
{
	List	   *conds = NIL;
	ListCell   *lc;
	PlannerInfo *root = NULL;

	*filter_params = NIL;
	if (q->jointree == NULL || q->jointree->quals == NULL)
		return NULL;
	if (params != NULL)
	{
		/* what eval_const_expressions reads of the planner: the bound values */
		root = makeNode(PlannerInfo);
		root->glob = makeNode(PlannerGlobal);
		root->glob->boundParams = params;
	}
	foreach(lc, make_ands_implicit((Expr *) q->jointree->quals))
	{
		Node	   *c = lfirst(lc);

		/* a condition with a parameter: again, with its value */
		if (NotOnOneEntry(c, qe, false) && root != NULL)
			c = eval_const_expressions(root, c);
		if (!NotOnOneEntry(c, qe, bind && root == NULL) && !contain_volatile_functions(c))
			conds = lappend(conds, RenumberParams(c, filter_params));
	}
	return conds != NIL ? DeparseOnEntry(conds, qe, relid) : NULL;
}

/* A table's row type with an order: knn_join breaks ties on the rows. */
static bool
OrderedRows(Oid relid)
{
	return OidIsValid(lookup_type_cache(get_rel_type_id(relid), TYPECACHE_LT_OPR)->lt_opr);
}

/* Whether rti is reached from n through FROM lists, inner joins and left joins' left sides. */
static bool
PreservedReach(Node *n, Index rti)
{
	ListCell   *lc;

	if (IsA(n, RangeTblRef))
		return ((RangeTblRef *) n)->rtindex == (int) rti;
	if (IsA(n, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) n;

		if (j->jointype == JOIN_LEFT)
			return PreservedReach(j->larg, rti);
		return j->jointype == JOIN_INNER &&
			(PreservedReach(j->larg, rti) || PreservedReach(j->rarg, rti));
	}
	if (IsA(n, FromExpr))
		foreach(lc, ((FromExpr *) n)->fromlist)
			if (PreservedReach(lfirst(lc), rti))
				return true;
	return false;
}

/* The LEFT JOIN whose right is entry ne, reached as PreservedReach reaches. */
static JoinExpr *
LeftJoinOf(Node *n, Index ne)
{
	ListCell   *lc;
	JoinExpr   *found = NULL;

	if (IsA(n, FromExpr))
	{
		foreach(lc, ((FromExpr *) n)->fromlist)
			if ((found = LeftJoinOf(lfirst(lc), ne)) != NULL)
				return found;
	}
	else if (IsA(n, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) n;

		if (j->jointype == JOIN_LEFT && IsA(j->rarg, RangeTblRef) &&
			((RangeTblRef *) j->rarg)->rtindex == (int) ne)
			return j;
		if (j->jointype == JOIN_LEFT)
			return LeftJoinOf(j->larg, ne);
		if (j->jointype == JOIN_INNER &&
			(found = LeftJoinOf(j->larg, ne)) == NULL)
			found = LeftJoinOf(j->rarg, ne);
	}
	return found;
}

/*
 * How the subquery (entry ne) joins the query's table (entry qe): both
 * reached from the FROM through inner joins (*left false); or the
 * subquery the right of a LEFT JOIN whose left reaches the table, through
 * inner joins and left joins' left sides (*left true).  A row of the
 * table stands for each of its neighbours in the rewrite, so it must
 * reach the subquery as a row every such join keeps.  A LEFT JOIN on a
 * condition (*grouped): a q row without a neighbour that meets it gets
 * NULLs once, so the row stands once for all its neighbours instead.
 */
static bool
Placement(Query *q, Index qe, Index ne, bool *left, bool *grouped)
{
	JoinExpr   *j;

	*left = *grouped = false;
	if (GjPlainInnerReach((Node *) q->jointree, qe) && GjPlainInnerReach((Node *) q->jointree, ne))
		return true;
	j = LeftJoinOf((Node *) q->jointree, ne);
	if (j == NULL || !PreservedReach(j->larg, qe))
		return false;
	*grouped = j->quals != NULL && !(IsA(j->quals, Const) && !((Const *) j->quals)->constisnull &&
									 ((Const *) j->quals)->consttype == BOOLOID &&
									 DatumGetBool(((Const *) j->quals)->constvalue));
	*left = true;
	return true;
}

/* A column of table relid NOT NULL and alone a unique key: no two of its rows are equal. */
static bool
DistinctRows(Oid relid)
{
	Relation	rel = table_open(relid, NoLock);
	bool		found = false;

	for (AttrNumber a = 1; a <= rel->rd_att->natts && !found; a++)
		found = !TupleDescAttr(rel->rd_att, a - 1)->attisdropped && UniqueNotNullOf(rel, a);
	table_close(rel, NoLock);
	return found;
}

static bool
Taken(KnnFinder *f, Index qe)
{
	ListCell   *lc;

	foreach(lc, f->found)
	{
		KnnCandidate *c = lfirst(lc);

		if (c->q == f->q && c->qe == qe)
			return true;
	}
	return false;
}

/*
 * The subquery's ORDER BY keys past the first (the distance): each a
 * column of r, ascending by its type's own order, NULLS LAST, under the
 * column's own collation (ORDER BY d, r.id: ties in the id's order), as
 * a list of attnos (NIL: none); false for any other key.  Only the strips
 * of kinds keep them (knn_lateral_join's ref_order): each strip's LATERAL
 * query has every row of the kind and sorts them itself.
 */
static bool
RefOrder(Query *sq, Index r_rti, List **order)
{
	ListCell   *lc;

	*order = NIL;
	for_each_from(lc, sq->sortClause, 1)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Node	   *e = (Node *) get_sortgroupclause_tle(sgc, sq->targetList)->expr;
		Var		   *v = (Var *) e;

		if (!IsA(e, Var) || v->varlevelsup != 0 || v->varno != r_rti || v->varattno <= 0 ||
			sgc->nulls_first ||
			sgc->sortop != lookup_type_cache(v->vartype, TYPECACHE_LT_OPR)->lt_opr)
			return false;
		*order = lappend_int(*order, v->varattno);
	}
	return true;
}

/* Entry ne of f's level, a LATERAL subquery: a kNN the workers can answer? */
static void
Consider(KnnFinder *f, Index ne)
{
	Query	   *q = f->q;
	Query	   *sq = rt_fetch(ne, q->rtable)->subquery;
	SortGroupClause *sgc;
	TargetEntry *tle;
	GjJoinClause jc;
	Index		r_rti;
	int			k;
	Var		   *rv,
			   *qv;
	int32		srid_r,
				srid_q;
	AttrNumber	other;
	AttrNumber	match[2];
	List	   *ref_order;
	char	   *ref_filter;
	bool		left;
	bool		grouped;
	bool		pg_order;
	RangeTblEntry *rr,
			   *qr;
	KnnCandidate *c;

	if (!PlainKnnSubquery(sq, &r_rti, &k))
		return;
	sgc = linitial_node(SortGroupClause, sq->sortClause);
	if (sgc->nulls_first || sgc->sortop != Float8LessOperator)
		return;
	tle = get_sortgroupclause_tle(sgc, sq->targetList);
	if (!GjDistanceOf((Node *) tle->expr, KnnSide, &r_rti, &jc))
		return;
	pg_order = (jc.kind == GJ_KEY_VECTOR || jc.kind == GJ_KEY_HALFVEC) &&
		(jc.metric == GJ_JM_L2 || jc.metric == GJ_JM_COSINE);
	if (!pg_order && (jc.kind != GJ_KEY_GEOMETRY || jc.metric != GJ_JM_PLANAR))
		return;
	rv = (Var *) GjPlainStripRelabel((Node *) jc.outer_key);
	qv = (Var *) GjPlainStripRelabel((Node *) jc.inner_key);
	if (rv->vartype != qv->vartype || rv->vartypmod != qv->vartypmod ||
		(!pg_order && (!GjPointsTypmod(rv->vartypmod, &srid_r) || !GjPointsTypmod(qv->vartypmod, &srid_q))))
		return;
	if (f->citus < 0)
		f->citus = GjCitusInstalled();
	if (!f->citus)
		return;
	if (!GjPlainTableEntry(sq, r_rti) || !GjPlainTableEntry(q, qv->varno) || Taken(f, qv->varno) ||
		!Placement(q, qv->varno, ne, &left, &grouped))
		return;
	rr = rt_fetch(r_rti, sq->rtable);
	qr = rt_fetch(qv->varno, q->rtable);
	if (!SubqueryWhere(sq->jointree->quals, r_rti, qv->varno, rr->relid, &other, match, &ref_filter) ||
		(other != 0 && (rr->relid != qr->relid || !UniqueNotNull(rr->relid, other))))
		return;
	/*
	 * The kind both tables' distribution column, co-located: Citus pushes
	 * the LATERAL down to each shard itself (a GpuJoin there where gpujoin
	 * is loaded), and nothing moves
	 */
	if (match[0] != 0 && GjCitusColocatedBy(qr->relid, match[0], rr->relid, match[1]))
		return;
	/* ORDER BY keys past the distance: only the strips of kinds keep them */
	if (!RefOrder(sq, r_rti, &ref_order) || (ref_order != NIL && match[0] == 0))
		return;
	if (!GjPlainReadAsCaller(sq, rr) || !GjPlainReadAsCaller(q, qr) ||
		GjPlainOddUse(sq, r_rti) || GjPlainOddUse(q, qv->varno) ||
		!GjCitusDistributed(rr->relid) || !GjCitusDistributed(qr->relid) ||
		!OrderedRows(rr->relid) || !OrderedRows(qr->relid) ||
		(grouped && !DistinctRows(qr->relid)))
		return;

	c = palloc(sizeof(KnnCandidate));
	c->q = q;
	c->qe = qv->varno;
	c->ne = ne;
	c->q_col = qv->varattno;
	c->r_rti = r_rti;
	c->r_col = rv->varattno;
	c->other = other;
	c->match[0] = match[0];
	c->match[1] = match[1];
	c->ref_order = ref_order;
	c->ref_filter = ref_filter;
	if (f->bind < 0)
	{
		Oid			nsp = GjGpujoinSchema();

		f->bind = OidIsValid(nsp) && HasFunction(nsp, "knn_lateral_bound_filter", NULL);
	}
	c->query_filter = QueryFilter(q, qv->varno, qr->relid, f->params, f->bind > 0, &c->filter_params);
	c->left = left;
	c->grouped = grouped;
	c->pg_order = pg_order;
	c->cosine = jc.metric == GJ_JM_COSINE;
	c->k = k;
	f->found = lappend(f->found, c);
}

/* GjPlainLevelFn */
static void
FindInLevel(Query *q, void *arg)
{
	KnnFinder  *f = (KnnFinder *) arg;
	Index		i = 0;
	ListCell   *lc;

	f->q = q;
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		i++;
		if (rte->rtekind == RTE_SUBQUERY && rte->lateral && rte->subquery != NULL &&
			rte->subquery->limitCount != NULL && rte->subquery->sortClause != NIL)
			Consider(f, i);
	}
}

/*
 * query_filter's argument: the condition as a literal, or (a generic
 * plan's parameters in it) knn_lateral_bound_filter's call, which binds
 * them when the plan runs: its ROW() of NULLs of their types becomes the
 * parameters themselves once the SQL is parsed (SetFilterParams).
 */
static char *
QueryFilterArgument(const KnnCandidate *c, Oid q_relid, const char *nsp)
{
	StringInfoData row;
	ListCell   *lc;

	if (c->filter_params == NIL)
		return quote_literal_cstr(c->query_filter);
	initStringInfo(&row);
	foreach(lc, c->filter_params)
	{
		Param	   *p = lfirst_node(Param, lc);

		appendStringInfo(&row, "%sNULL::%s", row.len > 0 ? ", " : "",
						 format_type_with_typemod(p->paramtype, p->paramtypmod));
	}
	return psprintf("%s.knn_lateral_bound_filter(%s, ROW(%s), %u::pg_catalog.oid::pg_catalog.regclass)",
					nsp, quote_literal_cstr(c->query_filter), row.data, q_relid);
}

typedef struct FilterParams
{
	List	   *params;
	int		   *found;
} FilterParams;

/* knn_lateral_bound_filter's ROW(NULL::t, ..): the parameters instead */
static bool
SetFilterParams(Node *n, FilterParams *fp)
{
	if (n == NULL)
		return false;
	if (IsA(n, FuncExpr) && strcmp(get_func_name(((FuncExpr *) n)->funcid), "knn_lateral_bound_filter") == 0 &&
		list_length(((FuncExpr *) n)->args) == 3 && IsA(lsecond(((FuncExpr *) n)->args), RowExpr))
	{
		RowExpr    *row = lsecond_node(RowExpr, ((FuncExpr *) n)->args);

		if (list_length(row->args) != list_length(fp->params))
			elog(ERROR, "gpujoin: a LATERAL kNN's parameters do not match");
		row->args = (List *) copyObject(fp->params);
		(*fp->found)++;
		return false;
	}
	if (IsA(n, Query))
		return query_tree_walker((Query *) n, SetFilterParams, fp, 0);
	return expression_tree_walker(n, SetFilterParams, fp);
}

/*
 * Entry q: each q row once for each of its neighbours, q's columns by
 * number, then the neighbour; grouped, each q row once, then the array of
 * its neighbours (a NULL for none: keep_alone).  The grouping is by the
 * whole row, so the table has a unique key (DistinctRows): two rows alike
 * would come as one.
 */
static Query *
NeighboursQuery(const KnnCandidate *c, Oid q_relid, Oid r_relid, const char *nsp, bool lateral_fns,
				bool filter_fns)
{
	const char *qtype = format_type_be_qualified(get_rel_type_id(q_relid));
	const char *rtype = format_type_be_qualified(get_rel_type_id(r_relid));
	char	   *qcol = quote_literal_cstr(get_attname(q_relid, c->q_col, false));
	char	   *rcol = quote_literal_cstr(get_attname(r_relid, c->r_col, false));
	int			natts;
	char	   *knn;
	char	   *other = "";
	char	   *filter = psprintf("%s%s",
								  c->ref_filter != NULL ?
								  psprintf(", ref_filter => %s", quote_literal_cstr(c->ref_filter)) : "",
								  c->query_filter != NULL && filter_fns ?
								  psprintf(", query_filter => %s", QueryFilterArgument(c, q_relid, nsp)) : "");
	char	   *sql;
	Query	   *sub;

	const char *q_cols = GjPlainRowColumns(q_relid, "u.q", &natts);

	/*
	 * The query row's own kind (0.14): each strip's LATERAL query returns
	 * every row itself, rows without a point and LEFT JOIN's row too, so
	 * no knn_lateral_fill (match.c)
	 */
	if (c->ref_order != NIL)
	{
		StringInfoData a;
		ListCell   *lc;

		initStringInfo(&a);
		foreach(lc, c->ref_order)
			appendStringInfo(&a, "%s%s", a.len > 0 ? ", " : "",
							 quote_literal_cstr(get_attname(r_relid, lfirst_int(lc), false)));
		filter = psprintf("%s, ref_order => ARRAY[%s]::pg_catalog.text[]", filter, a.data);
	}
	if (c->match[0] != 0)
		filter = psprintf("%s%s%s", filter, c->other != 0 ?
						  psprintf(", match_col => %s", quote_literal_cstr(get_attname(q_relid, c->match[0], false))) :
						  psprintf(", query_match => %s, ref_match => %s",
								   quote_literal_cstr(get_attname(q_relid, c->match[0], false)),
								   quote_literal_cstr(get_attname(r_relid, c->match[1], false))),
						  c->left ? ", keep_alone => true" : "");
	if (c->other == 0)
		knn = psprintf("SELECT p.q, p.r FROM %s.%s(%u::pg_catalog.oid::pg_catalog.regclass, "
					   "%u::pg_catalog.oid::pg_catalog.regclass, ARRAY[%s]::pg_catalog.text[], %d, "
					   "query_key => NULL::%s, ref_key => NULL::%s, ref_cols => ARRAY[%s]::pg_catalog.text[]%s%s) p",
					   nsp, lateral_fns ? "knn_lateral_join" : "knn_join", q_relid, r_relid, qcol, c->k, qtype,
					   rtype, rcol, c->cosine ? ", metric => 'cosine'" : "", filter);
	else
	{
		/* the other rows: the self join's (r is q) */
		knn = psprintf("SELECT p.a, p.b FROM %s.%s(%u::pg_catalog.oid::pg_catalog.regclass, "
					   "ARRAY[%s]::pg_catalog.text[], %d, key => NULL::%s%s%s) p",
					   nsp, lateral_fns ? "knn_lateral_selfjoin" : "knn_selfjoin", q_relid, qcol, c->k, qtype,
					   c->cosine ? ", metric => 'cosine'" : "", filter);
		other = psprintf(", other_col => %s", quote_literal_cstr(get_attname(q_relid, c->other, false)));
	}
	/* (q, r): every neighbour of every row, and the rows the engine leaves out */
	if (c->match[0] != 0)
		sql = knn;
	else
		sql = psprintf("%s UNION ALL "
					   "SELECT f.q, f.r FROM %s.knn_lateral_fill(%u::pg_catalog.oid::pg_catalog.regclass, "
					   "%u::pg_catalog.oid::pg_catalog.regclass, %s, %s, %d, NULL::%s, NULL::%s%s%s%s%s) f",
					   knn, nsp, q_relid, r_relid, qcol, rcol, c->k,
					   qtype, rtype, other, c->left ? ", keep_alone => true" : "",
					   c->cosine ? ", op => '<=>'" : "", filter);
	if (c->grouped)
		sql = psprintf("SELECT %su.r FROM (SELECT v.q, pg_catalog.array_agg(v.r) AS r FROM (%s) v(q, r) "
					   "GROUP BY v.q) u", q_cols, sql);
	else
		sql = psprintf("SELECT %su.r FROM (%s) u(q, r)", q_cols, sql);
	sub = GjPlainAnalyze(sql);
	if (sub->commandType != CMD_SELECT ||
		list_length(sub->targetList) != natts + 1)
		elog(ERROR, "gpujoin: unexpected rewrite of a LATERAL kNN: %s", sql);
	if (c->filter_params != NIL && filter_fns)
	{
		/* the parameters in place of their NULLs, in both calls */
		int			found = 0;
		FilterParams fp = {c->filter_params, &found};

		(void) query_tree_walker(sub, SetFilterParams, &fp, 0);
		if (found != (c->match[0] != 0 ? 1 : 2))
			elog(ERROR, "gpujoin: unexpected rewrite of a LATERAL kNN's parameters: %s", sql);
	}
	return sub;
}

typedef struct ToNeighbour
{
	Index		r_rti;
	Expr	   *neighbour;		/* the neighbour's row, seen from the subquery */
} ToNeighbour;

/* r's columns in the subquery's expressions: the neighbour's fields */
static Node *
ToNeighbourMutator(Node *n, ToNeighbour *t)
{
	if (n == NULL)
		return NULL;
	if (IsA(n, Var) && ((Var *) n)->varlevelsup == 0 && ((Var *) n)->varno == t->r_rti)
	{
		Var		   *v = (Var *) n;
		FieldSelect *fs = makeNode(FieldSelect);

		fs->arg = (Expr *) copyObject(t->neighbour);
		fs->fieldnum = v->varattno;
		fs->resulttype = v->vartype;
		fs->resulttypmod = v->vartypmod;
		fs->resultcollid = v->varcollid;
		return (Node *) fs;
	}
	return expression_tree_mutator(n, ToNeighbourMutator, (void *) t);
}

/* The subquery's own target list, over the neighbour's row (t) */
static List *
NeighbourTargets(Query *sq, ToNeighbour *t)
{
	List	   *targets = NIL;
	ListCell   *lc;

	foreach(lc, sq->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->resjunk)
			continue;			/* the ORDER BY key's alone: at the end */
		tle = flatCopyTargetEntry(tle);
		tle->expr = (Expr *) ToNeighbourMutator((Node *) tle->expr, t);
		tle->ressortgroupref = 0;
		targets = lappend(targets, tle);
	}
	return targets;
}

/* $1 of the grouped subquery's SQL: the q row's array of neighbours, a level up */
static Node *
ArrayParamMutator(Node *n, Var *array)
{
	if (n == NULL)
		return NULL;
	if (IsA(n, Param) && ((Param *) n)->paramkind == PARAM_EXTERN && ((Param *) n)->paramid == 1)
		return (Node *) copyObject(array);
	return expression_tree_mutator(n, ArrayParamMutator, (void *) array);
}

/*
 * The grouped subquery: its own target list over each neighbour in the q
 * row's array, not NULL (a row without references has the array {NULL}:
 * no row here, so the LEFT JOIN gives it NULLs, as it does a row none of
 * whose neighbours meets the join's condition).
 */
static Query *
NeighbourArrayQuery(const KnnCandidate *c, Query *sq, Oid r_relid, AttrNumber neighbours_col)
{
	const char *sql = "SELECT $1[i] FROM pg_catalog.generate_subscripts($1, 1) i WHERE $1[i] IS NOT NULL";
	Oid			atype = get_array_type(get_rel_type_id(r_relid));
	Var		   *array = makeVar(c->qe, neighbours_col, atype, -1, InvalidOid, 1);
	Query	   *sub;
	ToNeighbour t;

	if (!OidIsValid(atype))
		elog(ERROR, "gpujoin: no array type of %s", format_type_be(get_rel_type_id(r_relid)));
	sub = parse_analyze_fixedparams(linitial_node(RawStmt, raw_parser(sql, RAW_PARSE_DEFAULT)), sql,
									&atype, 1, NULL);
	sub = query_tree_mutator(sub, ArrayParamMutator, (void *) array, 0);
	if (list_length(sub->targetList) != 1 || sub->jointree->quals == NULL ||
		!IsA(sub->jointree->quals, NullTest))
		elog(ERROR, "gpujoin: unexpected rewrite of a LATERAL kNN's neighbours: %s", sql);
	/* the value is NULL, not its fields (a row's IS NOT NULL would ask every field) */
	((NullTest *) sub->jointree->quals)->argisrow = false;
	t.r_rti = c->r_rti;
	t.neighbour = linitial_node(TargetEntry, sub->targetList)->expr;
	sub->targetList = NeighbourTargets(sq, &t);
	return sub;
}

/* The subquery: its own target list over the neighbour's row, FROM nothing. */
static Query *
NeighbourRowQuery(const KnnCandidate *c, Query *sq, Oid r_relid, AttrNumber neighbour_col)
{
	Query	   *sub = makeNode(Query);
	ToNeighbour t = {c->r_rti, (Expr *) makeVar(c->qe, neighbour_col, get_rel_type_id(r_relid), -1, InvalidOid, 1)};

	if (c->grouped)
		return NeighbourArrayQuery(c, sq, r_relid, neighbour_col);
	sub->targetList = NeighbourTargets(sq, &t);
	sub->commandType = CMD_SELECT;
	sub->querySource = QSRC_ORIGINAL;
	sub->canSetTag = true;
	sub->jointree = makeFromExpr(NIL, NULL);
	if (c->left)
	{
		/*
		 * A row without references comes with a NULL one: no row here, so
		 * the LEFT JOIN gives it NULLs, as it does a row of no neighbours
		 * (the value is NULL, not its fields: argisrow false)
		 */
		NullTest   *nt = makeNode(NullTest);

		nt->arg = (Expr *) copyObject(t.neighbour);
		nt->nulltesttype = IS_NOT_NULL;
		nt->argisrow = false;
		nt->location = -1;
		sub->jointree->quals = (Node *) nt;
	}
	return sub;
}

static void
Rewrite(const KnnCandidate *c, const char *nsp, bool lateral_fns, bool filter_fns, List **relids)
{
	RangeTblEntry *qr = rt_fetch(c->qe, c->q->rtable);
	RangeTblEntry *nr = rt_fetch(c->ne, c->q->rtable);
	Oid			q_relid = qr->relid;
	Oid			r_relid = rt_fetch(c->r_rti, nr->subquery->rtable)->relid;
	Query	   *neighbours = NeighboursQuery(c, q_relid, r_relid, nsp, lateral_fns, filter_fns);
	Query	   *row = NeighbourRowQuery(c, nr->subquery, r_relid, list_length(neighbours->targetList));

	*relids = lappend_oid(lappend_oid(*relids, q_relid), r_relid);
	GjPlainEntryToSubquery(qr, neighbours);
	qr->eref->colnames = lappend(qr->eref->colnames, makeString(pstrdup("gpujoin_neighbour")));
	nr->subquery = row;
}

/*
 * Has the installation in schema nsp a function of this name (its
 * version's), with an argument of this name if arg is not NULL?
 */
static bool
HasFunction(Oid nsp, const char *name, const char *arg)
{
	Oid			f = LookupFuncName(list_make2(makeString(get_namespace_name(nsp)),
											  makeString(pstrdup(name))), -1, NULL, true);

	return OidIsValid(f) && (arg == NULL || GjArgPosition(f, arg) >= 0);
}

void
GjPlainKnn(Query *parse, List **relids, ParamListInfo params)
{
	KnnFinder	f = {params, NULL, -1, -1, NIL};
	ListCell   *lc;
	Oid			nsp;
	const char *nspname;
	bool		lateral_fns,
				filter_fns,
				other_filter_fns,
				match_fns;

	GjPlainEachLevel(parse, FindInLevel, &f, 0);
	if (f.found == NIL)
		return;
	/* every Citus table of the query one of the kNNs': Citus has no part in the plan */
	if (GjPlainCitusTables(parse) != 2 * list_length(f.found))
		return;
	nsp = GjGpujoinSchema();
	if (!OidIsValid(nsp))
		return;
	nspname = quote_identifier(get_namespace_name(nsp));
	/*
	 * An installation not updated to 0.9 has no knn_lateral_fill, to 0.10
	 * no knn_lateral_join: Citus's error
	 */
	if (!HasFunction(nsp, "knn_lateral_fill", NULL))
		return;
	lateral_fns = HasFunction(nsp, "knn_lateral_join", NULL);
	/* ... to 0.11 no ref_filter */
	filter_fns = lateral_fns && HasFunction(nsp, "knn_lateral_join", "ref_filter");
	/* ... to 0.13 no knn_lateral_selfjoin with ref_filter */
	other_filter_fns = filter_fns && HasFunction(nsp, "knn_lateral_selfjoin", "ref_filter");
	/* ... to 0.14 no query row's own kind */
	match_fns = other_filter_fns && HasFunction(nsp, "knn_lateral_join", "ref_match") &&
		HasFunction(nsp, "knn_lateral_selfjoin", "match_col") &&
		HasFunction(nsp, "knn_lateral_join", "ref_order") &&
		HasFunction(nsp, "knn_lateral_selfjoin", "ref_order");
	foreach(lc, f.found)
	{
		KnnCandidate *c = lfirst(lc);

		if ((c->pg_order && !lateral_fns) || (c->ref_filter != NULL && !filter_fns) ||
			(c->ref_filter != NULL && c->other != 0 && !other_filter_fns) ||
			(c->match[0] != 0 && !match_fns))
			return;
	}
	foreach(lc, f.found)
		Rewrite((KnnCandidate *) lfirst(lc), nspname, lateral_fns, filter_fns, relids);
	elog(DEBUG1, "gpujoin: %d LATERAL kNN subqueries of distributed tables run on the workers",
		 list_length(f.found));
}
