/*
 * knn.c
 *		knn_join(), knn_selfjoin() and their _sql forms: the k nearest
 *		reference rows of every query row.
 *
 * The flow mirrors selfjoin.c: check arguments, read the reference and the
 * query points with the shared reader (input.c), build the kNN grid on the
 * host (unless the search is brute force), run the GPU engine or the CPU
 * engine, and write each query's ranked list into the tuplestore.  The GPU
 * engine falls back to the CPU one, with a NOTICE, when the device lacks
 * memory or fails part-way (rows written so far are discarded first).  The
 * backend waits for result chunks with a timeout and checks for interrupts
 * between them; the resources' memory-context callback stops the engines on
 * ERROR, cancel and statement_timeout.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "gpujoin.h"
#include "../kernels/gj_cuda.h"

static inline void
CheckK(int32 k)
{
	if (k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 1, not %d", k)));
}

/* Write a chunk of (query, reference) rows with their ranks. */
static void
WriteChunk(ReturnSetInfo *rsinfo, const gj_chunk *c, const int64_t *qids,
		   const int64_t *rids)
{
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	int32		rank = c->first_rank;

	for (int i = 0; i < c->n; i++)
	{
		if (i > 0)
			rank = c->a[i] == c->a[i - 1] ? rank + 1 : 1;
		values[0] = Int64GetDatum(qids[c->a[i]]);
		values[1] = Int64GetDatum(rids[c->b[i]]);
		values[2] = Int32GetDatum(rank);
		values[3] = Float8GetDatum(c->dist[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* Take the running engine's chunks until it is done; its final status. */
static gj_status
ConsumeChunks(ReturnSetInfo *rsinfo, GjResources *res, const gj_points *qs,
			  GjEngine engine)
{
	for (;;)
	{
		gj_chunk   *c;
		gj_status	st;

		CHECK_FOR_INTERRUPTS();
		if (engine == GJ_ENGINE_GPU)
			st = gj_gpu_knn_next(res->gpu_knn, GJ_WAIT_MS, &c);
		else
			st = gj_cpu_knn_next(res->cpu_knn, GJ_WAIT_MS, &c);
		if (st == GJ_AGAIN)
			continue;
		if (st != GJ_OK)
			return st;
		WriteChunk(rsinfo, c, qs->ids, res->points.ids);
		if (engine == GJ_ENGINE_GPU)
			gj_gpu_knn_release(res->gpu_knn, c);
		else
			gj_cpu_knn_release(res->cpu_knn, c);
	}
}

static void
RunCpu(ReturnSetInfo *rsinfo, GjResources *res, const gj_points *qs,
	   const gj_knn_options *opt, const char *fname)
{
	gj_status	st;

	st = gj_cpu_knn_start(&res->points, res->have_grid ? &res->grid : NULL,
						  qs, opt, GjCpuThreads(), &res->cpu_knn);
	GjCheckStatus(st, fname);
	st = ConsumeChunks(rsinfo, res, qs, GJ_ENGINE_CPU);
	if (st != GJ_DONE)
		GjCheckStatus(st, fname);
}

/* The GPU engine; false (after a NOTICE) when the CPU must run instead. */
static bool
RunGpu(ReturnSetInfo *rsinfo, GjResources *res, const gj_points *qs,
	   const gj_knn_options *opt, const char *fname)
{
	gj_gpu_options gopt;
	char		err[256];
	gj_status	st;

	memset(&gopt, 0, sizeof(gopt));
	gopt.memory_limit = (size_t) gj_gpu_memory_limit_guc * 1024 * 1024;
	st = gj_gpu_knn_start(&res->points, res->have_grid ? &res->grid : NULL,
						  qs, opt, &gopt, &res->gpu_knn, err, sizeof(err));
	if (st != GJ_OK)
	{
		if (st == GJ_ERR_CUDA)
			GjMarkGpuUnusable(err);
		ereport(NOTICE,
				(errmsg("%s: the GPU engine could not start, using the CPU engine", fname),
				 errdetail("%s: %s", gj_status_name(st), err),
				 st == GJ_ERR_DEVICE_OOM ?
				 errhint("Raise gpujoin.gpu_memory_limit or free GPU memory.") : 0));
		return false;
	}
	st = ConsumeChunks(rsinfo, res, qs, GJ_ENGINE_GPU);
	if (st == GJ_DONE)
		return true;
	snprintf(err, sizeof(err), "%s", gj_gpu_knn_error(res->gpu_knn));
	gj_gpu_knn_free(res->gpu_knn);
	res->gpu_knn = NULL;
	if (st == GJ_ERR_CUDA)
		GjMarkGpuUnusable(err);
	tuplestore_clear(rsinfo->setResult);
	ereport(NOTICE,
			(errmsg("%s: the GPU engine failed, running the join again on the CPU engine", fname),
			 errdetail("%s: %s", gj_status_name(st), err)));
	return false;
}

/*
 * The body of all four functions: qspec NULL means a self kNN of rspec's
 * rows (each row excluded from its own list).
 */
static void
RunKnn(FunctionCallInfo fcinfo, const GjInputSpec *rspec,
	   const GjInputSpec *qspec, int32 k)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GjResources *res;
	const gj_points *qs;
	gj_knn_options opt;
	gj_status	st;

	CheckK(k);
	GjRequireGpuIfSet();
	InitMaterializedSRF(fcinfo, 0);

	res = GjResourcesCreate(0);
	GjReadPoints(rspec, &res->points);
	qs = &res->points;
	if (qspec != NULL)
	{
		GjReadPoints(qspec, &res->queries);
		qs = &res->queries;
		if (res->points.n > 0 && qs->n > 0 && res->points.dims != qs->dims)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s: query rows have %d coordinates, reference rows %d",
							rspec->fname, qs->dims, res->points.dims)));
	}

	memset(&opt, 0, sizeof(opt));
	opt.k = k;
	opt.exclude_self = qspec == NULL;
	opt.method = (gj_knn_method) gj_knn_method_guc;
	if (res->points.n > 0 && qs->n > 0 && gj_knn_effective_k(&opt, res->points.n) > 0)
	{
		int64		n = Max(res->points.n, qs->n);

		if (gj_knn_pick_method(&opt, res->points.dims) == GJ_KNN_GRID)
		{
			st = gj_knn_grid_build(&res->grid, &res->points);
			GjCheckStatus(st, "building the kNN grid");
			res->have_grid = true;
		}
		if (GjChooseEngine(n) != GJ_ENGINE_GPU ||
			!RunGpu(rsinfo, res, qs, &opt, rspec->fname))
			RunCpu(rsinfo, res, qs, &opt, rspec->fname);
	}
	GjResourcesRelease(res);
	MemoryContextDelete(res->cxt);
}

