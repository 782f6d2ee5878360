/*
 * strip_tables.c
 *		The intermediate tables of a distributed join and the SQL over
 *		them: which inputs the strips can take, the tables made and
 *		distributed by strip, rows moved into their strips (and halos),
 *		each strip's queries over its own shards, the witnesses of keys,
 *		and the rows fetched back.  Everything through SPI (the caller is
 *		connected), every name quoted.
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "tcop/dest.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "dist/dist_internal.h"

#define GJ_DIST_BOUND_DIMS 16	/* arrays of more: the cut dimension from a sample */

/* Run a statement that writes, or reads a one-off answer. */
uint64
GjDistExec(const char *sql, int expect)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expect)
		elog(ERROR, "gpujoin: a distributed join's statement failed (%s): %s",
			 SPI_result_code_string(rc), sql);
	return SPI_processed;
}

/* Every coordinate column of in numeric (no arrays, vectors, PostGIS): dims, else 0. */
int
GjDistNumericColumns(const GjInputSpec *in)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(in->cols, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		AttrNumber	att;
		Oid			t;

		if (nulls[i])
			return 0;
		att = GjLookupColumn(in->relid, TextDatumGetCString(elems[i]));
		t = getBaseType(get_atttype(in->relid, att));
		if (t != INT2OID && t != INT4OID && t != INT8OID && t != FLOAT4OID &&
			t != FLOAT8OID && t != NUMERICOID)
			return 0;
	}
	return n;
}

/*
 * The self join's ids are unique and never NULL: the primary key, or an
 * id column with a unique, immediate, whole-table index of its own and
 * NOT NULL.  Then a < b by the ids is the order the single node gives.
 */
bool
GjDistIdsUnique(const GjInputSpec *in)
{
	AttrNumber	att;
	Relation	rel;
	bool		unique;

	if (in->id_col == NULL)
		return true;			/* the primary key */
	att = GjLookupColumn(in->relid, text_to_cstring(in->id_col));
	rel = relation_open(in->relid, AccessShareLock);
	unique = TupleDescAttr(RelationGetDescr(rel), att - 1)->attnotnull && GjUniqueColumn(rel, att);
	relation_close(rel, AccessShareLock);
	return unique;
}

/*
 * A key the intermediate tables can hold and the workers name: not an
 * anonymous row, and of the row types only a Citus table's own, which
 * every node has (its shell table's): the key that carries a row whole
 * (plain_pairs.c).
 */
bool
GjDistKeyFits(const GjInputSpec *in)
{
	Oid			t;

	if (in->keys == NULL || !in->keys->kept)
		return true;
	t = getBaseType(in->keys->type);
	if (t == RECORDOID)
		return false;
	if (get_typtype(t) != TYPTYPE_COMPOSITE)
		return true;
	return OidIsValid(get_typ_typrelid(t)) && GjCitusTable(get_typ_typrelid(t));
}

/* "c1, .., cn" */
static char *
CoordList(int ncols)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 1; i <= ncols; i++)
		appendStringInfo(&s, "%sc%d", i > 1 ? ", " : "", i);
	return s.data;
}

/* "id, c1, .., cn" */
char *
GjDistColumnList(int ncols)
{
	return psprintf("id, %s", CoordList(ncols));
}

/* The name of in's i-th coordinate column (0-based), from the catalog, quoted. */
char *
GjDistColumnName(const GjInputSpec *in, int i)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(in->cols, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (i >= n)
		elog(ERROR, "gpujoin: coordinate column %d of %d", i + 1, n);
	return (char *) quote_identifier(get_attname(in->relid, GjLookupColumn(in->relid, TextDatumGetCString(elems[i])),
												 false));
}

/*
 * "(SELECT id, c.. FROM t) q(id, c1, .., cn)": the input, columns renamed;
 * a geometry or vector column as it is (the workers' _sql functions read it).  A
 * side whose keys are not returned (eps_join_counts' s) gets 0 for an
 * id: any row works there, and NULL would skip the row.
 */
char *
GjDistSource(const GjInputSpec *in, int ncols, bool as_is, const char *from)
{
	return GjDistFlaggedSource(in, ncols, as_is, from, NULL);
}

/*
 * The same, and where flag is not NULL (a condition on t's columns), a
 * last column ref: whether it holds on the row ((flag) IS TRUE).
 */
