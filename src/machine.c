/*
 * machine.c
 *		What a backend may use for a join: the GPU, worker threads, host
 *		and GPU memory, and the settings that bound them.
 *
 * Nothing here touches CUDA at load time: _PG_init may run in the
 * postmaster (shared_preload_libraries) and a CUDA context does not survive
 * fork().  The GPU is probed lazily, once per backend, the first time a
 * join asks whether it is usable; a CUDA error part-way through a join
 * makes it unusable for the rest of the backend's life.
 */
#include "postgres.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/guc.h"

#include "machine.h"

static int	device_guc = GJ_DEVICE_AUTO;
static int	cpu_threads_guc = 0;
static int	gpu_memory_limit_guc = 0;	/* MB, 0 = automatic */
static int	gpu_batch_pairs_guc = 0;	/* 0 = automatic */
static int	host_memory_limit_guc = 0;	/* MB, 0 = half the machine's */
static char *gpus_guc = NULL;	/* "" = every visible GPU */

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

/* The exit status proc_exit passed on, once it has run our callback. */
static int	exit_code = -1;

/*
 * gpujoin.gpus as device numbers into devices (up to GJ_MAX_GPUS); how
 * many, 0 for "" (every visible GPU), -1 when it is not such a list.
 */
static int
ParseGpus(const char *value, int *devices)
{
	const char *c = value;
	int			n = 0;

	while (*c == ' ')
		c++;
	if (*c == '\0')
		return 0;
	for (;;)
	{
		char	   *end;
		long		d;

		while (*c == ' ')
			c++;
		if (*c < '0' || *c > '9')
			return -1;
		d = strtol(c, &end, 10);
		if (d >= GJ_MAX_GPUS || n == GJ_MAX_GPUS)
			return -1;
		devices[n++] = (int) d;
		c = end;
		while (*c == ' ')
			c++;
		if (*c == '\0')
			return n;
		if (*c != ',')
			return -1;
		c++;
	}
}

static bool
CheckGpus(char **newval, void **extra, GucSource source)
{
	int			devices[GJ_MAX_GPUS];

	if (ParseGpus(*newval, devices) < 0)
	{
		GUC_check_errdetail("gpujoin.gpus is a list of GPU numbers from 0 to %d separated by commas, "
							"or empty for every visible GPU.", GJ_MAX_GPUS - 1);
		return false;
	}
	return true;
}

/* The settings of the machine a join runs on (from _PG_init). */
void
GjMachineInit(void)
{
	DefineCustomEnumVariable("gpujoin.device",
							 "Engine for gpujoin joins: auto, cpu or gpu.",
							 "auto uses a usable GPU and the CPU engine otherwise; "
							 "gpu raises an error when no GPU engine is usable.",
							 &device_guc,
							 GJ_DEVICE_AUTO,
							 device_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.cpu_threads",
							"Worker threads of the CPU engine (0 = one per CPU).",
							NULL,
							&cpu_threads_guc,
							0, 0, 1024,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.gpu_memory_limit",
							"Most GPU memory a join may use, in MB (0 = 90% of what is free).",
							NULL,
							&gpu_memory_limit_guc,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.host_memory_limit",
							"Most host memory a join's input points may take, in MB (0 = half the machine's memory).",
							"Checked before and while reading: rows times (8 bytes a dimension + 8).",
							&host_memory_limit_guc,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomStringVariable("gpujoin.gpus",
							   "GPUs a join may use: CUDA device numbers separated by commas (empty = every visible GPU).",
							   "The tile join and the kNN join split their work among them; "
							   "every other GPU engine runs on the first.",
							   &gpus_guc,
							   "",
							   PGC_USERSET,
							   0,
							   CheckGpus, NULL, NULL);

	DefineCustomIntVariable("gpujoin.gpu_batch_pairs",
							"Result pairs per GPU batch buffer (0 = automatic).",
							"Smaller buffers mean more batches; for tuning and tests.",
							&gpu_batch_pairs_guc,
							0, 0, INT_MAX / 2,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
}

GjDevice
GjDeviceSetting(void)
{
	return (GjDevice) device_guc;
}

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
 * joins sometimes died with SIGBUS as they exited (docs/troubleshooting.md),
 * and the postmaster then restarts every session.  By the time exit() runs
 * its handlers PostgreSQL's callbacks have all run; what the teardown
 * would still do (destroy the context, unmap pinned memory) the kernel
 * does when the process ends, as for any backend that is killed.
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

	if (host_memory_limit_guc > 0)
		return (int64) host_memory_limit_guc * 1024 * 1024;
	if (pages <= 0 || pagesize <= 0)
		return INT64_MAX;
	return (int64) pages * pagesize / 2;
}

/* Threads the CPU engine will use. */
int
GjCpuThreads(void)
{
	return cpu_threads_guc > 0 ? cpu_threads_guc : gj_cpu_count();
}

/*
 * The GPUs gpujoin.gpus names, every visible one when it names none (after
 * a successful probe); how many.  A number past the visible devices is
 * left in: GjGpuUsable says so.
 */
static int
GpusSetting(int *devices)
{
	int			n = ParseGpus(gpus_guc != NULL ? gpus_guc : "", devices);

	if (n > 0)
		return n;
	n = Min(Max(gpu_info.count, 1), GJ_MAX_GPUS);
	for (int i = 0; i < n; i++)
		devices[i] = i;
	return n;
}

/* Whether this backend can use the GPU; why not in *why. */
bool
GjGpuUsable(const char **why)
{
	static char bad[160];
	int			devices[GJ_MAX_GPUS];
	int			n;

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
	n = GpusSetting(devices);
	for (int i = 0; i < n; i++)
		if (devices[i] >= gpu_info.count)
		{
			snprintf(bad, sizeof(bad), "gpujoin.gpus names GPU %d, but %d %s visible",
					 devices[i], gpu_info.count, gpu_info.count == 1 ? "is" : "are");
			*why = bad;
			return false;
		}
	*why = NULL;
	return true;
}

/*
 * The first GPU of gpujoin.gpus becomes the backend thread's: the engines
 * start there, and a team's first member runs there.
 */
static void
UseFirstGpu(int *devices, int *n)
{
	char		err[160];

	ProbeGpu();					/* the runtime starts with signals blocked */
	*n = GpusSetting(devices);
	if (gpu_status == GJ_OK && gj_gpu_use_device(devices[0], err, sizeof(err)) != GJ_OK)
		elog(DEBUG1, "gpujoin: %s", err);
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

	if (device_guc == GJ_DEVICE_GPU && !GjGpuUsable(&why))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpujoin.device is gpu but no GPU is usable"),
				 errdetail("%s", why),
				 errhint("Set gpujoin.device to auto or cpu.")));
}

