/*
 * support.c
 *		The planner support function of gpujoin's functions: row estimates.
 *
 * A function's ROWS is one number for every call; a join's size depends on
 * the table and eps by orders of magnitude, and the planner's choices over
 * it (hash or nested loop, LIMIT, parallelism elsewhere in the query) with
 * it.  So for a call whose arguments are constants:
 *	- eps_selfjoin reads a small block sample of the table (TABLESAMPLE
 *	  SYSTEM, about GJ_PLAN_SAMPLE rows, as the caller) and counts its pairs
 *	  exactly.  Blocks are sampled, not rows, so two rows of one block are
 *	  sampled together with probability f (the block fraction) and rows of
 *	  two blocks with f^2: pairs = same-block pairs / f + others / f^2 (a
 *	  Horvitz-Thompson estimate, unbiased however the table is ordered on
 *	  disk).  Only tables and materialized views are sampled.
 *	- eps_join reads a block sample of each table, independently, and
 *	  counts the pairs between them: pairs / (f_r f_s) is again unbiased.
 *	  eps_join_counts returns a row per r row.
 *	- the kNN joins return k rows per query row: k times the query table's
 *	  pg_class.reltuples (k capped at the reference rows).
 * The _sql forms, views and calls with non-constant arguments keep the
 * functions' ROWS.  Being the support function also makes the planner load
 * this library while it plans a session's first query with our functions,
 * so the custom scan's hook is in place for that very query.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "fmgr.h"
#include "nodes/supportnodes.h"
#include "utils/lsyscache.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "api/api.h"
#include "dist/dist.h"
#include "resources.h"

#define GJ_PLAN_SAMPLE 5000.0	/* rows the planner samples, about */

/* reltuples and relkind of a relation; false if it has none. */
static bool
RelationSize(Oid relid, double *reltuples, char *relkind)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));

	if (!HeapTupleIsValid(tup))
		return false;
	*reltuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	*relkind = ((Form_pg_class) GETSTRUCT(tup))->relkind;
	ReleaseSysCache(tup);
	return true;
}

/* A constant argument, or NULL. */
static Const *
ConstArg(FuncExpr *f, int i)
{
	Node	   *n = list_nth(f->args, i);

	return IsA(n, Const) ? (Const *) n : NULL;
}

/*
 * Can the planner sample cols of relid without any chance of an error?  A
 * table or materialized view the user may read whole (the sample reads the
 * block number, ctid), scalar integer or float coordinate columns (nothing
 * that can fail to convert).  Anything else: no estimate.
 */
static bool
SafeToSample(Oid relid, ArrayType *cols)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		ARR_NDIM(cols) != 1 || ARR_ELEMTYPE(cols) != TEXTOID)
		return false;
	deconstruct_array(cols, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n < 1 || n > GJ_MAX_DIMS)
		return false;
	for (int i = 0; i < n; i++)
	{
		AttrNumber	att;
		Oid			t;

		if (nulls[i])
			return false;
		att = get_attnum(relid, TextDatumGetCString(elems[i]));
		if (att <= 0)
			return false;
		t = getBaseType(get_atttype(relid, att));
		if (t != INT2OID && t != INT4OID && t != INT8OID &&
			t != FLOAT4OID && t != FLOAT8OID)
			return false;
	}
	return true;
}

/* A block sample of about GJ_PLAN_SAMPLE rows of relid into pts; its fraction in *f. */
static bool
SampleTable(const char *fname, Oid relid, ArrayType *cols, GjMetric metric, int seed,
			gj_points *pts, double *f)
{
	double		reltuples;
	char		relkind;
	GjInputSpec in;

	if (!RelationSize(relid, &reltuples, &relkind) ||
		(relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW) ||
		!SafeToSample(relid, cols))
		return false;
	/* a Citus table's rows are on its shards: the shell here has no blocks */
	if (GjCitusTable(relid))
		return false;
	if (reltuples < 0)
	{
		/* never analyzed: guess from its size, about 100 rows a block */
		Relation	rel = relation_open(relid, AccessShareLock);

		reltuples = 100.0 * RelationGetNumberOfBlocks(rel);
		relation_close(rel, AccessShareLock);
	}
	*f = reltuples > GJ_PLAN_SAMPLE ? GJ_PLAN_SAMPLE / reltuples : 1.0;
	memset(&in, 0, sizeof(in));
	in.fname = fname;
	in.relid = relid;
	in.cols = cols;
	in.sample_pct = 100.0 * *f;
	in.sample_seed = seed;
	in.metric = metric;
	GjReadPoints(&in, pts, NULL);
	return true;
}

