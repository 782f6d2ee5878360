/*
 * shard_knn.c
 *		The LATERAL kNN of a few query rows of distributed tables: the
 *		query rows go to every worker, and each shard of the references
 *		answers them where it lies.  The references do not move.
 *
 * The strips (dist_knn.c) repartition both tables whatever the number of
 * query rows: one row's 5 nearest among 200,000 references moved every
 * reference into its strip.  When the query rows are few, the answer is
 * cheaper found as it is defined:
 *
 *	1. The query rows the engine reads (at most
 *	   gpujoin.distributed_broadcast_rows) are read here, numbered 1, 2, ..
 *	   (o), and go to every worker as a Citus intermediate result
 *	   (broadcast_intermediate_result): a file of the distributed
 *	   transaction, which any of its connections on the worker reads.
 *	2. A cells table gets a row for each shard of the references, in a
 *	   cell shard on the shard's own node.  Citus pushes the query over
 *	   the cells down as a task a cell shard; each calls its rows' shard
 *	   queries, one after another.
 *	3. A shard's query: every query row's first k among the shard's rows,
 *	   by the function the strips call, the query row known by its o.
 *	   pgvector's <-> and <=> rank in float32: knn_lateral_strip over a
 *	   LATERAL query of the shard, which the worker plans as a GpuJoin
 *	   (PostgreSQL's own order).  2-D geometry points rank as the engine
 *	   does: knn_join_sql, whose ties go to the smaller key.
 *	4. Here, as the candidates stream in: each query row's first k of
 *	   them, by distance (geometry: then key), in a heap of k a row.  A row
 *	   among the table's first k is among its shard's first k, so these
 *	   are the table's.  A row is not its own neighbour (self, others):
 *	   the LATERAL query leaves it out; the engine's shards give k + 1,
 *	   and it is dropped here.
 *
 * The shard queries read a shard by its name, which Citus does not see:
 * it cannot route that read over the connection that wrote the shard
 * earlier in the transaction, and another connection does not see those
 * rows.  So this path runs only when nothing of the transaction has run
 * on the workers before the call, nor written here (dc->fresh); otherwise
 * the strips answer.
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "dist/dist_internal.h"
#include "progress.h"

static int	broadcast_rows_guc = 1000;

void
GjDistShardKnnInit(void)
{
	DefineCustomIntVariable("gpujoin.distributed_broadcast_rows",
							"Query rows up to which a distributed LATERAL kNN join sends them to every worker.",
							"Then each shard of the references answers them where it lies, and no reference moves; "
							"with more query rows both tables are repartitioned into strips. 0: always the strips.",
							&broadcast_rows_guc,
							1000, 0, 1000000,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
}

/* One query row's best candidates: a max-heap of at most kk by Worse(). */
typedef struct Best
{
	int			n;
	Datum	   *r;
	double	   *d;
} Best;

/* The merge's state: every query row's heap, and how keys compare. */
typedef struct Merge
{
	Best	   *best;			/* by o - 1 */
	int64		nq;
	int			kk;
	bool		by_key;			/* ties on the key (the engine's order) */
	FmgrInfo	cmp;			/* the key type's btree comparison */
	int16		typlen;
	bool		typbyval;
	MemoryContext cxt;
} Merge;

