/*
 * exec.c
 *		What both kinds of GpuJoin do with their rows: read the inner side
 *		whole and the outer side in batches, keeping each row's tuple and
 *		its key's coordinates; run and end the engine's job; make the scan
 *		tuple of a pair.  The node itself is node.c.
 */
#include "postgres.h"

#include <math.h>

#include "commands/explain.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "storage/bufmgr.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"

#include "join/join_exec.h"
#include "machine.h"

/* Forget a side's rows (a new batch, a rescan). */
void
GjSideReset(GjSide *side)
{
	ExecClearTuple(side->slot);
	if (side->tid_ok)
		ExecClearTuple(((ScanState *) side->ps)->ss_ScanTupleSlot);	/* its buffer pin */
	side->held_row = -1;
	side->cur_src = NULL;
	if (side->pins != NULL)
	{
		for (BlockNumber b = 0; b < side->npins; b++)
			if (BufferIsValid(side->pins[b]))
				ReleaseBuffer(side->pins[b]);
		side->pins = NULL;		/* the array goes with cxt */
		side->npins = 0;
	}
	side->by_tid = false;
	side->tids = NULL;
	side->cur = NULL;
	side->by_cols = false;
	side->cvals = NULL;
	side->keybuf = NULL;		/* in cxt */
	side->key_row = -1;
	MemoryContextReset(side->cxt);	/* tup_cxt too, made again */
	side->tup_cxt = GenerationContextCreate(side->cxt, "GpuJoin rows", 0, 1024 * 1024,
											64 * 1024 * 1024);
	side->tup = NULL;
	side->n = side->cap = 0;
	side->other = side->never = NULL;
	side->nother = side->cap_other = 0;
	side->nnever = side->cap_never = 0;
	side->loaded = -1;
	gj_points_free(&side->pts);
	gj_points_init(&side->pts, 0);
}

/* --- reading ------------------------------------------------------------- */

/*
 * The rows the side's plan is expected to return (at least 1024, at most
 * a batch): its arrays start that large, not doubling their way up
 * (each doubling copied everything so far).
 */
static int64
ExpectedRows(GjSide *side)
{
	double		rows = side->ps->plan->plan_rows * 1.05;

	return (int64) Min(Max(rows, 1024.0), (double) GJ_JOIN_BATCH_ROWS);
}

static void
KeepTuple(GjSide *side, TupleTableSlot *slot)
{
	MemoryContext old = MemoryContextSwitchTo(side->cxt);

	if (side->n == side->cap)
	{
		side->cap = side->cap == 0 ? ExpectedRows(side) : side->cap * 2;
		side->tup = side->tup == NULL ? palloc(sizeof(MinimalTuple) * side->cap) :
			repalloc_huge(side->tup, sizeof(MinimalTuple) * side->cap);
	}
	MemoryContextSwitchTo(side->tup_cxt);
	side->tup[side->n++] = ExecCopySlotMinimalTuple(slot);
	MemoryContextSwitchTo(old);
}

static void
KeepIndex(GjSide *side, int64 **list, int64 *n, int64 *cap, int64 row)
{
	if (*n == *cap)
	{
		MemoryContext old = MemoryContextSwitchTo(side->cxt);

		*cap = *cap == 0 ? 256 : *cap * 2;
		*list = *list == NULL ? palloc(sizeof(int64) * *cap) :
			repalloc_huge(*list, sizeof(int64) * *cap);
		MemoryContextSwitchTo(old);
	}
	(*list)[(*n)++] = row;
}

void
GjSideKeepOther(GjSide *side, int64 row)
{
	KeepIndex(side, &side->other, &side->nother, &side->cap_other, row);
}

/* Which rows a key value is, its coordinates in st->row when an engine row. */
static GjRowClass
ClassifyKey(GjJoinState *st, TupleTableSlot *slot, AttrNumber key)
{
	bool		isnull;
	Datum		v = slot_getattr(slot, key, &isnull);
	int			dims = st->dims;
	int32		tag;

	if (isnull)
		return ROW_NEVER;		/* the predicate is strict; kNN: NULL sorts last */
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
	{
		/*
		 * No cosine distance (pgvector's NaN): it passes no finite d, and
		 * sorts after every number in an ORDER BY
		 */
		return st->what == GJ_JOIN_KNN ? ROW_OTHER : ROW_NEVER;
	}
	return ROW_ENGINE;
}

