/*
 * row_keys.c
 *		What identifies a row: the relation form's id column (by default
 *		the primary key), and keys of any type with the ranks the engines
 *		see in their place.
 *
 * The engines know rows by int64 ids.  The classic forms read an integer
 * id column and return it.  The keyed forms (a witness of the key's type:
 * key => NULL::uuid) read the key as it is, a value of any type with a
 * btree order (uuid, text, a composite key as a row), keep each value, and
 * give the engines the rank of the row's key in that order as its id.
 * Every rule that follows ids then follows the keys' own order: kNN ties
 * go to the smaller key, neighbour lists and DBSCAN's cluster numbers are
 * by key, and the rows go out with the keys back in place (GjKeyOf).
 * Equal keys are distinct rows ranked in the order read.
 *
 * Keys cost one Datum a row plus the values of by-reference types, packed
 * into blocks (2M uuid keys: 48 MB).
 */
#include "postgres.h"

#include "compat.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/sortsupport.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "read/reader.h"

/* Column attnum of relid by exact name, or an UNDEFINED_COLUMN error. */
AttrNumber
GjLookupColumn(Oid relid, const char *name)
{
	AttrNumber	attnum = get_attnum(relid, name);

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						name, get_rel_name(relid))));
	return attnum;
}

/*
 * The columns of relid's primary key (a table, partitioned table or
 * materialized view's), in the index's order: how many, 0 for none.
 */
static int
PrimaryKeyColumns(Oid relid, AttrNumber *atts, int max)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	Oid			pkidx = InvalidOid;
	int			n = 0;

	if (rel->rd_rel->relkind == RELKIND_RELATION ||
		rel->rd_rel->relkind == RELKIND_MATVIEW ||
		rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		pkidx = GjRelationPrimaryKeyIndex(rel);
	relation_close(rel, AccessShareLock);

	if (OidIsValid(pkidx))
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pkidx));

		if (HeapTupleIsValid(tup))
		{
			Form_pg_index idx = (Form_pg_index) GETSTRUCT(tup);

			for (int i = 0; i < idx->indnkeyatts && i < max; i++)
				if (idx->indkey.values[i] > 0)
					atts[n++] = idx->indkey.values[i];
			if (n != idx->indnkeyatts)
				n = 0;			/* an expression: no key of columns */
			ReleaseSysCache(tup);
		}
	}
	return n;
}

/* Whether column att of rel is a key: a unique, immediate, whole-table index on it alone. */
bool
GjUniqueColumn(Relation rel, AttrNumber att)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		unique = false;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index ix;

		if (!HeapTupleIsValid(tup))
			continue;
		ix = (Form_pg_index) GETSTRUCT(tup);
		if (ix->indisunique && ix->indimmediate && ix->indisvalid && ix->indnkeyatts == 1 &&
			ix->indkey.values[0] == att && heap_attisnull(tup, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(tup, Anum_pg_index_indexprs, NULL))
			unique = true;
		ReleaseSysCache(tup);
		if (unique)
			break;
	}
	list_free(indexes);
	return unique;
}

/* The single integer column of relid's primary key, or an error with a hint. */
AttrNumber
GjPrimaryKeyColumn(Oid relid, const char *fname)
{
	AttrNumber	atts[INDEX_MAX_KEYS];
	int			n = PrimaryKeyColumns(relid, atts, INDEX_MAX_KEYS);

	if (n == 1 && IsIdType(getBaseType(get_atttype(relid, atts[0]))))
		return atts[0];
	if (n > 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("%s: the primary key of relation \"%s\" is not a single integer column",
						fname, get_rel_name(relid)),
				 errhint(n == 1 ?
						 "Pass key => NULL::%s to get the key back as it is, or an integer id column as id_col." :
						 "Pass key => NULL::record to get the key's columns back as a row, or an integer id column as id_col.",
						 format_type_be(get_atttype(relid, atts[0])))));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("%s: relation \"%s\" has no single-column integer primary key",
					fname, get_rel_name(relid)),
			 errhint("Pass an integer id column as id_col, or another key column as id_col with key => NULL::its_type.")));
	return InvalidAttrNumber;	/* not reached */
}