char *
GjDistFlaggedSource(const GjInputSpec *in, int ncols, bool as_is, const char *from, const char *flag)
{
	char	   *base;
	const char *ref = flag != NULL ? ", ref" : "";
	/* knn_lateral_join's query_match or ref_match: the row's kind, m (match.c) */
	const char *m = in->match != NULL ? ", m" : "";

	if (as_is || from != NULL)
	{
		/* the columns by name (GjBuildRelationQuery checked them), from the table or from */
		Datum	   *elems;
		bool	   *nulls;
		int			n;
		StringInfoData s;

		deconstruct_array(in->cols, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
		initStringInfo(&s);
		appendStringInfo(&s, "SELECT %s", GjRelationIdExpr(in));
		for (int i = 0; i < n; i++)
			appendStringInfo(&s, ", %s", GjDistColumnName(in, i));
		if (in->match != NULL)
			appendStringInfo(&s, ", %s", quote_identifier(in->match));
		if (flag != NULL)
			appendStringInfo(&s, ", (%s) IS TRUE", flag);
		appendStringInfo(&s, " FROM %s", from != NULL ? from :
						 quote_qualified_identifier(get_namespace_name(get_rel_namespace(in->relid)),
													get_rel_name(in->relid)));
		/* knn_lateral_join's ref_filter: the only rows there are (a condition, args.c) */
		if (in->where != NULL)
			appendStringInfo(&s, " WHERE (%s)", in->where);
		base = s.data;
	}
	else if (in->where != NULL || flag != NULL || in->match != NULL)
		elog(ERROR, "gpujoin: a filtered input of numeric columns");
	else
		base = GjBuildRelationQuery(in, 0);
	if (in->keys != NULL && !in->keys->kept)
		base = psprintf("SELECT 0::int8, %s%s%s FROM (%s) q0(k, %s%s%s)", CoordList(ncols), m, ref, base,
						CoordList(ncols), m, ref);
	return psprintf("(%s) q(%s%s%s)", base, GjDistColumnList(ncols), m, ref);
}

/* The base type and typmod of in's one coordinate column; false when it has several. */
static bool
OneColumnType(const GjInputSpec *in, Oid *type, int32 *typmod)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	Oid			t,
				coll;

	deconstruct_array(in->cols, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n != 1 || nulls[0])
		return false;
	get_atttypetypmodcoll(in->relid, GjLookupColumn(in->relid, TextDatumGetCString(elems[0])),
						  &t, typmod, &coll);
	*type = getBaseType(t);
	return true;
}

/*
 * A PostGIS column of kind GJ_KEY_GEOMETRY or GJ_KEY_GEOGRAPHY, the one
 * coordinate column of in; *z: its type declares a Z (PostGIS's typmod),
 * which the engine reads for geometry, as a third coordinate.
 */
bool
GjDistPostgisColumn(const GjInputSpec *in, GjKeyKind want, Oid *postgis_nsp, bool *z)
{
	Oid			t;
	int32		typmod;
	GjKeyKind	kind;

	if (!OneColumnType(in, &t, &typmod) || !GjPostgisType(t, postgis_nsp, &kind) || kind != want)
		return false;
	*z = typmod >= 0 && (typmod & 0x00000002) != 0;
	return true;
}

/*
 * A pgvector column (vector or halfvec), the one coordinate column of in:
 * its kind (GJ_VEC_*), and *dims, its declared dimensions or 0 (a bare
 * vector: GjDistArrayDims reads them from the rows).
 */
int
GjDistVectorColumn(const GjInputSpec *in, int *dims)
{
	Oid			t;
	int32		typmod;

	if (!OneColumnType(in, &t, &typmod))
		return 0;
	*dims = typmod > 0 ? typmod : 0;
	return GjPgvectorKind(t);
}

/* A float4[] or float8[] column, the one coordinate column of in. */
bool
GjDistArrayColumn(const GjInputSpec *in)
{
	Oid			t;
	int32		typmod;

	return OneColumnType(in, &t, &typmod) && (t == FLOAT4ARRAYOID || t == FLOAT8ARRAYOID);
}

/*
 * Geography: how many degrees of latitude a metre of distance can cross
 * at most, with a margin, for the one SRID of the rows of from (0: none,
 * or several: the coordinator gives the single node's answer).  Any path
 * from latitude p1 to p2 is at least as long as the meridian's arc
 * between them, and the meridian's radius of curvature is nowhere below
 * b^2 / a (at the equator); PostGIS's sphere has radius (2a + b) / 3.
 * So a pair within d metres is at most d / min(b^2 / a, (2a + b) / 3)
 * radians of latitude apart, on the spheroid or the sphere: strips of
 * latitude with halos that wide lose no pair, and latitude, unlike
 * longitude, does not wrap.
 */
double
GjDistGeographyPerMetre(const DistCall *dc, const char *const *from, int nfrom)
{
	const char *nsp = quote_identifier(get_namespace_name(dc->postgis_nsp));
	int32		srid = 0;
	bool		any = false;
	double		a,
				b,
				r;

	for (int i = 0; i < nfrom; i++)
	{
		bool		n1,
					n2;
		int32		lo,
					hi;

		GjDistExec(psprintf("SELECT min(%s.st_srid(c1)), max(%s.st_srid(c1)) FROM %s WHERE c1 IS NOT NULL",
							nsp, nsp, from[i]), SPI_OK_SELECT);
		lo = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &n1));
		hi = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &n2));
		SPI_freetuptable(SPI_tuptable);
		if (n1 || n2)
			continue;
		if (lo != hi || (any && lo != srid))
			return 0.0;
		srid = lo;
		any = true;
	}
	if (!any)
		return 0.0;
	GjGeographySpheroid(dc->spec->fname, dc->postgis_nsp, srid, &a, &b);
	r = Min(b * b / a, (2 * a + b) / 3);
	return 180.0 / M_PI / r * (1 + 1e-6);
}

