/*
 * functions.c
 *		gpujoin's SQL functions as the glue knows them: which one a call
 *		is, the shape of its rows, and which of its output columns can
 *		restrict it.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "api/api.h"

/*
 * The functions by their C symbol (pg_proc.prosrc) and argument count.
 * Since 0.6 every one ends with metric, use_spheroid, and since 0.7 the
 * _sql forms then with params.  Older definitions still call this library
 * until ALTER EXTENSION UPDATE: 0.6 has no params, 0.4 and 0.5 end with
 * metric (use_spheroid as its default), 0.3 one argument shorter again
 * (l2).  The two-table eps functions came in 0.5, with metric.
 */
static const struct
{
	GjFunction	fn;
	const char *symbol;
	int			nargs;
	GjShape		shape;
}			functions[] =
{
	{GJ_FN_EPS_SELFJOIN, "eps_selfjoin", 7, GJ_SHAPE_PAIRS},
	{GJ_FN_EPS_SELFJOIN_SQL, "eps_selfjoin_sql", 6, GJ_SHAPE_PAIRS},
	{GJ_FN_KNN_JOIN, "knn_join", 9, GJ_SHAPE_KNN},
	{GJ_FN_KNN_SELFJOIN, "knn_selfjoin", 6, GJ_SHAPE_KNN},
	{GJ_FN_KNN_JOIN_SQL, "knn_join_sql", 6, GJ_SHAPE_KNN},
	{GJ_FN_KNN_SELFJOIN_SQL, "knn_selfjoin_sql", 5, GJ_SHAPE_KNN},
	{GJ_FN_NEIGHBOR_COUNTS, "eps_neighbor_counts", 6, GJ_SHAPE_COUNTS},
	{GJ_FN_NEIGHBOR_COUNTS_SQL, "eps_neighbor_counts_sql", 5, GJ_SHAPE_COUNTS},
	{GJ_FN_NEIGHBORS, "eps_neighbors", 6, GJ_SHAPE_LISTS},
	{GJ_FN_NEIGHBORS_SQL, "eps_neighbors_sql", 5, GJ_SHAPE_LISTS},
	{GJ_FN_DBSCAN, "dbscan", 7, GJ_SHAPE_DBSCAN},
	{GJ_FN_DBSCAN_SQL, "dbscan_sql", 6, GJ_SHAPE_DBSCAN},
	{GJ_FN_EPS_JOIN, "eps_join", 9, GJ_SHAPE_PAIRS},
	{GJ_FN_EPS_JOIN_SQL, "eps_join_sql", 6, GJ_SHAPE_PAIRS},
	{GJ_FN_JOIN_COUNTS, "eps_join_counts", 9, GJ_SHAPE_COUNTS},
	{GJ_FN_JOIN_COUNTS_SQL, "eps_join_counts_sql", 6, GJ_SHAPE_COUNTS},
};

/*
 * Which of our functions funcid is: a C function of this library (probin
 * naming gpujoin) whose symbol is one of the above.
 */
GjFunction
GjLookupFunction(Oid funcid)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	GjFunction	fn = GJ_FN_NONE;

	if (!HeapTupleIsValid(tup))
		return GJ_FN_NONE;
	if (((Form_pg_proc) GETSTRUCT(tup))->prolang == ClanguageId)
	{
		bool		isnull;
		Datum		bin = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_probin, &isnull);
		Datum		src;
		char	   *probin,
				   *prosrc,
				   *base;

		if (!isnull)
		{
			probin = TextDatumGetCString(bin);
			base = strrchr(probin, '/');
			base = base != NULL ? base + 1 : probin;
			src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
			if (!isnull && (strcmp(base, "gpujoin") == 0 ||
							strcmp(base, "gpujoin" DLSUFFIX) == 0))
			{
				prosrc = TextDatumGetCString(src);
				for (int i = 0; i < lengthof(functions); i++)
					if (strcmp(prosrc, functions[i].symbol) == 0)
						fn = functions[i].fn;
				pfree(prosrc);
			}
			pfree(probin);
		}
	}
	ReleaseSysCache(tup);
	return fn;
}

/* The function's entry in the table above. */
static int
Entry(GjFunction fn)
{
	for (int i = 0; i < lengthof(functions); i++)
		if (functions[i].fn == fn)
			return i;
	return -1;
}

