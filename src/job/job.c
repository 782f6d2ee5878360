/*
 * job.c
 *		One call of a gpujoin function, from its checked arguments to its
 *		first row: read, plan, start an engine; and its end.
 *
 * Every function and every way of calling it goes through here: the custom
 * scan, which returns rows to the executor as the engine makes them, and
 * the materialising fallback, which stores them.  The engines (CPU or GPU,
 * self-join, restricted self-join or kNN) all deliver the same chunks of
 * finished rows, so the backend's per-row work (emit.c) is copying three
 * or four values into the executor's slot.
 *
 * GjStartEngine sends each shape of job to its family: pairs of one set or
 * two (run_eps.c), one answer a row (run_rows.c), kNN (run_knn.c); plan.c
 * makes every choice on the way, and the GPU engine builds its own index
 * on the device where the CPU engine builds the host grid.
 *
 * Failures.  When the GPU cannot start (not enough memory for the index,
 * a CUDA error) the CPU engine runs instead, with a NOTICE.  When it fails
 * part-way, the CPU engine reruns the join from its start if no row went
 * out yet, or if the caller can discard rows (restart_ok: the materialising
 * path); rows already returned to the executor cannot be taken back, so
 * that case is an ERROR (and the GPU is disabled for the session).
 *
 * Cancel.  The backend waits for chunks with a timeout and checks for
 * interrupts between them; index builds poll the interrupt hook.  On ERROR
 * or cancel the resources' memory-context callback stops the engines.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "job/job_internal.h"
#include "progress.h"

/* Start whichever engine the spec and the plan call for. */
void
GjStartEngine(GjJob *job, bool allow_gpu)
{
	job->out.rows_this_run = 0;
	job->out.chunk = NULL;
	job->out.second = false;
	if (job->spec.is_knn)
		GjStartKnn(job, allow_gpu);
	else if (job->spec.has_query && job->spec.shape == GJ_SHAPE_COUNTS)
		GjStartJoinCounts(job, allow_gpu);
	else if (job->spec.shape != GJ_SHAPE_PAIRS)
		GjStartRows(job, allow_gpu);
	else if (job->spec.has_query)
		GjStartJoin(job, allow_gpu);
	else
		GjStartSelfJoin(job, allow_gpu);
}

/*
 * The GPU engine is gone after st: rerun on the CPU from the first row if
 * none went out or the caller can discard them, else an ERROR.
 */
void
GjRestartAfterGpu(GjJob *job, gj_status st, const char *err, bool *restarted)
{
	job->slab.plan.nsteps = 0;		/* its steps are in the job's context */
	job->running = RUN_NONE;
	if (st == GJ_ERR_CUDA)
		GjMarkGpuUnusable(err);
	if (job->out.rows_this_run > 0 && !job->restart_ok)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("%s: the GPU engine failed after returning rows", job->spec.fname),
				 errdetail("%s: %s", gj_status_name(st), err),
				 errhint("Run the query again: the CPU engine takes over in this session.")));
	ereport(NOTICE,
			(errmsg("%s: the GPU engine failed, running the join again on the CPU engine",
					job->spec.fname),
			 errdetail("%s: %s", gj_status_name(st), err)));
	if (job->out.rows_this_run > 0)
		*restarted = true;
	job->stats.runs++;
	GjStartEngine(job, false);
}

/*
 * The result's size where the reads fix it, for gpujoin_progress: kNN's
 * rows times k, one row per row for the per-row functions (the eps pairs
 * wait for the sample, GjNoticeIfEnormous).  kNN gets the NOTICE the eps
 * joins get when that is most pairs of all rows, as k = n is.
 */
static void
ExpectResult(GjJob *job)
{
	double		n = (double) job->res->points.n;
	double		nq = (double) GjKnnQueries(job);
	double		rows;

	if (job->spec.shape == GJ_SHAPE_PAIRS)
		return;
	if (!job->spec.is_knn)
	{
		GjProgressExpect(nq);
		return;
	}
	rows = nq * Min((double) job->spec.k, job->spec.has_query ? n : Max(n - 1, 0.0));
	GjProgressExpect(rows);
	if (!GjResultEnormous(rows, nq * n))
		return;
	ereport(NOTICE,
			(errmsg("%s: k = %d gives %.3g result rows, %.0f%% of all pairs of the %.0f query rows and %.0f reference rows",
					job->spec.fname, job->spec.k, rows, Min(100.0, 100.0 * rows / Max(nq * n, 1.0)), nq, n),
			 errhint("A k near the number of rows returns nearly every pair. Cancel and check k if that was not intended.")));
}

/*
 * Read, plan and start.  The job and its resources live in a new context
 * under parent.
 */
