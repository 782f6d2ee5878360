/*
 * pgvector.c
 *		Decoding pgvector's vector and halfvec values without depending on
 *		pgvector at build time: a leaf of the reader (rows.c calls it, it
 *		calls nothing of the reader's).
 *
 * pgvector documents its on-disk layout and has kept it since its first
 * release: a varlena whose data is an int16 dimension count, an int16 that
 * is always zero, then dim float4 (vector) or IEEE binary16 (halfvec)
 * values.  A type is taken for pgvector's when its name is vector or
 * halfvec and it belongs to the extension named vector (pg_depend), so that
 * an unrelated type of the same name in another schema is never misread;
 * every value is checked against the layout (its size must be exactly the
 * header plus dim elements, the reserved field zero) before a coordinate is
 * read, and a value that does not fit is an error, not a guess.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "read/reader.h"

/* The header pgvector puts before the elements (after the varlena's). */
typedef struct PgvectorHeader
{
	int16		dim;
	int16		unused;
} PgvectorHeader;

/* GJ_VEC_VECTOR or GJ_VEC_HALFVEC for pgvector's types (base type t), else 0. */
int
GjPgvectorKind(Oid t)
{
	HeapTuple	tup;
	char		name[NAMEDATALEN];
	int16		typlen;
	Oid			ext;
	char	   *extname;
	int			kind = 0;

	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(t));
	if (!HeapTupleIsValid(tup))
		return 0;
	strlcpy(name, NameStr(((Form_pg_type) GETSTRUCT(tup))->typname), sizeof(name));
	typlen = ((Form_pg_type) GETSTRUCT(tup))->typlen;
	ReleaseSysCache(tup);
	if (typlen != -1 || (strcmp(name, "vector") != 0 && strcmp(name, "halfvec") != 0))
		return 0;
	ext = getExtensionOfObject(TypeRelationId, t);
	if (!OidIsValid(ext))
		return 0;
	extname = get_extension_name(ext);
	if (extname != NULL && strcmp(extname, "vector") == 0)
		kind = strcmp(name, "vector") == 0 ? GJ_VEC_VECTOR : GJ_VEC_HALFVEC;
	if (extname != NULL)
		pfree(extname);
	return kind;
}

/* An IEEE binary16 value as a double (exact; inf and NaN stay so). */
static inline double
HalfToDouble(uint16 h)
{
	int			e = (h >> 10) & 0x1f;
	int			m = h & 0x3ff;
	double		v;

	if (e == 0)
		v = ldexp((double) m, -24);	/* zero and subnormals */
	else if (e == 31)
		v = m == 0 ? INFINITY : NAN;
	else
		v = ldexp((double) (m | 0x400), e - 25);
	return (h & 0x8000) ? -v : v;
}

/*
 * The dimensions of a pgvector value (detoasted), after checking it against
 * the layout; an error names the function when it does not fit.
 */
int
GjPgvectorDims(const struct varlena *v, int kind, const char *fname)
{
	const PgvectorHeader *h = (const PgvectorHeader *) VARDATA(v);
	Size		elem = kind == GJ_VEC_VECTOR ? sizeof(float4) : sizeof(uint16);

	if (VARSIZE(v) < VARHDRSZ + sizeof(PgvectorHeader) || h->dim < 1 || h->unused != 0 ||
		VARSIZE(v) != VARHDRSZ + sizeof(PgvectorHeader) + elem * (Size) h->dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s: a %s value does not have pgvector's layout", fname,
						kind == GJ_VEC_VECTOR ? "vector" : "halfvec"),
				 errdetail("Its size is %zu bytes for %d dimensions.",
						   (Size) VARSIZE(v), (int) h->dim)));
	return h->dim;
}

/*
 * The elements of a pgvector value whose layout GjPgvectorDims checked, as
 * float64 into out (its dimensions' worth).  Finiteness is the reader's to
 * check, as for every kind of input.
 */
void
GjPgvectorToFloat8(const struct varlena *v, int kind, double *out)
{
	const PgvectorHeader *h = (const PgvectorHeader *) VARDATA(v);
	const char *data = (const char *) (h + 1);

	if (kind == GJ_VEC_VECTOR)
	{
		float4		f;

		for (int d = 0; d < h->dim; d++)
		{
			memcpy(&f, data + d * sizeof(float4), sizeof(float4));
			out[d] = (double) f;
		}
	}
	else
	{
		uint16		b;

		for (int d = 0; d < h->dim; d++)
		{
			memcpy(&b, data + d * sizeof(uint16), sizeof(uint16));
			out[d] = HalfToDouble(b);
		}
	}
}

/*
 * A pgvector vector of dims elements from float64 coordinates that came
 * from one (each exactly a float4), into buf (VARHDRSZ + 4 + 4 dims bytes):
 * the same value, bit for bit, as the one read.
 */
void
GjPgvectorFromFloat8(const double *x, int dims, struct varlena *buf)
{
	PgvectorHeader *h = (PgvectorHeader *) VARDATA(buf);
	char	   *data = (char *) (h + 1);

	SET_VARSIZE(buf, VARHDRSZ + sizeof(PgvectorHeader) + sizeof(float4) * (Size) dims);
	h->dim = (int16) dims;
	h->unused = 0;
	for (int d = 0; d < dims; d++)
	{
		float4		f = (float4) x[d];

		memcpy(data + d * sizeof(float4), &f, sizeof(float4));
	}
}
