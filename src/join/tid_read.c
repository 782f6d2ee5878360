/*
 * tid_read.c
 *		A side of a distance join read by the parallel read: the keys with
 *		their rows' ctids, and a row's tuple fetched by its ctid only when
 *		a pair needs it.
 *
 * Reading a side through its plan costs what the executor costs per row
 * (the scan, a copy of each tuple, the key decoded), on one core: on the
 * GPU host 450 ns a row of vector(16) and 1.6 us of vector(128), 1.8 s of
 * a 2M x 2M join whose engine takes 1.3 s, where eps_join reads the same
 * rows with parallel workers in 0.16 s (read/parallel_read.c).  A side
 * that is a plain sequential scan of a table is read that way here:
 * SELECT gpujoin_pack(token, ctid, key) FROM table, as the caller, under
 * the query's own snapshot.  Its rows are then their ctids, and a pair's
 * tuple is fetched by ctid through the side's own scan slot and
 * projection, so the pair sees the tuple the scan would have returned.  A
 * fetch costs a buffer lookup (a few cache misses): it pays where pairs
 * are fewer than rows, as in distance joins; the LATERAL kNN join, which
 * touches every row k times, keeps reading through its plan.
 *
 * A side qualifies when
 *	- the statement is a SELECT with no data-modifying CTE and no row
 *	  marks, under an MVCC snapshot, outside parallel workers, and the
 *	  gpujoin extension is installed (its pack aggregate);
 *	- its plan is a SeqScan with no filter, of a heap table or materialized view
 *	  without inheritance children and without row-level security in force,
 *	  checked as the current user (not through a view's owner), who holds
 *	  SELECT on the whole table;
 *	- its key is a pgvector vector or halfvec column with declared
 *	  dimensions (every value one the engine takes: pgvector stores no NaN),
 *	  or a PostGIS geometry or geography column declared as 2-D points of
 *	  one SRID (an empty or non-finite point sends the side back to its
 *	  plan: the reader counts it);
 *	- the plan expects gpujoin.parallel_read_min_rows rows or more (-1:
 *	  never), and their keys fit in gpujoin.host_memory_limit.
 * A NULL key (a zero vector under <=>) never passes the predicate and is
 * left out, so only a side whose rows come out only with a match is read
 * this way: the inner side, or the outer side of an inner or semi join.
 */
#include "postgres.h"

#include "compat.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/parallel.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_inherits.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"

#include "join/join_exec.h"
#include "machine.h"
#include "read/read.h"

/* The key's column in the table, when the side's plan can be read by ctid. */
static AttrNumber
HeapKeyColumn(GjSide *side)
{
	Plan	   *plan = side->ps->plan;
	TargetEntry *tle;
	Var		   *v;

	if (side->key < 1 || side->key > list_length(plan->targetlist))
		return InvalidAttrNumber;
	tle = list_nth_node(TargetEntry, plan->targetlist, side->key - 1);
	if (!IsA(tle->expr, Var))
		return InvalidAttrNumber;
	v = (Var *) tle->expr;
	if (v->varno != ((Scan *) plan)->scanrelid || v->varattno < 1)
		return InvalidAttrNumber;
	return v->varattno;
}

/* The schema gpujoin is installed in, or InvalidOid. */
Oid
GjGpujoinSchema(void)
{
	Relation	r = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("gpujoin"));
	scan = systable_beginscan(r, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(r, AccessShareLock);
	return nsp;
}

/* Whether column att of relid is declared NOT NULL. */
static bool
AttNotNull(Oid relid, AttrNumber att)
{
	HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(att));
	bool		notnull = false;

	if (HeapTupleIsValid(tup))
	{
		notnull = ((Form_pg_attribute) GETSTRUCT(tup))->attnotnull;
		ReleaseSysCache(tup);
	}
	return notnull;
}

/*
 * Whether the read can carry every column side's plan returns: the key,
 * and at most one other column, NOT NULL, of an integer type (read as the
 * rows' ids).  Then no tuple is ever fetched (side->cols_ok).
 */
