/*
 * dist_knn.c
 *		The kNN joins of Citus-distributed tables, on the workers.
 *
 * A query row's k nearest references can lie in any strip, so a halo of
 * fixed width does not do.  Two passes, both on the workers:
 *
 *	1. Bounds.  Each strip joins its own query rows with its own
 *	   references (knn_join_sql, k; a self join k + 1, the row itself
 *	   among them).  The largest k-th distance of a strip bounds how far
 *	   any of its query rows must look: the k nearest within the strip
 *	   are at most that far, so the true k nearest are too.  Only the
 *	   strips' largest distances come back, and the counts of their
 *	   references and query rows: a strip with fewer than k references
 *	   looks everywhere, and one without query rows nowhere.
 *	2. Halos and the join.  Every reference is copied into each other
 *	   strip whose rows it may be a neighbour of (within the strip's
 *	   bound of its edges, with a margin for rounding), and each strip
 *	   joins its own query rows with its own and its halo's references.
 *	   The rows are the single node's: every reference within a query
 *	   row's k-th distance is in its strip, ties included, and the
 *	   engine breaks ties on the smaller id as it does there.  A self join
 *	   (or some of a table's rows among all of them, others:
 *	   knn_lateral_selfjoin's query_filter) asks for k + 1, drops each
 *	   row's pair with itself and moves the neighbours after it up one
 *	   rank (the ids are unique: the caller checked).  Where a ref_filter
 *	   leaves query rows out of the references (others too), their strip
 *	   table says which (ref), and those are asked for k, as a two-table
 *	   join's rows are.
 *
 * The first pass's work is done again in the second (only its bounds are
 * kept): its cost is one more kNN join of the strips without their halos.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "dist/dist_internal.h"

/*
 * "knn_join_sql(c.rq, c.sq, k, query_key => .., ref_key => ..)", qualified;
 * more, where not empty, added to the query rows' text, which ends in its
 * WHERE (GjDistFillCells): " AND ref", some of them.
 */
static char *
KnnCall(const DistCall *dc, int k, const char *more)
{
	return psprintf("%s.knn_join_sql(%s, c.sq, %d%s%s%s)",
					quote_identifier(get_namespace_name(dc->spec->input.nsp)),
					more[0] == '\0' ? "c.rq" : psprintf("c.rq OPERATOR(pg_catalog.||) %s", quote_literal_cstr(more)), k,
					GjDistKeyWitness("query_key", dc->r), GjDistKeyWitness("ref_key", dc->s),
					dc->call_args);
}

/* Each strip's rows of table tab (where cond), by strip i, into counts. */
static void
StripCounts(const DistCall *dc, const char *tab, const char *cond, int64 *counts)
{
	/* the rows skipped are not in the tables (GjDistMoveRows) */
	GjDistExec(psprintf("SELECT strip, count(*) FROM %s WHERE %s GROUP BY 1", tab, cond),
			   SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		n1,
					n2;
		int32		v = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &n1));
		int64		c = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &n2));

		for (int j = 0; j < dc->strips.n; j++)
			if (dc->values[j] == v)
				counts[j] = c;
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Pass 1: each strip's bound on its query rows' k-th distance; infinity
 * where it has fewer than k references, minus infinity where it has no
 * query row (no reference need come: a query filtered down to a few rows,
 * or rows only of r in a part of space, used to copy every reference
 * into each such strip).
 */
static double *
Bounds(const DistCall *dc, int k)
{
	int			n = dc->strips.n;
	double	   *bound = palloc(sizeof(double) * n);
	int64	   *refs = palloc0(sizeof(int64) * n);
	int64	   *queries = palloc0(sizeof(int64) * n);

	for (int i = 0; i < n; i++)
		bound[i] = -1.0;
	StripCounts(dc, dc->s_tab, "own", refs);
	StripCounts(dc, dc->self ? dc->s_tab : dc->r_tab, dc->self ? "own" : "true", queries);

	GjDistExec(psprintf("SELECT c.strip, max(j.dist) FROM %s c, LATERAL %s j GROUP BY 1",
						dc->cells, KnnCall(dc, k, "")), SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		n1,
					n2;
		int32		v = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &n1));
		double		d = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &n2));

		for (int j = 0; j < n; j++)
			if (dc->values[j] == v && !n2)
				bound[j] = d;
	}
	SPI_freetuptable(SPI_tuptable);

	/*
	 * Fewer than k references: the strip's query rows look everywhere (a
	 * strip with query rows and no answer has no reference).  No query row:
	 * nothing to look for.
	 */
	for (int j = 0; j < n; j++)
		if (queries[j] == 0)
			bound[j] = -INFINITY;
		else if (refs[j] < k || bound[j] < 0)
			bound[j] = INFINITY;
	return bound;
}

