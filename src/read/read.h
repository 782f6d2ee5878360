/*
 * read.h
 *		Reading a join's rows into the core's point buffers: what the job
 *		asks the reader for and what it gets back.
 *
 * One reader serves every function and both forms of input (a relation
 * with column names, or a caller's query): it runs as the caller through
 * SPI, read-only, and decodes each row's coordinates (numbers, arrays,
 * PostGIS points, pgvector values) straight into a gj_points buffer,
 * serially or through parallel workers (spi_read.c says how).
 */
#ifndef GJ_READ_H
#define GJ_READ_H

#include "gpujoin.h"

#include "access/attnum.h"
#include "utils/relcache.h"
#include "nodes/params.h"
#include "utils/array.h"

/* The distance: Euclidean, or 1 - cosine similarity (rows normalised on read). */
typedef enum GjMetric
{
	GJ_METRIC_L2 = 0,
	GJ_METRIC_COSINE
} GjMetric;

/*
 * Keys of any type (keyed.c): the keyed forms of the functions take a
 * witness of the key's type (key => NULL::uuid) and return each row's own
 * key, of that type.  The engines still see integer ids: the read gives
 * each row the rank of its key in the type's btree order, so that every
 * rule that follows ids (kNN ties to the smaller id, lists and pairs in id
 * order, DBSCAN's cluster numbers) follows the keys' order, and the rows
 * go out with the keys back in their place.  A side whose keys are not
 * returned (eps_join_counts's s) reads any first column and keeps nothing.
 */
typedef struct GjKeys
{
	Oid			type;			/* the witness's type; RECORDOID: any row */
	bool		kept;			/* false: not returned, any type (ids: row numbers) */
	/* filled by the read */
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *values;			/* values[id], ranked (GjKeysRank) */
	int64		n;
	int64		cap;
	char	   *arena;			/* by-reference values go here */
	Size		arena_left;
} GjKeys;

/* What the reader is asked to read. */
typedef struct GjInputSpec
{
	const char *fname;			/* SQL function name, for messages */
	GjMetric	metric;			/* cosine: rows are normalised, zero rows dropped */
	bool		is_query;		/* the _sql form */
	Oid			nsp;			/* schema of gpujoin's functions */
	/* relation form */
	Oid			relid;
	ArrayType  *cols;			/* coordinate column names */
	text	   *id_col;			/* NULL: the primary key */
	const char *where;			/* only rows where this SQL condition holds (dist/ only) */
	const char *match;			/* a column whose value a row's references share (dist/ only:
								 * knn_lateral_join's query_match, ref_match) */
	GjKeys	   *keys;			/* NULL: an integer id (else the read fills it) */
	/* query form, and the values of its $1, $2, ... (nparams of them) */
	const char *query;
	int			nparams;
	const Oid  *param_types;
	ParamListInfo params;
	/* only the rows with these ids (sorted, distinct), when not NULL */
	const int64 *only_ids;
	int			nonly;

	/*
	 * Relation form, planning: read a TABLESAMPLE SYSTEM of sample_pct
	 * percent of the blocks, with each row's block number as its id.
	 */
	double		sample_pct;
	int			sample_seed;	/* ... REPEATABLE (sample_seed) */

	/*
	 * Rows already read (the plain-SQL join reads its sides through the
	 * executor): copied as they are, nothing else above applies but fname.
	 */
	const gj_points *given;

	/*
	 * Relation form, the plain-SQL join's read of a side (join/tid_read.c):
	 * each row's id is its ctid, packed as GjRowIdOf does, no primary key
	 * is needed, and skipped rows are only counted (no NOTICE).
	 */
	bool		row_ids;
	bool		quiet;			/* skipped rows only counted (the join's reads) */
} GjInputSpec;

/* A ctid as a row id: block number and offset in one int64, and back. */
static inline int64
GjRowIdOf(uint32 block, uint16 offset)
{
	return ((int64) block << 16) | offset;
}

