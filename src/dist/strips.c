/*
 * strips.c
 *		Where a distributed join cuts space: strips of the one dimension
 *		whose finite values spread widest, cut where the rows' histogram
 *		(counted on the workers, 1,024 buckets) gives each strip about the
 *		same number of rows, and never narrower than eps, so that a row's
 *		halo (the rows within eps of it) reaches at most its neighbour
 *		strips on either side.  Skew along the cut dimension is met by the
 *		histogram; a clump narrower than a bucket stays in one strip.
 *
 * The queries read through SPI (the caller is connected) are aggregates
 * Citus runs on the shards: only bounds and bucket counts travel.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"

#include "dist/dist.h"

#define GJ_STRIP_BUCKETS 1024
#define GJ_STRIP_SAMPLE 1024		/* rows a shard gives for choosing a vector's or array's dimension */

/* A float8 as SQL, exactly (17 significant digits round-trip). */
char *
GjFloat8Literal(double v)
{
	if (isnan(v))
		return pstrdup("'NaN'::float8");
	if (isinf(v))
		return pstrdup(v > 0 ? "'Infinity'::float8" : "'-Infinity'::float8");
	return psprintf("'%.17g'::float8", v);
}

/* Coordinate x (an SQL float8 expression) if finite, else NULL. */
static char *
FiniteValue(const char *x)
{
	return psprintf("CASE WHEN %s > '-Infinity'::float8 AND %s < 'Infinity'::float8 THEN %s END", x, x, x);
}

/* Column col of result row row as a float8 (min, max) or int8 (counts, sums of int4), 0 for NULL. */
static double
Float8Of(int row, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);

	if (*isnull)
		return 0.0;
	if (SPI_gettypeid(SPI_tuptable->tupdesc, col) == INT8OID)
		return (double) DatumGetInt64(d);
	return DatumGetFloat8(d);
}

/*
 * "(id IS NULL OR c1 IS NULL ...)": a row the engine skips for a NULL
 * (a key of a keyed read is NULL only when scalar: rows are not taken
 * here), and "(c1 > -inf AND c1 < inf AND ...)": one it keeps, if not
 * NULL (NaN compares above infinity).
 */
char *
GjStripNullRow(const char *const *coords, int dims)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoString(&s, "(id IS NULL");
	for (int i = 0; i < dims; i++)
		appendStringInfo(&s, " OR %s IS NULL", coords[i]);
	appendStringInfoChar(&s, ')');
	return s.data;
}

char *
GjStripFiniteRow(const char *const *coords, int dims)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoChar(&s, '(');
	for (int i = 0; i < dims; i++)
		appendStringInfo(&s, "%s%s > '-Infinity'::float8 AND %s < 'Infinity'::float8",
						 i > 0 ? " AND " : "", coords[i], coords[i]);
	appendStringInfoChar(&s, ')');
	return s.data;
}

/*
 * The dimension of widest spread among the first GJ_STRIP_SAMPLE rows
 * each query's shards return (coordinate column c1 as float8[]: a
 * pgvector or array column), or 0.  Bounding hundreds of dimensions on every row
 * would cost more than the join; any dimension gives exact strips, the
 * widest only fewer rows in the halos.
 */
static int
SampleDim(const char *const *queries, int nqueries, const GjStripCoords *coords)
{
	int			dims = coords->dims;
	double	   *lo = palloc(sizeof(double) * dims);
	double	   *hi = palloc(sizeof(double) * dims);
	int			best = 0;

	for (int d = 0; d < dims; d++)
	{
		lo[d] = INFINITY;
		hi[d] = -INFINITY;
	}
	for (int q = 0; q < nqueries; q++)
	{
		char	   *sql = psprintf("SELECT %s FROM %s WHERE c1 IS NOT NULL LIMIT %d",
								   coords->sample_array, queries[q], GJ_STRIP_SAMPLE);

		if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "gpujoin: a sample of a distributed input could not be read");
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
			Datum	   *el;
			bool	   *nulls;
			int			n;

			if (isnull)
				continue;
			deconstruct_array(DatumGetArrayTypeP(d), FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
							  &el, &nulls, &n);
			for (int k = 0; k < n && k < dims; k++)
				if (!nulls[k] && isfinite(DatumGetFloat8(el[k])))
				{
					double		v = DatumGetFloat8(el[k]);

					lo[k] = v < lo[k] ? v : lo[k];
					hi[k] = v > hi[k] ? v : hi[k];
				}
		}
		SPI_freetuptable(SPI_tuptable);
	}
	for (int d = 1; d < dims; d++)
		if (hi[d] - lo[d] > hi[best] - lo[best])
			best = d;
	return best;
}

/*
 * Plan the strips of the rows of queries (FROM items with columns id, c1
 * ..), whose coordinates are coords: at most want strips, at least eps
 * wide; one strip when the rows have no spread.
 */
