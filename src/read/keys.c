/*
 * keys.c
 *		One value of a join's key column as coordinates, straight from its
 *		Datum: a PostGIS point (geometry or geography), a pgvector value or
 *		a point of contrib's cube.
 *
 * The plain-SQL join (join/) reads its two sides through the executor, row
 * by row, not through a query of ours, so it cannot ask PostGIS for ST_X
 * and ST_Y (a function call of about a microsecond a row).  PostGIS 3's
 * serialized form (GSERIALIZED version 2, liblwgeom/gserialized2.c) is
 * read here instead: a varlena header, three bytes of SRID, one byte of
 * flags, an optional extended-flags word, an optional float box, then the
 * geometry's type and point count and the coordinates.  Anything this does
 * not know for certain to be one finite point (another version, another
 * type, a non-finite coordinate) is GJ_KEY_OTHER: the
 * join compares that row by the query's own predicate, so PostGIS decides
 * it, whatever it is.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "read/reader.h"

/* gserialized2.c's flags */
#define G2_Z			0x01
#define G2_M			0x02
#define G2_BBOX			0x04
#define G2_GEODETIC		0x08
#define G2_EXTENDED		0x10
#define G2_VERSION		0x40	/* set in version 2 */
#define LW_POINTTYPE	1

static GjKeyResult CubePoint(Datum d, double *out, int *dims);

/* A geometry or geography value's first point (x, y) and SRID. */
static GjKeyResult
PostgisPoint(Datum d, bool geodetic, double *out, int32 *srid)
{
	struct varlena *v = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(d));
	const uint8 *p = (const uint8 *) VARDATA_ANY(v);
	Size		len = VARSIZE_ANY_EXHDR(v);
	Size		off = 4;
	uint8		flags;
	int			ndims;
	uint32		type,
				npoints;
	int32		s;

	if (len < 4)
		return GJ_KEY_OTHER;
	flags = p[3];
	if (!(flags & G2_VERSION) || ((flags & G2_GEODETIC) != 0) != geodetic)
		return GJ_KEY_OTHER;
	ndims = 2 + ((flags & G2_Z) != 0) + ((flags & G2_M) != 0);
	if (flags & G2_EXTENDED)
		off += 8;
	if (flags & G2_BBOX)
		off += sizeof(float) * 2 * (geodetic ? 3 : ndims);
	if (len < off + 8)
		return GJ_KEY_OTHER;
	/* the word after the type counts points, rings or parts: 0 is empty */
	memcpy(&type, p + off, 4);
	memcpy(&npoints, p + off + 4, 4);
	off += 8;
	if (npoints == 0)
		return GJ_KEY_EMPTY;	/* any type: its points, rings or parts */
	if (type != LW_POINTTYPE || npoints != 1 || len < off + sizeof(double) * ndims)
		return GJ_KEY_OTHER;
	memcpy(out, p + off, 2 * sizeof(double));
	if (!isfinite(out[0]) || !isfinite(out[1]))
		return GJ_KEY_OTHER;
	s = (int32) (((uint32) p[0] << 16) | ((uint32) p[1] << 8) | p[2]);
	*srid = (int32) ((uint32) s << 11) >> 11;	/* 21 bits, sign-extended */
	return GJ_KEY_OK;
}

/*
 * The coordinates of key value d of kind into out (dims of them: 2 for
 * PostGIS points, lon/lat for geography; a vector's own dimensions, which
 * must equal *dims when it is not 0, and set it when it is).  *tag is the
 * SRID of a PostGIS value.  GJ_KEY_OTHER: the engine cannot take this
 * value; the caller leaves it to the predicate.
 */
GjKeyResult
GjKeyCoords(GjKeyKind kind, Datum d, double *out, int *dims, int32 *tag)
{
	struct varlena *v;
	int			vk,
				n;

	*tag = 0;
	switch (kind)
	{
		case GJ_KEY_GEOMETRY:
			return PostgisPoint(d, false, out, tag);
		case GJ_KEY_GEOGRAPHY:
			return PostgisPoint(d, true, out, tag);
		case GJ_KEY_CUBE:
			return CubePoint(d, out, dims);
		case GJ_KEY_VECTOR:
		case GJ_KEY_HALFVEC:
			vk = kind == GJ_KEY_VECTOR ? GJ_VEC_VECTOR : GJ_VEC_HALFVEC;
			v = pg_detoast_datum((struct varlena *) DatumGetPointer(d));
			n = GjPgvectorDims(v, vk, "GpuJoin");
			if (*dims != 0 && n != *dims)
				return GJ_KEY_OTHER;	/* pgvector's own error, from the predicate */
			if (n > GJ_MAX_DIMS)
				return GJ_KEY_OTHER;
			*dims = n;
			GjPgvectorToFloat8(v, vk, out);
			for (int i = 0; i < n; i++)
				if (!isfinite(out[i]))
					return GJ_KEY_OTHER;
			return GJ_KEY_OK;
	}
	return GJ_KEY_OTHER;
}

