/*
 * geodetic.c
 *		Longitude/latitude points as 3-D points on the Earth, so that the
 *		engines' Euclidean chord decides PostGIS's geography distances.
 *
 * PostGIS measures geography in metres along the surface: on its sphere
 * of radius (2a + b) / 3, or along the geodesic of the spheroid (a, b).
 * Both grow with the straight chord between the two points in 3-D
 * (earth-centred coordinates), and the chord is a Euclidean distance the
 * grid index and every engine already compute exactly.  So a geography
 * join is an ordinary 3-D join at a chord threshold, plus a thin band of
 * chords where float64 rounding (sphere) or the spheroid's curvature does
 * not settle the answer:
 *
 *   sphere:   distance R * theta, chord 2 R sin(theta / 2): one grows with
 *             the other, so distance <= d exactly when the chord is at
 *             most 2 R sin(d / 2R).  The band is only the rounding margin.
 *   spheroid: the geodesic s is at least the chord c (a straight line is
 *             shortest), and a curve whose curvature is at most k has a
 *             chord of at least (2/k) sin(k s / 2) (Schur's comparison
 *             theorem, for s <= pi / k).  A geodesic's curvature in space
 *             is the surface's normal curvature, at most k = a / b^2 (the
 *             meridian at the equator).  So c > d: beyond d; c <=
 *             (2/k) sin(k d / 2): within d; the band between is
 *             d^3 k^2 / 24 wide (0.13 micrometres at d = 500 m, 13 cm
 *             at 50 km).
 *
 * Both bounds carry a margin of GJ_GEO_MARGIN metres, far above the
 * float64 error of the coordinates (~1e-8 m) and of PostGIS's own
 * distances (its geodesic is GeographicLib's, good to 15 nm).  Pairs in the
 * band are decided by PostGIS itself (postgis.c), so the answer is
 * PostGIS's to the last bit while almost every pair is decided here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

/* metres added on both sides of every bound: covers all rounding */
#define GJ_GEO_MARGIN 1e-6
/* beyond this d the curvature bound is not used: every candidate is in the band */
#define GJ_GEO_BOUND_MAX_D 1e7

gj_status
gj_geodetic_init(gj_geodetic *g, double a, double b, int spheroid, double d)
{
	double		margin;

	if (!(a > 0) || !(b > 0) || b > a || !(d >= 0) || !isfinite(d))
		return GJ_ERR_ARG;
	g->spheroid = spheroid;
	g->d = d;
	margin = GJ_GEO_MARGIN + 1e-12 * d;
	if (!spheroid)
	{
		double		r = (2.0 * a + b) / 3.0;
		double		th_lo = (d - margin) / r,
					th_hi = (d + margin) / r;

		g->a = g->b = r;
		g->e2 = 0;
		g->in_max = th_lo <= 0 ? 0 : 2.0 * r * sin(fmin(th_lo, M_PI) / 2.0) - margin;
		g->out_min = th_hi >= M_PI ? 2.0 * r + 1.0 : 2.0 * r * sin(th_hi / 2.0) + margin;
		if (g->in_max < 0)
			g->in_max = 0;
	}
	else
	{
		double		k = a / (b * b);

		g->a = a;
		g->b = b;
		g->e2 = (a * a - b * b) / (a * a);
		g->out_min = d + margin;
		g->in_max = d > GJ_GEO_BOUND_MAX_D || d <= margin ? 0 :
			(2.0 / k) * sin(k * (d - margin) / 2.0) - margin;
		if (g->in_max < 0)
			g->in_max = 0;
	}
	return GJ_OK;
}

/*
 * Longitude and latitude in degrees (n rows of 2) to earth-centred x, y, z
 * in metres (n rows of 3) on g's surface.  ll and xyz may not overlap.
 */
void
gj_geodetic_to_xyz(const gj_geodetic *g, const double *ll, double *xyz, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
	{
		double		lon = ll[2 * i] * (M_PI / 180.0),
					lat = ll[2 * i + 1] * (M_PI / 180.0);
		double		sl = sin(lat),
					cl = cos(lat);
		double		nrad = g->a / sqrt(1.0 - g->e2 * sl * sl);

		xyz[3 * i] = nrad * cl * cos(lon);
		xyz[3 * i + 1] = nrad * cl * sin(lon);
		xyz[3 * i + 2] = nrad * (1.0 - g->e2) * sl;
	}
}

/*
 * The distance in metres along g's surface between earth-centred points p
 * and q, c (their chord) apart: the arc of that chord on a circle of the
 * surface's curvature.  Sphere: exact but for rounding.  Spheroid: the
 * normal section's curvature where the chord's midpoint is (Euler's
 * formula) when p is given, within 1e-8 m of PostGIS's geodesic up to
 * 50 km, 1 mm at 500 km, 1 m at 2,000 km; without p, the mean of the
 * largest and smallest curvature, within 1.3 micrometres up to 5 km.
 */
