/*
 * join_exec.h
 *		What the GpuJoin executor's files share (join/): the node's state,
 *		each side's rows, reading, the scan tuple.
 *
 * node.c runs the node (begin, next row, end, rescan, EXPLAIN) and calls
 * the others; exec.c holds what both kinds of join do: read the inner side
 * whole and the outer side in batches, keeping each row's tuple and its
 * key's coordinates, and make the scan tuple of a pair.  pairs.c is the
 * distance join, knn.c the LATERAL kNN join; both call exec.c only.
 */
#ifndef GJ_JOIN_EXEC_H
#define GJ_JOIN_EXEC_H

#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "utils/sortsupport.h"

#include "job/job.h"
#include "join/join.h"

#define GJ_JOIN_BATCH_ROWS (8 * 1024 * 1024)	/* outer rows in a batch, at most */
#define GJ_JOIN_MIN_BATCH_BYTES (16 * 1024 * 1024)

typedef enum GjJoinPhase
{
	PH_START,
	PH_BATCH,
	PH_PAIRS,
	PH_DIAGONAL,				/* a self join's rows with themselves */
	PH_RETRY,					/* kNN: the batch's unproven rows asked again */
	PH_OTHER,
	PH_UNMATCHED,
	PH_DONE
} GjJoinPhase;

/* One side's rows of this scan (inner) or this batch (outer). */
typedef struct GjSide
{
	PlanState  *ps;
	AttrNumber	key;			/* the key's column in ps's tuples */
	TupleTableSlot *slot;		/* holds one of tup[] */
	MinimalTuple *tup;			/* rows kept */
	int64		n;
	int64		cap;
	int64		loaded;			/* which of them slot holds (-1: none) */
	gj_points	pts;			/* engine rows: coordinates, id = index in tup */
	int64	   *other;			/* rows the engine cannot take: indexes in tup */
	int64		nother;
	int64		cap_other;
	int64	   *never;			/* kept rows that never match (NULL keys): indexes */
	int64		nnever;
	int64		cap_never;
	bool		ended;			/* the plan has no more rows */
	MemoryContext cxt;
	MemoryContext tup_cxt;		/* tup[]'s tuples, packed (a child of cxt) */
	int64		total;			/* rows read over the scan */
	TupleTableSlot *cur;		/* the slot holding row loaded */

	/* rows read by the parallel read, fetched by ctid (tid_read.c) */
	bool		tid_ok;			/* the side's plan qualifies */
	Oid			tid_nsp;		/* gpujoin's schema */
	AttrNumber	tid_att;		/* the key's column in the table */
	int			tid_dims;		/* ... its declared dimensions */
	int32		tid_srid;		/* ... or PostGIS points' SRID */
	bool		by_tid;			/* this scan's rows: tids[], not tup[] */
	bool		tid_tried;		/* this scan tried (the outer side: its first batch) */
	ItemPointerData *tids;
	int			tid_workers;	/* the read's parallel workers, at most */
	int64		tid_rows;		/* rows read so over the scan */
	int64		fetches;		/* tuples fetched by ctid */
	/*
	 * ... or carried by the read, no tuple ever fetched (by_cols): the
	 * plan's columns are the key and at most one NOT NULL integer column,
	 * read as the rows' ids; the key's value is made from its coordinates
	 * (a vector under <->) where an expression needs it
	 */
	bool		cols_ok;		/* the plan's columns allow it */
	bool		by_cols;		/* this scan's rows: pts and cvals */
	AttrNumber	carry_att;		/* the integer column in the table (0: none) */
	Oid			carry_type;
	int			key_pos;		/* the plan's column that is the key (-1: none) ... */
	int			carry_pos;		/* ... and the integer column (-1: none) */
	int64	   *cvals;			/* the integer column's value per row */
	bool		key_needed;		/* an expression of the node reads the key ... */
	bool		key_always;		/* ... one evaluated on every scan tuple */
	GjKeyKind	key_kind;
	struct varlena *keybuf;		/* the key's value, made for key_row */
	int64		key_row;
	Buffer	   *pins;			/* the table's pages, pinned as first fetched (or NULL) */
	BlockNumber npins;
	int64		held_row;		/* the row whose tuple the plan's scan slot holds (-1) */
	struct GjSide *cur_src;		/* the side whose scan slot cur was made from */
} GjSide;

/* A kNN candidate of one query row: the inner row, its ORDER BY keys. */
typedef struct GjKnnCand
{
	int64		row;
	int64		order;			/* the engine's rank, the last tie-break */
	double		dist;			/* the engine's distance (-1: not the engine's) */
	Datum	   *keys;
	bool	   *nulls;
} GjKnnCand;

