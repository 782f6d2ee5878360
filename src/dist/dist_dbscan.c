/*
 * dist_dbscan.c
 *		dbscan of a Citus-distributed table, on the workers: each strip
 *		clusters its rows with the worker's own engine, and this backend
 *		joins the strips' clusters through the rows they share.
 *
 * A row's cluster depends on rows far away (a chain of core rows crosses
 * any number of strips), so no halo makes one strip's answer whole.  What
 * a strip can know exactly:
 *
 *	- Core flags.  The halo is two eps wide: a row within eps of the
 *	  strip (near) has all its neighbours among the strip's rows, so
 *	  its count, and its own rows', are the single node's.  A row farther
 *	  out may count too few and look like no core row; it never looks
 *	  like one wrongly.
 *	- Links.  Two core rows within eps of each other with one of them in
 *	  the strip are both own or near there, so the strip's dbscan puts them
 *	  in one local cluster.  And every local link is a true one (both rows
 *	  are core).  So the clusters are the strips' local clusters, merged
 *	  where they share a core row.
 *	- Border rows.  An own row that is no core row has all its
 *	  neighbours among the own and near rows, with exact flags.
 *
 * The steps:
 *	1. Each strip runs dbscan_sql over its own and halo rows, into a labels
 *	   table co-located with the strips (Citus moves the task's rows to the
 *	   shard of the same worker).  The rows' flags (own, near) stay in the
 *	   strip's table, joined on the shard when a step needs them.
 *	2. Back here: each local cluster's smallest own or near core key, and,
 *	   sorted by key, the (key, local cluster) of every near core row: a
 *	   row within eps of a cut is near in each strip it is in (own in one).
 *	   Union-find over the local clusters joins them; the clusters are
 *	   numbered by their smallest core key, as on one node.
 *	3. The own rows come back with their local cluster and leave with its
 *	   number; a border row is joined (eps_join_sql, on the worker) with the
 *	   core rows of its strip, and takes the lowest number among theirs.
 *
 * This backend holds a few integers a local cluster, never the input's
 * rows: the shared rows come sorted (work_mem, then disk) and the rows out
 * leave in the job's tuplestore.  The keys must be unique (the caller
 * checked).
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "dist/dist_internal.h"

/* A strip's distribution value and its index, sorted by value. */
typedef struct StripValue
{
	int32		value;
	int			index;
} StripValue;

/* The local clusters of every strip: node offset[i] + c is strip i's cluster c. */
typedef struct Clusters
{
	const DistCall *dc;
	StripValue *by_value;
	int		   *offset;			/* [strips + 1] */
	int			nodes;
	Datum	   *minkey;			/* a node's smallest core key ... */
	bool	   *has_key;		/* ... where it has an own or near core row */
	int		   *parent;			/* union-find */
	int32	   *number;			/* the cluster's number, by its smallest core key */
	/* the keys' order: btree, strings bytewise (as the single node ranks them) */
	TypeCacheEntry *type;
	Oid			coll;
	Datum		prev_key;		/* the last shared row's key, and its first node (-1: none) */
	int			prev_node;
	/* the rows out */
	GjDist	   *dist;
	TupleDesc	out;
	MemoryContext cxt;
} Clusters;

static int
CompareValue(const void *a, const void *b)
{
	int32		x = ((const StripValue *) a)->value;
	int32		y = ((const StripValue *) b)->value;

	return x < y ? -1 : x > y;
}

/* The index of the strip of distribution value v. */
static int
StripIndex(const Clusters *cl, int32 v)
{
	StripValue key = {v, 0};
	StripValue *hit = bsearch(&key, cl->by_value, cl->dc->strips.n, sizeof(StripValue), CompareValue);

	if (hit == NULL)
		elog(ERROR, "gpujoin: a label of no strip (%d)", v);
	return hit->index;
}

/* The node of (strip value, local cluster) of a row's columns 2 and 3. */
static int
NodeOf(const Clusters *cl, TupleTableSlot *slot, int col)
{
	int			i = StripIndex(cl, DatumGetInt32(slot->tts_values[col - 1]));
	int32		c = DatumGetInt32(slot->tts_values[col]);

	if (slot->tts_isnull[col - 1] || slot->tts_isnull[col] || c < 0 ||
		c >= cl->offset[i + 1] - cl->offset[i])
		elog(ERROR, "gpujoin: a local cluster out of range");
	return cl->offset[i] + c;
}

static int
Find(Clusters *cl, int x)
{
	while (cl->parent[x] != x)
	{
		cl->parent[x] = cl->parent[cl->parent[x]];
		x = cl->parent[x];
	}
	return x;
}

