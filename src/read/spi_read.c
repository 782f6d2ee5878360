/*
 * spi_read.c
 *		Reading points through SPI: the one reader behind every gpujoin
 *		function.
 *
 * Two forms of input:
 *	- a relation (regclass) with coordinate column names and an optional id
 *	  column (default: the single-column integer primary key), checked
 *	  against the catalog and read by a SELECT of ours (relation.c); a
 *	  large plain table through parallel workers (parallel_read.c);
 *	- a caller's query, which must be one read-only SELECT returning an
 *	  integer id first, then numeric coordinate columns or one float array.
 * A PostGIS point column or query result is read through a query of its
 * coordinates (postgis.c).
 *
 * Both run as the caller through SPI (privileges, column grants and
 * row-level security apply) with a DestReceiver of ours: the executor hands
 * each row's slot to GjReceiveSlot, which converts the coordinates straight
 * into the core's point buffer (rows.c); no tuple is copied, only one copy
 * of the coordinates is ever held, and the planner may choose a parallel
 * scan.  Rows whose id or a coordinate is NULL, NaN or infinite are skipped
 * and counted; one NOTICE reports them.
 *
 * Reads never change the database: they run under the read-only guard
 * (guard.c), between two command-counter increments (ExecuteReadOnly).
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "optimizer/cost.h"
#include "parser/parse_param.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"

#include "machine.h"
#include "read/reader.h"
#include "progress.h"


/* The parameter types a query's parse infers (SetupParamTypes). */
typedef struct ParamTypes
{
	Oid		   *types;
	int			n;
} ParamTypes;

static void
SetupParamTypes(ParseState *pstate, void *arg)
{
	ParamTypes *pt = arg;

	setup_parse_variable_parameters(pstate, &pt->types, &pt->n);
}

/* Does a value of params have no type yet (row('text'): unknown)? */
static bool
HasUnknownParams(const GjInputSpec *spec)
{
	for (int i = 0; i < spec->nparams; i++)
		if (spec->param_types[i] == UNKNOWNOID)
			return true;
	return false;
}

/*
 * The untyped values of params in the types the query's parse gave their
 * parameters, as a prepared statement's text parameters: a join's second
 * query sees them typed.  A parameter the query does not use stays text.
 */
static void
TypeUnknownParams(const GjInputSpec *spec, const ParamTypes *pt)
{
	Oid		   *types = (Oid *) spec->param_types;

	for (int i = 0; i < spec->nparams; i++)
	{
		ParamExternData *prm = &spec->params->params[i];
		Oid			t = i < pt->n && pt->types[i] != UNKNOWNOID ? pt->types[i] : TEXTOID;
		Oid			input,
					ioparam;

		if (types[i] != UNKNOWNOID)
			continue;
		getTypeInputInfo(t, &input, &ioparam);
		prm->value = prm->isnull ? (Datum) 0 :
			OidInputFunctionCall(input, DatumGetCString(prm->value), ioparam, -1);
		prm->ptype = types[i] = t;
	}
}

static void
ParamsContext(void *arg)
{
	const GjInputSpec *spec = arg;

	if (geterrcode() == ERRCODE_UNDEFINED_PARAMETER)
		errcontext("%s was given %d parameter values: pass the values of $1, $2, ... as "
				   "params => row(value1, value2, ...)", spec->fname, spec->nparams);
}

/*
 * The planner's estimate of a prepared query's rows, for gpujoin_progress
 * (-1: none).  The plan it makes is the one the read then runs where the
 * query has no parameters; one with parameters is planned again for
 * their values.
 */
static double
PlannedRows(SPIPlanPtr plan)
{
	CachedPlan *cp = SPI_plan_get_cached_plan(plan);
	double		rows = -1;

	if (cp == NULL)
		return -1;
	if (list_length(cp->stmt_list) == 1 && IsA(linitial(cp->stmt_list), PlannedStmt) &&
		linitial_node(PlannedStmt, cp->stmt_list)->planTree != NULL)
		rows = linitial_node(PlannedStmt, cp->stmt_list)->planTree->plan_rows;
	ReleaseCachedPlan(cp, NULL);
	return rows;
}

/*
 * The caller's query, prepared, after making sure it is one read-only
 * SELECT (no DML, no data-modifying CTE, no SELECT INTO, no FOR UPDATE).
 */
