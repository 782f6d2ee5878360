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
 * Both run as the caller through SPI (privileges, column grants and
 * row-level security apply) with a DestReceiver of ours: the executor hands
 * each row's slot to GjReceiveSlot, which converts the coordinates straight
 * into the core's point buffer; no tuple is copied, only one copy of the
 * coordinates is ever held, and the planner may choose a parallel scan.
 * Rows whose id or a coordinate is NULL, NaN or infinite are skipped and
 * counted; one NOTICE reports them.
 *
 * Reads never change the database.  SPI's read-only mode alone does not
 * stop a volatile function the query calls from writing, so the read runs
 * with transaction_read_only on (set at a GUC nest level, undone on exit and
 * on error), which refuses writes to any table that is not temporary,
 * nextval on them, DDL and row locks; and between two command-counter
 * increments, so that any command that used the command id meanwhile (a
 * write to a temporary table included) shows up and is refused with an
 * ERROR, which rolls it back.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "optimizer/cost.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/guc.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "gpujoin.h"
#include "reader.h"

void
GjCheckDims(const char *fname, int dims)
{
	if (dims > GJ_MAX_DIMS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: too many dimensions: %d", fname, dims),
				 errdetail("gpujoin supports at most %d dimensions.",
						   GJ_MAX_DIMS)));
}

/* A column that holds a whole point: float4[], float8[], vector, halfvec. */
static bool
IsPointColumnType(Oid t)
{
	return IsCoordArrayType(t) || GjPgvectorKind(t) != 0;
}

#define GJ_COORD_TYPES_DETAIL "Coordinates must be smallint, integer, bigint, real, double precision or numeric columns, or one real[], double precision[], vector or halfvec column."


/* Column attnum of relid by exact name, or an UNDEFINED_COLUMN error. */
AttrNumber
GjLookupColumn(Oid relid, const char *name)
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
AttrNumber
GjPrimaryKeyColumn(Oid relid, const char *fname)
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
BuildRelationQuery(const GjInputSpec *spec, int64 pack_token)
{
	Oid			relid = spec->relid;
	char		relkind = get_rel_relkind(relid);
	Datum	   *elems;
	bool	   *elem_nulls;
	int			ncols;
	AttrNumber	id_att;
	Oid			id_type;
	StringInfoData sql;

	if (relid == InvalidOid || relkind == '\0')
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
	GjCheckDims(spec->fname, ncols);

	initStringInfo(&sql);
	if (spec->sample_pct > 0)
	{
		/* a planner's sample: the block number stands in for the id */
		id_att = InvalidAttrNumber;
		appendStringInfoString(&sql, "SELECT (ctid::text::point)[0]::bigint");
	}
	else
	{
		/* id column: given, or the primary key */
		if (spec->id_col != NULL)
			id_att = GjLookupColumn(relid, text_to_cstring(spec->id_col));
		else
			id_att = GjPrimaryKeyColumn(relid, spec->fname);
		id_type = getBaseType(get_atttype(relid, id_att));
		if (!IsIdType(id_type))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s: id column \"%s\" has type %s", spec->fname,
							get_attname(relid, id_att, false),
							format_type_be(get_atttype(relid, id_att))),
					 errdetail("The id column must be smallint, integer or bigint.")));
		if (pack_token > 0)
			appendStringInfo(&sql, "SELECT %s($1, %s",
							 quote_qualified_identifier(get_namespace_name(spec->nsp),
														"gpujoin_pack"),
							 quote_identifier(get_attname(relid, id_att, false)));
		else
			appendStringInfo(&sql, "SELECT %s",
							 quote_identifier(get_attname(relid, id_att, false)));
	}
	for (int i = 0; i < ncols; i++)
	{
		AttrNumber	att;
		Oid			t;

		if (elem_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: cols must not contain NULL", spec->fname)));
		att = GjLookupColumn(relid, TextDatumGetCString(elems[i]));
		t = getBaseType(get_atttype(relid, att));
		if (IsPointColumnType(t))
		{
			if (ncols != 1)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("%s: array column \"%s\" must be the only coordinate column",
								spec->fname, get_attname(relid, att, false)),
						 errhint("Pass either one real[], double precision[], vector or halfvec column or several numeric columns.")));
		}
		else if (!IsCoordType(t))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s: column \"%s\" has type %s", spec->fname,
							get_attname(relid, att, false),
							format_type_be(get_atttype(relid, att))),
					 errdetail(GJ_COORD_TYPES_DETAIL)));
		appendStringInfo(&sql, ", %s",
						 quote_identifier(get_attname(relid, att, false)));
	}
	if (pack_token > 0)
		appendStringInfoChar(&sql, ')');
	appendStringInfo(&sql, " FROM %s",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												get_rel_name(relid)));
	if (spec->sample_pct > 0)
		appendStringInfo(&sql, " TABLESAMPLE SYSTEM (%.6f) REPEATABLE (%d)",
						 spec->sample_pct, spec->sample_seed);
	else if (spec->only_ids != NULL)
		GjAppendOnlyIds(&sql, spec, quote_identifier(get_attname(relid, id_att, false)));
	return sql.data;
}