static int
CompareKeys(const Clusters *cl, Datum a, Datum b)
{
	return DatumGetInt32(FunctionCall2Coll(&cl->type->cmp_proc_finfo, cl->coll, a, b));
}

/* (strip, max(cluster)): each strip's count of local clusters */
static void
SizeRow(TupleTableSlot *slot, void *arg)
{
	Clusters   *cl = (Clusters *) arg;
	int			i = StripIndex(cl, DatumGetInt32(slot->tts_values[0]));

	if (!slot->tts_isnull[1])
		cl->offset[i + 1] = DatumGetInt32(slot->tts_values[1]) + 1;
}

/* (key, strip, cluster): a local cluster's smallest core key */
static void
MinKeyRow(TupleTableSlot *slot, void *arg)
{
	Clusters   *cl = (Clusters *) arg;
	int			node = NodeOf(cl, slot, 2);
	MemoryContext old = MemoryContextSwitchTo(cl->cxt);

	cl->minkey[node] = datumCopy(slot->tts_values[0], cl->type->typbyval, cl->type->typlen);
	cl->has_key[node] = true;
	MemoryContextSwitchTo(old);
}

/*
 * (key, strip, cluster), ordered by key: a near core row, in each strip it
 * is in.  Consecutive equal keys are one row (keys are unique), whose local
 * clusters are one cluster.
 */
static void
SharedRow(TupleTableSlot *slot, void *arg)
{
	Clusters   *cl = (Clusters *) arg;
	int			node = NodeOf(cl, slot, 2);

	if (cl->prev_node >= 0 && CompareKeys(cl, cl->prev_key, slot->tts_values[0]) == 0)
	{
		int			a = Find(cl, cl->prev_node);
		int			b = Find(cl, node);

		if (a != b)
			cl->parent[Max(a, b)] = Min(a, b);
		return;
	}
	if (!cl->type->typbyval && cl->prev_node >= 0)
		pfree(DatumGetPointer(cl->prev_key));
	cl->prev_key = datumCopy(slot->tts_values[0], cl->type->typbyval, cl->type->typlen);
	cl->prev_node = node;
}

/* A component's smallest core key, at its root. */
static int
CompareRoots(const void *a, const void *b, void *arg)
{
	Clusters   *cl = (Clusters *) arg;

	return CompareKeys(cl, cl->minkey[*(const int *) a], cl->minkey[*(const int *) b]);
}

/* Number the components by their smallest core key: number[node] of every node. */
static void
NumberClusters(Clusters *cl)
{
	int		   *roots = palloc(sizeof(int) * Max(cl->nodes, 1));
	int			nroots = 0;

	for (int x = 0; x < cl->nodes; x++)
	{
		int			r = Find(cl, x);

		if (!cl->has_key[x])
			continue;
		if (!cl->has_key[r] || CompareKeys(cl, cl->minkey[x], cl->minkey[r]) < 0)
		{
			cl->minkey[r] = cl->minkey[x];
			cl->has_key[r] = true;
		}
	}
	for (int x = 0; x < cl->nodes; x++)
		if (Find(cl, x) == x && cl->has_key[x])
			roots[nroots++] = x;
	qsort_arg(roots, nroots, sizeof(int), CompareRoots, cl);
	for (int x = 0; x < cl->nodes; x++)
		cl->number[x] = -1;
	for (int i = 0; i < nroots; i++)
		cl->number[roots[i]] = i;
	for (int x = 0; x < cl->nodes; x++)
		cl->number[x] = cl->number[Find(cl, x)];
	pfree(roots);
}

static void
PutRow(Clusters *cl, Datum key, int32 number, bool core)
{
	Datum		v[3] = {key, Int32GetDatum(number), BoolGetDatum(core)};
	bool		n[3] = {false, number < 0, false};
	MemoryContext old = MemoryContextSwitchTo(cl->cxt);

	tuplestore_putvalues(cl->dist->store, cl->out, v, n);
	MemoryContextSwitchTo(old);
}

/* (key, strip, cluster, core): an own core row, or noise (cluster NULL) */
static void
OwnRow(TupleTableSlot *slot, void *arg)
{
	Clusters   *cl = (Clusters *) arg;
	bool		core = DatumGetBool(slot->tts_values[3]);

	PutRow(cl, slot->tts_values[0], core ? cl->number[NodeOf(cl, slot, 2)] : -1, core);
}

