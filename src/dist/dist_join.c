/*
 * dist_join.c
 *		An eps join of Citus-distributed tables, computed on the workers.
 *
 * The rows of a distributed table live on the workers; reading them all
 * into this backend (what every other call does) bounds the table by one
 * server's memory and GPU.  Here they move between workers instead, and
 * only result rows come back:
 *
 *	1. strips.c cuts one dimension into strips (about four a worker, at
 *	   least eps wide), from bounds and a histogram counted on the shards.
 *	2. Three intermediate tables, distributed by strip and co-located
 *	   (one shard a strip, each strip's shard chosen so that the strips go
 *	   round the workers): the cells (one row a strip), the r rows in their
 *	   own strip, and the s rows in every strip within eps of them (the
 *	   halo, with a margin for rounding: an extra row costs a comparison,
 *	   a missing one a pair).  Citus repartitions the rows with its own
 *	   INSERT ... SELECT, worker to worker.  A self join reads one table:
 *	   each row in every strip within eps, flagged in its own.
 *	3. One query over the cells, which Citus pushes down as a task a
 *	   shard: each task calls gpujoin's own _sql function over its strip's
 *	   shards on its worker (named here, as a task may not start a
 *	   distributed query), so the worker's engine, GPU or CPU, finds the
 *	   pairs.  Each r row is in one strip, so each pair is found once.  A
 *	   self join runs eps_selfjoin_sql over a strip's own rows, then
 *	   eps_join_sql of its own rows with the halo rows whose own strip is
 *	   a later one (each pair across a cut is found once, in the earlier
 *	   strip), put in the ids' order: a < b by the single node's order
 *	   needs unique ids (a primary key or a unique id column; else the
 *	   coordinator runs the call).  Counts of one table count each own
 *	   row's neighbours among all of its strip's rows, less itself.
 *	4. The rows come back through a cursor into a tuplestore (work_mem,
 *	   then disk), and the intermediate tables are dropped before the
 *	   first row goes out.  An ERROR or a cancel aborts the transaction,
 *	   which takes the tables (made in it) with it on every node.
 *
 * What runs here: eps_join, eps_selfjoin, eps_join_counts and
 * eps_neighbor_counts of tables, Euclidean, on numeric coordinate
 * columns, integer ids or keys of a named type.  Anything else, or a
 * read-only transaction, or no schema in search_path where the caller
 * may create tables, runs on the coordinator as before, with a NOTICE.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "dist/dist.h"
#include "progress.h"

/* Strips a worker when gpujoin.distributed_strips is 0. */
#define GJ_STRIPS_PER_WORKER 4
#define GJ_MAX_STRIPS 1024

static bool distributed_guc = true;
static int	strips_guc = 0;

struct GjDist
{
	Tuplestorestate *store;
	TupleTableSlot *slot;
	int			natts;
};

/* One call's plan, from its spec. */
typedef struct DistCall
{
	const GjJobSpec *spec;
	bool		self;			/* eps_selfjoin, eps_neighbor_counts: one table */
	const GjInputSpec *r;		/* the rows whose strip owns their pairs */
	const GjInputSpec *s;		/* the rows copied into halos (self: r) */
	int			dims;
	char	   *r_from;			/* "(SELECT id, c.. FROM t) q(id, c1, ..)" */
	char	   *s_from;
	char	   *schema;			/* where the intermediate tables go, quoted */
	char	   *cells;			/* their names, qualified and quoted */
	char	   *r_tab;
	char	   *s_tab;
	char	   *r_base;			/* ... and unqualified, for the shards' names */
	char	   *s_base;
	GjStrips	strips;
	int32	   *values;			/* strip i's distribution value */
} DistCall;

