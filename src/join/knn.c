/*
 * knn.c
 *		The LATERAL kNN join (lateral.c plans it): each outer row's nearest
 *		inner rows, as the subquery's ORDER BY and LIMIT would give them.
 *
 * For a batch of outer rows the kNN engine finds each one's k2 nearest
 * inner rows by its own distance (k2 = k + max(4, k/4) + 1, at most the
 * inner rows).  Then, per outer row, the subquery decides: each candidate
 * and every inner row the engine cannot take (a line, a zero vector under
 * <=>) is checked by the subquery's quals on the pair and ranked by its
 * ORDER BY keys, computed as PostgreSQL computes them and sorted by their
 * operators (ties: the engine's order).  The first k are the answer when
 * it is proven: every inner row left out has an engine distance of at
 * least the k2-th candidate's, which bounds its first key from below
 * (the rounding margins of pairs.c, the other way round); if that bound is
 * above the k-th row's first key, no row left out could come before it.
 * Otherwise (ties, too many candidates failing the quals, a NULL or NaN
 * key) the outer row is answered from every inner row, as the subquery
 * would be (EXPLAIN ANALYZE: Rows Searched Whole).  Outer rows the engine
 * cannot take are answered that way too.  Where the pair quals hold an
 * equality key r.c = <q expression> (knn_key.c), "every inner row" is the
 * inner rows of the row's key, and a row whose key has few is answered
 * from them outright (Rows Searched By Key): a batch of only such rows
 * runs no engine job.  Inner rows with a NULL key sort
 * after every distance (NULLS LAST): they are looked at only when fewer
 * than k others qualify and every engine row was a candidate.
 */
#include "postgres.h"

#include "compat.h"

#include <math.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "catalog/pg_index.h"
#include "utils/datum.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "join/join_exec.h"

/*
 * Whether a self join's pair quals are one r.c <> q.c on the same column
 * c of the table, unique: then they pass exactly the pairs of two rows
 * (the <> of c's btree opfamily), and a candidate is tested by its row
 * number, the scan tuple not made (the pgvector idiom WHERE e.id <> q.id).
 */
static bool
PairNotSelf(GjJoinState *st, List *quals)
{
	OpExpr	   *op;
	Node	   *l,
			   *r;
	int			lo,
				ri;
	PlanState  *ips = st->inner.ps;
	ListCell   *lc;

	if (st->self_map == NULL || list_length(quals) != 1 || !IsA(linitial(quals), OpExpr) ||
		!IsA(ips, SeqScanState))
		return false;
	op = linitial(quals);
	if (list_length(op->args) != 2)
		return false;
	l = strip_implicit_coercions(linitial(op->args));
	r = strip_implicit_coercions(lsecond(op->args));
	if (!IsA(l, Var) || !IsA(r, Var) ||
		((Var *) l)->varno != INDEX_VAR || ((Var *) r)->varno != INDEX_VAR)
		return false;
	lo = Min(((Var *) l)->varattno, ((Var *) r)->varattno);
	ri = Max(((Var *) l)->varattno, ((Var *) r)->varattno);
	if (lo < 1 || lo > st->nouter || ri <= st->nouter || ri > st->nouter + st->ninner ||
		st->self_map[lo - 1] != ri - st->nouter)
		return false;
	foreach(lc, GjOpInterpretations(op->opno))
	{
		GjOpInterpretation *bi = lfirst(lc);

		if (GjOpIsNotEqual(bi))
		{
			/* the inner plan's column ri: a column of the table? */
			TargetEntry *tle = list_nth_node(TargetEntry, ips->plan->targetlist,
											 ri - st->nouter - 1);

			return IsA(tle->expr, Var) && ((Var *) tle->expr)->varattno > 0 &&
				exprType((Node *) tle->expr) == exprType(l) &&
				GjUniqueColumn(((ScanState *) ips)->ss_currentRelation,
							 ((Var *) tle->expr)->varattno);
		}
	}
	return false;
}

static void
FreeRetryPoints(void *arg)
{
	gj_points_free((gj_points *) arg);
}