/* Its C symbol, which is its SQL name (NULL for GJ_FN_NONE). */
const char *
GjFunctionName(GjFunction fn)
{
	int			i = Entry(fn);

	return i >= 0 ? functions[i].symbol : NULL;
}

/* Its arguments in this version's definition. */
int
GjFunctionArgs(GjFunction fn)
{
	int			i = Entry(fn);

	return i >= 0 ? functions[i].nargs : 0;
}

/* Is it an _sql form, whose query can take parameters (params)? */
bool
GjTakesParams(GjFunction fn)
{
	const char *name = GjFunctionName(fn);
	size_t		len = name != NULL ? strlen(name) : 0;

	return len > 4 && strcmp(name + len - 4, "_sql") == 0;
}

/* Does it join two sets (r and s, or queries and references)? */
bool
GjTwoSets(GjFunction fn)
{
	switch (fn)
	{
		case GJ_FN_KNN_JOIN:
		case GJ_FN_KNN_JOIN_SQL:
		case GJ_FN_EPS_JOIN:
		case GJ_FN_EPS_JOIN_SQL:
		case GJ_FN_JOIN_COUNTS:
		case GJ_FN_JOIN_COUNTS_SQL:
			return true;
		default:
			return false;
	}
}

GjShape
GjFunctionShape(GjFunction fn)
{
	for (int i = 0; i < lengthof(functions); i++)
		if (functions[i].fn == fn)
			return functions[i].shape;
	return GJ_SHAPE_PAIRS;
}

int
GjOutputColumns(GjFunction fn)
{
	if (fn == GJ_FN_NONE)
		return 0;
	switch (GjFunctionShape(fn))
	{
		case GJ_SHAPE_PAIRS:
		case GJ_SHAPE_LISTS:
		case GJ_SHAPE_DBSCAN:
			return 3;
		case GJ_SHAPE_KNN:
			return 4;
		case GJ_SHAPE_COUNTS:
			return 2;
	}
	return 0;
}

/*
 * Can an equality qual on output column `column` restrict the query side?
 * Both ids of a self-join; the query id of a kNN join (a filter on the
 * reference id would change which neighbours rank first).
 */
bool
GjFilterableColumn(GjFunction fn, int column)
{
	switch (fn)
	{
		case GJ_FN_EPS_SELFJOIN:
		case GJ_FN_EPS_SELFJOIN_SQL:
		case GJ_FN_EPS_JOIN:
		case GJ_FN_EPS_JOIN_SQL:
			return column == 0 || column == 1;	/* eps_join: fewer r or s rows read */
		case GJ_FN_JOIN_COUNTS:
		case GJ_FN_JOIN_COUNTS_SQL:
			return column == 0;
		case GJ_FN_KNN_JOIN:
		case GJ_FN_KNN_SELFJOIN:
		case GJ_FN_KNN_JOIN_SQL:
		case GJ_FN_KNN_SELFJOIN_SQL:
			return column == 0;
		case GJ_FN_NEIGHBOR_COUNTS:
		case GJ_FN_NEIGHBOR_COUNTS_SQL:
		case GJ_FN_NEIGHBORS:
		case GJ_FN_NEIGHBORS_SQL:
			return column == 0;	/* a row's count or list needs that row's probe */
		default:
			/* dbscan: a row's cluster depends on every row */
			break;
	}
	return false;
}

/* The key witnesses' positions in funcid's arguments (-1: none); how many. */
static int
KeyWitnesses(Form_pg_proc p, int pos[2])
{
	int			n = 0;

	pos[0] = pos[1] = -1;
	for (int i = 0; i < p->pronargs; i++)
	{
		if (p->proargtypes.values[i] == ANYELEMENTOID)
			pos[0] = i, n++;
		else if (p->proargtypes.values[i] == ANYCOMPATIBLEOID)
			pos[1] = i, n++;
	}
	return n;
}

/* A function's argument names, n of them (palloc'd). */
static char **
ArgNames(HeapTuple tup, int n)
{
	bool		isnull;
	Datum		d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proargnames, &isnull);
	Datum	   *elems;
	int			nelems;
	char	  **names = palloc0(sizeof(char *) * Max(n, 1));

	if (isnull)
		return names;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, NULL, &nelems);
	for (int i = 0; i < nelems && i < n; i++)
		names[i] = TextDatumGetCString(elems[i]);
	return names;
}

