/*
 * exec.c
 *		Running a GpuJoin: the inner side into the engine's index, the
 *		outer side through it in batches, every candidate decided by the
 *		join's own quals.
 *
 * A scan goes through these phases:
 *	start	  evaluate d (and use_spheroid); read the inner plan whole: each
 *			  row's tuple is kept, its key decoded (read/keys.c) into the
 *			  engine's rows, or kept aside as an "other" row
 *	batch	  read the outer plan until the batch is full (rows, memory) or
 *			  the plan ends; start an eps join of the batch against the
 *			  inner rows (job/), eps widened by a proven margin over d
 *	pairs	  each candidate (outer row, inner row) the engine finds:
 *			  the scan tuple is made of both rows, the join's quals decide
 *	other	  the "other" rows against every row of the other side, by the
 *			  quals alone
 *	unmatched (left and anti joins) each outer row that matched nothing,
 *			  null-extended
 * and back to batch until the outer plan ends.
 *
 * Which rows go where.  A key the engine can take (one finite point, a
 * vector of the inner side's size, the SRID of the inner side's first
 * row) is an engine row.  A NULL key, or an empty geometry under
 * ST_DWithin / ST_Distance, can never pass the (strict) predicate: such a
 * row is never compared (an outer one still comes out of a left or anti
 * join).  Every other key (a line, a polygon, a vector of another size, a
 * mixed SRID, a non-finite coordinate) is an "other" row, compared by the
 * quals with every row of the other side: PostgreSQL's own answer or its
 * own error (PostGIS's mixed-SRID error, pgvector's dimension error).
 * A d that is NULL passes nothing; a d that is negative, infinite or NaN,
 * or a margin that overflows, makes every row an "other" row: correct,
 * and as slow as a nested loop.
 *
 * The margins (d the bound, n the dimensions, u = 2^-24):
 *	geometry	  eps = d (1 + 1e-9): PostGIS and the engine both start from
 *				  the same float64 differences; each rounds its sum of two
 *				  squares within a few ulps
 *	vector L2	  pgvector sums float32 squares of float32 differences: its
 *				  squared distance is within a factor 1 +- (n + 4) u of the
 *				  exact one (any summation order), plus n subnormals
 *	cosine		  pgvector's similarity is within 4 (n + 4) u of the exact
 *				  one; rows are normalised in float64 here, cos = 1 - c^2 / 2
 *	geography	  the chord out_min of core/geodetic.c, which bounds PostGIS's
 *				  metres on the spheroid or the sphere
 * A zero vector under <=> has no cosine distance (pgvector returns NaN,
 * which passes no finite d): it is treated like a NULL.
 */
#include "postgres.h"

#include <math.h>

#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"

#include "job/job.h"
#include "join/join.h"
#include "machine.h"

#define GJ_JOIN_BATCH_ROWS (8 * 1024 * 1024)	/* outer rows in a batch, at most */
#define GJ_JOIN_MIN_BATCH_BYTES (16 * 1024 * 1024)

typedef enum GjJoinPhase
{
	PH_START,
	PH_BATCH,
	PH_PAIRS,
	PH_OTHER,
	PH_UNMATCHED,
	PH_DONE
} GjJoinPhase;

/* One side's rows of this scan (inner) or this batch (outer). */
typedef struct GjSide
{
	PlanState  *ps;
	AttrNumber	key;			/* the key's column in ps's tuples */
	TupleTableSlot *slot;		/* holds one of tup[] */
	MinimalTuple *tup;			/* rows kept: engine, other, and (outer) never-matching */
	int64		n;
	int64		cap;
	int64		loaded;			/* which of them slot holds (-1: none) */
	gj_points	pts;			/* engine rows: coordinates, id = index in tup */
	int64	   *other;			/* other rows: indexes in tup */
	int64		nother;
	int64		cap_other;
	bool		ended;			/* the plan has no more rows */
	MemoryContext cxt;
	int64		total;			/* rows read over the scan */
} GjSide;

