/*
 * errors.c
 *		A core status as PostgreSQL's error: the SQLSTATE that fits it, and
 *		a cancelled core call as the backend's own interrupt.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "gpujoin.h"

/* Why a core call was cancelled: the backend's own interrupt. */
void
GjRaiseCanceled(void)
{
	CHECK_FOR_INTERRUPTS();
	/* the hook saw a pending cancel that is held off: report it anyway */
	ereport(ERROR,
			(errcode(ERRCODE_QUERY_CANCELED),
			 errmsg("canceling statement due to user request")));
}

/* Map a failed core status to an ERROR with the matching SQLSTATE. */
void
GjCheckStatus(gj_status st, const char *what)
{
	switch (st)
	{
		case GJ_OK:
		case GJ_DONE:
		case GJ_AGAIN:
			return;
		case GJ_ERR_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory during %s", what)));
			break;
		case GJ_ERR_LIMIT:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("input too large for %s", what),
					 errdetail("gpujoin handles at most %d rows of at most %d dimensions.",
							   GJ_MAX_ROWS, GJ_MAX_DIMS)));
			break;
		case GJ_ERR_THREAD:
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("could not start worker threads for %s", what),
					 errhint("Lower gpujoin.cpu_threads.")));
			break;
		default:
			elog(ERROR, "gpujoin: %s failed: %s", what, gj_status_name(st));
	}
}

/* GjCheckStatus, with a cancelled core call turned into the interrupt. */
void
GjCheckCore(gj_status st, const char *what)
{
	if (st == GJ_ERR_CANCELED)
		GjRaiseCanceled();
	GjCheckStatus(st, what);
}
