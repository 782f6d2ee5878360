/*
 * gj_bench_srf.c
 *		Benchmark helper, not part of the extension: a set-returning function
 *		that emits n rows (bigint, bigint, float8) through the same
 *		InitMaterializedSRF + tuplestore path as eps_selfjoin, so that
 *		SELECT count(*) FROM gj_bench_emit_rows(n) is the executor's ceiling
 *		for a result of n pairs.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/tuplestore.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(gj_bench_emit_rows);

Datum
gj_bench_emit_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		n = PG_GETARG_INT64(0);
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	InitMaterializedSRF(fcinfo, 0);
	for (int64 i = 0; i < n; i++)
	{
		values[0] = Int64GetDatum(i);
		values[1] = Int64GetDatum(i + 1);
		values[2] = Float8GetDatum((double) i * 0.5);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
