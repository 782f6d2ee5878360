/*
 * parallel_read.c
 *		The parallel read: rows packed into point buffers by parallel
 *		workers, through a partial aggregate.
 *
 * A serial read costs what the executor costs per row (~0.1 us), 1 s for
 * 10M rows, several times a GPU join.  The executor hands rows to one
 * DestReceiver in the leader only, but it does run aggregates in parallel
 * workers: gpujoin_pack(token, id, coords...) converts each row into a
 * per-worker point buffer (the transition function, the same conversion as
 * the serial reader), the workers' buffers travel to the leader as bytea
 * (serialize/deserialize) and are appended (combine), and the final
 * function hands the whole buffer to the reader that issued the token,
 * without a copy.  The query is the reader's own SELECT, so privileges,
 * column grants and row-level security apply exactly as in the serial read;
 * the planner chooses the workers (max_parallel_workers_per_gather), and
 * with none the same aggregate runs serially.
 *
 * Copies and the tuple queues are what a parallel read can lose its gain
 * to (measured: 4 workers passing 2M rows as bytea were no faster than one
 * process), so the rows go through shared memory instead: the reader
 * creates a segment sized by the table's statistics and passes its handle
 * in the token; workers attach, take blocks of rows (BlockRows) with an
 * atomic counter and write converted rows straight into them, and the
 * final function moves the blocks' rows together in place and hands the
 * segment itself to the reader as its point buffer (mapped until the join
 * releases its points); only when some rows overflowed does it copy the
 * blocks into the reader's buffer instead.  Rows that do not fit (stale
 * statistics, no room in /dev/shm) stay in the worker's own buffer and
 * travel as bytea, which the leader's deserialize function appends
 * straight into the reader's buffer; the combine step only adds counters.
 * Buffers are malloc'd (they become the job's gj_points) and freed by a
 * callback on the aggregate's memory context unless handed over; the
 * hand-over target is only set in the reader's process while its query
 * runs (workers never see it).
 */
#include "postgres.h"

#include "compat.h"

#include <limits.h>
#include <sys/statvfs.h>

#include "access/htup_details.h"
#include "access/parallel.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/dsm_impl.h"
#include "storage/fd.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "machine.h"
#include "read/reader.h"

#define PACK_MAGIC UINT64CONST(0x676a7061636b3031)
#define PACK_BLOCK_ROWS 8192		/* rows a block, at most ... */
#define PACK_BLOCK_BYTES (2 << 20)	/* ... and about this many bytes */
#define PACK_PARTICIPANTS 17		/* leader and workers, at most (slack) */
#define PACK_FILE_HEAD 64			/* the rows' file starts with the magic and token */

static int	parallel_read_min_rows_guc = 100000;
static bool parallel_read_file_guc = true;