void
GjDistInit(void)
{
	DefineCustomBoolVariable("gpujoin.distributed",
							 "Run eps joins of Citus-distributed tables on the workers.",
							 "On: eps_join, eps_selfjoin, eps_join_counts and eps_neighbor_counts of "
							 "distributed tables repartition the rows into strips of space on the "
							 "workers and join them there; only result rows travel to this node. "
							 "Off: every row is read on this node, as for any table.",
							 &distributed_guc,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("gpujoin.distributed_strips",
							"Strips a distributed join cuts space into (0: four a worker).",
							"Each strip is one task on one worker; strips are never narrower than eps.",
							&strips_guc,
							0, 0, GJ_MAX_STRIPS,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
}

/* Run a statement that writes, or reads a one-off answer. */
static uint64
Exec(const char *sql, int expect)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expect)
		elog(ERROR, "gpujoin: a distributed join's statement failed (%s): %s",
			 SPI_result_code_string(rc), sql);
	return SPI_processed;
}

/* The coordinator runs the call: say why, once a call. */
static GjDist *
OnCoordinator(const GjJobSpec *spec, const char *why)
{
	ereport(NOTICE,
			(errmsg("%s: the distributed table is read on this node: %s", spec->fname, why),
			 errhint("Only the eps joins and counts of tables with numeric coordinate columns run on the Citus workers.")));
	SPI_finish();
	return NULL;
}

/* Can the call's shape and inputs run on the workers at all? */
static bool
ShapeFits(const GjJobSpec *spec)
{
	const GjInputSpec *ins[2] = {&spec->input, &spec->query};

	if (spec->is_knn || (spec->shape != GJ_SHAPE_PAIRS && spec->shape != GJ_SHAPE_COUNTS))
		return false;
	if (spec->filter_column != GJ_FILTER_NONE)
		return false;
	for (int i = 0; i < (spec->has_query ? 2 : 1); i++)
		if (ins[i]->is_query || ins[i]->given != NULL || ins[i]->row_ids ||
			ins[i]->sample_pct > 0 || ins[i]->only_ids != NULL || !OidIsValid(ins[i]->relid))
			return false;
	return true;
}

/* Every coordinate column of in numeric (no arrays, vectors, PostGIS): dims, else 0. */
static int
NumericColumns(const GjInputSpec *in)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(in->cols, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		AttrNumber	att;
		Oid			t;

		if (nulls[i])
			return 0;
		att = GjLookupColumn(in->relid, TextDatumGetCString(elems[i]));
		t = getBaseType(get_atttype(in->relid, att));
		if (t != INT2OID && t != INT4OID && t != INT8OID && t != FLOAT4OID &&
			t != FLOAT8OID && t != NUMERICOID)
			return 0;
	}
	return n;
}

/*
 * The self join's ids are unique and never NULL: the primary key, or an
 * id column with a unique, immediate, whole-table index of its own and
 * NOT NULL.  Then a < b by the ids is the order the single node gives.
 */
static bool
IdsUnique(const GjInputSpec *in)
{
	AttrNumber	att;
	Relation	rel;
	List	   *indexes;
	ListCell   *lc;
	bool		unique = false;

	if (in->id_col == NULL)
		return true;			/* the primary key */
	att = GjLookupColumn(in->relid, text_to_cstring(in->id_col));
	rel = relation_open(in->relid, AccessShareLock);
	if (TupleDescAttr(RelationGetDescr(rel), att - 1)->attnotnull)
	{
		indexes = RelationGetIndexList(rel);
		foreach(lc, indexes)
		{
			HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
			Form_pg_index idx;

			if (!HeapTupleIsValid(tup))
				continue;
			idx = (Form_pg_index) GETSTRUCT(tup);
			if (idx->indisunique && idx->indimmediate && idx->indisvalid &&
				idx->indnkeyatts == 1 && idx->indkey.values[0] == att &&
				heap_attisnull(tup, Anum_pg_index_indpred, NULL) &&
				heap_attisnull(tup, Anum_pg_index_indexprs, NULL))
				unique = true;
			ReleaseSysCache(tup);
		}
		list_free(indexes);
	}
	relation_close(rel, AccessShareLock);
	return unique;
}

/* A key the intermediate tables can hold and the workers name: not a row. */
static bool
KeyFits(const GjInputSpec *in)
{
	Oid			t;

	if (in->keys == NULL || !in->keys->kept)
		return true;
	t = getBaseType(in->keys->type);
	return t != RECORDOID && get_typtype(t) != TYPTYPE_COMPOSITE;
}

