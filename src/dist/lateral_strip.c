/*
 * lateral_strip.c
 *		knn_lateral_strip: a strip's LATERAL kNN on a worker, its rows
 *		ranked as they come.
 *
 * knn_lateral_join (dist_knn.c) asks each strip for its query rows'
 * neighbours by PostgreSQL's own order, as a LATERAL query over the
 * strip's shards:
 *
 *	SELECT q.ctid, q.id, n.id, n.d FROM shard_r q CROSS JOIN LATERAL
 *	  (SELECT s.id, s.c1 <-> q.c1 AS d FROM shard_s s WHERE s.strip = v
 *	   ORDER BY s.c1 <-> q.c1 LIMIT k) n WHERE q.strip = v
 *
 * which the worker's planner makes a GpuJoin (join/lateral.c: the
 * engine's candidates, ranked by the operator itself, proven or searched
 * whole).  Such a join gives a query row's neighbours together and in
 * the subquery's order, one query row after another, as a nested loop
 * over a LATERAL subquery does: so a row's rank is its place in the run
 * of rows of one ctid.  The join's form rules out a query row's rows
 * coming apart, and they would restart its ranks: so the ctids whose run
 * has ended are kept (a bit each, by block and line), and a run that
 * starts again is an error, as is one longer than k, or one whose
 * distances go down (in float8's order: NaN after every number, NULL
 * last, as ORDER BY sorts them).  Never a wrong rank.
 *
 * A shard of the references answering a few query rows read from a Citus
 * intermediate result (shard_knn.c), which has no ctid, numbers them
 * instead (WITH ORDINALITY): the first column may be an int8 from 1.
 *
 * The query runs as the caller, read-only, and its rows go to a
 * tuplestore (the function is materialised, as every gpujoin function
 * outside the custom scan).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/itemptr.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"

#include "dist/dist.h"

#define STRIP_FETCH 10000		/* rows a fetch */

/*
 * The query rows whose run of rows has ended: a bit a heap tuple slot (or
 * a row number, less one), grown as needed.
 */
typedef struct EndedRuns
{
	uint8	   *bits;
	uint64		nbytes;
} EndedRuns;

static uint64
SlotOf(ItemPointer t)
{
	return (uint64) ItemPointerGetBlockNumber(t) * MaxHeapTuplesPerPage + ItemPointerGetOffsetNumber(t) - 1;
}

static bool
RunEnded(const EndedRuns *e, uint64 i)
{
	return i / 8 < e->nbytes && (e->bits[i / 8] & (1 << (i % 8))) != 0;
}

static void
EndRun(EndedRuns *e, uint64 i)
{
	if (i / 8 >= e->nbytes)
	{
		uint64		n = Max(Max(e->nbytes * 2, i / 8 + 1), 4096);
		uint8	   *b = palloc0(n);

		if (e->nbytes > 0)
		{
			memcpy(b, e->bits, e->nbytes);
			pfree(e->bits);
		}
		e->bits = b;
		e->nbytes = n;
	}
	e->bits[i / 8] |= 1 << (i % 8);
}

PG_FUNCTION_INFO_V1(knn_lateral_strip);

/* knn_lateral_strip(sql, k, query_key, ref_key) */
Datum
knn_lateral_strip(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *sql;
	int32		k;
	TupleDesc	out;
	SPIPlanPtr	plan;
	Portal		portal;
	uint64		prev = 0;
	bool		started = false;
	int32		rank = 0;
	double		prev_d = 0.0;
	bool		prev_null = false;
	int			nest;
	EndedRuns	ended = {NULL, 0};

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("knn_lateral_strip: sql and k must not be NULL")));
	sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	k = PG_GETARG_INT32(1);
	InitMaterializedSRF(fcinfo, 0);
	out = rsinfo->setDesc;
	if (out->natts != 4)
		elog(ERROR, "knn_lateral_strip: a result of %d columns", out->natts);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "knn_lateral_strip: SPI_connect failed");

	/*
	 * The strip's tables are new and not analysed, so the planner's sizes
	 * are guesses, and a nested loop sorting every reference for each query
	 * row would be quadratic: the GpuJoin, whatever the guesses (as a
	 * function's SET clause does, undone at its end).
	 */
	nest = NewGUCNestLevel();
	(void) set_config_option("enable_nestloop", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("gpujoin.enable_join", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	plan = SPI_prepare(sql, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "knn_lateral_strip: could not plan the strip's query (%s)",
			 SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (;;)
	{
		SPITupleTable *tt;
		TupleDesc	td;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, STRIP_FETCH);
		if (SPI_processed == 0)
			break;
		tt = SPI_tuptable;
		td = tt->tupdesc;
		if (td->natts != 4 ||
			(TupleDescAttr(td, 0)->atttypid != TIDOID && TupleDescAttr(td, 0)->atttypid != INT8OID) ||
			TupleDescAttr(td, 1)->atttypid != TupleDescAttr(out, 0)->atttypid ||
			TupleDescAttr(td, 2)->atttypid != TupleDescAttr(out, 1)->atttypid ||
			TupleDescAttr(td, 3)->atttypid != FLOAT8OID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("knn_lateral_strip: the query must return a tid (or a row number), the query row's key, the reference's key and a float8")));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			Datum		v[4];
			bool		n[4];
			Datum		values[4];
			bool		nulls[4];
			uint64		run;

			heap_deform_tuple(tt->vals[i], td, v, n);
			if (n[0])
				elog(ERROR, "knn_lateral_strip: a row without its query row's ctid or number");
			if (TupleDescAttr(td, 0)->atttypid == TIDOID)
				run = SlotOf((ItemPointer) DatumGetPointer(v[0]));
			else if (DatumGetInt64(v[0]) < 1)
				elog(ERROR, "knn_lateral_strip: a query row's number below 1");
			else
				run = (uint64) DatumGetInt64(v[0]) - 1;
			if (started && run == prev)
				rank++;
			else
			{
				if (started)
					EndRun(&ended, prev);
				if (RunEnded(&ended, run))
					elog(ERROR, "knn_lateral_strip: the rows of one query row came apart");
				rank = 1;
			}
			if (rank > k)
				elog(ERROR, "knn_lateral_strip: more than %d rows of one query row", k);
			/* a run in the subquery's order: its distances never go down */
			if (rank > 1 && (prev_null ? !n[3] : !n[3] && float8_cmp_internal(DatumGetFloat8(v[3]), prev_d) < 0))
				elog(ERROR, "knn_lateral_strip: the rows of one query row are not in order of distance");
			prev_null = n[3];
			prev_d = n[3] ? 0.0 : DatumGetFloat8(v[3]);
			prev = run;
			started = true;
			values[0] = v[1];
			nulls[0] = n[1];
			values[1] = v[2];
			nulls[1] = n[2];
			values[2] = Int32GetDatum(rank);
			nulls[2] = false;
			values[3] = v[3];
			nulls[3] = n[3];
			tuplestore_putvalues(rsinfo->setResult, out, values, nulls);
		}
		SPI_freetuptable(tt);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	AtEOXact_GUC(true, nest);
	return (Datum) 0;
}
