/*
 * dist_join.c
 *		A join of Citus-distributed tables, computed on the workers: which
 *		calls can be, the run, and the eps joins' queries (the kNN joins'
 *		are dist_knn.c's).
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
 *	   each row in every strip within eps, flagged in its own.  A reference
 *	   table as s beside a distributed r is not moved: each strip reads its
 *	   node's copy, the rows within eps of the strip (kNN: all of them).
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
 *	   row's neighbours among all of its strip's rows, less itself; lists
 *	   gather them on the worker, ordered by (distance, id), itself out.
 *	4. The rows come back through a cursor into a tuplestore (work_mem,
 *	   then disk), and the intermediate tables are dropped before the
 *	   first row goes out.  An ERROR or a cancel aborts the transaction,
 *	   which takes the tables (made in it) with it on every node.
 *
 * What runs here: eps_join, eps_selfjoin, eps_join_counts,
 * eps_neighbor_counts, eps_neighbors, knn_join, knn_selfjoin (dist_knn.c)
 * and dbscan (dist_dbscan.c) of tables, Euclidean, on numeric coordinate
 * columns, a column of PostGIS geometry (2-D or PointZ) or geography points, a
 * float4[] or float8[] column or a pgvector column (that one by the cosine
 * metric too: its strips cut a normalised element), integer ids or keys of
 * a named type.  Anything else, or a
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

#include "dist/dist_internal.h"
#include "progress.h"

/* Strips a worker when gpujoin.distributed_strips is 0. */
#define GJ_STRIPS_PER_WORKER 4
#define GJ_MAX_STRIPS 1024

static bool distributed_guc = true;
static int	strips_guc = 0;