static void
ColumnsCarried(GjSide *side, Oid relid, AttrNumber key_att)
{
	Plan	   *plan = side->ps->plan;
	Index		scanrelid = ((Scan *) plan)->scanrelid;
	int			j = 0;
	ListCell   *lc;

	side->cols_ok = false;
	side->carry_att = 0;
	side->key_pos = side->carry_pos = -1;
	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *v = (Var *) tle->expr;
		Oid			t;

		if (!IsA(v, Var) || v->varno != scanrelid || v->varattno < 1)
			return;
		if (v->varattno == key_att && side->key_pos < 0)
			side->key_pos = j++;
		else
		{
			t = getBaseType(get_atttype(relid, v->varattno));
			if (side->carry_att != 0 || v->varattno == key_att ||
				(t != INT2OID && t != INT4OID && t != INT8OID) || !AttNotNull(relid, v->varattno))
				return;
			side->carry_att = v->varattno;
			side->carry_type = t;
			side->carry_pos = j++;
		}
	}
	side->cols_ok = true;
}

/*
 * Whether the node's expressions read side's key (needed), and whether
 * one evaluated on every scan tuple does (always): a key made from the
 * coordinates must be a vector's under <-> (a cosine join's coordinates
 * are normalised) or a geometry point's (x, y and the declared SRID; a
 * geography's are made earth-centred).
 */
void
GjColsKeyUse(GjJoinState *st, GjSide *side, bool needed, bool always)
{
	side->key_needed = needed;
	side->key_always = always;
	side->key_kind = st->kind;
	if (needed && !(st->kind == GJ_KEY_VECTOR && st->metric == GJ_JM_L2) &&
		st->kind != GJ_KEY_GEOMETRY)
		side->cols_ok = false;
}

/* The key of rows' row as a vector value, made in layout's buffer. */
Datum
GjColsKey(GjSide *layout, GjSide *rows, int64 row)
{
	const double *x = rows->pts.x + row * rows->pts.dims;

	if (layout->keybuf == NULL)
		layout->keybuf = MemoryContextAlloc(layout->cxt,
											Max(VARHDRSZ + 4 + sizeof(float4) * rows->pts.dims,
												GJ_POSTGIS_POINT_SIZE));
	if (layout->key_row != row)
	{
		if (layout->key_kind == GJ_KEY_GEOMETRY)
			GjPostgisPointFromXY(x[0], x[1], rows->tid_srid, layout->keybuf);
		else
			GjPgvectorFromFloat8(x, rows->pts.dims, layout->keybuf);
		layout->key_row = row;
	}
	return PointerGetDatum(layout->keybuf);
}

/*
 * The columns of layout's plan for row of rows (layout itself, or a self
 * join's inner side for its outer plan): the carried integer, and the key
 * where it is needed on every scan tuple (else NULL until GjJoinScanKeys).
 */
void
GjColsValues(GjSide *layout, GjSide *rows, int64 row, Datum *values, bool *isnull)
{
	int			j = layout->carry_pos;

	if (layout->key_pos >= 0)
	{
		isnull[layout->key_pos] = !layout->key_always;
		values[layout->key_pos] = layout->key_always ? GjColsKey(layout, rows, row) : (Datum) 0;
	}
	if (j < 0)
		return;
	isnull[j] = false;
	if (layout->carry_type == INT4OID)
		values[j] = Int32GetDatum((int32) rows->cvals[row]);
	else if (layout->carry_type == INT8OID)
		values[j] = Int64GetDatum(rows->cvals[row]);
	else
		values[j] = Int16GetDatum((int16) rows->cvals[row]);
}

/*
 * Whether side's plan can be read by ctid (the static conditions above);
 * at the node's start.
 */
