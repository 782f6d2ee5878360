/*
 * device.cu
 *		CUDA runtime start-up and device description.
 *
 * The runtime is linked statically (no libcudart at load time); the driver
 * library is opened by the runtime on the first call, so a machine without
 * a driver loads the extension fine and only this probe reports "no GPU".
 * Runtime initialisation may start helper threads: every asynchronous
 * signal is blocked around it so that PostgreSQL's handlers only ever run
 * on the backend thread.  Synchronous ones (SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE) stay unblocked: blocking them cannot stop a fault, only hide
 * which thread took it.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_cuda.h"

#define GJ_STR2(x) #x
#define GJ_STR(x) GJ_STR2(x)

extern "C" const char *
gj_cuda_build_info(void)
{
	return "CUDA " GJ_STR(CUDART_VERSION) " runtime (static)";
}

extern "C" gj_status
gj_cuda_probe(gj_cuda_device_info *info)
{
	sigset_t	old;
	cudaError_t err;
	int			count = 0;
	cudaDeviceProp prop;

	memset(info, 0, sizeof(*info));

	/*
	 * Load every kernel when the context is made.  With CUDA's default lazy
	 * loading, the first launch of a kernel waits for the kernels already
	 * running, so in a fresh backend the host thread sat in a launch while a
	 * long kernel ran and could not raise the stop word (a DBSCAN cancel took
	 * 23 s).  The caller's own setting wins.
	 */
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	gj_block_async_signals(&old);
	err = cudaGetDeviceCount(&count);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	cudaRuntimeGetVersion(&info->runtime_version);
	cudaDriverGetVersion(&info->driver_version);
	if (err != cudaSuccess)
	{
		snprintf(info->error, sizeof(info->error), "cudaGetDeviceCount: %s",
				 cudaGetErrorName(err));
		cudaGetLastError();		/* clear the (non-sticky) error */
		return GJ_ERR_NODEVICE;
	}
	if (count < 1)
	{
		snprintf(info->error, sizeof(info->error), "no CUDA device");
		return GJ_ERR_NODEVICE;
	}
	info->count = count;
	/* the calling thread's device: 0, or the first of gpujoin.gpus (gj_gpu_use_device) */
	err = cudaGetDevice(&info->device);
	if (err == cudaSuccess)
		err = cudaGetDeviceProperties(&prop, info->device);
	if (err == cudaSuccess)
		err = cudaSetDevice(info->device);
	if (err == cudaSuccess)
		err = cudaMemGetInfo(&info->free_mem, &info->total_mem);
	if (err != cudaSuccess)
	{
		snprintf(info->error, sizeof(info->error), "device %d: %s", info->device,
				 cudaGetErrorName(err));
		cudaGetLastError();
		return GJ_ERR_NODEVICE;
	}
	snprintf(info->name, sizeof(info->name), "%s", prop.name);
	info->major = prop.major;
	info->minor = prop.minor;
	info->sm_count = prop.multiProcessorCount;
	return GJ_OK;
}

/*
 * Make device the calling thread's: the engines run on it, and a team's
 * first member too.  GJ_ERR_NODEVICE when there is no such device.
 */
extern "C" gj_status
gj_gpu_use_device(int device, char *err, size_t errlen)
{
	int			count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);

	if (e == cudaSuccess && (device < 0 || device >= count))
	{
		snprintf(err, errlen, "there is no GPU %d: %d visible", device, count);
		return GJ_ERR_NODEVICE;
	}
	if (e == cudaSuccess)
		e = cudaSetDevice(device);
	if (e != cudaSuccess)
	{
		snprintf(err, errlen, "cudaSetDevice(%d): %s", device, cudaGetErrorName(e));
		cudaGetLastError();
		return GJ_ERR_NODEVICE;
	}
	return GJ_OK;
}
