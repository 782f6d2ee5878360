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
#include "../src/core/block_key.h"

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

/* --- the block order (block_key.h), for the kNN self join's device gather --- */

#define GJ_BLOCK_CUT_BYTES ((size_t) 2 << 20)	/* m x ncut doubles: 1.6 MB at most (m = 3) */

typedef struct block_key_dims
{
	int			d[GJ_BLOCK_KEY_DIMS];
} block_key_dims;

/* keys[t] = the block key of row t, rows[t] = t. */
__global__ static void
block_keys_kernel(const double *x, int64_t n, int dims, int m, int bits, block_key_dims kd,
				  const double *cut, unsigned long long *keys, uint32_t *rows)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) n)
		return;
	keys[t] = (unsigned long long) gj_block_key(x + t * dims, m, bits, kd.d, cut);
	rows[t] = (uint32_t) t;
}

static size_t
align256(size_t b)
{
	return (b + 255) & ~(size_t) 255;
}

/* Scratch for gj_gpu_block_perm: two key arrays, the rows, the cuts and CUB's. */
size_t
gj_gpu_block_perm_bytes(int64_t n)
{
	size_t		cub_bytes = 0;

	if (cub::DeviceRadixSort::SortPairs(NULL, cub_bytes, (unsigned long long *) NULL,
										(unsigned long long *) NULL, (uint32_t *) NULL,
										(uint32_t *) NULL, (int) n, 0, 62) != cudaSuccess)
	{
		cudaGetLastError();
		return (size_t) -1;
	}
	return 2 * align256(sizeof(unsigned long long) * n) + align256(sizeof(uint32_t) * n) +
		GJ_BLOCK_CUT_BYTES + align256(cub_bytes);
}

/*
 * The block order on the device: the same keys (block_key.h) and, like
 * gj_sort_by_key, a stable radix sort over the key's m x bits bits, so
 * perm is gj_block_plan_perm's (1M x 128: the host's keys and sort took
 * 40-80 ms of the order's time on 16 cores).  tmp holds
 * gj_gpu_block_perm_bytes(n).
 */
cudaError_t
gj_gpu_block_perm(const double *x, int64_t n, int dims, const gj_block_plan *plan,
				  uint32_t *perm, void *tmp, cudaStream_t stream)
{
	char	   *p = (char *) tmp;
	unsigned long long *keys = (unsigned long long *) p,
			   *keys_out = (unsigned long long *) (p + align256(sizeof(unsigned long long) * n));
	uint32_t   *rows = (uint32_t *) (p + 2 * align256(sizeof(unsigned long long) * n));
	double	   *cut = (double *) ((char *) rows + align256(sizeof(uint32_t) * n));
	void	   *cub_tmp = (char *) cut + GJ_BLOCK_CUT_BYTES;
	size_t		ncut = ((size_t) 1 << plan->bits) - 1,
				cut_bytes = sizeof(double) * ncut * plan->m,
				cub_bytes = 0;
	block_key_dims kd;
	cudaError_t e;

	if (plan->m < 1 || plan->m > GJ_BLOCK_KEY_DIMS || cut_bytes > GJ_BLOCK_CUT_BYTES ||
		plan->m * plan->bits > 62)
		return cudaErrorInvalidValue;
	memset(&kd, 0, sizeof(kd));
	for (int j = 0; j < plan->m; j++)
		kd.d[j] = plan->dim[j];
	e = cub::DeviceRadixSort::SortPairs(NULL, cub_bytes, keys, keys_out, rows, perm, (int) n, 0,
										plan->m * plan->bits, stream);
	if (e == cudaSuccess && (char *) cub_tmp + align256(cub_bytes) >
		(char *) tmp + gj_gpu_block_perm_bytes(n))
		e = cudaErrorInvalidValue;	/* not what the 62-bit sort was sized for */
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(cut, plan->cut, cut_bytes, cudaMemcpyHostToDevice, stream);
	if (e == cudaSuccess)
	{
		block_keys_kernel<<<(unsigned) ((n + GJ_ORDER_BLOCK - 1) / GJ_ORDER_BLOCK), GJ_ORDER_BLOCK,
			0, stream>>>(x, n, dims, plan->m, plan->bits, kd, cut, keys, rows);
		e = cudaGetLastError();
	}
	if (e == cudaSuccess)
		e = cub::DeviceRadixSort::SortPairs(cub_tmp, cub_bytes, keys, keys_out, rows, perm, (int) n,
											0, plan->m * plan->bits, stream);
	return e;
}

extern "C" gj_status
gj_gpu_block_order(const gj_points *p, const gj_block_plan *plan, uint32_t *perm, char *err,
				   size_t errlen)
{
	int64_t		n = p->n;
	size_t		xb = sizeof(double) * p->dims * (size_t) n,
				pb = sizeof(uint32_t) * (size_t) n,
				sb = gj_gpu_block_perm_bytes(n);
	char	   *d = NULL;
	cudaStream_t stream = NULL;
	sigset_t	old;
	cudaError_t e;

	err[0] = '\0';
	if (n < 1 || plan->m < 1 || sb == (size_t) -1)
		return GJ_ERR_ARG;
	gj_block_async_signals(&old);
	e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e == cudaSuccess)
		e = cudaMalloc(&d, align256(xb + pb) + sb);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(d, p->x, xb, cudaMemcpyHostToDevice, stream);
	if (e == cudaSuccess)
		e = gj_gpu_block_perm((const double *) d, n, p->dims, plan, (uint32_t *) (d + xb),
							  d + align256(xb + pb), stream);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(perm, d + xb, pb, cudaMemcpyDeviceToHost, stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(stream);
	if (e != cudaSuccess)
		snprintf(err, errlen, "the block order on the device: %s", cudaGetErrorName(e));
	if (stream != NULL)
	{
		cudaStreamSynchronize(stream);
		cudaStreamDestroy(stream);
	}
	cudaFree(d);
	cudaGetLastError();
	return e == cudaSuccess ? GJ_OK : gj_cuda_status(e);
}
