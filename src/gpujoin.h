/*
 * gpujoin.h
 *		What every part of gpujoin's PostgreSQL glue shares: the version,
 *		core statuses as errors, and the exit-fault diagnostic.
 *
 * The glue is four parts around the pure-C core (src/core) and the kernels
 * (kernels/), each calling only the parts below it:
 *	api/	 the SQL functions, the custom scan, row estimates, gpujoin_info
 *	job/	 one call of a function: plan, read, run an engine, emit rows
 *	read/	 the rows, read through SPI as the caller, decoded into points
 *	machine.c  what the backend may use: the GPU, threads, memory limits
 * module.c's _PG_init calls each part's own init, which registers its
 * settings.
 */
#ifndef GPUJOIN_H
#define GPUJOIN_H

#include "postgres.h"

#include "core/gj_core.h"

#define GPUJOIN_VERSION "0.8"

/* How long the backend waits on an engine between interrupt checks. */
#define GJ_WAIT_MS 50

/*
 * errors.c: a core status as an ereport(ERROR) with the matching SQLSTATE
 * (never returns for errors); GjCheckCore first turns a cancelled core
 * call into the backend's own interrupt (GjRaiseCanceled).
 */
extern void GjCheckStatus(gj_status st, const char *what);
extern void GjCheckCore(gj_status st, const char *what);
#if PG_VERSION_NUM >= 180000	/* 18 has only the C11-style specifier */
pg_noreturn extern void GjRaiseCanceled(void);
#else
extern void GjRaiseCanceled(void) pg_attribute_noreturn();
#endif

/* Is id one of the n sorted ids? */
static inline bool
GjIdListed(const int64 *ids, int n, int64 id)
{
	int			lo = 0,
				hi = n;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ids[lo] == id;
}

/* The exit-fault diagnostic (fault_trace.c), off unless GJ_FAULT_TRACE is set. */
extern void GjFaultTraceInit(void);
extern void GjFaultTraceNote(const char *what);

#endif							/* GPUJOIN_H */
