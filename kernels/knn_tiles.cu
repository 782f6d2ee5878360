/*
 * knn_tiles.cu
 *		The GPU kNN join's brute force for many dimensions: the tensor-core
 *		filter of tile_math.cuh, each query's own k-th distance as the
 *		threshold, the float64 rule and the k buffer for what it keeps.
 *
 * A CTA holds 128 queries of a batch and sweeps every block of 128
 * references.  For each block it forms the TF32 products of the two
 * tiles, and keeps reference j for query i when the filter cannot rule out
 * S(i, j) <= tau_i, tau_i being the query's k-th squared distance so far
 * (+inf until it holds k): the constant of tile_math.cuh at that
 * threshold, from the query's own norm bound and the block's.  The kept
 * references of each query (a list in shared memory) are then tested by
 * the float64 rule in column order, stopping once past tau_i, and offered
 * to the query's k buffer (knn_search.h, the CPU engine's, in global
 * memory as the other GPU kNN kernels keep it), which lowers tau_i.  So
 * the first block passes everything and later ones pass about k / rows
 * seen of their rows (the k-th distance falls fast), and the answer is
 * exactly the CPU engine's: the (distance, id) order, ties included,
 * decided by the same rule and the same buffer.
 *
 * The references stay on the device whole (one partition); the queries of
 * a batch get their filter rows (prep_kernel) just before the sweep.  The
 * stop word is read every 8 blocks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tile_math.cuh"
#include "../src/core/knn_search.h"

#define KT_SMEM (2 * TILE * TSTRIDE * sizeof(float) + TILE * TILE + TILE * (sizeof(int) + sizeof(float)))

typedef struct knn_tiles_params
{
	const double *rx;			/* references, float64, nref x dims */
	const int64_t *rid;
	const float *rf;			/* their filter rows, nref x dp */
	const float *rh;
	const double *rblockr;		/* per block of references: the largest R */
	int64_t		nref;
	const double *qx;			/* the batch's queries, float64 */
	const float *qf;
	const float *qh;
	const double *qr;			/* per query: its R */
	int64_t		nq;
	int			dims;
	int			dp;
	int			k;
	int			heap;
	int64_t		self0;			/* queries are references self0.. (self join), or -1 */
	double	   *bd;				/* k buffers, entry e of query t at e * nq + t */
	int64_t    *bid;
	int32_t    *bn;
	int32_t    *btop;
	const int  *stop;
} knn_tiles_params;