static double
chord_metres(const gj_geodetic *g, const double *p, const double *q, double c)
{
	double		k;

	if (c <= 0)
		return 0;
	if (!g->spheroid)
		k = 1.0 / g->a;
	else if (p == NULL)
	{
		double		kmax = g->a / (g->b * g->b),
					kmin = g->b / (g->a * g->a);

		k = sqrt(0.5 * (kmax * kmax + kmin * kmin));
	}
	else
	{
		double		m[3],
					u[3],
					rho,
					h,
					sp,
					cp,
					sl,
					cl,
					ca,
					sa,
					w,
					mrad,
					nrad;

		for (int i = 0; i < 3; i++)
		{
			m[i] = 0.5 * (p[i] + q[i]);
			u[i] = (q[i] - p[i]) / c;
		}
		/*
		 * The midpoint's geodetic latitude phi and longitude lam, as their
		 * sines and cosines straight from the coordinates (tan phi = z /
		 * ((1 - e2) rho), tan lam = y / x): no atan2, sin or cos, which were
		 * a third of the long pairs' time.  On the axis lam is taken as 0,
		 * at the centre phi, as atan2(0, 0) gave.
		 */
		rho = sqrt(m[0] * m[0] + m[1] * m[1]);
		h = sqrt(m[2] * m[2] + (1.0 - g->e2) * rho * ((1.0 - g->e2) * rho));
		sp = h > 0 ? m[2] / h : 0.0;
		cp = h > 0 ? (1.0 - g->e2) * rho / h : 1.0;
		sl = rho > 0 ? m[1] / rho : 0.0;
		cl = rho > 0 ? m[0] / rho : 1.0;
		/* the chord's direction in the midpoint's north and east */
		ca = -sp * cl * u[0] - sp * sl * u[1] + cp * u[2];
		sa = -sl * u[0] + cl * u[1];
		w = sqrt(1.0 - g->e2 * sp * sp);
		mrad = g->a * (1.0 - g->e2) / (w * w * w);
		nrad = g->a / w;
		k = ca * ca + sa * sa > 0 ? (ca * ca / mrad + sa * sa / nrad) / (ca * ca + sa * sa) : 1.0 / nrad;
	}
	return (2.0 / k) * asin(fmin(1.0, c * k / 2.0));
}

/*
 * Convert p (lon/lat rows, dims 2) to earth-centred rows (dims 3) on g's
 * surface, in fresh arrays.  side, when not NULL, keeps the rows as read
 * (ids and lon/lat) for gj_geo_side_pair: PostGIS is asked about a pair
 * with the very coordinates it stored.
 */
gj_status
gj_geodetic_points(const gj_geodetic *g, gj_points *p, gj_geo_side *side)
{
	int64_t		n = p->n;
	double	   *xyz;
	int64_t    *ids;

	if (p->dims != 2)
		return GJ_ERR_ARG;
	xyz = malloc(sizeof(double) * 3 * (n + 1));
	ids = malloc(sizeof(int64_t) * (n + 1));
	if (side != NULL)
	{
		memset(side, 0, sizeof(*side));
		side->ll = malloc(sizeof(double) * 2 * (n + 1));
		side->xyz = malloc(sizeof(double) * 3 * (n + 1));
		side->ids = malloc(sizeof(int64_t) * (n + 1));
	}
	if (xyz == NULL || ids == NULL ||
		(side != NULL && (side->ll == NULL || side->xyz == NULL || side->ids == NULL)))
	{
		free(xyz);
		free(ids);
		if (side != NULL)
			gj_geo_side_free(side);
		return GJ_ERR_NOMEM;
	}
	gj_geodetic_to_xyz(g, p->x, xyz, n);
	memcpy(ids, p->ids, sizeof(int64_t) * n);
	if (side != NULL)
	{
		side->n = n;
		memcpy(side->ll, p->x, sizeof(double) * 2 * n);
		memcpy(side->xyz, xyz, sizeof(double) * 3 * n);
		memcpy(side->ids, p->ids, sizeof(int64_t) * n);
	}
	gj_points_replace(p, xyz, ids);
	p->dims = 3;
	return GJ_OK;
}

static int
cmp_id_row(const void *x, const void *y)
{
	const int64_t *a = x,
			   *b = y;

	if (a[0] != b[0])
		return a[0] < b[0] ? -1 : 1;
	return a[1] < b[1] ? -1 : a[1] > b[1];
}

gj_status
gj_geo_side_index(gj_geo_side *s)
{
	if (s->by_id == NULL)
	{
		/* sorted on first use: most joins never ask */
		s->by_id = malloc(sizeof(int64_t) * 2 * (s->n + 1));
		if (s->by_id == NULL)
			return GJ_ERR_NOMEM;
		for (int64_t i = 0; i < s->n; i++)
		{
			s->by_id[2 * i] = s->ids[i];
			s->by_id[2 * i + 1] = i;
		}
		qsort(s->by_id, s->n, 2 * sizeof(int64_t), cmp_id_row);
		/*
		 * Ids within a few times n of each other (a serial key): a table
		 * of where each id's rows start, so that a lookup is two loads, not
		 * a binary search (a fifth of the long-range metres' time, with 6000
		 * rows).
		 */
		if (s->n > 0)
		{
			int64_t		lo = s->by_id[0],
						hi = s->by_id[2 * (s->n - 1)];
			uint64_t	span = (uint64_t) hi - (uint64_t) lo;

			if (span <= 4 * (uint64_t) s->n + 1024 &&
				(s->dense = malloc(sizeof(int64_t) * (span + 2))) != NULL)
			{
				int64_t		r = 0;

				s->min_id = lo;
				s->id_span = span;
				for (uint64_t v = 0; v <= span + 1; v++)
				{
					while (r < s->n && (uint64_t) (s->by_id[2 * r] - lo) < v)
						r++;
					s->dense[v] = r;
				}
			}
		}
	}
	return GJ_OK;
}