typedef struct GjJoinState
{
	CustomScanState css;
	JoinType	jointype;
	GjKeyKind	kind;
	GjJoinMetric metric;
	bool		empty_false;
	int			nouter;			/* outer columns at the front of the scan tuple */
	Oid			postgis_nsp;
	Expr	   *clause;
	ExprState  *joinqual;
	ExprState  *restqual;		/* joinqual less the predicate */
	ExprState  *bound_state;
	ExprState  *spheroid_state;
	GjSide		outer;
	GjSide		inner;

	/* this scan */
	GjJoinPhase phase;
	bool		none;			/* d is NULL: nothing matches */
	bool		fallback;		/* every row an other row */
	double		d;
	bool		spheroid;
	double		eps;
	double		eps2;
	double		in2;			/* engine distances^2 below this pass the predicate */
	int			dims;			/* key coordinates (vectors: the first engine row's) */
	int32		tag;			/* PostGIS: the SRID of the first engine row */
	bool		tag_set;
	bool		geo_ready;
	gj_geodetic geo;
	double	   *row;			/* one key's coordinates */
	GjJob	   *job;
	bool	   *matched;		/* per outer row of the batch */
	int64		oi;				/* position in the other phase / unmatched phase */
	int64		ii;
	int			other_part;
	int64		scan_outer;		/* rows whose columns the scan slot holds (-1: nulls) */
	int64		scan_inner;

	/* EXPLAIN ANALYZE */
	GjJobStats	js;
	int			runs;
	int64		batches;
	int64		candidates;
	int64		decided;		/* ... of which the engine's distance decided */
	int64		other_pairs;
	double		read_ms;
	double		t0;
} GjJoinState;

