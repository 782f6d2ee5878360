/*
 * nocuda.c
 *		The CUDA boundary for builds without nvcc: there is never a GPU.
 */
#include <stdio.h>
#include <string.h>

#include "gj_cuda.h"

/* No CUDA in this build. */
gj_status
gj_cuda_probe(gj_cuda_device_info *info)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->error, sizeof(info->error), "built without CUDA");
	return GJ_ERR_NODEVICE;
}

const char *
gj_cuda_build_info(void)
{
	return "none (built without nvcc)";
}
