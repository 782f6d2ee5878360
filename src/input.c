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
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/guc.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "gpujoin.h"

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
	CheckDims(spec->fname, ncols);

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
	if (spec->sample_pct > 0)
		appendStringInfo(&sql, " TABLESAMPLE SYSTEM (%.6f) REPEATABLE (0)",
						 spec->sample_pct);
	else if (spec->only_ids != NULL)
	{
		/* the planner sees the list: an index on the id column applies */
		appendStringInfo(&sql, " WHERE %s = ANY ('{",
						 quote_identifier(get_attname(relid, id_att, false)));
		for (int i = 0; i < spec->nonly; i++)
			appendStringInfo(&sql, i > 0 ? ",%lld" : "%lld",
							 (long long) spec->only_ids[i]);
		appendStringInfoString(&sql, "}'::bigint[])");
	}
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

/*
 * The receiver: every row the executor produces lands here, as a slot, and
 * is converted into the point buffer at once.
 */
typedef struct GjReceiver
{
	DestReceiver pub;
	const GjInputSpec *spec;
	gj_points  *pts;
	RowShape	shape;
	bool		all_float8;		/* scalar float8 coordinates: no conversion */
	int64		nrows;
	int64		nnull;
	int64		nnonfinite;
	int64		nfiltered;
	double		row[GJ_MAX_DIMS];
} GjReceiver;

static void
GjReceiverStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	GjReceiver *r = (GjReceiver *) self;

	CheckRowShape(r->spec->fname, typeinfo, &r->shape);
	r->all_float8 = !r->shape.is_array;
	for (int d = 0; d < r->shape.ncoord; d++)
		if (r->shape.coord_types[d] != FLOAT8OID)
			r->all_float8 = false;
	if (!r->shape.is_array)
	{
		r->pts->dims = r->shape.ncoord;
		if (!r->spec->is_query && r->spec->only_ids == NULL)
			ReserveFromStats(r->spec->relid, r->pts);
	}
}

/* The coordinates of an array column into r->row; false when it has a NULL. */
static bool
ArrayCoords(GjReceiver *r, Datum value)
{
	const char *fname = r->spec->fname;
	ArrayType  *arr = DatumGetArrayTypeP(value);
	int			len = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	gj_points  *pts = r->pts;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: coordinate arrays must be one-dimensional", fname)));
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: coordinate arrays must not be empty", fname)));
	if (pts->dims == 0)
	{
		CheckDims(fname, len);
		pts->dims = len;
		if (!r->spec->is_query && r->spec->only_ids == NULL)
			ReserveFromStats(r->spec->relid, pts);
	}
	else if (len != pts->dims)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: coordinate arrays have different lengths (%d and %d)",
						fname, pts->dims, len),
				 errdetail("Every array must have the same number of elements.")));
	if (ARR_HASNULL(arr))
		return false;
	if (r->shape.elem_type == FLOAT8OID)
		memcpy(r->row, ARR_DATA_PTR(arr), sizeof(double) * len);
	else
	{
		float4	   *f = (float4 *) ARR_DATA_PTR(arr);

		for (int d = 0; d < len; d++)
			r->row[d] = f[d];
	}
	if ((Pointer) arr != DatumGetPointer(value))
		pfree(arr);
	return true;
}