/*
 * Take one row of side's plan into its rows; false when it has no more.
 * A row that can never match is kept only with keep_never (an outer row
 * of a left or anti join, an inner row of a kNN join: NULLs sort last).
 */
bool
GjJoinReadRow(GjJoinState *st, GjSide *side, bool keep_never)
{
	TupleTableSlot *slot = ExecProcNode(side->ps);
	GjRowClass	c;

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
		if (side->pts.cap == 0)
			GjCheckStatus(gj_points_reserve(&side->pts, ExpectedRows(side)), "keeping a join row");
		GjCheckStatus(gj_points_push(&side->pts, side->n, st->row), "keeping a join row");
	}
	else if (c == ROW_OTHER)
		GjSideKeepOther(side, side->n);
	else
		KeepIndex(side, &side->never, &side->nnever, &side->cap_never, side->n);
	KeepTuple(side, slot);
	return true;
}

int64
GjSideBytes(GjSide *side)
{
	return (int64) MemoryContextMemAllocated(side->cxt, true) +
		side->pts.cap * (int64) (sizeof(double) * Max(side->pts.dims, 1) + sizeof(int64));
}

/* Geography: lon/lat rows as earth-centred points, d as a chord. */
void
GjJoinGeography(GjJoinState *st, gj_points *p)
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

/* Read the inner side whole, within gpujoin.host_memory_limit. */
bool
GjJoinReadInner(GjJoinState *st)
{
	int64		limit = GjHostMemoryLimit();
	int64		k = 0;
	double		t0 = gj_now_ms();

	bool		keep_never = st->what == GJ_JOIN_KNN ||
		(st->self_map != NULL && (st->jointype == JOIN_LEFT || st->jointype == JOIN_ANTI));

	/*
	 * By the parallel read, where the plan qualifies (a self join: both
	 * plans); rows that must come out unmatched or ranked (keep_never)
	 * only when it left none out
	 */
	if (!st->fallback && (st->self_map == NULL || st->outer.tid_ok) &&
		GjTidRead(st, &st->inner, limit, keep_never))
	{
		st->read_ms += gj_now_ms() - t0;
		return true;
	}
	while (GjJoinReadRow(st, &st->inner, keep_never))
	{
		CHECK_FOR_INTERRUPTS();
		if ((++k & 1023) == 0 && GjSideBytes(&st->inner) > limit)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("GpuJoin: the inner side's rows exceed gpujoin.host_memory_limit (%lld MB)",
							(long long) (limit / (1024 * 1024))),
					 errhint("Raise gpujoin.host_memory_limit, or SET gpujoin.enable_join = off to run this join as PostgreSQL plans it without gpujoin.")));
	}
	st->read_ms += gj_now_ms() - t0;
	return true;
}