static SPIPlanPtr
PrepareQuery(const char *query, const GjInputSpec *spec)
{
	const char *fname = spec->fname;
	SPIPrepareOptions opt;
	SPIPlanPtr	plan;
	List	   *sources;
	bool		ok;
	ErrorContextCallback context;

	/* a $n the call gave no value for: say how to give it */
	context.callback = ParamsContext;
	context.arg = (void *) spec;
	context.previous = error_context_stack;
	error_context_stack = &context;
	memset(&opt, 0, sizeof(opt));
	opt.parseMode = RAW_PARSE_DEFAULT;
	opt.cursorOptions = CURSOR_OPT_PARALLEL_OK;
	if (spec->nparams > 0 && HasUnknownParams(spec))
	{
		/* as PREPARE without types: the query's use types them */
		ParamTypes	pt;

		pt.n = spec->nparams;
		pt.types = palloc(sizeof(Oid) * pt.n);
		memcpy(pt.types, spec->param_types, sizeof(Oid) * pt.n);
		opt.parserSetup = SetupParamTypes;
		opt.parserSetupArg = &pt;
		plan = SPI_prepare_extended(query, &opt);
		if (plan != NULL)
			TypeUnknownParams(spec, &pt);
	}
	else if (spec->nparams > 0)
		plan = SPI_prepare_cursor(query, spec->nparams, (Oid *) spec->param_types,
								  CURSOR_OPT_PARALLEL_OK);
	else
		plan = SPI_prepare_extended(query, &opt);
	error_context_stack = context.previous;
	if (plan == NULL)
		elog(ERROR, "%s: SPI_prepare_extended failed: %s", fname,
			 SPI_result_code_string(SPI_result));
	sources = SPI_plan_get_plan_sources(plan);
	ok = list_length(sources) == 1;
	if (ok)
	{
		CachedPlanSource *ps = linitial(sources);
		ListCell   *lc;

		ok = ps->commandTag == CMDTAG_SELECT && ps->query_list != NIL;
		foreach(lc, ps->query_list)
		{
			Query	   *q = lfirst_node(Query, lc);

			if (q->commandType != CMD_SELECT || q->utilityStmt != NULL ||
				q->hasModifyingCTE || q->rowMarks != NIL)
				ok = false;
		}
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: query must be a single read-only SELECT", fname),
				 errdetail("Data-modifying statements, SELECT INTO and FOR UPDATE are not allowed.")));
	return plan;
}

/*
 * The receiver: every row the executor produces lands here, as a slot, and
 * is converted into the point buffer at once.
 */
typedef struct GjReceiver
{
	DestReceiver pub;
	const GjInputSpec *spec;
	gj_points  *pts;
	bool		packed;			/* the parallel read: one row, the count */
	bool		packed_arrays;	/* ... of one array or vector column */
	ParamListInfo params;		/* its token, or the query's parameters */
	double		total;			/* rows expected, for gpujoin_progress (-1: a query's) */
	MemoryContext cxt;			/* the caller's: the row buffer lives there */
	GjRowReader rd;
} GjReceiver;

static void
GjReceiverStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	GjReceiver *r = (GjReceiver *) self;

	if (r->packed)
		return;
	GjCheckRowShape(r->spec->fname, typeinfo, &r->rd.shape, r->spec->quiet, r->spec->keys);
	GjRowReaderInit(&r->rd, r->spec->fname, r->spec->only_ids, r->spec->nonly, r->cxt);
	r->rd.keys = r->spec->keys;
	if (!r->rd.shape.is_array)
	{
		r->pts->dims = r->rd.shape.ncoord;
		GjSizeFromStats(r->spec, r->pts);
	}
}

/* One row: check it, convert it, append it (or count why it is skipped). */
static bool
GjReceiveSlot(TupleTableSlot *slot, DestReceiver *self)
{
	GjReceiver *r = (GjReceiver *) self;
	int64		id;
	gj_status	st;

	if (r->packed)
		return true;
	if ((r->rd.nrows & 0xFFFF) == 0xFFFF)
		GjProgressRead(r->rd.nrows + 1);
	slot_getallattrs(slot);
	if (!GjConvertRow(&r->rd, slot->tts_values, slot->tts_isnull, &id))
		return true;
	if (r->pts->dims == 0)
	{
		/* the first array row fixed the dimensions */
		r->pts->dims = r->rd.dims;
		GjSizeFromStats(r->spec, r->pts);
	}
	st = gj_points_push(r->pts, id, r->rd.row);
	if (st == GJ_ERR_LIMIT && r->pts->n + 1 <= GJ_MAX_ROWS)
		GjCheckHostMemory(r->spec->fname, (double) r->pts->n + 1, r->pts->dims, true);
	if (st != GJ_OK)
		GjCheckStatus(st, "reading input rows");
	return true;
}