/* A candidate pair held to be taken in the outer rows' ctid order (pairs.c). */
typedef struct GjHeldPair
{
	uint64		key;			/* the outer row's ctid */
	int64		o;
	int64		i;
	double		sq;
} GjHeldPair;

#define GJ_HELD_PAIRS 65536
#define GJ_KNN_TAKE 4096			/* kNN job rows taken at once */

typedef struct GjJoinState
{
	CustomScanState css;
	int			what;			/* GJ_JOIN_DISTANCE or GJ_JOIN_KNN */
	double		est_cand;		/* candidates the plan expects (-1: no estimate) */
	JoinType	jointype;
	GjKeyKind	kind;
	GjJoinMetric metric;
	bool		empty_false;
	int			nouter;			/* outer columns at the front of the scan tuple */
	int			ninner;			/* then the inner's */
	Oid			postgis_nsp;
	Expr	   *clause;
	ExprState  *joinqual;
	ExprState  *restqual;		/* joinqual less the predicate */
	ExprState  *bound_state;	/* d, or kNN's LIMIT */
	ExprState  *spheroid_state;
	GjSide		outer;
	GjSide		inner;
	int		   *self_map;		/* self join: outer column j is inner column self_map[j] */
	bool		self_pend;		/* a self-join pair's other order still to decide */
	int64		self_a;
	int64		self_b;
	double		self_sq;
	bool		diag_never;		/* a self join's quals fail every row with itself */
	GjHeldPair *held;			/* pairs taken in ctid order, when the outer side is so read */
	int64		nheld;
	int64		iheld;

	/* this scan */
	GjJoinPhase phase;
	bool		none;			/* d is NULL: nothing matches */
	bool		fallback;		/* every row an other row */
	double		d;
	bool		spheroid;
	double		eps;
	double		eps2;
	double		in2;			/* engine distances^2 below this pass the predicate */
	int			dims;			/* key coordinates (vectors: the first engine row's) */
	int32		tag;			/* PostGIS: the SRID of the first engine row */
	bool		tag_set;
	bool		geo_ready;
	gj_geodetic geo;
	double	   *row;			/* one key's coordinates */
	GjJob	   *job;
	bool	   *matched;		/* per outer row of the batch */
	int64		oi;				/* position in the other phase / unmatched phase */
	int64		ii;
	int			other_part;
	int64		scan_outer;		/* rows whose columns the scan slot holds (-1: nulls) */
	int64		scan_inner;

	/* kNN: the subquery's quals on a pair, ORDER BY keys, output columns */
	ExprState  *pairqual;
	bool		pair_not_self;	/* ... which are r.key <> q.key of a unique key: r is not q */
	int			norder;
	ExprState **order_state;
	int16	   *order_len;
	bool	   *order_byval;
	SortSupportData *ssup;
	int			nsout;
	ExprState **sout_state;
	AttrNumber *sout_var;		/* ... a column of the scan tuple, taken as it is (0: evaluated) */
	GjKnnCand  *saved;			/* a query row's candidates, kept while FastSelect reorders them */
	int64	   *kb_q;			/* the job's rows, taken GJ_KNN_TAKE at a time */
	int64	   *kb_r;
	int32	   *kb_rank;
	double	   *kb_d;
	int64		kb_n;
	int64		kb_pos;
	int64		cap_saved;
	int64		k;				/* LIMIT */
	int64		k2;				/* candidates asked of the engine */
	double		pass_rate;		/* share of sampled pairs the pair quals pass (-1: not drawn yet) */
	int			pass_sampled;	/* ... of how many pairs */
	/* ... inner rows by the hash of r.c in a pair qual r.c = <q expression> (knn_key.c) */
	ExprState  *kg_inner;		/* r.c (NULL: no such qual) */
	ExprState  *kg_outer;		/* the q expression */
	FmgrInfo	kg_inner_hash;
	FmgrInfo	kg_outer_hash;
	Oid			kg_coll;
	struct GjKeyRow *kg_rows;	/* this scan's inner rows with a key, by its hash */
	int64		kg_n;
	bool		kg_built;
	bool		kg_full;
	double	   *kg_kd;			/* ... a row's k buffer (knn_search.h), kg_kcap entries */
	int64	   *kg_kid;
	int64		kg_kcap;		/* a key's candidates all sorted (the first few did not prove it) */
	int64	   *kg_ipos;		/* inner row -> its point in inner.pts (-1: none), or NULL */
	double	   *kg_x;			/* kg_rows' engine coordinates in their order (NaN: none), or NULL */
	bool		kg_copied;		/* ... made, or found too large, this scan */
	int64	   *kg_opos;		/* ... outer row of the batch -> outer.pts */
	int64	   *kg_lo;			/* per outer row of the batch: its key's rows in kg_rows */
	int64	   *kg_hi;
	int64	   *retry;			/* outer rows left unproven by the batch's job, asked again */
	int64		nretry;
	int64		cap_retry;
	bool		retrying;		/* the batch's second job: its rows unproven are searched whole */
	gj_points	retry_pts;		/* ... its query rows */
	int64		group;			/* ... and an outer row's when all are in */
	GjKnnCand  *cand;
	int64		ncand;
	int64		cap_cand;
	int64		cur_o;			/* the query row whose candidates come in (-1) */
	bool		have_pend;		/* a job row of the next query row, taken early */
	int64		pend_q;
	int64		pend_r;
	int32		pend_rank;
	double		pend_d;
	struct HTAB *partials;		/* outer rows whose candidates came in part */
	MemoryContext partial_cxt;
	int64		isel;			/* next of cand[] to emit, up to nsel */
	int64		nsel;
	int64		emit_o;
	MemoryContext knn_cxt;		/* one query row's keys */

	/* EXPLAIN ANALYZE */
	GjJobStats	js;
	int			runs;
	int64		batches;
	int64		candidates;
	int64		decided;		/* ... of which the engine's distance decided */
	int64		other_pairs;
	int64		fallbacks;		/* kNN: query rows answered by every inner row */
	int64		fast;			/* ... and in the engine's order, no key computed */
	int64		retried;		/* ... asked of the engine again, for more candidates */
	int64		by_key;			/* kNN: query rows answered by the inner rows of their key */
	double		read_ms;
	double		t0;
} GjJoinState;

