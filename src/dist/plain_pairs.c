/*
 * plain_pairs.c
 *		An inner distance join of two Citus-distributed tables written in
 *		plain SQL, its pairs found on the workers.
 *
 * SELECT .. FROM a JOIN b ON ST_DWithin(a.g, b.g, 0.5) is a join Citus
 * refuses; plain_sql.c makes it one Citus runs by reading both tables
 * into this node.  Here, where it is exact, the join goes to the workers
 * instead: entry a of the query becomes
 *
 *	  (SELECT (p.r).c1, .., (p.r).cn, p.s
 *	   FROM eps_join(a, b, ARRAY['g'], eps', r_key => NULL::a,
 *					 s_key => NULL::b, s_cols => ARRAY['g']) p)
 *
 * every pair of rows within eps' of each other, each row whole: a key of
 * the table's own row type is the row (read/row_keys.c), which dist/
 * moves between the workers with its coordinates and returns with the
 * pair.  Entry b becomes LATERAL (SELECT (a.s).c1, .., (a.s).cm), the
 * pair's b row.  The query's quals stay as they are: the predicate and
 * every other decide each pair, so the rows are PostgreSQL's.  eps' is d
 * widened by pairs.c's proven margins of the predicate's rounding, so no
 * pair the predicate accepts is missing, and each pair comes once, so
 * each of the join's rows does.  Only the pairs' rows travel to this node
 * (the query's result, before its other quals), and no table is read
 * here whole.
 *
 * Where that is exact, and only there (else plain_sql.c's path):
 *	- the predicate is a conjunct of the WHERE clause or of an inner
 *	  join's ON, and both tables are reached from there through inner joins
 *	  only: then a pair's rows are the join's rows, each once;
 *	- d is a constant, finite and positive (PostGIS passes rows with a
 *	  non-finite coordinate at an infinite d, where the engine skips them;
 *	  eps_join takes no eps of 0);
 *	- the columns' types declare what every value is: geometry(Point) or
 *	  geometry(Point, SRID) alike on both sides (ST_DWithin, ST_Distance,
 *	  <->: 2-D; a line would be PostGIS's answer, not the engine's error;
 *	  SRIDs that differ, where the type leaves them open, are an error
 *	  either way), or pgvector columns of one declared dimension (<->,
 *	  <=>);
 *	- the query's only Citus tables are these pairs' (another one would
 *	  make Citus plan the query, calls and all);
 *	- each entry is a plain read of its table by the caller: no whole-row
 *	  or system column, row lock or sample, no row security, not a view's
 *	  owner's, SELECT on the whole table (the call reads every column).
 * The plan depends on the tables (GjDistPlanner adds them to its
 * relationOids): a change of their columns plans it again.
 */
#include "postgres.h"

#include <math.h>

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "compat.h"
#include "dist/plain_internal.h"

/* One join to rewrite: entries a and b of q. */
typedef struct Candidate
{
	Query	   *q;
	Index		a;				/* the entry first in the FROM: the call's r side */
	Index		b;
	AttrNumber	a_col;			/* the predicate's column of each */
	AttrNumber	b_col;
	const char *metric;			/* eps_join's: l2 or cosine */
	double		eps;			/* d widened */
} Candidate;

typedef struct PairFinder
{
	Query	   *q;
	int			citus;			/* Citus installed: -1 not asked yet */
	List	   *found;			/* Candidate * */
} PairFinder;

static Var *
KeyVar(Expr *e)
{
	Node	   *n = GjPlainStripRelabel((Node *) e);

	if (n == NULL || !IsA(n, Var) || ((Var *) n)->varlevelsup != 0)
		return NULL;
	return (Var *) n;
}

