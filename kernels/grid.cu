/*
 * grid.cu
 *		The grid index built on the GPU.
 *
 * The geometry (indexed dimensions, origin, cell widths) comes from the
 * core's gj_grid_plan, so both engines use the same cells.  On the device:
 *	1. cell_ids_kernel: each point's linear cell id (same arithmetic as
 *	   gj_grid_cell_of: (x - origin) / width, truncated and clamped);
 *	2. CUB radix sort of (cell id, row) over only the bits the ids use;
 *	3. flags (first point of a cell) and a CUB inclusive scan give every
 *	   sorted point its cell index, and the cells' ids and starts;
 *	4. the coordinates are gathered into cell order, so that a cell's points
 *	   are contiguous for the join kernel's loads.
 * Temporaries are freed before returning; what stays is gj_dev_grid.
 */
#include <cub/cub.cuh>
#include <string.h>
#include <time.h>

#include "gpu_common.cuh"

/* Layouts: x is n * dims row-major; keys/vals/flags/pcell are n long. */
__global__ static void
cell_ids_kernel(const double *x, int n, gj_grid_params P, int64_t *keys,
				uint32_t *vals)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;
	int64_t		id = 0;

	if (i >= n)
		return;
	for (int k = 0; k < P.nidx; k++)
	{
		double		u = __ddiv_rn(__dsub_rn(x[(int64_t) i * P.dims + P.idx_dim[k]],
											P.origin[k]), P.width[k]);
		int64_t		c = (int64_t) u;

		if (c < 0)
			c = 0;
		if (c >= P.ncell_dim[k])
			c = P.ncell_dim[k] - 1;
		id += c * P.stride[k];
	}
	keys[i] = id;
	vals[i] = (uint32_t) i;
}

/* flags[i] = 1 where a new cell starts in the sorted keys. */
__global__ static void
flags_kernel(const int64_t *keys, int n, uint32_t *flags)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		flags[i] = (i == 0 || keys[i] != keys[i - 1]) ? 1u : 0u;
}

/* From the inclusive scan: 0-based cell of each point, cell ids and starts. */
__global__ static void
cells_kernel(const int64_t *keys, int n, uint32_t *pcell, int64_t *cell_id,
			 uint32_t *cell_start)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;
	uint32_t	c;

	if (i >= n)
		return;
	c = pcell[i] - 1;
	pcell[i] = c;
	if (i == 0 || keys[i] != keys[i - 1])
	{
		cell_id[c] = keys[i];
		cell_start[c] = (uint32_t) i;
	}
}