/*
 * The elements of the arrays of the rows the engine reads (an id, an
 * array; a bare vector as_array through its cast to real[]), the same in
 * every such row of both inputs, or 0: then the coordinator reads them,
 * and gives the single node's error for arrays of different lengths,
 * empty or of several dimensions.
 */
int
GjDistArrayDims(const char *const *from, int nfrom, const char *as_array)
{
	int			lo = INT_MAX,
				hi = 0;

	for (int i = 0; i < nfrom; i++)
	{
		bool		n1,
					n2,
					n3;

		GjDistExec(psprintf("SELECT min(pg_catalog.cardinality(%s)), max(pg_catalog.cardinality(%s)), "
							"max(pg_catalog.array_ndims(%s)) FROM %s WHERE id IS NOT NULL AND c1 IS NOT NULL",
							as_array, as_array, as_array, from[i]), SPI_OK_SELECT);
		if (SPI_processed != 1)
			return 0;
		{
			int32		a = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &n1));
			int32		b = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &n2));
			int32		nd = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &n3));

			SPI_freetuptable(SPI_tuptable);
			if (n1 || n2)
				continue;		/* no array: nothing to agree with */
			if (n3 || nd > 1)
				return 0;
			lo = Min(lo, a);
			hi = Max(hi, b);
		}
	}
	return lo == hi && lo > 0 ? lo : 0;
}

/* The schema of in's pgvector column's type: pgvector's. */
char *
GjDistVectorSchema(const GjInputSpec *in)
{
	Oid			t;
	int32		typmod;
	HeapTuple	tup;
	char	   *nsp;

	if (!OneColumnType(in, &t, &typmod) || !HeapTupleIsValid(tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(t))))
		elog(ERROR, "gpujoin: a vector column's type was not found");
	nsp = get_namespace_name(((Form_pg_type) GETSTRUCT(tup))->typnamespace);
	ReleaseSysCache(tup);
	return nsp;
}

/*
 * How far apart in the cut coordinate two rows at distance d can be: d
 * in the coordinate's units (geography: its degrees of latitude a metre);
 * for the cosine metric, whose strips cut a normalised element, the
 * distance of two unit vectors whose cosine distance is d, sqrt(2 d), and
 * 1e-12 over for the normalisations' rounding (elements are at most 1).
 */
double
GjDistReach(const DistCall *dc, double d)
{
	if (dc->cosine)
		return sqrt(2.0 * d) + 1e-12;
	return d * dc->per_unit;
}

/* pgvector's norm of a vector column col, in float64 (SQL) */
char *
GjDistVectorNorm(const DistCall *dc, const char *col)
{
	char	   *nsp = GjDistVectorSchema(dc->s);

	return psprintf("%s(%s::%s)", quote_qualified_identifier(nsp, "vector_norm"), col,
					quote_qualified_identifier(nsp, "vector"));
}

/*
 * The coordinates as float8 SQL: c1::float8 ..., a geometry's x and y, or
 * a vector's elements (pgvector's own cast to real[]: its float4 values,
 * as the engine reads them).  pgvector refuses NaN and infinite elements,
 * so a vector row is skipped only for a NULL, and none of its elements
 * need a test on every row.
 */