/* "c1, .., cn" */
static char *
CoordList(int dims)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 1; i <= dims; i++)
		appendStringInfo(&s, "%sc%d", i > 1 ? ", " : "", i);
	return s.data;
}

/* "id, c1, .., cn" */
static char *
ColumnList(int dims)
{
	return psprintf("id, %s", CoordList(dims));
}

/*
 * "(SELECT id, c.. FROM t) q(id, c1, .., cn)": the input, columns renamed.
 * A side whose keys are not returned (eps_join_counts' s) gets 0 for an
 * id: any row works there, and NULL would skip the row.
 */
static char *
SourceOf(const GjInputSpec *in, int dims)
{
	char	   *base = GjBuildRelationQuery(in, 0);

	if (in->keys != NULL && !in->keys->kept)
		base = psprintf("SELECT 0::int8, %s FROM (%s) q0(k, %s)", CoordList(dims), base, CoordList(dims));
	return psprintf("(%s) q(%s)", base, ColumnList(dims));
}

/* The first schema of search_path where the caller may create tables, or NULL. */
static char *
WritableSchema(void)
{
	char	   *nsp = NULL;

	if (SPI_execute("SELECT n FROM pg_catalog.unnest(pg_catalog.current_schemas(false)) n "
					"WHERE pg_catalog.has_schema_privilege(n, 'CREATE') LIMIT 1", true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v != NULL)
			nsp = pstrdup(quote_identifier(v));
	}
	return nsp;
}

/*
 * The strips' distribution values: for each shard of the cells table, in
 * shard order, the smallest integer that hashes to it.  Citus places
 * shards round the workers, so consecutive strips go to different ones.
 */
static void
StripValues(DistCall *dc)
{
	int			n = dc->strips.n;
	char	   *sql = psprintf("SELECT shardid, min(v) FROM pg_catalog.generate_series(0, %d) v, "
							   "LATERAL (SELECT pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v) AS shardid) s "
							   "GROUP BY 1 ORDER BY 1", 256 * n + 4096, dc->cells);

	Exec(sql, SPI_OK_SELECT);
	if (SPI_processed != (uint64) n)
		elog(ERROR, "gpujoin: %d strips, but " UINT64_FORMAT " shards of the cells were found",
			 n, SPI_processed);
	dc->values = palloc(sizeof(int32) * n);
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		dc->values[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
}

/* '{v0,v1,..}'::int4[] and the cuts as '{..}'::float8[] */
static char *
ValuesLiteral(const DistCall *dc)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoString(&s, "'{");
	for (int i = 0; i < dc->strips.n; i++)
		appendStringInfo(&s, "%s%d", i > 0 ? "," : "", dc->values[i]);
	appendStringInfoString(&s, "}'::int4[]");
	return s.data;
}

static char *
CutsLiteral(const DistCall *dc)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoString(&s, "ARRAY[");
	for (int i = 0; i < dc->strips.n - 1; i++)
		appendStringInfo(&s, "%s%s", i > 0 ? ", " : "", GjFloat8Literal(dc->strips.cuts[i]));
	appendStringInfoString(&s, "]::float8[]");
	return s.data;
}

/*
 * A row's strip (0-based) at x, an SQL float8 expression: NULL, NaN and
 * infinite values have one strip (the engine skips such rows there).
 */
static char *
StripAt(const DistCall *dc, const char *x)
{
	if (dc->strips.n == 1)
		return pstrdup("0");
	return psprintf("COALESCE(pg_catalog.width_bucket(%s, %s), 0)", x, CutsLiteral(dc));
}

/*
 * Make the intermediate tables: unlogged, distributed by strip, one
 * shard a strip, co-located with the cells.
 */
