/*
 * module.c
 *		The library's entry: _PG_init calls each part's own init, which
 *		registers that part's settings, and points the core's interrupt
 *		hook at the backend's pending-cancel flags.
 *
 * Nothing here touches CUDA (machine.c says why).
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "gpujoin.h"
#include "machine.h"
#include "progress.h"
#include "api/api.h"
#include "dist/dist.h"
#include "job/job.h"
#include "join/join.h"
#include "read/read.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * The core's cancel hook: long index builds on the backend thread stop when
 * a cancel or termination is pending; the caller then raises it.
 */
static int
GjInterrupted(void)
{
	return QueryCancelPending || ProcDiePending;
}

void
_PG_init(void)
{
	GjFaultTraceInit();
	GjMachineInit();
	GjProgressInit();
	GjReadInit();
	GjJobInit();
	GjDistInit();
	GjCustomScanInit();
	GjJoinPathInit();
	GjDistPlainInit();
	MarkGUCPrefixReserved("gpujoin");
	gj_set_interrupt_hook(GjInterrupted);
}
