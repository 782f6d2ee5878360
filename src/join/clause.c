/*
 * clause.c
 *		Finding the distance predicate among a join's quals.
 *
 * Recognised, between a column of one side and a column of the other
 * (either order), with d free of both sides' columns and of volatile
 * functions (a constant, a parameter, a stable expression):
 *	PostGIS   ST_DWithin(a, b, d [, use_spheroid])          geometry, geography
 *	          ST_Distance(a, b [, use_spheroid]) <= d, < d   geometry, geography
 *	          a <-> b <= d, < d                              geometry, geography
 *	pgvector  a <-> b <= d, < d  (L2)                        vector, halfvec
 *	          a <=> b <= d, < d  (cosine distance)           vector, halfvec
 *	cube      a <-> b <= d, < d  (cube_distance: Euclidean)  cube points
 * and d >= .., d > .. the other way round.  The functions are PostGIS's,
 * pgvector's and cube's own: found by name in the schema their types live in, so
 * a function of the same name elsewhere is not mistaken for them.
 * Everything else, and these on expressions rather than columns, stays
 * with PostgreSQL.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "join/join.h"

static Node *
Strip(Node *n)
{
	while (n != NULL && IsA(n, RelabelType))
		n = (Node *) ((RelabelType *) n)->arg;
	return n;
}

/* The sides of a join: outer and inner relations. */
typedef struct JoinSides
{
	Relids		outer;
	Relids		inner;
} JoinSides;

/* 0: a column of the outer side, 1: of the inner side, -1: neither. */
static int
JoinKeySide(Node *n, void *arg)
{
	JoinSides  *js = (JoinSides *) arg;
	Var		   *v = (Var *) Strip(n);

	if (v == NULL || !IsA(v, Var) || v->varlevelsup != 0 || v->varattno <= 0)
		return -1;
	if (bms_is_member(v->varno, js->outer))
		return 0;
	if (bms_is_member(v->varno, js->inner))
		return 1;
	return -1;
}

/* d: evaluated once a scan, so free of the join's columns and of volatility. */
static bool
UsableBound(Node *n)
{
	return n != NULL && !contain_var_clause(n) && !contain_volatile_functions(n) &&
		!contain_subplans(n);
}

static Oid
TypeNamespace(Oid t)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(t));
	Oid			nsp;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	nsp = ((Form_pg_type) GETSTRUCT(tup))->typnamespace;
	ReleaseSysCache(tup);
	return nsp;
}

/*
 * The two keys of a distance or within-d function's first two arguments,
 * and their kind, when the function is PostGIS's or pgvector's own
 * (schema of the key's type) and named one of names.
 */
static bool
KeysOf(Oid funcid, List *args, GjKeySideFn side, void *arg, GjJoinClause *jc)
{
	Node	   *a,
			   *b;
	int			sa,
				sb;
	Oid			ta,
				tnsp = InvalidOid;
	GjKeyKind	kind;

	if (list_length(args) < 2)
		return false;
	a = linitial(args);
	b = lsecond(args);
	sa = side(a, arg);
	sb = side(b, arg);
	if (sa < 0 || sb < 0 || sa == sb)
		return false;
	ta = getBaseType(exprType(Strip(a)));
	if (ta != getBaseType(exprType(Strip(b))) || !GjKeyKindOf(ta, &kind))
		return false;
	tnsp = TypeNamespace(ta);
	if (get_func_namespace(funcid) != tnsp)
		return false;
	jc->kind = kind;
	jc->postgis_nsp = tnsp;
	jc->outer_key = (Expr *) (sa == 0 ? a : b);
	jc->inner_key = (Expr *) (sa == 0 ? b : a);
	return true;
}

static bool
IsPostgis(GjKeyKind k)
{
	return k == GJ_KEY_GEOMETRY || k == GJ_KEY_GEOGRAPHY;
}

static bool
IsPgvector(GjKeyKind k)
{
	return k == GJ_KEY_VECTOR || k == GJ_KEY_HALFVEC;
}