/* Pairs of eps_selfjoin(tbl, cols, eps, .., metric) from a block sample of tbl. */
static bool
SampleSelfJoin(Oid relid, ArrayType *cols, double eps, GjMetric metric, double *pairs)
{
	GjResources *res = GjResourcesCreate(CurrentMemoryContext);
	double		f;
	int64_t		same,
				other;
	gj_status	st;

	if (!SampleTable("eps_selfjoin", relid, cols, metric, 0, &res->points, &f))
	{
		MemoryContextDelete(res->cxt);
		return false;
	}
	st = gj_grid_build(&res->grid, &res->points,
					   metric == GJ_METRIC_COSINE ? 2.0 * eps : eps * eps);
	if (st != GJ_OK)
	{
		MemoryContextDelete(res->cxt);
		return false;
	}
	res->have_grid = true;
	gj_grid_count_pairs(&res->grid, &res->points, &same, &other);
	MemoryContextDelete(res->cxt);
	*pairs = (double) same / f + (double) other / (f * f);
	return true;
}

/*
 * Pairs of eps_join(r, s, cols, eps, .., s_cols, metric) from a block
 * sample of each.  Two tables' samples are independent (different seeds,
 * so not the same block numbers of two tables stored in the same order):
 * pairs / (f_r f_s).
 * One table on both sides is sampled once (the same blocks: REPEATABLE),
 * so, as for the self-join, a pair within one block was sampled with
 * probability f and others with f^2 (the sample's ids are block numbers).
 */
static bool
SampleJoin(Oid r_relid, Oid s_relid, ArrayType *r_cols, ArrayType *s_cols, double eps,
		   GjMetric metric, double *pairs)
{
	GjResources *res = GjResourcesCreate(CurrentMemoryContext);
	double		fr,
				fs,
				same = 0.0,
				other = 0.0;
	bool		ok;

	ok = SampleTable("eps_join", r_relid, r_cols, metric, 0, &res->queries, &fr) &&
		SampleTable("eps_join", s_relid, s_cols, metric, r_relid == s_relid ? 0 : 1,
					&res->points, &fs);
	if (ok && res->queries.n > 0 && res->points.n > 0)
	{
		const gj_points *q = &res->queries,
				   *p = &res->points;
		int64_t		nbr[GJ_MAX_ALL_NEIGHBOURS];

		ok = q->dims == p->dims &&
			gj_grid_build(&res->grid, &res->points,
						  metric == GJ_METRIC_COSINE ? 2.0 * eps : eps * eps) == GJ_OK;
		res->have_grid = ok;
		for (int64 i = 0; ok && i < q->n; i++)
		{
			int			nn = gj_grid_point_neighbourhood(&res->grid, q->x + i * q->dims, nbr);

			for (int k = 0; k < nn; k++)
				for (int64 j = res->grid.cell_start[nbr[k]]; j < res->grid.cell_start[nbr[k] + 1]; j++)
					if (gj_sqdist(q->x + i * q->dims, p->x + j * p->dims, p->dims) <= res->grid.eps2)
					{
						if (r_relid == s_relid && q->ids[i] == p->ids[j])
							same += 1.0;
						else
							other += 1.0;
					}
		}
	}
	MemoryContextDelete(res->cxt);
	if (ok)
		*pairs = r_relid == s_relid ? same / fr + other / (fr * fs) : other / (fr * fs);
	return ok;
}

