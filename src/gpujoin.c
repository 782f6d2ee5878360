/*
 * gpujoin.c
 *		Module entry: GUCs, the custom scan's hook, engine choice,
 *		gpujoin_info().
 *
 * Nothing here touches CUDA at load time: _PG_init may run in the
 * postmaster (shared_preload_libraries) and a CUDA context does not survive
 * fork().  The GPU is probed lazily, once per backend, in GjChooseEngine.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpujoin.h"
#include "../kernels/gj_cuda.h"

PG_MODULE_MAGIC;

int			gj_device_guc = GJ_DEVICE_AUTO;
int			gj_cpu_threads_guc = 0;
int			gj_parallel_read_min_rows_guc = 100000;
bool		gj_parallel_read_file_guc = true;
int			gj_gpu_memory_limit_guc = 0;
int			gj_host_memory_limit_guc = 0;
int			gj_gpu_batch_pairs_guc = 0;
bool		gj_progress_guc = false;
int			gj_knn_method_guc = GJ_KNN_AUTO;
int			gj_eps_method_guc = GJ_EPS_AUTO;
bool		gj_custom_scan_guc = true;

static const struct config_enum_entry knn_method_options[] = {
	{"auto", GJ_KNN_AUTO, false},
	{"grid", GJ_KNN_GRID, false},
	{"brute", GJ_KNN_BRUTE, false},
	{"blocks", GJ_KNN_BLOCKS, false},
	{NULL, 0, false}
};

static const struct config_enum_entry eps_method_options[] = {
	{"auto", GJ_EPS_AUTO, false},
	{"grid", GJ_EPS_GRID, false},
	{"brute", GJ_EPS_BRUTE, false},
	{"blocks", GJ_EPS_BLOCKS, false},
	{NULL, 0, false}
};

static const struct config_enum_entry device_options[] = {
	{"auto", GJ_DEVICE_AUTO, false},
	{"cpu", GJ_DEVICE_CPU, false},
	{"gpu", GJ_DEVICE_GPU, false},
	{NULL, 0, false}
};

/* The backend's GPU probe, done at most once; a CUDA failure clears it. */
static bool gpu_probed = false;
static gj_cuda_device_info gpu_info;
static gj_status gpu_status = GJ_ERR_NODEVICE;
static char gpu_unusable[160] = "";

void		_PG_init(void);

/* The exit status proc_exit passed on, once it has run our callback. */
static int	exit_code = -1;

/* GJ_CUDA_TEARDOWN=1 in the server's environment: free CUDA at exit. */
static bool
CudaTeardownWanted(void)
{
	return getenv("GJ_CUDA_TEARDOWN") != NULL;
}

/*
 * At backend exit: no CUDA call at all.  A backend that used the GPU
 * leaves through ExitWithoutCudaTeardown, and the kernel frees its pinned
 * buffers, device memory and context as for any process that ends; freeing
 * them here first would only cost time (46 ms measured) in CUDA calls made
 * while the process is being torn down.
 */
static void
ReleaseGpuCache(int code, Datum arg)
{
	exit_code = code;
	if (!CudaTeardownWanted())
		return;
	GjFaultTraceNote("exit: releasing the GPU cache");
	if (gpu_probed && gpu_status == GJ_OK)
		gj_gpu_release_cache();
	GjFaultTraceNote("exit: GPU cache released");
}

/*
 * The last step of a backend that used CUDA: leave without the CUDA
 * runtime's and driver's own teardown.  Backends that had run many GPU
 * joins sometimes died with SIGBUS as they exited (README, "Known
 * issues"), and the postmaster then restarts every session.  By the time
 * exit() runs its handlers PostgreSQL's callbacks have all run; what the
 * teardown would still do (destroy the context, unmap pinned memory) the
 * kernel does when the process ends, as for any backend that is killed.
 * Registered after the runtime started, so it runs before the runtime's
 * handlers; an exit() that did not come through proc_exit (exit_code
 * unset) leaves normally.  GJ_CUDA_TEARDOWN=1 restores the full teardown.
 */
static void
ExitWithoutCudaTeardown(void)
{
	if (exit_code < 0 || CudaTeardownWanted())
		return;
	GjFaultTraceNote("exit: leaving without the CUDA teardown");
	fflush(NULL);
	_exit(exit_code);
}

/*
 * The core's cancel hook: long index builds on the backend thread stop when
 * a cancel or termination is pending; the caller then raises it.
 */
static int
GjInterrupted(void)
{
	return QueryCancelPending || ProcDiePending;
}