/*
 * Does a key column of type got fit the witness's type want?  Its own
 * type, a domain over it, or any row for record; not the base type of a
 * domain want names (its values would go out unchecked as the domain's).
 */
static bool
KeyTypeFits(Oid want, Oid got)
{
	return want == got || getBaseType(got) == want ||
		(want == RECORDOID && type_is_rowtype(got));
}

static void
CheckKeyColumn(const GjInputSpec *spec, AttrNumber att)
{
	Oid			t = get_atttype(spec->relid, att);

	if (spec->keys->kept && !KeyTypeFits(spec->keys->type, t))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: key column \"%s\" has type %s, not the key's type %s",
						spec->fname, get_attname(spec->relid, att, false), format_type_be(t),
						format_type_be(spec->keys->type)),
				 errhint("Pass key => NULL::%s.", format_type_be(t))));
}

/* ROW(c1, c2, ...) of the columns atts. */
static char *
RowOf(Oid relid, const AttrNumber *atts, int n)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoString(&s, "ROW(");
	for (int i = 0; i < n; i++)
		appendStringInfo(&s, "%s%s", i > 0 ? ", " : "",
						 quote_identifier(get_attname(relid, atts[i], false)));
	appendStringInfoChar(&s, ')');
	return s.data;
}

/*
 * A keyed relation's key as a SELECT expression: id_col when given; for a
 * scalar type the single-column primary key; for record the primary key's
 * columns as a row; for a composite type the columns its fields name, as
 * a value of it.  A side whose keys are not returned takes id_col, else
 * the primary key, else any constant.
 */
static char *
KeyExpr(const GjInputSpec *spec)
{
	Oid			relid = spec->relid;
	Oid			t = spec->keys->type;
	AttrNumber	atts[INDEX_MAX_KEYS];
	int			n;

	if (spec->id_col != NULL)
	{
		AttrNumber	att = GjLookupColumn(relid, text_to_cstring(spec->id_col));

		if (t == RECORDOID && !type_is_rowtype(get_atttype(relid, att)))
			return RowOf(relid, &att, 1);
		CheckKeyColumn(spec, att);
		return (char *) quote_identifier(get_attname(relid, att, false));
	}
	if (spec->keys->kept && t != RECORDOID && get_typtype(getBaseType(t)) == TYPTYPE_COMPOSITE)
	{
		/* the columns the type's fields name */
		TupleDesc	td = lookup_rowtype_tupdesc_domain(t, -1, false);
		StringInfoData s;
		int			k = 0;

		initStringInfo(&s);
		appendStringInfoString(&s, "ROW(");
		for (int i = 0; i < td->natts; i++)
		{
			Form_pg_attribute f = TupleDescAttr(td, i);

			if (f->attisdropped)
				continue;
			appendStringInfo(&s, "%s%s", k++ > 0 ? ", " : "",
							 quote_identifier(get_attname(relid,
														  GjLookupColumn(relid, NameStr(f->attname)),
														  false)));
		}
		ReleaseTupleDesc(td);
		appendStringInfo(&s, ")::%s", format_type_be_qualified(t));
		return s.data;
	}
	n = PrimaryKeyColumns(relid, atts, INDEX_MAX_KEYS);
	if (!spec->keys->kept)
		return n > 0 ? RowOf(relid, atts, n) : "true";
	if (t == RECORDOID && n > 0)
		return RowOf(relid, atts, n);
	if (n == 1)
	{
		CheckKeyColumn(spec, atts[0]);
		return (char *) quote_identifier(get_attname(relid, atts[0], false));
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg(n > 1 ? "%s: the primary key of relation \"%s\" has %d columns" :
					"%s: relation \"%s\" has no primary key", spec->fname,
					get_rel_name(relid), n),
			 n > 1 ?
			 errhint("Pass key => NULL::record to get the key's columns back as a row, or a composite type whose fields name them.") :
			 errhint("Pass the name of the key column as id_col.")));
	return NULL;				/* not reached */
}

/*
 * The relation form's id as a SELECT expression, all names from the
 * catalog and quoted: the integer id column (given, or the primary key),
 * or the key of a keyed call.
 */
