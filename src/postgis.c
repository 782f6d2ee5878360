/*
 * postgis.c
 *		PostGIS point columns as coordinates, found at run time (no build
 *		dependency): a geometry column in cols is read as ST_X, ST_Y (and
 *		ST_Z when its type says PointZ) by the functions of the schema its
 *		type lives in.
 *
 * The meaning is PostGIS's own for ST_DWithin(geometry, geometry, d):
 * planar distance in the units of the SRID.  So the SRID must be one per
 * table, and the same on both sides of a two-table join (error otherwise,
 * as PostGIS raises for mixed SRIDs): taken from the column's type when it
 * names one (geometry(Point, 4326)), else from the distinct SRIDs of the
 * table's rows (one extra scan).  A non-point geometry is PostGIS's own
 * error from ST_X; an empty point reads as NULL coordinates, so its row is
 * skipped like any NULL (and counted in the NOTICE).
 *
 * The column is read through a query of ours (the caller's privileges
 * apply as for any read); geography is refused until its metres on the
 * sphere and the spheroid are done (issue 19).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "gpujoin.h"
#include "reader.h"

/* PostGIS's typmod layout (liblwgeom's TYPMOD_GET_*). */
#define GJ_TYPMOD_SRID(t) ((((t) & 0x0FFFFF00) - ((t) & 0x10000000)) >> 8)
#define GJ_TYPMOD_TYPE(t) (((t) & 0x000000FC) >> 2)
#define GJ_TYPMOD_Z(t) (((t) & 0x00000002) >> 1)
#define GJ_POSTGIS_POINTTYPE 1

/* The name of base type t when it is geometry or geography, else NULL. */
static const char *
PostgisTypeName(Oid t, Oid *nsp)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(t));
	const char *name = NULL;

	if (!HeapTupleIsValid(tup))
		return NULL;
	{
		Form_pg_type typ = (Form_pg_type) GETSTRUCT(tup);

		if (typ->typtype == TYPTYPE_BASE &&
			(strcmp(NameStr(typ->typname), "geometry") == 0 ||
			 strcmp(NameStr(typ->typname), "geography") == 0))
		{
			name = strcmp(NameStr(typ->typname), "geometry") == 0 ? "geometry" : "geography";
			*nsp = typ->typnamespace;
		}
	}
	ReleaseSysCache(tup);
	return name;
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
 * Is spec's one coordinate column a PostGIS geometry?  Then *sql is the
 * query that reads it (id, ST_X, ST_Y[, ST_Z]) and *srid its SRID (-1: no
 * rows).  Geography: an error, for now.
 */
bool
GjGeometryInput(const GjInputSpec *spec, char **sql, int32 *srid)
{
	Datum	   *elems;
	bool	   *nulls;
	int			ncols;
	AttrNumber	att,
				id_att;
	Oid			t,
				coll,
				nsp = InvalidOid;
	int32		typmod;
	const char *kind;
	char	   *nspname,
			   *qcol,
			   *qrel;
	StringInfoData s;

	if (spec->is_query || spec->sample_pct > 0 || ARR_NDIM(spec->cols) != 1)
		return false;
	deconstruct_array(spec->cols, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &ncols);
	if (ncols != 1 || nulls[0])
		return false;
	att = get_attnum(spec->relid, TextDatumGetCString(elems[0]));
	if (att == InvalidAttrNumber)
		return false;
	get_atttypetypmodcoll(spec->relid, att, &t, &typmod, &coll);
	kind = PostgisTypeName(getBaseType(t), &nsp);
	if (kind == NULL)
		return false;
	qcol = (char *) quote_identifier(get_attname(spec->relid, att, false));
	if (strcmp(kind, "geography") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: column %s is geography, which gpujoin cannot read yet",
						spec->fname, qcol),
				 errhint("Project it to a metric SRID: pass a geometry column, e.g. ST_Transform(col::geometry, <UTM zone>), through the _sql form.")));
	if (typmod >= 0 && GJ_TYPMOD_TYPE(typmod) != 0 && GJ_TYPMOD_TYPE(typmod) != GJ_POSTGIS_POINTTYPE)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: column %s is %s, not points", spec->fname, qcol,
						format_type_with_typemod(t, typmod)),
				 errhint("Pass ST_Centroid or ST_PointOnSurface of it through the _sql form.")));

	nspname = get_namespace_name(nsp);
	qrel = (char *) quote_qualified_identifier(get_namespace_name(get_rel_namespace(spec->relid)),
											   get_rel_name(spec->relid));
	id_att = spec->id_col != NULL ? GjLookupColumn(spec->relid, text_to_cstring(spec->id_col)) :
		GjPrimaryKeyColumn(spec->relid, spec->fname);
	initStringInfo(&s);
	appendStringInfo(&s, "SELECT %s, %s(%s), %s(%s)",
					 quote_identifier(get_attname(spec->relid, id_att, false)),
					 quote_qualified_identifier(nspname, "st_x"), qcol,
					 quote_qualified_identifier(nspname, "st_y"), qcol);
	if (typmod >= 0 && GJ_TYPMOD_Z(typmod))
		appendStringInfo(&s, ", %s(%s)", quote_qualified_identifier(nspname, "st_z"), qcol);
	appendStringInfo(&s, " FROM %s", qrel);
	if (spec->only_ids != NULL)
		GjAppendOnlyIds(&s, spec, quote_identifier(get_attname(spec->relid, id_att, false)));
	*sql = s.data;
	*srid = typmod >= 0 && GJ_TYPMOD_SRID(typmod) > 0 ? GJ_TYPMOD_SRID(typmod) :
		ScanSrid(spec->fname, qrel, qcol, nspname);
	return true;
}

/*
 * The _sql forms: a query returning (id, geometry) is read through
 * SELECT id, ST_X(g), ST_Y(g) FROM (query) q(id, g); NULL when its result
 * (td) is anything else.  Its SRIDs are not checked (no table to scan):
 * the caller's query decides what it returns.
 */
char *
GjGeometryWrapQuery(const char *fname, const char *query, TupleDesc td)
{
	Oid			nsp = InvalidOid;
	const char *kind;
	char	   *nspname;
	StringInfoData s;
	int			len = strlen(query);

	if (td == NULL || td->natts != 2)
		return NULL;
	kind = PostgisTypeName(getBaseType(TupleDescAttr(td, 1)->atttypid), &nsp);
	if (kind == NULL)
		return NULL;
	if (strcmp(kind, "geography") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: column \"%s\" of the query is geography, which gpujoin cannot read yet",
						fname, NameStr(TupleDescAttr(td, 1)->attname)),
				 errhint("Return a geometry in a metric SRID, e.g. ST_Transform(col::geometry, <UTM zone>).")));
	/* a trailing semicolon would end the subquery early */
	while (len > 0 && (query[len - 1] == ';' || query[len - 1] == ' ' ||
					   query[len - 1] == '\n' || query[len - 1] == '\t' || query[len - 1] == '\r'))
		len--;
	nspname = get_namespace_name(nsp);
	initStringInfo(&s);
	appendStringInfo(&s, "SELECT q.i, %s(q.g), %s(q.g) FROM (%.*s\n) q(i, g)",
					 quote_qualified_identifier(nspname, "st_x"),
					 quote_qualified_identifier(nspname, "st_y"), len, query);
	return s.data;
}
