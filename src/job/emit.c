/*
 * emit.c
 *		A job's rows, one by one, as the executor asks for them: from the
 *		running engine's chunks, or from the per-row answers.
 *
 * A chunk holds finished rows (ids mapped, distances computed), so a row
 * costs copying three or four values into the executor's slot; a symmetric
 * self-join's second orientation is the same pair with its ids swapped,
 * and a neighbour list goes out as an array whose header is written into
 * the gap the engine left before it (no copy).  A keyed call's ids go out
 * as the keys they rank (read/row_keys.c), its lists as arrays of keys.
 * Between chunks the backend checks for interrupts, reports progress, starts the next slab step early
 * (run_slabs.c), and handles an engine that ended: the next slab step, or
 * a GPU failure part-way, which reruns the join on the CPU (job.c).
 * Geography's pairs and lists are decided in windows as they stream, so
 * that the pairs within a hair of d go to PostGIS in few queries.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "job/job_internal.h"
#include "progress.h"

/* Progress NOTICEs (gpujoin.progress), at most one a second. */
static void
ProgressTick(GjJob *job, int64 rows)
{
	double		now;

	job->out.progress_pairs += rows;
	GjProgressResult(job->out.progress_pairs * (job->out.twice ? 2 : 1));
	if (!GjProgressSetting())
		return;
	now = gj_now_ms();
	if (now - job->out.t_progress >= 1000.0)
	{
		job->out.t_progress = now;
		ereport(NOTICE,
				(errmsg("%s: %lld rows so far after %.1f s (%s engine)",
						job->spec.fname, (long long) job->out.progress_pairs,
						(now - job->t_engine) / 1000.0, job->stats.engine)));
	}
}

/*
 * When the running engine made its last row (gj_now_ms), for the stats; a
 * GPU engine's batches and slices, which it counts itself.  A slab step's
 * batches add to the steps' before it.
 */
static double
EngineDoneMs(GjJob *job)
{
	gj_engine  *e = job->res->engine;
	gj_engine_report r;

	if (e == NULL)
		return 0.0;
	if (e->on_gpu)
	{
		gj_engine_report_of(e, &r);
		job->stats.batches = job->slab.plan.nsteps > 0 ? job->stats.batches + r.batches : r.batches;
		job->stats.gpus = Max(r.members, 1);
		if (r.slices > 0)
		{
			job->stats.slices = r.slices;
			job->stats.slice_rows = r.slice_rows;
			job->stats.slice_pairs = r.slice_pairs;
		}
	}
	return gj_engine_done_ms(e);
}

/*
 * The GPU engine failed part-way with st: rerun on the CPU when nothing
 * went out yet or the caller can discard rows, else an ERROR.
 */
static void
GpuFailedPartWay(GjJob *job, gj_status st, bool *restarted)
{
	GjResources *res = job->res;
	char		err[256];

	snprintf(err, sizeof(err), "%s", gj_engine_error_text(res->engine));
	GjResourcesStopEngine(res);
	GjRestartAfterGpu(job, st, err, restarted);
}

/* The next chunk into job->out.chunk; false when the engine is done. */
static bool
NextChunk(GjJob *job, bool *restarted)
{
	for (;;)
	{
		gj_chunk   *c = NULL;
		gj_status	st;
		double		t0;

		CHECK_FOR_INTERRUPTS();
		t0 = gj_now_ms();
		st = job->res->engine != NULL ?
			gj_engine_next(job->res->engine, GJ_WAIT_MS, &c) : GJ_DONE;
		job->stats.wait_ms += gj_now_ms() - t0;
		if (st == GJ_AGAIN)
			continue;
		if (st == GJ_OK)
		{
			job->out.chunk = c;
			job->out.pos = 0;
			job->out.second = false;
			job->geow.chunk = NULL;
			if (!job->res->engine->on_gpu)
				job->stats.batches++;	/* a GPU engine counts its own */
			ProgressTick(job, c->n);
			GjStartNextSlabEarly(job);
			return true;
		}
		if (st == GJ_DONE && job->slab.plan.nsteps > 0 &&
			job->slab.step + 1 < job->slab.plan.nsteps)
		{
			/* this slab step is done: the next, started already or now */
			char		err[256];
			gj_engine  *next = job->res->next_engine;

			EngineDoneMs(job);
			job->res->next_engine = NULL;
			GjResourcesStopEngine(job->res);
			job->slab.step++;
			if (next != NULL)
			{
				job->res->engine = next;
				job->stats.slab_early++;
				continue;
			}
			st = GjStartSlabStep(job, job->slab.step, &job->res->engine, err, sizeof(err));
			if (st != GJ_OK)
			{
				/* a slab step could not start: as a failure part-way */
				job->res->engine = NULL;
				GjRestartAfterGpu(job, st, err, restarted);
			}
			continue;
		}
		if (st == GJ_DONE)
		{
			double		done = EngineDoneMs(job);

			job->stats.join_ms += (done > job->t_engine ? done : gj_now_ms()) - job->t_engine;
			return false;
		}
		if (job->res->engine->on_gpu && st != GJ_ERR_CANCELED)
		{
			GpuFailedPartWay(job, st, restarted);
			continue;
		}
		GjCheckCore(st, job->spec.fname);
		return false;			/* not reached */
	}
}

