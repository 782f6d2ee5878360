/*
 * guard.c
 *		The read-only guard every read of the caller's rows runs under.
 *
 * SPI's read-only mode alone does not stop a volatile function the query
 * calls from writing, so a read runs with transaction_read_only on, set at
 * a GUC nest level that is undone on exit and on error; that refuses
 * writes to any table that is not temporary, nextval on them, DDL and row
 * locks.  The read itself (spi_read.c) also runs between two
 * command-counter increments, so that any command that used the command
 * id meanwhile (a write to a temporary table included) shows up and is
 * refused with an ERROR, which rolls it back.
 */
#include "postgres.h"

#include "utils/guc.h"

#include "read/reader.h"


/*
 * transaction_read_only on at a new GUC nest level, for a read as the
 * caller; AtEOXact_GUC(true, level) undoes it (an error does too).
 */
int
GjEnterReadOnly(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("transaction_read_only", "on", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}