void
GjDistCoords(DistCall *dc)
{
	char	  **c = palloc(sizeof(char *) * dc->dims);

	for (int i = 0; i < dc->dims; i++)
		c[i] = dc->geography ?
			psprintf("%s(c1::%s)", quote_qualified_identifier(get_namespace_name(dc->postgis_nsp), "st_y"),
					 quote_qualified_identifier(get_namespace_name(dc->postgis_nsp), "geometry")) :
			OidIsValid(dc->postgis_nsp) ?
			psprintf("%s(c1)", quote_qualified_identifier(get_namespace_name(dc->postgis_nsp),
														   i == 0 ? "st_x" : i == 1 ? "st_y" : "st_z")) :
			dc->vector ? psprintf("(c1::pg_catalog.float4[])[%d]::float8", i + 1) :
			dc->array ? psprintf("c1[%d]::float8", i + 1) :
			psprintf("c%d::float8", i + 1);
	if (dc->cosine)
	{
		/*
		 * The cosine metric joins the rows normalised (normalize.c): the
		 * strips cut a normalised element.  pgvector's vector_norm sums in
		 * float64, as the engine does after scaling by the largest element
		 * (no float4 element's square overflows): the two differ by
		 * rounding, which GjDistReach's margin covers.
		 */
		char	   *norm = GjDistVectorNorm(dc, "c1");

		for (int i = 0; i < dc->dims; i++)
			c[i] = psprintf("(%s / NULLIF(%s, 0))", c[i], norm);
		dc->coords.zero_row = psprintf("(%s = 0)", norm);
	}
	dc->coords.x = (const char *const *) c;
	dc->coords.dims = dc->dims;
	if (dc->vector)
	{
		dc->coords.null_row = "(id IS NULL OR c1 IS NULL)";
		dc->coords.finite_row = "true";
		dc->coords.sample_dim = true;
		dc->coords.sample_array = "c1::pg_catalog.float4[]::pg_catalog.float8[]";
	}
	else if (dc->array)
	{
		/* as the engine's read: a NULL element skips the row, as a NaN or infinite one does */
		dc->coords.null_row = "(id IS NULL OR c1 IS NULL OR pg_catalog.array_position(c1, NULL) IS NOT NULL)";
		dc->coords.finite_row = "NOT (c1::pg_catalog.float8[] OPERATOR(pg_catalog.&&) "
			"'{NaN,Infinity,-Infinity}'::pg_catalog.float8[])";
		dc->coords.sample_dim = dc->dims > GJ_DIST_BOUND_DIMS;
		dc->coords.sample_array = "c1::pg_catalog.float8[]";
	}
	else
	{
		dc->coords.null_row = GjStripNullRow(dc->coords.x, dc->dims);
		dc->coords.finite_row = GjStripFiniteRow(dc->coords.x, dc->dims);
	}
}

/* The first schema of search_path where the caller may create tables, or NULL. */
char *
GjDistWritableSchema(void)
{
	char	   *nsp = NULL;

	if (SPI_execute("SELECT n FROM pg_catalog.unnest(pg_catalog.current_schemas(false)) n "
					"WHERE pg_catalog.has_schema_privilege(n, 'CREATE') LIMIT 1", true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v != NULL)
			nsp = pstrdup(quote_identifier(v));
	}
	return nsp;
}

/*
 * The strips' distribution values: for each shard of the cells table, in
 * shard order, the smallest integer that hashes to it.  Citus places
 * shards round the workers, so consecutive strips go to different ones.
 */
static void
StripValues(DistCall *dc)
{
	int			n = dc->strips.n;
	char	   *sql = psprintf("SELECT shardid, min(v) FROM pg_catalog.generate_series(0, %d) v, "
							   "LATERAL (SELECT pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v) AS shardid) s "
							   "GROUP BY 1 ORDER BY 1", 256 * n + 4096, dc->cells);

	GjDistExec(sql, SPI_OK_SELECT);
	if (SPI_processed != (uint64) n)
		elog(ERROR, "gpujoin: %d strips, but " UINT64_FORMAT " shards of the cells were found",
			 n, SPI_processed);
	dc->values = palloc(sizeof(int32) * n);
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		dc->values[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
}

/* '{v0,v1,..}'::int4[] and the cuts as '{..}'::float8[] */
char *
GjDistValuesLiteral(const DistCall *dc)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoString(&s, "'{");
	for (int i = 0; i < dc->strips.n; i++)
		appendStringInfo(&s, "%s%d", i > 0 ? "," : "", dc->values[i]);
	appendStringInfoString(&s, "}'::int4[]");
	return s.data;
}

static char *
CutsLiteral(const DistCall *dc)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoString(&s, "ARRAY[");
	for (int i = 0; i < dc->strips.n - 1; i++)
		appendStringInfo(&s, "%s%s", i > 0 ? ", " : "", GjFloat8Literal(dc->strips.cuts[i]));
	appendStringInfoString(&s, "]::float8[]");
	return s.data;
}

/* The rows the engine reads: no NULL id, no NULL, NaN or infinite coordinate (cosine: not all zero). */
char *
GjDistKeptRow(const DistCall *dc)
{
	return psprintf("NOT %s AND %s%s%s", dc->coords.null_row, dc->coords.finite_row,
					dc->coords.zero_row != NULL ? " AND NOT " : "",
					dc->coords.zero_row != NULL ? dc->coords.zero_row : "");
}

/*
 * A row's strip (0-based) at x, an SQL float8 expression: NULL, NaN and
 * infinite values have one strip (the engine skips such rows there).
 */
char *
GjDistStripAt(const DistCall *dc, const char *x)
{
	if (dc->strips.n == 1)
		return pstrdup("0");
	return psprintf("COALESCE(pg_catalog.width_bucket(%s, %s), 0)", x, CutsLiteral(dc));
}