/* Entry rti's place among the FROM items, depth first (-1: not there). */
static int
FromPosition(Node *n, Index rti, int *seen)
{
	ListCell   *lc;
	int			p = -1;

	if (IsA(n, RangeTblRef))
		return ((RangeTblRef *) n)->rtindex == (int) rti ? (*seen)++ : ((*seen)++, -1);
	if (IsA(n, JoinExpr))
	{
		p = FromPosition(((JoinExpr *) n)->larg, rti, seen);
		return p >= 0 ? p : FromPosition(((JoinExpr *) n)->rarg, rti, seen);
	}
	if (IsA(n, FromExpr))
		foreach(lc, ((FromExpr *) n)->fromlist)
			if ((p = FromPosition(lfirst(lc), rti, seen)) >= 0)
				return p;
	return -1;
}

/* The columns' types declare 2-D points alike, or vectors of one dimension: *dims. */
static bool
DeclaredKeys(const GjJoinClause *jc, const Var *va, const Var *vb, int *dims)
{
	int32		sa,
				sb;

	if (va->vartype != vb->vartype)
		return false;
	switch (jc->metric)
	{
		case GJ_JM_PLANAR:
			*dims = 2;
			return jc->kind == GJ_KEY_GEOMETRY && GjPointsTypmod(va->vartypmod, &sa) &&
				GjPointsTypmod(vb->vartypmod, &sb) && sa == sb;
		case GJ_JM_L2:
		case GJ_JM_COSINE:
			*dims = va->vartypmod;
			return (jc->kind == GJ_KEY_VECTOR || jc->kind == GJ_KEY_HALFVEC) &&
				va->vartypmod > 0 && va->vartypmod == vb->vartypmod;
		default:
			return false;			/* geography, cube: plain_sql.c's path */
	}
}

/* d: a constant, finite, positive. */
static bool
ConstantBound(Expr *bound, double *d)
{
	Node	   *n;

	if (bound == NULL)
		return false;			/* a distance alone, not a predicate */
	n = eval_const_expressions(NULL, (Node *) bound);
	if (!IsA(n, Const) || ((Const *) n)->constisnull || ((Const *) n)->consttype != FLOAT8OID)
		return false;
	*d = DatumGetFloat8(((Const *) n)->constvalue);
	return isfinite(*d) && *d > 0;
}

/* Whether entry rti of f's level is a candidate's already. */
static bool
Taken(PairFinder *f, Index rti)
{
	ListCell   *lc;

	foreach(lc, f->found)
	{
		Candidate  *c = lfirst(lc);

		if (c->q == f->q && (c->a == rti || c->b == rti))
			return true;
	}
	return false;
}

/* A Var of this level of a second entry: worth asking whether n is a distance predicate. */
static bool
TwoEntries(Node *n, Index *first)
{
	if (n == NULL)
		return false;
	if (IsA(n, Var))
	{
		Var		   *v = (Var *) n;

		if (v->varlevelsup != 0)
			return false;
		if (*first == 0)
			*first = v->varno;
		return v->varno != *first;
	}
	if (IsA(n, Query))
		return false;
	return expression_tree_walker(n, TwoEntries, (void *) first);
}

