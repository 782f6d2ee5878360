/*
 * machine.h
 *		What a backend may use for a join (machine.c): the GPU, probed
 *		lazily and given up after a CUDA error, worker threads, and the
 *		host and GPU memory limits, with the settings that bound them.
 */
#ifndef GJ_MACHINE_H
#define GJ_MACHINE_H

#include "gpujoin.h"

#include "gj_cuda.h"

/* gpujoin.device */
typedef enum GjDevice
{
	GJ_DEVICE_AUTO,
	GJ_DEVICE_CPU,
	GJ_DEVICE_GPU
} GjDevice;

/* Registers gpujoin.device, cpu_threads, gpu_memory_limit, gpu_batch_pairs, host_memory_limit. */
extern void GjMachineInit(void);

extern GjDevice GjDeviceSetting(void);

/* Worker threads of the CPU engine (gpujoin.cpu_threads, or one a core). */
extern int	GjCpuThreads(void);

/* Bytes of input points a join may hold (gpujoin.host_memory_limit). */
extern int64 GjHostMemoryLimit(void);

/*
 * The GPU: usable (why not, when not), given up for the backend's life
 * after a CUDA error, and required when gpujoin.device is gpu.
 */
extern bool GjGpuUsable(const char **why);
extern void GjMarkGpuUnusable(const char *why);
extern void GjRequireGpuIfSet(void);

/* "NVIDIA H100 (compute 9.0, 132 SMs, 79.1 GiB)" or "none (why)", for gpujoin_info(). */
extern void GjGpuDescription(char *buf, size_t len);

/*
 * A GPU engine's options: gpujoin.gpu_memory_limit in bytes (0: the
 * engine takes 90% of what is free), and for engines whose results are
 * pairs in batch buffers, gpujoin.gpu_batch_pairs.
 */
extern size_t GjGpuMemoryLimit(void);
extern void GjGpuOptionsInit(gj_gpu_options *opt, bool pair_buffers);

/*
 * After a GPU engine started with opt: why its team of opt->ndevices GPUs
 * did not start and one ran (palloc'd), else NULL.
 */
extern const char *GjGpuTeamFailure(const gj_gpu_options *opt);

/* The device bytes one join may use now: the limit, or 90% of what is free. */
extern size_t GjGpuBudget(void);

#endif							/* GJ_MACHINE_H */