void
GjKnnInit(GjJoinState *st, CustomScan *cscan)
{
	List	   *ex = cscan->custom_exprs;
	List	   *priv = cscan->custom_private;
	List	   *keys = (List *) list_nth(ex, GJ_JE_ORDERKEYS);
	List	   *souts = (List *) list_nth(ex, GJ_JE_SOUT);
	List	   *ops = (List *) list_nth(priv, GJ_JP_SORTOPS);
	List	   *colls = (List *) list_nth(priv, GJ_JP_COLLATIONS);
	List	   *nfirst = (List *) list_nth(priv, GJ_JP_NULLS_FIRST);
	PlanState  *ps = &st->css.ss.ps;
	MemoryContextCallback *cb;
	int			i;

	st->pairqual = ExecInitQual((List *) list_nth(ex, GJ_JE_PAIRQUALS), ps);
	st->pair_not_self = PairNotSelf(st, (List *) list_nth(ex, GJ_JE_PAIRQUALS));
	GjKnnKeyInit(st, (List *) list_nth(ex, GJ_JE_PAIRQUALS));
	st->norder = list_length(keys);
	st->order_state = palloc(sizeof(ExprState *) * st->norder);
	st->ssup = palloc0(sizeof(SortSupportData) * st->norder);
	st->order_len = palloc(sizeof(int16) * st->norder);
	st->order_byval = palloc(sizeof(bool) * st->norder);
	for (i = 0; i < st->norder; i++)
	{
		st->order_state[i] = ExecInitExpr((Expr *) list_nth(keys, i), ps);
		get_typlenbyval(exprType((Node *) list_nth(keys, i)), &st->order_len[i],
						&st->order_byval[i]);
		st->ssup[i].ssup_cxt = CurrentMemoryContext;
		st->ssup[i].ssup_collation = (Oid) intVal(list_nth(colls, i));
		st->ssup[i].ssup_nulls_first = intVal(list_nth(nfirst, i)) != 0;
		PrepareSortSupportFromOrderingOp((Oid) intVal(list_nth(ops, i)), &st->ssup[i]);
	}
	st->nsout = list_length(souts);
	st->sout_state = palloc(sizeof(ExprState *) * Max(st->nsout, 1));
	st->sout_var = palloc0(sizeof(AttrNumber) * Max(st->nsout, 1));
	for (i = 0; i < st->nsout; i++)
	{
		Expr	   *e = (Expr *) list_nth(souts, i);

		st->sout_state[i] = ExecInitExpr(e, ps);
		if (IsA(e, Var) && ((Var *) e)->varno == INDEX_VAR && ((Var *) e)->varattno > 0 &&
			((Var *) e)->varattno <= st->nouter + st->ninner)
			st->sout_var[i] = ((Var *) e)->varattno;
	}
	st->kb_q = palloc(sizeof(int64) * GJ_KNN_TAKE);
	st->kb_r = palloc(sizeof(int64) * GJ_KNN_TAKE);
	st->kb_rank = palloc(sizeof(int32) * GJ_KNN_TAKE);
	st->kb_d = palloc(sizeof(double) * GJ_KNN_TAKE);
	st->knn_cxt = AllocSetContextCreate(ps->state->es_query_cxt, "GpuJoin kNN rows",
										ALLOCSET_DEFAULT_SIZES);
	/* the rows asked again are malloc'd (the engine may reorder them): freed with the query */
	gj_points_init(&st->retry_pts, 0);
	cb = MemoryContextAlloc(ps->state->es_query_cxt, sizeof(MemoryContextCallback));
	cb->func = FreeRetryPoints;
	cb->arg = &st->retry_pts;
	MemoryContextRegisterResetCallback(ps->state->es_query_cxt, cb);
	st->partial_cxt = AllocSetContextCreate(ps->state->es_query_cxt, "GpuJoin kNN parts",
											ALLOCSET_DEFAULT_SIZES);
}

static void
AddCand(GjJoinState *st, int64 row, double dist)
{
	if (st->ncand == st->cap_cand)
	{
		st->cap_cand = st->cap_cand == 0 ? 64 : st->cap_cand * 2;
		st->cand = st->cand == NULL ?
			MemoryContextAlloc(st->css.ss.ps.state->es_query_cxt, sizeof(GjKnnCand) * st->cap_cand) :
			repalloc_huge(st->cand, sizeof(GjKnnCand) * st->cap_cand);
	}
	st->cand[st->ncand].row = row;
	st->cand[st->ncand].order = st->ncand;
	st->cand[st->ncand].dist = dist;
	st->cand[st->ncand].keys = NULL;
	st->ncand++;
}

/*
 * An outer row's candidates arrive in rank order, but a chunk boundary
 * can split them and another thread's chunk come between: the first part
 * waits in a hash table until the rest comes.
 */
typedef struct GjPartial
{
	int64		q;				/* the hash key */
	int64		n;
	int64	   *rows;
	double	   *dists;
} GjPartial;

