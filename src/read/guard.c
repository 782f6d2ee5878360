/*
 * guard.c
 *		The read-only guard every read of the caller's rows runs under.
 *
 * SPI's read-only mode alone does not stop a volatile function the query
 * calls from writing, so a read runs in a read-only transaction state;
 * that refuses writes to any table that is not temporary, nextval on
 * them, DDL and row locks.  The read itself (spi_read.c) also runs
 * between two command-counter increments, so that any command that used
 * the command id meanwhile (a write to a temporary table included) shows
 * up and is refused with an ERROR, which rolls it back.
 *
 * The state is XactReadOnly itself, the variable behind
 * transaction_read_only: PostgreSQL 17 forbids setting that parameter for
 * a function's duration (GUC_NO_RESET), so it is set and restored here.
 * An error needs no restoring: a subtransaction's abort restores the
 * state it began with, and a top-level abort ends the transaction.
 * Parallel workers are not told: they refuse every write anyway.
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/elog.h"
#include "utils/guc.h"

#include "read/reader.h"


/* On a write refused by the guard, say whose guard it is and why. */
static void
ReadOnlyContext(void *arg)
{
	if (geterrcode() == ERRCODE_READ_ONLY_SQL_TRANSACTION)
		errcontext("gpujoin runs the query that reads its rows read-only, so that reading "
				   "cannot change the rows it joins; write in a separate statement");
}

void
GjEnterReadOnly(GjReadOnly *guard)
{
	guard->nestlevel = NewGUCNestLevel();
	guard->was_read_only = XactReadOnly;
	XactReadOnly = true;
	guard->context.callback = ReadOnlyContext;
	guard->context.arg = NULL;
	guard->context.previous = error_context_stack;
	error_context_stack = &guard->context;
}

void
GjLeaveReadOnly(GjReadOnly *guard)
{
	error_context_stack = guard->context.previous;
	XactReadOnly = guard->was_read_only;
	AtEOXact_GUC(true, guard->nestlevel);
}