/*
 * " WHERE qcol = ANY ('{...}'::bigint[])" for spec's only_ids: the planner
 * sees the list, so an index on the id column applies.
 */
void
GjAppendOnlyIds(StringInfo sql, const GjInputSpec *spec, const char *qcol)
{
	appendStringInfo(sql, " WHERE %s = ANY ('{", qcol);
	for (int i = 0; i < spec->nonly; i++)
		appendStringInfo(sql, i > 0 ? ",%lld" : "%lld", (long long) spec->only_ids[i]);
	appendStringInfoString(sql, "}'::bigint[])");
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

	if (natts == 2 && IsPointColumnType(getBaseType(TupleDescAttr(td, 1)->atttypid)))
	{
		Oid			t = getBaseType(TupleDescAttr(td, 1)->atttypid);

		shape->is_array = true;
		shape->vec = GjPgvectorKind(t);
		shape->elem_type = t == FLOAT4ARRAYOID ? FLOAT4OID : FLOAT8OID;
		return;
	}
	shape->ncoord = natts - 1;
	GjCheckDims(fname, shape->ncoord);
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
					 errdetail(GJ_COORD_TYPES_DETAIL)));
		shape->coord_types[i - 1] = t;
	}
}

/* A scalar coordinate as float64 (reader.h). */
double
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

int64
DatumToId(Datum d, Oid type)
{
	if (type == INT2OID)
		return DatumGetInt16(d);
	if (type == INT4OID)
		return DatumGetInt32(d);
	return DatumGetInt64(d);
}

/*
 * The caller's query, prepared, after making sure it is one read-only
 * SELECT (no DML, no data-modifying CTE, no SELECT INTO, no FOR UPDATE).
 */
static SPIPlanPtr
PrepareQuery(const char *query, const char *fname)
{
	SPIPrepareOptions opt;
	SPIPlanPtr	plan;
	List	   *sources;
	bool		ok;

	memset(&opt, 0, sizeof(opt));
	opt.parseMode = RAW_PARSE_DEFAULT;
	opt.cursorOptions = CURSOR_OPT_PARALLEL_OK;
	plan = SPI_prepare_extended(query, &opt);
	if (plan == NULL)
		elog(ERROR, "%s: SPI_prepare_extended failed: %s", fname,
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
	return plan;
}

/* The rows the statistics promise a relation (a little more), or 0. */
static int64
ExpectedRows(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	float4		reltuples = -1;

	if (HeapTupleIsValid(tup))
	{
		reltuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
		ReleaseSysCache(tup);
	}
	if (reltuples <= 0)
		return 0;
	return (int64) Min((double) reltuples * 1.02 + 16, (double) GJ_MAX_ROWS);
}

/* The rows a relation's statistics promise (-1 when never analysed). */
static double
RelationRows(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	float4		reltuples = -1;

	if (HeapTupleIsValid(tup))
	{
		reltuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
		ReleaseSysCache(tup);
	}
	return reltuples;
}

/*
 * The input's host memory: rows of dims coordinates take 8 bytes a
 * coordinate and 8 for the id.  An error, naming the sizes, when that is
 * more than gpujoin.host_memory_limit allows.
 */
static void
CheckHostMemory(const char *fname, double rows, int dims, bool at_least)
{
	int64		limit = GjHostMemoryLimit();
	double		need = rows * (8.0 * dims + 8.0);

	if (need <= (double) limit)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("%s: the input needs %s%.0f MB of memory, more than the %lld MB gpujoin.host_memory_limit allows",
					fname, at_least ? "at least " : "", ceil(need / 1048576.0),
					(long long) (limit / 1048576)),
			 errdetail("%.0f rows of %d dimensions take 8 bytes a coordinate and 8 bytes an id.",
					   rows, dims),
			 errhint("Raise gpujoin.host_memory_limit, or read fewer rows.")));
}