static void GjJoinBegin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *GjJoinExec(CustomScanState *node);
static void GjJoinEnd(CustomScanState *node);
static void GjJoinReScan(CustomScanState *node);
static void GjJoinExplain(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomExecMethods gj_join_exec_methods = {
	.CustomName = "GpuJoin",
	.BeginCustomScan = GjJoinBegin,
	.ExecCustomScan = GjJoinExec,
	.EndCustomScan = GjJoinEnd,
	.ReScanCustomScan = GjJoinReScan,
	.ExplainCustomScan = GjJoinExplain,
};

Node *
GjJoinCreateState(CustomScan *cscan)
{
	GjJoinState *st = palloc0(sizeof(GjJoinState));

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &gj_join_exec_methods;
	return (Node *) st;
}

/* The scan tuple's column a key Var (INDEX_VAR after setrefs) names. */
static AttrNumber
KeyColumn(Expr *e)
{
	while (IsA(e, RelabelType))
		e = ((RelabelType *) e)->arg;
	if (!IsA(e, Var) || ((Var *) e)->varno != INDEX_VAR)
		elog(ERROR, "GpuJoin: a join key is not a column of the scan tuple");
	return ((Var *) e)->varattno;
}

/* The gj_points of a side: freed with its context, by error or end. */
static void
FreePoints(void *arg)
{
	gj_points_free((gj_points *) arg);
}

static void
InitSide(GjSide *side, PlanState *ps, AttrNumber key, EState *estate, MemoryContext parent,
		 const char *name)
{
	MemoryContextCallback *cb;

	side->ps = ps;
	side->key = key;
	side->loaded = -1;
	side->slot = ExecInitExtraTupleSlot(estate, ExecGetResultType(ps), &TTSOpsMinimalTuple);
	side->cxt = AllocSetContextCreate(parent, "GpuJoin side", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSetIdentifier(side->cxt, name);
	gj_points_init(&side->pts, 0);
	cb = MemoryContextAlloc(parent, sizeof(MemoryContextCallback));
	cb->func = FreePoints;
	cb->arg = &side->pts;
	MemoryContextRegisterResetCallback(parent, cb);
}

/* Forget a side's rows (a new batch, a rescan). */
static void
ResetSide(GjSide *side)
{
	ExecClearTuple(side->slot);
	MemoryContextReset(side->cxt);
	side->tup = NULL;
	side->n = side->cap = 0;
	side->other = NULL;
	side->nother = side->cap_other = 0;
	side->loaded = -1;
	gj_points_free(&side->pts);
	gj_points_init(&side->pts, 0);
}

static void
GjJoinBegin(CustomScanState *node, EState *estate, int eflags)
{
	GjJoinState *st = (GjJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *ex = cscan->custom_exprs;
	PlanState  *outer_ps,
			   *inner_ps;
	AttrNumber	okey,
				ikey;

	st->jointype = (JoinType) intVal(list_nth(priv, GJ_JP_JOINTYPE));
	st->kind = (GjKeyKind) intVal(list_nth(priv, GJ_JP_KIND));
	st->metric = (GjJoinMetric) intVal(list_nth(priv, GJ_JP_METRIC));
	st->empty_false = intVal(list_nth(priv, GJ_JP_EMPTY_FALSE)) != 0;
	st->nouter = intVal(list_nth(priv, GJ_JP_OUTER_COLS));
	st->postgis_nsp = (Oid) intVal(list_nth(priv, GJ_JP_POSTGIS_NSP));

	outer_ps = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	inner_ps = ExecInitNode(lsecond(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make2(outer_ps, inner_ps);

	st->joinqual = ExecInitQual((List *) list_nth(ex, GJ_JE_JOINQUALS), &node->ss.ps);
	st->restqual = ExecInitQual((List *) list_nth(ex, GJ_JE_REST), &node->ss.ps);
	st->bound_state = ExecInitExpr((Expr *) list_nth(ex, GJ_JE_BOUND), &node->ss.ps);
	st->spheroid_state = ExecInitExpr((Expr *) list_nth(ex, GJ_JE_SPHEROID), &node->ss.ps);
	st->clause = (Expr *) list_nth(ex, GJ_JE_CLAUSE);
	okey = KeyColumn((Expr *) list_nth(ex, GJ_JE_OUTER_KEY));
	ikey = KeyColumn((Expr *) list_nth(ex, GJ_JE_INNER_KEY));
	if (okey < 1 || okey > st->nouter || ikey <= st->nouter)
		elog(ERROR, "GpuJoin: the join keys are not one of each side");
	InitSide(&st->outer, outer_ps, okey, estate, estate->es_query_cxt, "GpuJoin outer");
	InitSide(&st->inner, inner_ps, ikey - st->nouter, estate, estate->es_query_cxt,
			 "GpuJoin inner");
	st->row = MemoryContextAlloc(estate->es_query_cxt, sizeof(double) * GJ_MAX_DIMS);
	st->phase = PH_START;
}

/* --- reading ------------------------------------------------------------- */

static void
KeepTuple(GjSide *side, TupleTableSlot *slot)
{
	MemoryContext old = MemoryContextSwitchTo(side->cxt);

	if (side->n == side->cap)
	{
		side->cap = side->cap == 0 ? 1024 : side->cap * 2;
		side->tup = side->tup == NULL ? palloc(sizeof(MinimalTuple) * side->cap) :
			repalloc_huge(side->tup, sizeof(MinimalTuple) * side->cap);
	}
	side->tup[side->n++] = ExecCopySlotMinimalTuple(slot);
	MemoryContextSwitchTo(old);
}

static void
KeepOther(GjSide *side, int64 row)
{
	if (side->nother == side->cap_other)
	{
		MemoryContext old = MemoryContextSwitchTo(side->cxt);

		side->cap_other = side->cap_other == 0 ? 256 : side->cap_other * 2;
		side->other = side->other == NULL ? palloc(sizeof(int64) * side->cap_other) :
			repalloc_huge(side->other, sizeof(int64) * side->cap_other);
		MemoryContextSwitchTo(old);
	}
	side->other[side->nother++] = row;
}

typedef enum
{
	ROW_ENGINE,
	ROW_OTHER,
	ROW_NEVER
} RowClass;

/* Which rows a key value is, its coordinates in st->row when an engine row. */
static RowClass
ClassifyKey(GjJoinState *st, TupleTableSlot *slot, AttrNumber key)
{
	bool		isnull;
	Datum		v = slot_getattr(slot, key, &isnull);
	int			dims = st->dims;
	int32		tag;

	if (isnull)
		return ROW_NEVER;		/* the predicate is strict */
	if (st->fallback)
		return ROW_OTHER;
	switch (GjKeyCoords(st->kind, v, st->row, &dims, &tag))
	{
		case GJ_KEY_OK:
			break;
		case GJ_KEY_EMPTY:
			/* ST_DWithin and ST_Distance pass no empty geometry */
			return st->empty_false ? ROW_NEVER : ROW_OTHER;
		case GJ_KEY_OTHER:
			return ROW_OTHER;
	}
	if (st->kind == GJ_KEY_GEOMETRY || st->kind == GJ_KEY_GEOGRAPHY)
	{
		if (!st->tag_set)
		{
			st->tag = tag;
			st->tag_set = true;
		}
		else if (tag != st->tag)
			return ROW_OTHER;	/* PostGIS's mixed-SRID error, from the predicate */
		dims = 2;
	}
	st->dims = dims;
	if (st->metric == GJ_JM_COSINE && !gj_normalize_row(st->row, dims))
		return ROW_NEVER;		/* no cosine distance: pgvector's NaN */
	return ROW_ENGINE;
}

/* Take one row of side's plan into its rows; false when it has no more. */
static bool
ReadRow(GjJoinState *st, GjSide *side, bool keep_never)
{
	TupleTableSlot *slot = ExecProcNode(side->ps);
	RowClass	c;

	if (TupIsNull(slot))
	{
		side->ended = true;
		return false;
	}
	side->total++;
	c = ClassifyKey(st, slot, side->key);
	if (c == ROW_NEVER && !keep_never)
		return true;
	if (c == ROW_ENGINE)
	{
		if (side->pts.dims == 0)
			gj_points_init(&side->pts, st->dims);
		GjCheckStatus(gj_points_push(&side->pts, side->n, st->row), "keeping a join row");
	}
	else if (c == ROW_OTHER)
		KeepOther(side, side->n);
	KeepTuple(side, slot);
	return true;
}

static int64
SideBytes(GjSide *side)
{
	return (int64) MemoryContextMemAllocated(side->cxt, true) +
		side->pts.cap * (int64) (sizeof(double) * Max(side->pts.dims, 1) + sizeof(int64));
}

/* Geography: lon/lat rows as earth-centred points, d as a chord. */
static void
GeographyPoints(GjJoinState *st, gj_points *p)
{
	if (!st->geo_ready)
	{
		double		a,
					b;

		GjGeographySpheroid("GpuJoin", st->postgis_nsp, st->tag_set ? st->tag : 4326, &a, &b);
		GjCheckStatus(gj_geodetic_init(&st->geo, a, b,
									   st->metric == GJ_JM_GEODESIC && st->spheroid, st->d),
					  "setting up the geography distance");
		st->geo_ready = true;
	}
	if (p->n > 0)
		GjCheckStatus(gj_geodetic_points(&st->geo, p, NULL), "making geography points");
}

/* Evaluate d, read the inner side, size eps. */
static void
StartScan(GjJoinState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	bool		isnull,
				sisnull;
	Datum		dv,
				sv;
	int64		limit = GjHostMemoryLimit();
	double		t0 = gj_now_ms();
	int64		k = 0;

	ResetExprContext(econtext);
	dv = ExecEvalExprSwitchContext(st->bound_state, econtext, &isnull);
	sv = ExecEvalExprSwitchContext(st->spheroid_state, econtext, &sisnull);
	st->none = isnull || sisnull;
	st->d = isnull ? 0 : DatumGetFloat8(dv);
	st->spheroid = sisnull ? true : DatumGetBool(sv);
	st->fallback = !st->none && (!isfinite(st->d) || st->d < 0);
	st->dims = (st->kind == GJ_KEY_GEOMETRY || st->kind == GJ_KEY_GEOGRAPHY) ? 2 : 0;
	st->tag_set = false;
	st->geo_ready = false;
	st->runs++;
	if (st->none)
	{
		/* nothing can match: the inner side is not even needed */
		st->inner.ended = true;
		st->phase = PH_BATCH;
		return;
	}
	while (ReadRow(st, &st->inner, false))
	{
		CHECK_FOR_INTERRUPTS();
		if ((++k & 1023) == 0 && SideBytes(&st->inner) > limit)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("GpuJoin: the inner side's rows exceed gpujoin.host_memory_limit (%lld MB)",
							(long long) (limit / (1024 * 1024))),
					 errhint("Raise gpujoin.host_memory_limit, or SET gpujoin.enable_join = off to run this join as PostgreSQL plans it without gpujoin.")));
	}
	if (st->kind == GJ_KEY_GEOGRAPHY && !st->fallback)
		GeographyPoints(st, &st->inner.pts);

	/* eps over d with the margin of the predicate's rounding */
	if (!st->fallback)
	{
		double		d = st->d,
					gam = (st->dims + 4) * ldexp(1.0, -24);

		st->in2 = -1;

		switch (st->metric)
		{
			case GJ_JM_PLANAR:
				st->eps = d * (1 + 1e-9);
				st->eps2 = st->eps * st->eps;
				st->in2 = d * (1 - 1e-9) * d * (1 - 1e-9);
				break;
			case GJ_JM_L2:
				st->eps2 = (d * d * (1 + 1e-12) + st->dims * 1e-44) / (1 - gam) * (1 + 1e-12);
				st->eps = sqrt(st->eps2);
				st->in2 = (d * d * (1 - 1e-9) - st->dims * 1e-44) / (1 + gam) * (1 - 1e-12);
				break;
			case GJ_JM_COSINE:
				st->eps2 = 2.0 * (d + 4.0 * gam) + 1e-9;
				st->eps = sqrt(st->eps2);
				st->in2 = 2.0 * (d - 4.0 * gam) - 1e-9;
				break;
			case GJ_JM_GEODESIC:
			case GJ_JM_SPHERE:
				st->eps = st->geo.out_min;
				st->eps2 = st->eps * st->eps;
				st->in2 = st->geo.in_max * st->geo.in_max;
				break;
		}
		if (!isfinite(st->eps2) || !(st->eps2 >= 0) || st->dims > GJ_MAX_DIMS)
			st->fallback = true;
	}
	if (st->fallback)
	{
		/* every inner row an other row */
		st->inner.nother = 0;
		for (int64 i = 0; i < st->inner.n; i++)
			KeepOther(&st->inner, i);
		st->inner.pts.n = 0;
	}
	st->read_ms += gj_now_ms() - t0;
	st->phase = PH_BATCH;
}

/* Read the next outer batch; false when the outer plan had no more rows. */
static bool
ReadBatch(GjJoinState *st)
{
	GjSide	   *o = &st->outer;
	int64		budget = Max((GjHostMemoryLimit() - SideBytes(&st->inner)) / 2,
							 GJ_JOIN_MIN_BATCH_BYTES);
	bool		keep_never = st->jointype == JOIN_LEFT || st->jointype == JOIN_ANTI;
	double		t0 = gj_now_ms();
	int64		k = 0;

	ResetSide(o);
	if (o->ended)
		return false;
	if (st->kind == GJ_KEY_GEOGRAPHY)
		gj_points_init(&o->pts, 2);
	while (o->n < GJ_JOIN_BATCH_ROWS)
	{
		CHECK_FOR_INTERRUPTS();
		if (st->none)
		{
			/* d is NULL: rows only to come out unmatched */
			TupleTableSlot *slot = ExecProcNode(o->ps);

			if (TupIsNull(slot))
			{
				o->ended = true;
				break;
			}
			o->total++;
			if (keep_never)
				KeepTuple(o, slot);
			continue;
		}
		if (!ReadRow(st, o, keep_never))
			break;
		if ((++k & 1023) == 0 && SideBytes(o) > budget)
			break;
	}
	if (st->kind == GJ_KEY_GEOGRAPHY && !st->none && !st->fallback)
		GeographyPoints(st, &o->pts);
	st->matched = o->n > 0 ? MemoryContextAllocZero(o->cxt, o->n) : NULL;
	st->read_ms += gj_now_ms() - t0;
	return o->n > 0 || !o->ended;
}

/* --- the engine ---------------------------------------------------------- */

static void
AddStats(GjJoinState *st, const GjJobStats *js)
{
	st->js.read.ms += js->read.ms;
	st->js.engine = js->engine;
	st->js.threads = js->threads;
	st->js.index_ms += js->index_ms;
	st->js.join_ms += js->join_ms;
	st->js.wait_ms += js->wait_ms;
	st->js.emit_ms += js->emit_ms;
	st->js.rows_out += js->rows_out;
	st->js.batches += js->batches;
	if (js->tiles_method != NULL)
		st->js.tiles_method = js->tiles_method;
}

static void
EndJob(GjJoinState *st)
{
	GjJobStats	js;

	if (st->job == NULL)
		return;
	GjJobEnd(st->job, &js);
	st->job = NULL;
	AddStats(st, &js);
}

/* The eps join of this batch's engine rows with the inner side's. */
static void
StartBatchJob(GjJoinState *st)
{
	GjJobSpec	spec;

	st->batches++;
	if (st->outer.pts.n == 0 || st->inner.pts.n == 0)
		return;
	memset(&spec, 0, sizeof(spec));
	spec.fname = "GpuJoin";
	spec.shape = GJ_SHAPE_PAIRS;
	spec.has_query = true;
	spec.eps = st->eps;
	spec.eps2 = st->eps2;
	spec.metric = GJ_METRIC_L2;
	spec.use_spheroid = false;
	spec.filter_column = GJ_FILTER_NONE;
	spec.input.fname = spec.query.fname = "GpuJoin";
	spec.input.metric = spec.query.metric = GJ_METRIC_L2;
	spec.input.given = &st->inner.pts;
	spec.query.given = &st->outer.pts;
	st->job = GjJobStart(&spec, st->css.ss.ps.state->es_query_cxt, false);
}

/* --- pairs --------------------------------------------------------------- */

static void
LoadRow(GjSide *side, int64 row)
{
	if (side->loaded != row)
	{
		ExecStoreMinimalTuple(side->tup[row], side->slot, false);
		slot_getallattrs(side->slot);
		side->loaded = row;
	}
}

/* The scan tuple: outer row o's columns, then inner row i's (-1: NULLs). */
static TupleTableSlot *
ScanTuple(GjJoinState *st, int64 o, int64 i)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	int			nin = scan->tts_tupleDescriptor->natts - st->nouter;

	ExecClearTuple(scan);
	if (st->scan_outer != o)
	{
		LoadRow(&st->outer, o);
		memcpy(scan->tts_values, st->outer.slot->tts_values, sizeof(Datum) * st->nouter);
		memcpy(scan->tts_isnull, st->outer.slot->tts_isnull, sizeof(bool) * st->nouter);
		st->scan_outer = o;
	}
	if (st->scan_inner != i)
	{
		if (i < 0)
		{
			memset(scan->tts_isnull + st->nouter, true, sizeof(bool) * nin);
			memset(scan->tts_values + st->nouter, 0, sizeof(Datum) * nin);
		}
		else
		{
			LoadRow(&st->inner, i);
			memcpy(scan->tts_values + st->nouter, st->inner.slot->tts_values, sizeof(Datum) * nin);
			memcpy(scan->tts_isnull + st->nouter, st->inner.slot->tts_isnull, sizeof(bool) * nin);
		}
		st->scan_inner = i;
	}
	return ExecStoreVirtualTuple(scan);
}

static TupleTableSlot *
Project(GjJoinState *st)
{
	ProjectionInfo *proj = st->css.ss.ps.ps_ProjInfo;

	return proj != NULL ? ExecProject(proj) : st->css.ss.ss_ScanTupleSlot;
}

/*
 * Pair (o, i) decided by the join's quals: the output row, or NULL.  sq:
 * the engine's squared distance of the pair, or -1 (not the engine's).
 */
static TupleTableSlot *
JoinPair(GjJoinState *st, int64 o, int64 i, double sq)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	ExprState  *otherqual = st->css.ss.ps.qual;

	if ((st->jointype == JOIN_SEMI || st->jointype == JOIN_ANTI) && st->matched[o])
		return NULL;
	ResetExprContext(econtext);
	econtext->ecxt_scantuple = ScanTuple(st, o, i);
	if (sq >= 0 && sq < st->in2)
	{
		/* within d beyond doubt: the other quals decide */
		st->decided++;
		if (!ExecQual(st->restqual, econtext))
			return NULL;
	}
	else if (!ExecQual(st->joinqual, econtext))
		return NULL;
	st->matched[o] = true;
	if (st->jointype == JOIN_ANTI)
		return NULL;
	if (otherqual != NULL && !ExecQual(otherqual, econtext))
		return NULL;
	return Project(st);
}

/* The next pair of other rows with every row of the other side, or false. */
static bool
NextOtherPair(GjJoinState *st, int64 *o, int64 *i)
{
	GjSide	   *out = &st->outer,
			   *in = &st->inner;

	for (;;)
	{
		if (st->other_part == 0)
		{
			/* other outer rows x all inner rows */
			if (st->oi >= out->nother || in->n == 0)
			{
				st->other_part = 1;
				st->oi = st->ii = 0;
				continue;
			}
			*o = out->other[st->oi];
			*i = st->ii++;
			if (st->ii >= in->n)
			{
				st->ii = 0;
				st->oi++;
			}
			return true;
		}
		/* other inner rows x the outer engine rows (the rest were above) */
		if (st->ii >= in->nother || out->pts.n == 0)
			return false;
		*i = in->other[st->ii];
		*o = out->pts.ids[st->oi++];
		if (st->oi >= out->pts.n)
		{
			st->oi = 0;
			st->ii++;
		}
		return true;
	}
}

static TupleTableSlot *
GjJoinExec(CustomScanState *node)
{
	GjJoinState *st = (GjJoinState *) node;
	Datum		values[3];
	bool		nulls[3];
	bool		restarted;
	TupleTableSlot *res;
	int64		o,
				i;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		switch (st->phase)
		{
			case PH_START:
				st->t0 = gj_now_ms();
				StartScan(st);
				break;
			case PH_BATCH:
				if (!ReadBatch(st))
				{
					st->phase = PH_DONE;
					break;
				}
				st->scan_outer = st->scan_inner = -2;
				StartBatchJob(st);
				st->phase = PH_PAIRS;
				break;
			case PH_PAIRS:
				if (st->job == NULL || !GjJobNext(st->job, values, nulls, &restarted))
				{
					EndJob(st);
					st->phase = PH_OTHER;
					st->other_part = 0;
					st->oi = st->ii = 0;
					break;
				}
				st->candidates++;
				res = JoinPair(st, DatumGetInt64(values[0]), DatumGetInt64(values[1]),
							   DatumGetFloat8(values[2]) * DatumGetFloat8(values[2]));
				if (res != NULL)
					return res;
				break;
			case PH_OTHER:
				if (!NextOtherPair(st, &o, &i))
				{
					st->phase = PH_UNMATCHED;
					st->oi = 0;
					break;
				}
				st->other_pairs++;
				res = JoinPair(st, o, i, -1);
				if (res != NULL)
					return res;
				break;
			case PH_UNMATCHED:
				if ((st->jointype != JOIN_LEFT && st->jointype != JOIN_ANTI) ||
					st->oi >= st->outer.n)
				{
					st->phase = PH_BATCH;
					break;
				}
				o = st->oi++;
				if (!st->matched[o])
				{
					ExprContext *econtext = node->ss.ps.ps_ExprContext;

					ResetExprContext(econtext);
					econtext->ecxt_scantuple = ScanTuple(st, o, -1);
					if (node->ss.ps.qual == NULL || ExecQual(node->ss.ps.qual, econtext))
						return Project(st);
				}
				break;
			case PH_DONE:
				return ExecClearTuple(node->ss.ps.ps_ResultTupleSlot);
		}
	}
}