GjJob *
GjJobStart(const GjJobSpec *spec, MemoryContext parent, bool restart_ok)
{
	GjResources *res;
	GjJob	   *job;
	MemoryContext old;
	GjReadStats s_read;

	GjRequireGpuIfSet();		/* fail before reading if gpu cannot be met */
	res = GjResourcesCreate(parent);
	job = MemoryContextAllocZero(res->cxt, sizeof(GjJob));
	job->spec = *spec;
	job->res = res;
	job->restart_ok = restart_ok;
	job->stats.estimated_pairs = -1;
	job->plan.tile_share = -1;
	job->plan.prune = -1;
	job->stats.engine = "none";
	job->stats.runs = 1;
	job->out.t_progress = gj_now_ms();
	GjProgressBegin(spec->fname, res->cxt);

	old = MemoryContextSwitchTo(res->cxt);
	job->out.rowcxt = AllocSetContextCreate(res->cxt, "gpujoin row", ALLOCSET_DEFAULT_SIZES);

	/* distributed tables: joined on the workers, every row back already */
	job->dist = GjDistStart(spec, res->cxt, &job->stats.dist);
	if (job->dist != NULL)
	{
		job->stats.engine = "citus workers";
		MemoryContextSwitchTo(old);
		return job;
	}
	if (spec->pg_order)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: runs on the workers of Citus-distributed tables only", spec->fname),
				 errhint("On one node, write the LATERAL query itself: gpujoin plans it onto its engines.")));
	{
		GjInputSpec in = spec->input;

		if (!spec->is_knn && spec->has_query && spec->filter_column == 1)
		{
			/* eps_join WHERE s = ...: read only those s rows */
			in.only_ids = spec->filter_ids;
			in.nonly = spec->nfilter;
		}
		GjReadPoints(&in, &res->points, &job->stats.read);
	}
	s_read = job->stats.read;
	job->qs = &res->points;
	if (spec->has_query)
	{
		GjInputSpec q = spec->query;
		int32		s_srid = job->stats.read.srid;

		if (spec->filter_column == 0)
		{
			/* knn_join, eps_join WHERE q = ... (r = ...): read only those rows */
			q.only_ids = spec->filter_ids;
			q.nonly = spec->nfilter;
		}
		GjReadPoints(&q, &res->queries, &job->stats.read);
		job->qs = &res->queries;
		if (res->points.n > 0 && job->qs->n > 0 && res->points.dims != job->qs->dims)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s: %s rows have %d coordinates, %s rows %d",
							spec->fname, spec->is_knn ? "query" : "r", job->qs->dims,
							spec->is_knn ? "reference" : "s", res->points.dims)));
		/* PostGIS geometry on both sides: one SRID, as PostGIS requires */
		if (s_srid >= 0 && job->stats.read.srid >= 0 && s_srid != job->stats.read.srid)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: %s rows have SRID %d, %s rows SRID %d",
							spec->fname, spec->is_knn ? "query" : "r", job->stats.read.srid,
							spec->is_knn ? "reference" : "s", s_srid),
					 errdetail("Distances between geometries of different SRIDs are not defined, as in PostGIS.")));
	}
	/* geography: earth-centred points, eps the chord that bounds d */
	GjGeographySetup(&job->geo, &job->spec, &s_read, &res->points, &res->geo_points,
					 spec->has_query ? &job->stats.read : NULL,
					 spec->has_query ? &res->queries : NULL, &res->geo_queries);
	if (job->spec.is_knn)
	{
		job->kopt.k = job->spec.k;
		job->kopt.exclude_self = !job->spec.has_query;
		job->kopt.method = GjKnnMethodSetting();
	}
	GjProgressPhase(GJ_PHASE_INDEX);
	ExpectResult(job);
	if (GjNothingToDo(job))
		job->out.done = true;
	else
		GjStartEngine(job, true);
	MemoryContextSwitchTo(old);
	return job;
}

/* Stop the engine (at once, whatever it was doing) and free everything. */
void
GjJobEnd(GjJob *job, GjJobStats *stats)
{
	GjResources *res = job->res;

	if (!job->out.done && job->running != RUN_NONE)
	{
		job->stats.emit_ms = gj_now_ms() - job->t_engine - job->stats.wait_ms;
		job->stats.join_ms += gj_now_ms() - job->t_engine;
	}
	job->stats.geography = job->geo.on;
	job->stats.geo_spheroid = job->geo.use_spheroid;
	job->stats.geo_asked = job->geo.band_pairs;
	if (stats != NULL)
		*stats = job->stats;
	if (job->dist != NULL)
		GjDistEnd(job->dist);
	GjResourcesRelease(res);
	MemoryContextDelete(res->cxt);
}
