/*
 * job_internal.h
 *		What the files of a job share (job/): the job's state, the
 *		resources it owns, and each file's entry points.
 *
 * The files call downwards only:
 *	job.c		start (read, plan, dispatch) and end; rerun after a GPU failure
 *	emit.c		rows out, chunk by chunk (calls job.c to rerun)
 *	run_eps.c, run_rows.c, run_knn.c	the engines of each family
 *	run_tiles.c, run_slabs.c, geo.c		what those families share
 *	plan.c		every choice of method, and the engine EXPLAIN names
 *	run_common.c, settings.c, geo_postgis.c	leaves
 */
#ifndef GJ_JOB_INTERNAL_H
#define GJ_JOB_INTERNAL_H

#include "dist/dist.h"
#include "job/job.h"
#include "machine.h"
#include "resources.h"

/* --- settings.c ------------------------------------------------------------ */

/* gpujoin.eps_method: how the eps functions search. */
typedef enum GjEpsMethod
{
	GJ_EPS_AUTO,
	GJ_EPS_GRID,				/* each row against its neighbouring cells */
	GJ_EPS_BRUTE,				/* every pair, in tiles */
	GJ_EPS_BLOCKS				/* tiles of the block pairs the bounds allow */
} GjEpsMethod;

extern GjEpsMethod GjEpsMethodSetting(void);
extern gj_knn_method GjKnnMethodSetting(void);
extern bool GjProgressSetting(void);

/* --- the job ---------------------------------------------------------------- */

/* The engine a join runs on, after applying gpujoin.device. */
typedef enum GjEngine
{
	GJ_ENGINE_CPU,
	GJ_ENGINE_GPU
} GjEngine;

/* A job on PostGIS geography (geo.c): how its chords become metres. */
typedef struct GjGeography
{
	bool		on;
	gj_geodetic g;
	int32		srid;
	Oid			nsp;			/* PostGIS's schema */
	bool		use_spheroid;
	const char *fname;
	int64		band_pairs;		/* pairs PostGIS was asked about */
} GjGeography;

/* What the job is doing: nothing (yet, or any more), streaming, or rows. */
typedef enum GjRunning
{
	RUN_NONE,
	RUN_STREAM,					/* res->engine's chunks are the rows */
	RUN_ROWS					/* per-row answers computed: hand them out */
} GjRunning;

/*
 * The eps method's plan (plan.c): made once a job, for the engine first
 * asked, so that a rerun on the CPU keeps the rows' order and every engine
 * of the job sees the same row numbers.
 */
typedef struct GjEpsPlan
{
	double		tile_share;		/* the grid's share of all pairs, sampled (-1: not yet) */
	GjEngine	engine;			/* the engine auto's choice was made for */
	bool		brute_cheap;	/* auto: brute force costs less than choosing */
	int			prune;			/* auto: the index or not (-1: not yet) */
	int			join_copy;		/* eps_join's tiles' copy: 0 not asked, 1 fits, -1 not */
	bool		blocks_planned; /* block_plan made (GjPlanBlocks) */
	gj_block_plan block_plan;	/* the index's key, its cuts in the job's memory */
	double		block_kept;		/* the share of block pairs its model keeps */
} GjEpsPlan;

/* GPU eps pairs in slabs, too large for the device at once (run_slabs.c). */
typedef struct GjSlabRun
{
	gj_slab_plan plan;			/* plan.nsteps == 0: none */
	int			step;			/* the step running */
	gj_points  *idx;			/* the slabbed set, and the probing set (NULL: self) */
	gj_points  *probe;
	int			order;			/* gj_gpu_join_start's swap for probe steps */
	gj_points	view[2][2];		/* views of a step's rows, by the step's parity */
	size_t		limit;			/* device bytes one step's engine may use */
	bool		early_failed;	/* the next step could not start early */
} GjSlabRun;

/* Per-row answers (run_rows.c, run_tiles.c, geo.c), handed out by emit.c. */
typedef struct GjRowAnswers
{
	int64		nclusters;		/* dbscan */
	uint32	   *subset;			/* restricted counts: the rows counted */
	int64		nsubset;
	bool		geo_band;		/* geography: already within d (GjGeoBandRows) */
	gj_pair_source source;		/* by tiles: their pairs */
	gj_status	gpu_status;		/* ... GJ_OK, or why the GPU gave them up */
	char		gpu_err[256];
} GjRowAnswers;

/* Rows going out (emit.c): the chunk being handed out, and progress. */
typedef struct GjEmitState
{
	gj_chunk   *chunk;
	int			pos;
	bool		twice;			/* each pair gives (a, b) and (b, a) */
	bool		second;			/* (b, a) of chunk->pos is next */
	bool		done;
	int64		rows_this_run;	/* since the engine (re)started */
	MemoryContext rowcxt;		/* arrays of the row last handed out */
	double		t_progress;
	int64		progress_pairs;
} GjEmitState;

/*
 * Geography's pairs and lists as they stream (emit.c): the chunk whose
 * entries [w0, w1) are decided, within d or not and how far.
 */
typedef struct GjGeoWindow
{
	double		metres;			/* the distance of the pair at out.pos */
	const gj_chunk *chunk;
	int64		w0;
	int64		w1;
	bool	   *in;				/* cap entries each */
	double	   *m;
	int64		cap;
	int64		size;			/* the last window's pairs (it grows) */
} GjGeoWindow;

