/*
 * dist.h
 *		A join of Citus-distributed tables computed on the workers (dist/):
 *		the rows are repartitioned into strips of space by Citus, each
 *		worker runs gpujoin's own engine on its strips, and only the result
 *		rows come back to this backend.
 *
 * Citus is never linked: dist/ speaks to it through its SQL interface
 * (create_distributed_table, INSERT ... SELECT, its catalog tables) over
 * SPI, so gpujoin builds and runs where Citus is not installed.
 *
 *	citus.c		what Citus's catalog says: is a table distributed, the workers
 *	strips.c	the strips: the dimension to cut, where to cut it (from the
 *				rows' bounds and a histogram, counted on the workers)
 *	dist_join.c	the run: which calls, the eps joins' pushed-down queries,
 *				the rows back, the tables dropped
 *	dist_knn.c	the kNN joins: the strips' bounds, halos within them
 *	shard_knn.c	the kNN joins of a few query rows: sent to every shard of
 *				the references, which do not move
 *	match.c		the kNN joins of the query row's own kind: rows moved by kind
 *	dist_dbscan.c	dbscan: local clusters on the workers, joined here
 *	strip_tables.c	the intermediate tables, rows moved, SQL over them
 */
#ifndef GJ_DIST_H
#define GJ_DIST_H

#include "job/job.h"

typedef struct GjDist GjDist;

/* gpujoin.distributed: run joins of distributed tables on the workers. */
extern void GjDistInit(void);

/*
 * spec's join on the workers, when an input is a Citus-distributed table
 * and the call is one the strips answer exactly: run to its last row
 * (kept in a tuplestore in cxt), the intermediate tables dropped.  NULL:
 * not distributed, or a call the coordinator runs (with a NOTICE saying
 * why when an input is distributed).
 */
extern GjDist *GjDistStart(const GjJobSpec *spec, MemoryContext cxt, GjDistStats *stats);
extern bool GjDistNext(GjDist *dist, Datum *values, bool *nulls);
extern void GjDistEnd(GjDist *dist);

/* plain_sql.c: the planner hook for plain distance joins of distributed tables (from _PG_init) */
extern void GjDistPlainInit(void);

/* citus.c */
extern bool GjCitusInstalled(void);
extern bool GjCitusDistributed(Oid relid);
extern bool GjCitusTable(Oid relid);
extern bool GjCitusReference(Oid relid);
extern char *GjCitusReferenceShard(Oid relid);
extern int	GjCitusWorkers(void);
extern bool GjCitusFreshTransaction(void);
extern bool GjCitusColocatedBy(Oid a, AttrNumber att_a, Oid b, AttrNumber att_b);

/* match.c: is opno, of types ltype and rtype (either way round), an equality the rows can move by? */
extern bool GjMatchHashFamily(Oid ltype, Oid rtype, Oid opno);

/* strips.c: where to cut dimension dim of the rows of the queries */
typedef struct GjStrips
{
	int			dim;			/* 0-based */
	int			n;				/* strips; n - 1 cuts */
	double	   *cuts;			/* ascending: strip i is [cuts[i-1], cuts[i]) */
	double		lo;				/* the finite values' range in dim */
	double		hi;
	/* each query's rows, and those the engine skips (its read's NOTICE) */
	int64		rows[2];
	int64		nnull[2];		/* a NULL id or coordinate */
	int64		nnonfinite[2];	/* a NaN or infinite coordinate */
	int64		nzero[2];		/* cosine: of the others, only zero coordinates */
} GjStrips;

/* The coordinates of an input as SQL over the columns (id, c1, ..) of its FROM items. */
typedef struct GjStripCoords
{
	const char *const *x;		/* dims float8 expressions */
	int			dims;
	const char *null_row;		/* a row the engine skips for a NULL id or coordinate */
	const char *finite_row;		/* ... and, of the others, one it keeps ... */
	const char *zero_row;		/* ... unless this (the cosine metric's rows without a
								 * direction; NULL: none) */
	bool		sample_dim;		/* too many dimensions to bound each on every row: the
								 * cut one is chosen from a sample of ... */
	const char *sample_array;	/* ... this float8[] expression of the rows */
} GjStripCoords;

extern void GjPlanStrips(const char *const *queries, int nqueries, const GjStripCoords *coords,
						 double eps, int want, GjStrips *strips);
extern char *GjFloat8Literal(double v);
extern char *GjStripNullRow(const char *const *coords, int dims);
extern char *GjStripFiniteRow(const char *const *coords, int dims);

#endif							/* GJ_DIST_H */