/* (key, strip, clusters[]): a border row, and the local clusters of its core neighbours */
static void
BorderRow(TupleTableSlot *slot, void *arg)
{
	Clusters   *cl = (Clusters *) arg;
	int			i = StripIndex(cl, DatumGetInt32(slot->tts_values[1]));
	ArrayType  *a = DatumGetArrayTypeP(slot->tts_values[2]);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int32		best = -1;

	deconstruct_array(a, INT4OID, 4, true, TYPALIGN_INT, &elems, &nulls, &n);
	for (int j = 0; j < n; j++)
	{
		int32		c = DatumGetInt32(elems[j]);
		int32		num;

		if (nulls[j] || c < 0 || c >= cl->offset[i + 1] - cl->offset[i])
			elog(ERROR, "gpujoin: a border row's local cluster out of range");
		num = cl->number[cl->offset[i] + c];
		if (num >= 0 && (best < 0 || num < best))
			best = num;
	}
	if (best < 0)
		elog(ERROR, "gpujoin: a border row without a cluster");
	PutRow(cl, slot->tts_values[0], best, false);
}

/*
 * The labels table: every row of every strip (own and halo) with its local
 * cluster.  The function is the only thing the tasks' query joins, so it
 * runs once a strip; the rows' flags are joined in later, on the shards.
 */
static void
MakeLabels(DistCall *dc, const char *nsp, const char *eps)
{
	dc->l_tab = psprintf("%s.%s", dc->schema, quote_identifier(psprintf("%s_l", dc->s_base)));
	GjDistExec(psprintf("CREATE UNLOGGED TABLE %s AS SELECT strip, id, 0::int4 AS cluster, true AS core "
						"FROM %s WITH NO DATA", dc->l_tab, dc->s_tab), SPI_OK_UTILITY);
	GjDistExec(psprintf("SELECT create_distributed_table('%s', 'strip', colocate_with => '%s')",
						dc->l_tab, dc->cells), SPI_OK_SELECT);
	GjDistExec(psprintf("INSERT INTO %s SELECT c.strip, d.id, d.cluster, d.is_core "
						"FROM %s c, LATERAL %s.dbscan_sql(c.sq, %s, %d%s%s) d",
						dc->l_tab, dc->cells, nsp, eps, dc->spec->minpts,
						GjDistKeyWitness("key", dc->s), dc->call_args), SPI_OK_INSERT);
}

/* "FROM labels l JOIN s t": a label with its row's flags, on one shard */
static char *
LabelsWithFlags(const DistCall *dc)
{
	return psprintf("%s l JOIN %s t ON t.strip = l.strip AND t.id = l.id", dc->l_tab, dc->s_tab);
}

/*
 * Each strip's queries for the border rows' join: its own rows that are
 * border rows, and its core rows within their reach (own and near) with
 * their local cluster for an id, from the two shards.  The join's pairs
 * then name the clusters: no join after the function (a join there may
 * run it again for every row).
 */
static char *
BorderQuery(const DistCall *dc, const char *id, const char *cond)
{
	char	   *coords = psprintf("t.%s", GjDistColumnList(dc->ncols) + strlen("id, "));
	char	   *fmt = psprintf("SELECT %s, %s FROM %%s.%%I t JOIN %%s.%%I l ON l.id = t.id "
							   "WHERE t.strip = %%s AND l.strip = %%s AND %s", id, coords, cond);

	return psprintf("pg_catalog.format(%s, %s, %s || '_' || "
					"pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v), %s, %s || '_' || "
					"pg_catalog.get_shard_id_for_distribution_column('%s'::regclass, v), v, v)",
					quote_literal_cstr(fmt), quote_literal_cstr(dc->schema),
					quote_literal_cstr(dc->s_base), dc->s_tab, quote_literal_cstr(dc->schema),
					quote_literal_cstr(psprintf("%s_l", dc->s_base)), dc->l_tab);
}

static void
BorderCells(const DistCall *dc)
{
	GjDistExec(psprintf("DELETE FROM %s", dc->cells), SPI_OK_DELETE);
	GjDistExec(psprintf("INSERT INTO %s SELECT v, %s, %s FROM pg_catalog.unnest(%s) v", dc->cells,
						BorderQuery(dc, "t.id", "t.own AND NOT l.core AND l.cluster IS NOT NULL"),
						BorderQuery(dc, "l.cluster", "l.core AND (t.own OR t.near)"),
						GjDistValuesLiteral(dc)), SPI_OK_INSERT);
}

