/*
 * selfjoin.c
 *		eps_selfjoin() and eps_selfjoin_sql(): every pair of rows within
 *		Euclidean distance eps.
 *
 * The flow is: check arguments, read the points (input.c), start the GPU
 * engine (it builds its own index on the device) or build the grid and start
 * the CPU engine, then write the result chunks into the tuplestore that
 * InitMaterializedSRF set up (it spills to disk past work_mem).  The GPU
 * engine falls back to the CPU one, with a NOTICE, when the device lacks
 * memory for the index or fails part-way.  The backend
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
#include "portability/instr_time.h"
#include "utils/tuplestore.h"

#include "gpujoin.h"
#include "../kernels/gj_cuda.h"

static inline void
CheckEps(double eps)
{
	if (isnan(eps) || isinf(eps) || eps <= 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must be a positive finite number, not %g", eps)));
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

/* Progress NOTICEs (gpujoin.progress), at most one a second. */
typedef struct Progress
{
	instr_time	start;
	double		last_s;
	int64		pairs;
} Progress;

static void
ProgressTick(Progress *pr, int64 pairs, const char *engine)
{
	instr_time	now;
	double		s;

	pr->pairs += pairs;
	if (!gj_progress_guc)
		return;
	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, pr->start);
	s = INSTR_TIME_GET_DOUBLE(now);
	if (s - pr->last_s >= 1.0)
	{
		pr->last_s = s;
		ereport(NOTICE,
				(errmsg("eps_selfjoin: %lld pairs so far after %.1f s (%s engine)",
						(long long) pr->pairs, s, engine)));
	}
}

/*
 * Take chunks from the running engine of res until it is done, writing them
 * as rows; checks for interrupts at least every GJ_WAIT_MS.  Returns the
 * engine's final status (GJ_DONE on success).
 */
static gj_status
ConsumeChunks(ReturnSetInfo *rsinfo, GjResources *res, bool symmetric,
			  GjEngine engine)
{
	Progress	pr;

	memset(&pr, 0, sizeof(pr));
	INSTR_TIME_SET_CURRENT(pr.start);
	for (;;)
	{
		gj_chunk   *c;
		gj_status	st;

		CHECK_FOR_INTERRUPTS();
		if (engine == GJ_ENGINE_GPU)
			st = gj_gpu_selfjoin_next(res->gpu, GJ_WAIT_MS, &c);
		else
			st = gj_cpu_selfjoin_next(res->cpu, GJ_WAIT_MS, &c);
		if (st == GJ_AGAIN)
			continue;
		if (st != GJ_OK)
			return st;
		WriteChunk(rsinfo, c, res->points.ids, symmetric);
		ProgressTick(&pr, c->n, engine == GJ_ENGINE_GPU ? "GPU" : "CPU");
		if (engine == GJ_ENGINE_GPU)
			gj_gpu_selfjoin_release(res->gpu, c);
		else
			gj_cpu_selfjoin_release(res->cpu, c);
	}
}

/* The CPU engine: grid on the host (sorting res->points), threads. */
static void
RunCpuJoin(ReturnSetInfo *rsinfo, GjResources *res, double eps, bool symmetric)
{
	gj_status	st;

	st = gj_grid_build(&res->grid, &res->points, eps);
	GjCheckStatus(st, "building the grid index");
	res->have_grid = true;
	st = gj_cpu_selfjoin_start(&res->grid, &res->points, GjCpuThreads(),
							   &res->cpu);
	GjCheckStatus(st, "eps_selfjoin");
	st = ConsumeChunks(rsinfo, res, symmetric, GJ_ENGINE_CPU);
	if (st != GJ_DONE)
		GjCheckStatus(st, "eps_selfjoin");
}

/*
 * The GPU engine.  Returns false, after a NOTICE, when the join should run
 * on the CPU instead: not enough GPU memory for the index, or a GPU failure
 * part-way (the rows written so far are discarded first).
 */
static bool
RunGpuJoin(ReturnSetInfo *rsinfo, GjResources *res, double eps, bool symmetric)
{
	gj_gpu_options opt;
	char		err[256];
	gj_status	st;

	memset(&opt, 0, sizeof(opt));
	opt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
	opt.batch_pairs = gj_gpu_batch_pairs_guc;
	st = gj_gpu_selfjoin_start(&res->points, eps, &opt, &res->gpu, err, sizeof(err));
	if (st == GJ_ERR_DEVICE_OOM)
	{
		ereport(NOTICE,
				(errmsg("eps_selfjoin: not enough GPU memory, using the CPU engine"),
				 errdetail("%s", err),
				 errhint("Raise gpujoin.gpu_memory_limit or free GPU memory.")));
		return false;
	}
	if (st != GJ_OK)
	{
		if (st == GJ_ERR_CUDA)
			GjMarkGpuUnusable(err);
		ereport(NOTICE,
				(errmsg("eps_selfjoin: the GPU engine failed to start, using the CPU engine"),
				 errdetail("%s: %s", gj_status_name(st), err)));
		return false;
	}
	st = ConsumeChunks(rsinfo, res, symmetric, GJ_ENGINE_GPU);
	if (st == GJ_DONE)
		return true;
	snprintf(err, sizeof(err), "%s", gj_gpu_selfjoin_error(res->gpu));
	gj_gpu_selfjoin_free(res->gpu);
	res->gpu = NULL;
	if (st == GJ_ERR_CUDA)
		GjMarkGpuUnusable(err);
	tuplestore_clear(rsinfo->setResult);
	ereport(NOTICE,
			(errmsg("eps_selfjoin: the GPU engine failed, running the join again on the CPU engine"),
			 errdetail("%s: %s", gj_status_name(st), err)));
	return false;
}

/* The common body of both SQL functions. */
static void
RunSelfJoin(FunctionCallInfo fcinfo, const GjInputSpec *spec, double eps,
			bool symmetric)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GjResources *res;
	GjEngine	engine;

	CheckEps(eps);
	GjRequireGpuIfSet();		/* fail before reading if gpu cannot be met */
	InitMaterializedSRF(fcinfo, 0);

	res = GjResourcesCreate(0);
	GjReadPoints(spec, &res->points);
	if (res->points.n >= 2)
	{
		engine = GjChooseEngine(res->points.n);
		if (engine != GJ_ENGINE_GPU || !RunGpuJoin(rsinfo, res, eps, symmetric))
			RunCpuJoin(rsinfo, res, eps, symmetric);
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

	GjCheckNotNull(fcinfo, 0, "tbl");
	GjCheckNotNull(fcinfo, 1, "cols");
	GjCheckNotNull(fcinfo, 2, "eps");
	GjCheckNotNull(fcinfo, 4, "symmetric");

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

	GjCheckNotNull(fcinfo, 0, "query");
	GjCheckNotNull(fcinfo, 1, "eps");
	GjCheckNotNull(fcinfo, 2, "symmetric");

	memset(&spec, 0, sizeof(spec));
	spec.fname = "eps_selfjoin_sql";
	spec.relid = InvalidOid;
	spec.query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	RunSelfJoin(fcinfo, &spec, PG_GETARG_FLOAT8(1), PG_GETARG_BOOL(2));
	return (Datum) 0;
}