/*
 * The distance a row shows: the engines' Euclidean distance d, or for the
 * cosine metric 1 - cosine similarity, d^2 / 2 of the normalised rows.
 */
static inline double
OutDist(const GjJob *job, double d)
{
	if (job->geo.on)
		return gj_geodetic_chord_metres(&job->geo.g, d);	/* kNN: metres on the sphere */
	return job->spec.metric == GJ_METRIC_COSINE ? d * d * 0.5 : d;
}

/*
 * Geography: a row's neighbour list (ids nb, chords nd, n entries, by
 * chord) as the rows within d, in metres, by (metres, id), in place; the
 * new length.  in and m are GjGeographyDecide's answers for the entries
 * (the chords in the band between the bounds PostGIS's); on the spheroid,
 * metres need not follow the chords' order exactly, so the list is sorted
 * again (by insertion: it is nearly so).
 */
static int64
GeoList(const bool *in, const double *m, int64 *nb, double *nd, int64 n)
{
	int64		k = 0;

	for (int64 e = 0; e < n; e++)
	{
		if (in[e])
		{
			nb[k] = nb[e];
			nd[k] = m[e];
			k++;
		}
	}
	for (int64 e = 1; e < k; e++)
	{
		int64		b = nb[e];
		double		mm = nd[e];
		int64		j = e;

		for (; j > 0 && (nd[j - 1] > mm || (nd[j - 1] == mm && nb[j - 1] > b)); j--)
		{
			nb[j] = nb[j - 1];
			nd[j] = nd[j - 1];
		}
		nb[j] = b;
		nd[j] = mm;
	}
	return k;
}

/*
 * The keys of a keyed call's id columns (NULL: integer ids, returned as
 * they are): the first is the query (r) side's in a join of two sets, the
 * second and every neighbour the one set's or the reference (s) side's.
 */
static inline const GjKeys *
FirstKeys(const GjJob *job)
{
	return job->spec.has_query ? job->spec.query.keys : job->spec.input.keys;
}

static inline const GjKeys *
SecondKeys(const GjJob *job)
{
	return job->spec.input.keys;
}

static inline bool
Keyed(const GjKeys *keys)
{
	return keys != NULL && keys->kept;
}

/* How many rows ahead a keyed call's keys are fetched (lists: rows of lists). */
#define GJ_KEY_PREFETCH 16
#define GJ_LIST_PREFETCH 2

/* A keyed list's keys (of its first 32 neighbours), before its row goes out. */
static inline void
PrefetchListKeys(const GjKeys *keys, const int64 *nb, int64 e0, int64 e1)
{
	for (int64 e = e0; e < e1 && e < e0 + 32; e++)
		__builtin_prefetch(&keys->values[nb[e]]);
}

/* A neighbour list of a keyed call: the keys of ids, as an array of their type. */
static Datum
KeyArray(const GjKeys *keys, const int64 *ids, int64 n)
{
	Datum	   *d;

	if (n > MaxAllocSize / sizeof(Datum) - 64)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a row has %lld neighbours, more than an array can hold",
						(long long) n)));
	if (n == 0)
		return PointerGetDatum(construct_empty_array(keys->type));
	d = palloc(sizeof(Datum) * n);
	for (int64 e = 0; e < n; e++)
		d[e] = GjKeyOf(keys, ids[e]);
	return PointerGetDatum(construct_array(d, (int) n, keys->type, keys->typlen,
										   keys->typbyval, keys->typalign));
}