/*
 * Pass 2's halos: each reference into every other strip within that
 * strip's bound of the strip's edges (none for a bound of minus
 * infinity).  Returns the rows written.
 */
static int64
Halos(const DistCall *dc, const double *bound)
{
	int			n = dc->strips.n;
	double		scale = Max(fabs(dc->strips.lo), fabs(dc->strips.hi));
	StringInfoData lows,
				highs;
	const char *x = dc->coords.x[dc->strips.dim];

	initStringInfo(&lows);
	initStringInfo(&highs);
	for (int i = 0; i < n; i++)
	{
		double		lo = i == 0 ? -INFINITY : dc->strips.cuts[i - 1];
		double		hi = i == n - 1 ? INFINITY : dc->strips.cuts[i];
		double		m = GjDistReach(dc, bound[i]) * (1 + 1e-9) + (isfinite(scale) ? scale * 1e-12 : 0.0);

		if (bound[i] == -INFINITY)
			lo = INFINITY, hi = -INFINITY, m = 0.0;	/* an empty range */
		else if (isinf(bound[i]))
			lo = -INFINITY, hi = INFINITY, m = 0.0;
		appendStringInfo(&lows, "%s%s", i > 0 ? ", " : "", GjFloat8Literal(lo - m));
		appendStringInfo(&highs, "%s%s", i > 0 ? ", " : "", GjFloat8Literal(hi + m));
	}
	if (n == 1)
		return 0;
	return (int64) GjDistExec(psprintf("INSERT INTO %s SELECT (%s)[st], false, false, false, %s FROM %s t, "
									   "LATERAL pg_catalog.generate_series(1, %d) st "
									   "WHERE t.own AND (%s)[st] <> t.strip AND %s >= (ARRAY[%s])[st] AND %s <= (ARRAY[%s])[st]",
									   dc->s_tab, GjDistValuesLiteral(dc), GjDistColumnList(dc->ncols), dc->s_tab, n,
									   GjDistValuesLiteral(dc), x, lows.data, x, highs.data), SPI_OK_INSERT);
}

/*
 * knn_lateral_join's bound: how far, in the engine's float64 distance, a
 * reference can be and still come among a query row's first k by the
 * column type's own <->, given that its k nearest by the engine's
 * distance lie within b.  pgvector sums float32 squares, in an order its
 * compiler picks: within a relative gam of the exact sum, plus each
 * term's underflow (join/pairs.c's margins, GjJoinMargins, which
 * dist/ does not call: join/ runs jobs, which call dist/).  So the k-th
 * distance by <-> is at most pg_up(b), above b by those margins, and a
 * reference at that <-> distance is within GjJoinMargins' eps of it.
 * Past 1e19 a float32 sum of squares may overflow to infinity, which
 * <-> ranks after every finite distance: every reference may count.
 * The cosine metric's bounds are cosine distances (at most 2), its
 * margins absolute.
 */
static double
PgOrderBound(const DistCall *dc, double b)
{
	double		gam = (dc->dims + 4) * ldexp(1.0, -24);
	double		d;

	if (b == -INFINITY)
		return b;				/* a strip without query rows */
	if (!isfinite(b) || b > 1e18)
		return INFINITY;
	/*
	 * <=>: pgvector's cosine distance is within 4 gam (and 5e-10 of the
	 * engine's own rounding) of the exact one, both ways (GjJoinMargins'
	 * cosine case): the k-th by <=> is at most b + that, and a reference
	 * within it by <=> is within that again by the engine's
	 */
	if (dc->cosine)
		return b + 2 * (4 * gam + 5e-10);
	/* the k-th <-> distance at most d (GjJoinMargins' in2, solved for d) */
	d = sqrt((b * b * (1 + gam) * (1 + 1e-9) + dc->dims * 1e-44) / (1 - 1e-9)) * (1 + 1e-12);
	/* a reference within d by <-> is within this by the engine's (its eps2) */
	return sqrt((d * d * (1 + 1e-12) + dc->dims * 1e-44) / (1 - gam) * (1 + 1e-12)) * (1 + 1e-12);
}