/* A distance function or operator between the sides: its metric. */
bool
GjDistanceOf(Node *n, GjKeySideFn side, void *arg, GjJoinClause *jc)
{
	Oid			funcid;
	List	   *args;
	char	   *name;

	n = Strip(n);
	if (n == NULL)
		return false;
	if (IsA(n, FuncExpr))
	{
		funcid = ((FuncExpr *) n)->funcid;
		args = ((FuncExpr *) n)->args;
	}
	else if (IsA(n, OpExpr))
	{
		funcid = ((OpExpr *) n)->opfuncid;
		if (!OidIsValid(funcid))
			funcid = get_opcode(((OpExpr *) n)->opno);
		args = ((OpExpr *) n)->args;
	}
	else
		return false;
	if (list_length(args) > 3 || !KeysOf(funcid, args, side, arg, jc))
		return false;
	name = get_func_name(funcid);
	if (name == NULL)
		return false;
	jc->spheroid = (Expr *) makeBoolConst(true, false);
	jc->empty_false = false;
	if (IsPostgis(jc->kind) && strcmp(name, "st_distance") == 0)
	{
		/* NULL for an empty geometry: never within d */
		jc->empty_false = true;
		if (jc->kind == GJ_KEY_GEOMETRY)
		{
			jc->metric = GJ_JM_PLANAR;
			return list_length(args) == 2;
		}
		jc->metric = GJ_JM_GEODESIC;
		if (list_length(args) == 3)
		{
			if (!UsableBound(lthird(args)))
				return false;
			jc->spheroid = lthird(args);
		}
		return true;
	}
	if (list_length(args) != 2)
		return false;
	if (jc->kind == GJ_KEY_GEOMETRY && strcmp(name, "geometry_distance_centroid") == 0)
		jc->metric = GJ_JM_PLANAR;
	else if (jc->kind == GJ_KEY_GEOGRAPHY && strcmp(name, "geography_distance_knn") == 0)
		jc->metric = GJ_JM_SPHERE;
	else if (IsPgvector(jc->kind) && strcmp(name, "l2_distance") == 0)
		jc->metric = GJ_JM_L2;
	else if (IsPgvector(jc->kind) && strcmp(name, "cosine_distance") == 0)
		jc->metric = GJ_JM_COSINE;
	else if (jc->kind == GJ_KEY_CUBE && strcmp(name, "cube_distance") == 0)
		jc->metric = GJ_JM_PLANAR;	/* float64 coordinates, as geometry's */
	else
		return false;
	return true;
}

/* ST_DWithin(a, b, d [, use_spheroid]) */
static bool
WithinOf(FuncExpr *f, GjKeySideFn side, void *arg, GjJoinClause *jc)
{
	char	   *name;
	int			nargs = list_length(f->args);

	if (nargs < 3 || nargs > 4 || !KeysOf(f->funcid, f->args, side, arg, jc) ||
		!IsPostgis(jc->kind))
		return false;
	name = get_func_name(f->funcid);
	if (name == NULL || strcmp(name, "st_dwithin") != 0 ||
		exprType(lthird(f->args)) != FLOAT8OID || !UsableBound(lthird(f->args)))
		return false;
	jc->bound = lthird(f->args);
	jc->empty_false = true;		/* false for an empty geometry */
	jc->spheroid = (Expr *) makeBoolConst(true, false);
	if (jc->kind == GJ_KEY_GEOMETRY)
	{
		jc->metric = GJ_JM_PLANAR;
		return nargs == 3;
	}
	jc->metric = GJ_JM_GEODESIC;
	if (nargs == 4)
	{
		if (exprType(lfourth(f->args)) != BOOLOID || !UsableBound(lfourth(f->args)))
			return false;
		jc->spheroid = lfourth(f->args);
	}
	return true;
}

/* dist <= d, dist < d, d >= dist, d > dist */
static bool
CompareOf(OpExpr *op, GjKeySideFn side, void *arg, GjJoinClause *jc)
{
	RegProcedure f = get_opcode(op->opno);
	Node	   *l,
			   *r;

	if (list_length(op->args) != 2)
		return false;
	l = linitial(op->args);
	r = lsecond(op->args);
	if (f == F_FLOAT8LE || f == F_FLOAT8LT)
		;
	else if (f == F_FLOAT8GE || f == F_FLOAT8GT)
	{
		Node	   *t = l;

		l = r;
		r = t;
	}
	else
		return false;
	if (!UsableBound(r) || !GjDistanceOf(l, side, arg, jc))
		return false;
	jc->bound = (Expr *) r;
	return true;
}

/*
 * Whether n is ST_DWithin of two keys, a distance between them compared
 * with a bound (jc->bound set), or the distance alone, side
 * telling which side an argument is (as GjDistanceOf): what a query's
 * distance join is made of, before it is planned (dist/plain_sql.c).
 */
bool
GjDistancePredicateOf(Node *n, GjKeySideFn side, void *arg, GjJoinClause *jc)
{
	memset(jc, 0, sizeof(*jc));
	if (IsA(n, FuncExpr) && ((FuncExpr *) n)->funcresulttype == BOOLOID &&
		WithinOf((FuncExpr *) n, side, arg, jc))
		return true;
	memset(jc, 0, sizeof(*jc));
	if (IsA(n, OpExpr) && CompareOf((OpExpr *) n, side, arg, jc))
		return true;
	memset(jc, 0, sizeof(*jc));
	return GjDistanceOf(n, side, arg, jc);
}

bool
GjFindJoinClause(List *quals, Relids outer, Relids inner, GjJoinClause *jc)
{
	ListCell   *lc;
	JoinSides	js = {outer, inner};

	foreach(lc, quals)
	{
		Node	   *q = (Node *) lfirst(lc);
		bool		found = false;

		memset(jc, 0, sizeof(*jc));
		if (IsA(q, FuncExpr) && ((FuncExpr *) q)->funcresulttype == BOOLOID)
			found = WithinOf((FuncExpr *) q, JoinKeySide, &js, jc);
		else if (IsA(q, OpExpr))
			found = CompareOf((OpExpr *) q, JoinKeySide, &js, jc);
		if (found)
		{
			jc->clause = (Expr *) q;
			return true;
		}
	}
	return false;
}