/* A one-dimensional array of n 8-byte values, copied as one block. */
static Datum
MakeArray8(const void *data, int64 n, Oid elemtype)
{
	Size		nbytes;
	ArrayType  *a;

	if (n == 0)
		return PointerGetDatum(construct_empty_array(elemtype));
	if (n > MaxAllocSize / 8 - 64)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a row has %lld neighbours, more than an array can hold",
						(long long) n)));
	nbytes = ARR_OVERHEAD_NONULLS(1) + (Size) n * 8;
	a = (ArrayType *) palloc(nbytes);
	SET_VARSIZE(a, nbytes);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = elemtype;
	ARR_DIMS(a)[0] = (int) n;
	ARR_LBOUND(a)[0] = 1;
	memcpy(ARR_DATA_PTR(a), data, (Size) n * 8);
	return PointerGetDatum(a);
}

/*
 * The n 8-byte values after gap (the engine's GJ_LIST_GAP entries before a
 * list) as a one-dimensional array, its header written into the gap: no
 * copy.  Valid while the chunk is held, which outlasts the row (the
 * executor is done with a row when it asks for the next).
 */
static Datum
ArrayInGap(int64 *gap, int64 n, Oid elemtype)
{
	ArrayType  *a = (ArrayType *) gap;

	StaticAssertStmt(ARR_OVERHEAD_NONULLS(1) == GJ_LIST_GAP * sizeof(int64),
					 "an array header fills the engine's gap before a list");
	if (n > MaxAllocSize / 8 - 64)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a row has %lld neighbours, more than an array can hold",
						(long long) n)));
	if (n == 0)
	{
		/* as construct_empty_array makes it */
		SET_VARSIZE(a, sizeof(ArrayType));
		a->ndim = 0;
		a->dataoffset = 0;
		a->elemtype = elemtype;
		return PointerGetDatum(a);
	}
	SET_VARSIZE(a, ARR_OVERHEAD_NONULLS(1) + (Size) n * 8);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = elemtype;
	ARR_DIMS(a)[0] = (int) n;
	ARR_LBOUND(a)[0] = 1;
	return PointerGetDatum(a);
}

/*
 * Geography pairs as they stream: the next pairs of chunk c from pos
 * decided at once, so that their band pairs go to PostGIS in one query
 * (378K band pairs of 20,000 rows at 1,500 km on the spheroid: 132 s one
 * query a pair, 83 s one a window of 4096 pairs).  The window doubles from
 * GJ_GEO_WINDOW to GJ_GEO_WINDOW_MAX pairs, so that a LIMIT waits for a
 * small one only while a whole join asks few queries.
 */
#define GJ_GEO_WINDOW 4096
#define GJ_GEO_WINDOW_MAX 65536	/* (its metres: well under the second a cancel may take) */

static void
GeoWindowRoom(GjJob *job, int64 n)
{
	if (n <= job->geow.cap)
		return;
	if (job->geow.in != NULL)
	{
		pfree(job->geow.in);
		pfree(job->geow.m);
	}
	job->geow.in = MemoryContextAlloc(job->res->cxt, sizeof(bool) * n);
	job->geow.m = MemoryContextAlloc(job->res->cxt, sizeof(double) * n);
	job->geow.cap = n;
}

static void
GeoDecideWindow(GjJob *job, const gj_chunk *c)
{
	int64		n;

	CHECK_FOR_INTERRUPTS();
	job->geow.size = Min(Max(job->geow.size * 2, GJ_GEO_WINDOW), GJ_GEO_WINDOW_MAX);
	n = Min(job->geow.size, c->n - job->out.pos);
	job->geow.chunk = NULL;		/* (an error below leaves no half-made window) */
	GeoWindowRoom(job, n);
	GjGeographyDecide(&job->geo,
					  job->spec.has_query ? &job->res->geo_queries : &job->res->geo_points,
					  c->a + job->out.pos, &job->res->geo_points, c->b + job->out.pos,
					  c->dist + job->out.pos, n, job->geow.in, job->geow.m);
	job->geow.chunk = c;
	job->geow.w0 = job->out.pos;
	job->geow.w1 = job->out.pos + n;
}

