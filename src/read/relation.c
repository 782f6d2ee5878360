/*
 * relation.c
 *		The relation form of input (a table with coordinate column names
 *		and an id column): validated against the catalog, so that errors
 *		name the relation, and read by a SELECT built from the catalog's
 *		names, each quoted.
 */
#include "postgres.h"

#include "compat.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

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

/* The single integer column of relid's primary key, or an error with a hint. */
AttrNumber
GjPrimaryKeyColumn(Oid relid, const char *fname)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	Oid			pkidx = InvalidOid;
	AttrNumber	attnum = InvalidAttrNumber;

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

			if (idx->indnkeyatts == 1 && idx->indkey.values[0] > 0 &&
				IsIdType(getBaseType(get_atttype(relid, idx->indkey.values[0]))))
				attnum = idx->indkey.values[0];
			ReleaseSysCache(tup);
		}
	}
	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("%s: relation \"%s\" has no single-column integer primary key",
						fname, get_rel_name(relid)),
				 errhint("Pass the name of an integer id column as id_col.")));
	return attnum;
}

/*
 * Validate the relation form against the catalog and build its SELECT, all
 * identifiers taken from the catalog and quoted.
 */
char *
GjBuildRelationQuery(const GjInputSpec *spec, int64 pack_token)
{
	Oid			relid = spec->relid;
	char		relkind = get_rel_relkind(relid);
	Datum	   *elems;
	bool	   *elem_nulls;
	int			ncols;
	AttrNumber	id_att;
	Oid			id_type;
	StringInfoData sql;

	if (relid == InvalidOid || relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_VIEW &&
		relkind != RELKIND_MATVIEW && relkind != RELKIND_FOREIGN_TABLE &&
		relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table, view, materialized view or foreign table",
						get_rel_name(relid))));

	if (ARR_NDIM(spec->cols) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: cols must be a one-dimensional array", spec->fname)));
	deconstruct_array(spec->cols, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elem_nulls, &ncols);
	if (ncols == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: cols must name at least one column", spec->fname)));
	GjCheckDims(spec->fname, ncols);

	initStringInfo(&sql);
	if (spec->sample_pct > 0)
	{
		/* a planner's sample: the block number stands in for the id */
		id_att = InvalidAttrNumber;
		appendStringInfoString(&sql, "SELECT (ctid::text::point)[0]::bigint");
	}
	else
	{
		/* id column: the row's ctid (the join's read), given, or the primary key */
		if (spec->row_ids)
			id_att = SelfItemPointerAttributeNumber;
		else if (spec->id_col != NULL)
			id_att = GjLookupColumn(relid, text_to_cstring(spec->id_col));
		else
			id_att = GjPrimaryKeyColumn(relid, spec->fname);
		id_type = spec->row_ids ? INT8OID : getBaseType(get_atttype(relid, id_att));
		if (!IsIdType(id_type))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s: id column \"%s\" has type %s", spec->fname,
							get_attname(relid, id_att, false),
							format_type_be(get_atttype(relid, id_att))),
					 errdetail("The id column must be smallint, integer or bigint.")));
		if (pack_token > 0)
			appendStringInfo(&sql, "SELECT %s($1, %s",
							 quote_qualified_identifier(get_namespace_name(spec->nsp),
														"gpujoin_pack"),
							 quote_identifier(get_attname(relid, id_att, false)));
		else
			appendStringInfo(&sql, "SELECT %s",
							 quote_identifier(get_attname(relid, id_att, false)));
	}
	for (int i = 0; i < ncols; i++)
	{
		AttrNumber	att;
		Oid			t,
					pnsp;
		GjKeyKind	pkind;

		if (elem_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: cols must not contain NULL", spec->fname)));
		att = GjLookupColumn(relid, TextDatumGetCString(elems[i]));
		for (int j = 0; j < i; j++)
			if (!elem_nulls[j] && GjLookupColumn(relid, TextDatumGetCString(elems[j])) == att)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("%s: column \"%s\" is named twice in cols", spec->fname,
								get_attname(relid, att, false)),
						 errdetail("Each coordinate column counts once; a repeated one would weigh its axis twice in every distance.")));
		t = getBaseType(get_atttype(relid, att));
		if (GjIsPointColumnType(t) || (spec->quiet && ncols == 1 && GjPostgisType(t, &pnsp, &pkind)))
		{
			if (ncols != 1)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("%s: array column \"%s\" must be the only coordinate column",
								spec->fname, get_attname(relid, att, false)),
						 errhint("Pass either one real[], double precision[], vector or halfvec column or several numeric columns.")));
		}
		else if (!IsCoordType(t))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s: column \"%s\" has type %s", spec->fname,
							get_attname(relid, att, false),
							format_type_be(get_atttype(relid, att))),
					 errdetail(GJ_COORD_TYPES_DETAIL)));
		appendStringInfo(&sql, ", %s",
						 quote_identifier(get_attname(relid, att, false)));
	}
	if (pack_token > 0)
		appendStringInfoChar(&sql, ')');
	appendStringInfo(&sql, " FROM %s",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												get_rel_name(relid)));
	if (spec->sample_pct > 0)
		appendStringInfo(&sql, " TABLESAMPLE SYSTEM (%.6f) REPEATABLE (%d)",
						 spec->sample_pct, spec->sample_seed);
	else if (spec->only_ids != NULL)
		GjAppendOnlyIds(&sql, spec, quote_identifier(get_attname(relid, id_att, false)));
	return sql.data;
}

/*
 * " WHERE qcol = ANY ('{...}'::bigint[])" for spec's only_ids: the planner
 * sees the list, so an index on the id column applies.
 */
void
GjAppendOnlyIds(StringInfo sql, const GjInputSpec *spec, const char *qcol)
{
	appendStringInfo(sql, " WHERE %s = ANY ('{", qcol);
	for (int i = 0; i < spec->nonly; i++)
		appendStringInfo(sql, i > 0 ? ",%lld" : "%lld", (long long) spec->only_ids[i]);
	appendStringInfoString(sql, "}'::bigint[])");
}