/* One row: check it, convert it, append it (or count why it is skipped). */
static bool
GjReceiveSlot(TupleTableSlot *slot, DestReceiver *self)
{
	GjReceiver *r = (GjReceiver *) self;
	int			dims = r->shape.is_array ? 0 : r->shape.ncoord;
	Datum	   *values;
	bool	   *nulls;
	int64		id;
	gj_status	st;

	slot_getallattrs(slot);
	values = slot->tts_values;
	nulls = slot->tts_isnull;
	r->nrows++;
	if (nulls[0])
	{
		if (r->spec->only_ids != NULL)
			r->nfiltered++;		/* no id: not one of the listed ones */
		else
			r->nnull++;
		return true;
	}
	id = DatumToId(values[0], r->shape.id_type);
	if (r->spec->only_ids != NULL && !GjIdListed(r->spec->only_ids, r->spec->nonly, id))
	{
		r->nfiltered++;
		return true;
	}
	if (r->shape.is_array)
	{
		if (nulls[1] || !ArrayCoords(r, values[1]))
		{
			r->nnull++;
			return true;
		}
		dims = r->pts->dims;
	}
	else if (r->all_float8)
	{
		for (int d = 0; d < dims; d++)
		{
			if (nulls[d + 1])
			{
				r->nnull++;
				return true;
			}
			r->row[d] = DatumGetFloat8(values[d + 1]);
		}
	}
	else
	{
		for (int d = 0; d < dims; d++)
		{
			if (nulls[d + 1])
			{
				r->nnull++;
				return true;
			}
			r->row[d] = DatumToFloat8(values[d + 1], r->shape.coord_types[d]);
		}
	}
	for (int d = 0; d < dims; d++)
		if (!isfinite(r->row[d]))
		{
			r->nnonfinite++;
			return true;
		}
	st = gj_points_push(r->pts, id, r->row);
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
	if (r->spec->sample_pct > 0)
	{
		/* the planner's sample: our own SELECT of a plain table */
		rc = SPI_execute_plan_extended(plan, &opt);
		if (rc < 0)
			elog(ERROR, "%s: SPI_execute_plan_extended failed: %s", r->spec->fname,
				 SPI_result_code_string(rc));
		return;
	}

	nestlevel = NewGUCNestLevel();
	(void) set_config_option("transaction_read_only", "on", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
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
 * Read every usable row described by spec into pts (empty, owned by a
 * GjResources); counts go to stats when it is not NULL.
 */
void
GjReadPoints(const GjInputSpec *spec, gj_points *pts, GjReadStats *stats)
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	GjReceiver	r;
	SPIPlanPtr	plan;
	double		t0 = gj_now_ms();

	memset(&r, 0, sizeof(r));
	r.pub.receiveSlot = GjReceiveSlot;
	r.pub.rStartup = GjReceiverStartup;
	r.pub.rShutdown = GjReceiverShutdown;
	r.pub.rDestroy = GjReceiverDestroy;
	r.pub.mydest = DestNone;
	r.spec = spec;
	r.pts = pts;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", spec->fname);
	if (spec->is_query)
		plan = PrepareQuery(spec->query, spec->fname);
	else
	{
		char	   *sql = BuildRelationQuery(spec);
		SPIPrepareOptions opt;

		memset(&opt, 0, sizeof(opt));
		opt.parseMode = RAW_PARSE_DEFAULT;
		opt.cursorOptions = CURSOR_OPT_PARALLEL_OK;
		plan = SPI_prepare_extended(sql, &opt);
		if (plan == NULL)
			elog(ERROR, "%s: SPI_prepare_extended failed: %s", spec->fname,
				 SPI_result_code_string(SPI_result));
	}
	ExecuteReadOnly(plan, &r);
	SPI_finish();
	MemoryContextSwitchTo(caller_cxt);

	if (r.nnull + r.nnonfinite > 0 && spec->sample_pct <= 0)
		ereport(NOTICE,
				(errmsg("%s: skipped %lld of %lld input rows",
						spec->fname, (long long) (r.nnull + r.nnonfinite),
						(long long) (r.nrows - r.nfiltered)),
				 errdetail("%lld had a NULL id or coordinate, %lld a NaN or infinite coordinate.",
						   (long long) r.nnull, (long long) r.nnonfinite)));
	if (stats != NULL)
	{
		stats->rows += r.nrows - r.nfiltered;
		stats->skipped += r.nnull + r.nnonfinite;
		stats->ms += gj_now_ms() - t0;
	}
}
