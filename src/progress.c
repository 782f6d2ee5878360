/*
 * progress.c
 *		A running join's progress, where other sessions can read it: the
 *		gpujoin_progress view, as PostgreSQL's pg_stat_progress_* views.
 *
 * Those views read a backend's progress parameters from its entry in the
 * backend status array (pgstat_progress_update_param), which the server
 * keeps for every backend: so gpujoin needs no shared memory of its own
 * and no shared_preload_libraries.  The parameters belong to the command
 * in progress (st_progress_command); a join reports only while there is
 * none, which is always so for a query, and marks its parameters as its
 * own by the first one (GJ_PROGRESS_MAGIC).  Under a COPY, which reports
 * its own progress, the join does not show.  The view sees what
 * pg_stat_activity sees (track_activities on; a snapshot per transaction)
 * and shows another role's joins to members of pg_read_all_stats, as
 * pg_stat_progress_* do.
 *
 * One join of a backend reports at a time: the first of those running
 * (another begins inside its read, or beside it in the same query).  Its
 * report ends when the join's memory goes, at its end or on error, and at
 * the end of an aborted (sub)transaction that began it; the others count
 * only as running, so that the next join to begin when none runs reports.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/acl.h"
#include "utils/backend_progress.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "progress.h"

#define GJ_PROGRESS_MAGIC INT64CONST(0x676a70726f67)	/* "gjprog" */

/* The parameters, by index. */
enum
{
	P_MAGIC,
	P_FUNCTION,
	P_PHASE,
	P_ROWS_READ,
	P_ROWS_TOTAL,
	P_RESULT_ROWS,
	P_RESULT_TOTAL,
	P_START,
	P_COUNT
};

/* Function names the view shows, by P_FUNCTION; 0 for any other. */
static const char *const function_names[] = {
	"gpujoin", "eps_selfjoin", "eps_selfjoin_sql", "eps_join", "eps_join_sql",
	"eps_join_counts", "eps_join_counts_sql", "knn_join", "knn_join_sql",
	"knn_selfjoin", "knn_selfjoin_sql", "eps_neighbor_counts", "eps_neighbor_counts_sql",
	"eps_neighbors", "eps_neighbors_sql", "dbscan", "dbscan_sql", "GpuJoin"
};

static const char *const phase_names[] = {"", "read", "index", "join", "emit"};

/* This backend's report. */
static int	depth;				/* joins running */
static MemoryContext owner;		/* the memory of the join reporting, or NULL */
static int	nestlevel;			/* ... and its transaction nest level */
static int64 values[P_COUNT];
static int64 read_base;			/* rows of the reads before this one */

/* Whether the join the callers serve is the one reporting. */
#define REPORTING() (depth == 1 && owner != NULL)

static void
Publish(void)
{
	static const int index[P_COUNT] = {0, 1, 2, 3, 4, 5, 6, 7};

	if (owner == NULL || MyBEEntry == NULL ||
		MyBEEntry->st_progress_command != PROGRESS_COMMAND_INVALID)
		return;
	pgstat_progress_update_multi_param(P_COUNT, index, values);
}

static void
Clear(void)
{
	owner = NULL;
	if (MyBEEntry != NULL && MyBEEntry->st_progress_command == PROGRESS_COMMAND_INVALID &&
		MyBEEntry->st_progress_param[P_MAGIC] == GJ_PROGRESS_MAGIC)
		pgstat_progress_update_param(P_MAGIC, 0);
}

/* A join's memory went (its end, or an error): arg is that memory. */
static void
JoinMemoryGone(void *arg)
{
	if (depth > 0)
		depth--;
	if (arg == owner)
		Clear();
}

/* An abort ends every join it began; their memory goes with it. */
static void
AtXactEnd(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		depth = 0;
		Clear();
	}
}

static void
AtSubXactEnd(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid,
			 void *arg)
{
	if (owner != NULL && event == SUBXACT_EVENT_ABORT_SUB &&
		GetCurrentTransactionNestLevel() <= nestlevel)
		Clear();
}

void
GjProgressInit(void)
{
	RegisterXactCallback(AtXactEnd, NULL);
	RegisterSubXactCallback(AtSubXactEnd, NULL);
}

void
GjProgressBegin(const char *fname, MemoryContext cxt)
{
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	cb->func = JoinMemoryGone;
	cb->arg = cxt;
	MemoryContextRegisterResetCallback(cxt, cb);
	if (depth++ > 0)
		return;
	owner = cxt;
	nestlevel = GetCurrentTransactionNestLevel();
	memset(values, 0, sizeof(values));
	values[P_MAGIC] = GJ_PROGRESS_MAGIC;
	for (int i = 1; i < lengthof(function_names); i++)
		if (strcmp(fname, function_names[i]) == 0)
			values[P_FUNCTION] = i;
	values[P_PHASE] = GJ_PHASE_READ;
	values[P_ROWS_TOTAL] = -1;
	values[P_RESULT_TOTAL] = -1;
	values[P_START] = GetCurrentTimestamp();
	read_base = 0;
	Publish();
}

