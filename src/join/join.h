/*
 * join.h
 *		Plain SQL on the engines (join/): a join whose quals hold a distance
 *		predicate between a column of each side, planned as a GpuJoin.
 *
 * The planner hook (path.c) looks for the predicate (clause.c) among a
 * join's quals: PostGIS's ST_DWithin, ST_Distance(..) <= d and <-> <= d on
 * points, pgvector's <-> and <=> compared with d.  The executor (exec.c)
 * reads the inner side into an engine's index, streams the outer side
 * through it in batches, and decides every candidate the engine finds by
 * the query's own quals.  The engine narrows down which pairs are looked
 * at, with a margin proven to keep every pair the predicate can accept;
 * where the engine's distance proves the predicate true with the same
 * kind of margin, only the other quals are evaluated.  So the rows are
 * PostgreSQL's.
 */
#ifndef GJ_JOIN_H
#define GJ_JOIN_H

#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

#include "read/read.h"

/* How the predicate measures. */
typedef enum GjJoinMetric
{
	GJ_JM_PLANAR,				/* geometry: x, y in the SRID's units */
	GJ_JM_GEODESIC,				/* geography: metres, spheroid or sphere by an argument */
	GJ_JM_SPHERE,				/* geography's <->: metres on PostGIS's sphere */
	GJ_JM_L2,					/* pgvector <->, in float32 */
	GJ_JM_COSINE				/* pgvector <=>, in float32 */
} GjJoinMetric;

/* The distance predicate found among a join's quals. */
typedef struct GjJoinClause
{
	Expr	   *clause;			/* as written */
	GjKeyKind	kind;
	GjJoinMetric metric;
	Oid			postgis_nsp;	/* geography: where spatial_ref_sys is */
	Expr	   *outer_key;		/* a Var of the outer side */
	Expr	   *inner_key;		/* a Var of the inner side */
	Expr	   *bound;			/* d: constant for the join */
	Expr	   *spheroid;		/* geography: use_spheroid (a constant true when defaulted) */
	bool		empty_false;	/* an empty geometry never passes (ST_DWithin, ST_Distance) */
} GjJoinClause;

/*
 * clause.c: the first distance predicate among quals joining outer to
 * inner, or false; and whether n is a distance between two keys, side
 * telling which side (0: outer, 1: inner, -1: neither) an argument is.
 */
extern bool GjFindJoinClause(List *quals, Relids outer, Relids inner, GjJoinClause *jc);
typedef int (*GjKeySideFn) (Node *n, void *arg);
extern bool GjDistanceOf(Node *n, GjKeySideFn side, void *arg, GjJoinClause *jc);
extern bool GjDistancePredicateOf(Node *n, GjKeySideFn side, void *arg, GjJoinClause *jc);

/* pairs.c: the engine's eps over the predicate's d (planar, L2, cosine) */
extern void GjJoinMargins(GjJoinMetric metric, double d, int dims, double *eps, double *eps2,
						  double *in2);

/* tid_read.c: the schema gpujoin is installed in, or InvalidOid */
extern Oid	GjGpujoinSchema(void);

/* path.c: registers gpujoin.enable_join and the join path hook (from _PG_init). */
extern void GjJoinPathInit(void);

/* exec.c: the plan node's methods. */
extern Node *GjJoinCreateState(CustomScan *cscan);

/* the kinds of GpuJoin (custom_private GJ_JP_WHAT) */
#define GJ_JOIN_DISTANCE 0
#define GJ_JOIN_KNN 1

/* custom_private of the plan, in this order: integers, then lists of them */
enum
{
	GJ_JP_JOINTYPE,
	GJ_JP_KIND,
	GJ_JP_METRIC,
	GJ_JP_EMPTY_FALSE,
	GJ_JP_OUTER_COLS,			/* the scan tuple: the outer plan's columns, */
	GJ_JP_POSTGIS_NSP,
	GJ_JP_WHAT,					/* GJ_JOIN_DISTANCE or GJ_JOIN_KNN */
	GJ_JP_INNER_COLS,			/* ... the inner's, then kNN's subquery columns */
	GJ_JP_SORTOPS,				/* kNN: each ORDER BY key's operator, */
	GJ_JP_COLLATIONS,			/* ... collation */
	GJ_JP_NULLS_FIRST,			/* ... and NULLS FIRST */
	GJ_JP_SELF_MAP,				/* one table on both sides: each outer column's inner column */
	GJ_JP_CANDIDATES			/* distance joins: the candidates expected (-1: no estimate) */
};

/* custom_exprs of the plan: in this order */
enum
{
	GJ_JE_JOINQUALS,			/* a List: every qual that decides a match */
	GJ_JE_OUTER_KEY,
	GJ_JE_INNER_KEY,
	GJ_JE_BOUND,				/* d, or kNN's LIMIT */
	GJ_JE_SPHEROID,
	GJ_JE_CLAUSE,				/* the predicate, or kNN's first ORDER BY key */
	GJ_JE_REST,					/* a List: the other quals that decide a match */
	GJ_JE_PAIRQUALS,			/* kNN: the subquery's quals on both sides, */
	GJ_JE_ORDERKEYS,			/* ... its ORDER BY keys, */
	GJ_JE_SOUT					/* ... and its output columns the join needs */
};

/*
 * self.c: when outer and inner read the same rows of one table, the inner
 * plan's column (1-based) of each outer plan column, else NIL; and
 * whether a relation reads the rows that quals select from a table.
 */
extern List *GjSelfMap(PlannerInfo *root, RelOptInfo *outerrel, RelOptInfo *innerrel,
					   List *outer_tlist, List *inner_tlist);
extern bool GjSameTableRows(PlannerInfo *root, RelOptInfo *orel, Oid relid, List *quals,
							Index rti);

/* lateral.c: a LATERAL kNN subquery the join can answer (see there) */
extern bool GjLateralPath(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
						  RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra,
						  Path *outer_path, double *startup, double *total);
/* ... the candidates a row to ask of the kNN engine for LIMIT k, pair quals passing a share p */
extern double GjLateralCandidates(double k, double p);
extern double GjLateralKeyDirect(double k);
extern bool GjLateralKeyOperator(const OpExpr *op, Oid *hl, Oid *hr);
/* nulling.c: the nullable side's Vars marked as the target list marks them (16+) */
extern void GjAlignNullingMarks(CustomScan *cscan);
extern Plan *GjLateralPlan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
						   List *tlist, List *custom_plans, CustomScan *cscan);

#endif							/* GJ_JOIN_H */