/* Read the next outer batch; false when the outer plan had no more rows. */
bool
GjJoinReadBatch(GjJoinState *st)
{
	GjSide	   *o = &st->outer;
	int64		budget = Max((GjHostMemoryLimit() - GjSideBytes(&st->inner)) / 2,
							 GJ_JOIN_MIN_BATCH_BYTES);
	bool		keep_never = st->jointype == JOIN_LEFT || st->jointype == JOIN_ANTI ||
		st->what == GJ_JOIN_KNN;
	double		t0 = gj_now_ms();
	int64		k = 0;

	GjSideReset(o);
	if (o->ended)
		return false;
	if (st->self_map != NULL)
	{
		/* a self join: one batch, the inner side's rows */
		o->ended = true;
		st->matched = st->inner.n > 0 ? MemoryContextAllocZero(o->cxt, st->inner.n) : NULL;
		st->scan_outer = st->scan_inner = -2;
		return st->inner.n > 0;
	}
	if (!st->none && !st->fallback && !o->tid_tried && (o->tid_tried = true) &&
		GjTidRead(st, o, GjHostMemoryLimit() - GjSideBytes(&st->inner), keep_never))
	{
		/* the whole outer side by the parallel read: one batch */
		o->ended = true;
		k = -1;
	}
	if (st->kind == GJ_KEY_GEOGRAPHY && k >= 0)
		gj_points_init(&o->pts, 2);
	while (k >= 0 && o->n < GJ_JOIN_BATCH_ROWS)
	{
		CHECK_FOR_INTERRUPTS();
		if (st->none)
		{
			/* nothing can match: rows only to come out unmatched */
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
		if (!GjJoinReadRow(st, o, keep_never))
			break;
		if ((++k & 1023) == 0 && GjSideBytes(o) > budget)
			break;
	}
	if (st->kind == GJ_KEY_GEOGRAPHY && !st->none && !st->fallback)
		GjJoinGeography(st, &o->pts);
	st->matched = o->n > 0 ? MemoryContextAllocZero(o->cxt, o->n) : NULL;
	st->scan_outer = st->scan_inner = -2;
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
	if (js->knn_method != NULL)
		st->js.knn_method = js->knn_method;
}

void
GjJoinEndJob(GjJoinState *st)
{
	GjJobStats	js;

	if (st->job == NULL)
		return;
	GjJobEnd(st->job, &js);
	st->job = NULL;
	AddStats(st, &js);
}

/* --- the scan tuple ------------------------------------------------------ */

/* Start bringing row's tuple into the cache (rows kept in memory). */
void
GjSidePrefetch(GjSide *side, int64 row)
{
	if (side->tup != NULL && row >= 0 && row < side->n)
		__builtin_prefetch(side->tup[row]);
}

/* ... and, earlier, the pointer to it. */
void
GjSidePrefetchSlot(GjSide *side, int64 row)
{
	if (side->tup != NULL && row >= 0 && row < side->n)
		__builtin_prefetch(&side->tup[row]);
	else if (side->cvals != NULL && row >= 0 && row < side->n)
		__builtin_prefetch(&side->cvals[row]);
}

/* Row row of side in side->cur, its columns deformed. */
static void
LoadRow(GjJoinState *st, GjSide *side, int64 row)
{
	if (side->by_tid)
		(void) GjTidRow(st, side, row);
	else if (side->loaded != row)
	{
		side->cur = ExecStoreMinimalTuple(side->tup[row], side->slot, false);
		slot_getallattrs(side->cur);
		side->loaded = row;
	}
}

/*
 * The scan tuple: outer row o's columns, then inner row i's (-1: NULLs),
 * then (kNN) the subquery's output columns, NULL until knn.c sets them.
 */
/* The side whose carried rows make side's columns (a self join's outer: the inner), or NULL. */
static GjSide *
ColsRows(GjJoinState *st, GjSide *side)
{
	if (side->by_cols)
		return side;
	if (side == &st->outer && st->self_map != NULL && st->inner.by_cols)
		return &st->inner;
	return NULL;
}

/*
 * Before an expression that reads a carried key is evaluated on the scan
 * tuple (the join's quals on a pair the engine's distance left open, kNN's
 * ORDER BY keys): the keys made from their coordinates.
 */
void
GjJoinScanKeys(GjJoinState *st)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	GjSide	   *rows;

	if ((rows = ColsRows(st, &st->outer)) != NULL && st->outer.key_needed &&
		!st->outer.key_always && st->scan_outer >= 0)
	{
		scan->tts_values[st->outer.key - 1] = GjColsKey(&st->outer, rows, st->scan_outer);
		scan->tts_isnull[st->outer.key - 1] = false;
	}
	if (st->inner.by_cols && st->inner.key_needed && !st->inner.key_always &&
		st->scan_inner >= 0)
	{
		scan->tts_values[st->nouter + st->inner.key - 1] =
			GjColsKey(&st->inner, &st->inner, st->scan_inner);
		scan->tts_isnull[st->nouter + st->inner.key - 1] = false;
	}
}