/*
 * What r's strip table holds: r's rows, and where a filter leaves some
 * of a table's rows out of its references (GjDistFiltersOthers), whether
 * each query row is one of them (ref): those lack themselves.
 */
const char *
GjDistRowsOfR(const DistCall *dc)
{
	if (!GjDistFiltersOthers(dc))
		return dc->r_from;
	return GjDistFlaggedSource(dc->r, dc->ncols, true, NULL, dc->s->where);
}

/* A kNN of a table's rows among those of its rows a filter keeps (others, s filtered)? */
bool
GjDistFiltersOthers(const DistCall *dc)
{
	return dc->others && dc->s->where != NULL;
}

/*
 * Make the intermediate tables: unlogged, distributed by strip, one
 * shard a strip, co-located with the cells (s's none for a reference
 * table, which stays where it is).
 */
void
GjDistMakeTables(DistCall *dc, uint32 seq)
{
	char	   *prefix = psprintf("gpujoin_%d_%u", MyProcPid, seq);

	dc->r_base = psprintf("%s_r", prefix);
	dc->s_base = psprintf("%s_s", prefix);
	dc->cells = psprintf("%s.%s", dc->schema, quote_identifier(psprintf("%s_cells", prefix)));
	dc->r_tab = psprintf("%s.%s", dc->schema, quote_identifier(dc->r_base));
	dc->s_tab = psprintf("%s.%s", dc->schema, quote_identifier(dc->s_base));

	GjDistExec(psprintf("CREATE UNLOGGED TABLE %s (strip int4, rq text, sq text, lq text)", dc->cells),
			   SPI_OK_UTILITY);
	GjDistExec(psprintf("SELECT create_distributed_table('%s', 'strip', shard_count => %d, colocate_with => 'none')",
				  dc->cells, dc->strips.n), SPI_OK_SELECT);
	/*
	 * s: a row in its own strip (own) or a halo's, from a later strip
	 * (later) or not; near (dbscan's halos, two eps wide): a halo row within
	 * eps of the strip, or an own row within eps of another strip
	 */
	if (dc->s_ref == NULL)
	{
		GjDistExec(psprintf("CREATE UNLOGGED TABLE %s AS SELECT 0::int4 AS strip, true AS own, true AS later, "
							"true AS near, q.* "
							"FROM %s WITH NO DATA", dc->s_tab, dc->s_from), SPI_OK_UTILITY);
		GjDistExec(psprintf("SELECT create_distributed_table('%s', 'strip', colocate_with => '%s')",
							dc->s_tab, dc->cells), SPI_OK_SELECT);
	}
	if (!dc->self)
	{
		GjDistExec(psprintf("CREATE UNLOGGED TABLE %s AS SELECT 0::int4 AS strip, q.* FROM %s WITH NO DATA",
							dc->r_tab, GjDistRowsOfR(dc)), SPI_OK_UTILITY);
		GjDistExec(psprintf("SELECT create_distributed_table('%s', 'strip', colocate_with => '%s')",
							dc->r_tab, dc->cells), SPI_OK_SELECT);
	}
	StripValues(dc);
}

/* Drop the intermediate tables (an error or a cancel rolls them back instead). */
void
GjDistDropTables(const DistCall *dc)
{
	GjDistExec(psprintf("DROP TABLE %s%s%s%s%s%s%s", dc->cells,
						dc->s_ref == NULL ? ", " : "", dc->s_ref == NULL ? dc->s_tab : "",
						dc->self ? "" : ", ", dc->self ? "" : dc->r_tab,
						dc->l_tab != NULL ? ", " : "", dc->l_tab != NULL ? dc->l_tab : ""), SPI_OK_UTILITY);
}

/*
 * Repartition the rows the engine reads (no NULL, NaN or infinite
 * coordinate, no NULL id): r rows into their strip, s rows into their own
 * and every strip within halo eps of them (0, 1, or 2 for dbscan; a
 * margin of 1e-9 eps and a few units of rounding of x over: never a strip
 * short), flagged near (above) for dbscan.  Returns the rows written.
 */