/* Register the GUCs and the custom scan; no CUDA here (see the file header). */
void
_PG_init(void)
{
	GjFaultTraceInit();
	DefineCustomEnumVariable("gpujoin.device",
							 "Engine for gpujoin joins: auto, cpu or gpu.",
							 "auto uses a usable GPU and the CPU engine otherwise; "
							 "gpu raises an error when no GPU engine is usable.",
							 &gj_device_guc,
							 GJ_DEVICE_AUTO,
							 device_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.cpu_threads",
							"Worker threads of the CPU engine (0 = one per CPU).",
							NULL,
							&gj_cpu_threads_guc,
							0, 0, 1024,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.parallel_read_min_rows",
							"Tables of at least this many rows are read by parallel workers (-1 = never).",
							"The planner still decides how many workers (max_parallel_workers_per_gather).",
							&gj_parallel_read_min_rows_guc,
							100000, -1, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.parallel_read_file",
							 "Pass the parallel read's rows through shared files of the reader's (Linux).",
							 "Off, or where min_dynamic_shared_memory holds them: through a PostgreSQL "
							 "dynamic shared memory segment, which outside the main region costs the "
							 "query an allocation and a free of every page on one core.",
							 &gj_parallel_read_file_guc,
							 true,
							 PGC_USERSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.gpu_memory_limit",
							"Most GPU memory a join may use, in MB (0 = 90% of what is free).",
							NULL,
							&gj_gpu_memory_limit_guc,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.host_memory_limit",
							"Most host memory a join's input points may take, in MB (0 = half the machine's memory).",
							"Checked before and while reading: rows times (8 bytes a dimension + 8).",
							&gj_host_memory_limit_guc,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.gpu_batch_pairs",
							"Result pairs per GPU batch buffer (0 = automatic).",
							"Smaller buffers mean more batches; for tuning and tests.",
							&gj_gpu_batch_pairs_guc,
							0, 0, INT_MAX / 2,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.progress",
							 "Report the progress of long joins as NOTICEs, at most one a second.",
							 NULL,
							 &gj_progress_guc,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.knn_method",
							 "Search of the kNN joins: auto, grid, blocks or brute.",
							 "grid searches a grid of a few dimensions; brute compares every pair; "
							 "blocks is brute force over rows sorted into small blocks, skipping "
							 "blocks whose bounds are farther than the k-th neighbour so far. "
							 "auto uses the grid up to 6 dimensions and blocks above; all give "
							 "the same answer.",
							 &gj_knn_method_guc,
							 GJ_KNN_AUTO,
							 knn_method_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.eps_method",
							 "Search of the eps joins, counts, lists and DBSCAN: auto, grid, blocks or brute.",
							 "grid compares each row with the rows of its neighbouring grid cells; "
							 "brute compares every pair in vectorised tiles (tensor cores on the GPU); "
							 "blocks sorts the rows into small blocks and compares the tiles of "
							 "blocks whose bounds are within eps. "
							 "auto takes the grid up to 3 dimensions and otherwise the grid or blocks, "
							 "whichever a sample says costs less; all give the same answer.",
							 &gj_eps_method_guc,
							 GJ_EPS_AUTO,
							 eps_method_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.custom_scan",
							 "Stream the rows of gpujoin functions in FROM through a custom scan.",
							 "Off: PostgreSQL's function scan runs them to completion into a "
							 "tuplestore first, as for any set-returning function.",
							 &gj_custom_scan_guc,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	MarkGUCPrefixReserved("gpujoin");
	gj_set_interrupt_hook(GjInterrupted);
	GjCustomScanInit();
}

/* Probe the GPU once per backend and remember the answer. */
static void
ProbeGpu(void)
{
	if (gpu_probed)
		return;
	gpu_probed = true;
	gpu_status = gj_cuda_probe(&gpu_info);

	/*
	 * The exit path of a process that started CUDA, registered here rather
	 * than in _PG_init: a postmaster that preloads the library would pass
	 * an on_proc_exit callback to no child (they reset the list).
	 */
	on_proc_exit(ReleaseGpuCache, (Datum) 0);
	atexit(ExitWithoutCudaTeardown);
	if (gpu_status == GJ_OK)
		GjFaultTraceNote("gpu initialised");
}

/* Bytes of input points a join may hold (gpujoin.host_memory_limit). */
int64
GjHostMemoryLimit(void)
{
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		pagesize = sysconf(_SC_PAGESIZE);

	if (gj_host_memory_limit_guc > 0)
		return (int64) gj_host_memory_limit_guc * 1024 * 1024;
	if (pages <= 0 || pagesize <= 0)
		return INT64_MAX;
	return (int64) pages * pagesize / 2;
}

/* Threads the CPU engine will use. */
int
GjCpuThreads(void)
{
	return gj_cpu_threads_guc > 0 ? gj_cpu_threads_guc : gj_cpu_count();
}

/* Whether this backend can use the GPU; why not in *why. */
bool
GjGpuUsable(const char **why)
{
	ProbeGpu();
	if (gpu_unusable[0] != '\0')
	{
		*why = gpu_unusable;
		return false;
	}
	if (gpu_status != GJ_OK)
	{
		*why = gpu_info.error[0] ? gpu_info.error : gj_status_name(gpu_status);
		return false;
	}
	*why = NULL;
	return true;
}

/* After a CUDA failure: no more GPU joins in this backend. */
void
GjMarkGpuUnusable(const char *why)
{
	snprintf(gpu_unusable, sizeof(gpu_unusable), "disabled after an error: %s", why);
}

/* With gpujoin.device = gpu, an error unless a GPU is usable. */
void
GjRequireGpuIfSet(void)
{
	const char *why;

	if (gj_device_guc == GJ_DEVICE_GPU && !GjGpuUsable(&why))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpujoin.device is gpu but no GPU is usable"),
				 errdetail("%s", why),
				 errhint("Set gpujoin.device to auto or cpu.")));
}