/*
 * A keyed form (0.8: key => NULL::uuid) as the classic form of the same
 * name: map[j] is the position in funcid's arguments of the classic
 * form's argument j (the options follow the key in another order, so they
 * are matched by name), pos[0] the anyelement witness's position (the key
 * of the one set, or of the query and r side) and pos[1] the anycompatible
 * one's (the reference and s side's), -1 where there is none.  Returns the
 * classic form's argument count; 0 for a function without witnesses.
 */
int
GjKeyedArgs(Oid funcid, int map[FUNC_MAX_ARGS], int pos[2])
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	Form_pg_proc p;
	CatCList   *list;
	char	  **names;
	int			nclassic = -1;
	const char *symbol;
	NameData	classic;

	pos[0] = pos[1] = -1;
	if (!HeapTupleIsValid(tup))
		return 0;
	p = (Form_pg_proc) GETSTRUCT(tup);
	if (KeyWitnesses(p, pos) == 0)
	{
		ReleaseSysCache(tup);
		return 0;
	}
	names = ArgNames(tup, p->pronargs);
	/* the classic form has the C symbol's name (knn_lateral_join's is knn_join) */
	symbol = GjFunctionName(GjLookupFunction(funcid));
	namestrcpy(&classic, symbol != NULL ? symbol : NameStr(p->proname));
	list = SearchSysCacheList1(PROCNAMEARGSNSP, NameGetDatum(&classic));
	for (int m = 0; m < list->n_members && nclassic < 0; m++)
	{
		HeapTuple	ct = &list->members[m]->tuple;
		Form_pg_proc c = (Form_pg_proc) GETSTRUCT(ct);
		int			cpos[2];
		char	  **cnames;

		if (c->oid == funcid || c->pronamespace != p->pronamespace ||
			KeyWitnesses(c, cpos) > 0)
			continue;
		cnames = ArgNames(ct, c->pronargs);
		nclassic = c->pronargs;
		for (int j = 0; j < c->pronargs; j++)
		{
			map[j] = -1;
			for (int i = 0; i < p->pronargs; i++)
				if (cnames[j] != NULL && names[i] != NULL && strcmp(cnames[j], names[i]) == 0)
					map[j] = i;
			if (map[j] < 0)
				nclassic = -1;	/* not this one's classic form */
		}
	}
	ReleaseSysCacheList(list);
	ReleaseSysCache(tup);
	if (nclassic < 0)
		elog(ERROR, "gpujoin: function %u has no form without a key in its schema", funcid);
	return nclassic;
}

/*
 * Is funcid one of the forms that rank by PostgreSQL's own distance
 * operator (knn_lateral_join, knn_lateral_selfjoin: the C symbols of
 * knn_join and knn_selfjoin under other names)?
 */
bool
GjPgOrderFunction(Oid funcid)
{
	char	   *name = get_func_name(funcid);

	return name != NULL && (strcmp(name, "knn_lateral_join") == 0 ||
							strcmp(name, "knn_lateral_selfjoin") == 0);
}

/* The position of funcid's argument of this name; -1 when it has none. */
int
GjArgPosition(Oid funcid, const char *name)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	char	  **names;
	int			pos = -1;

	if (!HeapTupleIsValid(tup))
		return -1;
	names = ArgNames(tup, ((Form_pg_proc) GETSTRUCT(tup))->pronargs);
	for (int i = 0; i < ((Form_pg_proc) GETSTRUCT(tup))->pronargs && pos < 0; i++)
		if (names[i] != NULL && strcmp(names[i], name) == 0)
			pos = i;
	ReleaseSysCache(tup);
	return pos;
}

/* Is funcid a keyed form? */
bool
GjKeyedFunction(Oid funcid)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	int			pos[2];
	bool		keyed;

	if (!HeapTupleIsValid(tup))
		return false;
	keyed = KeyWitnesses((Form_pg_proc) GETSTRUCT(tup), pos) > 0;
	ReleaseSysCache(tup);
	return keyed;
}