static void
MakeTables(DistCall *dc, uint32 seq)
{
	char	   *prefix = psprintf("gpujoin_%d_%u", MyProcPid, seq);

	dc->r_base = psprintf("%s_r", prefix);
	dc->s_base = psprintf("%s_s", prefix);
	dc->cells = psprintf("%s.%s", dc->schema, quote_identifier(psprintf("%s_cells", prefix)));
	dc->r_tab = psprintf("%s.%s", dc->schema, quote_identifier(dc->r_base));
	dc->s_tab = psprintf("%s.%s", dc->schema, quote_identifier(dc->s_base));

	Exec(psprintf("CREATE UNLOGGED TABLE %s (strip int4, rq text, sq text)", dc->cells), SPI_OK_UTILITY);
	Exec(psprintf("SELECT create_distributed_table('%s', 'strip', shard_count => %d, colocate_with => 'none')",
				  dc->cells, dc->strips.n), SPI_OK_SELECT);
	if (dc->self)
		Exec(psprintf("CREATE UNLOGGED TABLE %s AS SELECT 0::int4 AS strip, true AS own, true AS later, q.* FROM %s WITH NO DATA",
					  dc->s_tab, dc->s_from), SPI_OK_UTILITY);
	else
	{
		Exec(psprintf("CREATE UNLOGGED TABLE %s AS SELECT 0::int4 AS strip, q.* FROM %s WITH NO DATA",
					  dc->r_tab, dc->r_from), SPI_OK_UTILITY);
		Exec(psprintf("CREATE UNLOGGED TABLE %s AS SELECT 0::int4 AS strip, q.* FROM %s WITH NO DATA",
					  dc->s_tab, dc->s_from), SPI_OK_UTILITY);
		Exec(psprintf("SELECT create_distributed_table('%s', 'strip', colocate_with => '%s')",
					  dc->r_tab, dc->cells), SPI_OK_SELECT);
	}
	Exec(psprintf("SELECT create_distributed_table('%s', 'strip', colocate_with => '%s')",
				  dc->s_tab, dc->cells), SPI_OK_SELECT);
	StripValues(dc);
}

/*
 * Repartition: r rows into their strip, s rows into every strip within
 * eps of them (a margin of 1e-9 eps and a few units of rounding of x
 * over: never a strip short).  Returns the rows written.
 */
static int64
MoveRows(DistCall *dc)
{
	char	   *x = psprintf("q.c%d::float8", dc->strips.dim + 1);
	char	   *eps = GjFloat8Literal(dc->spec->eps);
	char	   *own = StripAt(dc, x);
	char	   *finite = psprintf("(%s > '-Infinity'::float8 AND %s < 'Infinity'::float8)", x, x);
	char	   *margin = psprintf("(%s * (1 + 1e-9) + abs(%s) * 1e-15)", eps, x);
	char	   *lo = psprintf("CASE WHEN %s THEN %s ELSE %s END", finite,
							  StripAt(dc, psprintf("(%s - %s)", x, margin)), own);
	char	   *hi = psprintf("CASE WHEN %s THEN %s ELSE %s END", finite,
							  StripAt(dc, psprintf("(%s + %s)", x, margin)), own);
	char	   *vals = ValuesLiteral(dc);
	int64		moved = 0;

	if (dc->self)
		return (int64) Exec(psprintf("INSERT INTO %s SELECT (%s)[st + 1], st = %s, st < %s, q.* FROM %s, "
									 "LATERAL pg_catalog.generate_series(%s, %s) st",
									 dc->s_tab, vals, own, own, dc->s_from, lo, hi), SPI_OK_INSERT);
	moved += Exec(psprintf("INSERT INTO %s SELECT (%s)[%s + 1], q.* FROM %s",
						   dc->r_tab, vals, own, dc->r_from), SPI_OK_INSERT);
	CHECK_FOR_INTERRUPTS();
	moved += Exec(psprintf("INSERT INTO %s SELECT (%s)[st + 1], q.* FROM %s, "
						   "LATERAL pg_catalog.generate_series(%s, %s) st",
						   dc->s_tab, vals, dc->s_from, lo, hi), SPI_OK_INSERT);
	return moved;
}

