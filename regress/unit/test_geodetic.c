/*
 * test_geodetic.c
 *		Unit tests of core/geodetic.c: geography points made earth-centred,
 *		the chord bounds that decide PostGIS's distances, and the lookup of
 *		a pair's stored coordinates.
 *
 * On the sphere the reference is the great-circle distance in long double
 * (haversine): every chord at most in_max must be within d, every chord
 * above out_min beyond it, and the band between them only the rounding
 * margin; the metres from a chord must match.  The spheroid's bounds are
 * checked against PostGIS's own geodesic in sql/geography.sql (no
 * geodesic here to compare with).  Duplicate ids must resolve to the rows
 * whose chord the engine reported.
 * The last line is "geodetic: N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

static int	passed = 0;
static int	failed = 0;

#define WGS84_A 6378137.0
#define WGS84_B (6378137.0 * (1.0 - 1.0 / 298.257223563))

static void
check(int ok, const char *what)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAILED: %s\n", what);
	}
}

static uint64_t rng = 88172645463325252ULL;

static double
uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double) (rng >> 11) / 9007199254740992.0;
}

/* Great-circle distance in metres on a sphere of radius r, in long double. */
static long double
haversine(const double *p, const double *q, long double r)
{
	long double d2r = 3.14159265358979323846264338327950288L / 180.0L;
	long double dlat = (q[1] - p[1]) * d2r,
				dlon = (q[0] - p[0]) * d2r;
	long double h = sinl(dlat / 2) * sinl(dlat / 2) +
		cosl(p[1] * d2r) * cosl(q[1] * d2r) * sinl(dlon / 2) * sinl(dlon / 2);

	return 2.0L * r * asinl(sqrtl(fminl(1.0L, h)));
}

/* A point d metres (on the sphere) from p in a random direction. */
static void
project(const double *p, double d, long double r, double *q)
{
	long double d2r = 3.14159265358979323846264338327950288L / 180.0L;
	long double lat = p[1] * d2r,
				lon = p[0] * d2r,
				az = uniform() * 2 * M_PI,
				del = d / r;
	long double lat2 = asinl(sinl(lat) * cosl(del) + cosl(lat) * sinl(del) * cosl(az));
	long double lon2 = lon + atan2l(sinl(az) * sinl(del) * cosl(lat),
									cosl(del) - sinl(lat) * sinl(lat2));

	q[0] = (double) (lon2 / d2r);
	q[1] = (double) (lat2 / d2r);
}

static void
sphere_bounds(double d, int n)
{
	gj_geodetic g;
	long double r;
	int			bad_in = 0,
				bad_out = 0,
				bad_metres = 0,
				in_band = 0;
	char		what[128];

	gj_geodetic_init(&g, WGS84_A, WGS84_B, 0, d);
	r = (2.0L * WGS84_A + WGS84_B) / 3.0L;
	for (int i = 0; i < n; i++)
	{
		double		p[2],
					q[2],
					xp[3],
					xq[3],
					c;
		long double s;

		p[0] = uniform() * 360 - 180;
		p[1] = i % 10 == 0 ? 89.9 + uniform() * 0.1 : uniform() * 180 - 90;
		/* around d: within a few micrometres, or anywhere up to 2 d */
		project(p, i % 2 ? d + (uniform() - 0.5) * 1e-5 : uniform() * 2 * d, r, q);
		gj_geodetic_to_xyz(&g, p, xp, 1);
		gj_geodetic_to_xyz(&g, q, xq, 1);
		c = sqrt(gj_sqdist(xp, xq, 3));
		s = haversine(p, q, r);
		bad_in += c <= g.in_max && s > d + 1e-9L;
		bad_out += c > g.out_min && s <= d - 1e-9L;
		in_band += c > g.in_max && c <= g.out_min;
		/* near the antipode the chord hardly moves: metres lose precision there */
		bad_metres += fabsl(gj_geodetic_chord_metres(&g, c) - s) >
			(s < 1.5e7L ? 1e-8L + 1e-15L * s : 1e-2L);
	}
	snprintf(what, sizeof(what), "sphere d=%g: chords at most in_max are within d (%d not)", d, bad_in);
	check(bad_in == 0, what);
	snprintf(what, sizeof(what), "sphere d=%g: chords above out_min are beyond d (%d not)", d, bad_out);
	check(bad_out == 0, what);
	snprintf(what, sizeof(what), "sphere d=%g: metres from the chord (%d off)", d, bad_metres);
	check(bad_metres == 0, what);
	snprintf(what, sizeof(what), "sphere d=%g: the band is a few micrometres (%g m)", d, g.out_min - g.in_max);
	/* (past half the circumference every pair is within: only antipodes are in doubt) */
	check((d > M_PI * r ? g.in_max >= 2 * r - 1e-4 : g.out_min - g.in_max < 1e-5 + 1e-11 * d) &&
		  in_band < n, what);
}

