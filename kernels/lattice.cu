/*
 * lattice.cu
 *		The dense cells' lattices (src/core/lattice.h) on the device, for
 *		the GPU's uncapped counts: the cells of many rows are read back,
 *		cut on the host by the CPU engine's code, and the lattices uploaded
 *		with the same layout, so that count_kernel counts through
 *		gj_lattice_count exactly as the CPU engine does.
 *
 * The host round trip reads only the dense cells' rows (their
 * coordinates, contiguous in the grid's order) and is linear in them;
 * the cells a plain count would compare N^2 times.  Without device room
 * for the lattices the counts go row by row, as exact.
 */
#include <stdlib.h>
#include <string.h>

#include "density_run.cuh"

/* Copy n elements of T to a new device array; NULL stays NULL when n is 0. */
template <typename T>
static cudaError_t
upload(T **dst, const T *src, int64_t n, cudaStream_t stream)
{
	cudaError_t e = cudaMalloc(dst, sizeof(T) * (n > 0 ? n : 1));

	if (e == cudaSuccess && n > 0)
		e = cudaMemcpyAsync(*dst, src, sizeof(T) * n, cudaMemcpyHostToDevice, stream);
	return e;
}

void
run_lattices_free(density_run *r)
{
	cudaFree(r->L.m);
	cudaFree(r->L.slice0);
	cudaFree(r->L.box0);
	cudaFree(r->L.start);
	cudaFree(r->L.lo);
	cudaFree(r->L.hi);
	cudaFree(r->L.xs);
	cudaFree(r->d_lat_of);
	cudaFree(r->d_order);
	memset(&r->L, 0, sizeof(r->L));
	r->d_lat_of = NULL;
	r->d_order = NULL;
}

gj_status
run_lattices(density_run *r, int dims, char *err, size_t errlen)
{
	int64_t		nc = r->G.ncells,
				nbig = 0,
				rows = 0;
	uint32_t   *cs = NULL;
	int64_t    *range = NULL;
	int32_t    *cut = NULL,
			   *lat_of = NULL;
	int64_t    *first = NULL;
	uint32_t   *order = NULL;
	double	   *hx = NULL;
	gj_lattice	H;
	gj_status	st = GJ_OK;
	cudaError_t e = cudaSuccess;
	size_t		need;

	memset(&H, 0, sizeof(H));
	if (dims > GJ_LATTICE_MAX_DIMS || r->G.n < gj_lattice_min_rows || nc == 0)
		return GJ_OK;
	cs = (uint32_t *) malloc(sizeof(uint32_t) * (nc + 1));
	if (cs == NULL)
		return GJ_ERR_NOMEM;
	e = cudaMemcpy(cs, r->G.cell_start, sizeof(uint32_t) * (nc + 1), cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
		goto failed;
	for (int64_t c = 0; c < nc; c++)
		if (cs[c + 1] - cs[c] >= gj_lattice_min_rows)
		{
			nbig++;
			rows += cs[c + 1] - cs[c];
		}
	if (nbig == 0)
		goto done;
	/* the host copy and the device lattice: rows twice, boxes at most 8 a row, the order */
	if (sizeof(double) * dims * rows + sizeof(int64_t) * 9 * rows + sizeof(uint32_t) * r->G.n > r->room)
		goto done;
	range = (int64_t *) malloc(sizeof(int64_t) * 2 * nbig);
	cut = (int32_t *) malloc(sizeof(int32_t) * nbig);
	first = (int64_t *) malloc(sizeof(int64_t) * nbig);
	order = (uint32_t *) malloc(sizeof(uint32_t) * (r->G.n + 1));
	lat_of = (int32_t *) malloc(sizeof(int32_t) * (nc + 1));
	hx = (double *) malloc(sizeof(double) * dims * rows);
	if (range == NULL || cut == NULL || first == NULL || order == NULL || lat_of == NULL ||
		hx == NULL)
	{
		st = GJ_ERR_NOMEM;
		goto done;
	}
	/* the dense cells' rows, cell after cell (each contiguous on the device) */
	nbig = 0;
	rows = 0;
	for (int64_t c = 0; c < nc; c++)
	{
		int64_t		len = cs[c + 1] - cs[c];

		if (len < gj_lattice_min_rows)
			continue;
		e = cudaMemcpyAsync(hx + rows * dims, r->G.xs + (int64_t) cs[c] * dims,
							sizeof(double) * dims * len, cudaMemcpyDeviceToHost, r->stream);
		if (e != cudaSuccess)
			break;
		range[2 * nbig] = rows;
		range[2 * nbig + 1] = rows + len;
		first[nbig] = cs[c];
		nbig++;
		rows += len;
	}
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(r->stream);
	if (e != cudaSuccess)
		goto failed;
	st = gj_lattice_build(&H, hx, dims, range, nbig, cut, gj_cpu_count());
	if (st != GJ_OK || H.ncut == 0)
		goto done;
	need = sizeof(int32_t) * (H.ncut * dims + nc + 1) + sizeof(int64_t) * (2 * H.ncut + H.nstart) +
		sizeof(double) * (2 * H.nslices + dims * (H.nrows + 1)) + sizeof(uint32_t) * r->G.n;
	if (need > r->room)
		goto done;
	nbig = 0;
	for (int64_t c = 0; c < nc; c++)
		lat_of[c] = cs[c + 1] - cs[c] >= gj_lattice_min_rows ? cut[nbig++] : -1;
	gj_lattice_order(&H, range, cut, nbig, first, order, r->G.n);
	r->L = H;					/* sizes; the arrays become device copies */
	r->L.m = NULL;
	r->L.slice0 = r->L.box0 = r->L.start = NULL;
	r->L.lo = r->L.hi = r->L.xs = NULL;
	r->L.src = NULL;			/* host only */
	e = upload(&r->L.m, H.m, H.ncut * dims, r->stream);
	if (e == cudaSuccess)
		e = upload(&r->L.slice0, H.slice0, H.ncut, r->stream);
	if (e == cudaSuccess)
		e = upload(&r->L.box0, H.box0, H.ncut, r->stream);
	if (e == cudaSuccess)
		e = upload(&r->L.start, H.start, H.nstart, r->stream);
	if (e == cudaSuccess)
		e = upload(&r->L.lo, H.lo, H.nslices, r->stream);
	if (e == cudaSuccess)
		e = upload(&r->L.hi, H.hi, H.nslices, r->stream);
	if (e == cudaSuccess)
		e = upload(&r->L.xs, H.xs, dims * H.nrows, r->stream);
	if (e == cudaSuccess)
		e = upload(&r->d_lat_of, lat_of, nc, r->stream);
	if (e == cudaSuccess)
		e = upload(&r->d_order, order, r->G.n, r->stream);
	/* the host arrays are freed below: the copies must be done */
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(r->stream);
	if (e != cudaSuccess)
		goto failed;
	r->room -= need;
	goto done;

failed:
	/* no room after all: counted row by row instead; any other error is one */
	cudaGetLastError();
	run_lattices_free(r);
	if (e != cudaErrorMemoryAllocation)
	{
		snprintf(err, errlen, "dense cells' lattices: %s", cudaGetErrorName(e));
		st = gj_cuda_status(e);
	}

done:
	gj_lattice_free(&H);
	free(cs);
	free(range);
	free(cut);
	free(first);
	free(order);
	free(lat_of);
	free(hx);
	return st;
}