/* Conjunct n of the quals of scope (the FROM list or an inner join): a candidate? */
static void
Consider(PairFinder *f, Node *n, Node *scope)
{
	Query	   *q = f->q;
	GjVarSides	vs = {0};
	GjJoinClause jc;
	Index		first = 0;
	Var		   *k0,
			   *k1,
			   *ka,
			   *kb;
	RangeTblEntry *ra,
			   *rb;
	int			seen = 0,
				seen1 = 0,
				dims;
	double		d,
				eps,
				eps2,
				in2;
	Candidate  *c;

	if (!(IsA(n, FuncExpr) || IsA(n, OpExpr)) || !TwoEntries(n, &first))
		return;
	/*
	 * the predicate first: its lookups are syscache hits, where asking
	 * whether Citus is installed scans pg_extension, and every join of
	 * every query planned comes here
	 */
	if (!GjDistancePredicateOf(n, GjPlainVarSide, &vs, &jc) || vs.varno[0] == vs.varno[1] ||
		(k0 = KeyVar(jc.outer_key)) == NULL || (k1 = KeyVar(jc.inner_key)) == NULL ||
		k0->varno == k1->varno)
		return;
	if (f->citus < 0)
		f->citus = GjCitusInstalled();
	if (!f->citus)
		return;
	/* a: the entry first in the FROM (b's LATERAL subquery refers to it) */
	if (FromPosition((Node *) q->jointree, k0->varno, &seen) <
		FromPosition((Node *) q->jointree, k1->varno, &seen1))
		ka = k0, kb = k1;
	else
		ka = k1, kb = k0;
	if (!GjPlainTableEntry(q, ka->varno) || !GjPlainTableEntry(q, kb->varno) ||
		Taken(f, ka->varno) || Taken(f, kb->varno) ||
		!GjPlainInnerReach(scope, ka->varno) || !GjPlainInnerReach(scope, kb->varno) ||
		!DeclaredKeys(&jc, ka, kb, &dims) || !ConstantBound(jc.bound, &d))
		return;
	ra = rt_fetch(ka->varno, q->rtable);
	rb = rt_fetch(kb->varno, q->rtable);
	if (!GjPlainReadAsCaller(q, ra) || !GjPlainReadAsCaller(q, rb) ||
		GjPlainOddUse(q, ka->varno) || GjPlainOddUse(q, kb->varno) ||
		!GjCitusDistributed(ra->relid) || !GjCitusDistributed(rb->relid))
		return;

	GjJoinMargins(jc.metric, d, dims, &eps, &eps2, &in2);
	if (!isfinite(eps2))
		return;
	c = palloc(sizeof(Candidate));
	c->q = q;
	c->a = ka->varno;
	c->b = kb->varno;
	c->a_col = ka->varattno;
	c->b_col = kb->varattno;
	if (jc.metric == GJ_JM_COSINE)
	{
		/* eps_join's cosine eps is a cosine distance: that of the chord */
		c->metric = "cosine";
		c->eps = eps2 / 2.0;
	}
	else
	{
		c->metric = "l2";
		c->eps = eps;
	}
	f->found = lappend(f->found, c);
}

static void
Conjuncts(PairFinder *f, Node *quals, Node *scope)
{
	ListCell   *lc;

	if (quals == NULL)
		return;
	if (is_andclause(quals))
	{
		foreach(lc, ((BoolExpr *) quals)->args)
			Conjuncts(f, lfirst(lc), scope);
		return;
	}
	Consider(f, quals, scope);
}

static void
WalkJoinTree(PairFinder *f, Node *n)
{
	ListCell   *lc;

	if (IsA(n, FromExpr))
	{
		Conjuncts(f, ((FromExpr *) n)->quals, n);
		foreach(lc, ((FromExpr *) n)->fromlist)
			WalkJoinTree(f, lfirst(lc));
	}
	else if (IsA(n, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) n;

		if (j->jointype == JOIN_INNER)
			Conjuncts(f, j->quals, n);
		WalkJoinTree(f, j->larg);
		WalkJoinTree(f, j->rarg);
	}
}

/* GjPlainLevelFn */
static void
FindInLevel(Query *q, void *arg)
{
	PairFinder *f = (PairFinder *) arg;

	f->q = q;
	WalkJoinTree(f, (Node *) q->jointree);
}

static char *
QuotedColumnName(Oid relid, AttrNumber att)
{
	return quote_literal_cstr(get_attname(relid, att, false));
}