/* What reading cost, for EXPLAIN ANALYZE. */
typedef struct GjReadStats
{
	int64		rows;			/* rows the query returned */
	int64		skipped;		/* of which NULL, NaN or infinite, or zero for cosine */
	int64		nonfinite;		/* ... of which NaN or infinite */
	int			workers;		/* parallel workers' buffers combined */
	double		ms;
	int32		srid;			/* the last read's PostGIS SRID (-1: no rows), or GJ_NO_SRID */
	bool		geography;		/* the last read was a geography column: lon/lat rows */
	Oid			postgis_nsp;	/* the schema of its PostGIS type */
} GjReadStats;

#define GJ_NO_SRID (-2)			/* the input was not a geometry column */

/* A returned row's key: its id (the rank keyed.c gave it) back to the key. */
static inline Datum
GjKeyOf(const GjKeys *keys, int64 id)
{
	if (keys == NULL || !keys->kept)
		return Int64GetDatum(id);
	if ((uint64) id >= (uint64) keys->n)
		elog(ERROR, "gpujoin: row id %lld beyond the %lld keys read", (long long) id,
			 (long long) keys->n);
	return keys->values[id];
}

/*
 * The relation form's column by name (UNDEFINED_COLUMN if none), and its
 * SELECT of id and coordinates, checked against the catalog and quoted
 * (pack_token 0: plain rows; relation.c, row_keys.c).
 */
extern AttrNumber GjLookupColumn(Oid relid, const char *name);
/* Is column att of rel a key: a unique, immediate, whole-table index on it alone (row_keys.c)? */
extern bool GjUniqueColumn(Relation rel, AttrNumber att);
extern char *GjBuildRelationQuery(const GjInputSpec *spec, int64 pack_token);
extern char *GjRelationIdExpr(const GjInputSpec *spec);
extern void GjNoticeSkipped(const char *fname, int64 rows, int64 nnull, int64 nnonfinite, int64 nzero);

/* Registers gpujoin.parallel_read_min_rows and gpujoin.parallel_read_file. */
extern void GjReadInit(void);
extern int	GjParallelReadMinRows(void);

/*
 * Reads every usable row of spec into pts (empty, owned by the caller's
 * GjResources); counts go to stats when it is not NULL.
 */
extern void GjReadPoints(const GjInputSpec *spec, gj_points *pts,
						 GjReadStats *stats);

/*
 * keys.c: one value of a plain-SQL join's key column (join/) as
 * coordinates, from its Datum: a PostGIS point (x, y; geography: lon,
 * lat) or a pgvector value.  GJ_KEY_OTHER: a value the engines cannot
 * take (not one finite point, another vector size); the join leaves it to
 * the query's own predicate.
 */
typedef enum GjKeyKind
{
	GJ_KEY_GEOMETRY,
	GJ_KEY_GEOGRAPHY,
	GJ_KEY_VECTOR,
	GJ_KEY_HALFVEC,
	GJ_KEY_CUBE					/* contrib's cube, points only */
} GjKeyKind;

typedef enum GjKeyResult
{
	GJ_KEY_OK,
	GJ_KEY_OTHER,
	GJ_KEY_EMPTY				/* an empty geometry (PostGIS 3's serialization) */
} GjKeyResult;

extern bool GjKeyKindOf(Oid t, GjKeyKind *kind);
extern GjKeyResult GjKeyCoords(GjKeyKind kind, Datum d, double *out, int *dims, int32 *tag);
/* keys.c: a geometry point value of x, y and srid, in GJ_POSTGIS_POINT_SIZE bytes */
#define GJ_POSTGIS_POINT_SIZE 32
extern void GjPostgisPointFromXY(double x, double y, int32 srid, struct varlena *buf);
/*
 * pgvector.c: which of pgvector's types base type t is (GJ_VEC_*, or 0),
 * told without a build dependency on pgvector
 */
#define GJ_VEC_VECTOR 1
#define GJ_VEC_HALFVEC 2
extern int	GjPgvectorKind(Oid t);
/* pgvector.c: a vector value from coordinates read from one (exact) */
extern void GjPgvectorFromFloat8(const double *x, int dims, struct varlena *buf);
/* keys.c: whether base type t is PostGIS's geometry or geography, and its schema */
extern bool GjPostgisType(Oid t, Oid *nsp, GjKeyKind *kind);
extern bool GjPointTypmod(int32 typmod, int32 *srid);
extern bool GjPointsTypmod(int32 typmod, int32 *srid);

#endif							/* GJ_READ_H */