__global__ static void __launch_bounds__(TTHREADS)
knn_tiles_kernel(knn_tiles_params P)
{
	extern __shared__ __align__(16) unsigned char kt_smem[];
	float	   *sa = (float *) kt_smem;
	float	   *sb = sa + TILE * TSTRIDE;
	float	   *hqc = sb + TILE * TSTRIDE;	/* per query row: h_i - c_i */
	int		   *nlist = (int *) (hqc + TILE);
	uint8_t    *list = (uint8_t *) (nlist + TILE);	/* TILE x TILE */
	__shared__ int stopped;
	int64_t		q0 = (int64_t) blockIdx.x * TILE;
	int			warp = threadIdx.x >> 5,
				lane = threadIdx.x & 31;
	int			g = lane >> 2,
				t = lane & 3;
	int			wm = warp >> 2,
				wn = warp & 3;
	int			one_chunk = P.dp <= TK;
	int64_t		nrb = (P.nref + TILE - 1) / TILE;
	int64_t		qi = q0 + threadIdx.x;	/* this thread's query (threads < TILE) */
	int			mine = threadIdx.x < TILE && qi < P.nq;
	gj_kbuf		kb;
	double		tau = INFINITY;

	if (mine)
		gj_kb_init(&kb, P.bd + qi, P.bid + qi, P.nq, P.k, P.heap);
	if (threadIdx.x < TILE)
		nlist[threadIdx.x] = 0;

	for (int64_t rb = 0; rb < nrb; rb++)
	{
		int64_t		r0 = rb * TILE;
		float		acc[4][4][4];
		float		hcol[8],
					hrow[8];

		if ((rb & 7) == 0)
		{
			if (threadIdx.x == 0)
				stopped = gj_dev_stopped(P.stop);
			__syncthreads();
			if (stopped)
				return;			/* the batch is discarded */
		}
		if (threadIdx.x < TILE)
		{
			float		c = qi < P.nq ?
				filter_constant(filter_s0(tau, P.dims), P.dp, P.qr[qi], P.rblockr[rb]) : 0.0f;

			/* +inf: everything passes; no query: nothing */
			hqc[threadIdx.x] = qi >= P.nq ? INFINITY : isinf(c) ? -INFINITY : P.qh[qi] - c;
		}
		for (int kk = 0; kk < 8; kk++)
		{
			int64_t		j = r0 + ACC_COL(wn, kk >> 1, t, kk & 1);

			hcol[kk] = j < P.nref ? P.rh[j] : INFINITY;
		}
		for (int mi = 0; mi < 4; mi++)
			for (int ni = 0; ni < 4; ni++)
				for (int e = 0; e < 4; e++)
					acc[mi][ni][e] = 0.0f;
		for (int k0 = 0; k0 < P.dp; k0 += TK)
		{
			int			w = P.dp - k0 < TK ? P.dp - k0 : TK;

			if (!(one_chunk && rb > 0))
				load_chunk(P.qf, P.nq, P.dp, q0, k0, w, sa);
			load_chunk(P.rf, P.nref, P.dp, r0, k0, w, sb);
			__syncthreads();
			tile_products(sa, sb, w, wm, wn, g, t, acc);
			__syncthreads();
		}
		for (int kk = 0; kk < 8; kk++)
			hrow[kk] = hqc[ACC_ROW(wm, kk >> 1, g, (kk & 1) * 2)];

		/*
		 * keep reference col for query row when G >= (h_i - c_i) + h_j:
		 * the 64 tests as bits, then the kept ones
		 */
		{
			uint32_t	keep[2];
			int			row,
						col;

			tile_keep_bits(acc, hrow, hcol, keep);
			while (tile_next_kept(keep, wm, wn, g, t, &row, &col))
				list[row * TILE + atomicAdd(&nlist[row], 1)] = (uint8_t) col;
		}
		__syncthreads();

		/* each query's kept references: the float64 rule, the k buffer */
		if (mine)
		{
			const double *q = P.qx + qi * P.dims;
			int			m = nlist[threadIdx.x];

			for (int c = 0; c < m; c++)
			{
				int64_t		j = r0 + list[threadIdx.x * TILE + c];
				double		s;

				if (j >= P.nref || (P.self0 >= 0 && j == P.self0 + qi))
					continue;
				s = exact_sqdist(q, P.rx + j * P.dims, P.dims, tau);
				if (s <= tau)
				{
					gj_kb_offer(&kb, s, P.rid[j]);
					tau = gj_kb_bound(&kb);
				}
			}
		}
		if (threadIdx.x < TILE)
			nlist[threadIdx.x] = 0;
		__syncthreads();
	}
	if (mine)
	{
		gj_kb_finish(&kb);
		P.bn[qi] = kb.n;
		P.btop[qi] = kb.top;
	}
}

/*
 * The references' filter rows (centre: their column means) and the
 * queries' buffers for batches of up to batch queries; *usable is 0 when
 * the references' norms put the filter beyond float32 (the caller keeps
 * its plain scan).
 */
