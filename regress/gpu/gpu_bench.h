/*
 * gpu_bench.h
 *		The GPU kernels that only the GPU checks and benchmarks link
 *		(bruteforce.cu, ceilings.cu): references to measure the engines
 *		against, never part of gpujoin.so.
 */
#ifndef GJ_GPU_BENCH_H
#define GJ_GPU_BENCH_H

#include "gj_cuda.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* Brute-force pair count on the GPU (benchmark reference); *ms: kernel time. */
extern gj_status gj_gpu_bruteforce_count(const gj_points *p, double eps2,
										 int64_t *pairs, double *ms,
										 char *err, size_t errlen);

/* The device's arithmetic rates, measured, in flop/s. */
typedef struct gj_gpu_ceilings
{
	double		fp64_tensor;	/* FP64 mma, the faster shape (the Gram form's products) */
	double		fp64_mma_m8n8k4;
	double		fp64_mma_m16n8k16;
	double		tf32_tensor;	/* TF32 mma.sync m16n8k8 (the tile filters') */
	double		fp64_fma;		/* FP64 fused multiply-adds, 2 flops each */
} gj_gpu_ceilings;

extern gj_status gj_gpu_measure_ceilings(gj_gpu_ceilings *c, char *err, size_t errlen);

/*
 * Page-lock bytes of host memory at p (on 1) or unlock them (on 0), as rows
 * read straight into pinned memory would be: the benchmarks' measure of
 * an upload without the host's staging copies.  0: done.
 */
extern int	gj_bench_pin(void *p, size_t bytes, int on);

/* The engines' staged upload of bytes to the current device and back: 0 when the same. */
extern int	gj_bench_upload_roundtrip(size_t bytes, int pinned);

/* The filter rows' kernel against its rule on the host (0: f and h bit for bit, r within 1e-12). */
extern int	gj_bench_prep_check(int64_t n, int dims, int per_block, int tf32, uint64_t seed);

/* Staged upload, register, DMA and unregister of src, timed (ms[4]). */
extern int	gj_bench_upload_ways(const void *src, size_t bytes, double ms[4]);

/* src to devices 0 .. ndev-1 at once (mode 0: parts and peer copies, 1: each all, 2: one, then peers). */
extern int	gj_bench_upload_team(const void *src, size_t bytes, int ndev, int mode, double *ms);

/* The staging's piece size and copiers from now on, alone and a team member's (pinned.cu; 0: the defaults). */
extern void gj_upload_tune(size_t piece, int threads, size_t team_piece, int team_threads);

#ifdef __cplusplus
}
#endif

#endif							/* GJ_GPU_BENCH_H */