/*
 * Before reading a relation: its statistics' rows against the memory
 * limit, when the columns say the dimensions (scalar columns, or a vector
 * column with a declared dimension); arrays are checked at their first row.
 */
static void
PrecheckHostMemory(const GjInputSpec *spec)
{
	int			ncols = ArrayGetNItems(ARR_NDIM(spec->cols), ARR_DIMS(spec->cols));
	double		rows = RelationRows(spec->relid);
	int			dims = ncols;

	if (rows <= 0 || spec->sample_pct > 0 || spec->only_ids != NULL)
		return;
	if (ncols == 1)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;
		AttrNumber	att;
		Oid			t;
		int32		typmod;
		Oid			coll;

		deconstruct_array(spec->cols, TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &nulls, &n);
		att = get_attnum(spec->relid, TextDatumGetCString(elems[0]));
		get_atttypetypmodcoll(spec->relid, att, &t, &typmod, &coll);
		if (IsPointColumnType(getBaseType(t)))
			dims = GjPgvectorKind(getBaseType(t)) != 0 && typmod > 0 ? typmod : 0;
	}
	if (dims > 0)
		CheckHostMemory(spec->fname, rows, dims, false);
}

/*
 * Once the dimensions are known: check what the relation's statistics
 * promise against the memory limit, cap the buffer's growth at that limit,
 * and reserve room for the expected rows.
 */
static void
SizeFromStats(const GjInputSpec *spec, gj_points *pts)
{
	double		rows = -1;

	pts->max_rows = (int64_t) Min((double) GjHostMemoryLimit() / (8.0 * pts->dims + 8.0),
								  (double) GJ_MAX_ROWS);
	if (!spec->is_query && spec->sample_pct <= 0)
		rows = RelationRows(spec->relid);
	if (rows > 0 && spec->only_ids == NULL)
	{
		CheckHostMemory(spec->fname, rows, pts->dims, false);
		/* only a hint: on failure the buffer grows on demand */
		(void) gj_points_reserve(pts, (int64_t) Min(rows * 1.02 + 16, (double) pts->max_rows));
	}
}

/*
 * The receiver: every row the executor produces lands here, as a slot, and
 * is converted into the point buffer at once.
 */
typedef struct GjReceiver
{
	DestReceiver pub;
	const GjInputSpec *spec;
	gj_points  *pts;
	bool		packed;			/* the parallel read: one row, the count */
	bool		packed_arrays;	/* ... of one array or vector column */
	ParamListInfo params;		/* its token */
	MemoryContext cxt;			/* the caller's: the row buffer lives there */
	GjRowReader rd;
} GjReceiver;

static void
GjReceiverStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	GjReceiver *r = (GjReceiver *) self;

	if (r->packed)
		return;
	CheckRowShape(r->spec->fname, typeinfo, &r->rd.shape);
	GjRowReaderInit(&r->rd, r->spec->fname, r->spec->only_ids, r->spec->nonly, r->cxt);
	if (!r->rd.shape.is_array)
	{
		r->pts->dims = r->rd.shape.ncoord;
		SizeFromStats(r->spec, r->pts);
	}
}