static void
spheroid_bounds(void)
{
	gj_geodetic g;
	char		what[128];

	/* the band is d^3 k^2 / 24 plus the margins: sub-micrometre at 500 m */
	gj_geodetic_init(&g, WGS84_A, WGS84_B, 1, 500);
	snprintf(what, sizeof(what), "spheroid d=500: band %g m", g.out_min - g.in_max);
	check(g.out_min - g.in_max < 4e-6 && g.in_max < 500 && g.out_min > 500, what);
	gj_geodetic_init(&g, WGS84_A, WGS84_B, 1, 50000);
	snprintf(what, sizeof(what), "spheroid d=50 km: band %g m", g.out_min - g.in_max);
	check(g.out_min - g.in_max < 0.2 && g.out_min - g.in_max > 0.1, what);
	/* beyond the comparison's reach, only a zero chord is settled as within */
	gj_geodetic_init(&g, WGS84_A, WGS84_B, 1, 2e7);
	check(g.in_max == 0 && g.out_min > 2e7, "spheroid d=20,000 km: everything in the band");
	check(gj_geodetic_init(&g, WGS84_A, WGS84_B, 1, -1) == GJ_ERR_ARG &&
		  gj_geodetic_init(&g, WGS84_A, WGS84_B, 1, NAN) == GJ_ERR_ARG &&
		  gj_geodetic_init(&g, WGS84_B, WGS84_A, 1, 1) == GJ_ERR_ARG, "bad arguments");
}

static void
points_and_lookup(void)
{
	gj_geodetic g;
	gj_points	p;
	gj_geo_side side;
	double		row[2];
	const double *la,
			   *lb;
	double		xa[3],
				xb[3],
				c,
				m;

	gj_geodetic_init(&g, WGS84_A, WGS84_B, 1, 500);
	gj_points_init(&p, 2);
	/* id 7 twice at different places, id 9 once */
	row[0] = 10;
	row[1] = 50;
	gj_points_push(&p, 7, row);
	row[1] = 50.002;
	gj_points_push(&p, 9, row);
	row[1] = 50.004;
	gj_points_push(&p, 7, row);
	check(gj_geodetic_points(&g, &p, &side) == GJ_OK && p.dims == 3 && p.n == 3 &&
		  p.ids[0] == 7 && p.ids[1] == 9 && p.ids[2] == 7 && side.n == 3 &&
		  side.ll[5] == 50.004, "points made earth-centred, rows kept as read");
	/* the engine reported the pair (row 2, row 1): the lookup finds row 2 */
	c = sqrt(gj_sqdist(p.x + 6, p.x + 3, 3));
	check(gj_geo_side_pair(&side, 7, &side, 9, c, &la, &lb) == GJ_OK &&
		  la[1] == 50.004 && lb[1] == 50.002, "a repeated id resolves by the reported chord");
	c = sqrt(gj_sqdist(p.x, p.x + 3, 3));
	check(gj_geo_side_pair(&side, 7, &side, 9, c, &la, &lb) == GJ_OK &&
		  la[1] == 50 && lb[1] == 50.002, "... and the other row of it");
	check(gj_geo_side_pair(&side, 8, &side, 9, c, &la, &lb) != GJ_OK &&
		  gj_geo_side_pair(&side, 6, &side, 9, c, &la, &lb) != GJ_OK &&
		  gj_geo_side_pair(&side, 7, &side, 10, c, &la, &lb) != GJ_OK, "an unknown id");
	check(side.dense != NULL, "close ids get the direct table");
	{
		/* ids far apart: the binary search, the same answers */
		gj_points	q;
		gj_geo_side sq;
		double		cq;

		gj_points_init(&q, 2);
		row[0] = 10;
		row[1] = 50;
		gj_points_push(&q, 7, row);
		row[1] = 50.002;
		gj_points_push(&q, INT64_C(1000000000000), row);
		row[1] = 50.004;
		gj_points_push(&q, 7, row);
		gj_geodetic_points(&g, &q, &sq);
		cq = sqrt(gj_sqdist(q.x + 6, q.x + 3, 3));
		check(gj_geo_side_pair(&sq, 7, &sq, INT64_C(1000000000000), cq, &la, &lb) == GJ_OK &&
			  la[1] == 50.004 && lb[1] == 50.002 && sq.dense == NULL &&
			  gj_geo_side_pair(&sq, 8, &sq, 7, cq, &la, &lb) != GJ_OK,
			  "far ids: found by search, a repeated id resolved by the chord");
		gj_geo_side_free(&sq);
		gj_points_free(&q);
	}
	/* a long chord looks its rows up for the curvature where it lies */
	row[0] = 10;
	row[1] = 50;
	gj_geodetic_to_xyz(&g, row, xa, 1);
	row[1] = 50.1;
	gj_geodetic_to_xyz(&g, row, xb, 1);
	check(gj_geo_pair_metres(&g, &side, 7, &side, 9, 1000, &m) == GJ_OK &&
		  fabs(m - gj_geodetic_chord_metres(&g, 1000)) < 1e-12, "a short chord needs no lookup");
	c = sqrt(gj_sqdist(p.x, p.x + 3, 3));
	check(gj_geo_pair_metres(&g, &side, 7, &side, 9, c, &m) == GJ_OK && m >= c && m - c < 1e-3,
		  "metres of a chord are at least the chord");
	gj_geo_side_free(&side);
	gj_points_free(&p);
	(void) xa;
	(void) xb;
}

int
main(void)
{
	static const double ds[] = {1, 500, 5e4, 2e6, 1.9e7, 2.1e7};

	for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
		sphere_bounds(ds[i], 20000);
	spheroid_bounds();
	points_and_lookup();
	printf("geodetic: %d passed, %d failed\n", passed, failed);
	return failed > 0;
}