/* The rows a call of ours returns, when its arguments say enough. */
bool
GjEstimateRows(FuncExpr *fexpr, double *rows)
{
	GjFunction	fn = GjLookupFunction(fexpr->funcid);
	FuncExpr	classic = *fexpr;
	Const	   *c0,
			   *c1,
			   *c2,
			   *c3,
			   *c4,
			   *c5;
	GjMetric	metric = GJ_METRIC_L2;
	double		nq,
				nr;
	char		kind;

	/* a keyed form: the arguments as the classic form has them */
	classic.args = GjArgsWithoutKeys(fexpr->funcid, fexpr->args);
	fexpr = &classic;
	switch (fn)
	{
		case GJ_FN_EPS_SELFJOIN:
			c0 = ConstArg(fexpr, 0);
			c1 = ConstArg(fexpr, 1);
			c2 = ConstArg(fexpr, 2);
			c4 = ConstArg(fexpr, 4);
			c5 = list_length(fexpr->args) > 5 ? ConstArg(fexpr, 5) : NULL;
			if (c5 != NULL && !c5->constisnull)
			{
				char	   *m = TextDatumGetCString(c5->constvalue);

				if (pg_strcasecmp(m, "cosine") == 0)
					metric = GJ_METRIC_COSINE;
				else if (pg_strcasecmp(m, "l2") != 0)
					return false;	/* the call will fail: no estimate */
			}
			else if (list_length(fexpr->args) > 5)
				return false;	/* a metric not known at planning */
			if (c0 == NULL || c1 == NULL || c2 == NULL || c4 == NULL ||
				c0->constisnull || c1->constisnull || c2->constisnull || c4->constisnull ||
				!(DatumGetFloat8(c2->constvalue) > 0) ||
				!isfinite(DatumGetFloat8(c2->constvalue)) ||
				!SampleSelfJoin(DatumGetObjectId(c0->constvalue),
								DatumGetArrayTypeP(c1->constvalue),
								DatumGetFloat8(c2->constvalue), metric, rows))
				return false;
			if (DatumGetBool(c4->constvalue))
				*rows *= 2;
			return true;
		case GJ_FN_KNN_JOIN:
			c0 = ConstArg(fexpr, 0);
			c1 = ConstArg(fexpr, 1);
			c3 = ConstArg(fexpr, 3);
			if (c0 == NULL || c1 == NULL || c3 == NULL || c0->constisnull ||
				c1->constisnull || c3->constisnull ||
				!RelationSize(DatumGetObjectId(c0->constvalue), &nq, &kind) ||
				!RelationSize(DatumGetObjectId(c1->constvalue), &nr, &kind) ||
				nq < 0 || nr < 0)
				return false;
			*rows = nq * Min((double) DatumGetInt32(c3->constvalue), nr);
			return true;
		case GJ_FN_KNN_SELFJOIN:
			c0 = ConstArg(fexpr, 0);
			c2 = ConstArg(fexpr, 2);
			if (c0 == NULL || c2 == NULL || c0->constisnull || c2->constisnull ||
				!RelationSize(DatumGetObjectId(c0->constvalue), &nr, &kind) || nr < 0)
				return false;
			*rows = nr * Min((double) DatumGetInt32(c2->constvalue), Max(nr - 1, 0));
			return true;
		case GJ_FN_EPS_JOIN:
			c0 = ConstArg(fexpr, 0);
			c1 = ConstArg(fexpr, 1);
			c2 = ConstArg(fexpr, 2);
			c3 = ConstArg(fexpr, 3);
			c4 = ConstArg(fexpr, 6);	/* s_cols */
			c5 = ConstArg(fexpr, 7);	/* metric */
			if (c5 == NULL || c5->constisnull)
				return false;
			{
				char	   *m = TextDatumGetCString(c5->constvalue);

				if (pg_strcasecmp(m, "cosine") == 0)
					metric = GJ_METRIC_COSINE;
				else if (pg_strcasecmp(m, "l2") != 0)
					return false;
			}
			if (c0 == NULL || c1 == NULL || c2 == NULL || c3 == NULL || c4 == NULL ||
				c0->constisnull || c1->constisnull || c2->constisnull || c3->constisnull ||
				!(DatumGetFloat8(c3->constvalue) > 0) ||
				!isfinite(DatumGetFloat8(c3->constvalue)))
				return false;
			return SampleJoin(DatumGetObjectId(c0->constvalue),
							  DatumGetObjectId(c1->constvalue),
							  DatumGetArrayTypeP(c2->constvalue),
							  DatumGetArrayTypeP(c4->constisnull ? c2->constvalue : c4->constvalue),
							  DatumGetFloat8(c3->constvalue), metric, rows);
		case GJ_FN_JOIN_COUNTS:
			/* one row per r row */
			c0 = ConstArg(fexpr, 0);
			if (c0 == NULL || c0->constisnull ||
				!RelationSize(DatumGetObjectId(c0->constvalue), &nr, &kind) || nr < 0)
				return false;
			*rows = nr;
			return true;
		case GJ_FN_NEIGHBOR_COUNTS:
		case GJ_FN_NEIGHBORS:
		case GJ_FN_DBSCAN:
			/* one row per input row (less those skipped for NULLs) */
			c0 = ConstArg(fexpr, 0);
			if (c0 == NULL || c0->constisnull ||
				!RelationSize(DatumGetObjectId(c0->constvalue), &nr, &kind) || nr < 0)
				return false;
			*rows = nr;
			return true;
		default:
			return false;
	}
}

PG_FUNCTION_INFO_V1(gpujoin_support);

/* gpujoin_support(internal): answers SupportRequestRows. */
Datum
gpujoin_support(PG_FUNCTION_ARGS)
{
	Node	   *req = (Node *) PG_GETARG_POINTER(0);

	if (IsA(req, SupportRequestRows))
	{
		SupportRequestRows *r = (SupportRequestRows *) req;
		double		rows;

		if (r->node != NULL && IsA(r->node, FuncExpr) &&
			GjEstimateRows((FuncExpr *) r->node, &rows))
		{
			r->rows = Max(rows, 1.0);
			PG_RETURN_POINTER(r);
		}
	}
	PG_RETURN_POINTER(NULL);
}
