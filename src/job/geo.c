/*
 * geo.c
 *		PostGIS geography in a job: one spheroid for both sides, the rows
 *		made earth-centred, and the pairs a chord cannot settle asked of
 *		PostGIS.
 *
 * The reader hands geography over as (longitude, latitude) rows and their
 * one SRID (postgis.c).  Here the SRID becomes the job's, the rows
 * become 3-D points on its spheroid or on PostGIS's sphere, and eps the
 * chord beyond which no pair is within d (core/geodetic.c).  The engines
 * then run unchanged.  What comes out is settled by the chord, except in
 * a band a micrometre wide around d (wider on the spheroid at long range:
 * 13 cm at 50 km): there PostGIS's own ST_DWithin decides, so the pairs
 * are those of ST_DWithin to the last bit.  Pairs are checked as they
 * stream; counts are counted twice, at both ends of the band, and only
 * rows whose counts differ look for the pairs between (for listed rows
 * and two tables, GjGeographyRepairCounts; for all of a table's rows, and
 * DBSCAN, GjGeoBandRows through core/slab_density.c's band).  PostGIS's
 * own answers come from geo_postgis.c; pairs and lists as they stream are
 * decided in windows (emit.c).
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"

#include "job/job_internal.h"

/*
 * After the reads: check that the inputs and arguments agree, and make the
 * geography sides earth-centred.  geo->on is false (nothing changes) when
 * the input is not geography.  r_* describe the query side (NULL: none).
 */
void
GjGeographySetup(GjGeography *geo, GjJobSpec *spec, const GjReadStats *s_read,
				 gj_points *points, gj_geo_side *s_side,
				 const GjReadStats *r_read, gj_points *queries, gj_geo_side *r_side)
{
	double		a,
				b;
	int32		srid;

	memset(geo, 0, sizeof(*geo));
	if (r_read != NULL && r_read->geography != s_read->geography)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: one side is geography and the other is not", spec->fname),
				 errhint("Cast both to geography, or both to geometry.")));
	if (!s_read->geography)
	{
		if (spec->spheroid_given)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: use_spheroid applies to geography columns only", spec->fname)));
		return;
	}
	if (spec->metric != GJ_METRIC_L2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: geography is measured in metres on the Earth, not by metric \"cosine\"",
						spec->fname)));
	if (spec->is_knn && spec->use_spheroid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s: the kNN joins rank geography on PostGIS's sphere, as its <-> operator does",
						spec->fname),
				 errhint("Leave use_spheroid at its default, false.")));
	/* one SRID: job.c has already refused two, as for geometry */
	srid = r_read != NULL && r_read->srid >= 0 ? r_read->srid : s_read->srid;
	if (srid < 0)
		srid = 4326;			/* no rows at all: PostGIS's default */
	GjGeographySpheroid(spec->fname, s_read->postgis_nsp, srid, &a, &b);
	GjCheckStatus(gj_geodetic_init(&geo->g, a, b, spec->use_spheroid && !spec->is_knn,
								   spec->is_knn ? 0 : spec->eps),
				  "setting up the geography distance");
	geo->on = true;
	geo->srid = srid;
	geo->nsp = s_read->postgis_nsp;
	geo->fname = spec->fname;
	geo->use_spheroid = spec->use_spheroid && !spec->is_knn;
	/* the engines find every chord up to out_min; the band is checked here */
	spec->eps2 = geo->g.out_min * geo->g.out_min;
	GjCheckStatus(gj_geodetic_points(&geo->g, points, s_side), "making geography points");
	if (queries != NULL)
		GjCheckStatus(gj_geodetic_points(&geo->g, queries, r_side), "making geography points");
}

/*
 * Are the n pairs (ids ida[k] of sa and idb[k] of sb, c[k] apart as the
 * engines measure) within d: within[k], and with metres non-NULL each
 * pair's distance on the surface in metres[k] (where within).  The chord
 * settles all but the band between in_max and out_min.  The band's pairs go to PostGIS in
 * batches, one query each: a query a pair costs its parse and plan (0.35 ms
 * here), a batch of 4096 about what 40 of those do.
 */
#define GJ_GEO_BATCH 4096
#define GJ_GEO_SLICE_ROWS 2048		/* pairs a thread is worth starting for */

/* The chord's verdicts and metres for a slice of the pairs, on a thread. */
typedef struct GeoDecideRows
{
	const GjGeography *geo;
	gj_geo_side *sa;
	gj_geo_side *sb;
	const int64 *ida;
	const int64 *idb;
	const double *c;
	bool	   *within;
	double	   *metres;
	volatile int err;			/* a gj_status other than GJ_OK, if any */
} GeoDecideRows;