/*
 * A cube (contrib/cube/cubedata.h, read without a build dependency): a
 * varlena header, a word of dimensions (bits 0-30) and the point flag (bit
 * 31), then the lower-left coordinates and, unless a point, the upper-right.
 * One point (a box whose corners are equal is one): its coordinates, in
 * dims dimensions (the first row's; another count is an "other" row, which
 * cube's distance pads with zeros).
 */
static GjKeyResult
CubePoint(Datum d, double *out, int *dims)
{
	struct varlena *v = pg_detoast_datum((struct varlena *) DatumGetPointer(d));
	const char *p = VARDATA(v);
	uint32		header;
	int			n;
	bool		point;

	if (VARSIZE(v) < VARHDRSZ + sizeof(uint32))
		return GJ_KEY_OTHER;
	memcpy(&header, p, sizeof(uint32));
	n = (int) (header & 0x7fffffff);
	point = (header & 0x80000000) != 0;
	if (n < 1 || n > GJ_MAX_DIMS || (*dims != 0 && n != *dims) ||
		VARSIZE(v) != VARHDRSZ + sizeof(uint32) + sizeof(double) * (Size) n * (point ? 1 : 2))
		return GJ_KEY_OTHER;
	for (int i = 0; i < n; i++)
	{
		double		lo,
					hi;

		memcpy(&lo, p + sizeof(uint32) + sizeof(double) * i, sizeof(double));
		hi = lo;
		if (!point)
			memcpy(&hi, p + sizeof(uint32) + sizeof(double) * (n + i), sizeof(double));
		if (lo != hi || !isfinite(lo))
			return GJ_KEY_OTHER;
		out[i] = lo;
	}
	*dims = n;
	return GJ_KEY_OK;
}

/*
 * A 2-D geometry point of srid in PostGIS 3's serialization (what
 * PostgisPoint reads): the varlena header, the SRID's 21 bits in three
 * bytes, the version flag, then type 1 (point), one point, x and y.  A
 * point has no box and no extended flags: 32 bytes, as PostGIS makes it.
 */
void
GjPostgisPointFromXY(double x, double y, int32 srid, struct varlena *buf)
{
	uint8	   *p = (uint8 *) VARDATA(buf);
	uint32		type = LW_POINTTYPE,
				npoints = 1;

	SET_VARSIZE(buf, GJ_POSTGIS_POINT_SIZE);
	p[0] = (uint8) ((srid & 0x001F0000) >> 16);
	p[1] = (uint8) ((srid & 0x0000FF00) >> 8);
	p[2] = (uint8) (srid & 0x000000FF);
	p[3] = G2_VERSION;
	memcpy(p + 4, &type, 4);
	memcpy(p + 8, &npoints, 4);
	memcpy(p + 12, &x, 8);
	memcpy(p + 20, &y, 8);
}

/* Whether t is contrib's cube (by name, in the extension "cube"). */
static bool
IsCubeType(Oid t)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(t));
	bool		cube;
	Oid			ext;
	char	   *extname;

	if (!HeapTupleIsValid(tup))
		return false;
	cube = strcmp(NameStr(((Form_pg_type) GETSTRUCT(tup))->typname), "cube") == 0 &&
		((Form_pg_type) GETSTRUCT(tup))->typlen == -1;
	ReleaseSysCache(tup);
	if (!cube)
		return false;
	ext = getExtensionOfObject(TypeRelationId, t);
	if (!OidIsValid(ext) || (extname = get_extension_name(ext)) == NULL)
		return false;
	cube = strcmp(extname, "cube") == 0;
	pfree(extname);
	return cube;
}

/* The name of base type t when it is geometry or geography, else NULL. */
const char *
GjPostgisTypeName(Oid t, Oid *nsp)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(t));
	const char *name = NULL;

	if (!HeapTupleIsValid(tup))
		return NULL;
	{
		Form_pg_type typ = (Form_pg_type) GETSTRUCT(tup);

		if (typ->typtype == TYPTYPE_BASE &&
			(strcmp(NameStr(typ->typname), "geometry") == 0 ||
			 strcmp(NameStr(typ->typname), "geography") == 0))
		{
			name = strcmp(NameStr(typ->typname), "geometry") == 0 ? "geometry" : "geography";
			*nsp = typ->typnamespace;
		}
	}
	ReleaseSysCache(tup);
	return name;
}

bool
GjPostgisType(Oid t, Oid *nsp, GjKeyKind *kind)
{
	const char *name = GjPostgisTypeName(t, nsp);

	if (name == NULL)
		return false;
	*kind = strcmp(name, "geometry") == 0 ? GJ_KEY_GEOMETRY : GJ_KEY_GEOGRAPHY;
	return true;
}

/* The key kind of a column of base type t, if the join can read it. */
bool
GjKeyKindOf(Oid t, GjKeyKind *kind)
{
	int			vk = GjPgvectorKind(t);
	Oid			nsp;

	if (vk != 0)
	{
		*kind = vk == GJ_VEC_VECTOR ? GJ_KEY_VECTOR : GJ_KEY_HALFVEC;
		return true;
	}
	if (GjPostgisType(t, &nsp, kind))
		return true;
	if (IsCubeType(t))
	{
		*kind = GJ_KEY_CUBE;
		return true;
	}
	return false;
}
