/*
 * pairs.c
 *		The distance join: the inner side into an eps join's index, the
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

#include "compat.h"

#include <math.h>

#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"

#include "join/join_exec.h"

/*
 * Whether a self join's quals fail each row paired with itself: one of
 * them compares a column of the outer row with the same column of the
 * inner by an operator that no value has with itself (a btree opfamily's
 * < or >, or the negator of its =: a.id < b.id, a.id <> b.id).  Then the
 * diagonal is not even looked at.
 */
static bool
DiagonalNever(GjJoinState *st)
{
	CustomScan *cscan = (CustomScan *) st->css.ss.ps.plan;
	List	   *quals = (List *) list_nth(cscan->custom_exprs, GJ_JE_JOINQUALS);
	ListCell   *lc;

	foreach(lc, quals)
	{
		OpExpr	   *op = lfirst(lc);
		Node	   *l,
				   *r;
		int			lo,
					ri;
		ListCell   *lc2;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		l = strip_implicit_coercions(linitial(op->args));
		r = strip_implicit_coercions(lsecond(op->args));
		if (!IsA(l, Var) || !IsA(r, Var) ||
			((Var *) l)->varno != INDEX_VAR || ((Var *) r)->varno != INDEX_VAR)
			continue;
		lo = ((Var *) l)->varattno;
		ri = ((Var *) r)->varattno;
		if (lo > st->nouter)
		{
			int			t = lo;

			lo = ri;
			ri = t;
		}
		if (lo < 1 || lo > st->nouter || ri <= st->nouter || ri > st->nouter + st->ninner ||
			st->self_map[lo - 1] != ri - st->nouter)
			continue;
		foreach(lc2, GjOpInterpretations(op->opno))
		{
			GjOpInterpretation *bi = lfirst(lc2);

			if (GjOpIsLess(bi) || GjOpIsGreater(bi) || GjOpIsNotEqual(bi))
				return true;
		}
	}
	return false;
}

/*
 * The engine's eps (and its square) over the predicate's d, with the
 * margins above, so that no pair the predicate accepts is left out; and
 * in2, the squared distance under which it surely accepts (-1: none).
 * Planar, L2 and cosine (geography's come from its chord); dims: the rows'.
 */
void
GjJoinMargins(GjJoinMetric metric, double d, int dims, double *eps, double *eps2, double *in2)
{
	double		gam = (dims + 4) * ldexp(1.0, -24);

	*in2 = -1;
	switch (metric)
	{
		case GJ_JM_PLANAR:
			*eps = d * (1 + 1e-9);
			*eps2 = *eps * *eps;
			*in2 = d * (1 - 1e-9) * d * (1 - 1e-9);
			break;
		case GJ_JM_L2:
			*eps2 = (d * d * (1 + 1e-12) + dims * 1e-44) / (1 - gam) * (1 + 1e-12);
			*eps = sqrt(*eps2);
			*in2 = (d * d * (1 - 1e-9) - dims * 1e-44) / (1 + gam) * (1 - 1e-12);
			break;
		case GJ_JM_COSINE:
			*eps2 = 2.0 * (d + 4.0 * gam) + 1e-9;
			*eps = sqrt(*eps2);
			*in2 = 2.0 * (d - 4.0 * gam) - 1e-9;
			break;
		default:
			elog(ERROR, "gpujoin: no margins of metric %d", (int) metric);
	}
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
	st->diag_never = st->self_map != NULL && DiagonalNever(st);
	st->nheld = st->iheld = 0;
	if (st->none)
	{
		/* nothing can match: the inner side is not even needed */
		st->inner.ended = true;
		st->phase = PH_BATCH;
		return;
	}
	GjJoinReadInner(st);
	if (st->kind == GJ_KEY_GEOGRAPHY && !st->fallback)
		GjJoinGeography(st, &st->inner.pts);

	/* eps over d with the margin of the predicate's rounding */
	if (!st->fallback)
	{
		if (st->metric == GJ_JM_GEODESIC || st->metric == GJ_JM_SPHERE)
		{
			st->eps = st->geo.out_min;
			st->eps2 = st->eps * st->eps;
			st->in2 = st->geo.in_max * st->geo.in_max;
		}
		else
			GjJoinMargins(st->metric, st->d, st->dims, &st->eps, &st->eps2, &st->in2);
		if (!isfinite(st->eps2) || !(st->eps2 >= 0) || st->dims > GJ_MAX_DIMS)
			st->fallback = true;
	}
	if (st->fallback)
	{
		/* every inner row an other row */
		st->inner.nother = 0;
		for (int64 i = 0; i < st->inner.n; i++)
			GjSideKeepOther(&st->inner, i);
		st->inner.pts.n = 0;
	}
	st->phase = PH_BATCH;
}