TupleTableSlot *
GjJoinScanTuple(GjJoinState *st, int64 o, int64 i)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	GjSide	   *orows;
	int			nin = st->ninner;
	int			nrest = scan->tts_tupleDescriptor->natts - st->nouter - nin;

	/*
	 * A consumer that materialized the last row in place (CREATE TABLE AS
	 * stores it so) moved its values into memory the slot frees now: the
	 * values kept for the next row are gone with them
	 */
	if (TTS_SHOULDFREE(scan))
		st->scan_outer = st->scan_inner = -2;
	ExecClearTuple(scan);
	if ((orows = ColsRows(st, &st->outer)) != NULL)
	{
		/* rows carried by the read: no tuples */
		if (st->scan_outer != o)
		{
			GjColsValues(&st->outer, orows, o, scan->tts_values, scan->tts_isnull);
			st->scan_outer = o;
		}
		if (st->scan_inner != i && i >= 0 && st->inner.by_cols)
		{
			GjColsValues(&st->inner, &st->inner, i, scan->tts_values + st->nouter,
						 scan->tts_isnull + st->nouter);
			st->scan_inner = i;
		}
	}
	else if (st->self_map != NULL && st->inner.by_tid && i >= 0)
	{
		/*
		 * A self join's rows by ctid: either row may be projected from the
		 * other side's scan slot (GjTidRow), so loading one can drop the
		 * other: load until both hold, then take both (two rounds at most)
		 */
		for (int round = 0; round < 3; round++)
		{
			GjTidRow(st, &st->outer, o);
			GjTidRow(st, &st->inner, i);
			if (st->outer.loaded == o)
				break;
		}
		Assert(st->outer.loaded == o && st->inner.loaded == i);
		memcpy(scan->tts_values, st->outer.cur->tts_values, sizeof(Datum) * st->nouter);
		memcpy(scan->tts_isnull, st->outer.cur->tts_isnull, sizeof(bool) * st->nouter);
		memcpy(scan->tts_values + st->nouter, st->inner.cur->tts_values, sizeof(Datum) * nin);
		memcpy(scan->tts_isnull + st->nouter, st->inner.cur->tts_isnull, sizeof(bool) * nin);
		st->scan_outer = st->scan_inner = -2;	/* not cached: either may go */
		if (nrest > 0)
			memset(scan->tts_isnull + st->nouter + nin, true, sizeof(bool) * nrest);
		return ExecStoreVirtualTuple(scan);
	}
	if (st->scan_outer != o && st->self_map != NULL && st->inner.by_tid)
		elog(ERROR, "GpuJoin: a self join's row read by ctid without a pair");
	else if (st->scan_outer != o && st->self_map != NULL)
	{
		/* a self join's outer row: an inner row, its columns as the outer's */
		TupleTableSlot *os = st->outer.slot;

		if (st->outer.loaded != o)
		{
			ExecStoreMinimalTuple(st->inner.tup[o], os, false);
			slot_getallattrs(os);
			st->outer.loaded = o;
		}
		for (int j = 0; j < st->nouter; j++)
		{
			scan->tts_values[j] = os->tts_values[st->self_map[j] - 1];
			scan->tts_isnull[j] = os->tts_isnull[st->self_map[j] - 1];
		}
		st->scan_outer = o;
	}
	else if (st->scan_outer != o)
	{
		LoadRow(st, &st->outer, o);
		memcpy(scan->tts_values, st->outer.cur->tts_values, sizeof(Datum) * st->nouter);
		memcpy(scan->tts_isnull, st->outer.cur->tts_isnull, sizeof(bool) * st->nouter);
		st->scan_outer = o;
	}
	if (st->scan_inner != i)
	{
		if (i >= 0 && st->inner.by_cols)
			GjColsValues(&st->inner, &st->inner, i, scan->tts_values + st->nouter,
						 scan->tts_isnull + st->nouter);
		else if (i < 0)
		{
			memset(scan->tts_isnull + st->nouter, true, sizeof(bool) * nin);
			memset(scan->tts_values + st->nouter, 0, sizeof(Datum) * nin);
		}
		else
		{
			LoadRow(st, &st->inner, i);
			memcpy(scan->tts_values + st->nouter, st->inner.cur->tts_values, sizeof(Datum) * nin);
			memcpy(scan->tts_isnull + st->nouter, st->inner.cur->tts_isnull, sizeof(bool) * nin);
		}
		st->scan_inner = i;
	}
	if (nrest > 0)
		memset(scan->tts_isnull + st->nouter + nin, true, sizeof(bool) * nrest);
	return ExecStoreVirtualTuple(scan);
}

TupleTableSlot *
GjJoinProject(GjJoinState *st)
{
	ProjectionInfo *proj = st->css.ss.ps.ps_ProjInfo;

	return proj != NULL ? ExecProject(proj) : st->css.ss.ss_ScanTupleSlot;
}

/* Outer row o null-extended, if the plan's qual passes it (left, anti). */
TupleTableSlot *
GjJoinUnmatched(GjJoinState *st, int64 o)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	ExprState  *qual = st->css.ss.ps.qual;

	ResetExprContext(econtext);
	econtext->ecxt_scantuple = GjJoinScanTuple(st, o, -1);
	if (qual == NULL || ExecQual(qual, econtext))
		return GjJoinProject(st);
	return NULL;
}