char *
GjRelationIdExpr(const GjInputSpec *spec)
{
	AttrNumber	att;
	Oid			t;

	if (spec->keys != NULL)
		return KeyExpr(spec);
	att = spec->id_col != NULL ? GjLookupColumn(spec->relid, text_to_cstring(spec->id_col)) :
		GjPrimaryKeyColumn(spec->relid, spec->fname);
	t = getBaseType(get_atttype(spec->relid, att));
	if (!IsIdType(t))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: id column \"%s\" has type %s", spec->fname,
						get_attname(spec->relid, att, false),
						format_type_be(get_atttype(spec->relid, att))),
				 errdetail("An id column must be smallint, integer or bigint."),
				 errhint("Pass key => NULL::%s to get this column back as the id.",
						 format_type_be(get_atttype(spec->relid, att)))));
	return (char *) quote_identifier(get_attname(spec->relid, att, false));
}

/*
 * A read's keys, emptied: the type's layout and order, checked before any
 * row is read (a type without a btree order cannot rank).
 */
void
GjKeysStart(GjKeys *keys, const char *fname)
{
	TypeCacheEntry *tc;

	keys->values = NULL;
	keys->n = keys->cap = 0;
	keys->arena = NULL;
	keys->arena_left = 0;
	if (!keys->kept)
		return;
	tc = lookup_type_cache(keys->type, TYPECACHE_LT_OPR);
	if (!OidIsValid(tc->lt_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s: key type %s has no ordering", fname, format_type_be(keys->type)),
				 errdetail("gpujoin orders keys to break kNN ties and to order neighbour lists and clusters."),
				 errhint("Use a key of a type with a btree operator class, or cast it, e.g. to text.")));
	keys->typlen = tc->typlen;
	keys->typbyval = tc->typbyval;
	keys->typalign = tc->typalign;
}

/* The first column of a query's result (td) as the key: of the witness's type (any row for record). */
void
GjKeysColumn(GjKeys *keys, const char *fname, TupleDesc td)
{
	Form_pg_attribute att = TupleDescAttr(td, 0);

	if (!keys->kept)
		return;
	if (!KeyTypeFits(keys->type, att->atttypid))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: first column \"%s\" has type %s, not the key's type %s", fname,
						NameStr(att->attname), format_type_be(att->atttypid),
						format_type_be(keys->type)),
				 errhint("Pass key => NULL::%s, or cast the column.",
						 format_type_be(att->atttypid))));
}

/* Room for len bytes of key values, in blocks of cxt. */
static void *
ArenaAlloc(GjKeys *keys, Size len, MemoryContext cxt)
{
	void	   *p;

	len = MAXALIGN(len);
	if (len > keys->arena_left)
	{
		Size		block = Max(len, (Size) 1024 * 1024);

		keys->arena = MemoryContextAlloc(cxt, block);
		keys->arena_left = block;
	}
	p = keys->arena;
	keys->arena += len;
	keys->arena_left -= len;
	return p;
}

/*
 * The key d of the row about to get id keys->n, copied into cxt (a
 * varlena detoasted: a TOAST pointer could outlive its row's snapshot).
 */
void
GjKeysAdd(GjKeys *keys, Datum d, MemoryContext cxt)
{
	if (keys->kept)
	{
		if (keys->n == keys->cap)
		{
			int64		cap = Max(keys->cap * 2, 1024);

			keys->values = keys->values == NULL ?
				MemoryContextAllocHuge(cxt, sizeof(Datum) * cap) :
				repalloc_huge(keys->values, sizeof(Datum) * cap);
			keys->cap = cap;
		}
		if (!keys->typbyval)
		{
			Size		len;
			void	   *p;

			if (keys->typlen == -1)
			{
				struct varlena *v = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(d));

				len = VARSIZE_ANY(v);
				p = ArenaAlloc(keys, len, cxt);
				memcpy(p, v, len);
				if ((Pointer) v != DatumGetPointer(d))
					pfree(v);
			}
			else
			{
				len = datumGetSize(d, false, keys->typlen);
				p = ArenaAlloc(keys, len, cxt);
				memcpy(p, DatumGetPointer(d), len);
			}
			d = PointerGetDatum(p);
		}
		keys->values[keys->n] = d;
	}
	keys->n++;
}