/* The GPU as gpujoin_info() describes it (after a GjGpuUsable). */
void
GjGpuDescription(char *buf, size_t len)
{
	if (gpu_status == GJ_OK && gpu_unusable[0] == '\0')
		snprintf(buf, len, "%s%s (compute %d.%d, %d SMs, %.1f GiB)",
				 gpu_info.count > 1 ? psprintf("%d GPUs, the first ", gpu_info.count) : "",
				 gpu_info.name, gpu_info.major, gpu_info.minor,
				 gpu_info.sm_count,
				 (double) gpu_info.total_mem / (1024.0 * 1024.0 * 1024.0));
	else
		snprintf(buf, len, "none (%s)", gpu_unusable[0] ? gpu_unusable :
				 gpu_info.error[0] ? gpu_info.error : gj_status_name(gpu_status));
}

/* gpujoin.gpu_memory_limit in bytes; 0: none set. */
size_t
GjGpuMemoryLimit(void)
{
	return (size_t) gpu_memory_limit_guc * 1024 * 1024;
}

/*
 * The options every GPU engine starts with: the memory limit, and for the
 * engines that deliver pairs through batch buffers (the grid's pairs and
 * slabs, the tile join's pairs) the buffers' size.
 */
void
GjGpuOptionsInit(gj_gpu_options *opt, bool pair_buffers)
{
	memset(opt, 0, sizeof(*opt));
	UseFirstGpu(opt->devices, &opt->ndevices);
	opt->memory_limit = GjGpuMemoryLimit();
	if (pair_buffers)
		opt->batch_pairs = gpu_batch_pairs_guc;
}

/* Why the team of opt's GPUs did not start (the engine ran on one), else NULL. */
const char *
GjGpuTeamFailure(const gj_gpu_options *opt)
{
	const char *why = gj_gpu_team_failure();

	return opt->ndevices > 1 && why[0] != '\0' ? pstrdup(why) : NULL;
}

/* The device budget of one join: gpujoin.gpu_memory_limit, or 90% of what is free. */
size_t
GjGpuBudget(void)
{
	gj_cuda_device_info info;
	size_t		budget;
	int			devices[GJ_MAX_GPUS],
				n;

	UseFirstGpu(devices, &n);
	if (gj_cuda_probe(&info) != GJ_OK)
		return 0;
	budget = (size_t) (info.free_mem * 0.9);
	if (GjGpuMemoryLimit() > 0 && GjGpuMemoryLimit() < budget)
		budget = GjGpuMemoryLimit();
	return budget;
}
