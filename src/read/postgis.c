/*
 * postgis.c
 *		PostGIS point columns as coordinates, found at run time (no build
 *		dependency): a geometry column in cols is read as ST_X, ST_Y (and
 *		ST_Z when its type says PointZ), a geography column as its longitude
 *		and latitude, by the functions of the schema its type lives in.
 *
 * The meaning is PostGIS's own.  geometry, as ST_DWithin(geometry,
 * geometry, d): planar distance in the units of the SRID.  So the SRID
 * must be one per table, and the same on both sides of a two-table join
 * (error otherwise, as PostGIS raises for mixed SRIDs): taken from the
 * column's type when it names one (geometry(Point, 4326)), else from the
 * distinct SRIDs of the table's rows (one extra scan).  geography, as
 * ST_DWithin(geography, geography, d[, use_spheroid]): metres on the
 * SRID's spheroid or on PostGIS's sphere; the job turns the longitudes and
 * latitudes into earth-centred points (job/geo.c, core/geodetic.c) and
 * asks PostGIS about the rare pairs a chord cannot decide
 * (job/geo_postgis.c).
 * A column whose type does not say Point can hold other shapes: its read
 * checks each value's type and calls gpujoin_not_a_point on a line or
 * polygon, an error that names the column and the row (ST_X's own names
 * neither).  An empty point reads as NULL coordinates, so its row is
 * skipped like any NULL (and counted in the NOTICE).
 *
 * The column is read through a query of ours (the caller's privileges
 * apply as for any read).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "read/reader.h"

/* PostGIS's typmod layout (liblwgeom's TYPMOD_GET_*). */
#define GJ_TYPMOD_SRID(t) ((((t) & 0x0FFFFF00) - ((t) & 0x10000000)) >> 8)
#define GJ_TYPMOD_TYPE(t) (((t) & 0x000000FC) >> 2)
#define GJ_TYPMOD_Z(t) (((t) & 0x00000002) >> 1)
#define GJ_POSTGIS_POINTTYPE 1

/*
 * Where a column's type does not say it holds points, the read checks
 * each value (AppendCoordinates): fname, the column's name and the id
 * expression, for the error, and gpujoin's schema, where the function
 * that raises it lives.
 */
typedef struct PointCheck
{
	const char *fname;
	const char *column;
	const char *id;
	Oid			gpujoin_nsp;
} PointCheck;

/*
 * ST_X(col), ST_Y(col) (and ST_Z(col) with z); for geography the longitude
 * and latitude, through PostGIS's cast to geometry (the stored values,
 * unchanged).  With srid, then ST_SRID(col) as the last column, which the
 * reader takes off the rows (GjTakeSridColumn): geography always (the job
 * takes the one spheroid from it before it makes the points
 * earth-centred), geometry where no column type says its SRID (the _sql
 * forms).  With check, the first coordinate is an error for a value that
 * is not a point (evaluated first, before ST_Y raises PostGIS's own).
 */
static void
AppendCoordinates(StringInfo s, const char *nspname, const char *col, bool geography,
				  bool z, bool srid, const PointCheck *check)
{
	const char *x = quote_qualified_identifier(nspname, "st_x"),
			   *y = quote_qualified_identifier(nspname, "st_y");
	const char *g = geography ?
		psprintf("%s(%s)", quote_qualified_identifier(nspname, "geometry"), col) : col;

	if (check != NULL)
	{
		const char *type = psprintf("%s(%s)", quote_qualified_identifier(nspname, "geometrytype"), g);

		appendStringInfo(s, "CASE WHEN %s IS NULL OR %s = 'POINT' THEN %s(%s) "
						 "ELSE %s(%s, %s, (%s)::text, %s) END, %s(%s)",
						 col, type, x, g,
						 quote_qualified_identifier(get_namespace_name(check->gpujoin_nsp),
													"gpujoin_not_a_point"),
						 quote_literal_cstr(check->fname), quote_literal_cstr(check->column),
						 check->id, type, y, g);
	}
	else
		appendStringInfo(s, "%s(%s), %s(%s)", x, g, y, g);
	if (z)
		appendStringInfo(s, ", %s(%s)", quote_qualified_identifier(nspname, "st_z"), col);
	if (srid)
		appendStringInfo(s, ", %s(%s)", quote_qualified_identifier(nspname, "st_srid"), col);
}

/* Whether a column's type modifier says it holds points only. */
static bool
DeclaresPoints(int32 typmod)
{
	return typmod >= 0 && GJ_TYPMOD_TYPE(typmod) == GJ_POSTGIS_POINTTYPE;
}

/*
 * Whether gpujoin's schema has gpujoin_not_a_point: not where the
 * extension's objects are still an older version's (before ALTER
 * EXTENSION gpujoin UPDATE), whose reads keep ST_X's own error.
 */
static bool
HasPointCheck(Oid gpujoin_nsp)
{
	Oid			args[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};

	return OidIsValid(gpujoin_nsp) &&
		OidIsValid(LookupFuncName(list_make2(makeString(get_namespace_name(gpujoin_nsp)),
											 makeString("gpujoin_not_a_point")),
								  4, args, true));
}