void
GjProgressPhase(GjPhase phase)
{
	if (!REPORTING() || values[P_PHASE] == phase)
		return;
	values[P_PHASE] = phase;
	Publish();
}

void
GjProgressReadStart(double total)
{
	if (!REPORTING())
		return;
	/* a second read (the other side of a join) adds to the first */
	read_base = values[P_ROWS_READ];
	values[P_PHASE] = GJ_PHASE_READ;
	if (total < 0)
		values[P_ROWS_TOTAL] = -1;
	else if (read_base == 0 || values[P_ROWS_TOTAL] >= 0)
		values[P_ROWS_TOTAL] = read_base + (int64) total;
	Publish();
}

void
GjProgressRead(int64 rows)
{
	if (!REPORTING())
		return;
	values[P_ROWS_READ] = read_base + rows;
	Publish();
}

void
GjProgressExpect(double rows)
{
	if (!REPORTING())
		return;
	values[P_RESULT_TOTAL] = rows < 0 ? -1 : (int64) Min(rows, (double) PG_INT64_MAX);
	Publish();
}

void
GjProgressResult(int64 rows)
{
	if (!REPORTING())
		return;
	values[P_RESULT_ROWS] = rows;
	if (values[P_PHASE] < GJ_PHASE_EMIT)
		values[P_PHASE] = GJ_PHASE_EMIT;
	Publish();
}

/*
 * The percent of the phase's work: rows read of the total while reading,
 * else result rows of the result's known or estimated size (none yet
 * before the engine makes rows: 0).  NULL where the total is not known.
 * An estimate can fall short: at most 100.
 */
static double
Percent(const int64 *p, bool *isnull)
{
	int64		done = p[P_RESULT_ROWS],
				total = p[P_RESULT_TOTAL];

	*isnull = false;
	if (p[P_PHASE] == GJ_PHASE_READ)
	{
		done = p[P_ROWS_READ];
		total = p[P_ROWS_TOTAL];
	}
	else if (total < 0 && p[P_PHASE] != GJ_PHASE_EMIT)
		return 0.0;
	if (total < 0)
	{
		*isnull = true;
		return 0.0;
	}
	return total == 0 ? 100.0 : Min(100.0, 100.0 * (double) done / (double) total);
}

/* Which backend entry, 1 to n, as this server version numbers them. */
static LocalPgBackendStatus *
LocalEntry(int i)
{
#if PG_VERSION_NUM >= 170000
	return pgstat_get_local_beentry_by_index(i);
#else
	return pgstat_fetch_stat_local_beentry(i);
#endif
}

/*
 * gpujoin_progress(): one row per running join this role may see, for
 * the view of that name.
 */
PG_FUNCTION_INFO_V1(gpujoin_progress);

Datum
gpujoin_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n;
	TimestampTz now = GetCurrentTimestamp();

	InitMaterializedSRF(fcinfo, 0);
	n = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = LocalEntry(i);
		PgBackendStatus *be;
		const int64 *p;
		Datum		v[10];
		bool		nulls[10] = {0};
		long		secs;
		int			usecs;

		if (local == NULL)
			continue;
		be = &local->backendStatus;
		p = be->st_progress_param;
		if (be->st_progress_command != PROGRESS_COMMAND_INVALID || p[P_MAGIC] != GJ_PROGRESS_MAGIC ||
			p[P_PHASE] < GJ_PHASE_READ || p[P_PHASE] > GJ_PHASE_EMIT)
			continue;
		if (!has_privs_of_role(GetUserId(), be->st_userid) &&
			!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
			continue;
		v[0] = Int32GetDatum(be->st_procpid);
		v[1] = CStringGetTextDatum(function_names[p[P_FUNCTION] >= 0 &&
												  p[P_FUNCTION] < lengthof(function_names) ?
												  p[P_FUNCTION] : 0]);
		v[2] = CStringGetTextDatum(phase_names[p[P_PHASE]]);
		v[3] = Int64GetDatum(p[P_ROWS_READ]);
		v[4] = Int64GetDatum(p[P_ROWS_TOTAL]);
		nulls[4] = p[P_ROWS_TOTAL] < 0;
		v[5] = Int64GetDatum(p[P_RESULT_ROWS]);
		v[6] = Int64GetDatum(p[P_RESULT_TOTAL]);
		nulls[6] = p[P_RESULT_TOTAL] < 0;
		v[7] = Float8GetDatum(Percent(p, &nulls[7]));
		TimestampDifference(p[P_START], now, &secs, &usecs);
		v[8] = Float8GetDatum((double) secs + usecs / 1e6);
		v[9] = ObjectIdGetDatum(be->st_databaseid);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}