static void
GjReceiverShutdown(DestReceiver *self)
{
}

static void
GjReceiverDestroy(DestReceiver *self)
{
}

/*
 * Run plan as the caller, read-only, into the receiver r: in read-only
 * transaction mode, and refusing any command that used the command id (a
 * write to a temporary table) with an ERROR that rolls it back.
 */
static void
ExecuteReadOnly(SPIPlanPtr plan, GjReceiver *r)
{
	SPIExecuteOptions opt;
	GjReadOnly	guard;
	CommandId	cid;
	int			rc;

	memset(&opt, 0, sizeof(opt));
	opt.read_only = true;
	opt.dest = &r->pub;
	opt.params = r->params;
	if (r->spec->sample_pct > 0)
	{
		/* the planner's sample: our own SELECT of a plain table */
		rc = SPI_execute_plan_extended(plan, &opt);
		if (rc < 0)
			elog(ERROR, "%s: SPI_execute_plan_extended failed: %s", r->spec->fname,
				 SPI_result_code_string(rc));
		return;
	}

	GjEnterReadOnly(&guard);
	if (r->packed && gj_cpu_count() >= 8)
	{
		/*
		 * More workers than a plain scan of the table would get: packing
		 * costs 1.5-2x a scan per row and the join waits for it (2M rows on
		 * the 16-core H100 host: 81 ms with the 3 workers of the default
		 * size rule, 56 ms with 5, 47 ms with 7; 1M 3-D rows: 39, 36, 32 ms).
		 * A 32 kB threshold lets the rule give tables of a million rows or
		 * more 7-8 workers, as many as a default server has;
		 * max_parallel_workers_per_gather still caps them, and on small
		 * tables the planner's costs still choose (a 100K-row table gets
		 * none, which is also its fastest read).  Not on small machines, where extra workers only share the
		 * same cores (2 cores: 97 ms with 3, 118 ms with 6).  The plan is
		 * made at execution (a parameter), so here.
		 */
		(void) set_config_option("min_parallel_table_scan_size", "32kB", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	}
	if (r->packed && gj_cpu_count() < 8 && max_parallel_workers_per_gather >= gj_cpu_count())
	{
		/*
		 * Small machines: no more participants (workers and the leader)
		 * than cores.  On 2 cores, reading 1.1M 2-D rows for
		 * eps_join_counts took 242-252 ms with one worker, 278-284 ms
		 * serially and 312 ms with the default two (three processes
		 * sharing two cores).  Only ever lowered.
		 */
		char		workers[16];

		snprintf(workers, sizeof(workers), "%d", gj_cpu_count() - 1);
		(void) set_config_option("max_parallel_workers_per_gather", workers, PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	}
	if (r->packed_arrays)
	{
		/*
		 * An array or vector row costs far more than the planner's per-row
		 * estimate (a 768-dim vector is detoasted from two TOAST chunks and
		 * converted), and the heap it sizes workers by holds only pointers
		 * to it, so the start-up cost alone would keep the read serial.
		 */
		(void) set_config_option("parallel_setup_cost", "0", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	}
	CommandCounterIncrement();
	cid = GetCurrentCommandId(false);
	/* a query's size by its plan: planned under the guard, as its run is */
	GjProgressReadStart(r->spec->is_query ? PlannedRows(plan) : r->total);
	rc = SPI_execute_plan_extended(plan, &opt);
	if (rc < 0)
		elog(ERROR, "%s: SPI_execute_plan_extended failed: %s", r->spec->fname,
			 SPI_result_code_string(rc));
	CommandCounterIncrement();
	if (GetCurrentCommandId(false) != cid)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("%s: the query that reads the rows changed the database", r->spec->fname),
				 errdetail("gpujoin reads its input read-only; a function the query calls wrote to a table."),
				 errhint("Write in a separate statement.")));
	GjLeaveReadOnly(&guard);
}

/*
 * Read every usable row described by spec into pts (empty, owned by a
 * GjResources); counts go to stats when it is not NULL.
 */
/* Rows read already: a copy, as the job reorders its own. */
static void
ReadGiven(const GjInputSpec *spec, gj_points *pts, GjReadStats *stats)
{
	const gj_points *g = spec->given;
	double		t0 = gj_now_ms();

	pts->dims = g->dims;
	if (g->n > 0)
	{
		GjCheckStatus(gj_points_reserve(pts, g->n), "copying the join's rows");
		memcpy(pts->x, g->x, sizeof(double) * g->dims * g->n);
		memcpy(pts->ids, g->ids, sizeof(int64_t) * g->n);
		pts->n = g->n;
	}
	if (stats != NULL)
	{
		stats->rows += g->n;
		stats->ms += gj_now_ms() - t0;
		stats->srid = GJ_NO_SRID;
		stats->geography = false;
	}
}

/*
 * The read's NOTICE of the rows the engine skips, of rows read: one
 * wording wherever rows are counted (here, and a distributed join's strips).
 */
void
GjNoticeSkipped(const char *fname, int64 rows, int64 nnull, int64 nnonfinite, int64 nzero)
{
	if (nnull + nnonfinite + nzero == 0)
		return;
	if (nzero > 0)
		ereport(NOTICE,
				(errmsg("%s: skipped %lld of %lld input rows",
						fname, (long long) (nnull + nnonfinite + nzero), (long long) rows),
				 errdetail("%lld had a NULL id or coordinate, %lld a NaN or infinite coordinate, %lld only zero coordinates (no direction for the cosine metric).",
						   (long long) nnull, (long long) nnonfinite, (long long) nzero)));
	else
		ereport(NOTICE,
				(errmsg("%s: skipped %lld of %lld input rows",
						fname, (long long) (nnull + nnonfinite), (long long) rows),
				 errdetail("%lld had a NULL id or coordinate, %lld a NaN or infinite coordinate.",
						   (long long) nnull, (long long) nnonfinite)));
}

void
GjReadPoints(const GjInputSpec *spec, gj_points *pts, GjReadStats *stats)
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	GjReceiver	r;
	SPIPlanPtr	plan;
	double		t0 = gj_now_ms(),
				t_pack = 0,
				t_exec,
				t_done;
	GjPackTarget *pack = NULL;
	int64		token = 0;
	GjRowReader *counts = &r.rd;
	int64_t		nzero = 0;
	int			pack_dims = 0;

	GjInputSpec gspec;
	char	   *gsql;
	int32		srid = GJ_NO_SRID;
	int			srid_coords = 0;	/* rows of this many coordinates, then the SRID */
	bool		geography = false;
	Oid			postgis_nsp = InvalidOid;

	if (spec->given != NULL)
	{
		ReadGiven(spec, pts, stats);
		return;
	}

	/*
	 * A PostGIS point column: read through a query of its coordinates (the
	 * join's reads take the points themselves, read/keys.c)
	 */
	if (!spec->quiet && GjGeometryInput(spec, &gsql, &srid, &geography, &postgis_nsp))
	{
		gspec = *spec;
		gspec.is_query = true;
		gspec.query = gsql;
		spec = &gspec;
	}

	memset(&r, 0, sizeof(r));
	r.pub.receiveSlot = GjReceiveSlot;
	r.pub.rStartup = GjReceiverStartup;
	r.pub.rShutdown = GjReceiverShutdown;
	r.pub.rDestroy = GjReceiverDestroy;
	r.pub.mydest = DestNone;
	r.spec = spec;
	r.pts = pts;
	r.cxt = caller_cxt;

	if (spec->keys != NULL)
		GjKeysStart(spec->keys, spec->fname);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", spec->fname);
	if (spec->is_query)
	{
		plan = PrepareQuery(spec->query, spec);
		r.params = spec->params;
		{
			/* (id, geometry): read as its coordinates (postgis.c) */
			List	   *ps = SPI_plan_get_plan_sources(plan);
			char	   *wrapped = GjGeometryWrapQuery(spec->fname, spec->query,
													  ((CachedPlanSource *) linitial(ps))->resultDesc,
													  spec->nsp,
													  &geography, &postgis_nsp, &srid_coords);

			if (wrapped != NULL)
			{
				SPI_freeplan(plan);
				plan = PrepareQuery(wrapped, spec);
			}
		}
	}
	else
	{
		char	   *sql;
		SPIPrepareOptions opt;

		if (GjParallelReadWanted(spec, &pack_dims))
		{
			/* in the caller's context: its reset ends the wait on error */
			pack = MemoryContextAllocZero(caller_cxt, sizeof(GjPackTarget));
			pack->pts = pts;
			pack->expect = GjExpectedRows(spec->relid);
			t_pack = gj_now_ms();
			token = GjPackBegin(pack, caller_cxt, pack_dims, spec->metric == GJ_METRIC_COSINE,
								spec->fname);
			t_pack = gj_now_ms() - t_pack;
			r.packed = true;
			if (pack->seg == NULL &&
				(double) pack->expect * (8.0 + 8.0 * pack_dims) >= GJ_PACK_UNSHARED_MAX)
			{
				GjPackEnd(pack);	/* no room in shared memory: read serially */
				token = 0;
				r.packed = false;
			}
			r.packed_arrays = r.packed && pack_dims > 1 &&
				ArrayGetNItems(ARR_NDIM(spec->cols), ARR_DIMS(spec->cols)) == 1;
		}
		sql = GjBuildRelationQuery(spec, token);
		GjPrecheckHostMemory(spec);

		memset(&opt, 0, sizeof(opt));
		opt.parseMode = RAW_PARSE_DEFAULT;
		opt.cursorOptions = CURSOR_OPT_PARALLEL_OK;
		if (token > 0)
		{
			/* the token travels as $1: the statement text stays the same */
			Oid			int8type = INT8OID;

			plan = SPI_prepare_cursor(sql, 1, &int8type, CURSOR_OPT_PARALLEL_OK);
			r.params = makeParamList(1);
			r.params->params[0].value = Int64GetDatum(token);
			r.params->params[0].isnull = false;
			r.params->params[0].pflags = PARAM_FLAG_CONST;
			r.params->params[0].ptype = INT8OID;
		}
		else
			plan = SPI_prepare_extended(sql, &opt);
		if (plan == NULL)
			elog(ERROR, "%s: SPI_prepare_extended failed: %s", spec->fname,
				 SPI_result_code_string(SPI_result));
	}
	if (stats != NULL)
	{
		stats->srid = srid;
		stats->geography = geography;
		stats->postgis_nsp = postgis_nsp;
	}
	r.total = spec->is_query ? -1 : token > 0 ? (double) pack->expect : GjRelationRows(spec->relid);
	t_exec = gj_now_ms();
	ExecuteReadOnly(plan, &r);
	t_done = gj_now_ms();
	if (token > 0)
		GjPackEnd(pack);
	SPI_finish();
	MemoryContextSwitchTo(caller_cxt);
	if (token > 0)
	{
		/* the workers' counters, and the shape the buffers came in */
		counts = &pack->rd_counts;
		counts->nrows = pack->nrows;
		counts->nnull = pack->nnull;
		counts->nnonfinite = pack->nnonfinite;
		if (pts->dims == 0)
			pts->dims = pack_dims;
		if (stats != NULL)
			stats->workers = Max(stats->workers, pack->partials);
	}

	GjProgressRead(counts->nrows);
	if (spec->keys != NULL)
		GjKeysRank(spec->keys, pts);	/* ids as the keys' ranks */
	if (token > 0 && pack->normalized)
		nzero = pack->nzero;	/* the participants normalised as they packed */
	else if (spec->metric == GJ_METRIC_COSINE)
		GjCheckStatus(gj_points_normalize(pts, &nzero), "normalising rows for the cosine metric");
	elog(DEBUG1, "%s: read %lld rows of %d dimensions%s: %.1f ms to start (%.1f making its buffer), %.1f ms in the query, %.1f ms after",
		 spec->fname, (long long) pts->n, pts->dims,
		 token > 0 ? (pack->in_file ? " (parallel, through shared files)" : " (parallel)") : "",
		 t_exec - t0, t_pack, t_done - t_exec, gj_now_ms() - t_done);

	if (spec->sample_pct <= 0 && !spec->quiet)
		GjNoticeSkipped(spec->fname, counts->nrows - counts->nfiltered, counts->nnull,
						counts->nnonfinite, nzero);
	if (geography && srid_coords == 0)
		srid_coords = 2;		/* a geography table: (lon, lat, SRID) */
	if (srid_coords > 0)
	{
		/* the rows' one SRID goes where a geometry column's does */
		int32		rsrid = GjTakeSridColumn(spec->fname, pts, srid_coords, geography);

		if (stats != NULL)
			stats->srid = rsrid;
	}
	if (stats != NULL)
	{
		stats->rows += counts->nrows - counts->nfiltered;
		stats->skipped += counts->nnull + counts->nnonfinite + nzero;
		stats->nonfinite += counts->nnonfinite;
		stats->ms += gj_now_ms() - t0;
	}
}