static void
StashGroup(GjJoinState *st)
{
	GjPartial  *p;
	bool		found;
	MemoryContext old;

	if (st->partials == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(GjPartial);
		ctl.hcxt = st->partial_cxt;
		st->partials = hash_create("GpuJoin kNN partial rows", 64, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	p = hash_search(st->partials, &st->cur_o, HASH_ENTER, &found);
	old = MemoryContextSwitchTo(st->partial_cxt);
	p->n = st->ncand;
	p->rows = palloc(sizeof(int64) * Max(st->ncand, 1));
	p->dists = palloc(sizeof(double) * Max(st->ncand, 1));
	MemoryContextSwitchTo(old);
	for (int64 i = 0; i < st->ncand; i++)
	{
		p->rows[i] = st->cand[i].row;
		p->dists[i] = st->cand[i].dist;
	}
	st->ncand = 0;
	st->cur_o = -1;
}

/* Outer row q's candidates begin (rank 1) or go on from a stashed part. */
static void
StartGroup(GjJoinState *st, int64 q, int32 rank)
{
	st->ncand = 0;
	st->cur_o = q;
	if (rank == 1 && st->self_map != NULL && !st->retrying)
		AddCand(st, q, 0);		/* a self join's engine leaves the row itself out */
	if (rank > 1 && st->partials != NULL)
	{
		bool		found;
		GjPartial  *p = hash_search(st->partials, &q, HASH_FIND, &found);

		if (found)
		{
			for (int64 i = 0; i < p->n; i++)
				AddCand(st, p->rows[i], p->dists[i]);
			hash_search(st->partials, &q, HASH_REMOVE, NULL);
		}
	}
}

/* The outer rows of this batch (a self join's: the inner rows). */
static int64
OuterRows(GjJoinState *st)
{
	return st->self_map != NULL ? st->inner.n : st->outer.n;
}

/* LIMIT k, the inner side read and indexed. */
static void
StartScan(GjJoinState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	bool		isnull;
	Datum		kv;

	ResetExprContext(econtext);
	kv = ExecEvalExprSwitchContext(st->bound_state, econtext, &isnull);
	st->k = isnull ? -1 : DatumGetInt64(kv);	/* LIMIT NULL: every row */
	if (st->k < 0 && !isnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_ROW_COUNT_IN_LIMIT_CLAUSE),
				 errmsg("LIMIT must not be negative")));
	st->none = false;
	st->fallback = st->k < 0;	/* every outer row from every inner row */
	st->d = 0;
	st->spheroid = false;
	st->dims = (st->kind == GJ_KEY_GEOMETRY || st->kind == GJ_KEY_GEOGRAPHY) ? 2 : 0;
	st->tag_set = false;
	st->geo_ready = false;
	st->runs++;
	GjJoinReadInner(st);
	if (st->kind == GJ_KEY_GEOGRAPHY && !st->fallback)
		GjJoinGeography(st, &st->inner.pts);
	st->k2 = (int64) Min(GjLateralCandidates((double) st->k, 1.0), (double) st->inner.pts.n);
	st->pass_rate = -1;			/* drawn with the first batch (StartBatchJob) */
	st->kg_built = false;		/* the key's rows too (GjKnnKeyRun) */
	st->phase = PH_BATCH;
}

/* Whether outer row o of the batch is answered by its key's rows alone (knn_key.c). */
static inline bool
KeyDirect(GjJoinState *st, int64 o)
{
	return st->kg_inner != NULL && st->kg_hi[o] - st->kg_lo[o] <= GjKnnKeyDirect(st);
}

/*
 * Each outer row's key's rows (knn_key.c); whether every row is answered
 * by them, so that the batch needs no engine job.
 */