/* The read's settings (from _PG_init). */
void
GjReadInit(void)
{
	DefineCustomIntVariable("gpujoin.parallel_read_min_rows",
							"Tables of at least this many rows are read by parallel workers (-1 = never).",
							"The planner still decides how many workers (max_parallel_workers_per_gather).",
							&parallel_read_min_rows_guc,
							100000, -1, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.parallel_read_file",
							 "Pass the parallel read's rows through shared files of the reader's (Linux).",
							 "Off, or where min_dynamic_shared_memory holds them: through a PostgreSQL "
							 "dynamic shared memory segment, which outside the main region costs the "
							 "query an allocation and a free of every page on one core.",
							 &parallel_read_file_guc,
							 true,
							 PGC_USERSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
}

/* gpujoin.parallel_read_min_rows (-1: never), for the plain-SQL join's read. */
int
GjParallelReadMinRows(void)
{
	return parallel_read_min_rows_guc;
}

/*
 * The shared segment: this header, the fill count of each block, then ids
 * and coordinates of cap rows, unless the rows are in the reader's shared
 * files (rows_nfiles > 0: core/shared_rows.c), PACK_FILE_HEAD bytes into
 * them.
 * Block b holds rows [b * block_rows, ...), of which the first fill[b] are
 * written.
 */
typedef struct PackShared
{
	uint64		magic;
	int64		token;
	int32		dims;
	int64		cap;
	int64		nblocks;
	int64		block_rows;
	int32		normalize;		/* cosine: rows normalised as they are packed */
	char		fname[NAMEDATALEN];	/* the reading function, for messages */
	int32		leader_pid;		/* the reader that made it ... */
	GjBackendSlot leader_backend;	/* ... and its backend slot */
	int32		rows_nfiles;	/* the rows' files in the reader, or 0: rows follow */
	int32		rows_fds[GJ_SHARED_ROWS_MAX_FILES];	/* their descriptors there */
	int64		rows_part;		/* bytes a file */
	pg_atomic_uint64 next_block;
} PackShared;

static inline uint32 *
SharedFill(PackShared *s)
{
	return (uint32 *) (s + 1);
}

/* Bytes of ids and coordinates of cap rows. */
static inline Size
RowsBytes(int64 cap, int dims)
{
	return (Size) cap * (sizeof(int64) + sizeof(double) * dims);
}

/* Where the rows are, in this process: ids, then coordinates, from base. */
static inline void
RowsAt(PackShared *s, char *base, int64 **ids, double **x)
{
	*ids = (int64 *) base;
	*x = (double *) (*ids + s->cap);
}

/* The rows' place in the segment itself (rows_nfiles == 0). */
static inline char *
SegmentRows(PackShared *s)
{
	return (char *) (s + 1) + MAXALIGN(sizeof(uint32) * s->nblocks);
}

/*
 * Rows a block of rows of dims coordinates: 8192, or fewer for wide rows
 * (256 at 768 dimensions), so that the blocks every participant leaves
 * part-filled at its end cost little slack (PackCapacity).
 */
static int64
BlockRows(int dims)
{
	int64		r = PACK_BLOCK_BYTES / (8 * ((int64) dims + 1));

	return Max(Min(r, PACK_BLOCK_ROWS), 16);
}

/*
 * Rows to make room for when expect are expected: each participant claims
 * blocks one at a time and leaves its last one part-filled, so without
 * that slack the segment ran out before the last rows (100K rows of 768
 * dimensions with 6 workers overflowed every time), and the rows were
 * copied out of it instead of adopted.
 */
static int64
PackCapacity(int64 expect, int dims)
{
	return expect + PACK_PARTICIPANTS * BlockRows(dims);
}

/* The segment's size, with the rows in it or without. */
static Size
SharedSize(int64 cap, int dims, bool with_rows)
{
	int64		nblocks = (cap + BlockRows(dims) - 1) / BlockRows(dims);

	return MAXALIGN(sizeof(PackShared)) + MAXALIGN(sizeof(uint32) * nblocks) +
		(with_rows ? RowsBytes(cap, dims) : 0);
}

typedef struct PackState
{
	int64		token;
	PackShared *shared;			/* the reader's segment, or NULL */
	dsm_segment *seg;			/* a worker's mapping of it */
	int64	   *ids;			/* where the segment's rows are in this */
	double	   *x;				/* ... process; NULL: no room for them */
	gj_shared_rows file;		/* a worker's mapping of the rows' files */
	int64		blk;			/* the block being filled, or -1 */
	int64		pos;			/* next row in it */
	int64		end;
	bool		prefault;		/* map a claimed block's pages in at once */
	GjRowReader rd;				/* shape (own rows only) and counters */
	int32		partials;		/* worker states combined into this one */
	bool		normalize;		/* normalise rows (the segment says so) */
	int64		nzero;			/* zero rows dropped by that */
	gj_points	pts;			/* malloc'd; moved out by the final function */
	MemoryContextCallback cb;
} PackState;

/* The reader waiting for its rows, while its query runs. */
static GjPackTarget *pack_target = NULL;
static int64 pack_token = 0;

/* The waiting reader, when token is its own. */
static inline GjPackTarget *
TargetFor(int64 token)
{
	GjPackTarget *t = pack_target;

	return t != NULL && token == pack_token && !t->done ? t : NULL;
}

/*
 * Descriptors held outside PostgreSQL's own files are reported to fd.c
 * (AcquireExternalFD), so that its pool of open files leaves room for
 * them; all n, or none.
 */
static bool
AcquireFds(int n)
{
	int			got = 0;

	while (got < n && AcquireExternalFD())
		got++;
	if (got == n)
		return true;
	while (got-- > 0)
		ReleaseExternalFD();
	return false;
}

static void
ReleaseFds(int n)
{
	while (n-- > 0)
		ReleaseExternalFD();
}

/* Append n rows (ids, then coordinates) of dims to pts, growing it once. */
static void
AppendRows(gj_points *pts, int64 expect, const int64 *ids, const double *x,
		   int64 n, int dims)
{
	gj_status	s;

	if (n == 0)
		return;
	if (pts->dims == 0)
		pts->dims = dims;
	if (dims != pts->dims)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("coordinate arrays have different lengths (%d and %d)",
						pts->dims, dims)));
	if (pts->n + n > pts->cap)
	{
		s = gj_points_reserve(pts, Max(expect, pts->n + n + (pts->n + n) / 2));
		if (s != GJ_OK)
			s = gj_points_reserve(pts, pts->n + n);
		if (s != GJ_OK)
			GjCheckStatus(s, "packing input rows");
	}
	memcpy(pts->ids + pts->n, ids, sizeof(int64) * n);
	memcpy(pts->x + pts->n * dims, x, sizeof(double) * n * dims);
	pts->n += n;
}

static void
PackStateFree(void *arg)
{
	PackState  *st = (PackState *) arg;

	gj_points_free(&st->pts);
	gj_shared_rows_release(&st->file);
}

/* The token carries the segment's handle above 31 bits of a counter. */
static inline dsm_handle
TokenHandle(int64 token)
{
	return (dsm_handle) ((uint64) token >> 31);
}