/* A column whose type says it holds something other than points: an error. */
static void
CheckPointTypmod(const char *fname, const char *what, Oid t, int32 typmod, bool query)
{
	if (typmod >= 0 && GJ_TYPMOD_TYPE(typmod) != 0 && GJ_TYPMOD_TYPE(typmod) != GJ_POSTGIS_POINTTYPE)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: %s is %s, not points", fname, what,
						format_type_with_typemod(t, typmod)),
				 query ? errhint("Select ST_Centroid or ST_PointOnSurface of it instead.") :
				 errhint("Pass ST_Centroid or ST_PointOnSurface of it through the _sql form.")));
}

/*
 * A read with an SRID column last (AppendCoordinates with srid) left rows
 * of coords coordinates and the SRID: keep the coordinates and return the
 * one SRID (-1: no rows).  Mixed SRIDs are PostGIS's error.
 */
int32
GjTakeSridColumn(const char *fname, gj_points *pts, int coords, bool geography)
{
	int32		srid = -1;
	int			dims = coords + 1;

	if (pts->n == 0)
	{
		pts->dims = coords;
		return -1;
	}
	if (pts->dims != dims)
		elog(ERROR, "%s: a PostGIS read gave %d columns, not %d", fname, pts->dims, dims);
	for (int64 i = 0; i < pts->n; i++)
	{
		int32		s = (int32) pts->x[dims * i + coords];

		if (i == 0)
			srid = s;
		else if (s != srid)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: the %s rows mix SRIDs %d and %d", fname,
							geography ? "geography" : "geometry", srid, s),
					 errdetail("Distances between %s of different SRIDs are not defined, as in PostGIS.",
							   geography ? "geographies" : "geometries")));
		for (int c = 0; c < coords; c++)
			pts->x[coords * i + c] = pts->x[dims * i + c];
	}
	pts->dims = coords;
	return srid;
}

/* The one SRID of the rows of column col of relid, by a scan; -1 when there is none. */
static int32
ScanSrid(const char *fname, const char *qrel, const char *qcol, const char *nspname)
{
	StringInfoData sql;
	int32		srid = -1;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT DISTINCT %s(%s) FROM %s WHERE %s IS NOT NULL LIMIT 2",
					 quote_qualified_identifier(nspname, "st_srid"), qcol, qrel, qcol);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", fname);
	if (SPI_execute(sql.data, true, 2) != SPI_OK_SELECT)
		elog(ERROR, "%s: reading the SRIDs failed", fname);
	if (SPI_processed > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: column %s of %s mixes SRIDs", fname, qcol, qrel),
				 errdetail("Distances between geometries of different SRIDs are not defined, as in PostGIS.")));
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			srid = DatumGetInt32(d);
	}
	SPI_finish();
	return srid;
}

/*
 * Is spec's one coordinate column a PostGIS geometry or geography?  Then
 * *sql is the query that reads it (id, ST_X, ST_Y[, ST_Z]; geography: id,
 * longitude, latitude), *srid its SRID (-1: no rows), *geography which
 * type and *nsp the type's schema.
 */
bool
GjGeometryInput(const GjInputSpec *spec, char **sql, int32 *srid, bool *geography, Oid *nsp_out)
{
	Datum	   *elems;
	bool	   *nulls;
	int			ncols;
	AttrNumber	att;
	const char *id_expr;
	Oid			t,
				coll,
				nsp = InvalidOid;
	int32		typmod;
	const char *kind;
	char	   *nspname,
			   *qcol,
			   *qrel;
	StringInfoData s;
	PointCheck	check;

	if (spec->is_query || spec->sample_pct > 0 || ARR_NDIM(spec->cols) != 1)
		return false;
	deconstruct_array(spec->cols, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &ncols);
	if (ncols != 1 || nulls[0])
		return false;
	att = get_attnum(spec->relid, TextDatumGetCString(elems[0]));
	if (att == InvalidAttrNumber)
		return false;
	get_atttypetypmodcoll(spec->relid, att, &t, &typmod, &coll);
	kind = GjPostgisTypeName(getBaseType(t), &nsp);
	if (kind == NULL)
		return false;
	qcol = (char *) quote_identifier(get_attname(spec->relid, att, false));
	*geography = strcmp(kind, "geography") == 0;
	*nsp_out = nsp;
	CheckPointTypmod(spec->fname, psprintf("column %s", qcol), t, typmod, false);

	nspname = get_namespace_name(nsp);
	qrel = (char *) quote_qualified_identifier(get_namespace_name(get_rel_namespace(spec->relid)),
											   get_rel_name(spec->relid));
	id_expr = GjRelationIdExpr(spec);
	initStringInfo(&s);
	appendStringInfo(&s, "SELECT %s, ", id_expr);
	check.fname = spec->fname;
	check.column = get_attname(spec->relid, att, false);
	check.id = id_expr;
	check.gpujoin_nsp = spec->nsp;
	/* geography measures on the surface: a Z is not part of its distance */
	AppendCoordinates(&s, nspname, qcol, *geography,
					  !*geography && typmod >= 0 && GJ_TYPMOD_Z(typmod), *geography,
					  DeclaresPoints(typmod) || !HasPointCheck(spec->nsp) ? NULL : &check);
	appendStringInfo(&s, " FROM %s", qrel);
	if (spec->only_ids != NULL)
		GjAppendOnlyIds(&s, spec, id_expr);
	*sql = s.data;
	if (*geography)
		*srid = -1;				/* read with the rows */
	else
		*srid = typmod >= 0 && GJ_TYPMOD_SRID(typmod) > 0 ? GJ_TYPMOD_SRID(typmod) :
			ScanSrid(spec->fname, qrel, qcol, nspname);
	return true;
}

