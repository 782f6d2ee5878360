/*
 * bruteforce.cu
 *		Brute-force pair count on the GPU: the benchmark's reference for what
 *		the grid index saves.  Every pair i < j is tested with the shared
 *		distance rule; tiles of 256 points are staged in shared memory.
 *		x is n * dims row-major on the host; only the count comes back.
 */
#include <time.h>

#include "gpu_common.cuh"
#include "gpu_bench.h"

#define BF_BLOCK 256
#define BF_MAX_TILED_DIMS 16

template <int DIMS>
__global__ static void
bf_kernel(const double *x, int n, int dims, double eps2, unsigned long long *count)
{
	extern __shared__ double tile[];	/* BF_BLOCK * dims */
	int			i = blockIdx.x * blockDim.x + threadIdx.x;
	int			D = DIMS > 0 ? DIMS : dims;
	double		xi[BF_MAX_TILED_DIMS];
	unsigned long long local = 0;

	if (i < n)
		for (int d = 0; d < D; d++)
			xi[d] = x[(int64_t) i * D + d];
	for (int t0 = blockIdx.x * blockDim.x; t0 < n; t0 += blockDim.x)
	{
		int			jt = t0 + threadIdx.x;

		for (int d = 0; d < D; d++)
			tile[threadIdx.x * D + d] = jt < n ? x[(int64_t) jt * D + d] : 0.0;
		__syncthreads();
		if (i < n)
			for (int k = 0; k < blockDim.x; k++)
			{
				int			j = t0 + k;

				if (j > i && j < n &&
					gj_dev_sqdist<DIMS>(xi, &tile[k * D], D, eps2) <= eps2)
					local++;
			}
		__syncthreads();
	}
	if (local)
		atomicAdd(count, local);
}

static gj_status
run(const gj_points *p, double eps2, int64_t *pairs, double *ms, double **dx,
	unsigned long long **dcount, cudaEvent_t *ev, char *err, size_t errlen)
{
	int			n = (int) p->n;
	int			dims = p->dims;
	unsigned	blocks = (unsigned) ((n + BF_BLOCK - 1) / BF_BLOCK);
	size_t		shmem = sizeof(double) * BF_BLOCK * dims;
	unsigned long long h = 0;
	float		f = 0;

	if (dims > BF_MAX_TILED_DIMS)
	{
		snprintf(err, errlen, "brute force supports at most %d dims", BF_MAX_TILED_DIMS);
		return GJ_ERR_LIMIT;
	}
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(dx, sizeof(double) * n * dims));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(dcount, sizeof(unsigned long long)));
	GJ_CUDA_CHECK(err, errlen, cudaMemcpy(*dx, p->x, sizeof(double) * n * dims, cudaMemcpyHostToDevice));
	GJ_CUDA_CHECK(err, errlen, cudaMemset(*dcount, 0, sizeof(unsigned long long)));
	GJ_CUDA_CHECK(err, errlen, cudaEventCreate(&ev[0]));
	GJ_CUDA_CHECK(err, errlen, cudaEventCreate(&ev[1]));
	GJ_CUDA_CHECK(err, errlen, cudaEventRecord(ev[0]));
	if (dims == 2)
		bf_kernel<2><<<blocks, BF_BLOCK, shmem>>>(*dx, n, dims, eps2, *dcount);
	else if (dims == 6)
		bf_kernel<6><<<blocks, BF_BLOCK, shmem>>>(*dx, n, dims, eps2, *dcount);
	else
		bf_kernel<0><<<blocks, BF_BLOCK, shmem>>>(*dx, n, dims, eps2, *dcount);
	GJ_CUDA_CHECK_LAUNCH(err, errlen, "bf_kernel");
	GJ_CUDA_CHECK(err, errlen, cudaEventRecord(ev[1]));
	GJ_CUDA_CHECK(err, errlen, cudaMemcpy(&h, *dcount, sizeof(h), cudaMemcpyDeviceToHost));
	GJ_CUDA_CHECK(err, errlen, cudaEventElapsedTime(&f, ev[0], ev[1]));
	*pairs = (int64_t) h;
	*ms = f;
	return GJ_OK;
}

extern "C" gj_status
gj_gpu_bruteforce_count(const gj_points *p, double eps2, int64_t *pairs,
						double *ms, char *err, size_t errlen)
{
	double	   *dx = NULL;
	unsigned long long *dcount = NULL;
	cudaEvent_t ev[2] = {NULL, NULL};
	gj_status	st = run(p, eps2, pairs, ms, &dx, &dcount, ev, err, errlen);

	cudaFree(dx);
	cudaFree(dcount);
	if (ev[0])
		cudaEventDestroy(ev[0]);
	if (ev[1])
		cudaEventDestroy(ev[1]);
	cudaGetLastError();
	return st;
}