/*
 * Ranking.  A key is sorted as its fields (a scalar key is one field; a
 * row, ROW(tenant, order_no), its columns, compared in turn as
 * btrecordcmp does, NULLs last), strings bytewise (the "C" collation: the
 * order only breaks ties, and C.UTF-8's strxfrm and strcoll cost 1.8 s a
 * million keys more), the first field by its abbreviated form where the
 * type has one (a uuid's first bytes, a string's prefix) so that most
 * comparisons stay within the items.  Where the abbreviations compare as
 * integers (PostgreSQL's ssup_datum_*_cmp: uuid, text, the integer types)
 * the items are radix-sorted by them and only runs of equal ones compared
 * further.  1M uuid keys on the 2-core host: 1.5 s by comparisons through
 * the values, 0.17 s so, of which half is the first touch of the arrays'
 * pages in that virtual machine.
 */
typedef struct RankItem
{
	uint64		key;			/* the first field's abbreviation, as an ordered integer */
	int64		row;			/* the order read */
} RankItem;

typedef struct RankSort
{
	int			nfields;
	SortSupport ssup;			/* nfields of them */
	bool		radix;			/* key compares as an unsigned integer */
	bool		abbreviated;	/* key is an abbreviation: equal keys compare the values */
	const Datum *first;			/* the first field by row */
	const bool *first_null;		/* ... NULL (rows only; else NULL) */
	const Datum *fields;		/* the others, nfields - 1 a row */
	const bool *nulls;
	int64		calls;
} RankSort;

/* NULLs last, as btrecordcmp orders them */
static inline int
CmpNulls(bool xn, bool yn)
{
	return xn == yn ? 0 : xn ? 1 : -1;
}

static inline int
CmpRank(const RankItem *x, const RankItem *y, RankSort *rs)
{
	bool		xn = rs->first_null != NULL && rs->first_null[x->row],
				yn = rs->first_null != NULL && rs->first_null[y->row];
	int			c;

	if ((++rs->calls & 0xFFFF) == 0)
		CHECK_FOR_INTERRUPTS();
	if (xn || yn)
		c = CmpNulls(xn, yn);
	else
	{
		if (rs->radix)
			c = x->key < y->key ? -1 : x->key > y->key;
		else
			c = rs->ssup[0].comparator((Datum) x->key, (Datum) y->key, &rs->ssup[0]);
		if (c == 0 && rs->abbreviated)
			c = rs->ssup[0].abbrev_full_comparator(rs->first[x->row], rs->first[y->row],
													&rs->ssup[0]);
	}
	for (int f = 1; c == 0 && f < rs->nfields; f++)
	{
		int64		i = x->row * (rs->nfields - 1) + f - 1,
					j = y->row * (rs->nfields - 1) + f - 1;

		if (rs->nulls[i] || rs->nulls[j])
			c = CmpNulls(rs->nulls[i], rs->nulls[j]);
		else
			c = rs->ssup[f].comparator(rs->fields[i], rs->fields[j], &rs->ssup[f]);
	}
	if (c != 0)
		return c;
	return x->row < y->row ? -1 : x->row > y->row;	/* equal keys: in the order read */
}

/* sort_rank_items(items, n, rs): a quicksort with CmpRank inlined */
#define ST_SORT sort_rank_items
#define ST_ELEMENT_TYPE RankItem
#define ST_COMPARE(a, b, arg) CmpRank(a, b, arg)
#define ST_COMPARE_ARG_TYPE RankSort
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * Items whose keys compare as unsigned integers, sorted: least
 * significant byte first (stable; a pass is skipped where every key has
 * the same byte), then each run of equal keys by CmpRank.  Returns the
 * sorted array: items or tmp.
 */