typedef enum GjRowClass
{
	ROW_ENGINE,
	ROW_OTHER,
	ROW_NEVER
} GjRowClass;

/* knn_key.c */
extern void GjKnnKeyInit(GjJoinState *st, List *pairquals);
extern void GjKnnKeyRun(GjJoinState *st, int64 o, int64 *lo, int64 *hi);
extern int64 GjKnnKeyRow(GjJoinState *st, int64 j);
extern bool GjKnnKeyCandidates(GjJoinState *st, int64 o, GjKnnCand **cand, int64 *cap, int64 *n,
							   int64 *nopoint, int64 nfirst, int64 *left);
extern int64 GjKnnKeyDirect(GjJoinState *st);

/* exec.c */
extern void GjSideReset(GjSide *side);
extern void GjSideKeepOther(GjSide *side, int64 row);
extern int64 GjSideBytes(GjSide *side);
extern bool GjJoinReadRow(GjJoinState *st, GjSide *side, bool keep_never);
extern bool GjJoinReadInner(GjJoinState *st);
extern bool GjJoinReadBatch(GjJoinState *st);
extern void GjJoinGeography(GjJoinState *st, gj_points *p);
extern void GjJoinEndJob(GjJoinState *st);
extern void GjSidePrefetch(GjSide *side, int64 row);
extern void GjSidePrefetchSlot(GjSide *side, int64 row);
extern TupleTableSlot *GjJoinScanTuple(GjJoinState *st, int64 o, int64 i);
extern void GjJoinScanKeys(GjJoinState *st);
extern TupleTableSlot *GjJoinProject(GjJoinState *st);
extern TupleTableSlot *GjJoinUnmatched(GjJoinState *st, int64 o);

/* tid_read.c */
extern void GjTidInit(GjJoinState *st, GjSide *side);
extern bool GjTidRead(GjJoinState *st, GjSide *side, int64 budget, bool exact);
extern TupleTableSlot *GjTidRow(GjJoinState *st, GjSide *side, int64 row);
extern void GjColsKeyUse(GjJoinState *st, GjSide *side, bool needed, bool always);
extern void GjColsValues(GjSide *layout, GjSide *rows, int64 row, Datum *values, bool *isnull);
extern Datum GjColsKey(GjSide *layout, GjSide *rows, int64 row);

/* pairs.c, knn.c: the next output row, NULL at the end */
extern TupleTableSlot *GjPairsNext(GjJoinState *st);
extern TupleTableSlot *GjKnnNext(GjJoinState *st);
extern void GjKnnInit(GjJoinState *st, CustomScan *cscan);

#endif							/* GJ_JOIN_EXEC_H */