/*
 * Geography lists: the lists of chunk c's rows from row i on, at least a
 * window's entries of them (growing as the pairs' windows do), decided at
 * once for the same reason; geow.w0 and geow.w1 are rows here, and the
 * answers are by entry from the first row's offset (the gaps before each
 * list are never within d).
 */
static void
GeoDecideListWindow(GjJob *job, const gj_chunk *c, int64 i)
{
	int64		i1 = i,
				base = c->off[i],
				n;
	int64	   *ida;
	double	   *cs;

	CHECK_FOR_INTERRUPTS();
	job->geow.size = Min(Max(job->geow.size * 2, GJ_GEO_WINDOW), GJ_GEO_WINDOW_MAX);
	while (i1 < c->n && (i1 == i || c->off[i1] - base < job->geow.size))
		i1++;
	n = c->off[i1] - base;
	job->geow.chunk = NULL;
	GeoWindowRoom(job, n);
	ida = palloc(sizeof(int64) * (n + 1));
	cs = palloc(sizeof(double) * (n + 1));
	for (int64 r = i; r < i1; r++)
		for (int64 e = c->off[r]; e < c->off[r + 1]; e++)
		{
			ida[e - base] = c->a[r];
			cs[e - base] = e < c->off[r] + GJ_LIST_GAP ? INFINITY : c->nd[e];
		}
	GjGeographyDecide(&job->geo, &job->res->geo_points, ida, &job->res->geo_points,
					  c->nb + base, cs, n, job->geow.in, job->geow.m);
	pfree(ida);
	pfree(cs);
	job->geow.chunk = c;
	job->geow.w0 = i;
	job->geow.w1 = i1;
}

