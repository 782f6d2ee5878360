/*
 * order.cu
 *		The order of rows along one coordinate, sorted on the device: what
 *		the slabs (src/core/slabs.c) cut along.
 *
 * The slabs run where the grid index does not fit the device, but the
 * sort needs only 24 bytes a row (keys and row numbers, in and out) where
 * the grid needs 16 * dims + 112, so the sort nearly always fits when the
 * index does not.  On the host, 10M rows took about 400 ms to sort (keys,
 * eight radix passes over 16 cores, page faults on fresh arrays); here the
 * upload of one column and CUB's radix sort take a few milliseconds.
 *
 * Keys: a double's bits, sign-folded so that unsigned order is numeric
 * order (-0 before +0, which only orders equal coordinates), all 64 bits;
 * the sort is stable, so equal coordinates keep their row order.
 */
#include <cub/cub.cuh>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.cuh"

#define GJ_ORDER_BLOCK 256

/* keys[t] = the order key of col[t] (in place: the column's bytes become keys), row[t] = t. */
__global__ static void
order_keys_kernel(unsigned long long *col, int64_t n, uint32_t *row)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) n)
		return;
	unsigned long long b = col[t];

	col[t] = (b >> 63) ? ~b : b | 0x8000000000000000ull;
	row[t] = (uint32_t) t;
}

extern "C" gj_status
gj_gpu_order_along(const gj_points *p, int dim, const gj_gpu_options *opt, uint32_t *perm,
				   char *err, size_t errlen)
{
	int64_t		n = p->n;
	size_t		free_b = 0,
				total_b = 0,
				budget,
				tmp_bytes = 0;
	double	   *col = NULL;
	unsigned long long *keys = NULL,
			   *keys_out = NULL;
	uint32_t   *rows = NULL,
			   *rows_out = NULL;
	void	   *tmp = NULL;
	cudaStream_t stream = NULL;
	sigset_t	old;
	cudaError_t e;
	gj_status	st = GJ_OK;

	err[0] = '\0';
	if (n < 0 || n > GJ_MAX_ROWS || dim < 0 || dim >= p->dims)
		return GJ_ERR_ARG;
	if (n < 2)
	{
		if (n == 1)
			perm[0] = 0;
		return GJ_OK;
	}
	gj_block_async_signals(&old);
	e = cudaMemGetInfo(&free_b, &total_b);
	if (e == cudaSuccess)
		e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	GJ_CUDA_CHECK(err, errlen, e);
	budget = (size_t) (free_b * 0.9);
	if (opt != NULL && opt->memory_limit > 0 && opt->memory_limit < budget)
		budget = opt->memory_limit;
	e = cub::DeviceRadixSort::SortPairs(NULL, tmp_bytes, keys, keys_out, rows, rows_out,
										(int) n, 0, 64, stream);
	if (e == cudaSuccess && (size_t) n * 24 + tmp_bytes > budget)
	{
		snprintf(err, errlen, "sorting %lld rows needs %zu MB of GPU memory, %zu MB are available",
				 (long long) n, ((size_t) n * 24 + tmp_bytes) >> 20, budget >> 20);
		cudaStreamDestroy(stream);
		return GJ_ERR_DEVICE_OOM;
	}

	/* the column, gathered on the host */
	col = (double *) malloc(sizeof(double) * n);
	if (col == NULL)
		st = GJ_ERR_NOMEM;
	for (int64_t i = 0; st == GJ_OK && i < n; i++)
		col[i] = p->x[i * p->dims + dim];
	if (st == GJ_OK)
	{
		if (e == cudaSuccess)
			e = cudaMalloc(&keys, sizeof(unsigned long long) * n);
		if (e == cudaSuccess)
			e = cudaMalloc(&keys_out, sizeof(unsigned long long) * n);
		if (e == cudaSuccess)
			e = cudaMalloc(&rows, sizeof(uint32_t) * n);
		if (e == cudaSuccess)
			e = cudaMalloc(&rows_out, sizeof(uint32_t) * n);
		if (e == cudaSuccess)
			e = cudaMalloc(&tmp, tmp_bytes);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(keys, col, sizeof(double) * n, cudaMemcpyHostToDevice, stream);
		if (e == cudaSuccess)
		{
			order_keys_kernel<<<(unsigned) ((n + GJ_ORDER_BLOCK - 1) / GJ_ORDER_BLOCK),
				GJ_ORDER_BLOCK, 0, stream>>>(keys, n, rows);
			e = cudaGetLastError();
		}
		if (e == cudaSuccess)
			e = cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, keys, keys_out, rows, rows_out,
												(int) n, 0, 64, stream);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(perm, rows_out, sizeof(uint32_t) * n, cudaMemcpyDeviceToHost,
								stream);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(stream);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "sorting the rows: %s", cudaGetErrorName(e));
			st = gj_cuda_status(e);
		}
	}
	if (stream != NULL)
		cudaStreamSynchronize(stream);
	cudaFree(keys);
	cudaFree(keys_out);
	cudaFree(rows);
	cudaFree(rows_out);
	cudaFree(tmp);
	if (stream != NULL)
		cudaStreamDestroy(stream);
	cudaGetLastError();
	free(col);
	return st;
}
