/*
 * selfjoin.c
 *		eps_selfjoin() and eps_selfjoin_sql(): every pair of rows within
 *		Euclidean distance eps.
 *
 * The flow is: check arguments, read the points (input.c), build the grid,
 * start the engine, then write its result chunks into the tuplestore that
 * InitMaterializedSRF set up (it spills to disk past work_mem).  The backend
 * waits for chunks with a short timeout and checks for interrupts between
 * them, so a cancel or statement_timeout stops the join within a fraction of
 * a second; the resources' memory context callback then stops the threads.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "gpujoin.h"

#define GJ_WAIT_MS 50			/* longest wait between interrupt checks */

static inline void
CheckEps(double eps)
{
	if (isnan(eps) || isinf(eps) || eps <= 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must be a positive finite number, not %g", eps)));
}

static inline void
CheckNotNull(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name)));
}

/* Write one chunk of pairs as rows (a, b, dist), mapping rows to ids. */
static void
WriteChunk(ReturnSetInfo *rsinfo, const gj_chunk *c, const int64_t *ids,
		   bool symmetric)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	for (int k = 0; k < c->n; k++)
	{
		int64		a = ids[c->a[k]];
		int64		b = ids[c->b[k]];

		if (a > b)
		{
			int64		t = a;

			a = b;
			b = t;
		}
		values[0] = Int64GetDatum(a);
		values[1] = Int64GetDatum(b);
		values[2] = Float8GetDatum(c->dist[k]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		if (symmetric)
		{
			values[0] = Int64GetDatum(b);
			values[1] = Int64GetDatum(a);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
}

/* Run the CPU engine over res's grid, streaming its chunks out as rows. */
static void
RunCpuJoin(ReturnSetInfo *rsinfo, GjResources *res, bool symmetric)
{
	gj_status	st;

	st = gj_cpu_selfjoin_start(&res->grid, &res->points, GjCpuThreads(),
							   &res->cpu);
	GjCheckStatus(st, "eps_selfjoin");
	for (;;)
	{
		gj_chunk   *c;

		CHECK_FOR_INTERRUPTS();
		st = gj_cpu_selfjoin_next(res->cpu, GJ_WAIT_MS, &c);
		if (st == GJ_AGAIN)
			continue;
		if (st == GJ_DONE)
			break;
		GjCheckStatus(st, "eps_selfjoin");
		WriteChunk(rsinfo, c, res->points.ids, symmetric);
		gj_cpu_selfjoin_release(res->cpu, c);
	}
}

/* The common body of both SQL functions. */
static void
RunSelfJoin(FunctionCallInfo fcinfo, const GjInputSpec *spec, double eps,
			bool symmetric)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GjResources *res;
	gj_status	st;

	CheckEps(eps);
	(void) GjChooseEngine();	/* raises if gpujoin.device cannot be met */
	InitMaterializedSRF(fcinfo, 0);

	res = GjResourcesCreate(0);
	GjReadPoints(spec, res);
	if (res->points.n >= 2)
	{
		st = gj_grid_build(&res->grid, &res->points, eps);
		GjCheckStatus(st, "building the grid index");
		res->have_grid = true;
		RunCpuJoin(rsinfo, res, symmetric);
	}
	GjResourcesRelease(res);
	MemoryContextDelete(res->cxt);
}

PG_FUNCTION_INFO_V1(eps_selfjoin);

/* eps_selfjoin(tbl regclass, cols text[], eps, id_col, symmetric) */
Datum
eps_selfjoin(PG_FUNCTION_ARGS)
{
	GjInputSpec spec;

	CheckNotNull(fcinfo, 0, "tbl");
	CheckNotNull(fcinfo, 1, "cols");
	CheckNotNull(fcinfo, 2, "eps");
	CheckNotNull(fcinfo, 4, "symmetric");

	memset(&spec, 0, sizeof(spec));
	spec.fname = "eps_selfjoin";
	spec.relid = PG_GETARG_OID(0);
	spec.cols = PG_GETARG_ARRAYTYPE_P(1);
	spec.id_col = PG_ARGISNULL(3) ? NULL : PG_GETARG_TEXT_PP(3);
	RunSelfJoin(fcinfo, &spec, PG_GETARG_FLOAT8(2), PG_GETARG_BOOL(4));
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(eps_selfjoin_sql);

/* eps_selfjoin_sql(query text, eps, symmetric) */
Datum
eps_selfjoin_sql(PG_FUNCTION_ARGS)
{
	GjInputSpec spec;

	CheckNotNull(fcinfo, 0, "query");
	CheckNotNull(fcinfo, 1, "eps");
	CheckNotNull(fcinfo, 2, "symmetric");

	memset(&spec, 0, sizeof(spec));
	spec.fname = "eps_selfjoin_sql";
	spec.relid = InvalidOid;
	spec.query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	RunSelfJoin(fcinfo, &spec, PG_GETARG_FLOAT8(1), PG_GETARG_BOOL(2));
	return (Datum) 0;
}