/* Each strip's queries over its own shards, in the cells table. */
static void
FillCells(DistCall *dc)
{
	char	   *cols = ColumnList(dc->dims);
	const char *r_base = dc->self ? dc->s_base : dc->r_base;
	const char *r_tab = dc->self ? dc->s_tab : dc->r_tab;
	const char *nsp = dc->schema;

	/* a self join's s: the halo rows of later strips (pairs), or all (counts) */
	const char *s_rows = !dc->self ? "" :
		dc->spec->shape == GJ_SHAPE_PAIRS ? " AND later" : "";

	Exec(psprintf("INSERT INTO %s SELECT v, "
				  "pg_catalog.format('SELECT %s FROM %%s.%%I WHERE strip = %%s%s', %s, %s || '_' || "
				  "pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v), v), "
				  "pg_catalog.format('SELECT %s FROM %%s.%%I WHERE strip = %%s%s', %s, %s || '_' || "
				  "pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v), v) "
				  "FROM pg_catalog.unnest(%s) v",
				  dc->cells,
				  cols, dc->self ? " AND own" : "", quote_literal_cstr(nsp), quote_literal_cstr(r_base), r_tab,
				  cols, s_rows, quote_literal_cstr(nsp), quote_literal_cstr(dc->s_base), dc->s_tab,
				  ValuesLiteral(dc)), SPI_OK_INSERT);
}

/* ", r_key => NULL::t" for a keyed side, as the worker's call names it */
static char *
KeyWitness(const char *name, const GjInputSpec *in)
{
	if (in->keys == NULL || !in->keys->kept)
		return "";
	return psprintf(", %s => NULL::%s", name, format_type_be_qualified(in->keys->type));
}

/* "OPERATOR(schema.name)" for an operator, both quoted. */
static char *
QualifiedOperator(Oid opno)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	Form_pg_operator op;
	char	   *s;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "gpujoin: cache lookup failed for operator %u", opno);
	op = (Form_pg_operator) GETSTRUCT(tup);
	s = psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(op->oprnamespace)),
				 NameStr(op->oprname));
	ReleaseSysCache(tup);
	return s;
}

/* The key's witness of a side for the worker's call ("" for ids), first argument */
static char *
Witness(const GjInputSpec *in)
{
	if (in->keys == NULL || !in->keys->kept)
		return "";
	return psprintf(", key => NULL::%s", format_type_be_qualified(in->keys->type));
}

/*
 * The pushed-down join: each strip's rows by the worker's own engine.
 * A self join's pairs take two: its own rows' (pass 0), then its own rows
 * with the later strips' halo rows, put in the ids' order (pass 1).
 */
static char *
JoinQuery(const DistCall *dc, int pass)
{
	const GjJobSpec *spec = dc->spec;
	const char *nsp = quote_identifier(get_namespace_name(spec->input.nsp));
	char	   *eps = GjFloat8Literal(spec->eps);
	bool		counts = spec->shape == GJ_SHAPE_COUNTS;
	char	   *call;

	if (dc->self && !counts && pass == 0)
		return psprintf("SELECT j.* FROM %s c, LATERAL %s.eps_selfjoin_sql(c.rq, %s%s%s) j",
						dc->cells, nsp, eps, Witness(dc->s),
						spec->symmetric ? ", \"symmetric\" => true" : "");
	call = psprintf("%s c, LATERAL %s.%s(c.rq, c.sq, %s%s%s) j", dc->cells, nsp,
					counts ? "eps_join_counts_sql" : "eps_join_sql", eps,
					KeyWitness("r_key", dc->r), counts ? "" : KeyWitness("s_key", dc->s));
	if (!dc->self)
		return psprintf("SELECT j.* FROM %s", call);
	if (counts)
		return psprintf("SELECT j.r, j.n - 1 FROM %s", call);	/* less the row itself */
	if (spec->symmetric)
		return psprintf("SELECT j.* FROM %s", call);	/* both orders: FetchRows */

	/* a < b in the order the single node ranks ids and keys: btree, strings bytewise */
	{
		Oid			t = dc->r->keys != NULL ? dc->r->keys->type : INT8OID;
		TypeCacheEntry *tc = lookup_type_cache(t, TYPECACHE_LT_OPR);
		char	   *coll = type_is_collatable(t) ? " COLLATE \"C\"" : "";
		char	   *less;

		if (!OidIsValid(tc->lt_opr))
			elog(ERROR, "gpujoin: type %s has no less-than operator", format_type_be(t));
		less = psprintf("j.r%s %s j.s%s", coll, QualifiedOperator(tc->lt_opr), coll);
		return psprintf("SELECT CASE WHEN %s THEN j.r ELSE j.s END, CASE WHEN %s THEN j.s ELSE j.r END, "
						"j.dist FROM %s", less, less, call);
	}
}