static void
GjJoinEnd(CustomScanState *node)
{
	GjJoinState *st = (GjJoinState *) node;

	EndJob(st);
	ResetSide(&st->outer);
	ResetSide(&st->inner);
	ExecEndNode(st->outer.ps);
	ExecEndNode(st->inner.ps);
}

static void
GjJoinReScan(CustomScanState *node)
{
	GjJoinState *st = (GjJoinState *) node;

	EndJob(st);
	ResetSide(&st->outer);
	ResetSide(&st->inner);
	st->outer.ended = st->inner.ended = false;
	st->phase = PH_START;
	if (st->outer.ps->chgParam == NULL)
		ExecReScan(st->outer.ps);
	if (st->inner.ps->chgParam == NULL)
		ExecReScan(st->inner.ps);
}

/* --- EXPLAIN ------------------------------------------------------------- */

static const char *
JoinTypeName(JoinType t)
{
	switch (t)
	{
		case JOIN_INNER:
			return "Inner";
		case JOIN_LEFT:
			return "Left";
		case JOIN_SEMI:
			return "Semi";
		case JOIN_ANTI:
			return "Anti";
		default:
			return "?";
	}
}

static void
GjJoinExplain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GjJoinState *st = (GjJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *ctx = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
	List	   *quals = (List *) list_nth(cscan->custom_exprs, GJ_JE_JOINQUALS);
	bool		prefix = es->verbose || list_length(es->rtable) > 1;

	ExplainPropertyText("Join Type", JoinTypeName(st->jointype), es);
	ExplainPropertyText("Distance", deparse_expression((Node *) st->clause, ctx, prefix, false), es);
	if (list_length(quals) > 1)
		ExplainPropertyText("Join Filter",
							deparse_expression((Node *) make_ands_explicit(quals), ctx,
											   prefix, false), es);
	if (!es->analyze || st->runs == 0)
	{
		ExplainPropertyText("Engine", GjPlannedEngine(GJ_SHAPE_PAIRS, true, false), es);
		return;
	}
	ExplainPropertyText("Engine", st->js.engine != NULL ? st->js.engine : "none", es);
	if (st->js.tiles_method != NULL)
		ExplainPropertyText("Tiles", st->js.tiles_method, es);
	if (st->runs > 1)
		ExplainPropertyInteger("Runs", NULL, st->runs, es);
	ExplainPropertyInteger("Outer Rows", NULL, st->outer.total, es);
	ExplainPropertyInteger("Inner Rows", NULL, st->inner.total, es);
	ExplainPropertyInteger("Batches", NULL, st->batches, es);
	ExplainPropertyInteger("Candidates", NULL, st->candidates, es);
	ExplainPropertyInteger("Decided By Distance", NULL, st->decided, es);
	if (st->other_pairs > 0 || es->verbose)
		ExplainPropertyInteger("Pairs Outside The Engine", NULL, st->other_pairs, es);
	if (es->timing)
	{
		ExplainPropertyFloat("Read Time", "ms", st->read_ms, 3, es);
		ExplainPropertyFloat("Index Time", "ms", st->js.index_ms, 3, es);
		ExplainPropertyFloat("Engine Time", "ms", st->js.join_ms, 3, es);
		ExplainPropertyFloat("Engine Wait Time", "ms", st->js.wait_ms, 3, es);
	}
}