/* Record how much of the current block was written. */
static inline void
FlushBlock(PackState *st)
{
	if (st->shared != NULL && st->blk >= 0)
		SharedFill(st->shared)[st->blk] = (uint32) (st->pos - st->blk * st->shared->block_rows);
	st->blk = -1;
	st->pos = st->end = 0;
}

/* Room for one more row in the segment; false when it is full. */
static inline bool
SharedRoom(PackState *st)
{
	PackShared *sh = st->shared;
	uint64		b;

	if (sh == NULL || st->x == NULL)
		return false;
	if (st->pos < st->end)
		return true;
	FlushBlock(st);
	b = pg_atomic_fetch_add_u64(&sh->next_block, 1);
	if (b >= (uint64) sh->nblocks)
	{
		st->shared = NULL;		/* full: the rest goes to the own buffer */
		return false;
	}
	st->blk = (int64) b;
	st->pos = (int64) b * sh->block_rows;
	st->end = Min(st->pos + sh->block_rows, sh->cap);
	/*
	 * The block's pages mapped in one call rather than a fault a page as
	 * they are written (1M x 128 on the H100 host: the query's median 855
	 * -> 834 ms).
	 */
	if (st->prefault)
	{
		gj_shared_rows_prefault(st->ids + st->pos, sizeof(int64) * (st->end - st->pos));
		gj_shared_rows_prefault(st->x + st->pos * sh->dims,
								sizeof(double) * (st->end - st->pos) * sh->dims);
	}
	return true;
}

static void
RefuseToken(int64 token)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("gpujoin_pack: token %lld was not issued to this session", (long long) token),
			 errdetail("Only gpujoin's own read and its parallel workers may pass a token."),
			 errhint("Call gpujoin_pack with token 0 to count rows.")));
}

/*
 * The segment the token names: the reader's own, or attached by a parallel
 * worker of that reader.  A token is a segment handle and a counter, which
 * another session could guess; so any other process that passes one (a
 * direct call in another session, or that session's workers) gets an
 * ERROR instead of a way to write rows into someone else's join.
 */
static void
UseShared(PackState *st)
{
	GjPackTarget *t;
	dsm_handle	h = TokenHandle(st->token);
	PackShared *sh;

	st->blk = -1;
	if (st->token == 0)
		return;					/* a direct call: counting only */
	t = TargetFor(st->token);
	if (t != NULL)
	{
		st->shared = t->shared;	/* the reader runs this part itself */
		st->ids = t->ids;
		st->x = t->x;
		/* (its mapping of the files is populated as they are allocated) */
		st->prefault = !t->in_file;
		return;
	}
	if (!IsParallelWorker())
		RefuseToken(st->token);
	if (h == DSM_HANDLE_INVALID)
		return;					/* no segment: the rows travel as bytea */
	st->seg = dsm_attach(h);
	if (st->seg == NULL)
		RefuseToken(st->token);	/* the reader's segment lives while its workers run */
	sh = (PackShared *) dsm_segment_address(st->seg);
	if (sh->magic != PACK_MAGIC || sh->token != st->token ||
		sh->leader_backend != GjLeaderSlot() || MyProc->lockGroupLeader == NULL ||
		MyProc->lockGroupLeader->pid != sh->leader_pid)
	{
		dsm_detach(st->seg);
		st->seg = NULL;
		RefuseToken(st->token);
	}
	st->shared = sh;
	st->prefault = true;
	if (sh->rows_nfiles == 0)
	{
		RowsAt(sh, SegmentRows(sh), &st->ids, &st->x);
		return;
	}
	/* the reader's files, mapped (their descriptors here closed again) */
	if (AcquireFds(sh->rows_nfiles))
	{
		if (gj_shared_rows_open(&st->file, sh->leader_pid, sh->rows_fds, sh->rows_nfiles,
								(size_t) sh->rows_part) == 0 &&
			((uint64 *) st->file.base)[0] == PACK_MAGIC &&
			((int64 *) st->file.base)[1] == st->token)
			RowsAt(sh, (char *) st->file.base + PACK_FILE_HEAD, &st->ids, &st->x);
		ReleaseFds(sh->rows_nfiles);
	}
	if (st->x == NULL)
	{
		/* not the reader's files (or none): this worker's rows travel as bytea */
		gj_shared_rows_close(&st->file);
		elog(DEBUG1, "gpujoin_pack: a worker could not open the reader's rows");
	}
}

static PackState *
PackStateNew(MemoryContext aggcxt, int64 token)
{
	PackState  *st = MemoryContextAllocZero(aggcxt, sizeof(PackState));

	st->token = token;
	gj_points_init(&st->pts, 0);
	gj_shared_rows_init(&st->file);
	st->cb.func = PackStateFree;
	st->cb.arg = st;
	MemoryContextRegisterResetCallback(aggcxt, &st->cb);
	return st;
}

static MemoryContext
AggContext(FunctionCallInfo fcinfo, const char *fn)
{
	MemoryContext aggcxt;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "%s called in a non-aggregate context", fn);
	return aggcxt;
}

