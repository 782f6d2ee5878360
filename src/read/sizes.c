/*
 * sizes.c
 *		The input's size against gpujoin.host_memory_limit: what the
 *		statistics promise, checked before reading, and the buffer's growth,
 *		capped while reading.  The points take 8 bytes a coordinate and 8
 *		for the id of each row.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "machine.h"
#include "read/reader.h"

/* The rows a relation's statistics promise (-1 when never analysed). */
double
GjRelationRows(Oid relid)
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

/* The rows to make room for: what the statistics promise and a little more, or 0. */
int64
GjExpectedRows(Oid relid)
{
	double		reltuples = GjRelationRows(relid);

	if (reltuples <= 0)
		return 0;
	return (int64) Min(reltuples * 1.02 + 16, (double) GJ_MAX_ROWS);
}

/*
 * The input's host memory: rows of dims coordinates take 8 bytes a
 * coordinate and 8 for the id.  An error, naming the sizes, when that is
 * more than gpujoin.host_memory_limit allows.
 */
void
GjCheckHostMemory(const char *fname, double rows, int dims, bool at_least)
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
void
GjPrecheckHostMemory(const GjInputSpec *spec)
{
	int			ncols = ArrayGetNItems(ARR_NDIM(spec->cols), ARR_DIMS(spec->cols));
	double		rows = GjRelationRows(spec->relid);
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
		if (GjIsPointColumnType(getBaseType(t)))
			dims = GjPgvectorKind(getBaseType(t)) != 0 && typmod > 0 ? typmod : 0;
	}
	if (dims > 0)
		GjCheckHostMemory(spec->fname, rows, dims, false);
}

/*
 * Once the dimensions are known: check what the relation's statistics
 * promise against the memory limit, cap the buffer's growth at that limit,
 * and reserve room for the expected rows.
 */
void
GjSizeFromStats(const GjInputSpec *spec, gj_points *pts)
{
	double		rows = -1;

	pts->max_rows = (int64_t) Min((double) GjHostMemoryLimit() / (8.0 * pts->dims + 8.0),
								  (double) GJ_MAX_ROWS);
	if (!spec->is_query && spec->sample_pct <= 0)
		rows = GjRelationRows(spec->relid);
	if (rows > 0 && spec->only_ids == NULL)
	{
		GjCheckHostMemory(spec->fname, rows, pts->dims, false);
		/* only a hint: on failure the buffer grows on demand */
		(void) gj_points_reserve(pts, (int64_t) Min(rows * 1.02 + 16, (double) pts->max_rows));
	}
}