/* The relation form's spec from (tbl, cols, id_col) arguments. */
static void
RelationSpec(GjInputSpec *spec, const char *fname, FunctionCallInfo fcinfo,
			 int tbl_arg, ArrayType *cols, int id_arg)
{
	memset(spec, 0, sizeof(*spec));
	spec->fname = fname;
	spec->relid = PG_GETARG_OID(tbl_arg);
	spec->cols = cols;
	spec->id_col = PG_ARGISNULL(id_arg) ? NULL : PG_GETARG_TEXT_PP(id_arg);
}

PG_FUNCTION_INFO_V1(knn_join);

/* knn_join(query_tbl, ref_tbl, cols, k, query_id_col, ref_id_col, ref_cols) */
Datum
knn_join(PG_FUNCTION_ARGS)
{
	GjInputSpec qspec,
				rspec;
	ArrayType  *cols;

	GjCheckNotNull(fcinfo, 0, "query_tbl");
	GjCheckNotNull(fcinfo, 1, "ref_tbl");
	GjCheckNotNull(fcinfo, 2, "cols");
	GjCheckNotNull(fcinfo, 3, "k");
	cols = PG_GETARG_ARRAYTYPE_P(2);
	RelationSpec(&qspec, "knn_join", fcinfo, 0, cols, 4);
	RelationSpec(&rspec, "knn_join", fcinfo, 1,
				 PG_ARGISNULL(6) ? cols : PG_GETARG_ARRAYTYPE_P(6), 5);
	RunKnn(fcinfo, &rspec, &qspec, PG_GETARG_INT32(3));
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(knn_selfjoin);

/* knn_selfjoin(tbl, cols, k, id_col) */
Datum
knn_selfjoin(PG_FUNCTION_ARGS)
{
	GjInputSpec spec;

	GjCheckNotNull(fcinfo, 0, "tbl");
	GjCheckNotNull(fcinfo, 1, "cols");
	GjCheckNotNull(fcinfo, 2, "k");
	RelationSpec(&spec, "knn_selfjoin", fcinfo, 0, PG_GETARG_ARRAYTYPE_P(1), 3);
	RunKnn(fcinfo, &spec, NULL, PG_GETARG_INT32(2));
	return (Datum) 0;
}

/* The query form's spec. */
static void
QuerySpec(GjInputSpec *spec, const char *fname, text *query)
{
	memset(spec, 0, sizeof(*spec));
	spec->fname = fname;
	spec->relid = InvalidOid;
	spec->query = text_to_cstring(query);
}

PG_FUNCTION_INFO_V1(knn_join_sql);

/* knn_join_sql(query_sql, ref_sql, k) */
Datum
knn_join_sql(PG_FUNCTION_ARGS)
{
	GjInputSpec qspec,
				rspec;

	GjCheckNotNull(fcinfo, 0, "query_sql");
	GjCheckNotNull(fcinfo, 1, "ref_sql");
	GjCheckNotNull(fcinfo, 2, "k");
	QuerySpec(&qspec, "knn_join_sql", PG_GETARG_TEXT_PP(0));
	QuerySpec(&rspec, "knn_join_sql", PG_GETARG_TEXT_PP(1));
	RunKnn(fcinfo, &rspec, &qspec, PG_GETARG_INT32(2));
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(knn_selfjoin_sql);

/* knn_selfjoin_sql(query, k) */
Datum
knn_selfjoin_sql(PG_FUNCTION_ARGS)
{
	GjInputSpec spec;

	GjCheckNotNull(fcinfo, 0, "query");
	GjCheckNotNull(fcinfo, 1, "k");
	QuerySpec(&spec, "knn_selfjoin_sql", PG_GETARG_TEXT_PP(0));
	RunKnn(fcinfo, &spec, NULL, PG_GETARG_INT32(1));
	return (Datum) 0;
}
