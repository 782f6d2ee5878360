/*
 * input.c
 *		Reading points through SPI: the one reader and validator behind every
 *		gpujoin function.
 *
 * Two forms of input:
 *	- a relation (regclass) with coordinate column names and an optional id
 *	  column (default: the single-column integer primary key).  Types are
 *	  checked against the catalog first, so errors name the relation; the
 *	  SELECT is then built from catalog names, each quoted;
 *	- a caller's query, which must be one read-only SELECT returning an
 *	  integer id first, then numeric coordinate columns or one float array.
 *
 * Both run as the caller through an SPI cursor (privileges and row-level
 * security apply), fetched in batches straight into the core's point buffer,
 * so only one copy of the coordinates is ever held.  Rows whose id or a
 * coordinate is NULL, NaN or infinite are skipped and counted; one NOTICE
 * reports them.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "gpujoin.h"

#define GJ_FETCH_ROWS 10000

/* How the coordinates of a result row are laid out. */
typedef struct RowShape
{
	Oid			id_type;
	bool		is_array;		/* one float4[]/float8[] column */
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

static inline void
CheckDims(const char *fname, int dims)
{
	if (dims > GJ_MAX_DIMS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: too many dimensions: %d", fname, dims),
				 errdetail("gpujoin supports at most %d dimensions.",
						   GJ_MAX_DIMS)));
}

/* Column attnum of relid by exact name, or an UNDEFINED_COLUMN error. */
static AttrNumber
LookupColumn(Oid relid, const char *name)
{
	AttrNumber	attnum = get_attnum(relid, name);

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						name, get_rel_name(relid))));
	return attnum;
}

/* The single integer column of relid's primary key, or an error with a hint. */
static AttrNumber
PrimaryKeyColumn(Oid relid, const char *fname)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	Oid			pkidx = InvalidOid;
	AttrNumber	attnum = InvalidAttrNumber;

	if (rel->rd_rel->relkind == RELKIND_RELATION ||
		rel->rd_rel->relkind == RELKIND_MATVIEW ||
		rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		pkidx = RelationGetPrimaryKeyIndex(rel);
	relation_close(rel, AccessShareLock);

	if (OidIsValid(pkidx))
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pkidx));

		if (HeapTupleIsValid(tup))
		{
			Form_pg_index idx = (Form_pg_index) GETSTRUCT(tup);

			if (idx->indnkeyatts == 1 && idx->indkey.values[0] > 0 &&
				IsIdType(getBaseType(get_atttype(relid, idx->indkey.values[0]))))
				attnum = idx->indkey.values[0];
			ReleaseSysCache(tup);
		}
	}
	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("%s: relation \"%s\" has no single-column integer primary key",
						fname, get_rel_name(relid)),
				 errhint("Pass the name of an integer id column as id_col.")));
	return attnum;
}

/*
 * Validate the relation form against the catalog and build its SELECT, all
 * identifiers taken from the catalog and quoted.
 */
static char *
BuildRelationQuery(const GjInputSpec *spec)
{
	Oid			relid = spec->relid;
	char		relkind = get_rel_relkind(relid);
	Datum	   *elems;
	bool	   *elem_nulls;
	int			ncols;
	AttrNumber	id_att;
	Oid			id_type;
	StringInfoData sql;

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_VIEW &&
		relkind != RELKIND_MATVIEW && relkind != RELKIND_FOREIGN_TABLE &&
		relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table, view, materialized view or foreign table",
						get_rel_name(relid))));

	if (ARR_NDIM(spec->cols) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: cols must be a one-dimensional array", spec->fname)));
	deconstruct_array(spec->cols, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elem_nulls, &ncols);
	if (ncols == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: cols must name at least one column", spec->fname)));
	CheckDims(spec->fname, ncols);

	/* id column: given, or the primary key */
	if (spec->id_col != NULL)
		id_att = LookupColumn(relid, text_to_cstring(spec->id_col));
	else
		id_att = PrimaryKeyColumn(relid, spec->fname);
	id_type = getBaseType(get_atttype(relid, id_att));
	if (!IsIdType(id_type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: id column \"%s\" has type %s", spec->fname,
						get_attname(relid, id_att, false),
						format_type_be(get_atttype(relid, id_att))),
				 errdetail("The id column must be smallint, integer or bigint.")));

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s",
					 quote_identifier(get_attname(relid, id_att, false)));
	for (int i = 0; i < ncols; i++)
	{
		AttrNumber	att;
		Oid			t;

		if (elem_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: cols must not contain NULL", spec->fname)));
		att = LookupColumn(relid, TextDatumGetCString(elems[i]));
		t = getBaseType(get_atttype(relid, att));
		if (IsCoordArrayType(t))
		{
			if (ncols != 1)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("%s: array column \"%s\" must be the only coordinate column",
								spec->fname, get_attname(relid, att, false)),
						 errhint("Pass either one real[] or double precision[] column or several numeric columns.")));
		}
		else if (!IsCoordType(t))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s: column \"%s\" has type %s", spec->fname,
							get_attname(relid, att, false),
							format_type_be(get_atttype(relid, att))),
					 errdetail("Coordinates must be smallint, integer, bigint, real, double precision or numeric columns, or one real[] or double precision[] column.")));
		appendStringInfo(&sql, ", %s",
						 quote_identifier(get_attname(relid, att, false)));
	}
	appendStringInfo(&sql, " FROM %s",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												get_rel_name(relid)));
	return sql.data;
}

