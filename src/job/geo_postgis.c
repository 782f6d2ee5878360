/*
 * geo_postgis.c
 *		PostGIS's own answers for a geography job: the semi-axes of the
 *		SRID's spheroid, and ST_DWithin / ST_Distance for the pairs a chord
 *		cannot settle (geo.c), by queries through SPI in PostGIS's schema.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "job/job_internal.h"

/*
 * The semi-axes in metres of the spheroid of geography SRID srid, from
 * its spatial_ref_sys definition (SPHEROID["name", a, 1/f] in its WKT), as
 * PostGIS takes them from PROJ.
 */
void
GjGeographySpheroid(const char *fname, Oid nsp, int32 srid, double *a, double *b)
{
	StringInfoData sql;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(srid)};
	char	   *wkt = NULL;
	const char *p;
	double		rf = -1;

	*a = -1;
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT srtext FROM %s WHERE srid = $1",
					 quote_qualified_identifier(get_namespace_name(nsp), "spatial_ref_sys"));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", fname);
	if (SPI_execute_with_args(sql.data, 1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "%s: reading spatial_ref_sys failed", fname);
	if (SPI_processed == 1)
	{
		char	   *t = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (t != NULL)
		{
			/* out of SPI's memory, which SPI_finish frees */
			wkt = SPI_palloc(strlen(t) + 1);
			strcpy(wkt, t);
		}
	}
	SPI_finish();
	if (wkt != NULL &&
		((p = strstr(wkt, "SPHEROID[")) != NULL || (p = strstr(wkt, "ELLIPSOID[")) != NULL))
	{
		/* past the quoted name: the two numbers */
		p = strchr(p, '"');
		if (p != NULL)
			p = strchr(p + 1, '"');
		if (p != NULL && sscanf(p + 1, " , %lf , %lf", a, &rf) != 2)
			*a = -1;
	}
	if (wkt != NULL)
		pfree(wkt);
	if (!(*a > 0) || !(rf >= 0))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: cannot find the spheroid of SRID %d in spatial_ref_sys", fname, srid),
				 errhint("Geography columns use a geographic SRID, 4326 (WGS 84) by default.")));
	*b = rf == 0 ? *a : *a * (1.0 - 1.0 / rf);
}

/*
 * PostGIS's own answers for n pairs of stored geography points of SRID
 * srid, ll holding each pair's (lon, lat, lon, lat) in degrees:
 * ST_DWithin(g1, g2, d, use_spheroid) into within[k], and
 * ST_Distance(g1, g2, use_spheroid) into metres[k].  Both are asked: the
 * distance is rounded to 1e-8 m, the test is not.  For the few pairs whose
 * chord is within a hair of d (core/geodetic.c), in one query for many
 * pairs (unnest of four arrays, in order), as one SPI query a pair costs
 * its parse and plan.
 */
void
GjGeographyWithinMany(const char *fname, Oid nsp, int32 srid, bool use_spheroid, double d,
					  int n, const double *ll, bool *within, double *metres)
{
	static const Oid argtypes[7] = {FLOAT8ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID,
	FLOAT8ARRAYOID, INT4OID, BOOLOID, FLOAT8OID};
	const char *ns = get_namespace_name(nsp);
	StringInfoData sql;
	Datum		args[7];
	Datum	   *col = palloc(sizeof(Datum) * (n + 1));
	uint64		got;

	if (n <= 0)
		return;
	for (int c = 0; c < 4; c++)
	{
		for (int k = 0; k < n; k++)
			col[k] = Float8GetDatum(ll[4 * k + c]);
		args[c] = PointerGetDatum(construct_array(col, n, FLOAT8OID, sizeof(float8),
												  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	}
	args[4] = Int32GetDatum(srid);
	args[5] = BoolGetDatum(use_spheroid);
	args[6] = Float8GetDatum(d);
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT %s(p, q, $7, $6), %s(p, q, $6) FROM "
					 "(SELECT o, %s(%s(%s(ax, ay), $5)) AS p, %s(%s(%s(bx, by), $5)) AS q "
					 "FROM unnest($1, $2, $3, $4) WITH ORDINALITY AS u(ax, ay, bx, by, o)) x ORDER BY o",
					 quote_qualified_identifier(ns, "st_dwithin"),
					 quote_qualified_identifier(ns, "st_distance"),
					 quote_qualified_identifier(ns, "geography"),
					 quote_qualified_identifier(ns, "st_setsrid"),
					 quote_qualified_identifier(ns, "st_makepoint"),
					 quote_qualified_identifier(ns, "geography"),
					 quote_qualified_identifier(ns, "st_setsrid"),
					 quote_qualified_identifier(ns, "st_makepoint"));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", fname);
	if (SPI_execute_with_args(sql.data, 7, (Oid *) argtypes, args, NULL, true, 0) != SPI_OK_SELECT ||
		SPI_processed != (uint64) n)
		elog(ERROR, "%s: asking PostGIS about %d pairs failed", fname, n);
	got = SPI_processed;
	for (uint64 k = 0; k < got; k++)
	{
		bool		null1,
					null2;

		within[k] = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[k], SPI_tuptable->tupdesc, 1, &null1));
		metres[k] = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[k], SPI_tuptable->tupdesc, 2, &null2));
		if (null1 || null2)
			elog(ERROR, "%s: PostGIS gave no answer for (%g %g), (%g %g)", fname,
				 ll[4 * k], ll[4 * k + 1], ll[4 * k + 2], ll[4 * k + 3]);
	}
	SPI_finish();
	pfree(sql.data);
	pfree(col);
	for (int c = 0; c < 4; c++)
		pfree(DatumGetPointer(args[c]));
}

