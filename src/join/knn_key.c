/*
 * knn_key.c
 *		The LATERAL kNN join's inner rows by the hash of an equality key:
 *		WHERE r.c = q.c beside the ORDER BY (same kind, same tenant).
 *
 * An outer row whose answer the engine's candidates do not prove is
 * searched whole, every inner row checked by the subquery's quals (knn.c).
 * Where those quals hold r.c = <an expression of q> by a strict operator
 * of a hash operator family, an inner row can pass only if its c hashes
 * as the outer row's value does: the family promises equal hashes for
 * equal values, across its types, under the operator's collation.  So the
 * rows of each hash, sorted by it, are all that an outer row's search
 * needs: found by binary search, usually its key's rows alone (another
 * key's that share the hash fail the quals as before), and none for a
 * NULL key, which the strict operator never passes.
 *
 * That makes a row of a small key cheap to answer outright: a thousand
 * kinds of five rows each gave the engine 1,024 candidates a row, of which
 * about one passed, and every row was searched whole (5,000 rows: 3.4 s
 * against 0.77 s for PostgreSQL's GiST scan).  knn.c answers a row whose
 * key has at most GjKnnKeyDirect rows from those rows, without the engine:
 * their engine distances, computed here, rank them as the engine's
 * candidates would be, and the subquery's quals and keys are evaluated on
 * the nearest until k pass (GjKnnKeyCandidates); every row of the key
 * checked by them took 0.5 us a row at 16-D (200,000 vectors in a
 * thousand kinds of 200 on an H200 host: 40M checks, 20.7 s).
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/float.h"
#include "utils/lsyscache.h"

#include "core/knn_search.h"
#include "join/join_exec.h"
#include "machine.h"

static void CopyPoints(GjJoinState *st);
static int64 PointOf(const gj_points *pts, int64 **pos, int64 nrows, MemoryContext cxt, int64 r);

/* An inner row and the hash of its key. */
struct GjKeyRow
{
	uint32		h;
	int64		row;
};

/*
 * Which side of the scan tuple n reads: 1 outer, 2 inner, 3 both, 0
 * neither (a constant).
 */
static int
SidesOf(GjJoinState *st, Node *n)
{
	List	   *vars = pull_var_clause(n, PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
									   PVC_RECURSE_PLACEHOLDERS);
	ListCell   *lc;
	int			sides = 0;

	foreach(lc, vars)
	{
		Var		   *v = lfirst_node(Var, lc);

		if (v->varno != INDEX_VAR || v->varattno < 1 || v->varattno > st->nouter + st->ninner)
			return 3;			/* not a column of the pair: no side of its own */
		sides |= v->varattno <= st->nouter ? 1 : 2;
	}
	return sides;
}

/*
 * Find r.c = <q expression> among the pair quals (an implicit AND): a
 * strict operator of a hash family, one argument reading the inner row
 * only, the other the outer row only (or neither).  None: st->kg_inner
 * stays NULL.
 */
void
GjKnnKeyInit(GjJoinState *st, List *pairquals)
{
	PlanState  *ps = &st->css.ss.ps;
	ListCell   *lc;

	st->kg_inner = NULL;
	foreach(lc, pairquals)
	{
		OpExpr	   *op = lfirst(lc);
		Oid			hl,
					hr;

		if (!IsA(op, OpExpr) || !GjLateralKeyOperator(op, &hl, &hr))
			continue;
		for (int i = 0; i < 2; i++)
		{
			Node	   *in = list_nth(op->args, i),
					   *out = list_nth(op->args, 1 - i);

			if (SidesOf(st, in) != 2 || (SidesOf(st, out) & 2) != 0)
				continue;
			st->kg_inner = ExecInitExpr((Expr *) in, ps);
			st->kg_outer = ExecInitExpr((Expr *) out, ps);
			fmgr_info(i == 0 ? hl : hr, &st->kg_inner_hash);
			fmgr_info(i == 0 ? hr : hl, &st->kg_outer_hash);
			st->kg_coll = op->inputcollid;
			return;
		}
	}
}

static int
KeyRowCmp(const void *a, const void *b)
{
	const struct GjKeyRow *x = a,
			   *y = b;

	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/* The hash of expression e's value on the scan tuple now made (false: NULL). */
static bool
KeyHash(GjJoinState *st, ExprState *e, FmgrInfo *hash, uint32 *h)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	bool		isnull;
	Datum		v = ExecEvalExprSwitchContext(e, econtext, &isnull);

	if (isnull)
		return false;
	*h = DatumGetUInt32(FunctionCall1Coll(hash, st->kg_coll, v));
	return true;
}

/*
 * This scan's inner rows with a key, sorted by its hash; once a scan,
 * before the first batch's rows are answered (o: one of them, for the
 * scan tuple's outer half).
 */