static bool
KeyRuns(GjJoinState *st)
{
	int64		n = OuterRows(st);
	bool		all = true;

	if (st->kg_inner == NULL || n == 0)
		return false;
	st->kg_opos = NULL;			/* the batch's points: mapped when first asked */
	st->kg_lo = MemoryContextAlloc(st->outer.cxt, sizeof(int64) * n);
	st->kg_hi = MemoryContextAlloc(st->outer.cxt, sizeof(int64) * n);
	for (int64 o = 0; o < n; o++)
	{
		if ((o & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		GjKnnKeyRun(st, o, &st->kg_lo[o], &st->kg_hi[o]);
		all = all && KeyDirect(st, o);
	}
	return all;
}

/*
 * The share of pairs of rows that the subquery's quals on the pair pass,
 * from up to GJ_PASS_SAMPLE pairs of this batch's outer rows and the
 * inner rows, drawn by a hash of the draw's number (outer rows answered by
 * their key's rows alone left out).  1 without such quals, or for r.id <>
 * q.id alone (pair_not_self).
 */
#define GJ_PASS_SAMPLE 1000

static double
PairPassRate(GjJoinState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	int64		nouter = OuterRows(st),
				ninner = st->inner.n,
				pass = 0,
				drawn = 0,
				n;

	st->pass_sampled = 0;
	if (st->pairqual == NULL || st->pair_not_self || nouter == 0 || ninner == 0)
		return 1.0;
	n = Min((int64) GJ_PASS_SAMPLE, nouter * ninner);
	for (int64 i = 0; i < n; i++)
	{
		/* hashed, not stepped: steps would pair rows by their residues (ids mod 10) */
		int64		o = (int64) (hash_bytes_uint32_extended((uint32) i, 1) % (uint64) nouter),
					r = (int64) (hash_bytes_uint32_extended((uint32) i, 2) % (uint64) ninner);

		CHECK_FOR_INTERRUPTS();
		if (KeyDirect(st, o))
			continue;			/* answered by its key's rows: no candidates */
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = GjJoinScanTuple(st, o, r);
		drawn++;
		if (ExecQual(st->pairqual, econtext))
			pass++;
	}
	st->pass_sampled = (int) drawn;
	return drawn > 0 ? (double) pass / (double) drawn : 1.0;
}

/*
 * The candidates to ask of the engine for each outer row: k2 = k + a
 * margin, or, where the pair quals pass a share p of pairs (a category of
 * ten: p about 0.1), enough that about 2k of them pass: a row with fewer
 * than k passing candidates is searched whole, every inner row against it
 * (20,000 rows, ten categories: 21.7 s, against 1.4 s for PostgreSQL's
 * GiST scan, before): GjLateralCandidates, with p the sample's share
 * less two standard errors, at least one pair of the sample.
 */
static int64
ScaledK2(GjJoinState *st, double p)
{
	/* p's lower bound, two standard errors of the sample below it */
	if (p < 0.9)
		p = Max(p - 2 * sqrt(p * (1 - p) / Max(st->pass_sampled, 1)), 1.0 / Max(st->pass_sampled, 1));
	return (int64) Min(GjLateralCandidates((double) st->k, p), (double) st->inner.pts.n);
}

static void ResetJobRows(GjJoinState *st);
static void StartEngineJob(GjJoinState *st, const gj_points *queries, int64 k);

/* The kNN job of this batch's engine rows against the inner side's. */
static void
StartBatchJob(GjJoinState *st)
{
	bool		by_key = KeyRuns(st);

	if (st->pass_rate < 0)
	{
		/* once a scan: the first batch's rows */
		st->pass_rate = PairPassRate(st);
		st->k2 = ScaledK2(st, st->pass_rate);
	}

	st->batches++;
	st->nretry = 0;
	st->retrying = false;
	gj_points_free(&st->retry_pts);
	ResetJobRows(st);
	/* an outer row's candidates, all in: k2, or a self join's k2 others and itself */
	st->group = st->self_map != NULL ? Min(st->k2, st->inner.pts.n - 1) + 1 : st->k2;
	if ((st->self_map == NULL && st->outer.pts.n == 0) || st->inner.pts.n == 0 ||
		st->k <= 0 || st->k2 <= 0)
		return;
	if (st->self_map != NULL && st->inner.pts.n == 1)
		return;					/* no other row: PH_OTHER answers it */
	if (by_key)
		return;					/* every row by its key's rows: PH_OTHER */
	StartEngineJob(st, st->self_map == NULL ? &st->outer.pts : NULL, st->k2);
}

/* Before a job's rows come: no row, no candidate, no part. */
static void
ResetJobRows(GjJoinState *st)
{
	st->kb_n = st->kb_pos = 0;
	st->cur_o = -1;
	st->ncand = 0;
	st->nsel = st->isel = 0;
	st->have_pend = false;
	st->partials = NULL;
	MemoryContextReset(st->partial_cxt);
}

/*
 * A kNN job of the inner rows, k a row: for queries, or (NULL) for the
 * inner rows themselves, each but itself (a self join's).
 */
static void
StartEngineJob(GjJoinState *st, const gj_points *queries, int64 k)
{
	GjJobSpec	spec;

	memset(&spec, 0, sizeof(spec));
	spec.fname = "GpuJoin";
	spec.shape = GJ_SHAPE_KNN;
	spec.is_knn = true;
	spec.has_query = queries != NULL;	/* else each row's neighbours but itself */
	spec.k = (int32) Min(k, PG_INT32_MAX);
	spec.metric = GJ_METRIC_L2;
	spec.filter_column = GJ_FILTER_NONE;
	spec.input.fname = spec.query.fname = "GpuJoin";
	spec.input.metric = spec.query.metric = GJ_METRIC_L2;
	spec.input.given = &st->inner.pts;
	if (spec.has_query)
		spec.query.given = queries;
	st->job = GjJobStart(&spec, st->css.ss.ps.state->es_query_cxt, false);
}

/*
 * The batch's second job: the outer rows whose k2 candidates did not
 * prove their answer (too few passed the pair quals, or ties), asked for
 * eight times as many, at most every inner row, before any is searched
 * whole: a row searched whole checks every inner row in PostgreSQL's
 * expressions (200,000 vectors, ten kinds, k = 5, on one H200: 669 rows so
 * searched took 134M of the 145M candidates and most of 19 s).  Their
 * coordinates are found by id: the engine may have reordered the points.
 * False: nothing to ask (no more candidates than before).
 */
static bool
StartRetryJob(GjJoinState *st)
{
	const gj_points *from = st->self_map != NULL ? &st->inner.pts : &st->outer.pts;
	int64		k = Min(st->k2 * 8, st->inner.pts.n);
	int64		nrows = OuterRows(st);
	int64	   *pos;

	if (k <= st->k2 || st->nretry == 0)
		return false;
	pos = palloc(sizeof(int64) * Max(nrows, 1));
	for (int64 i = 0; i < nrows; i++)
		pos[i] = -1;
	for (int64 i = 0; i < from->n; i++)
		if (from->ids[i] >= 0 && from->ids[i] < nrows)
			pos[from->ids[i]] = i;
	gj_points_free(&st->retry_pts);
	gj_points_init(&st->retry_pts, from->dims);
	if (gj_points_reserve(&st->retry_pts, st->nretry) != GJ_OK)
		elog(ERROR, "gpujoin: out of memory for %lld rows asked again", (long long) st->nretry);
	for (int64 i = 0; i < st->nretry; i++)
	{
		int64		o = st->retry[i];

		/* a row not found stays unmatched: PH_OTHER searches it whole */
		if (pos[o] >= 0 &&
			gj_points_push(&st->retry_pts, o, from->x + pos[o] * from->dims) != GJ_OK)
			elog(ERROR, "gpujoin: out of memory for %lld rows asked again", (long long) st->nretry);
	}
	pfree(pos);
	st->retried += st->retry_pts.n;
	st->nretry = 0;
	if (st->retry_pts.n == 0)
		return false;
	st->retrying = true;
	ResetJobRows(st);
	st->group = k;				/* queries apart from the rows: k each, itself among them */
	StartEngineJob(st, &st->retry_pts, k);
	return true;
}

/* The largest first ORDER BY key a row at engine distance e can have. */
static double
UpperKey(GjJoinState *st, double e)
{
	double		gam = (st->dims + 4) * 0x1p-24,
				r;

	switch (st->metric)
	{
		case GJ_JM_PLANAR:
			return e * (1 + 1e-9);
		case GJ_JM_L2:
			return sqrt(e * e * (1 + 1e-12) * (1 + gam) + st->dims * 1e-44) * (1 + 1e-12);
		case GJ_JM_COSINE:
			return e * e / 2 + 4 * gam + 1e-9;
		case GJ_JM_SPHERE:
		case GJ_JM_GEODESIC:
			r = st->geo.a;
			return 2 * r * asin(Min(1.0, e / (2 * r))) * (1 + 1e-9) + 1e-3;
	}
	return INFINITY;
}

/*
 * The least first ORDER BY key (PostgreSQL's distance) an inner row whose
 * engine distance is at least e can have.
 */
static double
LowerKey(GjJoinState *st, double e)
{
	double		gam = (st->dims + 4) * 0x1p-24,
				v,
				r;

	switch (st->metric)
	{
		case GJ_JM_PLANAR:
			return e * (1 - 1e-9);
		case GJ_JM_L2:
			v = e * e * (1 - 1e-12) * (1 - gam) - st->dims * 1e-44;
			return v > 0 ? sqrt(v) * (1 - 1e-12) : 0;
		case GJ_JM_COSINE:
			return e * e / 2 - 4 * gam - 1e-9;
		case GJ_JM_SPHERE:
		case GJ_JM_GEODESIC:
			r = st->geo.a;
			v = 2 * r * asin(Min(1.0, e / (2 * r)));
			return v * (1 - 1e-9) - 1e-3;
	}
	return 0;
}

static GjJoinState *sort_st;	/* the comparator's (qsort has no argument) */

static int
CompareCand(const void *a, const void *b)
{
	const GjKnnCand *x = a,
			   *y = b;

	for (int i = 0; i < sort_st->norder; i++)
	{
		int			c = ApplySortComparator(x->keys[i], x->nulls[i], y->keys[i], y->nulls[i],
											&sort_st->ssup[i]);

		if (c != 0)
			return c;
	}
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Check candidates [from, ncand) against the pair quals, computing the
 * keys of those that pass; the others are dropped.
 */
static void
RankCandidates(GjJoinState *st, int64 o, int64 from)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	int64		kept = from;

	for (int64 c = from; c < st->ncand; c++)
	{
		GjKnnCand  *cd = &st->cand[c];
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = GjJoinScanTuple(st, o, cd->row);
		st->candidates++;
		if (st->pair_not_self ? cd->row == o :
			(st->pairqual != NULL && !ExecQual(st->pairqual, econtext)))
			continue;
		GjJoinScanKeys(st);		/* carried keys, for the ORDER BY keys */
		old = MemoryContextSwitchTo(st->knn_cxt);
		cd->keys = palloc(sizeof(Datum) * st->norder);
		cd->nulls = palloc(sizeof(bool) * st->norder);
		MemoryContextSwitchTo(old);
		for (int i = 0; i < st->norder; i++)
		{
			Datum		v = ExecEvalExprSwitchContext(st->order_state[i], econtext, &cd->nulls[i]);

			if (cd->nulls[i])
				v = (Datum) 0;
			else if (!st->order_byval[i])
			{
				old = MemoryContextSwitchTo(st->knn_cxt);
				v = datumCopy(v, false, st->order_len[i]);
				MemoryContextSwitchTo(old);
			}
			cd->keys[i] = v;
		}
		st->cand[kept++] = *cd;
	}
	st->ncand = kept;
}

/* Candidates of every inner row in list[0..n), in that order. */
static void
AddRows(GjJoinState *st, const int64 *list, int64 n)
{
	for (int64 i = 0; i < n; i++)
		AddCand(st, list[i], -1);
}

/*
 * The answer without the ORDER BY keys, when the engine's order is
 * provably PostgreSQL's: walking the candidates in engine order, the
 * first k that pass the pair quals, where each one's largest possible key
 * is below the next one's least, and the k-th's below that of the next
 * candidate (or of every row left out).  Then no other row can come
 * before the k-th, and the k come in the same order.  False: rank them.
 */
static bool
FastSelect(GjJoinState *st, int64 o, bool left_out)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	int64		npass = 0,
				last = -1;
	double		next;

	for (int64 t = 0; t < st->ncand && npass < st->k; t++)
	{
		if (st->pair_not_self)
		{
			st->candidates++;
			if (st->cand[t].row == o)
				continue;
		}
		else if (st->pairqual != NULL)
		{
			ResetExprContext(econtext);
			econtext->ecxt_scantuple = GjJoinScanTuple(st, o, st->cand[t].row);
			st->candidates++;
			if (!ExecQual(st->pairqual, econtext))
				continue;
		}
		if (last >= 0 && !(UpperKey(st, st->cand[last].dist) < LowerKey(st, st->cand[t].dist)))
			return false;
		st->cand[npass++] = st->cand[t];
		last = t;
	}
	if (npass < st->k)
		return false;
	if (last + 1 < st->ncand)
		next = st->cand[last + 1].dist;
	else if (left_out)
		return false;
	else
		next = INFINITY;
	if (!(UpperKey(st, st->cand[npass - 1].dist) < LowerKey(st, next)))
		return false;
	st->ncand = npass;
	return true;
}

/*
 * Outer row o's answer from its engine candidates (cand[0..ncand)), or,
 * with whole, from every inner row: sorted, the first k kept for emission.
 */
static void
SelectRows(GjJoinState *st, int64 o, bool whole)
{
	int64		nengine;
	double		e_last;
	bool		left_out,
				direct = false;
	int64		from,
				nopoint = 0,
				key_left = 0;

	/*
	 * A small key's rows: every row that can pass is among them, ranked by
	 * the engine's distance here (the first few, as the engine's
	 * candidates; all of them where those do not prove the answer); where
	 * o has no point, each is checked
	 */
	if (KeyDirect(st, o) && st->k >= 0)
	{
		int64		nfirst = st->kg_full ? PG_INT64_MAX :
			2 * (int64) GjLateralCandidates((double) st->k, 1.0);

		direct = GjKnnKeyCandidates(st, o, &st->cand, &st->cap_cand, &st->ncand, &nopoint,
									nfirst, &key_left);
		whole = !direct;
		if (direct && !st->kg_full)
			st->by_key++;
	}
	nengine = whole ? 0 : st->ncand;
	e_last = nengine > 0 ? st->cand[nengine - 1].dist : 0;
	/* all of a key's rows (kg_full) leave none out */
	left_out = !whole && (direct ? key_left > 0 && !st->kg_full : nengine < st->inner.pts.n);
	MemoryContextReset(st->knn_cxt);
	st->matched[o] = true;
	if (!whole && st->k > 0 && (direct ? nopoint == 0 : st->inner.nother == 0))
	{
		int64		n = st->ncand;

		/*
		 * Every candidate's tuple is touched, each a cache miss away (rows
		 * near in space are far apart in memory): asked for together, the
		 * misses overlap
		 */
		for (int64 t = 0; t < n; t++)
			GjSidePrefetch(&st->inner, st->cand[t].row);

		/* FastSelect reorders cand[]: keep the candidates for ranking */
		if (st->cap_saved < n)
		{
			st->cap_saved = Max(n, 64);
			st->saved = st->saved == NULL ?
				MemoryContextAlloc(st->css.ss.ps.state->es_query_cxt, sizeof(GjKnnCand) * st->cap_saved) :
				repalloc_huge(st->saved, sizeof(GjKnnCand) * st->cap_saved);
		}
		memcpy(st->saved, st->cand, sizeof(GjKnnCand) * n);
		if (FastSelect(st, o, left_out))
		{
			st->fast++;
			st->emit_o = o;
			st->isel = 0;
			st->nsel = st->ncand;
			return;
		}
		memcpy(st->cand, st->saved, sizeof(GjKnnCand) * n);
		st->ncand = n;
	}
	if (whole && st->kg_inner != NULL)
	{
		/* every inner row that can pass: its key's (knn_key.c), in row order as below */
		st->ncand = 0;
		st->by_key++;
		for (int64 j = st->kg_lo[o]; j < st->kg_hi[o]; j++)
			AddCand(st, GjKnnKeyRow(st, j), -1);
		RankCandidates(st, o, 0);
	}
	else if (whole)
	{
		st->ncand = 0;
		st->fallbacks++;
		for (int64 i = 0; i < st->inner.n; i++)
			AddCand(st, i, -1);
		RankCandidates(st, o, 0);
	}
	else
	{
		/* a key's candidates hold its rows without a point too */
		if (!direct)
			AddRows(st, st->inner.other, st->inner.nother);
		RankCandidates(st, o, 0);
		if (st->ncand < st->k && !left_out && !direct)
		{
			/* fewer than k: the NULLs come last */
			from = st->ncand;
			AddRows(st, st->inner.never, st->inner.nnever);
			RankCandidates(st, o, from);
		}
	}
	sort_st = st;
	if (st->ncand > 1)
		qsort(st->cand, st->ncand, sizeof(GjKnnCand), CompareCand);
	if (left_out)
	{
		/* proven: k candidates, and none left out can come before the k-th */
		GjKnnCand  *kth = st->ncand >= st->k ? &st->cand[st->k - 1] : NULL;

		if (kth == NULL || kth->nulls[0] ||
			!(LowerKey(st, e_last) > DatumGetFloat8(kth->keys[0])))
		{
			if (direct)
			{
				/* the key's first rows did not prove it: all of them */
				st->kg_full = true;
				SelectRows(st, o, false);
				st->kg_full = false;
				return;
			}
			if (!st->retrying && st->k2 < st->inner.pts.n)
			{
				/* asked again with more candidates after the batch's job (StartRetryJob) */
				if (st->nretry == st->cap_retry)
				{
					st->cap_retry = Max(st->cap_retry * 2, 64);
					st->retry = st->retry == NULL ?
						MemoryContextAlloc(st->css.ss.ps.state->es_query_cxt, sizeof(int64) * st->cap_retry) :
						repalloc_huge(st->retry, sizeof(int64) * st->cap_retry);
				}
				st->retry[st->nretry++] = o;
				st->matched[o] = false;
				st->emit_o = -1;
				st->isel = st->nsel = 0;
				return;
			}
			SelectRows(st, o, true);
			return;
		}
	}
	st->emit_o = o;
	st->isel = 0;
	st->nsel = st->k < 0 ? st->ncand : Min(st->k, st->ncand);
	if (st->nsel == 0)
		st->emit_o = -(o + 2);	/* nothing: a left join's null-extended row */
}

/* The next of the selected rows that passes the join's quals, or NULL. */
static TupleTableSlot *
EmitSelected(GjJoinState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	ExprState  *otherqual = st->css.ss.ps.qual;

	if (st->emit_o < -1)
	{
		int64		o = -(st->emit_o + 2);

		st->emit_o = -1;
		return st->jointype == JOIN_LEFT ? GjJoinUnmatched(st, o) : NULL;
	}
	while (st->isel < st->nsel)
	{
		GjKnnCand  *cd = &st->cand[st->isel++];
		TupleTableSlot *scan;
		int			base = st->nouter + st->ninner;

		ResetExprContext(econtext);
		scan = GjJoinScanTuple(st, st->emit_o, cd->row);
		econtext->ecxt_scantuple = scan;
		for (int j = 0; j < st->nsout; j++)
		{
			if (st->sout_var[j] > 0)
			{
				/* a column of r, as the subquery returns it */
				scan->tts_values[base + j] = scan->tts_values[st->sout_var[j] - 1];
				scan->tts_isnull[base + j] = scan->tts_isnull[st->sout_var[j] - 1];
			}
			else
				scan->tts_values[base + j] = ExecEvalExprSwitchContext(st->sout_state[j], econtext,
																	   &scan->tts_isnull[base + j]);
		}
		if (!ExecQual(st->joinqual, econtext))
			continue;
		if (otherqual != NULL && !ExecQual(otherqual, econtext))
			continue;
		return GjJoinProject(st);
	}
	return NULL;
}

/* The job's next row: query row, inner row, rank, distance; false at its end. */
static inline bool
JobRow(GjJoinState *st, int64 *q, int64 *r, int32 *rank, double *d)
{
	if (st->kb_pos >= st->kb_n)
	{
		st->kb_pos = 0;
		st->kb_n = st->job == NULL ? 0 :
			GjJobNextKnnRows(st->job, st->kb_q, st->kb_r, st->kb_rank, st->kb_d, GJ_KNN_TAKE);
		if (st->kb_n == 0)
			return false;
	}
	/*
	 * A row's kept tuple (its pointer) or carried value is a cache miss
	 * away: asked for some rows ahead of their use, the misses overlap
	 */
	if (st->kb_pos + 32 < st->kb_n)
		GjSidePrefetchSlot(&st->inner, st->kb_r[st->kb_pos + 32]);
	*q = st->kb_q[st->kb_pos];
	*r = st->kb_r[st->kb_pos];
	*rank = st->kb_rank[st->kb_pos];
	*d = st->kb_d[st->kb_pos];
	st->kb_pos++;
	return true;
}

TupleTableSlot *
GjKnnNext(GjJoinState *st)
{
	int64		jq,
				jr;
	int32		jrank;
	double		jd;
	TupleTableSlot *res;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (st->isel < st->nsel || st->emit_o < -1)
		{
			res = EmitSelected(st);
			if (res != NULL)
				return res;
			continue;
		}
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
				if (st->have_pend)
				{
					/* the first candidate of the next outer row */
					st->have_pend = false;
					StartGroup(st, st->pend_q, st->pend_rank);
					AddCand(st, st->pend_r, st->pend_d);
				}
				if (!JobRow(st, &jq, &jr, &jrank, &jd))
				{
					GjJoinEndJob(st);
					if (st->cur_o >= 0)
						SelectRows(st, st->cur_o, false);
					st->cur_o = -1;
					/* the last row's rows out first: the next job starts afresh */
					st->phase = st->retrying ? PH_OTHER : PH_RETRY;
					st->retrying = false;
					st->oi = 0;
					break;
				}
				if (st->cur_o >= 0 && jq != st->cur_o)
				{
					if (st->ncand < st->group)
					{
						/* the rest of this row's candidates come in a later chunk */
						StashGroup(st);
					}
					else
					{
						/* the previous row's candidates are all in: its answer first */
						SelectRows(st, st->cur_o, false);
						st->have_pend = true;
						st->pend_q = jq;
						st->pend_r = jr;
						st->pend_rank = jrank;
						st->pend_d = jd;
						break;
					}
				}
				if (st->cur_o < 0)
					StartGroup(st, jq, jrank);
				AddCand(st, jr, jd);
				break;
			case PH_RETRY:
				/* the unproven rows' candidates again, more of them; else on */
				st->phase = StartRetryJob(st) ? PH_PAIRS : PH_OTHER;
				st->oi = 0;
				break;
			case PH_OTHER:
				/* outer rows the engine did not answer: from every inner row */
				while (st->oi < OuterRows(st) && st->matched[st->oi])
					st->oi++;
				if (st->oi >= OuterRows(st))
				{
					st->phase = PH_BATCH;
					break;
				}
				if (st->k != 0)
					SelectRows(st, st->oi++, true);
				else
				{
					/* LIMIT 0: no rows; a left join's null-extended one */
					st->matched[st->oi] = true;
					st->nsel = 0;
					st->emit_o = -(st->oi + 2);
					st->oi++;
				}
				break;
			case PH_DIAGONAL:
			case PH_UNMATCHED:
			case PH_DONE:
				return NULL;
		}
	}
}
