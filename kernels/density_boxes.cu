/*
 * density_boxes.cu
 *		Cutting the device grid's dense wide cells into boxes of side just
 *		under eps / sqrt(d), for DBSCAN (why: src/core/density_boxes.h; the
 *		device form: density_boxes.cuh).
 *
 * Each row of a cut cell gets a key: its cell in the high 32 bits and a
 * hash of its box on a global lattice of that side in the low 32; a stable
 * CUB radix sort of the keys reorders the rows within their cells (a
 * cell's positions do not move, so cell_start and pcell stay), and the
 * grid's coordinates, ids and permutation are gathered into that order.
 * Runs of equal keys in cut cells are the boxes (a flag and a scan number
 * them); one warp a box finds its bounds and whether its diagonal passes
 * the shared rule.  Two boxes whose hashes collide become one box with
 * wider bounds, which at worst is not compact: slower, still exact.  No
 * cell is cut (and nothing is sorted) unless a dense non-compact cell
 * exists; the check costs one small kernel and one word read back.
 */
#include <cub/cub.cuh>
#include <math.h>

#include "density_boxes.cuh"

#define BOX_BLOCK 256

/* Does any cell need cutting? */
__global__ static void
any_cut_kernel(gj_dev_grid G, const uint8_t *compact, int *any)
{
	uint64_t	c = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (c < (uint64_t) G.ncells && gj_dev_cell_cut(G, compact, (int64_t) c))
		*any = 1;
}

__global__ static void
box_key_kernel(gj_dev_grid G, int dims, double side, const uint8_t *compact,
			   uint64_t *keys, uint32_t *vals)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) G.n)
		return;
	uint32_t	c = G.pcell[t];
	uint64_t	key = (uint64_t) c << 32;

	if (gj_dev_cell_cut(G, compact, c))
		key |= (uint64_t) gj_box_hash(G.xs + t * dims, dims, side);
	keys[t] = key;
	vals[t] = (uint32_t) t;
}

__global__ static void
gather_kernel(int64_t n, int dims, const uint32_t *order, const double *xs,
			  const int64_t *ids, const uint32_t *perm, double *xs2, int64_t *ids2,
			  uint32_t *perm2)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) n)
		return;
	uint32_t	o = order[t];

	for (int d = 0; d < dims; d++)
		xs2[t * dims + d] = xs[(int64_t) o * dims + d];
	ids2[t] = ids[o];
	perm2[t] = perm[o];
}

/* 1 where a box starts: the first row of a cut cell, or a new key in it. */
__global__ static void
box_flags_kernel(gj_dev_grid G, const uint8_t *compact, const uint64_t *keys,
				 uint32_t *flags)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) G.n)
		return;
	uint32_t	c = G.pcell[t];

	flags[t] = gj_dev_cell_cut(G, compact, c) &&
		(t == G.cell_start[c] || keys[t] != keys[t - 1]);
}

__global__ static void
box_rows_kernel(gj_dev_grid G, const uint8_t *compact, const uint32_t *flags,
				const uint32_t *incl, gj_dev_boxes B)
{
	uint64_t	t = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x;

	if (t >= (uint64_t) G.n)
		return;
	uint32_t	c = G.pcell[t];

	if (!gj_dev_cell_cut(G, compact, c))
	{
		B.box_of_row[t] = -1;
		return;
	}
	int32_t		b = (int32_t) incl[t] - 1;

	B.box_of_row[t] = b;
	if (flags[t])
		B.start[b] = (uint32_t) t;
	if (t + 1 == G.cell_start[c + 1] || flags[t + 1])
		B.end[b] = (uint32_t) t + 1;
}

/*
 * One warp a box (a box may hold most of a cell): its bounds by a strided
 * scan and shuffles, and whether its diagonal passes the shared rule,
 * summed dimension by dimension in order as gj_dev_sqdist sums.
 */