void
GjDistInit(void)
{
	DefineCustomBoolVariable("gpujoin.distributed",
							 "Run joins of Citus-distributed tables on the workers.",
							 "On: eps_join, eps_selfjoin, eps_join_counts, eps_neighbor_counts, eps_neighbors, the kNN joins and dbscan of "
							 "distributed tables, and plain inner distance joins of them on declared points or vectors, "
							 "repartition the rows into strips of space on the "
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
	GjDistShardKnnInit();
}

/* The coordinator runs the call: say why, once a call. */
static GjDist *
OnCoordinator(const GjJobSpec *spec, const char *why)
{
	/* PostgreSQL's order is kept on the workers only: no coordinator's run to fall back on */
	if (spec->pg_order)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: cannot run on the workers: %s", spec->fname, why)));
	ereport(NOTICE,
			(errmsg("%s: the distributed table is read on this node: %s", spec->fname, why),
			 errhint("Only the eps and kNN joins, counts, lists and DBSCAN of tables with numeric coordinate columns, geometry (2-D or PointZ) or geography points, float4[] or float8[] arrays or pgvector columns run on the Citus workers, by the Euclidean metric (pgvector columns: the cosine metric too).")));
	SPI_finish();
	return NULL;
}

/*
 * The rows of query q (0: r, 1: s) the engine skips, as the single node's
 * read says it: the workers never see them (their tasks' reads would say
 * it once a strip).
 */
static void
NoticeSkipped(const GjJobSpec *spec, const GjStrips *st, int q)
{
	/* the LATERAL rewrite that calls knn_lateral_join returns them (knn_lateral_fill) */
	if (spec->pg_order)
		return;
	GjNoticeSkipped(spec->fname, st->rows[q], st->nnull[q], st->nnonfinite[q], st->nzero[q]);
}

/* Can the call's shape and inputs run on the workers at all? */
static bool
ShapeFits(const GjJobSpec *spec)
{
	const GjInputSpec *ins[2] = {&spec->input, &spec->query};

	if (spec->shape != GJ_SHAPE_PAIRS && spec->shape != GJ_SHAPE_COUNTS &&
		spec->shape != GJ_SHAPE_KNN && spec->shape != GJ_SHAPE_DBSCAN &&
		(spec->shape != GJ_SHAPE_LISTS || spec->has_query))
		return false;
	if (spec->filter_column != GJ_FILTER_NONE)
		return false;
	for (int i = 0; i < (spec->has_query ? 2 : 1); i++)
		if (ins[i]->is_query || ins[i]->given != NULL || ins[i]->row_ids ||
			ins[i]->sample_pct > 0 || ins[i]->only_ids != NULL || !OidIsValid(ins[i]->relid))
			return false;
	return true;
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
	Oid			t = dc->r->keys != NULL ? dc->r->keys->type : INT8OID;
	TypeCacheEntry *tc = lookup_type_cache(t, TYPECACHE_LT_OPR);
	char	   *call;
	char	   *coll;
	char	   *lt;

	if (dc->self && spec->shape == GJ_SHAPE_PAIRS && pass == 0)
		return psprintf("SELECT j.* FROM %s c, LATERAL %s.eps_selfjoin_sql(c.rq, %s%s%s%s) j",
						dc->cells, nsp, eps, GjDistKeyWitness("key", dc->s),
						spec->symmetric ? ", \"symmetric\" => true" : "", dc->call_args);
	call = psprintf("%s c, LATERAL %s.%s(c.rq, c.sq, %s%s%s%s) j", dc->cells, nsp,
					counts ? "eps_join_counts_sql" : "eps_join_sql", eps,
					GjDistKeyWitness("r_key", dc->r), counts ? "" : GjDistKeyWitness("s_key", dc->s),
					dc->call_args);
	if (!dc->self)
		return psprintf("SELECT j.* FROM %s", call);
	if (counts)
		return psprintf("SELECT j.r, j.n - 1 FROM %s", call);	/* less the row itself */
	if (spec->symmetric)
		return psprintf("SELECT j.* FROM %s", call);	/* both orders: FetchRows */

	/* the order the single node ranks ids and keys in: btree, strings bytewise */
	if (!OidIsValid(tc->lt_opr))
		elog(ERROR, "gpujoin: type %s has no less-than operator", format_type_be(t));
	coll = type_is_collatable(t) ? " COLLATE \"C\"" : "";
	lt = GjDistOperator(tc->lt_opr);
	if (spec->shape == GJ_SHAPE_LISTS)
	{
		/* each own row's pairs with its strip's rows, itself out, by (distance, key) */
		char	   *order = psprintf("ORDER BY j.dist, j.s%s USING %s", coll, lt);
		char	   *others = "FILTER (WHERE j.s IS DISTINCT FROM j.r)";

		return psprintf("SELECT j.r, COALESCE(array_agg(j.s %s) %s, '{}'), "
						"COALESCE(array_agg(j.dist %s) %s, '{}') FROM %s GROUP BY c.strip, j.r",
						order, others, order, others, call);
	}
	{
		char	   *less = psprintf("j.r%s %s j.s%s", coll, lt, coll);

		return psprintf("SELECT CASE WHEN %s THEN j.r ELSE j.s END, CASE WHEN %s THEN j.s ELSE j.r END, "
						"j.dist FROM %s", less, less, call);
	}
}

/*
 * The FROM items of dc's inputs of one coordinate column (a geography,
 * vector or array column, as it is), s first: how many (self: one).  Read
 * before the strips, for what the column's type leaves to its rows.
 */
static int
OneColumnSources(const DistCall *dc, const char **from)
{
	from[0] = GjDistSource(dc->s, 1, true, NULL);
	from[1] = dc->self ? NULL : GjDistSource(dc->r, 1, true, NULL);
	return dc->self ? 1 : 2;
}

GjDist *
GjDistStart(const GjJobSpec *spec, MemoryContext cxt, GjDistStats *stats)
{
	static uint32 seq = 0;
	DistCall	dc;
	GjDist	   *dist;
	bool		s_dist,
				r_dist,
				as_is;
	const char *col_from[2];	/* the inputs of one coordinate column, before the strips */
	double		t0 = gj_now_ms();
	int			want;
	bool		dbscan = spec->shape == GJ_SHAPE_DBSCAN;
	bool		z,
				r_z;
	Oid			r_nsp;
	MemoryContext old;

	if (!distributed_guc || !ShapeFits(spec) || !GjCitusInstalled())
		return NULL;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", spec->fname);
	s_dist = GjCitusDistributed(spec->input.relid);
	r_dist = spec->has_query && GjCitusDistributed(spec->query.relid);
	if (!s_dist && !r_dist)
	{
		SPI_finish();
		return NULL;
	}

	memset(&dc, 0, sizeof(dc));
	/* before any query of ours reaches the workers */
	dc.fresh = GjCitusFreshTransaction();
	dc.spec = spec;
	dc.self = !spec->has_query;
	dc.others = spec->others;
	dc.s = &spec->input;
	dc.r = dc.self ? &spec->input : &spec->query;
	dc.per_unit = 1.0;
	dc.call_args = "";
	if (spec->metric == GJ_METRIC_COSINE)
	{
		int			dims;

		if (GjDistVectorColumn(dc.s, &dims) == 0 || (!dc.self && GjDistVectorColumn(dc.r, &dims) == 0))
			return OnCoordinator(spec, "the cosine metric is distributed for pgvector columns only");
		dc.cosine = true;
		dc.call_args = ", metric => 'cosine'";
	}
	else if (spec->metric != GJ_METRIC_L2)
		return OnCoordinator(spec, "only the Euclidean and cosine metrics are distributed");
	if (GjDistPostgisColumn(dc.s, GJ_KEY_GEOGRAPHY, &dc.postgis_nsp, &z))
	{
		/* a Z is no part of a geography's distance */
		if (!dc.self && !GjDistPostgisColumn(dc.r, GJ_KEY_GEOGRAPHY, &r_nsp, &r_z))
			return OnCoordinator(spec, "one side is a geography column, the other not");
		if (spec->is_knn && spec->use_spheroid)
			return OnCoordinator(spec, "the kNN join of geography runs on the sphere only");
		dc.geography = true;
		dc.dims = dc.ncols = 1;
		dc.per_unit = GjDistGeographyPerMetre(&dc, col_from, OneColumnSources(&dc, col_from));
		if (dc.per_unit == 0.0)
			return OnCoordinator(spec, "its geography rows have no SRID or several");
		dc.call_args = psprintf(", use_spheroid => %s", spec->use_spheroid ? "true" : "false");
	}
	else if (GjDistPostgisColumn(dc.s, GJ_KEY_GEOMETRY, &dc.postgis_nsp, &z))
	{
		if (!dc.self && !GjDistPostgisColumn(dc.r, GJ_KEY_GEOMETRY, &r_nsp, &r_z))
			return OnCoordinator(spec, "one side is a geometry column, the other not");
		if (!dc.self && r_z != z)
			return OnCoordinator(spec, "one side's geometry has a Z, the other's not");
		dc.dims = z ? 3 : 2;	/* PointZ: x, y, z */
		dc.ncols = 1;
	}
	else if ((dc.vector = GjDistVectorColumn(dc.s, &dc.dims)) != 0)
	{
		int			r_dims = 0;

		if (!dc.self && GjDistVectorColumn(dc.r, &r_dims) == 0)
			return OnCoordinator(spec, "one side is a vector column, the other not");
		if (dc.dims == 0 || (!dc.self && r_dims != dc.dims))
		{
			/* undeclared dimensions: the rows', which must agree (else one node's error) */
			dc.dims = GjDistArrayDims(col_from, OneColumnSources(&dc, col_from), "c1::pg_catalog.float4[]");
			if (dc.dims == 0)
				return OnCoordinator(spec, "its vectors are not all of one dimension");
		}
		dc.ncols = 1;
	}
	else if ((dc.array = GjDistArrayColumn(dc.s)))
	{
		if (!dc.self && !GjDistArrayColumn(dc.r))
			return OnCoordinator(spec, "one side is an array column, the other not");
		dc.dims = GjDistArrayDims(col_from, OneColumnSources(&dc, col_from), "c1");
		if (dc.dims == 0)
			return OnCoordinator(spec, "its coordinate arrays are not all one-dimensional of one length");
		dc.ncols = 1;
	}
	else
	{
		dc.dims = dc.ncols = GjDistNumericColumns(dc.s);
		if (dc.dims == 0 || (!dc.self && GjDistNumericColumns(dc.r) != dc.dims))
			return OnCoordinator(spec, "its coordinates are neither numeric columns, geometry or geography points, arrays nor vectors");
	}
	/*
	 * PostgreSQL's order: pgvector's <-> or <=> (its own strips' queries, dist_knn.c),
	 * or 2-D geometry points, whose <-> PostGIS computes as the engine does
	 * (knn_join's rows are its)
	 */
	if (spec->pg_order && dc.vector == 0 &&
		!(OidIsValid(dc.postgis_nsp) && !dc.geography && dc.dims == 2))
		return OnCoordinator(spec, "PostgreSQL's order is kept for pgvector's <-> and <=> and 2-D geometry points only");
	GjDistCoords(&dc);
	if (!GjDistKeyFits(dc.r) || !GjDistKeyFits(dc.s))
		return OnCoordinator(spec, "its key is a row");
	if ((dc.self || dc.others) && spec->shape != GJ_SHAPE_COUNTS && !GjDistIdsUnique(dc.s))
		return OnCoordinator(spec, "its id column has no unique index of its own");
	if (XactReadOnly || RecoveryInProgress())
		return OnCoordinator(spec, "the transaction is read-only");
	dc.schema = GjDistWritableSchema();
	if (dc.schema == NULL)
		return OnCoordinator(spec, "no schema in search_path lets you create the intermediate tables");

	/* the inputs' queries: their columns checked as the coordinator's read checks them */
	as_is = OidIsValid(dc.postgis_nsp) || dc.vector != 0 || dc.array;	/* geography too */
	dc.s_from = GjDistSource(dc.s, dc.ncols, as_is, NULL);
	dc.r_from = dc.self ? dc.s_from : GjDistSource(dc.r, dc.ncols, as_is, NULL);

	/* a reference table joined with a distributed one stays where it is: every node has it */
	if (r_dist && !s_dist && GjCitusReference(dc.s->relid))
	{
		char	   *shard = GjCitusReferenceShard(dc.s->relid);

		if (shard != NULL)
			dc.s_ref = GjDistSource(dc.s, dc.ncols, as_is, shard);
	}
	if (spec->pg_order && (dc.s_ref != NULL || !s_dist || (!dc.self && !r_dist)))
		return OnCoordinator(spec, "PostgreSQL's order is kept for two hash-distributed tables only");
	if (dc.s->match != NULL)
		GjDistMatchCheck(&dc);

	/* a few query rows: each shard of the references answers them */
	old = MemoryContextSwitchTo(cxt);
	dist = palloc0(sizeof(GjDist));
	dist->store = tuplestore_begin_heap(false, false, work_mem);
	MemoryContextSwitchTo(old);
	GjProgressPhase(GJ_PHASE_READ);
	if (GjDistShardKnn(&dc, dist, cxt, stats, ++seq))
	{
		SPI_finish();
		GjProgressPhase(GJ_PHASE_EMIT);
		return dist;
	}

	/* 1. the strips */
	want = strips_guc > 0 ? strips_guc : GJ_STRIPS_PER_WORKER * Max(1, GjCitusWorkers());
	if (dc.match_eq != NULL)
	{
		/* strips of kinds, not of space (match.c) */
		dc.strips.n = Min(want, GJ_MAX_STRIPS);
		dc.strips.dim = -1;
	}
	else
	{
		const char *from[2] = {dc.r_from, dc.s_from};

		/* dbscan's halos are two eps wide: strips as wide keep them to a strip a side */
		GjPlanStrips(from, dc.self ? 1 : 2, &dc.coords,
					 spec->is_knn ? 0.0 : GjDistReach(&dc, spec->eps) * (dbscan ? 2 : 1),
					 Min(want, GJ_MAX_STRIPS), &dc.strips);
	}
	stats->plan_ms = gj_now_ms() - t0;
	NoticeSkipped(spec, &dc.strips, dc.self ? 0 : 1);	/* s first, as the reads go */
	if (!dc.self)
		NoticeSkipped(spec, &dc.strips, 0);

	/* 2. the intermediate tables, filled */
	t0 = gj_now_ms();
	GjDistMakeTables(&dc, ++seq);
	/* kNN: halos after its bounds */
	stats->rows_moved = dc.match_eq != NULL ? GjDistMoveRowsByMatch(&dc) :
		GjDistMoveRows(&dc, spec->is_knn ? 0 : dbscan ? 2 : 1);
	GjDistFillCells(&dc);
	stats->move_ms = gj_now_ms() - t0;

	/* 3, 4. the join on the workers, its rows here; the tables dropped */
	t0 = gj_now_ms();
	GjProgressPhase(GJ_PHASE_JOIN);
	if (spec->is_knn)
		stats->rows_moved += GjDistKnn(&dc, dist, cxt);
	else if (dbscan)
		GjDistDbscan(&dc, dist, cxt);
	else
		GjDistFetch(dist, JoinQuery(&dc, 0), false, cxt);
	if (dc.self && spec->shape == GJ_SHAPE_PAIRS)
		GjDistFetch(dist, JoinQuery(&dc, 1), spec->symmetric, cxt);
	/* the stats outlive the job's context (GjJobEnd hands them out): its parent's */
	stats->placement = GjDistPlacement(&dc, MemoryContextGetParent(cxt), &stats->workers);
	GjDistDropTables(&dc);
	stats->join_ms = gj_now_ms() - t0;
	stats->strips = dc.strips.n;
	stats->dim = dc.strips.dim;
	if (dc.match_eq != NULL)
		stats->match = MemoryContextStrdup(MemoryContextGetParent(cxt),
										   dc.self || strcmp(dc.r->match, dc.s->match) == 0 ? dc.s->match :
										   psprintf("%s = %s", dc.r->match, dc.s->match));
	stats->latitude = dc.geography;
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