static void
BuildKeyRows(GjJoinState *st, int64 o)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	struct GjKeyRow *rows;
	int64		n = 0;

	rows = MemoryContextAllocHuge(st->inner.cxt, sizeof(struct GjKeyRow) * Max(st->inner.n, 1));
	for (int64 i = 0; i < st->inner.n; i++)
	{
		uint32		h;

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = GjJoinScanTuple(st, st->self_map != NULL ? i : o, i);
		if (KeyHash(st, st->kg_inner, &st->kg_inner_hash, &h))
		{
			rows[n].h = h;
			rows[n].row = i;
			n++;
		}
	}
	qsort(rows, n, sizeof(struct GjKeyRow), KeyRowCmp);
	st->kg_rows = rows;
	st->kg_n = n;
	st->kg_ipos = NULL;			/* in inner.cxt, gone with the rows read before */
	st->kg_x = NULL;
	st->kg_copied = false;		/* when a row is first answered from them (CopyPoints) */
	st->kg_built = true;
}

/*
 * The engine coordinates of kg_rows, in their order (NaN for a row
 * without a point), where they take at most an eighth of the host memory
 * gpujoin may use; once a scan, when a row is first answered from its
 * key's rows.  A key's rows lie far apart in the table's order, and
 * reading each row's key's points where the engine keeps them was a cache
 * miss or two a point: with their sort gone (the k buffer), the distances
 * took 62% of the time (200,000 16-D vectors in a thousand kinds, 2-core
 * machine, 2.8 s).
 */
static void
CopyPoints(GjJoinState *st)
{
	int			dims = st->inner.pts.dims;

	st->kg_copied = true;
	if (dims <= 0 || (double) st->kg_n * dims * sizeof(double) > GjHostMemoryLimit() / 8.0)
		return;
	st->kg_x = MemoryContextAllocHuge(st->inner.cxt, sizeof(double) * Max(st->kg_n, 1) * dims);
	for (int64 j = 0; j < st->kg_n; j++)
	{
		int64		pr = PointOf(&st->inner.pts, &st->kg_ipos, st->inner.n, st->inner.cxt,
								 st->kg_rows[j].row);

		if (pr >= 0)
			memcpy(st->kg_x + j * dims, st->inner.pts.x + pr * dims, sizeof(double) * dims);
		else
			st->kg_x[j * dims] = get_float8_nan();
	}
}

/*
 * The run kg_rows[*lo .. *hi) of the inner rows whose key hashes as outer
 * row o's: every inner row that can pass the quals with it.  Empty for a
 * NULL key.
 */
void
GjKnnKeyRun(GjJoinState *st, int64 o, int64 *lo, int64 *hi)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	uint32		h;
	int64		a = 0,
				b;

	if (!st->kg_built)
		BuildKeyRows(st, o);
	*lo = *hi = 0;
	ResetExprContext(econtext);
	/* a self join by ctid makes no scan tuple without an inner row: the row itself */
	econtext->ecxt_scantuple = GjJoinScanTuple(st, o, st->self_map != NULL ? o : -1);
	if (!KeyHash(st, st->kg_outer, &st->kg_outer_hash, &h))
		return;
	/* the first row of hash h or above, then the first above */
	b = st->kg_n;
	while (a < b)
	{
		int64		m = a + (b - a) / 2;

		if (st->kg_rows[m].h < h)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	b = st->kg_n;
	while (a < b)
	{
		int64		m = a + (b - a) / 2;

		if (st->kg_rows[m].h <= h)
			a = m + 1;
		else
			b = m;
	}
	*hi = a;
}

/*
 * Where row r's engine point is in pts (-1: it has none), by the map pos
 * of pts's ids, made again when the engine has reordered pts since (the
 * CPU engine sorts its references in place): at most once a job.
 */
static int64
PointOf(const gj_points *pts, int64 **pos, int64 nrows, MemoryContext cxt, int64 r)
{
	int64		p = *pos != NULL ? (*pos)[r] : -1;

	if (*pos != NULL && (p < 0 || (p < pts->n && pts->ids[p] == r)))
		return p;
	if (*pos == NULL)
		*pos = MemoryContextAllocHuge(cxt, sizeof(int64) * Max(nrows, 1));
	for (int64 i = 0; i < nrows; i++)
		(*pos)[i] = -1;
	for (int64 i = 0; i < pts->n; i++)
		if (pts->ids[i] >= 0 && pts->ids[i] < nrows)
			(*pos)[pts->ids[i]] = i;
	return (*pos)[r];
}

/*
 * Outer row o's key's inner rows, every row that can pass the quals with
 * it: first those with an engine point, with the engine's distance to o's
 * point (the L2 of the engine's coordinates, in their order: the metrics'
 * own forms are made at the read), sorted by it and then by row, as the
 * engine ranks ties; then the *nopoint rows without one (distance -1), in
 * row order.  Into cand[0 .. *n), grown as needed.  Where every row has a
 * point and they are more than nfirst, only the first nfirst: *n is
 * nfirst and *left the rows left out, none nearer than the last.  False:
 * o has no engine point.
 */
