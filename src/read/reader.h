/*
 * reader.h
 *		The reader's own files (read/): how a result row's columns become
 *		coordinates, shared by the serial read (spi_read.c) and the
 *		parallel read's aggregate (parallel_read.c), and the leaves both
 *		call: the relation's catalog (relation.c), the size checks
 *		(sizes.c), the read-only guard (guard.c), PostGIS points
 *		(postgis.c) and pgvector values (pgvector.c).  The leaves never
 *		call back into the reader.
 */
#ifndef GJ_READER_H
#define GJ_READER_H

#include "read/read.h"
#include "core/shared_rows.h"
#include "access/tupdesc.h"
#include "lib/stringinfo.h"
#include "catalog/pg_type_d.h"

/* How the coordinates of a result row are laid out. */
typedef struct RowShape
{
	Oid			id_type;		/* an integer type, tid, or a keyed read's key type */
	bool		keyed;			/* the id is a key (GjKeys): ids are row numbers */
	bool		is_array;		/* one float4[]/float8[], vector or halfvec column */
	int			vec;			/* ... pgvector's GJ_VEC_*, or 0 for an array */
	int			postgis;		/* ... a PostGIS point column (the join's read): its GjKeyKind + 1 */
	int32		srid;			/* ... of which this SRID (another: an "other" row) */
	int			ncoord;			/* scalar coordinate columns */
	Oid		   *coord_types;	/* their base types */
	char	  **coord_names;	/* ... and names, for errors */
	Oid			elem_type;		/* array element type */
} RowShape;

static inline bool
IsIdType(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID;
}

static inline bool
IsCoordType(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID ||
		t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID;
}

static inline bool
IsCoordArrayType(Oid t)
{
	return t == FLOAT4ARRAYOID || t == FLOAT8ARRAYOID;
}

#define GJ_COORD_TYPES_DETAIL "Coordinates must be smallint, integer, bigint, real, double precision or numeric columns, or one real[], double precision[], vector, halfvec, geometry or geography column."

/*
 * Converting rows of one shape (rows.c): counters of why rows were
 * skipped, the current row's coordinates, and the dimensions (fixed by
 * the first array or vector for such a column).
 */
typedef struct GjRowReader
{
	const char *fname;
	RowShape	shape;
	bool		all_float8;		/* scalar float8 coordinates: no conversion */
	int			dims;
	const int64 *only_ids;		/* only these ids (sorted), or NULL */
	int			nonly;
	GjKeys	   *keys;			/* a keyed read's keys (shape.keyed) */
	int64		nrows;
	int64		nnull;
	int64		nnonfinite;
	int64		nfiltered;
	double	   *row;			/* dims coordinates, in cxt */
	MemoryContext cxt;
} GjRowReader;

/* rows.c */
extern void GjCheckDims(const char *fname, int dims);
extern bool GjIsPointColumnType(Oid t);
extern void GjCheckRowShape(const char *fname, TupleDesc td, RowShape *shape, bool join_read,
							GjKeys *keys);
/* After rd->shape is set; the row buffer lives in cxt. */
extern void GjRowReaderInit(GjRowReader *rd, const char *fname,
							const int64 *only_ids, int nonly, MemoryContext cxt);
extern void GjRowReaderSetDims(GjRowReader *rd, int dims);
extern bool GjConvertRow(GjRowReader *rd, const Datum *values,
						 const bool *nulls, int64 *id);
extern double DatumToFloat8(Datum d, Oid type);
extern int64 DatumToId(Datum d, Oid type);

/*
 * row_keys.c: what identifies a row: a relation's columns by name, its
 * integer id column or key as a SELECT expression, and keys of any type
 * (read.h's GjKeys): emptied before a read, the result's first column
 * checked as the key, each accepted row's key kept, ids made ranks.
 */
extern AttrNumber GjPrimaryKeyColumn(Oid relid, const char *fname);
extern void GjKeysStart(GjKeys *keys, const char *fname);
extern void GjKeysColumn(GjKeys *keys, const char *fname, TupleDesc td);
extern void GjKeysAdd(GjKeys *keys, Datum d, MemoryContext cxt);
extern void GjKeysRank(GjKeys *keys, gj_points *pts);
extern char *GjKeyText(Datum d, Oid type);