/*
 * knn_lateral_join, knn_lateral_selfjoin: each strip answers its query
 * rows by PostgreSQL's own order (its LATERAL query, lq, on the worker:
 * lateral_strip.c).  The strips' bounds are the engine's, widened by
 * PgOrderBound, so each strip holds every reference that can come among
 * its query rows' first k by <->: its answer is the whole table's.
 */
static int64
LateralKnn(DistCall *dc, GjDist *dist, MemoryContext cxt)
{
	int			k = dc->spec->k;
	int64		moved = 0;

	/* strips of kinds (match.c) hold their kinds whole: no bounds, no halos */
	if (dc->match_eq == NULL)
	{
		double	   *bound = Bounds(dc, dc->self || dc->others ? k + 1 : k);

		for (int i = 0; i < dc->strips.n; i++)
			bound[i] = PgOrderBound(dc, bound[i]);
		moved = Halos(dc, bound);
	}
	CHECK_FOR_INTERRUPTS();
	GjDistFetch(dist, psprintf("SELECT j.* FROM %s c, LATERAL %s.knn_lateral_strip(c.lq, %d%s%s) j",
							   dc->cells, quote_identifier(get_namespace_name(dc->spec->input.nsp)), k,
							   GjDistKeyWitness("query_key", dc->r), GjDistKeyWitness("ref_key", dc->s)),
				false, cxt);
	return moved;
}

/*
 * Each query row's k nearest others, where it is among the references
 * (self, others; of the query rows the strips' texts select with more,
 * e.g. " AND ref"): its k + 1 nearest, itself out.  A neighbour after
 * the row itself in (distance, id) order, at a distance above 0 or at 0
 * with a larger id, moves up one rank; a (k + 1)-th left over (the row
 * itself was not among them: k duplicates with smaller ids) goes.
 */
static void
SelfOut(const DistCall *dc, GjDist *dist, MemoryContext cxt, const char *more)
{
	int			k = dc->spec->k;
	Oid			t = dc->s->keys != NULL ? dc->s->keys->type : INT8OID;
	TypeCacheEntry *tc = lookup_type_cache(t, TYPECACHE_LT_OPR);
	char	   *coll = type_is_collatable(t) ? " COLLATE \"C\"" : "";
	char	   *rank;

	if (!OidIsValid(tc->lt_opr))
		elog(ERROR, "gpujoin: type %s has no less-than operator", format_type_be(t));
	rank = psprintf("(j.rank - CASE WHEN j.dist > 0 OR j.q%s %s j.r%s THEN 1 ELSE 0 END)",
					coll, GjDistOperator(tc->lt_opr), coll);
	GjDistFetch(dist, psprintf("SELECT j.q, j.r, %s::int4, j.dist FROM %s c, LATERAL %s j "
							   "WHERE j.r IS DISTINCT FROM j.q AND %s <= %d",
							   rank, dc->cells, KnnCall(dc, k + 1, more), rank, k), false, cxt);
}

int64
GjDistKnn(DistCall *dc, GjDist *dist, MemoryContext cxt)
{
	int			k = dc->spec->k;
	double	   *bound;
	int64		moved = 0;

	if (GjDistLateralStrips(dc))
		return LateralKnn(dc, dist, cxt);

	/* references of a reference table: every strip reads them all, one pass */
	if (dc->s_ref == NULL)
	{
		bound = Bounds(dc, dc->self || dc->others ? k + 1 : k);
		moved = Halos(dc, bound);
	}

	CHECK_FOR_INTERRUPTS();
	if (!dc->self && !dc->others)
		GjDistFetch(dist, psprintf("SELECT j.* FROM %s c, LATERAL %s j", dc->cells, KnnCall(dc, k, "")),
					false, cxt);
	else
		SelfOut(dc, dist, cxt, GjDistFiltersOthers(dc) ? " AND ref" : "");
	if (GjDistFiltersOthers(dc))
	{
		/*
		 * The query rows the filter leaves out of the references are not
		 * among their own: their k nearest, as a two-table join's
		 */
		GjDistFetch(dist, psprintf("SELECT j.* FROM %s c, LATERAL %s j", dc->cells,
								   KnnCall(dc, k, " AND NOT ref")), false, cxt);
	}
	return moved;
}