gj_status
gj_knn_filter_prepare(gj_knn_filter *kf, const double *rx, int64_t nref, int dims,
					  int64_t batch, cudaStream_t s, int *usable, char *err, size_t errlen)
{
	double	   *r = NULL,
			   *hb = NULL,
				maxr = 0.0;
	int64_t		nrb = (nref + TILE - 1) / TILE;
	cudaError_t e;

	memset(kf, 0, sizeof(*kf));
	*usable = 0;
	kf->dims = dims;
	kf->dp = (dims + 7) / 8 * 8;
	kf->nref = nref;
	kf->qcap = batch;
	e = cudaMalloc(&kf->m, sizeof(double) * dims);
	if (e == cudaSuccess)
		e = cudaMemsetAsync(kf->m, 0, sizeof(double) * dims, s);
	if (e == cudaSuccess)
		e = cudaMalloc(&kf->rf, sizeof(float) * (size_t) (nref + 1) * kf->dp);
	if (e == cudaSuccess)
		e = cudaMalloc(&kf->rh, sizeof(float) * (nref + 1));
	if (e == cudaSuccess)
		e = cudaMalloc(&r, sizeof(double) * (nref + 1));
	if (e == cudaSuccess)
		e = cudaMalloc(&kf->rblockr, sizeof(double) * (nrb + 1));
	for (int b = 0; b < 2 && e == cudaSuccess; b++)
	{
		e = cudaMalloc(&kf->qf[b], sizeof(float) * (size_t) (batch + 1) * kf->dp);
		if (e == cudaSuccess)
			e = cudaMalloc(&kf->qh[b], sizeof(float) * (batch + 1));
		if (e == cudaSuccess)
			e = cudaMalloc(&kf->qr[b], sizeof(double) * (batch + 1));
	}
	if (e == cudaSuccess && nref > 0)
	{
		column_sum_kernel<<<(unsigned) ((nref + 255) / 256), 128, 0, s>>>(rx, nref, dims, kf->m);
		prep_kernel<<<(unsigned) ((nref + 255) / 256), 256, 0, s>>>(rx, kf->m, nref, dims, kf->dp,
																	kf->rf, kf->rh, r);
		block_max_kernel<<<(unsigned) ((nrb + 255) / 256), 256, 0, s>>>(r, nref, nrb, kf->rblockr);
		e = cudaGetLastError();
	}
	hb = (double *) malloc(sizeof(double) * (nrb + 1));
	if (e == cudaSuccess && hb == NULL)
		e = cudaErrorMemoryAllocation;
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(hb, kf->rblockr, sizeof(double) * nrb, cudaMemcpyDeviceToHost, s);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(s);
	if (e == cudaSuccess)
		e = cudaFuncSetAttribute(knn_tiles_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
								 (int) KT_SMEM);
	cudaFree(r);
	if (e != cudaSuccess)
	{
		free(hb);
		snprintf(err, errlen, "kNN filter: %s", cudaGetErrorName(e));
		cudaGetLastError();
		return gj_cuda_status(e);
	}
	for (int64_t b = 0; b < nrb; b++)
		maxr = hb[b] > maxr ? hb[b] : maxr;
	free(hb);
	*usable = maxr <= 1e18;
	return GJ_OK;
}

/*
 * One batch (slot 0 or 1) of nq queries qx (float64, on the device): their
 * filter rows, then the sweep; the k buffers as knn.cu lays them out.
 */
cudaError_t
gj_knn_filter_launch(const gj_knn_filter *kf, int slot, const double *rx, const int64_t *rid,
					 const double *qx, int64_t nq, double *bd, int64_t *bid, int32_t *bn,
					 int32_t *btop, int k, int heap, int64_t self0, const int *stop,
					 cudaStream_t s)
{
	knn_tiles_params P;

	if (nq <= 0)
		return cudaSuccess;
	prep_kernel<<<(unsigned) ((nq + 255) / 256), 256, 0, s>>>(qx, kf->m, nq, kf->dims, kf->dp,
															  kf->qf[slot], kf->qh[slot],
															  kf->qr[slot]);
	P.rx = rx;
	P.rid = rid;
	P.rf = kf->rf;
	P.rh = kf->rh;
	P.rblockr = kf->rblockr;
	P.nref = kf->nref;
	P.qx = qx;
	P.qf = kf->qf[slot];
	P.qh = kf->qh[slot];
	P.qr = kf->qr[slot];
	P.nq = nq;
	P.dims = kf->dims;
	P.dp = kf->dp;
	P.k = k;
	P.heap = heap;
	P.self0 = self0;
	P.bd = bd;
	P.bid = bid;
	P.bn = bn;
	P.btop = btop;
	P.stop = stop;
	knn_tiles_kernel<<<(unsigned) ((nq + TILE - 1) / TILE), TTHREADS, KT_SMEM, s>>>(P);
	return cudaGetLastError();
}

void
gj_knn_filter_free(gj_knn_filter *kf)
{
	cudaFree(kf->m);
	cudaFree(kf->rf);
	cudaFree(kf->rh);
	cudaFree(kf->rblockr);
	for (int b = 0; b < 2; b++)
	{
		cudaFree(kf->qf[b]);
		cudaFree(kf->qh[b]);
		cudaFree(kf->qr[b]);
	}
	memset(kf, 0, sizeof(*kf));
}