/* relation.c: the relation form's query, from the catalog */
extern void GjAppendOnlyIds(StringInfo sql, const GjInputSpec *spec, const char *qcol);

/* sizes.c: the input's size against gpujoin.host_memory_limit */
extern int64 GjExpectedRows(Oid relid);
extern double GjRelationRows(Oid relid);
extern void GjCheckHostMemory(const char *fname, double rows, int dims, bool at_least);
extern void GjPrecheckHostMemory(const GjInputSpec *spec);
extern void GjSizeFromStats(const GjInputSpec *spec, gj_points *pts);

/*
 * guard.c: the read-only guard of a read as the caller.  Enter starts a
 * GUC nest level (settings the read changes go there) and makes the
 * transaction read-only; Leave undoes both (an error does too).
 */
typedef struct GjReadOnly
{
	int			nestlevel;
	bool		was_read_only;
	ErrorContextCallback context;	/* says why a write was refused */
} GjReadOnly;

extern void GjEnterReadOnly(GjReadOnly *guard);
extern void GjLeaveReadOnly(GjReadOnly *guard);

/*
 * postgis.c: a geometry or geography column's query and SRID
 * (GJ_NO_SRID when not geometry), a query returning one wrapped to read
 * its coordinates, and the SRID column such a read ends with.
 */
extern bool GjGeometryInput(const GjInputSpec *spec, char **sql, int32 *srid,
							bool *geography, Oid *nsp);
extern const char *GjPostgisTypeName(Oid t, Oid *nsp);	/* keys.c */
extern char *GjGeometryWrapQuery(const char *fname, const char *query, TupleDesc td,
								 Oid gpujoin_nsp, bool *geography, Oid *nsp, int *coords);
extern int32 GjTakeSridColumn(const char *fname, gj_points *pts, int coords, bool geography);

/*
 * pgvector.c: the dimensions of a detoasted value after checking it
 * against the layout, and its elements as float64.
 */
extern int	GjPgvectorDims(const struct varlena *v, int kind, const char *fname);
extern void GjPgvectorToFloat8(const struct varlena *v, int kind, double *out);

/*
 * The parallel read (parallel_read.c): whether a relation is read by
 * parallel workers (and in how many dimensions); the final function of
 * gpujoin_pack moves the rows of the query that passed the token returned
 * by GjPackBegin into *pts, with the counters; GjPackEnd after the query.
 * On error, the reset of the context t lives in ends the wait (the
 * resource owner detaches the segment).
 */
extern bool GjParallelReadWanted(const GjInputSpec *spec, int *dims);

typedef struct GjPackTarget
{
	gj_points  *pts;
	int64		expect;			/* rows to reserve room for */
	bool		done;
	struct dsm_segment *seg;	/* the shared segment rows go through */
	struct PackShared *shared;
	gj_shared_rows file;		/* ... or the shared files they go into */
	int			fds_reserved;	/* descriptors reported to fd.c for them */
	bool		in_file;		/* (they did: for the reader's message) */
	int64	   *ids;			/* the rows' place in this process */
	double	   *x;
	int64		nrows;
	int64		nnull;
	int64		nnonfinite;
	int64		nzero;			/* zero rows the participants dropped (cosine) */
	bool		normalized;		/* every row normalised by the participants */
	int			partials;
	GjRowReader rd_counts;		/* the counters above, for the reader */
} GjPackTarget;

extern int64 GjPackBegin(GjPackTarget *t, MemoryContext cxt, int dims, bool normalize,
						 const char *fname);
extern void GjPackEnd(GjPackTarget *t);

/*
 * Rows beyond the shared segment travel from each worker as one bytea
 * (under 1 GB): without a segment, only inputs well below that read in
 * parallel.
 */
#define GJ_PACK_UNSHARED_MAX (900.0 * 1024 * 1024)

#endif							/* GJ_READER_H */