int64
GjDistMoveRows(DistCall *dc, int halo)
{
	const char *x = dc->coords.x[dc->strips.dim];
	char	   *eps = GjFloat8Literal(GjDistReach(dc, dc->spec->eps));
	char	   *own = GjDistStripAt(dc, x);
	char	   *finite = psprintf("(%s > '-Infinity'::float8 AND %s < 'Infinity'::float8)", x, x);
	char	   *margin = psprintf("(%s * (1 + 1e-9) + abs(%s) * 1e-15)", eps, x);
	char	   *lo = own;
	char	   *hi = own;
	char	   *near = "false";
	char	   *vals = GjDistValuesLiteral(dc);
	/* the rows the engine would skip stay out (GjDistStart says how many) */
	char	   *kept = GjDistKeptRow(dc);
	int64		moved = 0;

	if (halo > 0)
	{
		char	   *width = psprintf("%d * %s", halo, margin);

		lo = psprintf("CASE WHEN %s THEN %s ELSE %s END", finite,
					  GjDistStripAt(dc, psprintf("(%s - %s)", x, width)), own);
		hi = psprintf("CASE WHEN %s THEN %s ELSE %s END", finite,
					  GjDistStripAt(dc, psprintf("(%s + %s)", x, width)), own);
	}
	if (halo == 2)
	{
		char	   *lo1 = psprintf("CASE WHEN %s THEN %s ELSE %s END", finite,
								   GjDistStripAt(dc, psprintf("(%s - %s)", x, margin)), own);
		char	   *hi1 = psprintf("CASE WHEN %s THEN %s ELSE %s END", finite,
								   GjDistStripAt(dc, psprintf("(%s + %s)", x, margin)), own);

		near = psprintf("CASE WHEN st = %s THEN %s <> %s ELSE st BETWEEN %s AND %s END",
						own, lo1, hi1, lo1, hi1);
	}
	if (!dc->self)
	{
		moved += GjDistExec(psprintf("INSERT INTO %s SELECT (%s)[%s + 1], q.* FROM %s WHERE %s",
									 dc->r_tab, vals, own, GjDistRowsOfR(dc), kept), SPI_OK_INSERT);
		CHECK_FOR_INTERRUPTS();
	}
	if (dc->s_ref != NULL)
		return moved;			/* a reference table: each node reads its own copy */
	moved += GjDistExec(psprintf("INSERT INTO %s SELECT (%s)[st + 1], st = %s, st < %s, %s, q.* FROM %s, "
								 "LATERAL pg_catalog.generate_series(%s, %s) st WHERE %s",
								 dc->s_tab, vals, own, own, near, dc->s_from, lo, hi, kept), SPI_OK_INSERT);
	return moved;
}

/*
 * A reference table's rows for each strip, as a text[] of queries over
 * each node's copy: the rows the engine reads, within eps of the strip
 * (with the halo's margin); kNN: all of them.
 */
static char *
ReferenceQueries(const DistCall *dc)
{
	StringInfoData a;
	int			n = dc->strips.n;
	const char *x = dc->coords.x[dc->strips.dim];
	char	   *kept = GjDistKeptRow(dc);
	double		scale = Max(fabs(dc->strips.lo), fabs(dc->strips.hi));
	double		m = GjDistReach(dc, dc->spec->eps) * (1 + 1e-9) + (isfinite(scale) ? scale * 1e-12 : 0.0);

	initStringInfo(&a);
	appendStringInfoString(&a, "ARRAY[");
	for (int i = 0; i < n; i++)
	{
		StringInfoData q;

		initStringInfo(&q);
		appendStringInfo(&q, "SELECT %s FROM %s WHERE %s", GjDistColumnList(dc->ncols), dc->s_ref, kept);
		if (!dc->spec->is_knn && i > 0)
			appendStringInfo(&q, " AND %s >= %s", x, GjFloat8Literal(dc->strips.cuts[i - 1] - m));
		if (!dc->spec->is_knn && i < n - 1)
			appendStringInfo(&q, " AND %s <= %s", x, GjFloat8Literal(dc->strips.cuts[i] + m));
		appendStringInfo(&a, "%s%s", i > 0 ? ", " : "", quote_literal_cstr(q.data));
	}
	appendStringInfoString(&a, "]::text[]");
	return a.data;
}

/*
 * Whether each strip answers by its own LATERAL query: knn_lateral_join of
 * pgvector columns, whose order is float32's, and of the query row's own
 * kind (match.c); points' order is the engine's own, and knn_join's path
 * answers them otherwise.
 */
bool
GjDistLateralStrips(const DistCall *dc)
{
	return dc->spec->pg_order && (dc->vector != 0 || dc->match_eq != NULL);
}

/* pgvector's <-> or <=>, as "OPERATOR(schema.<->)" */
char *
GjDistVectorOperator(const DistCall *dc)
{
	return psprintf("OPERATOR(%s.%s)", quote_identifier(GjDistVectorSchema(dc->s)),
					dc->cosine ? "<=>" : "<->");
}

/* The ORDER BY's operator: pgvector's, or PostGIS's <-> of geometry */
static char *
LateralOperator(const DistCall *dc)
{
	if (dc->vector != 0)
		return GjDistVectorOperator(dc);
	return psprintf("OPERATOR(%s.<->)", quote_identifier(get_namespace_name(dc->postgis_nsp)));
}

/*
 * knn_lateral_join's query of each strip (lq), a LATERAL kNN over its
 * shards by the column type's own <-> or <=> (knn_lateral_strip, lateral_strip.c,
 * runs it on the worker): a format() of the query rows' shard (%2$I),
 * the references' (%3$I) and the strip (%4$s), schema %1$s.  The query
 * rows are r's of the strip (a self join: its own rows of s, and each
 * one's references the others).  Of the query row's own kind (match.c):
 * s.m = q.m too, ref_order's keys after the distance, and keep_alone's
 * LEFT JOIN gives a row without a reference its NULL one.
 */
