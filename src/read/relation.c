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
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "read/reader.h"

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
	const char *id_expr = NULL;
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
		appendStringInfoString(&sql, "SELECT (ctid::text::point)[0]::bigint");
	}
	else
	{
		/* id: the row's ctid (the join's read), or the id column or key */
		id_expr = spec->row_ids ? "ctid" : GjRelationIdExpr(spec);
		if (pack_token > 0)
			appendStringInfo(&sql, "SELECT %s($1, %s",
							 quote_qualified_identifier(get_namespace_name(spec->nsp),
														"gpujoin_pack"),
							 id_expr);
		else
			appendStringInfo(&sql, "SELECT %s", id_expr);
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
		GjAppendOnlyIds(&sql, spec, id_expr);
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
