/*
 * run_common.c
 *		What the starts of every engine family share: the pairs a job
 *		could find, the NOTICEs of a huge result and of a GPU that could
 *		not start, the engine that now runs, the listed rows of a
 *		restricted job, and the per-row results' memory.
 *
 * A leaf of the job: it calls the core and the machine, never another
 * file of the job.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "job/job_internal.h"
#include "progress.h"

/*
 * The engine e runs the job from now on: its chunks are the rows, and
 * EXPLAIN ANALYZE names it (on threads CPU threads, when threads > 0).
 */
void
GjEngineRunning(GjJob *job, gj_engine *e, const char *engine, int threads)
{
	job->res->engine = e;
	job->running = RUN_STREAM;
	GjProgressPhase(GJ_PHASE_JOIN);
	GjEngineRan(job, engine, threads);
}

/*
 * The per-row answers were computed by engine (on threads CPU threads,
 * when threads > 0), for EXPLAIN ANALYZE.
 */
void
GjEngineRan(GjJob *job, const char *engine, int threads)
{
	job->stats.engine = engine;
	if (threads > 0)
		job->stats.threads = threads;
}

/* The rows of p (in its current order) whose id is listed, ascending. */
uint32 *
GjListedRows(const gj_points *p, const int64 *ids, int nids, int64 *nrows)
{
	uint32	   *rows = palloc(sizeof(uint32) * (Min(p->n, (int64) nids * 4) + 1));
	int64		n = 0,
				cap = Min(p->n, (int64) nids * 4) + 1;

	for (int64 i = 0; i < p->n; i++)
	{
		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!GjIdListed(ids, nids, p->ids[i]))
			continue;
		if (n == cap)
		{
			cap *= 2;
			rows = repalloc_huge(rows, sizeof(uint32) * cap);
		}
		rows[n++] = (uint32) i;
	}
	*nrows = n;
	return rows;
}

/* The pairs an eps function could find: a self-join's, or r x s. */
double
GjAllPairs(const GjJob *job)
{
	double		n = (double) job->res->points.n;

	if (job->spec.has_query)
		return n * (double) job->res->queries.n;
	return n * (n - 1) / 2;
}

/*
 * Whether a result of rows, of all possible, deserves the NOTICE that eps
 * or k was likely not meant: 1e7 rows or more that are a tenth of all
 * pairs, or 1e10 rows whatever the share.
 */
bool
GjResultEnormous(double rows, double all)
{
	return rows >= 1e7 && (rows >= 0.1 * all || rows >= 1e10);
}

/* A NOTICE when the sampled size says eps covers much of the data. */
void
GjNoticeIfEnormous(GjJob *job, double pairs)
{
	double		n = (double) job->res->points.n;
	double		all = GjAllPairs(job);
	double		rows = pairs * (job->spec.symmetric ? 2 : 1);

	job->stats.estimated_pairs = pairs;
	GjProgressExpect(rows);
	if (!GjResultEnormous(pairs, all))
		return;
	ereport(NOTICE,
			(job->spec.has_query ?
			 errmsg("%s: the sample estimates %.3g result rows, %.0f%% of all pairs of the %.0f r rows and %.0f s rows",
					job->spec.fname, rows, Min(100.0, 100.0 * pairs / all),
					(double) job->res->queries.n, n) :
			 errmsg("%s: the sample estimates %.3g result rows, %.0f%% of all pairs of the %.0f input rows",
					job->spec.fname, rows, Min(100.0, 100.0 * pairs / all), n),
			 errhint("An eps wider than the data pairs nearly everything (say, metres against degrees). Cancel and check eps if that was not intended.")));
}

/*
 * The GPU engine did not start (st): a cancel is raised; anything else is a
 * NOTICE, and false, so that the CPU engine runs the join instead.
 */
bool
GjGpuStartFailed(GjJob *job, gj_status st, const char *err)
{
	if (st == GJ_ERR_CANCELED)
		GjRaiseCanceled();
	if (st == GJ_ERR_CUDA)
		GjMarkGpuUnusable(err);
	ereport(NOTICE,
			(errmsg("%s: the GPU engine could not start, using the CPU engine", job->spec.fname),
			 errdetail("%s: %s", gj_status_name(st), err),
			 st == GJ_ERR_DEVICE_OOM ?
			 errhint("Raise gpujoin.gpu_memory_limit or free GPU memory.") : 0));
	return false;
}

/* The grid over the job's points, built once (a rerun keeps it). */
void
GjEnsureGrid(GjJob *job)
{
	GjResources *res = job->res;

	if (!res->have_grid)
	{
		GjCheckCore(gj_grid_build(&res->grid, &res->points, job->spec.eps2),
					"building the grid index");
		res->have_grid = true;
	}
}

/* Room for n per-row answers (and DBSCAN's core flags), kept across reruns. */
void
GjAllocRowResults(GjJob *job, int64 n)
{
	GjResources *res = job->res;

	if (res->rowval == NULL)
		res->rowval = malloc(sizeof(int32_t) * (n + 1));
	if (res->rowflag == NULL && job->spec.shape == GJ_SHAPE_DBSCAN)
		res->rowflag = malloc(n + 1);
	if (res->rowval == NULL ||
		(job->spec.shape == GJ_SHAPE_DBSCAN && res->rowflag == NULL))
		GjCheckStatus(GJ_ERR_NOMEM, job->spec.fname);
}

/*
 * The slabs sort the rows along one dimension: an index built over the old
 * order (a rerun's) is dropped, to be built again if the CPU runs.
 */
void
GjRowsMoved(GjResources *res)
{
	if (res->have_grid)
	{
		gj_grid_free(&res->grid);
		res->have_grid = false;
	}
	res->block_ordered = false;
}