static char *
LateralQueryFormat(const DistCall *dc)
{
	char	   *op = LateralOperator(dc);
	bool		left = dc->match_eq != NULL && dc->spec->keep_alone;

	return psprintf("SELECT q.ctid, q.id, n.id, n.d FROM %%1$s.%%2$I q %s JOIN LATERAL "
					"(SELECT s.id, s.c1 %s q.c1 AS d FROM %%1$s.%%3$I s WHERE s.strip = %%4$s%s%s "
					"ORDER BY s.c1 %s q.c1%s LIMIT %d) n%s WHERE q.strip = %%4$s%s",
					left ? "LEFT" : "CROSS", op,
					dc->self || dc->others ? " AND s.id IS DISTINCT FROM q.id" : "",
					dc->match_eq != NULL ? psprintf(" AND s.m %s q.m", dc->match_eq) : "",
					op, dc->match_order != NULL ? dc->match_order : "", dc->spec->k,
					left ? " ON true" : "", dc->self ? " AND q.own" : "");
}

/*
 * Each strip's queries over its own shards, in the cells table.  The
 * query rows' (rq) ends in its WHERE, which dist_knn.c extends.
 */
void
GjDistFillCells(DistCall *dc)
{
	char	   *cols = GjDistColumnList(dc->ncols);
	const char *r_base = dc->self ? dc->s_base : dc->r_base;
	const char *r_tab = dc->self ? dc->s_tab : dc->r_tab;
	const char *nsp = dc->schema;

	/* a self join's s: the halo rows of later strips (pairs), or all (counts, lists) */
	const char *s_rows = !dc->self ? "" :
		dc->spec->shape == GJ_SHAPE_PAIRS ? " AND later" : "";

	if (dc->s_ref != NULL)
	{
		GjDistExec(psprintf("INSERT INTO %s SELECT u.v, "
							"pg_catalog.format('SELECT %s FROM %%s.%%I WHERE strip = %%s', %s, %s || '_' || "
							"pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, u.v), u.v), u.sq "
							"FROM ROWS FROM (pg_catalog.unnest(%s), pg_catalog.unnest(%s)) u(v, sq)",
							dc->cells, cols, quote_literal_cstr(nsp), quote_literal_cstr(r_base), r_tab,
							GjDistValuesLiteral(dc), ReferenceQueries(dc)), SPI_OK_INSERT);
		return;
	}
	GjDistExec(psprintf("INSERT INTO %s SELECT v, "
				  "pg_catalog.format('SELECT %s FROM %%s.%%I WHERE strip = %%s%s', %s, %s || '_' || "
				  "pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v), v), "
				  "pg_catalog.format('SELECT %s FROM %%s.%%I WHERE strip = %%s%s', %s, %s || '_' || "
				  "pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v), v)%s "
				  "FROM pg_catalog.unnest(%s) v",
				  dc->cells,
				  cols, dc->self ? " AND own" : "", quote_literal_cstr(nsp), quote_literal_cstr(r_base), r_tab,
				  cols, s_rows, quote_literal_cstr(nsp), quote_literal_cstr(dc->s_base), dc->s_tab,
				  !GjDistLateralStrips(dc) ? "" :
				  psprintf(", pg_catalog.format(%s, %s, %s || '_' || "
						   "pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v), %s || '_' || "
						   "pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v), v)",
						   quote_literal_cstr(LateralQueryFormat(dc)), quote_literal_cstr(nsp),
						   quote_literal_cstr(r_base), r_tab, quote_literal_cstr(dc->s_base), dc->s_tab),
				  GjDistValuesLiteral(dc)), SPI_OK_INSERT);
}

/* ", r_key => NULL::t" for a keyed side, as the worker's call names it */
char *
GjDistKeyWitness(const char *name, const GjInputSpec *in)
{
	if (in->keys == NULL || !in->keys->kept)
		return "";
	return psprintf(", %s => NULL::%s", name, format_type_be_qualified(in->keys->type));
}

/* "OPERATOR(schema.name)" for an operator, both quoted. */
char *
GjDistOperator(Oid opno)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	Form_pg_operator op;
	char	   *s;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "gpujoin: cache lookup failed for operator %u", opno);
	op = (Form_pg_operator) GETSTRUCT(tup);
	s = psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(op->oprnamespace)),
				 NameStr(op->oprname));
	ReleaseSysCache(tup);
	return s;
}

/*
 * The rows of a pushed-down query go straight from the executor to a
 * callback (a job's tuplestore, dbscan's labels): no batch of copies in
 * SPI's memory on the way (the rows' transfer is most of a distributed
 * join's time here).
 */