static void
GeoDecideSlice(void *arg, int64_t r0, int64_t r1)
{
	GeoDecideRows *d = arg;

	for (int64_t k = r0; k < r1; k++)
	{
		gj_status	st;

		d->within[k] = d->c[k] <= d->geo->g.in_max;
		if (d->within[k] && d->metres != NULL &&
			(st = gj_geo_pair_metres(&d->geo->g, d->sa, d->ida[k], d->sb, d->idb[k], d->c[k],
									 &d->metres[k])) != GJ_OK)
			d->err = st;
	}
}

void
GjGeographyDecide(GjGeography *geo, gj_geo_side *sa, const int64 *ida,
				  gj_geo_side *sb, const int64 *idb, const double *c, int64 n, bool *within,
				  double *metres)
{
	double	   *ll = NULL;		/* made at the first band pair */
	double	   *m = NULL;
	bool	   *ans = NULL;
	int64	   *at = NULL;
	int			nb = 0;
	GeoDecideRows d = {geo, sa, sb, ida, idb, c, within, metres, GJ_OK};
	gj_status	st;
	int			nt = 1;

	if (n <= 0)
		return;
	/*
	 * What the chord settles: where pairs within d need the geodesic (on
	 * the spheroid beyond a few km, most of a long-range join's time) on
	 * the cores, else here (the chord's arc costs less than starting
	 * threads, which would also take cores from the engine's own: 10-20%
	 * slower at 500 m on 2 cores).  The sides' id index is built on first
	 * use, so before the threads.
	 */
	if (metres != NULL && gj_geodetic_long(&geo->g))
	{
		GjCheckStatus(gj_geo_side_index(sa), "indexing geography rows");
		GjCheckStatus(gj_geo_side_index(sb), "indexing geography rows");
		nt = Min(gj_slices_for(n, GJ_GEO_SLICE_ROWS), GjCpuThreads());
	}
	st = gj_run_rows(GeoDecideSlice, &d, 0, n, nt);
	if (st == GJ_ERR_CANCELED)
		CHECK_FOR_INTERRUPTS();
	GjCheckStatus(st != GJ_OK ? st : (gj_status) d.err, "measuring geography pairs");
	/* the band, PostGIS's to decide, in batches */
	for (int64 k = 0; k <= n; k++)
	{
		if (k < n)
		{
			const double *lla,
					   *llb;

			if (c[k] <= geo->g.in_max || c[k] > geo->g.out_min)
				continue;
			if (ll == NULL)
			{
				ll = palloc(sizeof(double) * 4 * GJ_GEO_BATCH);
				m = palloc(sizeof(double) * GJ_GEO_BATCH);
				ans = palloc(sizeof(bool) * GJ_GEO_BATCH);
				at = palloc(sizeof(int64) * GJ_GEO_BATCH);
			}
			GjCheckStatus(gj_geo_side_pair(sa, ida[k], sb, idb[k], c[k], &lla, &llb),
						  "finding a geography pair's rows");
			memcpy(ll + 4 * nb, lla, sizeof(double) * 2);
			memcpy(ll + 4 * nb + 2, llb, sizeof(double) * 2);
			at[nb++] = k;
		}
		if (nb == GJ_GEO_BATCH || (k == n && nb > 0))
		{
			CHECK_FOR_INTERRUPTS();
			GjGeographyWithinMany(geo->fname, geo->nsp, geo->srid, geo->use_spheroid, geo->g.d,
								  nb, ll, ans, m);
			for (int b = 0; b < nb; b++)
			{
				within[at[b]] = ans[b];
				if (metres != NULL)
					metres[at[b]] = m[b];
			}
			geo->band_pairs += nb;
			nb = 0;
		}
	}
	if (ll != NULL)
	{
		pfree(ll);
		pfree(m);
		pfree(ans);
		pfree(at);
	}
}

/*
 * Counts found at out_min (counts[i] for row i: rows[i] of points, or of
 * queries when it is not NULL; rows NULL: row i) become the counts within
 * d: counted again at in_max, for those rows only, and the rows whose two
 * counts differ look for their band partners among the points of their
 * grid neighbourhood and ask PostGIS about them.  The grid is built at
 * out_min, so that its neighbourhoods hold every band partner, and counts
 * at in_max (a grid serves any smaller eps).
 */