/* A pair (a, b, dist) as (b, a, dist). */
static void
PutSwapped(GjDist *dist, HeapTuple tup, TupleDesc td)
{
	Datum		v[3];
	bool		n[3];
	Datum		sv[3];
	bool		sn[3];

	heap_deform_tuple(tup, td, v, n);
	sv[0] = v[1];
	sn[0] = n[1];
	sv[1] = v[0];
	sn[1] = n[0];
	sv[2] = v[2];
	sn[2] = n[2];
	tuplestore_putvalues(dist->store, td, sv, sn);
}

/*
 * Every row of the pushed-down join, into dist's tuplestore (in cxt);
 * both_orders: each pair also as (b, a, dist).
 */
static int64
FetchRows(GjDist *dist, const char *sql, bool both_orders, MemoryContext cxt)
{
	SPIPlanPtr	plan = SPI_prepare(sql, 0, NULL);
	Portal		portal;
	int64		rows = 0;

	if (plan == NULL)
		elog(ERROR, "gpujoin: the distributed join could not be planned (%s): %s",
			 SPI_result_code_string(SPI_result), sql);
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, false);
	for (;;)
	{
		MemoryContext old;

		SPI_cursor_fetch(portal, true, 10000);
		if (SPI_processed == 0)
			break;
		old = MemoryContextSwitchTo(cxt);
		if (dist->slot == NULL)
		{
			TupleDesc	td = CreateTupleDescCopy(SPI_tuptable->tupdesc);

			dist->natts = td->natts;
			dist->slot = MakeSingleTupleTableSlot(td, &TTSOpsMinimalTuple);
		}
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			tuplestore_puttuple(dist->store, SPI_tuptable->vals[i]);
			if (both_orders)
				PutSwapped(dist, SPI_tuptable->vals[i], SPI_tuptable->tupdesc);
		}
		MemoryContextSwitchTo(old);
		rows += SPI_processed;
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	SPI_freeplan(plan);
	return rows;
}

/* Which nodes ran the tasks: "host:port n, ..." */
static const char *
Placement(const DistCall *dc, MemoryContext cxt, int *workers)
{
	StringInfoData s;
	MemoryContext old;

	Exec(psprintf("SELECT nodename || ':' || nodeport, count(*) FROM pg_catalog.citus_shards "
				  "WHERE table_name = '%s'::regclass GROUP BY 1 ORDER BY 1", dc->cells), SPI_OK_SELECT);
	old = MemoryContextSwitchTo(cxt);
	initStringInfo(&s);
	for (uint64 i = 0; i < SPI_processed; i++)
		appendStringInfo(&s, "%s%s %s", i > 0 ? ", " : "",
						 SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1),
						 SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
	MemoryContextSwitchTo(old);
	*workers = (int) SPI_processed;
	SPI_freetuptable(SPI_tuptable);
	return s.data;
}