typedef struct EachReceiver
{
	DestReceiver pub;
	GjDistRowFn fn;
	void	   *arg;
	int64		rows;
} EachReceiver;

static void
EachStartup(DestReceiver *self, int operation, TupleDesc td)
{
}

static bool
EachSlot(TupleTableSlot *slot, DestReceiver *self)
{
	EachReceiver *r = (EachReceiver *) self;

	slot_getallattrs(slot);
	r->fn(slot, r->arg);
	r->rows++;
	return true;
}

static void
EachShutdown(DestReceiver *self)
{
}

/* Every row of sql, to fn; returns how many. */
int64
GjDistEach(const char *sql, GjDistRowFn fn, void *arg)
{
	SPIPlanPtr	plan = SPI_prepare(sql, 0, NULL);
	SPIExecuteOptions opt;
	EachReceiver r;
	int			rc;

	if (plan == NULL)
		elog(ERROR, "gpujoin: the distributed join could not be planned (%s): %s",
			 SPI_result_code_string(SPI_result), sql);
	memset(&r, 0, sizeof(r));
	r.pub.receiveSlot = EachSlot;
	r.pub.rStartup = EachStartup;
	r.pub.rShutdown = EachShutdown;
	r.pub.rDestroy = EachShutdown;
	r.pub.mydest = DestNone;
	r.fn = fn;
	r.arg = arg;
	memset(&opt, 0, sizeof(opt));
	opt.read_only = false;
	opt.dest = &r.pub;
	rc = SPI_execute_plan_extended(plan, &opt);
	/* a SELECT whose rows go to a receiver of ours is SPI_OK_UTILITY to SPI */
	if (rc != SPI_OK_SELECT && rc != SPI_OK_UTILITY)
		elog(ERROR, "gpujoin: the distributed join failed (%s): %s", SPI_result_code_string(rc), sql);
	SPI_freeplan(plan);
	return r.rows;
}

/* GjDistFetch's rows into the job's tuplestore */
typedef struct StoreArg
{
	GjDist	   *dist;
	MemoryContext cxt;
	bool		both_orders;	/* each pair also as (b, a, dist) */
} StoreArg;

/* The store's slot for rows of td, made once (a second pass has the same columns). */
void
GjDistStoreSlot(GjDist *dist, TupleDesc td, MemoryContext cxt)
{
	MemoryContext old;

	if (dist->slot != NULL)
		return;
	old = MemoryContextSwitchTo(cxt);
	dist->natts = td->natts;
	dist->slot = MakeSingleTupleTableSlot(CreateTupleDescCopy(td), &TTSOpsMinimalTuple);
	MemoryContextSwitchTo(old);
}

static void
StoreRow(TupleTableSlot *slot, void *arg)
{
	StoreArg   *a = (StoreArg *) arg;
	MemoryContext old;

	GjDistStoreSlot(a->dist, slot->tts_tupleDescriptor, a->cxt);
	old = MemoryContextSwitchTo(a->cxt);
	tuplestore_puttupleslot(a->dist->store, slot);
	if (a->both_orders)
	{
		Datum		v[3];
		bool		n[3];

		v[0] = slot->tts_values[1];
		n[0] = slot->tts_isnull[1];
		v[1] = slot->tts_values[0];
		n[1] = slot->tts_isnull[0];
		v[2] = slot->tts_values[2];
		n[2] = slot->tts_isnull[2];
		tuplestore_putvalues(a->dist->store, slot->tts_tupleDescriptor, v, n);
	}
	MemoryContextSwitchTo(old);
}

/*
 * Every row of the pushed-down join, into dist's tuplestore (in cxt);
 * both_orders: each pair also as (b, a, dist).
 */
int64
GjDistFetch(GjDist *dist, const char *sql, bool both_orders, MemoryContext cxt)
{
	StoreArg	a = {dist, cxt, both_orders};

	return GjDistEach(sql, StoreRow, &a);
}

/* Which nodes ran the tasks: "host:port n, ..." */
const char *
GjDistPlacement(const DistCall *dc, MemoryContext cxt, int *workers)
{
	StringInfoData s;
	MemoryContext old;

	GjDistExec(psprintf("SELECT nodename || ':' || nodeport, count(*) FROM pg_catalog.citus_shards "
				  "WHERE table_name = '%s'::regclass GROUP BY 1 ORDER BY 1", dc->cells), SPI_OK_SELECT);
	old = MemoryContextSwitchTo(cxt);
	initStringInfo(&s);
	for (uint64 i = 0; i < SPI_processed; i++)
		appendStringInfo(&s, "%s%s %s", i > 0 ? ", " : "",
						 SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1),
						 SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
	MemoryContextSwitchTo(old);
	*workers = (int) SPI_processed;
	SPI_freetuptable(SPI_tuptable);
	return s.data;
}