static RankItem *
RadixSortItems(RankItem *items, RankItem *tmp, int64 n, RankSort *rs)
{
	int64		count[256];

	for (int shift = 0; shift < 64; shift += 8)
	{
		int64		sum = 0;
		RankItem   *t;

		CHECK_FOR_INTERRUPTS();
		memset(count, 0, sizeof(count));
		for (int64 i = 0; i < n; i++)
			count[(items[i].key >> shift) & 0xFF]++;
		if (count[(items[0].key >> shift) & 0xFF] == n)
			continue;			/* every key has this byte */
		for (int d = 0; d < 256; d++)
		{
			int64		c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (int64 i = 0; i < n; i++)
			tmp[count[(items[i].key >> shift) & 0xFF]++] = items[i];
		t = items, items = tmp, tmp = t;
	}
	for (int64 i = 0, j; i < n; i = j)
	{
		for (j = i + 1; j < n && items[j].key == items[i].key; j++)
			;
		if (j - i > 1)
			sort_rank_items(items + i, j - i, rs);
	}
	return items;
}

/* Field f's sort support: its type's btree order, strings bytewise. */
static void
PrepareField(SortSupport ssup, Oid type, bool abbreviate)
{
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_LT_OPR);

	if (!OidIsValid(tc->lt_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("key field type %s has no ordering", format_type_be(type)),
				 errhint("Use key columns of types with a btree operator class.")));
	memset(ssup, 0, sizeof(*ssup));
	ssup->ssup_cxt = CurrentMemoryContext;
	ssup->ssup_collation = type_is_collatable(type) ? C_COLLATION_OID : InvalidOid;
	ssup->ssup_nulls_first = false;
	ssup->abbreviate = abbreviate;
	PrepareSortSupportFromOrderingOp(tc->lt_opr, ssup);
}

/*
 * A row key's fields, row by row, into rs (the rows share one row type:
 * one query's column); its descriptor.
 */
static TupleDesc
SplitRows(const GjKeys *keys, RankSort *rs)
{
	HeapTupleHeader th0 = DatumGetHeapTupleHeader(keys->values[0]);
	TupleDesc	td = lookup_rowtype_tupdesc_copy(HeapTupleHeaderGetTypeId(th0),
												 HeapTupleHeaderGetTypMod(th0));
	int			nf = td->natts;
	int64		n = keys->n;
	Datum	   *v = palloc(sizeof(Datum) * Max(nf, 1));
	bool	   *nl = palloc(sizeof(bool) * Max(nf, 1));
	Datum	   *first = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * n);
	bool	   *first_null = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(bool) * n);
	Datum	   *fields = MemoryContextAllocHuge(CurrentMemoryContext,
												sizeof(Datum) * n * Max(nf - 1, 1));
	bool	   *nulls = MemoryContextAllocHuge(CurrentMemoryContext,
											   sizeof(bool) * n * Max(nf - 1, 1));

	for (int64 i = 0; i < n; i++)
	{
		HeapTupleHeader th = DatumGetHeapTupleHeader(keys->values[i]);
		HeapTupleData tuple;

		if (HeapTupleHeaderGetTypeId(th) != HeapTupleHeaderGetTypeId(th0) ||
			HeapTupleHeaderGetTypMod(th) != HeapTupleHeaderGetTypMod(th0))
			elog(ERROR, "gpujoin: key rows of different row types");
		tuple.t_len = HeapTupleHeaderGetDatumLength(th);
		ItemPointerSetInvalid(&tuple.t_self);
		tuple.t_tableOid = InvalidOid;
		tuple.t_data = th;
		heap_deform_tuple(&tuple, td, v, nl);
		first[i] = nf > 0 ? v[0] : (Datum) 0;
		first_null[i] = nf == 0 || nl[0];
		for (int f = 1; f < nf; f++)
		{
			fields[i * (nf - 1) + f - 1] = v[f];
			nulls[i * (nf - 1) + f - 1] = nl[f];
		}
		if ((i & 0xFFFF) == 0xFFFF)
			CHECK_FOR_INTERRUPTS();
	}
	rs->nfields = Max(nf, 1);
	rs->first = first;
	rs->first_null = first_null;
	rs->fields = fields;
	rs->nulls = nulls;
	return td;
}

/* An abbreviation (or a by-value key) as an unsigned integer of the same order. */
static inline uint64
OrderedKey(Datum d, SortSupport ssup)
{
	if (ssup->comparator == ssup_datum_signed_cmp)
		return (uint64) DatumGetInt64(d) ^ ((uint64) 1 << 63);
	if (ssup->comparator == ssup_datum_int32_cmp)
		return (uint32) DatumGetInt32(d) ^ (uint32) 0x80000000;
	return (uint64) d;			/* ssup_datum_unsigned_cmp, or no integer order */
}

