/*
 * match.c
 *		The LATERAL kNN of the query row's own kind on the workers:
 *		knn_lateral_join's query_match and ref_match (the subquery's
 *		r.kind = q.kind), the rows moved by their kind, not by space.
 *
 * A query row's references are only the rows of its kind, so strips of
 * space would need each kind's own bound on the k-th distance, and a
 * kind with fewer than k rows in a strip would send every reference
 * everywhere.  Instead each row goes to the strip its kind's hash names
 * (the type's own hash, which equal values share): every kind lies whole
 * in one strip, with its query rows, and nothing is copied.  Each strip
 * answers by its own LATERAL query with s.m = q.m in it
 * (strip_tables.c), which the worker plans as a GpuJoin searching by key
 * (join/knn_key.c).  That query sees every row of the kind, rows without
 * a point too, so it returns PostgreSQL's rows for those as well: no
 * knn_lateral_fill.  A kind's rows all go to one worker; a kind of half
 * the rows makes that worker's strip the longest task.
 *
 * The kinds compare by an equality of the hash operator family both
 * columns' types hash by (one type, or bigint = int), under a
 * deterministic collation, where equal values have equal bytes: each
 * side's own hash agrees with = whatever the collation.  A NULL kind matches nothing: its query rows go to one
 * strip and find no reference there, and the references are left out.
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/typcache.h"

#include "dist/dist_internal.h"

/* The type of column name of relid, checked as a kind (its collation in *coll). */
static Oid
MatchColumnType(const DistCall *dc, Oid relid, const char *name, Oid *coll)
{
	AttrNumber	att = GjLookupColumn(relid, name);
	Oid			type;
	int32		typmod;

	if (att <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: \"%s\" is not a user column of %s", dc->spec->fname, name, get_rel_name(relid))));
	get_atttypetypmodcoll(relid, att, &type, &typmod, coll);
	return type;
}

/*
 * The hash operator family both types hash by by default (their types'
 * own hash functions, which hash_array calls), if it has an equality of
 * ltype and rtype: that operator, else InvalidOid.  Within a family equal
 * values hash alike across its types (bigint = int), so each side's rows
 * can be hashed by their own type.
 */
static Oid
MatchEquality(Oid ltype, Oid rtype)
{
	TypeCacheEntry *lt = lookup_type_cache(ltype, TYPECACHE_HASH_OPFAMILY | TYPECACHE_HASH_PROC);
	TypeCacheEntry *rt = lookup_type_cache(rtype, TYPECACHE_HASH_OPFAMILY | TYPECACHE_HASH_PROC);

	if (!OidIsValid(lt->hash_opf) || lt->hash_opf != rt->hash_opf ||
		!OidIsValid(lt->hash_proc) || !OidIsValid(rt->hash_proc))
		return InvalidOid;
	return get_opfamily_member(lt->hash_opf, ltype, rtype, HTEqualStrategyNumber);
}

/*
 * Is opno an equality of columns of types ltype and rtype, either way
 * round, that their kinds can move by?
 */
bool
GjMatchHashFamily(Oid ltype, Oid rtype, Oid opno)
{
	Oid			eq = MatchEquality(ltype, rtype),
				qe = MatchEquality(rtype, ltype);

	return OidIsValid(opno) && (eq == opno || qe == opno);
}

/*
 * ref_order's columns after the distance in the strips' ORDER BY, each a
 * field of the reference's row (s.id, the ref_tbl row), ascending by its
 * type's own order under its own collation: ", (s.id).a, (s.id).b", with
 * every % doubled (it goes into a format() string), or "".
 */
static char *
RefOrderKeys(const DistCall *dc)
{
	StringInfoData keys;
	const GjJobSpec *spec = dc->spec;

	initStringInfo(&keys);
	for (int i = 0; i < spec->ref_order_n; i++)
	{
		Oid			coll;
		Oid			type = MatchColumnType(dc, dc->s->relid, spec->ref_order[i], &coll);
		const char *name = quote_identifier(spec->ref_order[i]);

		if (!OidIsValid(lookup_type_cache(type, TYPECACHE_LT_OPR)->lt_opr))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("%s: ref_order's column \"%s\" has a type without an order",
							spec->fname, spec->ref_order[i])));
		appendStringInfoString(&keys, ", (s.id).");
		for (const char *c = name; *c != '\0'; c++)
		{
			if (*c == '%')
				appendStringInfoChar(&keys, '%');
			appendStringInfoChar(&keys, *c);
		}
	}
	return keys.data;
}

/*
 * Check the call's kinds and note the = that compares them (dc->match_eq),
 * or an error: the rewrite passes only kinds that fit, and no other node
 * keeps PostgreSQL's order.
 */
void
GjDistMatchCheck(DistCall *dc)
{
	const char *fname = dc->spec->fname;
	Oid			qcoll,
				rcoll;
	Oid			qtype = MatchColumnType(dc, dc->r->relid, dc->r->match, &qcoll);
	Oid			rtype = MatchColumnType(dc, dc->s->relid, dc->s->match, &rcoll);
	Oid			eq = MatchEquality(rtype, qtype);	/* s.m = q.m */

	if (!OidIsValid(eq))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s: no equality of %s and %s with hash functions that agree",
						fname, format_type_be(rtype), format_type_be(qtype)),
				 errhint("query_match and ref_match must be of one type, or of types of one hash operator family, such as bigint and integer.")));
	if (qcoll != rcoll ||
		(OidIsValid(qcoll) && !get_collation_isdeterministic(qcoll)))
		ereport(ERROR,
				(errcode(ERRCODE_INDETERMINATE_COLLATION),
				 errmsg("%s: query_match and ref_match must have one deterministic collation", fname)));
	dc->match_eq = GjDistOperator(eq);
	dc->match_order = RefOrderKeys(dc);
}

/*
 * Move every row into the strip of its kind: the query rows all (a row
 * without a point, or of a NULL kind, still has its LATERAL rows), the
 * references of a kind (a self join's table: all, every row is a query
 * row).  Where a query_filter keeps some of the query rows ("the 5
 * nearest of item 42's kind"), only the references of their kinds move:
 * the kinds' distinct values come here and go back to the workers as an
 * intermediate result (Citus's plan of the IN), which is fewer than the
 * query rows.  Returns the rows written.
 */
int64
GjDistMoveRowsByMatch(DistCall *dc)
{
	int			n = dc->strips.n;
	char	   *vals = GjDistValuesLiteral(dc);
	/* hash_array: the element type's own hash, under the column's collation */
	char	   *own = psprintf("(((pg_catalog.hash_array(ARRAY[q.m])::pg_catalog.int8 %% %d) + %d) %% %d)",
							   n, n, n);
	int64		moved = 0;

	if (!dc->self)
	{
		moved += GjDistExec(psprintf("INSERT INTO %s SELECT (%s)[%s + 1], q.* FROM %s",
									 dc->r_tab, vals, own, GjDistRowsOfR(dc)), SPI_OK_INSERT);
		CHECK_FOR_INTERRUPTS();
	}
	moved += GjDistExec(psprintf("INSERT INTO %s SELECT (%s)[%s + 1], true, true, false, q.* FROM %s%s%s",
								 dc->s_tab, vals, own, dc->s_from, dc->self ? "" : " WHERE q.m IS NOT NULL",
								 dc->self || dc->r->where == NULL ? "" :
								 psprintf(" AND q.m IN (SELECT DISTINCT m FROM %s)", dc->r_tab)),
						SPI_OK_INSERT);
	return moved;
}