/* The row shape from the aggregate's argument types (2: id, 3..: coords). */
static void
ShapeFromArgs(FunctionCallInfo fcinfo, RowShape *shape)
{
	int			nargs = PG_NARGS();
	Oid			t;

	memset(shape, 0, sizeof(*shape));
	if (nargs < 4)
		elog(ERROR, "gpujoin_pack needs an id and at least one coordinate");
	shape->id_type = getBaseType(get_fn_expr_argtype(fcinfo->flinfo, 2));
	/* a tid: the plain-SQL join's read, each row's ctid its id */
	if (shape->id_type != INT2OID && shape->id_type != INT4OID && shape->id_type != INT8OID &&
		shape->id_type != TIDOID)
		elog(ERROR, "gpujoin_pack: the id must be an integer");
	t = getBaseType(get_fn_expr_argtype(fcinfo->flinfo, 3));
	if (nargs == 4)
	{
		Oid			nsp;
		GjKeyKind	kind;

		if (GjPostgisType(t, &nsp, &kind))
		{
			/* a PostGIS point column: the plain-SQL join's read */
			shape->is_array = true;
			shape->postgis = (int) kind + 1;
			shape->srid = -1;
			return;
		}
	}
	if (nargs == 4 && (IsCoordArrayType(t) || GjPgvectorKind(t) != 0))
	{
		shape->is_array = true;
		shape->vec = GjPgvectorKind(t);
		shape->elem_type = t == FLOAT4ARRAYOID ? FLOAT4OID : FLOAT8OID;
		return;
	}
	shape->ncoord = nargs - 3;
	if (shape->ncoord > FUNC_MAX_ARGS)
		elog(ERROR, "gpujoin_pack: too many coordinates");
	shape->coord_types = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt,
											sizeof(Oid) * shape->ncoord);
	for (int i = 0; i < shape->ncoord; i++)
	{
		t = getBaseType(get_fn_expr_argtype(fcinfo->flinfo, i + 3));
		if (t != INT2OID && t != INT4OID && t != INT8OID && t != FLOAT4OID &&
			t != FLOAT8OID && t != NUMERICOID)
			elog(ERROR, "gpujoin_pack: coordinates must be numbers");
		shape->coord_types[i] = t;
	}
}

PG_FUNCTION_INFO_V1(gpujoin_pack_trans);
PG_FUNCTION_INFO_V1(gpujoin_pack_combine);
PG_FUNCTION_INFO_V1(gpujoin_pack_serial);
PG_FUNCTION_INFO_V1(gpujoin_pack_deserial);
PG_FUNCTION_INFO_V1(gpujoin_pack_final);

/* gpujoin_pack_trans(state, token, id, coords...) */
Datum
gpujoin_pack_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = AggContext(fcinfo, "gpujoin_pack_trans");
	PackState  *st = PG_ARGISNULL(0) ? NULL : (PackState *) PG_GETARG_POINTER(0);
	Datum		values[FUNC_MAX_ARGS];
	bool		nulls[FUNC_MAX_ARGS];
	int			nargs = PG_NARGS();
	int64		id;
	gj_status	s;

	if (st == NULL)
	{
		st = PackStateNew(aggcxt, PG_ARGISNULL(1) ? 0 : PG_GETARG_INT64(1));
		ShapeFromArgs(fcinfo, &st->rd.shape);
		GjRowReaderInit(&st->rd, "gpujoin_pack", NULL, 0, aggcxt);
		UseShared(st);
		/* errors name the function the reader runs, as the serial read's do */
		if (st->shared != NULL)
			st->rd.fname = MemoryContextStrdup(aggcxt, st->shared->fname);
		/* an array or vector column: the reader's probe fixed the dimensions */
		if (st->rd.shape.is_array && st->shared != NULL)
			GjRowReaderSetDims(&st->rd, st->shared->dims);
		st->pts.dims = st->rd.dims;
		/* the reader counts on every participant normalising, or none */
		st->normalize = st->shared != NULL && st->shared->normalize;
		if (st->shared != NULL && st->shared->dims != st->rd.dims)
			st->shared = NULL;
	}
	if (nargs - 2 > FUNC_MAX_ARGS)
		elog(ERROR, "gpujoin_pack: too many arguments");
	for (int i = 2; i < nargs; i++)
	{
		values[i - 2] = fcinfo->args[i].value;
		nulls[i - 2] = fcinfo->args[i].isnull;
	}
	if (GjConvertRow(&st->rd, values, nulls, &id))
	{
		/* cosine: the shared routine, here on the worker's cores */
		if (st->normalize && !gj_normalize_row(st->rd.row, st->rd.dims))
		{
			st->nzero++;
			PG_RETURN_POINTER(st);
		}
		if (SharedRoom(st))
		{
			int			dims = st->shared->dims;

			st->ids[st->pos] = id;
			memcpy(st->x + st->pos * dims, st->rd.row, sizeof(double) * dims);
			st->pos++;
			PG_RETURN_POINTER(st);
		}
		if (st->pts.dims == 0)
			st->pts.dims = st->rd.dims;		/* the first array */
		s = gj_points_push(&st->pts, id, st->rd.row);
		if (s != GJ_OK)
			GjCheckStatus(s, "packing input rows");
	}
	PG_RETURN_POINTER(st);
}