/*
 * After the read: the rows' ids (the order their keys were read in)
 * become their keys' ranks, and keys->values is by rank.
 */
void
GjKeysRank(GjKeys *keys, gj_points *pts)
{
	RankSort	rs;
	int64		n = keys->n;
	RankItem   *items,
			   *tmp,
			   *out;
	int64	   *rank;
	Datum	   *sorted;
	TupleDesc	rowtype = NULL;
	double		t0 = gj_now_ms();

	if (!keys->kept || n == 0)
		return;
	memset(&rs, 0, sizeof(rs));
	if (type_is_rowtype(keys->type))
		rowtype = SplitRows(keys, &rs);
	else
	{
		rs.nfields = 1;
		rs.first = keys->values;
	}
	rs.ssup = palloc(sizeof(SortSupportData) * rs.nfields);
	for (int f = 0; f < rs.nfields; f++)
	{
		Oid			t = keys->type;

		if (rowtype != NULL && rowtype->natts > 0)	/* (a dropped column: all NULL) */
			t = TupleDescAttr(rowtype, f)->attisdropped ? INT4OID :
				TupleDescAttr(rowtype, f)->atttypid;
		PrepareField(&rs.ssup[f], t, f == 0 && n > 1);
	}
	rs.abbreviated = rs.ssup[0].abbrev_converter != NULL;
	rs.radix = rs.ssup[0].comparator == ssup_datum_unsigned_cmp ||
		rs.ssup[0].comparator == ssup_datum_signed_cmp ||
		rs.ssup[0].comparator == ssup_datum_int32_cmp;

	items = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(RankItem) * n);
	for (int64 i = 0; i < n; i++)
	{
		Datum		k = rs.first[i];

		if (rs.first_null != NULL && rs.first_null[i])
			k = (Datum) 0;		/* (CmpRank orders NULLs by first_null) */
		else if (rs.abbreviated)
			k = rs.ssup[0].abbrev_converter(k, &rs.ssup[0]);
		items[i].key = rs.radix ? OrderedKey(k, &rs.ssup[0]) : (uint64) k;
		items[i].row = i;
		if ((i & 0xFFFF) == 0xFFFF)
			CHECK_FOR_INTERRUPTS();
	}
	if (rs.radix && n > 1)
	{
		/* NULL first fields sort by CmpRank: give them one key after all others */
		if (rs.first_null != NULL)
			for (int64 i = 0; i < n; i++)
				if (rs.first_null[i])
					items[i].key = PG_UINT64_MAX;
		tmp = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(RankItem) * n);
		out = RadixSortItems(items, tmp, n, &rs);
		pfree(out == items ? tmp : items);
		items = out;
	}
	else
		sort_rank_items(items, n, &rs);

	sorted = MemoryContextAllocHuge(GetMemoryChunkContext(keys->values), sizeof(Datum) * n);
	rank = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * n);
	for (int64 p = 0; p < n; p++)
	{
		sorted[p] = keys->values[items[p].row];
		rank[items[p].row] = p;
	}
	for (int64 i = 0; i < pts->n; i++)
		pts->ids[i] = rank[pts->ids[i]];
	pfree(keys->values);
	keys->values = sorted;
	keys->cap = n;
	pfree(items);
	pfree(rank);
	if (rowtype != NULL)
	{
		pfree((void *) rs.first);
		pfree((void *) rs.first_null);
		pfree((void *) rs.fields);
		pfree((void *) rs.nulls);
	}
	elog(DEBUG1, "gpujoin: ranked %lld keys of type %s in %.1f ms (%s)", (long long) n,
		 format_type_be(keys->type), gj_now_ms() - t0, rs.radix ? "radix" : "quicksort");
}

/* A key as text, for messages about its row. */
char *
GjKeyText(Datum d, Oid type)
{
	Oid			out;
	bool		varlena;

	getTypeOutputInfo(type, &out, &varlena);
	return OidOutputFunctionCall(out, d);
}