void
GjRowReaderInit(GjRowReader *rd, const char *fname, const int64 *only_ids,
				int nonly, MemoryContext cxt)
{
	rd->fname = fname;
	rd->only_ids = only_ids;
	rd->nonly = nonly;
	rd->cxt = cxt;
	rd->all_float8 = !rd->shape.is_array;
	for (int d = 0; d < rd->shape.ncoord; d++)
		if (rd->shape.coord_types[d] != FLOAT8OID)
			rd->all_float8 = false;
	rd->dims = 0;
	rd->row = NULL;
	if (!rd->shape.is_array)
		GjRowReaderSetDims(rd, rd->shape.ncoord);
}

/*
 * The dimensions of every row: the scalar columns', or the first array's
 * or vector's, which later ones must match; sizes the row buffer.
 */
void
GjRowReaderSetDims(GjRowReader *rd, int dims)
{
	if (rd->dims == dims)
		return;
	if (rd->dims != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: coordinate arrays have different lengths (%d and %d)",
						rd->fname, rd->dims, dims),
				 errdetail("Every array must have the same number of elements.")));
	GjCheckDims(rd->fname, dims);
	rd->row = MemoryContextAlloc(rd->cxt, sizeof(double) * Max(dims, 1));
	rd->dims = dims;
}

/*
 * The coordinates of an array column into rd->row; false when it has a
 * NULL.  The first array fixes the dimensions.
 */
static bool
ArrayCoords(GjRowReader *rd, Datum value)
{
	const char *fname = rd->fname;
	ArrayType  *arr = DatumGetArrayTypeP(value);
	int			len = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: coordinate arrays must be one-dimensional", fname)));
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: coordinate arrays must not be empty", fname)));
	GjRowReaderSetDims(rd, len);
	if (ARR_HASNULL(arr))
		return false;
	if (rd->shape.elem_type == FLOAT8OID)
		memcpy(rd->row, ARR_DATA_PTR(arr), sizeof(double) * len);
	else
	{
		float4	   *f = (float4 *) ARR_DATA_PTR(arr);

		for (int d = 0; d < len; d++)
			rd->row[d] = f[d];
	}
	if ((Pointer) arr != DatumGetPointer(value))
		pfree(arr);
	return true;
}

/*
 * One row (values[0] the id, then the coordinates): true with *id and
 * rd->row set when it is usable, else false with the reason counted.
 */
bool
GjConvertRow(GjRowReader *rd, const Datum *values, const bool *nulls, int64 *id)
{
	int			dims = rd->shape.is_array ? 0 : rd->shape.ncoord;

	rd->nrows++;
	if (nulls[0])
	{
		if (rd->only_ids != NULL)
			rd->nfiltered++;	/* no id: not one of the listed ones */
		else
			rd->nnull++;
		return false;
	}
	*id = DatumToId(values[0], rd->shape.id_type);
	if (rd->only_ids != NULL && !GjIdListed(rd->only_ids, rd->nonly, *id))
	{
		rd->nfiltered++;
		return false;
	}
	if (rd->shape.is_array)
	{
		if (nulls[1])
		{
			rd->nnull++;
			return false;
		}
		if (rd->shape.vec != 0)
			GjPgvectorCoords(rd, values[1]);
		else if (!ArrayCoords(rd, values[1]))
		{
			rd->nnull++;
			return false;
		}
		dims = rd->dims;
	}
	else if (rd->all_float8)
	{
		for (int d = 0; d < dims; d++)
		{
			if (nulls[d + 1])
			{
				rd->nnull++;
				return false;
			}
			rd->row[d] = DatumGetFloat8(values[d + 1]);
		}
	}
	else
	{
		for (int d = 0; d < dims; d++)
		{
			if (nulls[d + 1])
			{
				rd->nnull++;
				return false;
			}
			rd->row[d] = DatumToFloat8(values[d + 1], rd->shape.coord_types[d]);
		}
	}
	for (int d = 0; d < dims; d++)
		if (!isfinite(rd->row[d]))
		{
			rd->nnonfinite++;
			return false;
		}
	return true;
}