/* Append b's rows to a. */
Datum
gpujoin_pack_combine(PG_FUNCTION_ARGS)
{
	AggContext(fcinfo, "gpujoin_pack_combine");
	PackState  *a = PG_ARGISNULL(0) ? NULL : (PackState *) PG_GETARG_POINTER(0);
	PackState  *b = PG_ARGISNULL(1) ? NULL : (PackState *) PG_GETARG_POINTER(1);

	if (b == NULL)
	{
		if (a == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(a);
	}
	if (a == NULL)
		PG_RETURN_POINTER(b);	/* b lives in the aggregate's context too */
	AppendRows(&a->pts, 0, b->pts.ids, b->pts.x, b->pts.n, b->pts.dims);
	a->rd.nrows += b->rd.nrows;
	a->rd.nnull += b->rd.nnull;
	a->rd.nnonfinite += b->rd.nnonfinite;
	a->nzero += b->nzero;
	a->partials += b->partials;
	gj_points_free(&b->pts);
	PG_RETURN_POINTER(a);
}

/* The serialized state: this header, then ids, then coordinates. */
typedef struct PackHeader
{
	int64		token;
	int64		n;
	int64		nrows;
	int64		nnull;
	int64		nnonfinite;
	int64		nzero;
	int32		dims;
	int32		partials;
} PackHeader;

Datum
gpujoin_pack_serial(PG_FUNCTION_ARGS)
{
	PackState  *st = (PackState *) PG_GETARG_POINTER(0);
	PackHeader	h;
	Size		bytes = sizeof(PackHeader) +
		(Size) st->pts.n * (sizeof(int64) + sizeof(double) * st->pts.dims);
	bytea	   *out;
	char	   *p;

	AggContext(fcinfo, "gpujoin_pack_serial");
	FlushBlock(st);
	if (st->seg != NULL)
	{
		dsm_detach(st->seg);	/* the rows are in the segment for good */
		st->seg = NULL;
	}
	gj_shared_rows_release(&st->file);	/* ... or in the reader's files */
	st->shared = NULL;
	st->ids = NULL;
	st->x = NULL;
	if (bytes + VARHDRSZ > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a parallel worker read more rows than it can pass on (%lld)",
						(long long) st->pts.n),
				 errhint("Lower max_parallel_workers_per_gather to 0 for this query.")));
	h.token = st->token;
	h.n = st->pts.n;
	h.nrows = st->rd.nrows;
	h.nnull = st->rd.nnull;
	h.nnonfinite = st->rd.nnonfinite;
	h.nzero = st->nzero;
	h.dims = st->pts.dims;
	h.partials = st->partials;
	out = (bytea *) palloc(bytes + VARHDRSZ);
	SET_VARSIZE(out, bytes + VARHDRSZ);
	p = VARDATA(out);
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	memcpy(p, st->pts.ids, sizeof(int64) * st->pts.n);
	p += sizeof(int64) * st->pts.n;
	memcpy(p, st->pts.x, sizeof(double) * st->pts.n * st->pts.dims);
	gj_points_free(&st->pts);	/* passed on: free the worker's copy now */
	PG_RETURN_BYTEA_P(out);
}

Datum
gpujoin_pack_deserial(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = AggContext(fcinfo, "gpujoin_pack_deserial");
	bytea	   *in = PG_GETARG_BYTEA_PP(0);
	const char *p = VARDATA_ANY(in);
	PackHeader	h;
	PackState  *st;
	GjPackTarget *t;

	if (VARSIZE_ANY_EXHDR(in) < sizeof(PackHeader))
		elog(ERROR, "gpujoin_pack: truncated state");
	memcpy(&h, p, sizeof(h));
	p += sizeof(h);
	if (h.n < 0 || h.dims < 0 || h.dims > GJ_MAX_DIMS ||
		VARSIZE_ANY_EXHDR(in) != sizeof(PackHeader) +
		(Size) h.n * (sizeof(int64) + sizeof(double) * h.dims))
		elog(ERROR, "gpujoin_pack: malformed state");
	st = PackStateNew(aggcxt, h.token);
	t = TargetFor(h.token);
	/* the reader's own query: the rows go where they end up, in one copy */
	AppendRows(t != NULL ? t->pts : &st->pts, t != NULL ? t->expect : 0,
			   (const int64 *) p, (const double *) (p + sizeof(int64) * h.n),
			   h.n, h.dims);
	st->rd.nrows = h.nrows;
	st->rd.nnull = h.nnull;
	st->rd.nnonfinite = h.nnonfinite;
	st->nzero = h.nzero;
	st->partials = h.partials + 1;
	PG_RETURN_POINTER(st);
}

/* The borrowed points are done with: drop the segment (the last mapping). */
static void
DetachShared(void *arg)
{
	dsm_detach((dsm_segment *) arg);
}