/* Check the row shape of a cursor's result; shared by both forms. */
static void
CheckRowShape(const char *fname, TupleDesc td, RowShape *shape)
{
	int			natts = td->natts;

	memset(shape, 0, sizeof(*shape));
	if (natts < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: query must return an id column and at least one coordinate column",
						fname)));
	shape->id_type = getBaseType(TupleDescAttr(td, 0)->atttypid);
	if (!IsIdType(shape->id_type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: first column \"%s\" has type %s", fname,
						NameStr(TupleDescAttr(td, 0)->attname),
						format_type_be(TupleDescAttr(td, 0)->atttypid)),
				 errdetail("The first column is the row id and must be smallint, integer or bigint.")));

	if (natts == 2 && IsCoordArrayType(getBaseType(TupleDescAttr(td, 1)->atttypid)))
	{
		shape->is_array = true;
		shape->elem_type =
			getBaseType(TupleDescAttr(td, 1)->atttypid) == FLOAT4ARRAYOID ?
			FLOAT4OID : FLOAT8OID;
		return;
	}
	shape->ncoord = natts - 1;
	CheckDims(fname, shape->ncoord);
	shape->coord_types = palloc(sizeof(Oid) * shape->ncoord);
	for (int i = 1; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(td, i);
		Oid			t = getBaseType(att->atttypid);

		if (!IsCoordType(t))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s: coordinate column \"%s\" has type %s", fname,
							NameStr(att->attname), format_type_be(att->atttypid)),
					 errdetail("Coordinates must be smallint, integer, bigint, real, double precision or numeric columns, or one real[] or double precision[] column.")));
		shape->coord_types[i - 1] = t;
	}
}

/* A scalar coordinate as float64. */
static inline double
DatumToFloat8(Datum d, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return (double) DatumGetInt16(d);
		case INT4OID:
			return (double) DatumGetInt32(d);
		case INT8OID:
			return (double) DatumGetInt64(d);
		case FLOAT4OID:
			return (double) DatumGetFloat4(d);
		case FLOAT8OID:
			return DatumGetFloat8(d);
		default:				/* NUMERICOID; out of float8 range errors */
			return DatumGetFloat8(DirectFunctionCall1(numeric_float8, d));
	}
}

static inline int64
DatumToId(Datum d, Oid type)
{
	if (type == INT2OID)
		return DatumGetInt16(d);
	if (type == INT4OID)
		return DatumGetInt32(d);
	return DatumGetInt64(d);
}

/*
 * The caller's query as a cursor, after making sure it is one read-only
 * SELECT (no DML, no data-modifying CTE, no SELECT INTO, no FOR UPDATE).
 */
static Portal
OpenQueryCursor(const char *query, const char *fname)
{
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);
	List	   *sources;
	bool		ok;

	if (plan == NULL)
		elog(ERROR, "%s: SPI_prepare failed: %s", fname,
			 SPI_result_code_string(SPI_result));
	sources = SPI_plan_get_plan_sources(plan);
	ok = list_length(sources) == 1;
	if (ok)
	{
		CachedPlanSource *ps = linitial(sources);
		ListCell   *lc;

		ok = ps->commandTag == CMDTAG_SELECT && ps->query_list != NIL;
		foreach(lc, ps->query_list)
		{
			Query	   *q = lfirst_node(Query, lc);

			if (q->commandType != CMD_SELECT || q->utilityStmt != NULL ||
				q->hasModifyingCTE || q->rowMarks != NIL)
				ok = false;
		}
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: query must be a single read-only SELECT", fname),
				 errdetail("Data-modifying statements, SELECT INTO and FOR UPDATE are not allowed.")));
	return SPI_cursor_open(NULL, plan, NULL, NULL, true);
}