/* One row: check it, convert it, append it (or count why it is skipped). */
static bool
GjReceiveSlot(TupleTableSlot *slot, DestReceiver *self)
{
	GjReceiver *r = (GjReceiver *) self;
	int64		id;
	gj_status	st;

	if (r->packed)
		return true;
	slot_getallattrs(slot);
	if (!GjConvertRow(&r->rd, slot->tts_values, slot->tts_isnull, &id))
		return true;
	if (r->pts->dims == 0)
	{
		/* the first array row fixed the dimensions */
		r->pts->dims = r->rd.dims;
		SizeFromStats(r->spec, r->pts);
	}
	st = gj_points_push(r->pts, id, r->rd.row);
	if (st == GJ_ERR_LIMIT && r->pts->n + 1 <= GJ_MAX_ROWS)
		CheckHostMemory(r->spec->fname, (double) r->pts->n + 1, r->pts->dims, true);
	if (st != GJ_OK)
		GjCheckStatus(st, "reading input rows");
	return true;
}

static void
GjReceiverShutdown(DestReceiver *self)
{
}

static void
GjReceiverDestroy(DestReceiver *self)
{
}

/*
 * transaction_read_only on at a new GUC nest level, for a read as the
 * caller; AtEOXact_GUC(true, level) undoes it (an error does too).
 */