void
GjTidInit(GjJoinState *st, GjSide *side)
{
	EState	   *estate = side->ps->state;
	PlannedStmt *stmt = estate->es_plannedstmt;
	ScanState  *ss;
	Relation	rel;
	RangeTblEntry *rte;
	Oid			relid,
				t,
				coll;
	int32		typmod;
	AttrNumber	att;
	GjKeyKind	kind;

	side->tid_ok = false;
	if (!IsA(side->ps, SeqScanState) || side->ps->plan->qual != NIL ||
		stmt == NULL || stmt->commandType != CMD_SELECT || stmt->hasModifyingCTE ||
		stmt->rowMarks != NIL || IsParallelWorker() ||
		estate->es_snapshot == NULL || !IsMVCCSnapshot(estate->es_snapshot))
		return;
	ss = (ScanState *) side->ps;
	rel = ss->ss_currentRelation;
	relid = RelationGetRelid(rel);
	if ((rel->rd_rel->relkind != RELKIND_RELATION && rel->rd_rel->relkind != RELKIND_MATVIEW) ||
		rel->rd_tableam != GetHeapamTableAmRoutine() ||
		!TTS_IS_BUFFERTUPLE(ss->ss_ScanTupleSlot) ||
		has_subclass(relid) ||
		check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED ||
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		return;
	rte = exec_rt_fetch(((Scan *) side->ps->plan)->scanrelid, estate);
	if (OidIsValid(GjRteCheckAsUser(rte, estate)) && GjRteCheckAsUser(rte, estate) != GetUserId())
		return;
	att = HeapKeyColumn(side);
	if (att == InvalidAttrNumber)
		return;
	get_atttypetypmodcoll(relid, att, &t, &typmod, &coll);
	if (!GjKeyKindOf(getBaseType(t), &kind) || kind != st->kind)
		return;
	if (kind == GJ_KEY_GEOMETRY || kind == GJ_KEY_GEOGRAPHY)
	{
		/* 2-D points of one SRID, by the column's declaration */
		if (!GjPointTypmod(typmod, &side->tid_srid))
			return;
		typmod = 2;
	}
	else if (typmod < 1 || typmod > GJ_MAX_DIMS)
		return;
	side->tid_nsp = GjGpujoinSchema();
	side->tid_att = att;
	side->tid_dims = typmod;
	side->tid_ok = OidIsValid(side->tid_nsp);
	if (side->tid_ok)
		ColumnsCarried(side, relid, att);
}

/*
 * Fetching tuples by ctid pays where pairs are few against the rows read:
 * a fetch costs about what reading a row through the plan does (0.3-0.5
 * us), two a candidate.  Measured on the 2-core machine, 2.07M PostGIS
 * rows: 56K candidates, fetched 0.77 s against 1.11 s through the plans;
 * 1.42M candidates, 2.40 s against 1.57 s.  Where the planner has no
 * estimate (pgvector's operators), similarity joins are taken as sparse.
 */
#define GJ_FETCH_SHARE 3.0

/* The rows both sides' plans expect (a self join: its one table). */
static double
RowsRead(GjJoinState *st)
{
	return st->inner.ps->plan->plan_rows +
		(st->self_map != NULL ? 0 : st->outer.ps->plan->plan_rows);
}

/*
 * Read side's rows by the parallel read: true with side->by_tid set and
 * its rows in pts (ids: row numbers) and tids; false, side untouched, when
 * it does not qualify now (too few or too many rows, keys the engine
 * would not take alongside the other side's).  budget: bytes its rows may
 * take.
 */
bool
GjTidRead(GjJoinState *st, GjSide *side, int64 budget, bool exact)
{
	ScanState  *ss = (ScanState *) side->ps;
	Relation	rel = ss->ss_currentRelation;
	double		rows = side->ps->plan->plan_rows;
	int			min_rows = GjParallelReadMinRows();
	GjInputSpec spec;
	GjReadStats rs;
	Datum		col;
	gj_points  *p = &side->pts;
	int64		w = 0;
	MemoryContext old;

	bool		cols = side->cols_ok;
	bool		postgis = st->kind == GJ_KEY_GEOMETRY || st->kind == GJ_KEY_GEOGRAPHY;

	/*
	 * A kNN join touches each row k times: only without fetches; a self
	 * join's unmatched rows, only from carried columns (GjJoinScanTuple);
	 * PostGIS points of another SRID than the other side's: PostGIS's
	 * error, through the plan.  The plan's estimate of the rows, with room
	 * to spare as the reader's own check has.
	 */
	if (((st->what == GJ_JOIN_KNN || (exact && st->self_map != NULL)) && !cols) ||
		(!cols && st->est_cand >= 0 && st->est_cand * GJ_FETCH_SHARE > RowsRead(st)) ||
		(postgis && st->tag_set && st->tag != side->tid_srid) ||
		!side->tid_ok || min_rows < 0 || rows < min_rows ||
		(st->dims != 0 && st->dims != side->tid_dims) ||
		rows * 1.25 * (8.0 * side->tid_dims + sizeof(int64) + sizeof(ItemPointerData)) >
		(double) budget)
		return false;

	memset(&spec, 0, sizeof(spec));
	memset(&rs, 0, sizeof(rs));
	spec.fname = "GpuJoin";
	/*
	 * A cosine join's rows normalised by the read (its workers, as
	 * ClassifyKey would, gj_normalize_row), the zero rows left out and
	 * counted; carried rows keep the value's own coordinates (cols is
	 * never a cosine join's where the key is needed: GjColsKeyUse)
	 */
	spec.metric = st->metric == GJ_JM_COSINE ? GJ_METRIC_COSINE : GJ_METRIC_L2;
	spec.nsp = side->tid_nsp;
	spec.relid = RelationGetRelid(rel);
	col = CStringGetTextDatum(get_attname(spec.relid, side->tid_att, false));
	spec.cols = construct_array(&col, 1, TEXTOID, -1, false, TYPALIGN_INT);
	spec.quiet = true;
	if (cols && side->carry_att != 0)
		spec.id_col = cstring_to_text(get_attname(spec.relid, side->carry_att, false));
	else
		spec.row_ids = true;

	gj_points_free(p);
	gj_points_init(p, 0);
	PushActiveSnapshot(side->ps->state->es_snapshot);
	GjReadPoints(&spec, p, &rs);
	PopActiveSnapshot();
	if (rs.nonfinite > 0 || (exact && rs.skipped > 0) || (p->n > 0 && p->dims != side->tid_dims))
	{
		/* not every key an engine row: the plan reads them (not expected) */
		gj_points_free(p);
		gj_points_init(p, 0);
		return false;
	}

	/* the rows' ctids (or carried column), and row numbers for ids */
	old = MemoryContextSwitchTo(side->cxt);
	if (cols)
		side->cvals = p->n > 0 ? palloc_extended(sizeof(int64) * p->n, MCXT_ALLOC_HUGE) : NULL;
	else
		side->tids = p->n > 0 ? palloc_extended(sizeof(ItemPointerData) * p->n, MCXT_ALLOC_HUGE) : NULL;
	MemoryContextSwitchTo(old);
	for (int64 i = 0; i < p->n; i++)
	{
		int64		id = p->ids[i];
		double	   *x = p->x + i * p->dims;

		if ((i & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
		if (w != i)
			memcpy(p->x + w * p->dims, x, sizeof(double) * p->dims);
		if (cols)
			side->cvals[w] = id;
		else
			ItemPointerSet(&side->tids[w], (BlockNumber) (id >> 16), (OffsetNumber) (id & 0xffff));
		p->ids[w] = w;
		w++;
	}
	p->n = w;
	side->n = w;
	side->total += rs.rows;
	side->tid_rows += rs.rows;
	side->tid_workers = Max(side->tid_workers, rs.workers);
	if (st->dims == 0)
		st->dims = side->tid_dims;
	if (postgis)
	{
		/* the rows' SRID, as ClassifyKey takes the first row's */
		st->tag = side->tid_srid;
		st->tag_set = true;
	}
	if (cols)
	{
		side->by_cols = true;
		side->key_row = -1;
		return true;
	}
	side->by_tid = true;

	/*
	 * A table of at most a quarter of shared_buffers keeps each page
	 * pinned from its first fetch to the scan's end: a fetch is then a
	 * line pointer away, where a buffer lookup, a pin and a content lock
	 * cost more than the rest of a pair (2M x 2M 16-D on the GPU host).
	 */
	{
		BlockNumber nblocks = RelationGetNumberOfBlocks(rel);

		if (nblocks > 0 && nblocks <= (BlockNumber) (NBuffers / 4))
		{
			old = MemoryContextSwitchTo(side->cxt);
			side->pins = palloc0(sizeof(Buffer) * nblocks);
			side->npins = nblocks;
			MemoryContextSwitchTo(old);
		}
	}
	return true;
}

/*
 * The tuple at tid into the buffer slot scan, under snapshot: what
 * heap_fetch does, but a row on the page the slot already holds costs no
 * buffer lookup (pairs.c takes the outer rows in ctid order).  The
 * relation's predicate lock was taken by the read's scan.
 */
static bool
FetchHeapTuple(Relation rel, ItemPointer tid, Snapshot snapshot, TupleTableSlot *scan,
			   GjSide *pinned)
{
	BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) scan;
	HeapTuple	tuple = &bslot->base.tupdata;
	BlockNumber blk = ItemPointerGetBlockNumber(tid);
	OffsetNumber off = ItemPointerGetOffsetNumber(tid);
	Buffer		buf;
	Page		page;
	ItemId		lp;
	bool		valid = false;

	if (pinned->pins != NULL && blk < pinned->npins)
	{
		/*
		 * A page pinned since before its line pointer is read cannot be
		 * pruned or defragmented under us (that needs a cleanup lock), and
		 * the row is visible: the read found it under this snapshot
		 */
		if (!BufferIsValid(pinned->pins[blk]))
			pinned->pins[blk] = ReadBuffer(rel, blk);
		buf = pinned->pins[blk];
		page = BufferGetPage(buf);
		if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page) ||
			!ItemIdIsNormal(PageGetItemId(page, off)))
			return false;
		lp = PageGetItemId(page, off);
		tuple->t_data = (HeapTupleHeader) PageGetItem(page, lp);
		tuple->t_len = ItemIdGetLength(lp);
		tuple->t_tableOid = RelationGetRelid(rel);
		tuple->t_self = *tid;
		ExecStoreBufferHeapTuple(tuple, scan, buf);
		return true;
	}
	if (!TTS_EMPTY(scan) && BufferIsValid(bslot->buffer) &&
		BufferGetBlockNumber(bslot->buffer) == blk)
	{
		buf = bslot->buffer;
		IncrBufferRefCount(buf);
	}
	else
		buf = ReadBuffer(rel, blk);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (off >= FirstOffsetNumber && off <= PageGetMaxOffsetNumber(page))
	{
		lp = PageGetItemId(page, off);
		if (ItemIdIsNormal(lp))
		{
			tuple->t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tuple->t_len = ItemIdGetLength(lp);
			tuple->t_tableOid = RelationGetRelid(rel);
			tuple->t_self = *tid;
			valid = HeapTupleSatisfiesVisibility(tuple, snapshot, buf);
		}
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	if (!valid)
	{
		ReleaseBuffer(buf);
		return false;
	}
	ExecStorePinnedBufferHeapTuple(tuple, scan, buf);
	return true;
}

/*
 * Row row of side (a self join's outer side: of the inner side's rows)
 * as side's plan would return it, its columns deformed: fetched under the
 * query's snapshot into the plan's scan slot, through the plan's
 * projection.  A self join takes each pair both ways round: the second
 * time, each row's tuple is in the other side's scan slot already, and is
 * projected from there.  A scan slot keeps its buffer pinned until the
 * next fetch or the side's reset; what was projected from it is forgotten
 * when it takes another tuple.
 */
TupleTableSlot *
GjTidRow(GjJoinState *st, GjSide *side, int64 row)
{
	GjSide	   *other = side == &st->outer ? &st->inner : &st->outer;
	GjSide	   *src;
	ScanState  *ss;
	ProjectionInfo *proj = ((ScanState *) side->ps)->ps.ps_ProjInfo;
	ExprContext *econtext;

	if (side->loaded == row)
		return side->cur;
	if (st->self_map != NULL && other->held_row == row)
		src = other;
	else if (side->held_row == row)
		src = side;
	else
	{
		ItemPointer tid = &(st->self_map != NULL ? st->inner.tids : side->tids)[row];

		ss = (ScanState *) side->ps;
		if (other->cur_src == side)
		{
			/* the other side's row was made from this slot's tuple */
			other->loaded = -1;
			other->cur_src = NULL;
			if (other == &st->outer)
				st->scan_outer = -2;
			else
				st->scan_inner = -2;
		}
		side->held_row = -1;
		if (!FetchHeapTuple(ss->ss_currentRelation, tid, ss->ps.state->es_snapshot,
							ss->ss_ScanTupleSlot, st->self_map != NULL ? &st->inner : side))
			elog(ERROR, "GpuJoin: row (%u,%u) of \"%s\", read by the same snapshot, is not there",
				 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
				 RelationGetRelationName(ss->ss_currentRelation));
		side->fetches++;
		side->held_row = row;
		src = side;
	}
	ss = (ScanState *) src->ps;
	if (proj == NULL)
		side->cur = ss->ss_ScanTupleSlot;
	else
	{
		econtext = ((ScanState *) side->ps)->ps.ps_ExprContext;
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = ss->ss_ScanTupleSlot;
		side->cur = ExecProject(proj);
	}
	slot_getallattrs(side->cur);
	side->cur_src = src;
	side->loaded = row;
	return side->cur;
}