/* The eps join of this batch's engine rows with the inner side's. */
static void
StartBatchJob(GjJoinState *st)
{
	GjJobSpec	spec;

	st->batches++;
	st->self_pend = false;
	if ((st->self_map == NULL && st->outer.pts.n == 0) || st->inner.pts.n == 0)
		return;
	memset(&spec, 0, sizeof(spec));
	spec.fname = "GpuJoin";
	spec.shape = GJ_SHAPE_PAIRS;
	spec.has_query = st->self_map == NULL;	/* a self join: each pair once, a < b */
	spec.eps = st->eps;
	spec.eps2 = st->eps2;
	spec.metric = GJ_METRIC_L2;
	spec.use_spheroid = false;
	spec.filter_column = GJ_FILTER_NONE;
	spec.input.fname = spec.query.fname = "GpuJoin";
	spec.input.metric = spec.query.metric = GJ_METRIC_L2;
	spec.input.given = &st->inner.pts;
	if (spec.has_query)
		spec.query.given = &st->outer.pts;
	st->job = GjJobStart(&spec, st->css.ss.ps.state->es_query_cxt, false);
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
	econtext->ecxt_scantuple = GjJoinScanTuple(st, o, i);
	if (sq >= 0 && sq < st->in2)
	{
		/* within d beyond doubt: the other quals decide */
		st->decided++;
		if (!ExecQual(st->restqual, econtext))
			return NULL;
	}
	else
	{
		GjJoinScanKeys(st);		/* carried keys, for the predicate */
		if (!ExecQual(st->joinqual, econtext))
			return NULL;
	}
	st->matched[o] = true;
	if (st->jointype == JOIN_ANTI)
		return NULL;
	if (otherqual != NULL && !ExecQual(otherqual, econtext))
		return NULL;
	return GjJoinProject(st);
}

/* The next pair of other rows with every row of the other side, or false. */
static bool
NextOtherPair(GjJoinState *st, int64 *o, int64 *i)
{
	GjSide	   *out = st->self_map != NULL ? &st->inner : &st->outer,
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

static int
CompareHeld(const void *a, const void *b)
{
	const GjHeldPair *x = a,
			   *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i ? 1 : 0;
}

/*
 * The engine's next pairs, up to GJ_HELD_PAIRS, sorted by the outer row's
 * ctid; false when it has no more.
 */
static bool
HoldPairs(GjJoinState *st)
{
	Datum		values[3];
	bool		nulls[3];
	bool		restarted;

	if (st->held == NULL)
		st->held = MemoryContextAlloc(st->css.ss.ps.state->es_query_cxt,
									  sizeof(GjHeldPair) * GJ_HELD_PAIRS);
	st->nheld = st->iheld = 0;
	while (st->job != NULL && st->nheld < GJ_HELD_PAIRS &&
		   GjJobNext(st->job, values, nulls, &restarted))
	{
		GjHeldPair *h = &st->held[st->nheld++];
		ItemPointer tid;

		h->o = DatumGetInt64(values[0]);
		h->i = DatumGetInt64(values[1]);
		h->sq = DatumGetFloat8(values[2]) * DatumGetFloat8(values[2]);
		tid = &st->outer.tids[h->o];
		h->key = ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
			ItemPointerGetOffsetNumberNoCheck(tid);
	}
	if (st->nheld > 1)
		qsort(st->held, st->nheld, sizeof(GjHeldPair), CompareHeld);
	return st->nheld > 0;
}

TupleTableSlot *
GjPairsNext(GjJoinState *st)
{
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
				StartScan(st);
				break;
			case PH_BATCH:
				if (!GjJoinReadBatch(st))
				{
					st->phase = PH_DONE;
					break;
				}
				StartBatchJob(st);
				st->phase = PH_PAIRS;
				break;
			case PH_PAIRS:
				if (st->self_pend)
				{
					/* a self join's pair the other way round */
					st->self_pend = false;
					st->candidates++;
					res = JoinPair(st, st->self_b, st->self_a, st->self_sq);
					if (res != NULL)
						return res;
					break;
				}
				if (st->self_map == NULL && st->outer.by_tid)
				{
					/* the outer rows in ctid order: rows of a page fetched together */
					if (st->iheld >= st->nheld && !HoldPairs(st))
					{
						GjJoinEndJob(st);
						st->phase = PH_OTHER;
						st->other_part = 0;
						st->oi = st->ii = 0;
						break;
					}
					st->candidates++;
					res = JoinPair(st, st->held[st->iheld].o, st->held[st->iheld].i,
								   st->held[st->iheld].sq);
					st->iheld++;
					if (res != NULL)
						return res;
					break;
				}
				if (st->job == NULL || !GjJobNext(st->job, values, nulls, &restarted))
				{
					GjJoinEndJob(st);
					st->phase = st->self_map != NULL ? PH_DIAGONAL : PH_OTHER;
					st->other_part = 0;
					st->oi = st->ii = 0;
					break;
				}
				st->candidates++;
				o = DatumGetInt64(values[0]);
				i = DatumGetInt64(values[1]);
				if (st->self_map != NULL)
				{
					st->self_pend = true;
					st->self_a = o;
					st->self_b = i;
					st->self_sq = DatumGetFloat8(values[2]) * DatumGetFloat8(values[2]);
				}
				res = JoinPair(st, o, i, DatumGetFloat8(values[2]) * DatumGetFloat8(values[2]));
				if (res != NULL)
					return res;
				break;
			case PH_DIAGONAL:
				/* a self join's engine rows with themselves, at distance 0 */
				if (st->diag_never || st->oi >= st->inner.pts.n)
				{
					st->phase = PH_OTHER;
					st->oi = 0;
					break;
				}
				o = st->inner.pts.ids[st->oi++];
				st->candidates++;
				res = JoinPair(st, o, o, 0);
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
					st->oi >= (st->self_map != NULL ? st->inner.n : st->outer.n))
				{
					st->phase = PH_BATCH;
					break;
				}
				o = st->oi++;
				if (!st->matched[o] && (res = GjJoinUnmatched(st, o)) != NULL)
					return res;
				break;
			case PH_RETRY:		/* the kNN join's */
			case PH_DONE:
				return NULL;
		}
	}
}

