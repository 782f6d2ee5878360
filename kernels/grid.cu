/*
 * grid.cu
 *		The grid index built on the GPU.
 *
 * The coordinates are uploaded once; their per-dimension statistics are
 * reduced on the device and the core's gj_grid_plan_from_stats turns them
 * into the geometry (indexed dimensions, origin, cell widths), the same
 * rule the CPU engine uses.  Then, on the device:
 *	1. cell_ids_kernel: each point's linear cell id (same arithmetic as
 *	   gj_grid_cell_of: (x - origin) / width, truncated and clamped; the
 *	   kNN grids' Z-order ids interleave the cell coordinates' bits);
 *	2. CUB radix sort of (cell id, row) over only the bits the ids use;
 *	3. flags (first point of a cell) and a CUB inclusive scan give every
 *	   sorted point its cell index, and the cells' ids and starts;
 *	4. the coordinates (and the ids, when given) are gathered into cell
 *	   order, so that a cell's points are contiguous for the kernels' loads.
 * Temporaries are freed before returning; what stays is gj_dev_grid.
 */
#include <cub/cub.cuh>
#include <string.h>
#include <time.h>

#include "gpu_common.cuh"

#define GJ_STATS_BLOCK 256
#define GJ_STATS_BLOCKS 128

/* Layouts: x is n * dims row-major; keys/vals/flags/pcell are n long. */
__global__ static void
cell_ids_kernel(const double *x, int n, gj_grid_params P, int64_t *keys,
				uint32_t *vals)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;
	int64_t		id = 0;
	int64_t		c[GJ_MAX_INDEXED_DIMS];

	if (i >= n)
		return;
	for (int k = 0; k < P.nidx; k++)
	{
		double		u = __ddiv_rn(__dsub_rn(x[(int64_t) i * P.dims + P.idx_dim[k]],
											P.origin[k]), P.width[k]);

		c[k] = (int64_t) u;
		if (c[k] < 0)
			c[k] = 0;
		if (c[k] >= P.ncell_dim[k])
			c[k] = P.ncell_dim[k] - 1;
	}
	if (P.morton_bits == 0)
		for (int k = 0; k < P.nidx; k++)
			id += c[k] * P.stride[k];
	else
		for (int b = P.morton_bits - 1; b >= 0; b--)
			for (int k = 0; k < P.nidx; k++)
				id = (id << 1) | ((c[k] >> b) & 1);
	keys[i] = id;
	vals[i] = (uint32_t) i;
}

/*
 * Per-block partial statistics of dimension blockIdx.y: min, max, sum, sum
 * of squares over a grid-stride subset of the points; partial is
 * [dims][gridDim.x][4].  The host reduces the partials.
 */