/* The rows of s whose id is id: *count of them from *first in s->by_id. */
static gj_status
side_find(gj_geo_side *s, int64_t id, int64_t *first, int64_t *count)
{
	int64_t		lo = 0,
				hi = s->n;
	gj_status	st = gj_geo_side_index(s);

	if (st != GJ_OK)
		return st;
	if (s->dense != NULL)
	{
		uint64_t	v = (uint64_t) id - (uint64_t) s->min_id;	/* (below min_id: huge) */

		if (v > s->id_span)
			return GJ_ERR_ARG;
		*first = s->dense[v];
		*count = s->dense[v + 1] - s->dense[v];
		return *count > 0 ? GJ_OK : GJ_ERR_ARG;
	}
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (s->by_id[2 * mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	while (hi < s->n && s->by_id[2 * hi] == id)
		hi++;
	*count = hi - lo;
	return *count > 0 ? GJ_OK : GJ_ERR_ARG;
}

/*
 * The rows (*ra of sa, *rb of sb) of the pair (ida, idb) that an engine
 * reported c apart.  Ids may repeat: of the rows with those ids, the two
 * whose chord is c (the engines compute it as gj_sqdist does, from the
 * same earth-centred rows), else the nearest to c.
 */
static gj_status
side_pair_rows(gj_geo_side *sa, int64_t ida, gj_geo_side *sb, int64_t idb, double c,
			   int64_t *ra, int64_t *rb)
{
	int64_t		fa,
				na,
				fb,
				nb;
	double		best = INFINITY;
	gj_status	st;

	if ((st = side_find(sa, ida, &fa, &na)) != GJ_OK ||
		(st = side_find(sb, idb, &fb, &nb)) != GJ_OK)
		return st;
	*ra = sa->by_id[2 * fa + 1];
	*rb = sb->by_id[2 * fb + 1];
	if (na == 1 && nb == 1)
		return GJ_OK;			/* (the usual case: nothing to choose) */
	for (int64_t i = fa; i < fa + na && best > 0; i++)
		for (int64_t j = fb; j < fb + nb && best > 0; j++)
		{
			int64_t		a = sa->by_id[2 * i + 1],
						b = sb->by_id[2 * j + 1];
			double		diff = fabs(sqrt(gj_sqdist(sa->xyz + 3 * a, sb->xyz + 3 * b, 3)) - c);

			if (diff < best)
			{
				best = diff;
				*ra = a;
				*rb = b;
			}
		}
	return GJ_OK;
}

/* The stored lon/lat of the pair (ida from sa, idb from sb) that an engine reported c apart. */
gj_status
gj_geo_side_pair(gj_geo_side *sa, int64_t ida, gj_geo_side *sb, int64_t idb, double c,
				 const double **lla, const double **llb)
{
	int64_t		ra,
				rb;
	gj_status	st = side_pair_rows(sa, ida, sb, idb, c, &ra, &rb);

	if (st != GJ_OK)
		return st;
	*lla = sa->ll + 2 * ra;
	*llb = sb->ll + 2 * rb;
	return GJ_OK;
}

void
gj_geo_side_free(gj_geo_side *s)
{
	free(s->ids);
	free(s->ll);
	free(s->xyz);
	free(s->by_id);
	free(s->dense);
	memset(s, 0, sizeof(*s));
}

/*
 * The distance in metres of the pair (ida from sa, idb from sb) that an
 * engine reported c apart.  Only a long chord on the spheroid looks the
 * rows up.
 */
gj_status
gj_geo_pair_metres(const gj_geodetic *g, gj_geo_side *sa, int64_t ida,
				   gj_geo_side *sb, int64_t idb, double c, double *metres)
{
	int64_t		ra,
				rb;
	gj_status	st;

	if (!g->spheroid || c <= GJ_GEO_SHORT_CHORD)
	{
		*metres = chord_metres(g, NULL, NULL, c);
		return GJ_OK;
	}
	if ((st = side_pair_rows(sa, ida, sb, idb, c, &ra, &rb)) != GJ_OK)
		return st;
	*metres = chord_metres(g, sa->xyz + 3 * ra, sb->xyz + 3 * rb, c);
	return GJ_OK;
}

/* The same where the rows are not at hand: kNN and lists (short distances). */
double
gj_geodetic_chord_metres(const gj_geodetic *g, double c)
{
	return chord_metres(g, NULL, NULL, c);
}
