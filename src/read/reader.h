/*
 * reader.h
 *		Row conversion shared by the two ways input.c reads rows: the
 *		DestReceiver of the serial read and the packing aggregate of the
 *		parallel read (input_parallel.c).
 */
#ifndef GJ_READER_H
#define GJ_READER_H

#include "gpujoin.h"
#include "core/shared_rows.h"
#include "access/tupdesc.h"
#include "lib/stringinfo.h"
#include "catalog/pg_type_d.h"

/* pgvector's types (pgvector.c), read without a build dependency */
#define GJ_VEC_VECTOR 1
#define GJ_VEC_HALFVEC 2

/* How the coordinates of a result row are laid out. */
typedef struct RowShape
{
	Oid			id_type;
	bool		is_array;		/* one float4[]/float8[], vector or halfvec column */
	int			vec;			/* ... pgvector's GJ_VEC_*, or 0 for an array */
	int			ncoord;			/* scalar coordinate columns */
	Oid		   *coord_types;	/* their base types */
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

/*
 * Converting rows of one shape: counters of why rows were skipped, the
 * current row's coordinates, and the dimensions (fixed by the first array
 * or vector for such a column).
 */
typedef struct GjRowReader
{
	const char *fname;
	RowShape	shape;
	bool		all_float8;		/* scalar float8 coordinates: no conversion */
	int			dims;
	const int64 *only_ids;		/* only these ids (sorted), or NULL */
	int			nonly;
	int64		nrows;
	int64		nnull;
	int64		nnonfinite;
	int64		nfiltered;
	double	   *row;			/* dims coordinates, in cxt */
	MemoryContext cxt;
} GjRowReader;

/* After rd->shape is set; the row buffer lives in cxt. */
extern void GjRowReaderInit(GjRowReader *rd, const char *fname,
							const int64 *only_ids, int nonly, MemoryContext cxt);
extern void GjRowReaderSetDims(GjRowReader *rd, int dims);
extern void GjCheckDims(const char *fname, int dims);
extern AttrNumber GjLookupColumn(Oid relid, const char *name);
extern AttrNumber GjPrimaryKeyColumn(Oid relid, const char *fname);
extern void GjAppendOnlyIds(StringInfo sql, const GjInputSpec *spec, const char *qcol);
/* postgis.c: a geometry column's query and SRID (GJ_NO_SRID when not geometry) */
extern bool GjGeometryInput(const GjInputSpec *spec, char **sql, int32 *srid,
							bool *geography, Oid *nsp);
extern char *GjGeometryWrapQuery(const char *fname, const char *query, TupleDesc td,
								 bool *geography, Oid *nsp, int *coords);
extern int32 GjTakeSridColumn(const char *fname, gj_points *pts, int coords, bool geography);
extern void GjGeographySpheroid(const char *fname, Oid nsp, int32 srid, double *a, double *b);
extern void GjGeographyWithinMany(const char *fname, Oid nsp, int32 srid, bool use_spheroid,
								  double d, int n, const double *ll, bool *within,
								  double *metres);
extern int	GjPgvectorKind(Oid t);
extern void GjPgvectorCoords(GjRowReader *rd, Datum value);
extern bool GjConvertRow(GjRowReader *rd, const Datum *values,
						 const bool *nulls, int64 *id);
extern double DatumToFloat8(Datum d, Oid type);
extern int64 DatumToId(Datum d, Oid type);

/*
 * The parallel read (input_parallel.c): the final function of
 * gpujoin_pack moves the rows of the query that passed the token returned
 * by GjPackBegin into *pts, with the counters; GjPackEnd after the query.
 * On error, the reset of the context t lives in ends the wait (the
 * resource owner detaches the segment).
 */
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

#endif							/* GJ_READER_H */