/* The next row of a per-row shape; false when there are no more. */
static bool
NextShapedRow(GjJob *job, Datum *values, bool *nulls, bool *restarted)
{
	GjResources *res = job->res;

	if (job->running == RUN_ROWS)
	{
		int64		i = job->out.pos;	/* into rowval; the row is subset[i] */
		int64		row = job->rows.subset != NULL ? job->rows.subset[i] : i;
		const gj_points *rp = job->qs;	/* eps_join_counts: the r rows */

		if (i >= (job->rows.subset != NULL ? job->rows.nsubset : rp->n))
		{
			job->out.done = true;
			job->stats.emit_ms = gj_now_ms() - job->t_engine;
			return false;
		}
		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
		if (Keyed(FirstKeys(job)) && job->rows.subset == NULL && i + GJ_KEY_PREFETCH < rp->n)
			__builtin_prefetch(&FirstKeys(job)->values[rp->ids[i + GJ_KEY_PREFETCH]]);
		values[0] = GjKeyOf(FirstKeys(job), rp->ids[row]);
		nulls[0] = false;
		if (job->spec.shape == GJ_SHAPE_COUNTS)
		{
			/* a self count includes the row itself, a count of s rows not */
			values[1] = Int64GetDatum((int64) res->rowval[i] - (job->spec.has_query ? 0 : 1));
			nulls[1] = false;
		}
		else if (job->spec.shape == GJ_SHAPE_LISTS)
		{
			/* lists from pairs (tiles): row i's entries of the CSR arrays */
			int64		e0 = res->list_off[row],
						e1 = res->list_off[row + 1];
			MemoryContext old;

			if (Keyed(SecondKeys(job)) &&
				i + GJ_LIST_PREFETCH < (job->rows.subset != NULL ? job->rows.nsubset : rp->n))
			{
				int64		r = job->rows.subset != NULL ? job->rows.subset[i + GJ_LIST_PREFETCH] :
					i + GJ_LIST_PREFETCH;

				PrefetchListKeys(SecondKeys(job), res->list_nb, res->list_off[r], res->list_off[r + 1]);
			}
			MemoryContextReset(job->out.rowcxt);
			old = MemoryContextSwitchTo(job->out.rowcxt);
			if (job->geo.on)
			{
				/* this row's band pairs in one PostGIS query (row context memory) */
				int64		n = e1 - e0;
				int64	   *ida = palloc(sizeof(int64) * (n + 1));
				bool	   *in = palloc(sizeof(bool) * (n + 1));
				double	   *m = palloc(sizeof(double) * (n + 1));

				for (int64 e = 0; e < n; e++)
					ida[e] = rp->ids[row];
				GjGeographyDecide(&job->geo, &res->geo_points, ida, &res->geo_points,
								  res->list_nb + e0, res->list_nd + e0, n, in, m);
				e1 = e0 + GeoList(in, m, res->list_nb + e0, res->list_nd + e0, n);
			}
			else if (job->spec.metric == GJ_METRIC_COSINE)
				for (int64 e = e0; e < e1; e++)
					res->list_nd[e] = OutDist(job, res->list_nd[e]);
			values[1] = Keyed(SecondKeys(job)) ?
				KeyArray(SecondKeys(job), res->list_nb + e0, e1 - e0) :
				MakeArray8(res->list_nb + e0, e1 - e0, INT8OID);
			values[2] = MakeArray8(res->list_nd + e0, e1 - e0, FLOAT8OID);
			MemoryContextSwitchTo(old);
			nulls[1] = nulls[2] = false;
		}
		else
		{
			values[1] = Int32GetDatum(res->rowval[i]);
			nulls[1] = res->rowval[i] < 0;	/* noise */
			values[2] = BoolGetDatum(res->rowflag[i] != 0);
			nulls[2] = false;
		}
		job->out.pos++;
		job->stats.rows_out++;
		return true;
	}

	/* neighbour lists, chunk by chunk */
	for (;;)
	{
		gj_chunk   *c = job->out.chunk;
		int			i;

		if (c != NULL && job->out.pos < c->n)
		{
			int64		e0,
						e1;

			i = job->out.pos++;
			e0 = c->off[i] + GJ_LIST_GAP;
			e1 = c->off[i + 1];
			if (job->geo.on)
			{
				int64		w;

				if (job->geow.chunk != c || i < job->geow.w0 || i >= job->geow.w1)
					GeoDecideListWindow(job, c, i);
				w = e0 - c->off[job->geow.w0];
				e1 = e0 + GeoList(job->geow.in + w, job->geow.m + w, c->nb + e0, c->nd + e0,
								  e1 - e0);
			}
			values[0] = GjKeyOf(FirstKeys(job), c->a[i]);
			if (Keyed(SecondKeys(job)))
			{
				/* the keys' array, in memory of this row only (a self join: one set of keys) */
				MemoryContext old;

				if (i + GJ_LIST_PREFETCH < c->n)
				{
					int			r = i + GJ_LIST_PREFETCH;

					__builtin_prefetch(&FirstKeys(job)->values[c->a[r]]);
					PrefetchListKeys(SecondKeys(job), c->nb, c->off[r] + GJ_LIST_GAP, c->off[r + 1]);
				}
				MemoryContextReset(job->out.rowcxt);
				old = MemoryContextSwitchTo(job->out.rowcxt);
				values[1] = KeyArray(SecondKeys(job), c->nb + e0, e1 - e0);
				MemoryContextSwitchTo(old);
			}
			else
				values[1] = ArrayInGap(c->nb + c->off[i], e1 - e0, INT8OID);
			if (job->spec.metric == GJ_METRIC_COSINE)
			{
				/* the distances as the metric's, in place: the list is done with */
				for (int64 e = e0; e < e1; e++)
					c->nd[e] = OutDist(job, c->nd[e]);
			}
			values[2] = ArrayInGap((int64 *) (c->nd + c->off[i]), e1 - e0, FLOAT8OID);
			nulls[0] = nulls[1] = nulls[2] = false;
			job->stats.rows_out++;
			return true;
		}
		if (c != NULL)
		{
			gj_engine_release(job->res->engine, c);
			job->out.chunk = NULL;
		}
		if (job->out.done || !NextChunk(job, restarted))
		{
			job->out.done = true;
			job->stats.emit_ms = gj_now_ms() - job->t_engine - job->stats.wait_ms;
			return false;
		}
	}
}