void
GjDistDbscan(DistCall *dc, GjDist *dist, MemoryContext cxt)
{
	const char *nsp = quote_identifier(get_namespace_name(dc->spec->input.nsp));
	char	   *eps = GjFloat8Literal(dc->spec->eps);
	Oid			t = dc->s->keys != NULL ? dc->s->keys->type : INT8OID;
	const char *id = dc->s->keys != NULL ? "id" : "id::int8";
	const char *coll;
	Clusters	cl;
	MemoryContext old;

	memset(&cl, 0, sizeof(cl));
	cl.dc = dc;
	cl.dist = dist;
	cl.cxt = AllocSetContextCreate(CurrentMemoryContext, "gpujoin dbscan clusters", ALLOCSET_DEFAULT_SIZES);
	cl.type = lookup_type_cache(t, TYPECACHE_CMP_PROC_FINFO | TYPECACHE_LT_OPR);
	if (!OidIsValid(cl.type->cmp_proc_finfo.fn_oid) || !OidIsValid(cl.type->lt_opr))
		elog(ERROR, "gpujoin: type %s has no btree order", format_type_be(t));
	cl.coll = type_is_collatable(t) ? C_COLLATION_OID : InvalidOid;
	coll = type_is_collatable(t) ? " COLLATE \"C\"" : "";

	/* 1. each strip's local clusters, in the labels table on its worker */
	MakeLabels(dc, nsp, eps);
	CHECK_FOR_INTERRUPTS();

	/* 2. the local clusters, joined by their shared core rows, numbered */
	old = MemoryContextSwitchTo(cl.cxt);
	cl.by_value = palloc(sizeof(StripValue) * dc->strips.n);
	for (int i = 0; i < dc->strips.n; i++)
		cl.by_value[i] = (StripValue) {dc->values[i], i};
	qsort(cl.by_value, dc->strips.n, sizeof(StripValue), CompareValue);
	cl.offset = palloc0(sizeof(int) * (dc->strips.n + 1));
	MemoryContextSwitchTo(old);
	GjDistEach(psprintf("SELECT strip, max(cluster) FROM %s GROUP BY strip", dc->l_tab), SizeRow, &cl);
	for (int i = 0; i < dc->strips.n; i++)
		cl.offset[i + 1] += cl.offset[i];
	cl.nodes = cl.offset[dc->strips.n];
	old = MemoryContextSwitchTo(cl.cxt);
	cl.minkey = palloc0(sizeof(Datum) * Max(cl.nodes, 1));
	cl.has_key = palloc0(sizeof(bool) * Max(cl.nodes, 1));
	cl.parent = palloc(sizeof(int) * Max(cl.nodes, 1));
	cl.number = palloc(sizeof(int32) * Max(cl.nodes, 1));
	MemoryContextSwitchTo(old);
	for (int x = 0; x < cl.nodes; x++)
		cl.parent[x] = x;
	/*
	 * Only own and near core rows: a local cluster of farther halo rows alone
	 * is a piece of a cluster that its rows' own strips find whole, and no
	 * row of this strip's answer is in it.
	 */
	GjDistEach(psprintf("SELECT DISTINCT ON (l.strip, l.cluster) l.%s, l.strip, l.cluster FROM %s "
						"WHERE l.core AND (t.own OR t.near) ORDER BY l.strip, l.cluster, l.%s%s USING %s",
						id, LabelsWithFlags(dc), id, coll, GjDistOperator(cl.type->lt_opr)), MinKeyRow, &cl);
	CHECK_FOR_INTERRUPTS();

	/* sorted on the coordinator, in work_mem then on disk */
	cl.prev_node = -1;
	GjDistEach(psprintf("SELECT l.%s, l.strip, l.cluster FROM %s WHERE l.core AND t.near ORDER BY l.%s%s USING %s",
						id, LabelsWithFlags(dc), id, coll, GjDistOperator(cl.type->lt_opr)), SharedRow, &cl);
	NumberClusters(&cl);
	CHECK_FOR_INTERRUPTS();

	/* 3. the rows out: own core rows and noise, then the border rows */
	old = MemoryContextSwitchTo(cxt);
	cl.out = CreateTemplateTupleDesc(3);
	TupleDescInitEntry(cl.out, 1, "id", t, -1, 0);
	TupleDescInitEntry(cl.out, 2, "cluster", INT4OID, -1, 0);
	TupleDescInitEntry(cl.out, 3, "is_core", BOOLOID, -1, 0);
	MemoryContextSwitchTo(old);
	GjDistStoreSlot(dist, cl.out, cxt);
	GjDistEach(psprintf("SELECT l.%s, l.strip, l.cluster, l.core FROM %s WHERE t.own AND (l.core OR l.cluster IS NULL)",
						id, LabelsWithFlags(dc)), OwnRow, &cl);
	BorderCells(dc);
	GjDistEach(psprintf("SELECT j.r, c.strip, pg_catalog.array_agg(DISTINCT j.s::int4) FROM %s c, "
						"LATERAL %s.eps_join_sql(c.rq, c.sq, %s%s%s%s) j GROUP BY c.strip, j.r",
						dc->cells, nsp, eps, GjDistKeyWitness("r_key", dc->s),
						dc->s->keys != NULL ? ", s_key => NULL::pg_catalog.int4" : "", dc->call_args),
			   BorderRow, &cl);
	MemoryContextDelete(cl.cxt);
}
