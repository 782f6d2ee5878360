/*
 * dist_internal.h
 *		What the files of a distributed join share (dist/): the call's plan
 *		and the intermediate tables and SQL that strip_tables.c makes.
 *
 * The files call downwards only:
 *	dist_join.c		the eps calls: which run here, GjDistStart, rows out
 *	dist_knn.c		the kNN calls: bounds, halos, the join
 *	shard_knn.c		the kNN calls of a few query rows: each shard answers them
 *	match.c			the kNN calls of the query row's own kind: rows moved by kind
 *	dist_dbscan.c	dbscan: local clusters on the workers, joined here
 *	strip_tables.c	the tables, the rows moved into them, the SQL over them
 *	strips.c, citus.c	leaves
 */
#ifndef GJ_DIST_INTERNAL_H
#define GJ_DIST_INTERNAL_H

#include "dist/dist.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "utils/tuplestore.h"

struct GjDist
{
	Tuplestorestate *store;
	TupleTableSlot *slot;
	int			natts;
};

/* One call's plan, from its spec. */
typedef struct DistCall
{
	const GjJobSpec *spec;
	bool		self;			/* eps_selfjoin, eps_neighbor_counts, eps_neighbors: one table */
	bool		others;			/* kNN of some of a table's rows (r) among some or all of
								 * them (s): a row is not its own neighbour, as in a self
								 * join */
	const GjInputSpec *r;		/* the rows whose strip owns their pairs */
	const GjInputSpec *s;		/* the rows copied into halos (self: r) */
	int			dims;			/* coordinates */
	int			ncols;			/* their columns: dims, or 1 geometry or vector column */
	GjStripCoords coords;		/* the coordinates as float8 SQL over columns c1 .. */
	Oid			postgis_nsp;	/* a geometry column: PostGIS's schema, else InvalidOid */
	int			vector;			/* a pgvector column: GJ_VEC_VECTOR or GJ_VEC_HALFVEC, else 0 */
	bool		array;			/* a float4[] or float8[] column */
	bool		geography;		/* a PostGIS geography column: the strips cut latitude */
	bool		cosine;			/* the cosine metric (pgvector columns): the strips cut a
								 * normalised element */
	double		per_unit;		/* the cut coordinate's units a unit of distance moves it
								 * at most: 1, or geography's degrees of latitude a metre */
	const char *call_args;		/* more arguments of the workers' _sql calls ("" or
								 * geography's use_spheroid) */
	char	   *s_ref;			/* s a reference table: its rows as each node's copy has them
								 * (a FROM item), not repartitioned; else NULL */
	char	   *r_from;			/* "(SELECT id, c.. FROM t) q(id, c1, ..)" */
	char	   *s_from;
	char	   *schema;			/* where the intermediate tables go, quoted */
	char	   *cells;			/* their names, qualified and quoted */
	char	   *r_tab;
	char	   *s_tab;
	char	   *r_base;			/* ... and unqualified, for the shards' names */
	char	   *s_base;
	char	   *l_tab;			/* dbscan's labels (qualified, quoted), else NULL */
	GjStrips	strips;
	int32	   *values;			/* strip i's distribution value */
	int			k;				/* kNN: k, and k + 1 for a self join (the row itself) */
	bool		fresh;			/* nothing of the transaction ran on the workers before
								 * the call (GjCitusFreshTransaction) */
	char	   *match_eq;		/* the query row's own kind (match.c): the = of query_match
								 * and ref_match, "OPERATOR(s.=)", else NULL */
	char	   *match_order;	/* ... and ref_order's keys after the distance, or "" */
} DistCall;

/* strip_tables.c */
extern uint64 GjDistExec(const char *sql, int expect);
extern int	GjDistNumericColumns(const GjInputSpec *in);
extern bool GjDistPostgisColumn(const GjInputSpec *in, GjKeyKind want, Oid *postgis_nsp, bool *z);
extern int	GjDistVectorColumn(const GjInputSpec *in, int *dims);
extern bool GjDistArrayColumn(const GjInputSpec *in);
extern double GjDistGeographyPerMetre(const DistCall *dc, const char *const *from, int nfrom);
extern int	GjDistArrayDims(const char *const *from, int nfrom, const char *as_array);
extern void GjDistCoords(DistCall *dc);
extern double GjDistReach(const DistCall *dc, double d);
extern bool GjDistIdsUnique(const GjInputSpec *in);
extern bool GjDistKeyFits(const GjInputSpec *in);
extern char *GjDistColumnList(int ncols);
extern char *GjDistSource(const GjInputSpec *in, int ncols, bool as_is, const char *from);
extern char *GjDistFlaggedSource(const GjInputSpec *in, int ncols, bool as_is, const char *from,
								 const char *flag);
extern bool GjDistFiltersOthers(const DistCall *dc);
extern const char *GjDistRowsOfR(const DistCall *dc);
extern char *GjDistWritableSchema(void);
extern char *GjDistValuesLiteral(const DistCall *dc);
extern char *GjDistStripAt(const DistCall *dc, const char *x);
extern void GjDistMakeTables(DistCall *dc, uint32 seq);
extern void GjDistDropTables(const DistCall *dc);
extern int64 GjDistMoveRows(DistCall *dc, int halo);
extern bool GjDistLateralStrips(const DistCall *dc);
extern void GjDistFillCells(DistCall *dc);
extern char *GjDistKeyWitness(const char *name, const GjInputSpec *in);
extern char *GjDistKeptRow(const DistCall *dc);
extern char *GjDistColumnName(const GjInputSpec *in, int i);
extern char *GjDistVectorSchema(const GjInputSpec *in);
extern char *GjDistVectorNorm(const DistCall *dc, const char *col);
extern char *GjDistVectorOperator(const DistCall *dc);
extern char *GjDistOperator(Oid opno);
typedef void (*GjDistRowFn) (TupleTableSlot *slot, void *arg);
extern int64 GjDistEach(const char *sql, GjDistRowFn fn, void *arg);
extern void GjDistStoreSlot(GjDist *dist, TupleDesc td, MemoryContext cxt);
extern int64 GjDistFetch(GjDist *dist, const char *sql, bool both_orders, MemoryContext cxt);
extern const char *GjDistPlacement(const DistCall *dc, MemoryContext cxt, int *workers);

/* shard_knn.c: a kNN join of a few query rows by each shard of the references; false: not taken */
extern void GjDistShardKnnInit(void);
extern bool GjDistShardKnn(DistCall *dc, GjDist *dist, MemoryContext cxt, GjDistStats *stats, uint32 seq);

/* dist_knn.c: the kNN join's bounds, halos and query; rows moved */
extern int64 GjDistKnn(DistCall *dc, GjDist *dist, MemoryContext cxt);

/* match.c: the query row's own kind, its rows moved by kind */
extern void GjDistMatchCheck(DistCall *dc);
extern int64 GjDistMoveRowsByMatch(DistCall *dc);

/* dist_dbscan.c: dbscan's labels on the workers, their clusters joined here */
extern void GjDistDbscan(DistCall *dc, GjDist *dist, MemoryContext cxt);

#endif							/* GJ_DIST_INTERNAL_H */