void
GjGeographyRepairCounts(GjGeography *geo, gj_points *points, gj_geo_side *s_side,
						const gj_points *queries, gj_geo_side *r_side,
						const uint32 *rows, int64 nrows, int32 *counts)
{
	gj_points	copy,
				sub;
	gj_grid		grid;
	int32	   *lo = palloc(sizeof(int32) * (nrows + 1));
	const gj_points *qs;
	gj_geo_side *q_side = queries != NULL ? r_side : s_side;
	double		in2 = geo->g.in_max * geo->g.in_max,
				out2 = geo->g.out_min * geo->g.out_min;
	int64		nbr[GJ_MAX_ALL_NEIGHBOURS];
	gj_status	st;

	/*
	 * The rows asked about, as probes (a self count has the row itself, at
	 * distance 0), and a copy of the points whose ids are their rows, for
	 * the grid
	 */
	gj_points_init(&sub, 3);
	gj_points_init(&copy, 3);
	memset(&grid, 0, sizeof(grid));
	st = gj_points_reserve(&copy, points->n);
	if (st == GJ_OK && queries == NULL && rows != NULL)
		st = gj_points_reserve(&sub, nrows);
	if (st == GJ_OK)
	{
		memcpy(copy.x, points->x, sizeof(double) * 3 * points->n);
		for (int64 i = 0; i < points->n; i++)
			copy.ids[i] = i;
		copy.n = points->n;
		for (int64 i = 0; queries == NULL && rows != NULL && i < nrows; i++)
		{
			memcpy(sub.x + 3 * i, points->x + 3 * rows[i], sizeof(double) * 3);
			sub.ids[i] = points->ids[rows[i]];
		}
		sub.n = queries == NULL && rows != NULL ? nrows : 0;
		st = gj_grid_build(&grid, &copy, out2);
	}
	qs = queries != NULL ? queries : rows != NULL ? &sub : points;
	if (st == GJ_OK)
	{
		grid.eps2 = in2;		/* its cells are wide enough for the smaller eps */
		st = gj_cpu_count_queries(&grid, &copy, qs, GjCpuThreads(), lo);
	}
	if (st != GJ_OK)
	{
		gj_grid_free(&grid);
		gj_points_free(&copy);
		gj_points_free(&sub);
		GjCheckStatus(st, "counting geography pairs");
	}

	PG_TRY();
	{
		/* the band pairs of the rows whose counts differ, then PostGIS's word on all */
		int64		cap = 1024,
					nb = 0;
		int64	   *who = palloc(sizeof(int64) * cap),
				   *ida = palloc(sizeof(int64) * cap),
				   *idb = palloc(sizeof(int64) * cap);
		double	   *cs = palloc(sizeof(double) * cap);
		bool	   *within;

		for (int64 i = 0; i < nrows; i++)
		{
			const double *xp = qs->x + 3 * i;
			int			nn;

			if (counts[i] == lo[i])
				continue;		/* no band partner */
			counts[i] = lo[i];
			CHECK_FOR_INTERRUPTS();
			nn = gj_grid_point_neighbourhood(&grid, xp, nbr);
			for (int k = 0; k < nn; k++)
				for (int64 r = grid.cell_start[nbr[k]]; r < grid.cell_start[nbr[k] + 1]; r++)
				{
					double		c2 = gj_sqdist(xp, copy.x + 3 * r, 3);

					if (c2 <= in2 || c2 > out2)
						continue;
					if (nb == cap)
					{
						cap *= 2;
						who = repalloc(who, sizeof(int64) * cap);
						ida = repalloc(ida, sizeof(int64) * cap);
						idb = repalloc(idb, sizeof(int64) * cap);
						cs = repalloc(cs, sizeof(double) * cap);
					}
					who[nb] = i;
					ida[nb] = qs->ids[i];
					idb[nb] = points->ids[copy.ids[r]];
					cs[nb++] = sqrt(c2);
				}
		}
		within = palloc(sizeof(bool) * (nb + 1));
		GjGeographyDecide(geo, q_side, ida, s_side, idb, cs, nb, within, NULL);
		for (int64 b = 0; b < nb; b++)
			counts[who[b]] += within[b];
		pfree(who);
		pfree(ida);
		pfree(idb);
		pfree(cs);
		pfree(within);
	}
	PG_FINALLY();
	{
		gj_grid_free(&grid);
		gj_points_free(&copy);
		gj_points_free(&sub);
	}
	PG_END_TRY();
	pfree(lo);
}

/*
 * Geography counts and DBSCAN of all the rows: the engines count within
 * the chords in_max and out_min (core/slab_density.c's band: on the GPU
 * where it can, in slabs where it must, else on the CPU), PostGIS decides
 * the pairs in between, and DBSCAN clusters under that rule, the band's
 * pairs linking as the others do.  res->rowval (and rowflag) follow the
 * rows' new order.
 */
