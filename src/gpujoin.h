/*
 * gpujoin.h
 *		Declarations shared by the PostgreSQL glue files of gpujoin.
 *
 * The glue reads points through SPI (input.c), owns every outside resource
 * through a memory context with a reset callback (resources.c), picks an
 * engine (gpujoin.c) and writes result rows (selfjoin.c).
 */
#ifndef GPUJOIN_H
#define GPUJOIN_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"

#include "core/gj_core.h"

#define GPUJOIN_VERSION "0.1"

/* gpujoin.device */
typedef enum GjDevice
{
	GJ_DEVICE_AUTO,
	GJ_DEVICE_CPU,
	GJ_DEVICE_GPU
} GjDevice;

extern int	gj_device_guc;
extern int	gj_cpu_threads_guc;
extern int	gj_gpu_memory_limit_guc;	/* MB, 0 = automatic */
extern int	gj_gpu_batch_pairs_guc;	/* 0 = automatic */
extern bool gj_progress_guc;
extern int	gj_knn_method_guc;	/* a gj_knn_method */

/* The engine a join will run on, after applying gpujoin.device. */
typedef enum GjEngine
{
	GJ_ENGINE_CPU,
	GJ_ENGINE_GPU
} GjEngine;

#define GJ_AUTO_GPU_MIN_ROWS 100000

extern void GjRequireGpuIfSet(void);
extern GjEngine GjChooseEngine(int64 npoints);
extern int	GjCpuThreads(void);
extern void GjMarkGpuUnusable(const char *why);

/*
 * Everything a join holds outside palloc (malloc'd points, the grid, worker
 * threads), owned by a memory context whose reset/delete callback releases
 * it: on success, ERROR, cancel and statement_timeout alike.
 */
typedef struct GjResources
{
	MemoryContext cxt;
	gj_points	points;			/* the (reference) points */
	gj_points	queries;		/* kNN join: the query points */
	gj_grid		grid;
	bool		have_grid;
	gj_cpu_selfjoin *cpu;
	struct gj_gpu_selfjoin *gpu;
	gj_cpu_knn *cpu_knn;
	struct gj_gpu_knn *gpu_knn;
} GjResources;

extern GjResources *GjResourcesCreate(int dims_hint);
extern void GjResourcesRelease(GjResources *res);

/* What the reader is asked to read. */
typedef struct GjInputSpec
{
	const char *fname;			/* SQL function name, for messages */
	/* relation form */
	Oid			relid;
	ArrayType  *cols;			/* coordinate column names */
	text	   *id_col;			/* NULL: the primary key */
	/* query form (relid == InvalidOid) */
	const char *query;
} GjInputSpec;

/* Reads every usable row of spec into pts (one of a GjResources' sets). */
extern void GjReadPoints(const GjInputSpec *spec, gj_points *pts);

/* Turns a core status into an ereport(ERROR) (never returns for errors). */
extern void GjCheckStatus(gj_status st, const char *what);

/* NULL_VALUE_NOT_ALLOWED when argument argno is NULL. */
extern void GjCheckNotNull(FunctionCallInfo fcinfo, int argno, const char *name);

/* How long the backend waits on an engine between interrupt checks. */
#define GJ_WAIT_MS 50

#endif							/* GPUJOIN_H */