/* Reserve room for the rows the planner expects of a relation. */
static void
ReserveFromStats(Oid relid, gj_points *pts)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));

	if (HeapTupleIsValid(tup))
	{
		float4		reltuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;

		ReleaseSysCache(tup);
		if (reltuples > 0 && pts->dims > 0)
		{
			double		want = Min((double) reltuples * 1.02 + 16, (double) GJ_MAX_ROWS);

			/* only a hint: on failure the buffer grows on demand */
			(void) gj_points_reserve(pts, (int64_t) want);
		}
	}
}

/* Read every usable row described by spec into pts (empty, owned by a GjResources). */
void
GjReadPoints(const GjInputSpec *spec, gj_points *pts)
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	char	   *sql = NULL;
	Portal		portal;
	RowShape	shape;
	Datum	   *values;
	bool	   *nulls;
	double	   *row;
	int64		nrows = 0,
				nnull = 0,
				nnonfinite = 0;

	if (OidIsValid(spec->relid))
		sql = BuildRelationQuery(spec);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", spec->fname);
	if (sql != NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, 0, NULL);

		if (plan == NULL)
			elog(ERROR, "%s: SPI_prepare failed: %s", spec->fname,
				 SPI_result_code_string(SPI_result));
		portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	}
	else
		portal = OpenQueryCursor(spec->query, spec->fname);

	CheckRowShape(spec->fname, portal->tupDesc, &shape);
	values = palloc(sizeof(Datum) * portal->tupDesc->natts);
	nulls = palloc(sizeof(bool) * portal->tupDesc->natts);
	row = palloc(sizeof(double) * GJ_MAX_DIMS);
	if (!shape.is_array)
	{
		pts->dims = shape.ncoord;
		if (OidIsValid(spec->relid))
			ReserveFromStats(spec->relid, pts);
	}

	for (;;)
	{
		SPITupleTable *tt;

		SPI_cursor_fetch(portal, true, GJ_FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		tt = SPI_tuptable;
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			int			dims;
			bool		finite = true;
			gj_status	st;

			heap_deform_tuple(tt->vals[r], tt->tupdesc, values, nulls);
			nrows++;
			if (nulls[0] || nulls[1])
			{
				nnull++;
				continue;
			}
			if (shape.is_array)
			{
				ArrayType  *arr = DatumGetArrayTypeP(values[1]);
				int			len = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));

				if (ARR_NDIM(arr) > 1)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("%s: coordinate arrays must be one-dimensional",
									spec->fname)));
				if (len == 0)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("%s: coordinate arrays must not be empty",
									spec->fname)));
				if (pts->dims == 0)
				{
					CheckDims(spec->fname, len);
					pts->dims = len;
					if (OidIsValid(spec->relid))
						ReserveFromStats(spec->relid, pts);
				}
				else if (len != pts->dims)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("%s: coordinate arrays have different lengths (%d and %d)",
									spec->fname, pts->dims, len),
							 errdetail("Every array must have the same number of elements.")));
				if (ARR_HASNULL(arr))
				{
					nnull++;
					continue;
				}
				if (shape.elem_type == FLOAT8OID)
					memcpy(row, ARR_DATA_PTR(arr), sizeof(double) * len);
				else
				{
					float4	   *f = (float4 *) ARR_DATA_PTR(arr);

					for (int d = 0; d < len; d++)
						row[d] = f[d];
				}
				if ((Pointer) arr != DatumGetPointer(values[1]))
					pfree(arr);
				dims = len;
			}
			else
			{
				bool		anynull = false;

				for (int d = 0; d < shape.ncoord; d++)
				{
					if (nulls[d + 1])
					{
						anynull = true;
						break;
					}
					row[d] = DatumToFloat8(values[d + 1], shape.coord_types[d]);
				}
				if (anynull)
				{
					nnull++;
					continue;
				}
				dims = shape.ncoord;
			}
			for (int d = 0; d < dims; d++)
				if (!isfinite(row[d]))
					finite = false;
			if (!finite)
			{
				nnonfinite++;
				continue;
			}
			st = gj_points_push(pts, DatumToId(values[0], shape.id_type), row);
			if (st != GJ_OK)
				GjCheckStatus(st, "reading input rows");
		}
		SPI_freetuptable(tt);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	SPI_finish();
	MemoryContextSwitchTo(caller_cxt);

	if (nnull + nnonfinite > 0)
		ereport(NOTICE,
				(errmsg("%s: skipped %lld of %lld input rows",
						spec->fname, (long long) (nnull + nnonfinite),
						(long long) nrows),
				 errdetail("%lld had a NULL id or coordinate, %lld a NaN or infinite coordinate.",
						   (long long) nnull, (long long) nnonfinite)));
}