/* xs[k][d] = x[perm[k]][d], one thread per coordinate. */
__global__ static void
gather_kernel(const double *x, const uint32_t *perm, int64_t total, int dims,
			  double *xs)
{
	int64_t		e = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (e < total)
	{
		int64_t		k = e / dims;
		int			d = (int) (e - k * dims);

		xs[e] = x[(int64_t) perm[k] * dims + d];
	}
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Peak device bytes of gj_gpu_grid_build for n points of dims (an upper bound). */
size_t
gj_gpu_grid_bytes(int64_t n, int dims)
{
	return (size_t) n * (16 * (size_t) dims + 96) + ((size_t) 64 << 20);
}

/* The plan's geometry and forward-prefix table as kernel parameters. */
void
gj_grid_params_fill(gj_grid_params *P, const gj_grid *plan)
{
	memset(P, 0, sizeof(*P));
	P->dims = plan->dims;
	P->nidx = plan->nidx;
	for (int k = 0; k < plan->nidx; k++)
	{
		P->idx_dim[k] = plan->idx_dim[k];
		P->origin[k] = plan->origin[k];
		P->width[k] = plan->width[k];
		P->ncell_dim[k] = plan->ncell_dim[k];
		P->stride[k] = plan->stride[k];
	}
	P->eps2 = plan->eps2;
	P->nprefix = gj_grid_forward_prefixes(plan, P->prefix_off, P->prefix_vec);
}

/* Free what gj_gpu_grid_build left in g; safe on a zeroed or freed g. */
void
gj_gpu_grid_free(gj_dev_grid *g)
{
	cudaFree(g->xs);
	cudaFree(g->perm);
	cudaFree(g->pcell);
	cudaFree(g->cell_id);
	cudaFree(g->cell_start);
	memset(g, 0, sizeof(*g));
}

/* Temporaries of one build, freed on every path. */
typedef struct build_tmp
{
	double	   *x;
	int64_t    *keys_in;
	int64_t    *keys;
	uint32_t   *vals_in;
	uint32_t   *flags;
	void	   *cub_tmp;
} build_tmp;

static void
build_tmp_free(build_tmp *t)
{
	cudaFree(t->x);
	cudaFree(t->keys_in);
	cudaFree(t->keys);
	cudaFree(t->vals_in);
	cudaFree(t->flags);
	cudaFree(t->cub_tmp);
}

static gj_status
build(const gj_points *p, const gj_grid *plan, gj_dev_grid *g,
	  cudaStream_t stream, build_tmp *t, double *upload_ms, double *index_ms,
	  char *err, size_t errlen)
{
	int			n = (int) p->n;
	int			dims = p->dims;
	gj_grid_params P;
	size_t		sort_bytes = 0,
				scan_bytes = 0;
	int			end_bit = 1;
	uint64_t	total = 1;
	uint32_t	last_cell;
	uint32_t	n32 = (uint32_t) n;
	int			blocks = (n + 255) / 256;
	double		t0 = now_ms();

	gj_grid_params_fill(&P, plan);
	for (int k = 0; k < plan->nidx; k++)
		total *= (uint64_t) plan->ncell_dim[k];
	while (end_bit < 64 && (total - 1) >> end_bit != 0)
		end_bit++;

	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&t->x, sizeof(double) * n * dims));
	GJ_CUDA_CHECK(err, errlen, cudaMemcpyAsync(t->x, p->x, sizeof(double) * n * dims,
											   cudaMemcpyHostToDevice, stream));
	GJ_CUDA_CHECK(err, errlen, cudaStreamSynchronize(stream));
	*upload_ms = now_ms() - t0;
	t0 = now_ms();

	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&t->keys_in, sizeof(int64_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&t->keys, sizeof(int64_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&t->vals_in, sizeof(uint32_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&g->perm, sizeof(uint32_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&t->flags, sizeof(uint32_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&g->pcell, sizeof(uint32_t) * n));

	cell_ids_kernel<<<blocks, 256, 0, stream>>>(t->x, n, P, t->keys_in, t->vals_in);
	GJ_CUDA_CHECK_LAUNCH(err, errlen, "cell_ids_kernel");

	/* CUB's two-call protocol: size the temporary storage, then run */
	GJ_CUDA_CHECK(err, errlen, cub::DeviceRadixSort::SortPairs(NULL, sort_bytes,
															   t->keys_in, t->keys, t->vals_in, g->perm, n, 0, end_bit, stream));
	GJ_CUDA_CHECK(err, errlen, cub::DeviceScan::InclusiveSum(NULL, scan_bytes,
															 t->flags, g->pcell, n, stream));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&t->cub_tmp, sort_bytes > scan_bytes ? sort_bytes : scan_bytes));
	GJ_CUDA_CHECK(err, errlen, cub::DeviceRadixSort::SortPairs(t->cub_tmp, sort_bytes,
															   t->keys_in, t->keys, t->vals_in, g->perm, n, 0, end_bit, stream));
	flags_kernel<<<blocks, 256, 0, stream>>>(t->keys, n, t->flags);
	GJ_CUDA_CHECK_LAUNCH(err, errlen, "flags_kernel");
	GJ_CUDA_CHECK(err, errlen, cub::DeviceScan::InclusiveSum(t->cub_tmp, scan_bytes,
															 t->flags, g->pcell, n, stream));
	GJ_CUDA_CHECK(err, errlen, cudaMemcpyAsync(&last_cell, g->pcell + n - 1, sizeof(uint32_t),
											   cudaMemcpyDeviceToHost, stream));
	GJ_CUDA_CHECK(err, errlen, cudaStreamSynchronize(stream));
	g->ncells = last_cell;

	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&g->cell_id, sizeof(int64_t) * g->ncells));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&g->cell_start, sizeof(uint32_t) * (g->ncells + 1)));
	cells_kernel<<<blocks, 256, 0, stream>>>(t->keys, n, g->pcell, g->cell_id, g->cell_start);
	GJ_CUDA_CHECK_LAUNCH(err, errlen, "cells_kernel");
	GJ_CUDA_CHECK(err, errlen, cudaMemcpyAsync(g->cell_start + g->ncells, &n32, sizeof(uint32_t),
											   cudaMemcpyHostToDevice, stream));

	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&g->xs, sizeof(double) * n * dims));
	{
		int64_t		total_coords = (int64_t) n * dims;

		gather_kernel<<<(unsigned) ((total_coords + 255) / 256), 256, 0, stream>>>(
			t->x, g->perm, total_coords, dims, g->xs);
		GJ_CUDA_CHECK_LAUNCH(err, errlen, "gather_kernel");
	}
	GJ_CUDA_CHECK(err, errlen, cudaStreamSynchronize(stream));
	g->n = n;
	*index_ms = now_ms() - t0;
	return GJ_OK;
}

/*
 * Upload p and build the device index for plan into g (zeroed by the
 * caller).  On failure g is freed again.
 */
gj_status
gj_gpu_grid_build(const gj_points *p, const gj_grid *plan, gj_dev_grid *g,
				  cudaStream_t stream, double *upload_ms, double *index_ms,
				  char *err, size_t errlen)
{
	build_tmp	t;
	gj_status	st;

	memset(&t, 0, sizeof(t));
	st = build(p, plan, g, stream, &t, upload_ms, index_ms, err, errlen);
	cudaStreamSynchronize(stream);
	build_tmp_free(&t);
	if (st != GJ_OK)
		gj_gpu_grid_free(g);
	return st;
}
