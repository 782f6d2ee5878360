/*
 * rows.c
 *		A result row's columns as a point: the shapes of input the reader
 *		takes, and the conversion of each row's id and coordinates, shared
 *		by the serial read and the parallel read's workers.
 *
 * Coordinates are smallint, integer, bigint, real, double precision or
 * numeric columns (domains over them too), or one real[], double
 * precision[], vector or halfvec column whose first value fixes the
 * dimensions.  Each is converted to float64 exactly.  A row whose id or a
 * coordinate is NULL, NaN or infinite is skipped and counted, so that the
 * reader's one NOTICE can say how many and why.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "storage/itemptr.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "read/reader.h"


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
bool
GjIsPointColumnType(Oid t)
{
	return IsCoordArrayType(t) || GjPgvectorKind(t) != 0;
}

/* The row shape of a query's result; shared by both forms of input. */
void
GjCheckRowShape(const char *fname, TupleDesc td, RowShape *shape, bool join_read,
				GjKeys *keys)
{
	int			natts = td->natts;

	memset(shape, 0, sizeof(*shape));
	if (natts < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: query must return an id column and at least one coordinate column",
						fname)));
	shape->id_type = getBaseType(TupleDescAttr(td, 0)->atttypid);
	if (keys != NULL)
	{
		/* a key of any type: checked against the call's witness */
		GjKeysColumn(keys, fname, td);
		shape->keyed = true;
	}
	else if (!IsIdType(shape->id_type) && !(join_read && shape->id_type == TIDOID))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: first column \"%s\" has type %s", fname,
						NameStr(TupleDescAttr(td, 0)->attname),
						format_type_be(TupleDescAttr(td, 0)->atttypid)),
				 errdetail("The first column is the row id and must be smallint, integer or bigint."),
				 errhint("Pass key => NULL::%s to get this column back as the id.",
						 format_type_be(TupleDescAttr(td, 0)->atttypid))));

	if (join_read && natts == 2)
	{
		Oid			nsp;
		GjKeyKind	kind;

		if (GjPostgisType(getBaseType(TupleDescAttr(td, 1)->atttypid), &nsp, &kind))
		{
			/* the plain-SQL join's read of a PostGIS point column */
			shape->is_array = true;
			shape->postgis = (int) kind + 1;
			shape->srid = -1;
			return;
		}
	}
	if (natts == 2 && GjIsPointColumnType(getBaseType(TupleDescAttr(td, 1)->atttypid)))
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
	shape->coord_names = palloc(sizeof(char *) * shape->ncoord);
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
		shape->coord_names[i - 1] = pstrdup(NameStr(att->attname));
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

/*
 * A numeric coordinate as float64.  NaN and the infinities become theirs
 * (rows skipped as non-finite, as for float8); a finite value beyond
 * float8's range is an error naming the column and the row, which
 * numeric_float8's own error does not.
 */
static double
NumericCoord(GjRowReader *rd, int d, Datum value, const Datum *values, int64 id)
{
	double		v = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, value));
	Numeric		num = DatumGetNumeric(value);

	if ((isinf(v) && !numeric_is_inf(num)) ||
		(v == 0.0 && DatumGetInt32(DirectFunctionCall2(numeric_cmp, value,
													   NumericGetDatum(int64_to_numeric(0)))) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("%s: coordinate \"%s\" of row %s is out of range for double precision",
						rd->fname, rd->shape.coord_names[d],
						rd->shape.keyed ? GjKeyText(values[0], rd->shape.id_type) :
						psprintf("%lld", (long long) id)),
				 errhint("Coordinates are read as float8: scale the column, or leave such rows out of the query.")));
	return v;
}

int64
DatumToId(Datum d, Oid type)
{
	if (type == INT2OID)
		return DatumGetInt16(d);
	if (type == INT4OID)
		return DatumGetInt32(d);
	if (type == TIDOID)
	{
		ItemPointer tid = (ItemPointer) DatumGetPointer(d);

		return GjRowIdOf(ItemPointerGetBlockNumberNoCheck(tid),
						 ItemPointerGetOffsetNumberNoCheck(tid));
	}
	return DatumGetInt64(d);
}

void
GjRowReaderInit(GjRowReader *rd, const char *fname, const int64 *only_ids,
				int nonly, MemoryContext cxt)
{
	rd->fname = fname;
	rd->only_ids = only_ids;
	rd->nonly = nonly;
	rd->keys = NULL;
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
 * The coordinates of a pgvector value into rd->row; the first value fixes
 * the dimensions, as for arrays.  Finiteness is checked by the caller, as
 * for every kind of input.
 */
static void
VectorCoords(GjRowReader *rd, Datum value)
{
	struct varlena *v = PG_DETOAST_DATUM(value);

	GjRowReaderSetDims(rd, GjPgvectorDims(v, rd->shape.vec, rd->fname));
	GjPgvectorToFloat8(v, rd->shape.vec, rd->row);
	if ((Pointer) v != DatumGetPointer(value))
		pfree(v);
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
	/* a key: the row's number among the rows kept, until GjKeysRank */
	*id = rd->shape.keyed ? rd->keys->n : DatumToId(values[0], rd->shape.id_type);
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
		if (rd->shape.postgis != 0)
		{
			int			pdims = 2;
			int32		tag;

			GjRowReaderSetDims(rd, 2);
			/*
			 * Not one finite point of the column's SRID (empty, a line, a
			 * NaN): counted with the non-finite rows, and the join reads
			 * the side through its plan instead (tid_read.c)
			 */
			if (GjKeyCoords((GjKeyKind) (rd->shape.postgis - 1), values[1], rd->row, &pdims,
							&tag) != GJ_KEY_OK ||
				(rd->shape.srid >= 0 && tag != rd->shape.srid))
			{
				rd->nnonfinite++;
				return false;
			}
		}
		else if (rd->shape.vec != 0)
			VectorCoords(rd, values[1]);
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
			rd->row[d] = rd->shape.coord_types[d] == NUMERICOID ?
				NumericCoord(rd, d, values[d + 1], values, *id) :
				DatumToFloat8(values[d + 1], rd->shape.coord_types[d]);
		}
	}
	for (int d = 0; d < dims; d++)
		if (!isfinite(rd->row[d]))
		{
			rd->nnonfinite++;
			return false;
		}
	if (rd->shape.keyed)
		GjKeysAdd(rd->keys, values[0], rd->cxt);
	return true;
}