/*
 * The _sql forms: a query returning (id, geometry) is read through
 * SELECT id, ST_X(g), ST_Y(g)[, ST_Z(g)], ST_SRID(g) FROM (query) q(id, g),
 * one returning (id, geography) as its longitudes, latitudes and SRIDs;
 * NULL when its result (td) is anything else.  *coords is the number of
 * coordinate columns before the SRID, which the reader takes off the rows
 * (GjTakeSridColumn), so mixed SRIDs within a query, or between the two
 * queries of a join, are errors as for tables.  A Z is read where the
 * result column's type says PointZ (a query selecting such a table column
 * as it is); otherwise the points are 2-D, as ST_DWithin measures.
 */
char *
GjGeometryWrapQuery(const char *fname, const char *query, TupleDesc td, Oid gpujoin_nsp,
					bool *geography, Oid *nsp_out, int *coords)
{
	PointCheck	check;
	Oid			nsp = InvalidOid;
	const char *kind;
	char	   *nspname;
	StringInfoData s;
	int			len = strlen(query);
	Oid			t;
	int32		typmod;
	bool		z;

	if (td == NULL || td->natts != 2)
		return NULL;
	t = TupleDescAttr(td, 1)->atttypid;
	typmod = TupleDescAttr(td, 1)->atttypmod;
	kind = GjPostgisTypeName(getBaseType(t), &nsp);
	if (kind == NULL)
		return NULL;
	*geography = strcmp(kind, "geography") == 0;
	*nsp_out = nsp;
	CheckPointTypmod(fname, "the query's second column", t, typmod, true);
	check.fname = fname;
	check.column = NameStr(TupleDescAttr(td, 1)->attname);
	check.id = "q.i";
	check.gpujoin_nsp = gpujoin_nsp;
	z = !*geography && typmod >= 0 && GJ_TYPMOD_Z(typmod);
	*coords = z ? 3 : 2;
	/* a trailing semicolon would end the subquery early */
	while (len > 0 && (query[len - 1] == ';' || query[len - 1] == ' ' ||
					   query[len - 1] == '\n' || query[len - 1] == '\t' || query[len - 1] == '\r'))
		len--;
	nspname = get_namespace_name(nsp);
	initStringInfo(&s);
	appendStringInfoString(&s, "SELECT q.i, ");
	AppendCoordinates(&s, nspname, "q.g", *geography, z, true,
					  DeclaresPoints(typmod) || !HasPointCheck(gpujoin_nsp) ? NULL : &check);
	appendStringInfo(&s, " FROM (%.*s\n) q(i, g)", len, query);
	return s.data;
}

/*
 * Whether a geometry or geography column's type modifier declares 2-D
 * points of one SRID (geometry(Point, 4326)): every value then a point of
 * that SRID, or empty.  *srid: the SRID.
 */
bool
GjPointTypmod(int32 typmod, int32 *srid)
{
	return GjPointsTypmod(typmod, srid) && *srid > 0;
}

/*
 * Whether the type modifier declares 2-D points (geometry(Point)), every
 * value a point or empty, of SRID *srid, or of any SRID when that is 0.
 */
bool
GjPointsTypmod(int32 typmod, int32 *srid)
{
	if (typmod < 0 || GJ_TYPMOD_TYPE(typmod) != 1 || GJ_TYPMOD_Z(typmod) || (typmod & 0x1))
		return false;
	*srid = GJ_TYPMOD_SRID(typmod);
	return true;
}

/*
 * gpujoin_not_a_point(fname, column, id, type): the error of a read that
 * met a value other than a point in a column whose type does not say
 * Point (AppendCoordinates); never returns.
 */
PG_FUNCTION_INFO_V1(gpujoin_not_a_point);

Datum
gpujoin_not_a_point(PG_FUNCTION_ARGS)
{
	const char *arg[4];

	for (int i = 0; i < 4; i++)
		arg[i] = PG_ARGISNULL(i) ? "?" : text_to_cstring(PG_GETARG_TEXT_PP(i));
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("%s: column %s holds a %s in row %s, not a point", arg[0],
					quote_identifier(arg[1]), arg[3], arg[2]),
			 errdetail("gpujoin joins points; distances to lines and polygons are not what it computes."),
			 errhint("Pass ST_Centroid or ST_PointOnSurface of the column through the _sql form, "
					 "or leave out what is not a point (WHERE GeometryType(%s) = 'POINT').",
					 quote_identifier(arg[1]))));
	PG_RETURN_NULL();
}