static int
EnterReadOnly(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("transaction_read_only", "on", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/*
 * Run plan as the caller, read-only, into the receiver r: in read-only
 * transaction mode, and refusing any command that used the command id (a
 * write to a temporary table) with an ERROR that rolls it back.
 */
static void
ExecuteReadOnly(SPIPlanPtr plan, GjReceiver *r)
{
	SPIExecuteOptions opt;
	int			nestlevel;
	CommandId	cid;
	int			rc;

	memset(&opt, 0, sizeof(opt));
	opt.read_only = true;
	opt.dest = &r->pub;
	opt.params = r->params;
	if (r->spec->sample_pct > 0)
	{
		/* the planner's sample: our own SELECT of a plain table */
		rc = SPI_execute_plan_extended(plan, &opt);
		if (rc < 0)
			elog(ERROR, "%s: SPI_execute_plan_extended failed: %s", r->spec->fname,
				 SPI_result_code_string(rc));
		return;
	}

	nestlevel = EnterReadOnly();
	if (r->packed && gj_cpu_count() >= 8)
	{
		/*
		 * More workers than a plain scan of the table would get: packing
		 * costs 1.5-2x a scan per row and the join waits for it (2M rows on
		 * the 16-core H100 host: 81 ms with the 3 workers of the default
		 * size rule, 56 ms with 5, 47 ms with 7; 1M 3-D rows: 39, 36, 32 ms).
		 * A 32 kB threshold lets the rule give tables of a million rows or
		 * more 7-8 workers, as many as a default server has;
		 * max_parallel_workers_per_gather still caps them, and on small
		 * tables the planner's costs still choose (a 100K-row table gets
		 * none, which is also its fastest read).  Not on small machines, where extra workers only share the
		 * same cores (2 cores: 97 ms with 3, 118 ms with 6).  The plan is
		 * made at execution (a parameter), so here.
		 */
		(void) set_config_option("min_parallel_table_scan_size", "32kB", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	}
	if (r->packed && gj_cpu_count() < 8 && max_parallel_workers_per_gather >= gj_cpu_count())
	{
		/*
		 * Small machines: no more participants (workers and the leader)
		 * than cores.  On 2 cores, reading 1.1M 2-D rows for
		 * eps_join_counts took 242-252 ms with one worker, 278-284 ms
		 * serially and 312 ms with the default two (three processes
		 * sharing two cores).  Only ever lowered.
		 */
		char		workers[16];

		snprintf(workers, sizeof(workers), "%d", gj_cpu_count() - 1);
		(void) set_config_option("max_parallel_workers_per_gather", workers, PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	}
	if (r->packed_arrays)
	{
		/*
		 * An array or vector row costs far more than the planner's per-row
		 * estimate (a 768-dim vector is detoasted from two TOAST chunks and
		 * converted), and the heap it sizes workers by holds only pointers
		 * to it, so the start-up cost alone would keep the read serial.
		 */
		(void) set_config_option("parallel_setup_cost", "0", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	}
	CommandCounterIncrement();
	cid = GetCurrentCommandId(false);
	rc = SPI_execute_plan_extended(plan, &opt);
	if (rc < 0)
		elog(ERROR, "%s: SPI_execute_plan_extended failed: %s", r->spec->fname,
			 SPI_result_code_string(rc));
	CommandCounterIncrement();
	if (GetCurrentCommandId(false) != cid)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("%s: the query that reads the rows changed the database", r->spec->fname),
				 errdetail("gpujoin reads its input read-only; a function the query calls wrote to a table."),
				 errhint("Write in a separate statement.")));
	AtEOXact_GUC(true, nestlevel);
}

/*
 * The elements of the first non-NULL array in column att of relid, read as
 * the caller (read-only, through SPI); 0 when there is none.  The parallel
 * read sizes its shared segment by it; a later array of another length
 * fails as in the serial read.
 */
static int
ProbeArrayDims(const GjInputSpec *spec, AttrNumber att)
{
	const char *col = quote_identifier(get_attname(spec->relid, att, false));
	char	   *sql = psprintf("SELECT array_length(%s, 1) FROM %s WHERE %s IS NOT NULL LIMIT 1",
							   col,
							   quote_qualified_identifier(get_namespace_name(get_rel_namespace(spec->relid)),
														  get_rel_name(spec->relid)),
							   col);
	bool		isnull;
	Datum		d;
	int			dims = 0;
	int			nestlevel;

	/* under the read's own guard: nothing the probe calls may write */
	nestlevel = EnterReadOnly();
	if (SPI_execute(sql, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull)
			dims = DatumGetInt32(d);
	}
	AtEOXact_GUC(true, nestlevel);
	if (SPI_tuptable != NULL)
		SPI_freetuptable(SPI_tuptable);
	pfree(sql);
	return dims >= 1 && dims <= GJ_MAX_DIMS ? dims : 0;
}

/*
 * Whether the relation form reads through parallel workers (the packing
 * aggregate of input_parallel.c), and in how many dimensions (*dims): a
 * plain table of scalar coordinate columns, or of one array, vector or
 * halfvec column (detoasting a 768-dim vector costs more than the executor
 * per row, and workers share it), with at least
 * gpujoin.parallel_read_min_rows rows by its statistics, small enough that
 * each worker's buffer passes as one bytea.  The dimensions of a vector
 * column come from its declared type, an array's from its first row.
 * Anything unusual (never analyzed, an undeclared vector, a column that
 * does not exist: BuildRelationQuery reports it) reads serially.
 */
static bool
ParallelReadWanted(const GjInputSpec *spec, int *dims)
{
	HeapTuple	tup;
	float4		reltuples;
	char		relkind;
	int			ncols;

	*dims = 0;
	if (spec->is_query || spec->sample_pct > 0 || spec->only_ids != NULL ||
		gj_parallel_read_min_rows_guc < 0 || !OidIsValid(spec->nsp) ||
		ARR_NDIM(spec->cols) != 1 || ARR_HASNULL(spec->cols))
		return false;
	ncols = ArrayGetNItems(ARR_NDIM(spec->cols), ARR_DIMS(spec->cols));
	/* gpujoin_pack takes the token, the id and the coordinates as arguments */
	if (ncols < 1 || ncols > FUNC_MAX_ARGS - 2)
		return false;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(spec->relid));
	if (!HeapTupleIsValid(tup))
		return false;
	reltuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	relkind = ((Form_pg_class) GETSTRUCT(tup))->relkind;
	ReleaseSysCache(tup);
	if ((relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW) ||
		reltuples < 0 || reltuples < gj_parallel_read_min_rows_guc)
		return false;
	*dims = ncols;
	if (ncols == 1)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;
		AttrNumber	att;
		Oid			t,
					coll;
		int32		typmod;

		deconstruct_array(spec->cols, TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &nulls, &n);
		att = get_attnum(spec->relid, TextDatumGetCString(elems[0]));
		if (att == InvalidAttrNumber)
			return false;
		get_atttypetypmodcoll(spec->relid, att, &t, &typmod, &coll);
		t = getBaseType(t);
		if (GjPgvectorKind(t) != 0)
			*dims = typmod >= 1 && typmod <= GJ_MAX_DIMS ? typmod : 0;
		else if (IsCoordArrayType(t))
			*dims = ProbeArrayDims(spec, att);
		else if (!IsCoordType(t))
			*dims = 0;
	}
	if (*dims <= 0)
		return false;
	/* before the shared segment is made for them */
	CheckHostMemory(spec->fname, reltuples, *dims, false);
	return true;
}

/*
 * Rows beyond the shared segment travel from each worker as one bytea
 * (under 1 GB): without a segment, only inputs well below that read in
 * parallel.
 */
#define GJ_PACK_UNSHARED_MAX (900.0 * 1024 * 1024)

/*
 * Read every usable row described by spec into pts (empty, owned by a
 * GjResources); counts go to stats when it is not NULL.
 */
void
GjReadPoints(const GjInputSpec *spec, gj_points *pts, GjReadStats *stats)
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	GjReceiver	r;
	SPIPlanPtr	plan;
	double		t0 = gj_now_ms(),
				t_pack = 0,
				t_exec,
				t_done;
	GjPackTarget *pack = NULL;
	int64		token = 0;
	GjRowReader *counts = &r.rd;
	int64_t		nzero = 0;
	int			pack_dims = 0;

	GjInputSpec gspec;
	char	   *gsql;
	int32		srid = GJ_NO_SRID;
	int			srid_coords = 0;	/* rows of this many coordinates, then the SRID */
	bool		geography = false;
	Oid			postgis_nsp = InvalidOid;

	/* a PostGIS point column: read through a query of its coordinates */
	if (GjGeometryInput(spec, &gsql, &srid, &geography, &postgis_nsp))
	{
		gspec = *spec;
		gspec.is_query = true;
		gspec.query = gsql;
		spec = &gspec;
	}

	memset(&r, 0, sizeof(r));
	r.pub.receiveSlot = GjReceiveSlot;
	r.pub.rStartup = GjReceiverStartup;
	r.pub.rShutdown = GjReceiverShutdown;
	r.pub.rDestroy = GjReceiverDestroy;
	r.pub.mydest = DestNone;
	r.spec = spec;
	r.pts = pts;
	r.cxt = caller_cxt;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", spec->fname);
	if (spec->is_query)
	{
		plan = PrepareQuery(spec->query, spec->fname);
		{
			/* (id, geometry): read as its coordinates (postgis.c) */
			List	   *ps = SPI_plan_get_plan_sources(plan);
			char	   *wrapped = GjGeometryWrapQuery(spec->fname, spec->query,
													  ((CachedPlanSource *) linitial(ps))->resultDesc,
													  &geography, &postgis_nsp, &srid_coords);

			if (wrapped != NULL)
			{
				SPI_freeplan(plan);
				plan = PrepareQuery(wrapped, spec->fname);
			}
		}
	}
	else
	{
		char	   *sql;
		SPIPrepareOptions opt;

		if (ParallelReadWanted(spec, &pack_dims))
		{
			/* in the caller's context: its reset ends the wait on error */
			pack = MemoryContextAllocZero(caller_cxt, sizeof(GjPackTarget));
			pack->pts = pts;
			pack->expect = ExpectedRows(spec->relid);
			t_pack = gj_now_ms();
			token = GjPackBegin(pack, caller_cxt, pack_dims, spec->metric == GJ_METRIC_COSINE,
								spec->fname);
			t_pack = gj_now_ms() - t_pack;
			r.packed = true;
			if (pack->seg == NULL &&
				(double) pack->expect * (8.0 + 8.0 * pack_dims) >= GJ_PACK_UNSHARED_MAX)
			{
				GjPackEnd(pack);	/* no room in shared memory: read serially */
				token = 0;
				r.packed = false;
			}
			r.packed_arrays = r.packed && pack_dims > 1 &&
				ArrayGetNItems(ARR_NDIM(spec->cols), ARR_DIMS(spec->cols)) == 1;
		}
		sql = BuildRelationQuery(spec, token);
		PrecheckHostMemory(spec);

		memset(&opt, 0, sizeof(opt));
		opt.parseMode = RAW_PARSE_DEFAULT;
		opt.cursorOptions = CURSOR_OPT_PARALLEL_OK;
		if (token > 0)
		{
			/* the token travels as $1: the statement text stays the same */
			Oid			int8type = INT8OID;

			plan = SPI_prepare_cursor(sql, 1, &int8type, CURSOR_OPT_PARALLEL_OK);
			r.params = makeParamList(1);
			r.params->params[0].value = Int64GetDatum(token);
			r.params->params[0].isnull = false;
			r.params->params[0].pflags = PARAM_FLAG_CONST;
			r.params->params[0].ptype = INT8OID;
		}
		else
			plan = SPI_prepare_extended(sql, &opt);
		if (plan == NULL)
			elog(ERROR, "%s: SPI_prepare_extended failed: %s", spec->fname,
				 SPI_result_code_string(SPI_result));
	}
	if (stats != NULL)
	{
		stats->srid = srid;
		stats->geography = geography;
		stats->postgis_nsp = postgis_nsp;
	}
	t_exec = gj_now_ms();
	ExecuteReadOnly(plan, &r);
	t_done = gj_now_ms();
	if (token > 0)
		GjPackEnd(pack);
	SPI_finish();
	MemoryContextSwitchTo(caller_cxt);
	if (token > 0)
	{
		/* the workers' counters, and the shape the buffers came in */
		counts = &pack->rd_counts;
		counts->nrows = pack->nrows;
		counts->nnull = pack->nnull;
		counts->nnonfinite = pack->nnonfinite;
		if (pts->dims == 0)
			pts->dims = pack_dims;
		if (stats != NULL)
			stats->workers = Max(stats->workers, pack->partials);
	}

	if (token > 0 && pack->normalized)
		nzero = pack->nzero;	/* the participants normalised as they packed */
	else if (spec->metric == GJ_METRIC_COSINE)
		GjCheckStatus(gj_points_normalize(pts, &nzero), "normalising rows for the cosine metric");
	elog(DEBUG1, "%s: read %lld rows of %d dimensions%s: %.1f ms to start (%.1f making its buffer), %.1f ms in the query, %.1f ms after",
		 spec->fname, (long long) pts->n, pts->dims,
		 token > 0 ? (pack->in_file ? " (parallel, through shared files)" : " (parallel)") : "",
		 t_exec - t0, t_pack, t_done - t_exec, gj_now_ms() - t_done);

	if (counts->nnull + counts->nnonfinite + nzero > 0 && spec->sample_pct <= 0)
	{
		if (nzero > 0)
			ereport(NOTICE,
					(errmsg("%s: skipped %lld of %lld input rows",
							spec->fname, (long long) (counts->nnull + counts->nnonfinite + nzero),
							(long long) (counts->nrows - counts->nfiltered)),
					 errdetail("%lld had a NULL id or coordinate, %lld a NaN or infinite coordinate, %lld only zero coordinates (no direction for the cosine metric).",
							   (long long) counts->nnull, (long long) counts->nnonfinite,
							   (long long) nzero)));
		else
			ereport(NOTICE,
					(errmsg("%s: skipped %lld of %lld input rows",
							spec->fname, (long long) (counts->nnull + counts->nnonfinite),
							(long long) (counts->nrows - counts->nfiltered)),
					 errdetail("%lld had a NULL id or coordinate, %lld a NaN or infinite coordinate.",
							   (long long) counts->nnull, (long long) counts->nnonfinite)));
	}
	if (geography && srid_coords == 0)
		srid_coords = 2;		/* a geography table: (lon, lat, SRID) */
	if (srid_coords > 0)
	{
		/* the rows' one SRID goes where a geometry column's does */
		int32		rsrid = GjTakeSridColumn(spec->fname, pts, srid_coords, geography);

		if (stats != NULL)
			stats->srid = rsrid;
	}
	if (stats != NULL)
	{
		stats->rows += counts->nrows - counts->nfiltered;
		stats->skipped += counts->nnull + counts->nnonfinite + nzero;
		stats->ms += gj_now_ms() - t0;
	}
}