bool
GjKnnKeyCandidates(GjJoinState *st, int64 o, GjKnnCand **cand, int64 *cap, int64 *n,
				   int64 *nopoint, int64 nfirst, int64 *left)
{
	const gj_points *op = st->self_map != NULL ? &st->inner.pts : &st->outer.pts;
	int64		po,
				run = st->kg_hi[o] - st->kg_lo[o],
				npoint;
	int			dims = st->inner.pts.dims;
	const double *q;
	gj_kbuf		kb;

	po = st->self_map != NULL ?
		PointOf(op, &st->kg_ipos, st->inner.n, st->inner.cxt, o) :
		PointOf(op, &st->kg_opos, st->outer.n, st->outer.cxt, o);
	if (po < 0 || op->dims != dims)
		return false;
	if (!st->kg_copied)
		CopyPoints(st);
	q = op->x + po * dims;
	if (*cap < run)
	{
		*cap = Max(run, 64);
		*cand = *cand == NULL ?
			MemoryContextAlloc(st->css.ss.ps.state->es_query_cxt, sizeof(GjKnnCand) * *cap) :
			repalloc_huge(*cand, sizeof(GjKnnCand) * *cap);
	}
	if (st->kg_kcap < run)
	{
		st->kg_kcap = Max(run, 64);
		st->kg_kd = st->kg_kd == NULL ?
			MemoryContextAlloc(st->css.ss.ps.state->es_query_cxt, sizeof(double) * st->kg_kcap) :
			repalloc_huge(st->kg_kd, sizeof(double) * st->kg_kcap);
		st->kg_kid = st->kg_kid == NULL ?
			MemoryContextAlloc(st->css.ss.ps.state->es_query_cxt, sizeof(int64) * st->kg_kcap) :
			repalloc_huge(st->kg_kid, sizeof(int64) * st->kg_kcap);
	}

	/*
	 * The engine's k buffer and distance rule (knn_search.h), keeping the
	 * first nfirst; a key with rows that have no point keeps all (those
	 * rows are ranked by the subquery, so nothing may be left out): a
	 * second pass where the first found such a row too late
	 */
	for (int pass = 0; pass < 2; pass++)
	{
		gj_kb_init(&kb, st->kg_kd, (int64_t *) st->kg_kid, 1, (int) Min(Min(nfirst, run), PG_INT32_MAX), 1);
		npoint = 0;
		*nopoint = 0;
		for (int64 j = st->kg_lo[o]; j < st->kg_hi[o]; j++)
		{
			int64		r = st->kg_rows[j].row;
			const double *x;
			double		s2;

			if (st->kg_x != NULL)
				x = isnan(st->kg_x[j * dims]) ? NULL : st->kg_x + j * dims;
			else
			{
				int64		pr = PointOf(&st->inner.pts, &st->kg_ipos, st->inner.n, st->inner.cxt, r);

				x = pr >= 0 ? st->inner.pts.x + pr * dims : NULL;
			}
			if (x == NULL)
			{
				/* after the rows with a point, in row order */
				(*cand)[run - 1 - (*nopoint)++].row = r;
				continue;
			}
			npoint++;
			/* abandoned past the bound: +inf, which the full buffer refuses */
			s2 = gj_knn_sqdist(x, q, dims, gj_kb_bound(&kb));
			gj_kb_offer(&kb, s2, r);
		}
		if (*nopoint == 0 || kb.n == npoint)
			break;
		nfirst = run;
	}
	gj_kb_finish(&kb, NULL);
	for (int t = 0; t < kb.n; t++)
	{
		(*cand)[t].row = st->kg_kid[t];
		(*cand)[t].dist = sqrt(st->kg_kd[t]);
		(*cand)[t].keys = NULL;
	}
	*left = npoint - kb.n;
	/*
	 * The rows without a point, gathered backwards at the end, right after
	 * the kept ones (all were kept): reversed in place, in row order
	 */
	for (int64 t = 0; t < *nopoint / 2; t++)
	{
		int64		a = (*cand)[kb.n + t].row;

		(*cand)[kb.n + t].row = (*cand)[run - 1 - t].row;
		(*cand)[run - 1 - t].row = a;
	}
	for (int64 t = kb.n; t < kb.n + *nopoint; t++)
	{
		(*cand)[t].dist = -1;
		(*cand)[t].keys = NULL;
	}
	*n = kb.n + *nopoint;
	for (int64 t = 0; t < *n; t++)
		(*cand)[t].order = t;
	return true;
}

/* Inner row of kg_rows[j]. */
int64
GjKnnKeyRow(GjJoinState *st, int64 j)
{
	return st->kg_rows[j].row;
}

/* The most rows a key may have for its outer rows to be answered from them outright. */
int64
GjKnnKeyDirect(GjJoinState *st)
{
	return (int64) GjLateralKeyDirect((double) st->k);
}