GjDist *
GjDistStart(const GjJobSpec *spec, MemoryContext cxt, GjDistStats *stats)
{
	static uint32 seq = 0;
	DistCall	dc;
	GjDist	   *dist;
	bool		any;
	double		t0 = gj_now_ms();
	int			want;
	MemoryContext old;

	if (!distributed_guc || !ShapeFits(spec) || !GjCitusInstalled())
		return NULL;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", spec->fname);
	any = GjCitusDistributed(spec->input.relid) ||
		(spec->has_query && GjCitusDistributed(spec->query.relid));
	if (!any)
	{
		SPI_finish();
		return NULL;
	}

	memset(&dc, 0, sizeof(dc));
	dc.spec = spec;
	dc.self = !spec->has_query;
	dc.s = &spec->input;
	dc.r = dc.self ? &spec->input : &spec->query;
	if (spec->metric != GJ_METRIC_L2)
		return OnCoordinator(spec, "only the Euclidean metric is distributed");
	dc.dims = NumericColumns(dc.s);
	if (dc.dims == 0 || (!dc.self && NumericColumns(dc.r) != dc.dims))
		return OnCoordinator(spec, "its coordinates are not numeric columns");
	if (!KeyFits(dc.r) || !KeyFits(dc.s))
		return OnCoordinator(spec, "its key is a row");
	if (dc.self && !IdsUnique(dc.s))
		return OnCoordinator(spec, "its id column has no unique index of its own");
	if (XactReadOnly || RecoveryInProgress())
		return OnCoordinator(spec, "the transaction is read-only");
	dc.schema = WritableSchema();
	if (dc.schema == NULL)
		return OnCoordinator(spec, "no schema in search_path lets you create the intermediate tables");

	/* the inputs' queries: their columns checked as the coordinator's read checks them */
	dc.s_from = SourceOf(dc.s, dc.dims);
	dc.r_from = dc.self ? dc.s_from : SourceOf(dc.r, dc.dims);

	/* 1. the strips */
	GjProgressPhase(GJ_PHASE_READ);
	want = strips_guc > 0 ? strips_guc : GJ_STRIPS_PER_WORKER * Max(1, GjCitusWorkers());
	{
		const char *from[2] = {dc.r_from, dc.s_from};

		GjPlanStrips(from, dc.self ? 1 : 2, dc.dims, spec->eps, Min(want, GJ_MAX_STRIPS), &dc.strips);
	}
	stats->plan_ms = gj_now_ms() - t0;

	/* 2. the intermediate tables, filled */
	t0 = gj_now_ms();
	MakeTables(&dc, ++seq);
	stats->rows_moved = MoveRows(&dc);
	FillCells(&dc);
	stats->move_ms = gj_now_ms() - t0;

	/* 3, 4. the join on the workers, its rows here; the tables dropped */
	t0 = gj_now_ms();
	GjProgressPhase(GJ_PHASE_JOIN);
	old = MemoryContextSwitchTo(cxt);
	dist = palloc0(sizeof(GjDist));
	dist->store = tuplestore_begin_heap(false, false, work_mem);
	MemoryContextSwitchTo(old);
	FetchRows(dist, JoinQuery(&dc, 0), false, cxt);
	if (dc.self && spec->shape == GJ_SHAPE_PAIRS)
		FetchRows(dist, JoinQuery(&dc, 1), spec->symmetric, cxt);
	/* the stats outlive the job's context (GjJobEnd hands them out): its parent's */
	stats->placement = Placement(&dc, MemoryContextGetParent(cxt), &stats->workers);
	Exec(psprintf("DROP TABLE %s, %s%s%s", dc.cells, dc.s_tab, dc.self ? "" : ", ", dc.self ? "" : dc.r_tab),
		 SPI_OK_UTILITY);
	stats->join_ms = gj_now_ms() - t0;
	stats->strips = dc.strips.n;
	stats->dim = dc.strips.dim;
	SPI_finish();
	GjProgressPhase(GJ_PHASE_EMIT);
	return dist;
}

bool
GjDistNext(GjDist *dist, Datum *values, bool *nulls)
{
	if (dist->slot == NULL || !tuplestore_gettupleslot(dist->store, true, false, dist->slot))
		return false;
	slot_getallattrs(dist->slot);
	for (int i = 0; i < dist->natts; i++)
	{
		values[i] = dist->slot->tts_values[i];
		nulls[i] = dist->slot->tts_isnull[i];
	}
	return true;
}

/* Close the tuplestore's files now, not at the transaction's end. */
void
GjDistEnd(GjDist *dist)
{
	if (dist->slot != NULL)
		ExecDropSingleTupleTableSlot(dist->slot);
	tuplestore_end(dist->store);
}