void
GjPlanStrips(const char *const *queries, int nqueries, const GjStripCoords *coords,
			 double eps, int want, GjStrips *strips)
{
	int			dims = coords->dims;
	double	   *lo = palloc(sizeof(double) * dims);
	double	   *hi = palloc(sizeof(double) * dims);
	double		spread = 0.0;
	int64		counts[GJ_STRIP_BUCKETS + 2] = {0};
	int64		total = 0;
	int			first = 0,		/* the dimensions bounded: all, or the sample's */
				last = dims - 1;
	StringInfoData sql;

	for (int d = 0; d < dims; d++)
	{
		lo[d] = INFINITY;
		hi[d] = -INFINITY;
	}
	if (coords->sample_dim)
		first = last = SampleDim(queries, nqueries, coords);
	strips->dim = first;
	strips->n = 1;
	strips->cuts = NULL;

	/* the bounds of the dimensions, from both sides */
	for (int q = 0; q < nqueries; q++)
	{
		int			nb = last - first + 1;

		initStringInfo(&sql);
		appendStringInfoString(&sql, "SELECT ");
		for (int d = first; d <= last; d++)
			appendStringInfo(&sql, "%smin(%s), max(%s)", d > first ? ", " : "",
							 FiniteValue(coords->x[d]), FiniteValue(coords->x[d]));
		/* and the rows the engine will skip, as its read counts them */
		appendStringInfo(&sql, ", count(*), sum(CASE WHEN %s THEN 1 ELSE 0 END), "
						 "sum(CASE WHEN NOT %s AND NOT %s THEN 1 ELSE 0 END), "
						 "sum(CASE WHEN NOT %s AND %s AND %s THEN 1 ELSE 0 END) FROM %s",
						 coords->null_row, coords->null_row, coords->finite_row,
						 coords->null_row, coords->finite_row,
						 coords->zero_row != NULL ? coords->zero_row : "false", queries[q]);
		if (SPI_execute(sql.data, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "gpujoin: the bounds of a distributed input could not be read");
		{
			bool		isnull;

			strips->rows[q] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
														  2 * nb + 1, &isnull));
			strips->nnull[q] = (int64) Float8Of(0, 2 * nb + 2, &isnull);
			strips->nnonfinite[q] = (int64) Float8Of(0, 2 * nb + 3, &isnull);
			strips->nzero[q] = (int64) Float8Of(0, 2 * nb + 4, &isnull);
		}
		for (int d = first; d <= last; d++)
		{
			bool		n1,
						n2;
			double		a = Float8Of(0, 2 * (d - first) + 1, &n1);
			double		b = Float8Of(0, 2 * (d - first) + 2, &n2);

			if (!n1 && a < lo[d])
				lo[d] = a;
			if (!n2 && b > hi[d])
				hi[d] = b;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	for (int d = first; d <= last; d++)
		if (hi[d] > lo[d] && hi[d] - lo[d] > spread)
		{
			spread = hi[d] - lo[d];
			strips->dim = d;
		}
	strips->lo = lo[strips->dim] <= hi[strips->dim] ? lo[strips->dim] : 0.0;
	strips->hi = lo[strips->dim] <= hi[strips->dim] ? hi[strips->dim] : 0.0;
	/* a spread beyond float8 (hi - lo = inf) cannot be bucketed: one strip */
	if (want <= 1 || !(spread > eps) || isinf(spread))
		return;

	/* the histogram of the dimension cut */
	for (int q = 0; q < nqueries; q++)
	{
		initStringInfo(&sql);
		appendStringInfo(&sql, "SELECT width_bucket(v, %s, %s, %d), count(*) FROM "
						 "(SELECT %s AS v FROM %s) h WHERE v IS NOT NULL GROUP BY 1",
						 GjFloat8Literal(lo[strips->dim]), GjFloat8Literal(hi[strips->dim]),
						 GJ_STRIP_BUCKETS, FiniteValue(coords->x[strips->dim]), queries[q]);
		if (SPI_execute(sql.data, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "gpujoin: the histogram of a distributed input could not be read");
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		n1,
						n2;
			int32		b = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &n1));
			int64		c = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &n2));

			if (!n1 && !n2 && b >= 0 && b <= GJ_STRIP_BUCKETS + 1)
			{
				counts[b] += c;
				total += c;
			}
		}
		SPI_freetuptable(SPI_tuptable);
	}

	/* cut at the bucket edges nearest each k/want of the rows, eps apart */
	{
		double		l = lo[strips->dim];
		double		width = spread / GJ_STRIP_BUCKETS;
		double		last = l;		/* the first strip is eps wide too */
		int64		cum = 0;
		int			k = 1;

		strips->cuts = palloc(sizeof(double) * want);
		strips->n = 1;
		for (int b = 0; b <= GJ_STRIP_BUCKETS && k < want; b++)
		{
			double		cut;

			cum += counts[b];
			if ((double) cum < (double) total * k / want)
				continue;
			while (k < want && (double) cum >= (double) total * k / want)
				k++;
			cut = l + width * b;	/* the upper edge of bucket b (1-based buckets) */
			if (cut >= hi[strips->dim] || cut < last + eps)
				continue;
			strips->cuts[strips->n - 1] = cut;
			strips->n++;
			last = cut;
		}
	}
}