void
GjGeoBandRows(GjJob *job, bool allow_gpu)
{
	GjResources *res = job->res;
	gj_points  *p = &res->points;
	int64		n = p->n;
	double		in2 = job->geo.g.in_max * job->geo.g.in_max,
				out2 = job->spec.eps2;
	bool		dbscan = job->spec.shape == GJ_SHAPE_DBSCAN;
	bool		gpu = allow_gpu && GjChooseEngine(n) == GJ_ENGINE_GPU;
	int			nthreads = GjCpuThreads();
	int64		max_rows = 0;
	gj_gpu_slab_ctx ctx;
	gj_slab_engine e;
	gj_slab_info si;
	gj_band		found,
				band;
	int64		kept = 0;
	gj_status	st = GJ_OK;
	double		t0;

	GjAllocRowResults(job, n);
	GjRowsMoved(res);
	memset(&ctx, 0, sizeof(ctx));
	if (gpu)
	{
		max_rows = GjSlabRows(p->dims,
							dbscan ? GJ_GPU_DENSITY_ROW_BYTES + GJ_GPU_DENSITY_GIVEN_ROW_BYTES : 0, 1);
		gpu = max_rows >= 4096;
	}
	if (gpu)
	{
		gj_gpu_slab_engine(&e, &ctx);
		GjGpuOptionsInit(&ctx.opt, false);
		st = gj_slab_band(p, in2, out2, max_rows, &e, res->rowval, &found, &si);
		if (st != GJ_OK)
			gpu = GjGpuStartFailed(job, st, ctx.err[0] ? ctx.err : "the slabs could not be planned");
	}
	if (!gpu)
	{
		gj_cpu_slab_engine(&e, &nthreads);
		max_rows = 2 * n + 2;	/* one slab */
		GjCheckCore(gj_slab_band(p, in2, out2, max_rows, &e, res->rowval, &found, &si),
					job->spec.fname);
	}

	/* the band in the job's memory, then PostGIS's word on each pair */
	t0 = gj_now_ms();
	band = found;
	band.a = palloc(sizeof(int64) * (found.n + 1));
	band.b = palloc(sizeof(int64) * (found.n + 1));
	band.c = palloc(sizeof(double) * (found.n + 1));
	memcpy(band.a, found.a, sizeof(int64) * found.n);
	memcpy(band.b, found.b, sizeof(int64) * found.n);
	memcpy(band.c, found.c, sizeof(double) * found.n);
	gj_band_free(&found);
	{
		int64	   *ida = palloc(sizeof(int64) * (band.n + 1)),
				   *idb = palloc(sizeof(int64) * (band.n + 1));
		bool	   *within = palloc(sizeof(bool) * (band.n + 1));

		for (int64 k = 0; k < band.n; k++)
		{
			ida[k] = p->ids[band.a[k]];
			idb[k] = p->ids[band.b[k]];
		}
		GjGeographyDecide(&job->geo, &res->geo_points, ida, &res->geo_points, idb, band.c,
						  band.n, within, NULL);
		for (int64 k = 0; k < band.n; k++)
			if (within[k])
			{
				res->rowval[band.a[k]]++;
				res->rowval[band.b[k]]++;
				band.a[kept] = band.a[k];
				band.b[kept] = band.b[k];
				band.c[kept++] = band.c[k];
			}
		pfree(ida);
		pfree(idb);
		pfree(within);
	}
	elog(DEBUG1, "%s: %lld band pairs, %lld within d, decided in %.1f ms; %lld slabs, counts %.1f ms",
		 job->spec.fname, (long long) band.n, (long long) kept, gj_now_ms() - t0,
		 (long long) si.nslabs, si.counts_ms);
	band.n = kept;

	if (dbscan)
	{
		for (int64 i = 0; i < n; i++)
			res->rowflag[i] = res->rowval[i] >= job->spec.minpts;
		st = gj_slab_band_dbscan(p, in2, out2, res->rowflag, &band, max_rows, &e,
								 res->rowval, &si);
		if (st != GJ_OK && st != GJ_ERR_CANCELED && gpu)
		{
			gpu = GjGpuStartFailed(job, st, ctx.err[0] ? ctx.err : "a slab step failed");
			gj_cpu_slab_engine(&e, &nthreads);
			max_rows = 2 * n + 2;
			st = gj_slab_band_dbscan(p, in2, out2, res->rowflag, &band, max_rows, &e,
									 res->rowval, &si);
		}
		GjCheckCore(st, job->spec.fname);
	}
	pfree(band.a);
	pfree(band.b);
	pfree(band.c);
	if (gpu)
	{
		job->stats.index_ms += ctx.info.index_ms;
		job->stats.batches = ctx.info.launches;
		GjEngineRan(job, si.nslabs > 1 ? "gpu (slabs)" : "gpu", 0);
		if (si.nslabs > 1)
		{
			job->stats.slices = si.nslabs;
			job->stats.slice_rows = max_rows;
			job->stats.slab_steps = si.calls;
		}
	}
	else
		GjEngineRan(job, "cpu", nthreads);
	job->rows.geo_band = true;
}
