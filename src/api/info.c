/*
 * info.c
 *		gpujoin_info(): the installation as a user sees it (version, the
 *		engine the settings pick, threads, the CUDA build and the GPU).
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "machine.h"
#include "job/job.h"

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

		if (GjDeviceSetting() == GJ_DEVICE_CPU)
			engine = "cpu";
		else if (usable && GjDeviceSetting() == GJ_DEVICE_GPU)
			engine = "gpu";
		else if (usable)
			engine = "gpu for inputs of " CppAsString2(GJ_AUTO_GPU_MIN_ROWS) " rows or more, else cpu";
		else
			engine = GjDeviceSetting() == GJ_DEVICE_GPU ? "none (gpu required, none usable)" : "cpu";
	}
	INFO_ROW("version", GPUJOIN_VERSION);
	INFO_ROW("engine", engine);
	snprintf(buf, sizeof(buf), "%d", GjCpuThreads());
	INFO_ROW("cpu_threads", buf);
	snprintf(buf, sizeof(buf), "%d", gj_cpu_count());
	INFO_ROW("cpus", buf);
	INFO_ROW("cuda_build", gj_cuda_build_info());
	GjGpuDescription(buf, sizeof(buf));
	INFO_ROW("gpu", buf);
#undef INFO_ROW
	return (Datum) 0;
}