struct GjJob
{
	GjJobSpec	spec;
	GjDist	   *dist;			/* run on Citus's workers: its rows (dist/) */
	GjResources *res;
	bool		restart_ok;
	GjRunning	running;
	double		t_engine;		/* gj_now_ms() at the engine's start */
	const gj_points *qs;		/* kNN: the query points */
	gj_knn_options kopt;
	GjGeography geo;			/* PostGIS geography: chords to metres */
	GjEpsPlan	plan;
	GjSlabRun	slab;
	GjRowAnswers rows;
	GjEmitState out;
	GjGeoWindow geow;
	GjJobStats	stats;
};

/* job.c: start whichever engine the plan calls for; rerun on the CPU after a GPU failure */
extern void GjStartEngine(GjJob *job, bool allow_gpu);
extern void GjRestartAfterGpu(GjJob *job, gj_status st, const char *err, bool *restarted);

/* --- run_common.c: what every engine family's start shares ------------------ */

extern double GjAllPairs(const GjJob *job);
extern bool GjResultEnormous(double rows, double all);
extern void GjNoticeIfEnormous(GjJob *job, double pairs);
extern bool GjGpuStartFailed(GjJob *job, gj_status st, const char *err);
extern void GjEngineRunning(GjJob *job, gj_engine *e, const char *engine, int threads);
extern void GjEngineRan(GjJob *job, const char *engine, int threads);
extern uint32 *GjListedRows(const gj_points *p, const int64 *ids, int nids, int64 *nrows);
extern void GjEnsureGrid(GjJob *job);
extern void GjAllocRowResults(GjJob *job, int64 n);
extern void GjRowsMoved(GjResources *res);

/* --- plan.c: every choice of method ----------------------------------------- */

extern GjEngine GjChooseEngine(int64 npoints);
extern GjEngine GjChooseEngineFor(int64 npoints, double work);
extern GjEngine GjChooseEpsEngine(GjJob *job);
extern bool GjNothingToDo(GjJob *job);
extern bool GjRestrictedSelf(const GjJobSpec *spec);
extern bool GjUseTiles(GjJob *job, GjEngine engine);
extern bool GjTilesPrune(GjJob *job);
extern void GjPlanBlocks(GjJob *job);
extern bool GjIndexSmaller(const gj_points *r, const gj_points *s, double eps2, gj_grid *plan);
extern bool GjJoinIndexesR(GjJob *job, GjEngine engine);
extern bool GjProbeByBrute(double probes, double rows);
extern int64 GjKnnQueries(GjJob *job);
extern void GjPlanKnnMethod(GjJob *job, int64 nq);
extern bool GjKnnOnGpu(GjJob *job, int64 nq);
extern void GjPlanCpuKnnMethod(GjJob *job, int64 nq);

/* --- run_tiles.c: many dimensions, every block pair or the index's --------- */

extern void GjOrderPoints(GjJob *job, gj_points *p);
extern bool GjStartGpuTiles(GjJob *job);
extern void GjStartCpuTiles(GjJob *job);
extern void GjTileRows(GjJob *job, GjEngine engine);

/* --- run_slabs.c: eps joins beyond the device ------------------------------- */

extern int64 GjSlabRows(int dims, size_t extra, int share);
extern bool GjStartGpuSlabs(GjJob *job, gj_points *idx, gj_points *probe, int order);
extern gj_status GjStartSlabStep(GjJob *job, int t, gj_engine **out, char *err, size_t errlen);
extern void GjStartNextSlabEarly(GjJob *job);
extern bool GjGpuRowsInSlabs(GjJob *job, gj_status *st, char *err, size_t errlen);

/* --- the engine families ----------------------------------------------------- */

/* run_eps.c: pairs, of one set or two */
extern void GjStartSelfJoin(GjJob *job, bool allow_gpu);
extern void GjStartJoin(GjJob *job, bool allow_gpu);

/* run_rows.c: one answer a row (counts, lists, DBSCAN; eps_join_counts) */
extern void GjStartRows(GjJob *job, bool allow_gpu);
extern void GjStartJoinCounts(GjJob *job, bool allow_gpu);

/* run_knn.c */
extern void GjStartKnn(GjJob *job, bool allow_gpu);

/* --- geo.c, geo_postgis.c: PostGIS geography --------------------------------- */

extern void GjGeographySetup(GjGeography *geo, GjJobSpec *spec, const GjReadStats *s_read,
							 gj_points *points, gj_geo_side *s_side,
							 const GjReadStats *r_read, gj_points *queries,
							 gj_geo_side *r_side);
extern void GjGeographyDecide(GjGeography *geo, gj_geo_side *sa, const int64 *ida,
							  gj_geo_side *sb, const int64 *idb, const double *c, int64 n,
							  bool *within, double *metres);
extern void GjGeographyRepairCounts(GjGeography *geo, gj_points *points, gj_geo_side *s_side,
									const gj_points *queries, gj_geo_side *r_side,
									const uint32 *rows, int64 nrows, int32 *counts);
extern void GjGeoBandRows(GjJob *job, bool allow_gpu);
extern void GjGeographyWithinMany(const char *fname, Oid nsp, int32 srid, bool use_spheroid,
								  double d, int n, const double *ll, bool *within,
								  double *metres);

#endif							/* GJ_JOB_INTERNAL_H */