/* Entry a: the rows of the call's pairs, a's columns by number, then b's row. */
static Query *
PairsQuery(const Candidate *c, RangeTblEntry *ra, RangeTblEntry *rb, Oid nsp)
{
	StringInfoData s;
	int			natts;
	Query	   *sub;

	initStringInfo(&s);
	appendStringInfo(&s, "SELECT %s", GjPlainRowColumns(ra->relid, "p.r", &natts));
	appendStringInfo(&s, "p.s FROM %s.eps_join(%u::pg_catalog.oid::pg_catalog.regclass, "
					 "%u::pg_catalog.oid::pg_catalog.regclass, ARRAY[%s]::pg_catalog.text[], %s, "
					 "r_key => NULL::%s, s_key => NULL::%s, s_cols => ARRAY[%s]::pg_catalog.text[], "
					 "metric => '%s') p",
					 quote_identifier(get_namespace_name(nsp)), ra->relid, rb->relid,
					 QuotedColumnName(ra->relid, c->a_col), GjFloat8Literal(c->eps),
					 format_type_be_qualified(get_rel_type_id(ra->relid)),
					 format_type_be_qualified(get_rel_type_id(rb->relid)),
					 QuotedColumnName(rb->relid, c->b_col), c->metric);
	sub = GjPlainAnalyze(s.data);
	if (sub->commandType != CMD_SELECT || list_length(sub->targetList) != natts + 1)
		elog(ERROR, "gpujoin: unexpected rewrite of a distance join: %s", s.data);
	return sub;
}

/* Entry b: LATERAL (SELECT (a.pair).c1, ..), its columns by number. */
static Query *
PairRowQuery(const Candidate *c, RangeTblEntry *rb, AttrNumber pair_col)
{
	Relation	rel = table_open(rb->relid, NoLock);
	TupleDesc	td = RelationGetDescr(rel);
	Query	   *sub = makeNode(Query);
	Var		   *pair = makeVar(c->a, pair_col, get_rel_type_id(rb->relid), -1, InvalidOid, 1);
	List	   *tlist = NIL;

	for (int i = 0; i < td->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(td, i);
		Expr	   *e;

		if (att->attisdropped)
			e = (Expr *) makeNullConst(INT4OID, -1, InvalidOid);
		else
		{
			FieldSelect *fs = makeNode(FieldSelect);

			fs->arg = (Expr *) copyObject(pair);
			fs->fieldnum = i + 1;
			fs->resulttype = att->atttypid;
			fs->resulttypmod = att->atttypmod;
			fs->resultcollid = att->attcollation;
			e = (Expr *) fs;
		}
		tlist = lappend(tlist, makeTargetEntry(e, i + 1, pstrdup(NameStr(att->attname)), false));
	}
	table_close(rel, NoLock);
	sub->commandType = CMD_SELECT;
	sub->querySource = QSRC_ORIGINAL;
	sub->canSetTag = true;
	sub->jointree = makeFromExpr(NIL, NULL);
	sub->targetList = tlist;
	return sub;
}

static void
Rewrite(const Candidate *c, Oid nsp)
{
	RangeTblEntry *ra = rt_fetch(c->a, c->q->rtable);
	RangeTblEntry *rb = rt_fetch(c->b, c->q->rtable);
	Query	   *pairs = PairsQuery(c, ra, rb, nsp);
	Query	   *row = PairRowQuery(c, rb, list_length(pairs->targetList));

	GjPlainEntryToSubquery(ra, pairs);
	ra->eref->colnames = lappend(ra->eref->colnames, makeString(pstrdup("gpujoin_pair")));
	GjPlainEntryToSubquery(rb, row);
	rb->lateral = true;
}

void
GjPlainPairs(Query *parse, List **relids)
{
	PairFinder	f = {NULL, -1, NIL};
	ListCell   *lc;
	Oid			nsp;

	GjPlainEachLevel(parse, FindInLevel, &f, 0);
	if (f.found == NIL)
		return;
	/* every Citus table of the query one of the joins': Citus has no part in the plan */
	if (GjPlainCitusTables(parse) != 2 * list_length(f.found))
		return;
	nsp = GjGpujoinSchema();
	if (!OidIsValid(nsp))
		return;
	foreach(lc, f.found)
	{
		Candidate  *c = lfirst(lc);

		*relids = lappend_oid(*relids, rt_fetch(c->a, c->q->rtable)->relid);
		*relids = lappend_oid(*relids, rt_fetch(c->b, c->q->rtable)->relid);
		Rewrite(c, nsp);
	}
	elog(DEBUG1, "gpujoin: %d distance joins of distributed tables run on the workers",
		 list_length(f.found));
}