__global__ static void
stats_kernel(const double *x, int n, int dims, double *partial)
{
	__shared__ double sh[4][GJ_STATS_BLOCK];
	int			d = blockIdx.y;
	double		mn = INFINITY,
				mx = -INFINITY,
				s = 0.0,
				s2 = 0.0;

	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
	{
		double		v = x[(int64_t) i * dims + d];

		mn = fmin(mn, v);
		mx = fmax(mx, v);
		s += v;
		s2 += v * v;
	}
	sh[0][threadIdx.x] = mn;
	sh[1][threadIdx.x] = mx;
	sh[2][threadIdx.x] = s;
	sh[3][threadIdx.x] = s2;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2)
	{
		if (threadIdx.x < w)
		{
			sh[0][threadIdx.x] = fmin(sh[0][threadIdx.x], sh[0][threadIdx.x + w]);
			sh[1][threadIdx.x] = fmax(sh[1][threadIdx.x], sh[1][threadIdx.x + w]);
			sh[2][threadIdx.x] += sh[2][threadIdx.x + w];
			sh[3][threadIdx.x] += sh[3][threadIdx.x + w];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0)
		for (int k = 0; k < 4; k++)
			partial[((int64_t) d * gridDim.x + blockIdx.x) * 4 + k] = sh[k][0];
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

/* ids_sorted[k] = ids[perm[k]]. */
__global__ static void
gather_ids_kernel(const int64_t *ids, const uint32_t *perm, int64_t n,
				  int64_t *ids_sorted)
{
	int64_t		k = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (k < n)
		ids_sorted[k] = ids[perm[k]];
}

/*
 * xs = the rows of x (n x dims) in the order perm, and ids_sorted the same
 * of ids, on stream s (all on the device): the kNN engine's block order.
 */
cudaError_t
gj_gpu_gather_rows(const double *x, const int64_t *ids, const uint32_t *perm, int64_t n,
				   int dims, double *xs, int64_t *ids_sorted, cudaStream_t s)
{
	int64_t		total = n * dims;

	if (n <= 0)
		return cudaSuccess;
	gather_kernel<<<(unsigned) ((total + 255) / 256), 256, 0, s>>>(x, perm, total, dims, xs);
	gather_ids_kernel<<<(unsigned) ((n + 255) / 256), 256, 0, s>>>(ids, perm, n, ids_sorted);
	return cudaGetLastError();
}

/*
 * Peak device bytes of gj_gpu_grid_build for n points of dims, ids
 * included (an upper bound).
 */
size_t
gj_gpu_grid_bytes(int64_t n, int dims)
{
	return (size_t) n * (16 * (size_t) dims + 112) + ((size_t) 64 << 20);
}

/* A device stop word (0) and a stream of its own to raise it on. */
gj_status
gj_gpu_stop_alloc(int **dstop, cudaStream_t *s, char *err, size_t errlen)
{
	GJ_CUDA_CHECK(err, errlen, cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(dstop, sizeof(int)));
	GJ_CUDA_CHECK(err, errlen, cudaMemsetAsync(*dstop, 0, sizeof(int), *s));
	GJ_CUDA_CHECK(err, errlen, cudaStreamSynchronize(*s));
	return GJ_OK;
}

/*
 * Raise the stop word: a 4-byte copy on the stop stream, which the copy
 * engine runs while kernels hold every multiprocessor.  Errors are ignored:
 * the caller is tearing down anyway.
 */
void
gj_gpu_stop_raise(int *dstop, cudaStream_t s)
{
	static const int one = 1;

	if (dstop != NULL && s != NULL)
		cudaMemcpyAsync(dstop, &one, sizeof(int), cudaMemcpyHostToDevice, s);
	cudaGetLastError();
}

gj_status
gj_gpu_wait(cudaStream_t stream, int *dstop, cudaStream_t stop_stream,
			char *err, size_t errlen)
{
	cudaError_t e;

	while ((e = cudaStreamQuery(stream)) == cudaErrorNotReady)
	{
		struct timespec ts = {0, 100000};

		if (gj_interrupted())
		{
			gj_gpu_stop_raise(dstop, stop_stream);
			cudaStreamSynchronize(stream);
			cudaGetLastError();
			snprintf(err, errlen, "canceled");
			return GJ_ERR_CANCELED;
		}
		nanosleep(&ts, NULL);
	}
	GJ_CUDA_CHECK(err, errlen, e);
	return GJ_OK;
}

void
gj_gpu_stop_free(int *dstop, cudaStream_t s)
{
	if (s != NULL)
	{
		cudaStreamSynchronize(s);
		cudaStreamDestroy(s);
	}
	cudaFree(dstop);
	cudaGetLastError();
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
	P->morton_bits = plan->morton_bits;
	P->nprefix = gj_grid_forward_prefixes(plan, P->prefix_off, P->prefix_vec);
}

/* Free what gj_gpu_grid_build left in g; safe on a zeroed or freed g. */
void
gj_gpu_grid_free(gj_dev_grid *g)
{
	cudaFree(g->xs);
	cudaFree(g->ids);
	cudaFree(g->perm);
	cudaFree(g->pcell);
	cudaFree(g->cell_id);
	cudaFree(g->cell_start);
	memset(g, 0, sizeof(*g));
}

/* Temporaries of one build, freed on every path. */
typedef struct build_tmp
{
	int64_t    *keys_in;
	int64_t    *keys;
	uint32_t   *vals_in;
	uint32_t   *flags;
	void	   *cub_tmp;
} build_tmp;

static void
build_tmp_free(build_tmp *t)
{
	cudaFree(t->keys_in);
	cudaFree(t->keys);
	cudaFree(t->vals_in);
	cudaFree(t->flags);
	cudaFree(t->cub_tmp);
}

/*
 * Copy p's coordinates to the device (*dx, freed by the caller) and reduce
 * their per-dimension statistics there, for gj_grid_plan_from_stats.
 */
gj_status
gj_gpu_upload_stats(const gj_points *p, double **dx, gj_dim_stats *st,
					cudaStream_t stream, double *upload_ms, char *err,
					size_t errlen)
{
	int			n = (int) p->n;
	int			dims = p->dims;
	double	   *dpart = NULL;
	double	   *hpart;
	size_t		part_n = (size_t) dims * GJ_STATS_BLOCKS * 4;
	double		t0 = gj_now_ms();
	cudaError_t e;

	GJ_CUDA_CHECK(err, errlen, cudaMalloc(dx, sizeof(double) * n * dims));
	/* staged by the host's copiers (pinned.cu) past 64 MB; waited for */
	GJ_CUDA_CHECK(err, errlen, gj_upload_staged(*dx, p->x, sizeof(double) * n * dims, stream));
	hpart = (double *) malloc(sizeof(double) * part_n);
	if (hpart == NULL)
		return GJ_ERR_NOMEM;
	e = cudaMalloc(&dpart, sizeof(double) * part_n);
	if (e == cudaSuccess)
	{
		stats_kernel<<<dim3(GJ_STATS_BLOCKS, dims), GJ_STATS_BLOCK, 0, stream>>>(*dx, n, dims, dpart);
		e = cudaGetLastError();
	}
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(hpart, dpart, sizeof(double) * part_n, cudaMemcpyDeviceToHost, stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(stream);
	cudaFree(dpart);
	if (e != cudaSuccess)
	{
		free(hpart);
		snprintf(err, errlen, "device statistics: %s", cudaGetErrorName(e));
		cudaGetLastError();
		return gj_cuda_status(e);
	}
	for (int d = 0; d < dims; d++)
	{
		st[d].min = INFINITY;
		st[d].max = -INFINITY;
		st[d].sum = 0.0;
		st[d].sumsq = 0.0;
		for (int b = 0; b < GJ_STATS_BLOCKS; b++)
		{
			const double *q = hpart + ((size_t) d * GJ_STATS_BLOCKS + b) * 4;

			st[d].min = q[0] < st[d].min ? q[0] : st[d].min;
			st[d].max = q[1] > st[d].max ? q[1] : st[d].max;
			st[d].sum += q[2];
			st[d].sumsq += q[3];
		}
	}
	free(hpart);
	*upload_ms = gj_now_ms() - t0;
	return GJ_OK;
}

static gj_status
build(const double *dx, const int64_t *dids, int64_t npoints, int dims,
	  const gj_grid *plan, gj_dev_grid *g, cudaStream_t stream, build_tmp *t,
	  double *index_ms, char *err, size_t errlen)
{
	int			n = (int) npoints;
	gj_grid_params P;
	size_t		sort_bytes = 0,
				scan_bytes = 0;
	int			end_bit = 1;
	uint64_t	total = 1;
	uint32_t	last_cell;
	uint32_t	n32 = (uint32_t) n;
	int			blocks = (n + 255) / 256;
	double		t0 = gj_now_ms();

	gj_grid_params_fill(&P, plan);
	if (plan->morton_bits > 0)
		end_bit = plan->morton_bits * plan->nidx;
	else
	{
		for (int k = 0; k < plan->nidx; k++)
			total *= (uint64_t) plan->ncell_dim[k];
		while (end_bit < 64 && (total - 1) >> end_bit != 0)
			end_bit++;
	}
	if (end_bit < 1)
		end_bit = 1;

	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&t->keys_in, sizeof(int64_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&t->keys, sizeof(int64_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&t->vals_in, sizeof(uint32_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&g->perm, sizeof(uint32_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&t->flags, sizeof(uint32_t) * n));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&g->pcell, sizeof(uint32_t) * n));

	cell_ids_kernel<<<blocks, 256, 0, stream>>>(dx, n, P, t->keys_in, t->vals_in);
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
			dx, g->perm, total_coords, dims, g->xs);
		GJ_CUDA_CHECK_LAUNCH(err, errlen, "gather_kernel");
	}
	if (dids != NULL)
	{
		GJ_CUDA_CHECK(err, errlen, cudaMalloc(&g->ids, sizeof(int64_t) * n));
		gather_ids_kernel<<<blocks, 256, 0, stream>>>(dids, g->perm, n, g->ids);
		GJ_CUDA_CHECK_LAUNCH(err, errlen, "gather_ids_kernel");
	}
	GJ_CUDA_CHECK(err, errlen, cudaStreamSynchronize(stream));
	g->n = n;
	*index_ms = gj_now_ms() - t0;
	return GJ_OK;
}

/*
 * Build the device index for plan from the uploaded coordinates dx (n rows
 * of dims) and, when dids is not NULL, ids (n, gathered into g->ids) into g
 * (zeroed by the caller).  On failure g is freed again.
 */
gj_status
gj_gpu_grid_build(const double *dx, const int64_t *dids, int64_t n, int dims,
				  const gj_grid *plan, gj_dev_grid *g, cudaStream_t stream,
				  double *index_ms, char *err, size_t errlen)
{
	build_tmp	t;
	gj_status	st;

	memset(&t, 0, sizeof(t));
	st = build(dx, dids, n, dims, plan, g, stream, &t, index_ms, err, errlen);
	cudaStreamSynchronize(stream);
	build_tmp_free(&t);
	if (st != GJ_OK)
		gj_gpu_grid_free(g);
	return st;
}
