/*
 * gj_cuda.h
 *		The whole C boundary of gpujoin's CUDA code.
 *
 * Plain C, extern "C" on the CUDA side, no PostgreSQL header and no C++
 * exception across it: every function returns a gj_status and, on failure,
 * writes the failing call and cudaGetErrorName into an error buffer.
 * When the build has no nvcc, kernels/nocuda.c implements the same functions
 * as "no usable GPU".
 */
#ifndef GJ_CUDA_H
#define GJ_CUDA_H

#include <stddef.h>

#include "../src/core/gj_core.h"

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct gj_cuda_device_info
{
	int			device;
	char		name[256];
	int			major;
	int			minor;
	int			sm_count;
	size_t		total_mem;
	size_t		free_mem;
	int			runtime_version;
	int			driver_version;
	char		error[160];		/* why there is no usable GPU */
} gj_cuda_device_info;

/*
 * Initialise the CUDA runtime (once per process) and describe device 0.
 * GJ_ERR_NODEVICE when there is no driver, no device or no build support.
 */
extern gj_status gj_cuda_probe(gj_cuda_device_info *info);

/* How the CUDA side was built, for gpujoin_info(). */
extern const char *gj_cuda_build_info(void);

#ifdef __cplusplus
}
#endif

#endif							/* GJ_CUDA_H */