__global__ static void
box_bounds_kernel(gj_dev_grid G, int dims, double eps2, gj_dev_boxes B)
{
	uint64_t	b = (blockIdx.x * (uint64_t) blockDim.x + threadIdx.x) / 32;
	int			lane = threadIdx.x & 31;
	double		s = 0.0;

	if (b >= (uint64_t) B.nbox)
		return;
	uint32_t	r0 = B.start[b],
				r1 = B.end[b];

	for (int d = 0; d < dims; d++)
	{
		double		lo,
					hi;

		gj_dev_warp_bounds(G.xs, r0, r1, dims, d, &lo, &hi);
		if (lane == 0)
		{
			double		t = __dsub_rn(hi, lo);

			B.lo[b * dims + d] = lo;
			B.hi[b * dims + d] = hi;
			s = __dadd_rn(s, __dmul_rn(t, t));
		}
	}
	if (lane == 0)
		B.compact[b] = s <= eps2;
}

#define BOX_TRY(call) \
	do { \
		cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) \
		{ \
			snprintf(err, errlen, "boxes: %s", cudaGetErrorName(e_)); \
			cudaGetLastError(); \
			st = gj_cuda_status(e_); \
			goto done; \
		} \
	} while (0)

gj_status
gj_gpu_boxes_build(gj_dev_grid *G, const gj_grid_params *P, const uint8_t *d_compact,
				   size_t room, gj_dev_boxes *B, cudaStream_t stream, char *err,
				   size_t errlen)
{
	int64_t		n = G->n;
	int			dims = P->dims;
	unsigned	blocks = (unsigned) ((n + BOX_BLOCK - 1) / BOX_BLOCK);
	unsigned	cblocks = (unsigned) ((G->ncells + BOX_BLOCK - 1) / BOX_BLOCK);
	double		side = sqrt(P->eps2 / dims) * 0.99;
	int		   *d_any = NULL;
	int			any = 0;
	uint64_t   *keys_in = NULL,
			   *keys = NULL;
	uint32_t   *vals_in = NULL,
			   *order = NULL,
			   *flags = NULL,
			   *incl = NULL,
			   *perm2 = NULL,
				last = 0;
	double	   *xs2 = NULL;
	int64_t    *ids2 = NULL;
	void	   *tmp = NULL;
	size_t		sort_bytes = 0,
				scan_bytes = 0;
	int			end_bit = 33;
	gj_status	st = GJ_OK;

	memset(B, 0, sizeof(*B));
	B->dims = dims;
	if (dims > GJ_BOX_MAX_DIMS || n == 0 || !(side > 0.0))
		return GJ_OK;
	BOX_TRY(cudaMalloc(&d_any, sizeof(int)));
	BOX_TRY(cudaMemsetAsync(d_any, 0, sizeof(int), stream));
	any_cut_kernel<<<cblocks, BOX_BLOCK, 0, stream>>>(*G, d_compact, d_any);
	BOX_TRY(cudaMemcpyAsync(&any, d_any, sizeof(int), cudaMemcpyDeviceToHost, stream));
	BOX_TRY(cudaStreamSynchronize(stream));
	if (!any)
		goto done;

	/*
	 * at the peak: keys in and out, values in and out, CUB's scratch (about
	 * the keys again), the gathered coordinates, ids and permutation; then
	 * the boxes, at most one a row
	 */
	if ((size_t) n * (8 + 8 + 4 + 4 + 12 + 8 * dims + 8 + 4) > room ||
		(size_t) n * (4 + 4 + 4 + 4 + 1 + 4 + 16 * dims) > room)
	{
		snprintf(err, errlen, "boxes: no room within the GPU memory share");
		st = GJ_ERR_DEVICE_OOM;
		goto done;
	}

	/* keys, and the stable sort that puts each cut cell's rows box by box */
	while (end_bit < 64 && ((uint64_t) G->ncells >> (end_bit - 32)) != 0)
		end_bit++;
	BOX_TRY(cudaMalloc(&keys_in, sizeof(uint64_t) * n));
	BOX_TRY(cudaMalloc(&keys, sizeof(uint64_t) * n));
	BOX_TRY(cudaMalloc(&vals_in, sizeof(uint32_t) * n));
	BOX_TRY(cudaMalloc(&order, sizeof(uint32_t) * n));
	box_key_kernel<<<blocks, BOX_BLOCK, 0, stream>>>(*G, dims, side, d_compact, keys_in, vals_in);
	BOX_TRY(cub::DeviceRadixSort::SortPairs(NULL, sort_bytes, keys_in, keys, vals_in, order,
											n, 0, end_bit, stream));
	BOX_TRY(cub::DeviceScan::InclusiveSum(NULL, scan_bytes, flags, incl, n, stream));
	BOX_TRY(cudaMalloc(&tmp, sort_bytes > scan_bytes ? sort_bytes : scan_bytes));
	BOX_TRY(cub::DeviceRadixSort::SortPairs(tmp, sort_bytes, keys_in, keys, vals_in, order,
											n, 0, end_bit, stream));
	cudaFree(keys_in);
	keys_in = NULL;
	cudaFree(vals_in);
	vals_in = NULL;

	/* the grid's rows in that order (cells keep their positions) */
	BOX_TRY(cudaMalloc(&xs2, sizeof(double) * dims * n));
	BOX_TRY(cudaMalloc(&ids2, sizeof(int64_t) * n));
	BOX_TRY(cudaMalloc(&perm2, sizeof(uint32_t) * n));
	gather_kernel<<<blocks, BOX_BLOCK, 0, stream>>>(n, dims, order, G->xs, G->ids, G->perm,
													 xs2, ids2, perm2);
	BOX_TRY(cudaGetLastError());
	BOX_TRY(cudaStreamSynchronize(stream));
	cudaFree(G->xs);
	cudaFree(G->ids);
	cudaFree(G->perm);
	G->xs = xs2;
	G->ids = ids2;
	G->perm = perm2;
	xs2 = NULL;
	ids2 = NULL;
	perm2 = NULL;

	/* number the boxes */
	BOX_TRY(cudaMalloc(&flags, sizeof(uint32_t) * n));
	BOX_TRY(cudaMalloc(&incl, sizeof(uint32_t) * n));
	box_flags_kernel<<<blocks, BOX_BLOCK, 0, stream>>>(*G, d_compact, keys, flags);
	BOX_TRY(cub::DeviceScan::InclusiveSum(tmp, scan_bytes, flags, incl, n, stream));
	BOX_TRY(cudaMemcpyAsync(&last, incl + n - 1, sizeof(uint32_t), cudaMemcpyDeviceToHost, stream));
	BOX_TRY(cudaStreamSynchronize(stream));
	B->nbox = last;
	if (B->nbox == 0)
		goto done;
	BOX_TRY(cudaMalloc(&B->box_of_row, sizeof(int32_t) * n));
	BOX_TRY(cudaMalloc(&B->start, sizeof(uint32_t) * B->nbox));
	BOX_TRY(cudaMalloc(&B->end, sizeof(uint32_t) * B->nbox));
	BOX_TRY(cudaMalloc(&B->compact, B->nbox));
	BOX_TRY(cudaMalloc(&B->core, sizeof(int32_t) * B->nbox));
	BOX_TRY(cudaMalloc(&B->lo, sizeof(double) * dims * B->nbox));
	BOX_TRY(cudaMalloc(&B->hi, sizeof(double) * dims * B->nbox));
	box_rows_kernel<<<blocks, BOX_BLOCK, 0, stream>>>(*G, d_compact, flags, incl, *B);
	box_bounds_kernel<<<(unsigned) ((B->nbox * 32 + BOX_BLOCK - 1) / BOX_BLOCK), BOX_BLOCK, 0,
		stream>>>(*G, dims, P->eps2, *B);
	BOX_TRY(cudaGetLastError());

done:
	cudaFree(d_any);
	cudaFree(keys_in);
	cudaFree(keys);
	cudaFree(vals_in);
	cudaFree(order);
	cudaFree(flags);
	cudaFree(incl);
	cudaFree(tmp);
	cudaFree(xs2);
	cudaFree(ids2);
	cudaFree(perm2);
	if (st != GJ_OK)
	{
		gj_gpu_boxes_free(B);
		B->dims = dims;
	}
	return st;
}

void
gj_gpu_boxes_free(gj_dev_boxes *B)
{
	cudaFree(B->box_of_row);
	cudaFree(B->start);
	cudaFree(B->end);
	cudaFree(B->compact);
	cudaFree(B->core);
	cudaFree(B->lo);
	cudaFree(B->hi);
	memset(B, 0, sizeof(*B));
}
