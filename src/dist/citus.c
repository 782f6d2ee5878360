/*
 * citus.c
 *		What Citus's catalog says, read through SPI: whether Citus is installed in this database, whether a
 *		table is hash-distributed, how many workers hold shards.  Nothing of
 *		Citus is linked; where it is not installed none of this is asked.
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "dist/dist.h"

bool
GjCitusInstalled(void)
{
	return OidIsValid(get_extension_oid("citus", true));
}

/* One int8 answer of a query with one oid parameter (or none). */
static int64
CatalogCount(const char *sql, Oid arg)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(arg)};
	bool		isnull;
	int64		n = 0;

	if (SPI_execute_with_args(sql, OidIsValid(arg) ? 1 : 0, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "gpujoin: could not read Citus's catalog: %s", sql);
	if (SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			n = DatumGetInt64(d);
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/* Is relid in pg_dist_partition with cond?  SPI connected here. */
static bool
InCitusCatalog(Oid relid, const char *cond)
{
	bool		found;

	if (!GjCitusInstalled())
		return false;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "gpujoin: SPI_connect failed");
	found = CatalogCount(psprintf("SELECT count(*) FROM pg_catalog.pg_dist_partition "
								  "WHERE logicalrelid = $1%s", cond), relid) > 0;
	SPI_finish();
	return found;
}

/*
 * A hash-distributed table (create_distributed_table), false where Citus
 * is not installed.  Reference tables and Citus-managed local tables are
 * read as any table is.
 */
bool
GjCitusDistributed(Oid relid)
{
	return InCitusCatalog(relid, " AND partmethod = 'h'");
}

/* Any table Citus manages: its rows are not in the relation on this node. */
bool
GjCitusTable(Oid relid)
{
	return InCitusCatalog(relid, "");
}

/* A reference table: one shard, a copy on every node. */
bool
GjCitusReference(Oid relid)
{
	return InCitusCatalog(relid, " AND partmethod = 'n' AND repmodel = 't'");
}

/*
 * A reference table's one shard, qualified and quoted, as every node names
 * its copy; NULL where Citus would have shortened the name (a table name
 * near NAMEDATALEN long).  SPI connected by the caller.
 */
char *
GjCitusReferenceShard(Oid relid)
{
	int64		shardid = CatalogCount("SELECT min(shardid) FROM pg_catalog.pg_dist_shard WHERE logicalrelid = $1",
									   relid);
	char	   *name = psprintf("%s_" INT64_FORMAT, get_rel_name(relid), shardid);

	if (shardid <= 0 || strlen(name) >= NAMEDATALEN)
		return NULL;
	return psprintf("%s.%s", quote_identifier(get_namespace_name(get_rel_namespace(relid))),
					quote_identifier(name));
}

/* The active primary nodes that hold shards (SPI connected by the caller). */
int
GjCitusWorkers(void)
{
	return (int) CatalogCount("SELECT count(*) FROM pg_catalog.pg_dist_node "
							  "WHERE isactive AND noderole = 'primary' AND shouldhaveshards", InvalidOid);
}

/*
 * Has nothing of this transaction run on the workers yet?  Citus numbers
 * a distributed transaction when it first opens a connection in it
 * (get_current_transaction_id: 0 before).  Until then no connection of
 * the transaction has written a worker's shard, so a shard's rows read by
 * its name from any connection are the rows the transaction sees.  (What
 * it wrote here, a CREATE TABLE AS around the query, is in no worker's
 * shard.)  SPI connected by the caller.
 */
bool
GjCitusFreshTransaction(void)
{
	return CatalogCount("SELECT transaction_number FROM pg_catalog.get_current_transaction_id()",
						InvalidOid) == 0;
}

/*
 * Are tables a and b hash-distributed by columns att_a and att_b and
 * co-located?  Then Citus itself pushes a join on att_a = att_b down to
 * each pair of shards.  Connects to SPI itself.
 */
bool
GjCitusColocatedBy(Oid a, AttrNumber att_a, Oid b, AttrNumber att_b)
{
	Oid			argtypes[4] = {OIDOID, TEXTOID, OIDOID, TEXTOID};
	Datum		args[4];
	bool		found;

	if (!GjCitusInstalled())
		return false;
	args[0] = ObjectIdGetDatum(a);
	args[1] = CStringGetTextDatum(get_attname(a, att_a, false));
	args[2] = ObjectIdGetDatum(b);
	args[3] = CStringGetTextDatum(get_attname(b, att_b, false));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "gpujoin: SPI_connect failed");
	if (SPI_execute_with_args("SELECT 1 FROM pg_catalog.pg_dist_partition x, pg_catalog.pg_dist_partition y "
							  "WHERE x.logicalrelid = $1 AND y.logicalrelid = $3 AND x.partmethod = 'h' "
							  "AND y.partmethod = 'h' AND x.colocationid = y.colocationid "
							  "AND pg_catalog.column_to_column_name(x.logicalrelid, x.partkey) = $2 "
							  "AND pg_catalog.column_to_column_name(y.logicalrelid, y.partkey) = $4",
							  4, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "gpujoin: could not read Citus's catalog of co-location");
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}