/* The one int8 (or integer) answer of sql; 0 for none or NULL. */
static int64
OneInt8(const char *sql)
{
	bool		isnull;
	Datum		d;

	GjDistExec(sql, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return 0;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return isnull ? 0 : DatumGetInt64(d);
}

static int
KeyCompare(Merge *m, Datum a, Datum b)
{
	return DatumGetInt32(FunctionCall2Coll(&m->cmp, C_COLLATION_OID, a, b));
}

/* Does candidate (d1, r1) come after (d2, r2)?  Distance, then key (the engine's ties). */
static bool
Worse(Merge *m, double d1, Datum r1, double d2, Datum r2)
{
	if (d1 != d2)
		return d1 > d2;
	return m->by_key && KeyCompare(m, r1, r2) > 0;
}

static void
Swap(Best *b, int i, int j)
{
	Datum		r = b->r[i];
	double		d = b->d[i];

	b->r[i] = b->r[j];
	b->d[i] = b->d[j];
	b->r[j] = r;
	b->d[j] = d;
}

/* The heap below i in order again (its root the worst). */
static void
SiftDown(Merge *m, Best *b, int i)
{
	for (;;)
	{
		int			l = 2 * i + 1,
					w = i;

		if (l < b->n && Worse(m, b->d[l], b->r[l], b->d[w], b->r[w]))
			w = l;
		if (l + 1 < b->n && Worse(m, b->d[l + 1], b->r[l + 1], b->d[w], b->r[w]))
			w = l + 1;
		if (w == i)
			return;
		Swap(b, i, w);
		i = w;
	}
}

/* A candidate row (o, r, rank, dist) of a shard: into its query row's heap. */
static void
Candidate(TupleTableSlot *slot, void *arg)
{
	Merge	   *m = (Merge *) arg;
	int64		o;
	double		d;
	Best	   *b;
	MemoryContext old;

	if (slot->tts_isnull[0] || slot->tts_isnull[3])
		elog(ERROR, "gpujoin: a shard's candidate without its query row's number or a distance");
	o = DatumGetInt64(slot->tts_values[0]);
	d = DatumGetFloat8(slot->tts_values[3]);
	if (o < 1 || o > m->nq)
		elog(ERROR, "gpujoin: a shard's candidate for query row " INT64_FORMAT " of " INT64_FORMAT, o, m->nq);
	b = &m->best[o - 1];
	if (b->n == m->kk && !Worse(m, b->d[0], b->r[0], d, slot->tts_values[1]))
		return;					/* no better than its worst */
	old = MemoryContextSwitchTo(m->cxt);
	if (b->r == NULL)
	{
		b->r = palloc(sizeof(Datum) * m->kk);
		b->d = palloc(sizeof(double) * m->kk);
	}
	if (b->n == m->kk)
	{
		if (!m->typbyval)
			pfree(DatumGetPointer(b->r[0]));
		b->r[0] = datumCopy(slot->tts_values[1], m->typbyval, m->typlen);
		b->d[0] = d;
		SiftDown(m, b, 0);
	}
	else
	{
		int			i = b->n++;

		b->r[i] = datumCopy(slot->tts_values[1], m->typbyval, m->typlen);
		b->d[i] = d;
		/* up while it is worse than its parent */
		while (i > 0 && Worse(m, b->d[i], b->r[i], b->d[(i - 1) / 2], b->r[(i - 1) / 2]))
		{
			Swap(b, i, (i - 1) / 2);
			i = (i - 1) / 2;
		}
	}
	MemoryContextSwitchTo(old);
}

/*
 * The query rows the engine reads, fewer than limit of them (else NULL:
 * too many), numbered from 1 in this order (o): their text for the
 * workers.  Every column goes as text, in Citus's binary format: Citus writes an
 * intermediate result in binary where each column's type allows it, by
 * rules of its own that change between its versions (composite types,
 * arrays, types of extensions), and its reader must name the format.
 * The text is each type's output (floats in full: extra_float_digits 1),
 * read back by its input function on the worker.  The keys stay here, as
 * they are, in keys.  Returns the query that gives the rows' text, and
 * in *casts the worker's FROM item of them, typed again.
 */
static char *
QueryRows(const DistCall *dc, const char *from, int limit, const char *result,
		  int64 *nrows, Datum **keys, char **casts, MemoryContext cxt)
{
	int			nest = NewGUCNestLevel();
	StringInfoData values,
				texts,
				cast;
	SPITupleTable *tt;
	TupleDesc	td;
	Form_pg_attribute key;
	MemoryContext old;

	(void) set_config_option("extra_float_digits", "1", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	GjDistExec(psprintf("SELECT q.* FROM %s WHERE %s LIMIT %d", from, GjDistKeptRow(dc), limit), SPI_OK_SELECT);
	tt = SPI_tuptable;
	td = tt->tupdesc;
	key = TupleDescAttr(td, 0);
	*nrows = (int64) SPI_processed;
	if (*nrows >= limit)
	{
		/* too many: the strips answer, and nothing more is made of them */
		SPI_freetuptable(tt);
		AtEOXact_GUC(true, nest);
		return NULL;
	}
	old = MemoryContextSwitchTo(cxt);
	*keys = palloc(sizeof(Datum) * Max(*nrows, 1));
	for (int64 i = 0; i < *nrows; i++)
	{
		bool		isnull;

		(*keys)[i] = datumCopy(SPI_getbinval(tt->vals[i], td, 1, &isnull), key->attbyval, key->attlen);
	}
	MemoryContextSwitchTo(old);

	initStringInfo(&values);
	for (int64 i = 0; i < *nrows; i++)
	{
		appendStringInfo(&values, "%s(" INT64_FORMAT "::pg_catalog.int8", i > 0 ? ", " : "", i + 1);
		for (int c = 1; c <= td->natts; c++)
			appendStringInfo(&values, ", %s::pg_catalog.text", quote_literal_cstr(SPI_getvalue(tt->vals[i], td, c)));
		appendStringInfoChar(&values, ')');
	}
	initStringInfo(&texts);
	initStringInfo(&cast);
	appendStringInfoString(&texts, "o pg_catalog.int8");
	for (int c = 0; c < td->natts; c++)
	{
		Form_pg_attribute a = TupleDescAttr(td, c);
		const char *name = quote_identifier(NameStr(a->attname));

		appendStringInfo(&texts, ", %s pg_catalog.text", name);
		appendStringInfo(&cast, ", q0.%s::%s AS %s", name,
						 format_type_extended(a->atttypid, a->atttypmod,
											  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY), name);
	}
	SPI_freetuptable(tt);
	AtEOXact_GUC(true, nest);

	/*
	 * OFFSET 0 keeps the casts in the subquery: pulled up, a LATERAL
	 * query's distance would be to q0.c1::vector, not to a column of q,
	 * and the worker's planner would sort the shard for each query row
	 * instead of making a GpuJoin (72 s for 1,000 rows, against 2)
	 */
	*casts = psprintf("(SELECT q0.o%s FROM pg_catalog.read_intermediate_result(%s, 'binary') AS q0(%s) OFFSET 0) q",
					  cast.data, quote_literal_cstr(result), texts.data);
	return psprintf("SELECT * FROM (VALUES %s) v", values.data);
}

/*
 * The LATERAL query of one shard of pgvector references (lq): for each
 * query row (its o twice: its run, its key), the first k of the shard's
 * rows the engine reads by the column's own operator, the row itself out
 * of a self join's.
 */
static char *
LateralQuery(const DistCall *dc, const char *rows, const char *shard)
{
	const char *key = GjRelationIdExpr(dc->s);
	const char *col = GjDistColumnName(dc->s, 0);
	const char *op = GjDistVectorOperator(dc);
	StringInfoData w;

	initStringInfo(&w);
	/* a row key is NULL only when all its columns are: NOT (key IS NULL), as GjDistKeptRow */
	appendStringInfo(&w, "NOT (%s IS NULL OR %s IS NULL)", key, col);
	if (dc->cosine)
		appendStringInfo(&w, " AND %s <> 0", GjDistVectorNorm(dc, col));
	if (dc->s->where != NULL)
		appendStringInfo(&w, " AND (%s)", dc->s->where);
	if (dc->self || dc->others)
		appendStringInfo(&w, " AND %s IS DISTINCT FROM q.id", key);
	return psprintf("SELECT q.o, q.o, n.id, n.d FROM %s CROSS JOIN LATERAL "
					"(SELECT %s AS id, %s %s q.c1 AS d FROM %s WHERE %s ORDER BY %s %s q.c1 LIMIT %d) n",
					rows, key, col, op, shard, w.data, col, op, dc->spec->k);
}

/*
 * How many tasks ran on each node: "host:port n, ..." (a task a cell
 * shard, known by its value).  The distinct (node, value) pairs are at
 * most the cell shards, one a worker: a pass over the shards, each
 * looked up among them.
 */
static const char *
Placement(char **nodes, const int32 *values, int n, int *workers, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	int		   *pair = palloc(sizeof(int) * n);	/* a shard's index, first of its (node, value) */
	int			npairs = 0;
	StringInfoData s;

	for (int i = 0; i < n; i++)
	{
		int			p = 0;

		while (p < npairs && (values[pair[p]] != values[i] || strcmp(nodes[pair[p]], nodes[i]) != 0))
			p++;
		if (p == npairs)
			pair[npairs++] = i;
	}
	initStringInfo(&s);
	*workers = 0;
	for (int p = 0; p < npairs; p++)
	{
		int			tasks = 0;
		bool		seen = false;

		for (int q = 0; q < p && !seen; q++)
			seen = strcmp(nodes[pair[q]], nodes[pair[p]]) == 0;
		if (seen)
			continue;
		for (int q = p; q < npairs; q++)
			tasks += strcmp(nodes[pair[q]], nodes[pair[p]]) == 0;
		appendStringInfo(&s, "%s%s %d", *workers > 0 ? ", " : "", nodes[pair[p]], tasks);
		(*workers)++;
	}
	MemoryContextSwitchTo(old);
	return s.data;
}

/*
 * The cells: a row for each shard of the references, its queries over
 * it, in the (one) cell shard of the shard's node.  false: a shard on a
 * node without a cell shard (the coordinator's: the intermediate result
 * goes to the workers), and the cells dropped.
 */
static bool
FillCells(DistCall *dc, const char *rows, int64 nshards, int workers, GjDistStats *stats, MemoryContext cxt)
{
	bool		lateral = GjDistLateralStrips(dc);
	Oid			s_rel = dc->s->relid;
	StringInfoData ins,
				coords;
	char	  **nodes;
	int32	   *values;
	int			n;

	GjDistExec(psprintf("CREATE UNLOGGED TABLE %s (strip int4, rq text, sq text, lq text)", dc->cells),
			   SPI_OK_UTILITY);
	GjDistExec(psprintf("SELECT create_distributed_table('%s', 'strip', shard_count => %d, colocate_with => 'none')",
						dc->cells, workers), SPI_OK_SELECT);
	/* for each shard, a node of its own with a cell shard, and its distribution value */
	GjDistExec(psprintf("WITH cv AS (SELECT p.groupid AS g, min(v) AS v "
						"FROM pg_catalog.generate_series(0, %d) v, "
						"LATERAL (SELECT pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v) AS shardid) x "
						"JOIN pg_catalog.pg_dist_placement p USING (shardid) WHERE p.groupid <> 0 GROUP BY 1), "
						"ss AS (SELECT DISTINCT ON (s.shardid) s.shardid, p.groupid AS g "
						"FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_placement p USING (shardid) "
						"WHERE s.logicalrelid = %u::pg_catalog.oid AND p.groupid IN (SELECT g FROM cv) "
						"ORDER BY s.shardid, p.groupid) "
						"SELECT pg_catalog.shard_name(%u::pg_catalog.oid::pg_catalog.regclass, ss.shardid), cv.v, "
						"(SELECT d.nodename || ':' || d.nodeport FROM pg_catalog.pg_dist_node d "
						" WHERE d.groupid = ss.g AND d.noderole = 'primary' LIMIT 1) "
						"FROM ss JOIN cv USING (g) ORDER BY ss.shardid",
						256 * workers + 4096, dc->cells, s_rel, s_rel),
			   SPI_OK_SELECT);
	n = (int) SPI_processed;
	if (n != nshards)
	{
		SPI_freetuptable(SPI_tuptable);
		GjDistExec(psprintf("DROP TABLE %s", dc->cells), SPI_OK_UTILITY);
		return false;
	}
	nodes = palloc(sizeof(char *) * n);
	values = palloc(sizeof(int32) * n);
	initStringInfo(&coords);
	for (int c = 0; c < dc->ncols; c++)
		appendStringInfo(&coords, ", q.c%d", c + 1);
	initStringInfo(&ins);
	appendStringInfo(&ins, "INSERT INTO %s VALUES ", dc->cells);
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	td = SPI_tuptable->tupdesc;
		char	   *shard = SPI_getvalue(tup, td, 1);
		bool		isnull;

		values[i] = DatumGetInt32(SPI_getbinval(tup, td, 2, &isnull));
		nodes[i] = SPI_getvalue(tup, td, 3);
		if (nodes[i] == NULL)
			nodes[i] = "?";
		if (lateral)
			appendStringInfo(&ins, "%s(%d, NULL, NULL, %s)", i > 0 ? ", " : "", values[i],
							 quote_literal_cstr(LateralQuery(dc, rows, shard)));
		else
			appendStringInfo(&ins, "%s(%d, %s, %s, NULL)", i > 0 ? ", " : "", values[i],
							 quote_literal_cstr(psprintf("SELECT q.o%s FROM %s", coords.data, rows)),
							 quote_literal_cstr(psprintf("SELECT %s FROM %s WHERE %s", GjDistColumnList(dc->ncols),
														 GjDistSource(dc->s, dc->ncols, true, shard),
														 GjDistKeptRow(dc))));
	}
	SPI_freetuptable(SPI_tuptable);
	GjDistExec(ins.data, SPI_OK_INSERT);
	stats->placement = Placement(nodes, values, n, &stats->workers, MemoryContextGetParent(cxt));
	return true;
}

static bool
ShardKnn(DistCall *dc, GjDist *dist, MemoryContext cxt, GjDistStats *stats, uint32 seq)
{
	const GjJobSpec *spec = dc->spec;
	bool		lateral = GjDistLateralStrips(dc);
	bool		self = dc->self || dc->others;
	const char *q_from = dc->self ? dc->s_from : dc->r_from;
	char	   *prefix = psprintf("gpujoin_%d_%u", MyProcPid, seq);
	char	   *result = psprintf("%s_q", prefix);
	char	   *nsp = (char *) quote_identifier(get_namespace_name(spec->input.nsp));
	double		t0 = gj_now_ms();
	int64		nshards;
	int			workers;
	char	   *rows;
	char	   *values;
	Datum	   *qkeys;
	Merge		m;
	TypeCacheEntry *tc;
	TupleDesc	out;

	if (dc->r->keys == NULL || dc->s->keys == NULL)
		return false;			/* the LATERAL calls' keys are rows (plain_knn.c) */
	nshards = OneInt8(psprintf("SELECT count(*) FROM pg_catalog.pg_dist_shard WHERE logicalrelid = %u::pg_catalog.oid",
							   dc->s->relid));
	workers = GjCitusWorkers();
	if (nshards == 0 || workers == 0)
		return false;

	/* 1. the query rows (a row more than the most: too many) */
	memset(&m, 0, sizeof(m));
	m.kk = self && !lateral ? spec->k + 1 : spec->k;	/* the engine's shards give the row itself too */
	values = QueryRows(dc, q_from, broadcast_rows_guc + 1, result, &m.nq, &qkeys, &rows, cxt);
	if (values == NULL)
		return false;
	stats->by_shard = true;
	stats->query_rows = m.nq;
	stats->strips = (int) nshards;
	stats->plan_ms = gj_now_ms() - t0;
	if (m.nq == 0)
	{
		stats->placement = "";
		return true;			/* no query row: no row */
	}

	/* ... to every worker; 2. the cells */
	t0 = gj_now_ms();
	GjDistExec(psprintf("SELECT pg_catalog.broadcast_intermediate_result(%s, %s)", quote_literal_cstr(result),
						quote_literal_cstr(values)), SPI_OK_SELECT);
	stats->rows_moved = m.nq * workers;
	dc->cells = psprintf("%s.%s", dc->schema, quote_identifier(psprintf("%s_cells", prefix)));
	if (!FillCells(dc, rows, nshards, workers, stats, cxt))
	{
		stats->by_shard = false;	/* the strips answer, and EXPLAIN says so */
		stats->query_rows = 0;
		return false;
	}
	stats->move_ms = gj_now_ms() - t0;

	/*
	 * 3, 4. every shard's candidates, each query row's first k of them.
	 * Ties: the engine's by key (strings bytewise), pgvector's as they come
	 * (a LATERAL query's ties are any of them).
	 */
	t0 = gj_now_ms();
	GjProgressPhase(GJ_PHASE_JOIN);
	tc = lookup_type_cache(dc->s->keys->type, TYPECACHE_CMP_PROC_FINFO);
	m.by_key = !lateral;
	if (m.by_key && !OidIsValid(tc->cmp_proc_finfo.fn_oid))
		elog(ERROR, "gpujoin: type %s has no btree order", format_type_be(dc->s->keys->type));
	if (m.by_key)
		m.cmp = tc->cmp_proc_finfo;
	get_typlenbyval(dc->s->keys->type, &m.typlen, &m.typbyval);
	m.cxt = cxt;
	m.best = MemoryContextAllocZero(cxt, sizeof(Best) * m.nq);
	GjDistEach(psprintf("SELECT j.* FROM %s c, LATERAL %s j", dc->cells,
						lateral ?
						psprintf("%s.knn_lateral_strip(c.lq, %d, query_key => NULL::pg_catalog.int8%s)",
								 nsp, spec->k, GjDistKeyWitness("ref_key", dc->s)) :
						psprintf("%s.knn_join_sql(c.rq, c.sq, %d, query_key => NULL::pg_catalog.int8%s%s)",
								 nsp, m.kk, GjDistKeyWitness("ref_key", dc->s), dc->call_args)),
			   Candidate, &m);
	GjDistExec(psprintf("DROP TABLE %s", dc->cells), SPI_OK_UTILITY);

	/* the rows, as the strips give them: (query key, reference key, rank, distance) */
	out = CreateTemplateTupleDesc(4);
	TupleDescInitEntry(out, 1, "q", dc->r->keys->type, -1, 0);
	TupleDescInitEntry(out, 2, "r", dc->s->keys->type, -1, 0);
	TupleDescInitEntry(out, 3, "rank", INT4OID, -1, 0);
	TupleDescInitEntry(out, 4, "dist", FLOAT8OID, -1, 0);
	GjDistStoreSlot(dist, out, cxt);
	for (int64 i = 0; i < m.nq; i++)
	{
		Best	   *b = &m.best[i];
		int			count = b->n;
		int32		rank = 0;

		CHECK_FOR_INTERRUPTS();
		/* the heap in ascending order: its worst to the end, one at a time */
		for (int n = count; n > 1; n--)
		{
			Swap(b, 0, n - 1);
			b->n = n - 1;
			SiftDown(&m, b, 0);
		}
		for (int j = 0; j < count && rank < spec->k; j++)
		{
			Datum		v[4];
			bool		nulls[4] = {false, false, false, false};

			v[0] = qkeys[i];
			v[1] = b->r[j];
			if (self && !lateral && KeyCompare(&m, v[0], v[1]) == 0)
				continue;		/* the row itself */
			v[2] = Int32GetDatum(++rank);
			v[3] = Float8GetDatum(b->d[j]);
			tuplestore_putvalues(dist->store, out, v, nulls);
		}
	}
	stats->join_ms = gj_now_ms() - t0;
	return true;
}

/*
 * Citus's connections in sequential mode, one a worker, for all of this:
 * made in parallel (a connection a shard), the cells table's shards left
 * each later query of the transaction on the table's nodes (the rewrite's
 * knn_lateral_fill, after this) about 100 ms to start, more than the
 * whole answer here.  So the cells are one shard a worker, and its tasks
 * one a worker.  Nothing of the transaction ran on the workers before
 * (fresh), so the mode may change.
 */
bool
GjDistShardKnn(DistCall *dc, GjDist *dist, MemoryContext cxt, GjDistStats *stats, uint32 seq)
{
	const GjJobSpec *spec = dc->spec;
	int			nest;
	bool		done;

	/*
	 * Not of the query row's own kind (match.c): those rows' LATERAL answers
	 * need the rows without a point too, which this path leaves to
	 * knn_lateral_fill
	 */
	if (!spec->is_knn || !spec->pg_order || !dc->fresh || broadcast_rows_guc == 0 || dc->s_ref != NULL ||
		dc->match_eq != NULL)
		return false;
	nest = NewGUCNestLevel();
	(void) set_config_option("citus.multi_shard_modify_mode", "sequential", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	done = ShardKnn(dc, dist, cxt, stats, seq);
	AtEOXact_GUC(true, nest);
	return done;
}