/* ... or the rows' files, unmapped on a helper thread. */
static void
ReleaseFile(void *arg)
{
	gj_shared_rows_release((gj_shared_rows *) arg);
	free(arg);
}

/*
 * Make the segment's rows (or the files') the reader's point buffer: the
 * written rows of the blocks moved together in place (only blocks after
 * the first partly filled one move: every participant's last block, near
 * the end), the mapping kept past the query until the points are released.
 * Saves the copy of every row into a fresh buffer (~23 ms for 2M 2-D rows
 * here).
 */
static void
AdoptShared(GjPackTarget *t)
{
	PackShared *sh = t->shared;
	int64		used = Min((int64) pg_atomic_read_u64(&sh->next_block), sh->nblocks);
	int64		w = 0;
	int			dims = sh->dims;
	gj_points  *p = t->pts;
	gj_shared_rows *file = NULL;

	if (t->file.base != NULL && (file = malloc(sizeof(gj_shared_rows))) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	for (int64 b = 0; b < used; b++)
	{
		int64		r0 = b * sh->block_rows;
		int64		fill = SharedFill(sh)[b];

		if (fill > 0 && r0 != w)
		{
			memmove(t->ids + w, t->ids + r0, sizeof(int64) * fill);
			memmove(t->x + w * dims, t->x + r0 * dims, sizeof(double) * fill * dims);
		}
		w += fill;
	}
	gj_points_free(p);
	p->dims = dims;
	p->n = w;
	p->cap = w;
	p->ids = t->ids;
	p->x = t->x;
	if (file != NULL)
	{
		/*
		 * The files' mapping goes with the points; their descriptors (the
		 * workers are done opening them) and the segment can go now.
		 */
		gj_shared_rows_drop_fds(&t->file);
		ReleaseFds(t->fds_reserved);
		t->fds_reserved = 0;
		*file = t->file;
		gj_shared_rows_init(&t->file);
		p->release = ReleaseFile;
		p->release_arg = file;
	}
	else
	{
		dsm_pin_mapping(t->seg);
		p->release = DetachShared;
		p->release_arg = t->seg;
		t->seg = NULL;			/* the points own it now */
	}
	t->shared = NULL;
	t->ids = NULL;
	t->x = NULL;
}

/*
 * The rows go to the reader that issued the token, buffers and all; any
 * other call just counts them.
 */
Datum
gpujoin_pack_final(PG_FUNCTION_ARGS)
{
	PackState  *st = PG_ARGISNULL(0) ? NULL : (PackState *) PG_GETARG_POINTER(0);
	GjPackTarget *t;
	int64		n;

	if (st == NULL)
		PG_RETURN_INT64(0);
	FlushBlock(st);
	n = st->pts.n;
	t = TargetFor(st->token);
	if (t == NULL && st->token != 0)
		RefuseToken(st->token);	/* whoever ran the rows, this is not the reader */
	if (t != NULL && t->shared != NULL && t->pts->n == 0 && t->pts->cap == 0 &&
		st->pts.n == 0)
	{
		/* every row is in the segment: the reader's buffer becomes it */
		AdoptShared(t);
	}
	else if (t != NULL && t->shared != NULL)
	{
		/* the blocks' written rows, compacted into the reader's buffer */
		PackShared *sh = t->shared;
		int64		used = Min((int64) pg_atomic_read_u64(&sh->next_block), sh->nblocks);

		for (int64 b = 0; b < used; b++)
		{
			int64		r0 = b * sh->block_rows;

			AppendRows(t->pts, t->expect, t->ids + r0, t->x + r0 * sh->dims,
					   SharedFill(sh)[b], sh->dims);
		}
	}
	if (t != NULL)
	{
		if (t->pts->n == 0 && t->pts->cap == 0)
		{
			/* a serial run: the buffers change owner */
			gj_points_free(t->pts);
			*t->pts = st->pts;
			gj_points_init(&st->pts, 0);
		}
		else
			AppendRows(t->pts, t->expect, st->pts.ids, st->pts.x, st->pts.n,
					   st->pts.dims);
		n = t->pts->n;
		t->nrows = st->rd.nrows;
		t->nnull = st->rd.nnull;
		t->nnonfinite = st->rd.nnonfinite;
		t->nzero = st->nzero;
		t->partials = st->partials;
		t->done = true;
	}
	PG_RETURN_INT64(n);
}

/*
 * A shared segment for rows of dims coordinates, when /dev/shm (or
 * whatever backs dynamic shared memory) has room to spare; NULL otherwise.
 * with_rows false: the header and the blocks' fill counts only.
 */
static dsm_segment *
CreateShared(int64 rows, int dims, bool with_rows)
{
	Size		size;

	if (rows <= 0 || dims <= 0)
		return NULL;
	size = SharedSize(rows, dims, with_rows);
	if (dynamic_shared_memory_type == DSM_IMPL_POSIX)
	{
		struct statvfs fs;

		if (statvfs("/dev/shm", &fs) != 0 ||
			(double) fs.f_bavail * fs.f_frsize < 1.5 * (double) size + 256.0 * 1024 * 1024)
			return NULL;
	}
	else if (dynamic_shared_memory_type != DSM_IMPL_MMAP &&
			 dynamic_shared_memory_type != DSM_IMPL_SYSV)
		return NULL;
	return dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
}

/*
 * A segment for the rows, which go into shared files of the reader's where
 * it can make them (core/shared_rows.c says why: PostgreSQL's own segment
 * of 1 GB costs the query 0.25-0.4 s in page handling alone, on one core), and
 * into the segment itself otherwise.  Sets t's file and its seg (NULL:
 * none).
 */
static void
CreateRows(GjPackTarget *t, int64 cap, int dims)
{
	gj_shared_rows_init(&t->file);
	t->fds_reserved = 0;
	t->seg = NULL;
	if (cap <= 0 || dims <= 0)
		return;
	/*
	 * A segment that fits in min_dynamic_shared_memory is carved from the
	 * main region, whose pages stay allocated and mapped from one query to
	 * the next: nothing to allocate or free at all, so that goes first.
	 */
	if (parallel_read_file_guc &&
		(double) SharedSize(cap, dims, true) > (double) min_dynamic_shared_memory * 1024 * 1024 &&
		(double) PACK_FILE_HEAD + RowsBytes(cap, dims) <= (double) GjHostMemoryLimit())
	{
		while (t->fds_reserved < GJ_SHARED_ROWS_MAX_FILES && AcquireExternalFD())
			t->fds_reserved++;
		if (t->fds_reserved > 0 &&
			gj_shared_rows_create(&t->file, PACK_FILE_HEAD + RowsBytes(cap, dims),
								  t->fds_reserved) == 0)
		{
			ReleaseFds(t->fds_reserved - t->file.nfiles);
			t->fds_reserved = t->file.nfiles;
			t->seg = CreateShared(cap, dims, false);
			if (t->seg != NULL)
				return;
			gj_shared_rows_close(&t->file);
		}
		ReleaseFds(t->fds_reserved);
		t->fds_reserved = 0;
	}
	t->seg = CreateShared(cap, dims, true);
}

/* The rows' files, unless the points took them: descriptors now, pages on a helper. */
static void
DropFiles(GjPackTarget *t)
{
	gj_shared_rows_drop_fds(&t->file);
	ReleaseFds(t->fds_reserved);
	t->fds_reserved = 0;
	gj_shared_rows_release(&t->file);
}

/* t's context is going away (an error): stop waiting, touch nothing else. */
static void
PackAbandon(void *arg)
{
	GjPackTarget *t = (GjPackTarget *) arg;

	if (pack_target == t)
		pack_target = NULL;
	DropFiles(t);				/* not the points' (yet): ours to drop */
}

/*
 * Wait for rows of dims coordinates into t->pts (t allocated in cxt);
 * returns the token the query must pass.  With t->expect rows expected,
 * they come through a shared segment when one can be had.
 */
int64
GjPackBegin(GjPackTarget *t, MemoryContext cxt, int dims, bool normalize, const char *fname)
{
	static int64 counter = 0;
	dsm_handle	h = DSM_HANDLE_INVALID;
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
	int64		cap = PackCapacity(t->expect, dims);

	t->done = false;
	CreateRows(t, cap, dims);
	t->shared = NULL;
	t->ids = NULL;
	t->x = NULL;
	counter = (counter + 1) & INT64CONST(0x7fffffff);
	if (t->seg != NULL)
	{
		PackShared *sh = (PackShared *) dsm_segment_address(t->seg);

		h = dsm_segment_handle(t->seg);
		memset(sh, 0, sizeof(PackShared));
		sh->magic = PACK_MAGIC;
		sh->normalize = normalize;
		strlcpy(sh->fname, fname, sizeof(sh->fname));
		sh->leader_pid = MyProcPid;
		sh->leader_backend = GjMySlot();
		sh->dims = dims;
		sh->cap = cap;
		sh->block_rows = BlockRows(dims);
		sh->nblocks = (sh->cap + sh->block_rows - 1) / sh->block_rows;
		sh->token = ((int64) h << 31) | counter;
		sh->rows_nfiles = t->file.base != NULL ? t->file.nfiles : 0;
		memcpy(sh->rows_fds, t->file.fds, sizeof(sh->rows_fds));
		sh->rows_part = (int64) t->file.part;
		pg_atomic_init_u64(&sh->next_block, 0);
		memset(SharedFill(sh), 0, sizeof(uint32) * sh->nblocks);
		if (t->file.base != NULL)
		{
			((uint64 *) t->file.base)[0] = PACK_MAGIC;
			((int64 *) t->file.base)[1] = sh->token;
			RowsAt(sh, (char *) t->file.base + PACK_FILE_HEAD, &t->ids, &t->x);
		}
		else
			RowsAt(sh, SegmentRows(sh), &t->ids, &t->x);
		t->shared = sh;
	}
	t->in_file = t->file.base != NULL;
	/* every participant sees the segment (or errors), so all or none normalise */
	t->normalized = normalize && t->seg != NULL;
	t->nzero = 0;
	cb->func = PackAbandon;
	cb->arg = t;
	MemoryContextRegisterResetCallback(cxt, cb);
	pack_target = t;
	pack_token = ((int64) h << 31) | counter;
	return pack_token;
}

/* After the query: stop waiting, and drop the segment (and unadopted rows). */
void
GjPackEnd(GjPackTarget *t)
{
	if (pack_target == t)
		pack_target = NULL;
	if (t->seg != NULL)
	{
		dsm_detach(t->seg);		/* the last mapping: the segment goes */
		t->seg = NULL;
		t->shared = NULL;
	}
	DropFiles(t);
	t->ids = NULL;
	t->x = NULL;
}

/*
 * The elements of the first non-NULL array in column att of relid, read as
 * the caller (read-only, through SPI); 0 when there is none.  The parallel
 * read sizes its shared segment by it; a later array of another length
 * fails as in the serial read.
 */
static int
ProbeArrayDims(const GjInputSpec *spec, AttrNumber att)
{
	const char *col = quote_identifier(get_attname(spec->relid, att, false));
	char	   *sql = psprintf("SELECT array_length(%s, 1) FROM %s WHERE %s IS NOT NULL LIMIT 1",
							   col,
							   quote_qualified_identifier(get_namespace_name(get_rel_namespace(spec->relid)),
														  get_rel_name(spec->relid)),
							   col);
	bool		isnull;
	Datum		d;
	int			dims = 0;
	GjReadOnly	guard;

	/* under the read's own guard: nothing the probe calls may write */
	GjEnterReadOnly(&guard);
	if (SPI_execute(sql, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull)
			dims = DatumGetInt32(d);
	}
	GjLeaveReadOnly(&guard);
	if (SPI_tuptable != NULL)
		SPI_freetuptable(SPI_tuptable);
	pfree(sql);
	return dims >= 1 && dims <= GJ_MAX_DIMS ? dims : 0;
}

/*
 * Whether the relation form reads through parallel workers (the packing
 * aggregate above), and in how many dimensions (*dims): a
 * plain table of scalar coordinate columns, or of one array, vector or
 * halfvec column (detoasting a 768-dim vector costs more than the executor
 * per row, and workers share it), with at least
 * gpujoin.parallel_read_min_rows rows by its statistics, small enough that
 * each worker's buffer passes as one bytea.  The dimensions of a vector
 * column come from its declared type, an array's from its first row.
 * Anything unusual (never analyzed, an undeclared vector, a column that
 * does not exist: GjBuildRelationQuery reports it) reads serially.
 */
bool
GjParallelReadWanted(const GjInputSpec *spec, int *dims)
{
	HeapTuple	tup;
	float4		reltuples;
	char		relkind;
	int			ncols;

	*dims = 0;
	if (spec->is_query || spec->sample_pct > 0 || spec->only_ids != NULL || spec->keys != NULL ||
		parallel_read_min_rows_guc < 0 || !OidIsValid(spec->nsp) ||
		ARR_NDIM(spec->cols) != 1 || ARR_HASNULL(spec->cols))
		return false;
	ncols = ArrayGetNItems(ARR_NDIM(spec->cols), ARR_DIMS(spec->cols));
	/* gpujoin_pack takes the token, the id and the coordinates as arguments */
	if (ncols < 1 || ncols > FUNC_MAX_ARGS - 2)
		return false;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(spec->relid));
	if (!HeapTupleIsValid(tup))
		return false;
	reltuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	relkind = ((Form_pg_class) GETSTRUCT(tup))->relkind;
	ReleaseSysCache(tup);
	if ((relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW) ||
		reltuples < 0 || reltuples < parallel_read_min_rows_guc)
		return false;
	*dims = ncols;
	if (ncols == 1)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;
		AttrNumber	att;
		Oid			t,
					coll,
					pnsp;
		int32		typmod;
		GjKeyKind	pkind;

		deconstruct_array(spec->cols, TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &nulls, &n);
		att = get_attnum(spec->relid, TextDatumGetCString(elems[0]));
		if (att == InvalidAttrNumber)
			return false;
		get_atttypetypmodcoll(spec->relid, att, &t, &typmod, &coll);
		t = getBaseType(t);
		if (GjPgvectorKind(t) != 0)
			*dims = typmod >= 1 && typmod <= GJ_MAX_DIMS ? typmod : 0;
		else if (spec->quiet && GjPostgisType(t, &pnsp, &pkind))
			*dims = 2;			/* the join's read of PostGIS points */
		else if (IsCoordArrayType(t))
			*dims = ProbeArrayDims(spec, att);
		else if (!IsCoordType(t))
			*dims = 0;
	}
	if (*dims <= 0)
		return false;
	/* before the shared segment is made for them */
	GjCheckHostMemory(spec->fname, reltuples, *dims, false);
	return true;
}