/* The next output row into values/nulls; false when there are no more. */
bool
GjJobNext(GjJob *job, Datum *values, bool *nulls, bool *restarted)
{
	gj_chunk   *c;
	int			i;

	*restarted = false;
	if (job->dist != NULL)
	{
		if (!GjDistNext(job->dist, values, nulls))
			return false;
		job->stats.rows_out++;
		return true;
	}
	if (job->spec.shape != GJ_SHAPE_PAIRS && job->spec.shape != GJ_SHAPE_KNN)
	{
		bool		more = !job->out.done && NextShapedRow(job, values, nulls, restarted);

		if (more && job->stats.rows_out % 4096 == 1)
			GjProgressResult(job->stats.rows_out);
		return more;
	}
	for (;;)
	{
		c = job->out.chunk;
		if (c != NULL && job->out.pos < c->n)
		{
			/* geography: the pair's metres, and whether it is within d at all */
			if (job->geo.on && !job->spec.is_knn && !job->out.second)
			{
				if (job->geow.chunk != c || job->out.pos < job->geow.w0 || job->out.pos >= job->geow.w1)
					GeoDecideWindow(job, c);
				if (!job->geow.in[job->out.pos - job->geow.w0])
				{
					job->out.pos++;
					continue;
				}
				job->geow.metres = job->geow.m[job->out.pos - job->geow.w0];
			}
			break;
		}
		if (c != NULL)
		{
			gj_engine_release(job->res->engine, c);
			job->out.chunk = NULL;
		}
		if (job->out.done)
			return false;
		if (!NextChunk(job, restarted))
		{
			job->out.done = true;
			job->stats.emit_ms = gj_now_ms() - job->t_engine - job->stats.wait_ms;
			return false;
		}
		if (*restarted)
			job->stats.rows_out = 0;
	}
	i = job->out.pos;
	if (Keyed(FirstKeys(job)) && Keyed(SecondKeys(job)) && i + GJ_KEY_PREFETCH < c->n &&
		!job->out.second)
	{
		/*
		 * Keys by id are read in the engine's order, at random: ask for
		 * a row's keys some rows ahead (2M rows' 6.3M pairs on the GPU
		 * host: 0.6 s of misses otherwise)
		 */
		__builtin_prefetch(&FirstKeys(job)->values[c->a[i + GJ_KEY_PREFETCH]]);
		__builtin_prefetch(&SecondKeys(job)->values[c->b[i + GJ_KEY_PREFETCH]]);
	}
	if (job->out.second)
	{
		values[0] = GjKeyOf(SecondKeys(job), c->b[i]);	/* a self-join: one set */
		values[1] = GjKeyOf(FirstKeys(job), c->a[i]);
		job->out.second = false;
		job->out.pos++;
	}
	else
	{
		values[0] = GjKeyOf(FirstKeys(job), c->a[i]);
		values[1] = GjKeyOf(SecondKeys(job), c->b[i]);
		if (job->out.twice)
			job->out.second = true;
		else
			job->out.pos++;
	}
	nulls[0] = nulls[1] = nulls[2] = false;
	if (c->rank != NULL)
	{
		values[2] = Int32GetDatum(c->rank[i]);
		values[3] = Float8GetDatum(OutDist(job, c->dist[i]));
		nulls[3] = false;
	}
	else
		values[2] = Float8GetDatum(job->geo.on ? job->geow.metres : OutDist(job, c->dist[i]));
	job->out.rows_this_run++;
	job->stats.rows_out++;
	return true;
}

int64
GjJobNextKnnRows(GjJob *job, int64 *q, int64 *r, int32 *rank, double *dist, int64 max)
{
	int64		n = 0;
	bool		restarted;

	Assert(job->spec.shape == GJ_SHAPE_KNN);
	while (n < max)
	{
		gj_chunk   *c = job->out.chunk;

		if (c != NULL && c->rank != NULL && job->out.pos < c->n)
		{
			int64		take = Min(max - n, (int64) (c->n - job->out.pos));

			for (int64 i = job->out.pos; i < job->out.pos + take; i++, n++)
			{
				q[n] = c->a[i];
				r[n] = c->b[i];
				rank[n] = c->rank[i];
				dist[n] = OutDist(job, c->dist[i]);
			}
			job->out.pos += take;
			job->out.rows_this_run += take;
			job->stats.rows_out += take;
			continue;
		}
		if (c != NULL)
		{
			gj_engine_release(job->res->engine, c);
			job->out.chunk = NULL;
		}
		if (job->out.done)
			break;
		if (!NextChunk(job, &restarted))
		{
			job->out.done = true;
			job->stats.emit_ms = gj_now_ms() - job->t_engine - job->stats.wait_ms;
			break;
		}
		if (restarted)
			job->stats.rows_out = 0;
	}
	return n;
}