/*
 * The engine for a join of npoints rows: cpu and gpu as set; auto takes a
 * usable GPU for inputs of GJ_AUTO_GPU_MIN_ROWS or more (below that the CPU
 * engine finishes first, and the GPU is not even initialised).
 */
GjEngine
GjChooseEngine(int64 npoints)
{
	return GjChooseEngineFor(npoints, 0.0);
}

/*
 * The same for work that grows faster than the rows: auto also takes the
 * GPU when the pairs times the dimensions to compare reach
 * GJ_AUTO_GPU_MIN_WORK (20,000 rows of 768 dimensions by tiles: 1.5e11).
 */
GjEngine
GjChooseEngineFor(int64 npoints, double work)
{
	const char *why;

	if (gj_device_guc == GJ_DEVICE_CPU)
		return GJ_ENGINE_CPU;
	if (gj_device_guc == GJ_DEVICE_GPU)
	{
		GjRequireGpuIfSet();
		return GJ_ENGINE_GPU;
	}
	if ((npoints >= GJ_AUTO_GPU_MIN_ROWS || work >= GJ_AUTO_GPU_MIN_WORK) &&
		GjGpuUsable(&why))
		return GJ_ENGINE_GPU;
	return GJ_ENGINE_CPU;
}

/* Map a failed core status to an ERROR with the matching SQLSTATE. */
void
GjCheckStatus(gj_status st, const char *what)
{
	switch (st)
	{
		case GJ_OK:
		case GJ_DONE:
		case GJ_AGAIN:
			return;
		case GJ_ERR_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory during %s", what)));
			break;
		case GJ_ERR_LIMIT:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("input too large for %s", what),
					 errdetail("gpujoin handles at most %d rows of at most %d dimensions.",
							   GJ_MAX_ROWS, GJ_MAX_DIMS)));
			break;
		case GJ_ERR_THREAD:
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("could not start worker threads for %s", what),
					 errhint("Lower gpujoin.cpu_threads.")));
			break;
		default:
			elog(ERROR, "gpujoin: %s failed: %s", what, gj_status_name(st));
	}
}

PG_FUNCTION_INFO_V1(gpujoin_info);

/* gpujoin_info(): one (name, value) row per fact about the installation. */
Datum
gpujoin_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char		buf[256];
	const char *engine;

#define INFO_ROW(name, value) \
	do { \
		Datum		v_[2]; \
		bool		n_[2] = {false, false}; \
		v_[0] = CStringGetTextDatum(name); \
		v_[1] = CStringGetTextDatum(value); \
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v_, n_); \
	} while (0)

	InitMaterializedSRF(fcinfo, 0);
	{
		const char *why;
		bool		usable = GjGpuUsable(&why);

		if (gj_device_guc == GJ_DEVICE_CPU)
			engine = "cpu";
		else if (usable && gj_device_guc == GJ_DEVICE_GPU)
			engine = "gpu";
		else if (usable)
			engine = "gpu for inputs of " CppAsString2(GJ_AUTO_GPU_MIN_ROWS) " rows or more, else cpu";
		else
			engine = gj_device_guc == GJ_DEVICE_GPU ? "none (gpu required, none usable)" : "cpu";
	}
	INFO_ROW("version", GPUJOIN_VERSION);
	INFO_ROW("engine", engine);
	snprintf(buf, sizeof(buf), "%d", GjCpuThreads());
	INFO_ROW("cpu_threads", buf);
	snprintf(buf, sizeof(buf), "%d", gj_cpu_count());
	INFO_ROW("cpus", buf);
	INFO_ROW("cuda_build", gj_cuda_build_info());
	if (gpu_status == GJ_OK && gpu_unusable[0] == '\0')
	{
		snprintf(buf, sizeof(buf), "%s (compute %d.%d, %d SMs, %.1f GiB)",
				 gpu_info.name, gpu_info.major, gpu_info.minor,
				 gpu_info.sm_count,
				 (double) gpu_info.total_mem / (1024.0 * 1024.0 * 1024.0));
		INFO_ROW("gpu", buf);
	}
	else
	{
		snprintf(buf, sizeof(buf), "none (%s)", gpu_unusable[0] ? gpu_unusable :
				 gpu_info.error[0] ? gpu_info.error : gj_status_name(gpu_status));
		INFO_ROW("gpu", buf);
	}
#undef INFO_ROW
	return (Datum) 0;
}
