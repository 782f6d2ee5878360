/*
 * progress.h
 *		A running join's progress, where other sessions can read it: the
 *		gpujoin_progress view (progress.c).
 */
#ifndef GJ_PROGRESS_H
#define GJ_PROGRESS_H

#include "postgres.h"

/* What a join is doing, in the order it does it. */
typedef enum GjPhase
{
	GJ_PHASE_READ = 1,			/* reading its rows */
	GJ_PHASE_INDEX,				/* planning, sampling, building the index */
	GJ_PHASE_JOIN,				/* the engine runs; no row out yet */
	GJ_PHASE_EMIT				/* rows going out */
} GjPhase;

extern void GjProgressInit(void);

/*
 * A join starts (fname: the function, or GpuJoin), in cxt: when cxt goes,
 * so does the report.  Only the outermost join of a backend reports.
 */
extern void GjProgressBegin(const char *fname, MemoryContext cxt);
extern void GjProgressPhase(GjPhase phase);
/* a read starts, of total rows (-1: not known); then rows read of it */
extern void GjProgressReadStart(double total);
extern void GjProgressRead(int64 rows);
/* result rows expected (-1: not known), and made so far */
extern void GjProgressExpect(double rows);
extern void GjProgressResult(int64 rows);

#endif							/* GJ_PROGRESS_H */
