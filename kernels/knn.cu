/*
 * knn.cu
 *		The GPU k-nearest-neighbour join: index, kernels, partitions, driver.
 *
 * Index.  When the references fit in the device's share, the kNN grid is
 * built on the device like the self-join's (grid.cu: upload, statistics,
 * cell ids, CUB radix sort, cells, gather), with the kNN grid's geometry
 * (cells sized from a host sample for a few points each, Z-order ids).  The
 * host never sorts anything then.  Larger references are sorted by the
 * same grid on the host and streamed through in partitions (below).
 *
 * Kernels.  One thread per query runs the very search of the CPU engine
 * (src/core/knn_search.h, compiled here as device code with the _rn
 * intrinsics for the distance): the Z-order grid descent for low
 * dimensions, a scan for brute force.  The brute-force kernel is tiled: a
 * block stages a tile of reference points in shared memory and every thread
 * of the block scans it, so each reference is read from global memory once
 * per block, not once per query.  The k buffers (array or max-heap, as the
 * CPU engine picks) live in global memory, interleaved across the queries
 * of a batch (entry e of query t at e * nq + t, nq being the batch's
 * queries) so that a warp's accesses to the same entry coalesce.  A batch
 * holds at most KNN_MAX_ENTRIES entries, so large k means fewer queries a
 * launch, and every kernel reads the join's stop word as it goes (every 64
 * blocks of a descent, every tile of a scan): a cancelled join's kernels
 * return within microseconds whatever k, the method or the data.
 *
 * Partitions.  The host-sorted references are cut into runs of whole cells
 * (contiguous slices of points) that stream through two device buffers
 * (the next one uploads on its own stream while the kernel searches the
 * current one).  The k buffers stay on the device across a batch's
 * partitions, so the per-partition lists merge in them (the DSPP+P scheme
 * of the kNN partition paper).
 *
 * Driver.  A thread runs the batches: it launches batch i + 1 before
 * turning batch i's lists (copied back into pinned memory) into result
 * rows (query id, reference id, rank, distance) for the backend, so the GPU
 * searches while the host writes.  Batches start small and double up to
 * the buffers' capacity, so the first rows do not wait for a full batch.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_common.cuh"
#include "../src/core/knn_search.h"

#define KNN_BLOCK 128
#define KNN_TILE 256			/* reference points per brute-force tile, at most */
#define KNN_TILE_BYTES 40960	/* shared memory for a tile: under the 48 KB default */
#define KNN_MAX_BATCH 65536		/* queries per batch */
#define KNN_MAX_ENTRIES ((int64_t) 16 << 20)	/* k-buffer entries per batch */
#define KNN_MIN_FIRST_BATCH 2048	/* queries of the first batch, at least */
#define KNN_MIN_TEAM_BATCH 1024	/* a team's members' batches, at least */
#define KNN_REG_DIMS 8			/* queries up to this wide are copied to registers */

typedef struct knn_batch_buf
{
	double	   *d_q;			/* batch queries, dims wide */
	double	   *d_bd;			/* k buffers, interleaved */
	int64_t    *d_bid;
	int32_t    *d_bn;			/* entries held */
	int32_t    *d_btop;			/* array buffers: worst entry */
	double	   *h_bd;			/* pinned copies of the answer */
	int64_t    *h_bid;
	int32_t    *h_bn;
	double	   *h_q;			/* pinned staging of the queries */
	cudaStream_t stream;
	cudaEvent_t began;			/* timed: the batch's first work on the stream */
	cudaEvent_t done;			/* timed: its lists are on the host */
	int64_t		q0;				/* batch's first position in order */
	int64_t		nq;
	int			logged;			/* its entry in the batch log, or -1 */
} knn_batch_buf;

struct gj_gpu_knn
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	gj_points  *refs;
	const gj_points *queries;
	const gj_grid *g;			/* host grid of the partitions (or NULL) */
	gj_grid		hgrid;			/* ... which this is, when built */
	int			have_hgrid;
	gj_grid		plan;			/* device index: its geometry */
	gj_dev_grid dg;				/* device index: sorted points and cells */
	gj_dev_grid dq;				/* device index: the queries in cell order */
	int			dev_index;		/* the index lives on the device */
	int64_t    *h_sorted_ids;	/* self join on a device index: query ids */
	gj_knn_grid Gh;				/* the search's view: geometry */
	int			use_grid;
	int			dims;
	int			k;
	int			heap;
	int			exclude_self;
	uint32_t   *order;			/* queries in cell order (or NULL) */
	int		   *d_stop;			/* raised by free: kernels return */
	cudaStream_t stop_stream;

	/* device copies: cells whole, points per partition */
	int64_t    *d_cell_id;
	uint32_t   *d_cell_start;
	double	   *d_x[2];
	int64_t    *d_ids[2];
	int64_t		part_cap;		/* points per partition buffer */
	int			npart;
	int64_t    *part_cell;		/* npart + 1 cell boundaries */
	int			registered;		/* refs pinned with cudaHostRegister (pin_refs) */
	double	   *reg_x;			/* ... these arrays */
	int64_t    *reg_ids;
	const double *q_resident;	/* every query on the device, in batch order, or NULL */
	double	   *d_qall;			/* ... when uploaded for it (resident_queries) */
	cudaStream_t copy_stream;
	cudaEvent_t part_ready[2];	/* a slot's partition has arrived */
	cudaEvent_t slot_free[2];	/* the last kernel reading a slot is done */

	int64_t		batch;			/* queries per batch */
	knn_batch_buf buf[2];
	gj_knn_filter kf;			/* brute force: the tensor-core filter (knn_tiles.cu) */
	int			tc;				/* ... in use */

	pthread_t	thread;
	int			started;
	int			stop;
	int			device;			/* current at the start: the driver thread's too */
	gj_gpu_share *share;		/* a team's member: positions from the shared cursor */
	int			member;			/* ... which one */
	uint64_t	order_fp;		/* ... the fingerprint of its query order (knn_fingerprint) */
	char		err[256];
	double		t_start;		/* gj_now_ms() at gj_gpu_knn_start */
	size_t		budget_left;	/* device bytes the index leaves to the rest */
	gj_gpu_knn_info info;
	gj_knn_batch_log log[GJ_KNN_BATCH_LOG];	/* the first batches, for gj_gpu_knn_batches */
	int			nlog;
	double		t_search;		/* gj_now_ms() when the batches began */
};

static void gpu_knn_free(gj_engine *e);

/* --- kernels ------------------------------------------------------------- */

/* Resume query t's buffer (entries held so far) or start it empty. */
__device__ __forceinline__ void
knn_buffer(gj_kbuf *kb, const knn_batch_buf &B, int64_t t, int64_t nb, int k,
		   int heap, int first)
{
	gj_kb_init(kb, B.d_bd + t, B.d_bid + t, nb, k, heap);
	if (!first)
		gj_kb_resume(kb, B.d_bn[t], B.d_btop[t]);
}

__device__ __forceinline__ void
knn_store(gj_kbuf *kb, const knn_batch_buf &B, int64_t t, int last, const int *stop)
{
	if (gj_knn_stopped(stop) || (last && !gj_kb_finish(kb, stop)))
		return;					/* cancelled: nothing is read back */
	B.d_bn[t] = kb->n;
	B.d_btop[t] = kb->top;
}

/*
 * Grid search of one partition (a run of cells) for every batch query; qx
 * holds the batch's query coordinates (dims wide).
 */
__global__ static void
knn_grid_kernel(gj_knn_grid G, knn_batch_buf B, const double *qx, int64_t nb,
				int64_t stride, int dims, int k, int heap, int64_t self0,
				int first, int last)
{
	int64_t		t = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	gj_kbuf		kb;
	double		qreg[KNN_REG_DIMS];
	const double *q = qx + t * dims;

	if (t >= nb || gj_dev_stopped(G.stop))
		return;
	if (dims <= KNN_REG_DIMS)
	{
		for (int d = 0; d < dims; d++)
			qreg[d] = q[d];
		q = qreg;
	}
	knn_buffer(&kb, B, t, stride, k, heap, first);
	gj_knn_search_grid(&G, q, self0 >= 0 ? self0 + t : -1, &kb);
	knn_store(&kb, B, t, last, G.stop);
}

/*
 * Brute force over reference rows [p0, p1) (x and ids are that slice),
 * tile by tile through shared memory.
 */
__global__ static void
knn_brute_kernel(const double *x, const int64_t *ids, int64_t p0, int64_t p1, int tile_n,
				 knn_batch_buf B, const double *qx, int64_t nb, int64_t stride,
				 int dims, int k, int heap, int64_t self0, int first, int last,
				 const int *stop)
{
	extern __shared__ double tile[];
	__shared__ int stopped;
	int64_t    *tile_ids = (int64_t *) (tile + (size_t) tile_n * dims);
	int64_t		t = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	int			live = t < nb;
	gj_kbuf		kb;
	double		qreg[KNN_REG_DIMS];
	const double *q = qx + t * dims;

	if (live)
	{
		if (dims <= KNN_REG_DIMS)
		{
			for (int d = 0; d < dims; d++)
				qreg[d] = q[d];
			q = qreg;
		}
		knn_buffer(&kb, B, t, stride, k, heap, first);
	}
	for (int64_t j0 = p0; j0 < p1; j0 += tile_n)
	{
		int64_t		n = p1 - j0 < tile_n ? p1 - j0 : tile_n;

		__syncthreads();
		if (threadIdx.x == 0)
			stopped = gj_dev_stopped(stop);
		__syncthreads();
		if (stopped)
			return;				/* the whole block: no barrier is left waiting */
		for (int64_t i = threadIdx.x; i < n * dims; i += blockDim.x)
			tile[i] = x[(j0 - p0) * dims + i];
		for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
			tile_ids[i] = ids[j0 - p0 + i];
		__syncthreads();
		/* rows keep their global numbers: the tile is addressed from j0 */
		if (live)
			gj_knn_scan(tile - j0 * dims, tile_ids - j0, dims, q, j0, j0 + n,
						self0 >= 0 ? self0 + t : -1, &kb, NULL);
	}
	if (live)
		knn_store(&kb, B, t, last, stop);
}

/* --- setup --------------------------------------------------------------- */

static void
set_error(struct gj_gpu_knn *j, gj_status st, const char *what, cudaError_t e)
{
	if (j->eng.error != GJ_OK)
		return;
	j->eng.error = st;
	if (e != cudaSuccess)
		snprintf(j->err, sizeof(j->err), "%s: %s", what, cudaGetErrorName(e));
	else
		snprintf(j->err, sizeof(j->err), "%s", what);
}

#define KNN_TRY(j, call, what) \
	do { \
		cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) \
		{ \
			cudaGetLastError(); \
			set_error((j), gj_cuda_status(e_), (what), e_); \
			return (j)->eng.error; \
		} \
	} while (0)

/* Partition boundaries: runs of whole cells of at most part_cap points. */
static gj_status
plan_partitions(struct gj_gpu_knn *j, const gj_grid *g)
{
	int64_t		n = j->refs->n;
	int64_t		ncells = g != NULL ? g->ncells : 0;
	int			cap = 16;

	j->part_cell = (int64_t *) malloc(sizeof(int64_t) * (cap + 1));
	if (j->part_cell == NULL)
		return GJ_ERR_NOMEM;
	j->npart = 0;
	j->part_cell[0] = 0;
	if (g == NULL)
	{
		/* brute force: partitions are plain row ranges */
		for (int64_t p = 0; p < n; p += j->part_cap)
		{
			if (j->npart == cap)
			{
				cap *= 2;
				j->part_cell = (int64_t *) realloc(j->part_cell, sizeof(int64_t) * (cap + 1));
				if (j->part_cell == NULL)
					return GJ_ERR_NOMEM;
			}
			j->part_cell[++j->npart] = p + j->part_cap < n ? p + j->part_cap : n;
		}
		return GJ_OK;
	}
	for (int64_t c = 0; c < ncells;)
	{
		int64_t		c1 = c;

		/* whole cells while they fit; a cell bigger than a buffer: error */
		while (c1 < ncells && g->cell_start[c1 + 1] - g->cell_start[c] <= j->part_cap)
			c1++;
		if (c1 == c)
			return GJ_ERR_DEVICE_OOM;
		if (j->npart == cap)
		{
			cap *= 2;
			j->part_cell = (int64_t *) realloc(j->part_cell, sizeof(int64_t) * (cap + 1));
			if (j->part_cell == NULL)
				return GJ_ERR_NOMEM;
		}
		j->part_cell[++j->npart] = c1;
		c = c1;
	}
	return GJ_OK;
}

/* First and last point of partition p. */
static void
part_points(const struct gj_gpu_knn *j, const gj_grid *g, int p, int64_t *p0,
			int64_t *p1)
{
	if (g == NULL)
	{
		*p0 = j->part_cell[p];
		*p1 = j->part_cell[p + 1];
	}
	else
	{
		*p0 = g->cell_start[j->part_cell[p]];
		*p1 = g->cell_start[j->part_cell[p + 1]];
	}
}

/* The k-buffer batch: queries per batch from the bytes left, capped. */
static int64_t
batch_size(const struct gj_gpu_knn *j, size_t left, size_t per_query)
{
	int64_t		b = (int64_t) (left / 2 / per_query);
	int64_t		most = KNN_MAX_ENTRIES / j->k;

	if (most < 1)
		most = 1;
	b = b < most ? b : most;
	b = b < KNN_MAX_BATCH ? b : KNN_MAX_BATCH;
	return b < j->queries->n ? b : j->queries->n;
}

/* Bytes one query of a batch holds on the device (its k buffer and point). */
static size_t
per_query_bytes(const struct gj_gpu_knn *j)
{
	return sizeof(double) * j->dims +
		(size_t) j->k * (sizeof(double) + sizeof(int64_t)) + 2 * sizeof(int32_t);
}

/*
 * Device memory for references handled on the host side (brute force, or a
 * host grid g): the cells whole, the points in one buffer or, when they do
 * not fit, two partition buffers; then the batch size.
 */
static gj_status
alloc_refs(struct gj_gpu_knn *j, const gj_grid *g, size_t budget)
{
	int			dims = j->dims;
	int64_t		n = j->refs->n;
	size_t		per_ref = sizeof(double) * dims + sizeof(int64_t);
	size_t		per_query = per_query_bytes(j);
	size_t		cells = g != NULL ? (size_t) g->ncells * (sizeof(int64_t) + sizeof(uint32_t)) + 16 : 0;
	size_t		ref_budget;
	int64_t		nq = j->queries->n;

	if (cells + 2 * per_query > budget)
		return GJ_ERR_DEVICE_OOM;
	/* every reference at once when that leaves room for a decent batch */
	ref_budget = budget - cells;
	if ((size_t) n * per_ref + 2 * per_query * (size_t) (nq < 65536 ? nq : 65536) <= ref_budget)
		j->part_cap = n;
	else
		j->part_cap = (int64_t) (ref_budget / 2 / 2 / per_ref);	/* two buffers, half */
	if (j->part_cap < 1)
		return GJ_ERR_DEVICE_OOM;
	{
		gj_status	st = plan_partitions(j, g);

		if (st != GJ_OK)
			return st;
	}
	j->batch = batch_size(j, ref_budget - (size_t) j->part_cap * per_ref * (j->npart > 1 ? 2 : 1),
						  per_query);
	if (j->batch < 1)
		return GJ_ERR_DEVICE_OOM;

	if (g != NULL)
	{
		uint32_t   *starts = (uint32_t *) malloc(sizeof(uint32_t) * (g->ncells + 1));

		if (starts == NULL)
			return GJ_ERR_NOMEM;
		for (int64_t c = 0; c <= g->ncells; c++)
			starts[c] = (uint32_t) g->cell_start[c];
		if (cudaMalloc(&j->d_cell_id, sizeof(int64_t) * (g->ncells + 1)) != cudaSuccess ||
			cudaMalloc(&j->d_cell_start, sizeof(uint32_t) * (g->ncells + 1)) != cudaSuccess ||
			cudaMemcpy(j->d_cell_id, g->cell_id, sizeof(int64_t) * g->ncells,
					   cudaMemcpyHostToDevice) != cudaSuccess ||
			cudaMemcpy(j->d_cell_start, starts, sizeof(uint32_t) * (g->ncells + 1),
					   cudaMemcpyHostToDevice) != cudaSuccess)
		{
			cudaError_t e = cudaGetLastError();

			free(starts);
			set_error(j, gj_cuda_status(e), "cell upload", e);
			return j->eng.error;
		}
		free(starts);
	}
	for (int b = 0; b < (j->npart > 1 ? 2 : 1); b++)
	{
		KNN_TRY(j, cudaMalloc(&j->d_x[b], per_ref * j->part_cap), "reference buffer");
		j->d_ids[b] = (int64_t *) (j->d_x[b] + (size_t) j->part_cap * dims);
		KNN_TRY(j, cudaEventCreateWithFlags(&j->part_ready[b], cudaEventDisableTiming),
				"event");
		KNN_TRY(j, cudaEventCreateWithFlags(&j->slot_free[b], cudaEventDisableTiming),
				"event");
	}
	return GJ_OK;
}

/*
 * Partition uploads overlap kernels only from pinned rows: pin the
 * references once they are in their final place (an order applied on the
 * host replaces their arrays: pinned before, the old arrays stayed
 * registered after they were freed, and memory malloc'd later at the same
 * address was written through the stale pinned pages: garbage query ids
 * in the next join).  Both arrays or neither.  Not in a team: the members
 * share the rows, and one member's unregistering would pull the pages from
 * under another's copies.
 */
static void
pin_refs(struct gj_gpu_knn *j)
{
	int64_t		n = j->refs->n;

	if (j->npart > 1 && j->share == NULL &&
		cudaHostRegister(j->refs->x, sizeof(double) * j->dims * n, cudaHostRegisterDefault) == cudaSuccess)
	{
		if (cudaHostRegister(j->refs->ids, sizeof(int64_t) * n, cudaHostRegisterDefault) == cudaSuccess)
		{
			j->registered = 1;
			j->reg_x = j->refs->x;
			j->reg_ids = j->refs->ids;
		}
		else
			cudaHostUnregister(j->refs->x);
	}
	cudaGetLastError();
}

/*
 * The queries in the order of the reference cells they fall in, sorted on
 * the device: the same cell ids (grid.cu's kernel, the plan's clamping) and
 * a stable radix sort, so the same order as gj_knn_query_order on the host,
 * which takes ten times as long.  The sorted queries stay on the device for
 * the batches; the host keeps the order (for the query ids).
 * GJ_ERR_DEVICE_OOM: they do not fit next to the index, sort on the host.
 */
static gj_status
device_query_order(struct gj_gpu_knn *j, cudaStream_t stream, char *err, size_t errlen)
{
	const gj_points *qs = j->queries;
	int64_t		n = qs->n;
	size_t		free_mem,
				total_mem;
	double	   *dx = NULL;
	double		ms;
	gj_status	res;
	cudaError_t e;

	/* room for the sort and for the batches that follow */
	if (cudaMemGetInfo(&free_mem, &total_mem) != cudaSuccess ||
		gj_gpu_grid_bytes(n, j->dims) + 2 * per_query_bytes(j) * 4096 >
		(free_mem < j->budget_left ? free_mem : j->budget_left))
	{
		cudaGetLastError();
		return GJ_ERR_DEVICE_OOM;
	}
	j->order = (uint32_t *) malloc(sizeof(uint32_t) * (n + 1));
	if (j->order == NULL)
		return GJ_ERR_NOMEM;
	e = cudaMalloc(&dx, sizeof(double) * n * j->dims);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(dx, qs->x, sizeof(double) * n * j->dims, cudaMemcpyHostToDevice,
							stream);
	if (e != cudaSuccess)
	{
		snprintf(err, errlen, "query upload: %s", cudaGetErrorName(e));
		cudaGetLastError();
		cudaFree(dx);
		return gj_cuda_status(e);
	}
	res = gj_gpu_grid_build(dx, NULL, n, j->dims, &j->plan, &j->dq, stream, &ms, err, errlen);
	cudaFree(dx);
	if (res == GJ_OK)
	{
		/* only the sorted points and the order are used */
		cudaFree(j->dq.pcell);
		cudaFree(j->dq.cell_id);
		cudaFree(j->dq.cell_start);
		j->dq.pcell = NULL;
		j->dq.cell_id = NULL;
		j->dq.cell_start = NULL;
		GJ_CUDA_CHECK(err, errlen, cudaMemcpy(j->order, j->dq.perm, sizeof(uint32_t) * n,
											  cudaMemcpyDeviceToHost));
		j->info.device_order = 1;
	}
	else if (res == GJ_ERR_DEVICE_OOM)
	{
		free(j->order);
		j->order = NULL;
		err[0] = '\0';
	}
	return res;
}

/*
 * The index on the device: upload the references, reduce their statistics
 * there, plan the kNN grid on the host (a sample sizes the cells), then
 * cell ids, sort, cells and the gathered points and ids, all on the device.
 * The search then sees one resident partition.
 */
static gj_status
build_device_index(struct gj_gpu_knn *j, cudaStream_t stream, char *err, size_t errlen)
{
	gj_points  *refs = j->refs;
	int64_t		n = refs->n;
	double	   *dx = NULL;
	int64_t    *dids = NULL;
	gj_dim_stats *st = (gj_dim_stats *) malloc(sizeof(gj_dim_stats) * (j->dims + 1));
	double		ms = 0.0;
	gj_status	res;
	cudaError_t e;

	if (st == NULL)
		return GJ_ERR_NOMEM;
	res = gj_gpu_upload_stats(refs, &dx, st, stream, &j->info.upload_stats_ms, err, errlen);
	if (res == GJ_OK)
		res = gj_knn_grid_plan(&j->plan, refs, st);
	if (res == GJ_OK)
	{
		e = cudaMalloc(&dids, sizeof(int64_t) * n);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(dids, refs->ids, sizeof(int64_t) * n,
								cudaMemcpyHostToDevice, stream);
		if (e != cudaSuccess)
		{
			snprintf(err, errlen, "id upload: %s", cudaGetErrorName(e));
			cudaGetLastError();
			res = gj_cuda_status(e);
		}
	}
	if (res == GJ_OK)
	{
		double		t0 = gj_now_ms();

		res = gj_gpu_grid_build(dx, dids, n, j->dims, &j->plan, &j->dg, stream, &ms,
								err, errlen);
		j->info.grid_ms = gj_now_ms() - t0;
	}
	cudaFree(dx);
	cudaFree(dids);
	free(st);
	if (res != GJ_OK)
		return res;

	/* the search's view: the plan's geometry over the device arrays */
	gj_knn_grid_view(&j->Gh, &j->plan, refs);
	j->Gh.ncells = j->dg.ncells;
	j->Gh.npoints = n;
	j->Gh.cell_id = j->dg.cell_id;
	j->Gh.start64 = NULL;
	j->Gh.start32 = j->dg.cell_start;
	j->Gh.x = j->dg.xs;
	j->Gh.ids = j->dg.ids;
	j->npart = 1;
	j->part_cap = n;
	j->part_cell = (int64_t *) malloc(sizeof(int64_t) * 2);
	if (j->part_cell == NULL)
		return GJ_ERR_NOMEM;
	j->part_cell[0] = 0;
	j->part_cell[1] = j->dg.ncells;
	if (j->exclude_self)
	{
		/* queries are the sorted references: their ids for the output */
		j->h_sorted_ids = (int64_t *) malloc(sizeof(int64_t) * (n + 1));
		if (j->h_sorted_ids == NULL)
			return GJ_ERR_NOMEM;
		GJ_CUDA_CHECK(err, errlen, cudaMemcpy(j->h_sorted_ids, j->dg.ids, sizeof(int64_t) * n,
											  cudaMemcpyDeviceToHost));
	}
	else if (j->queries->n > 1)
	{
		double		t0 = gj_now_ms();

		res = device_query_order(j, stream, err, errlen);
		if (res == GJ_ERR_DEVICE_OOM)
			res = gj_knn_query_order(&j->plan, j->queries, &j->order);
		j->info.order_ms = gj_now_ms() - t0;
	}
	return res;
}

/*
 * Pinned and device buffers of the two query batches.  The queries are
 * staged through them only when they are not on the device already (sorted
 * there, or the references themselves).
 */
static gj_status
alloc_batches(struct gj_gpu_knn *j)
{
	int			staged = !(j->dev_index && j->exclude_self) && j->dq.xs == NULL &&
		j->q_resident == NULL;

	for (int b = 0; b < 2; b++)
	{
		knn_batch_buf *B = &j->buf[b];
		size_t		e = (size_t) j->batch * j->k;

		if (staged)
		{
			KNN_TRY(j, cudaMalloc(&B->d_q, sizeof(double) * j->dims * j->batch), "query buffer");
			KNN_TRY(j, gj_pinned_alloc((void **) &B->h_q, sizeof(double) * j->dims * j->batch),
					"pinned queries");
		}
		KNN_TRY(j, cudaMalloc(&B->d_bd, sizeof(double) * e), "k buffers");
		KNN_TRY(j, cudaMalloc(&B->d_bid, sizeof(int64_t) * e), "k buffers");
		KNN_TRY(j, cudaMalloc(&B->d_bn, sizeof(int32_t) * j->batch), "k buffers");
		KNN_TRY(j, cudaMalloc(&B->d_btop, sizeof(int32_t) * j->batch), "k buffers");
		KNN_TRY(j, gj_pinned_alloc((void **) &B->h_bd, sizeof(double) * e), "pinned results");
		KNN_TRY(j, gj_pinned_alloc((void **) &B->h_bid, sizeof(int64_t) * e), "pinned results");
		KNN_TRY(j, gj_pinned_alloc((void **) &B->h_bn, sizeof(int32_t) * j->batch), "pinned results");
		KNN_TRY(j, cudaStreamCreateWithFlags(&B->stream, cudaStreamNonBlocking), "stream");
		KNN_TRY(j, cudaEventCreate(&B->began), "event");
		KNN_TRY(j, cudaEventCreate(&B->done), "event");
	}
	return GJ_OK;
}

/*
 * Every query on the device, in batch order, for references that sit whole
 * in one buffer (brute force, no query order): a self-join's queries are
 * those references (d_x[0]); a join's are uploaded once from pageable
 * memory when they fit beside the references, the batches and the
 * tensor-core filter's rows.  Staging them batch by batch instead pinned
 * two buffers of dims x batch doubles (800 MB at 768 dimensions, ~0.4 s of
 * cudaMallocHost, past the pinned cache) and copied every query again.
 * Best effort: without room the batches stage their queries as before.
 */
static void
resident_queries(struct gj_gpu_knn *j, size_t budget)
{
	size_t		q = sizeof(double) * j->dims * (size_t) j->queries->n;
	size_t		need;

	if (j->dev_index || j->npart != 1 || j->order != NULL || j->dq.xs != NULL)
		return;
	if (j->queries == j->refs)
	{
		j->q_resident = j->d_x[0];
		return;
	}
	need = q +
		(sizeof(double) * j->dims + sizeof(int64_t)) * (size_t) j->part_cap +
		2 * per_query_bytes(j) * (size_t) j->batch +
		sizeof(float) * ((size_t) j->dims + 8) * ((size_t) j->refs->n + 2 * (size_t) j->batch);

	if (need > budget)
		return;
	if (cudaMalloc(&j->d_qall, q) != cudaSuccess)
	{
		j->d_qall = NULL;
		cudaGetLastError();
		return;
	}
	if (gj_upload_staged(j->d_qall, j->queries->x, q, j->copy_stream) != cudaSuccess)
	{
		cudaFree(j->d_qall);
		j->d_qall = NULL;
		cudaGetLastError();
		return;
	}
	j->q_resident = j->d_qall;
}

/* Upload partition p into a buffer slot on the copy stream, once it is free. */
static gj_status
upload_part(struct gj_gpu_knn *j, const gj_grid *g, int p, int slot)
{
	int64_t		p0,
				p1;

	part_points(j, g, p, &p0, &p1);
	KNN_TRY(j, cudaStreamWaitEvent(j->copy_stream, j->slot_free[slot], 0), "wait");
	KNN_TRY(j, cudaMemcpyAsync(j->d_x[slot], j->refs->x + p0 * j->dims,
							   sizeof(double) * j->dims * (p1 - p0),
							   cudaMemcpyHostToDevice, j->copy_stream), "reference upload");
	KNN_TRY(j, cudaMemcpyAsync(j->d_ids[slot], j->refs->ids + p0,
							   sizeof(int64_t) * (p1 - p0),
							   cudaMemcpyHostToDevice, j->copy_stream), "reference upload");
	KNN_TRY(j, cudaEventRecord(j->part_ready[slot], j->copy_stream), "event");
	return GJ_OK;
}

/*
 * The references when they are one partition, at the start: staged by the
 * host's copiers (gj_upload_staged) rather than by the driver's one
 * thread, 1 GB in about 23 ms instead of about 140 on the H200 host.
 * Partitions streamed during the search go by upload_part.  Waited for.
 */
static gj_status
upload_whole(struct gj_gpu_knn *j)
{
	int64_t		n = j->refs->n;
	cudaError_t e;

	e = gj_upload_staged(j->d_x[0], j->refs->x, sizeof(double) * j->dims * n, j->copy_stream);
	if (e == cudaSuccess)
		e = gj_upload_staged(j->d_ids[0], j->refs->ids, sizeof(int64_t) * n, j->copy_stream);
	if (e == cudaSuccess)
		e = cudaEventRecord(j->part_ready[0], j->copy_stream);
	if (e != cudaSuccess)
	{
		set_error(j, gj_cuda_status(e), "reference upload", e);
		return j->eng.error;
	}
	return GJ_OK;
}

/*
 * A self join's references (the only partition) in the block order:
 * row_order, or (row_order NULL) the order plan gives, found on the
 * device (gj_gpu_block_perm: the host's keys and sort were most of the
 * order's time).  The rows are uploaded as they are and gathered on the
 * device, so the host never copies them (1M x 128: the host's gather was
 * most of the order's time before that).  *gathered is 0 when the device
 * has no room for the rows twice: the caller then applies the order on
 * the host and uploads as usual.  Once gathered, query t of the self join
 * is sorted row t: its id comes from h_sorted_ids.
 */
static gj_status
upload_ordered(struct gj_gpu_knn *j, const uint32_t *row_order, const gj_block_plan *plan,
			   size_t room, int *gathered)
{
	int64_t		n = j->refs->n;
	size_t		xb = sizeof(double) * j->dims * (size_t) n,
				ib = sizeof(int64_t) * (size_t) n,
				pb = sizeof(uint32_t) * (size_t) n,
				sb = row_order == NULL ? gj_gpu_block_perm_bytes(n) : 0,
				sat = (xb + ib + pb + 255) & ~(size_t) 255;	/* the sort's scratch, aligned */
	char	   *tmp = NULL;
	uint32_t   *dperm;
	cudaError_t e;
	double		t0;

	*gathered = 0;
	if (sb == (size_t) -1 || sat + sb > room || cudaMalloc(&tmp, sat + sb) != cudaSuccess)
	{
		cudaGetLastError();
		if (j->share != NULL)
			gj_gpu_share_decline(j->share);	/* the others stage every part themselves */
		return GJ_OK;
	}
	dperm = (uint32_t *) (tmp + xb + ib);
	j->h_sorted_ids = (int64_t *) malloc(sizeof(int64_t) * (n + 1));
	if (j->h_sorted_ids == NULL)
	{
		cudaFree(tmp);
		if (j->share != NULL)
			gj_gpu_share_decline(j->share);
		return GJ_ERR_NOMEM;
	}
	if (row_order != NULL)
		for (int64_t i = 0; i < n; i++)
			j->h_sorted_ids[i] = j->refs->ids[row_order[i]];
	t0 = gj_now_ms();
	/* a team's members stage a part each and copy the rest from each other */
	e = j->share != NULL ?
		gj_gpu_share_upload(j->share, j->member, tmp, j->refs->x, xb, j->copy_stream) :
		gj_upload_staged(tmp, j->refs->x, xb, j->copy_stream);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(tmp + xb, j->refs->ids, ib, cudaMemcpyHostToDevice, j->copy_stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(j->copy_stream);
	j->info.refs_up_ms = gj_now_ms() - t0;
	t0 = gj_now_ms();
	if (e == cudaSuccess)
		e = row_order != NULL ?
			cudaMemcpyAsync(dperm, row_order, pb, cudaMemcpyHostToDevice, j->copy_stream) :
			gj_gpu_block_perm((const double *) tmp, n, j->dims, plan, dperm, tmp + sat,
							  j->copy_stream);
	if (e == cudaSuccess)
		e = gj_gpu_gather_rows((const double *) tmp, (const int64_t *) (tmp + xb), dperm, n,
							   j->dims, j->d_x[0], j->d_ids[0], j->copy_stream);
	if (e == cudaSuccess && row_order == NULL)
		e = cudaMemcpyAsync(j->h_sorted_ids, j->d_ids[0], ib, cudaMemcpyDeviceToHost,
							j->copy_stream);
	if (e == cudaSuccess)
		e = cudaEventRecord(j->part_ready[0], j->copy_stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(j->copy_stream);
	j->info.gather_ms = gj_now_ms() - t0;
	cudaFree(tmp);
	if (e != cudaSuccess)
	{
		cudaGetLastError();
		set_error(j, gj_cuda_status(e), "reference gather", e);
	}
	j->info.row_gather = 1;
	*gathered = 1;
	return j->eng.error;
}

/* --- batches ------------------------------------------------------------ */

/* Stage, search (every partition) and copy back one batch; async. */
static gj_status
launch_batch(struct gj_gpu_knn *j, const gj_grid *g, knn_batch_buf *B,
			 int64_t q0, int64_t nq)
{
	int			dims = j->dims;
	int			blocks = (int) ((nq + KNN_BLOCK - 1) / KNN_BLOCK);
	size_t		e = (size_t) nq * j->k;
	int64_t		self0 = j->exclude_self ? q0 : -1;
	const double *qx = B->d_q;

	B->q0 = q0;
	B->nq = nq;
	B->logged = -1;
	if (j->nlog < GJ_KNN_BATCH_LOG)
	{
		gj_knn_batch_log *L = &j->log[j->nlog];

		B->logged = j->nlog++;
		L->q0 = q0;
		L->n = nq;
		L->launched_ms = gj_now_ms() - j->t_search;
	}
	KNN_TRY(j, cudaEventRecord(B->began, B->stream), "event");
	if (j->dev_index && j->exclude_self)
		qx = j->dg.xs + q0 * dims;	/* the sorted references themselves */
	else if (j->dq.xs != NULL)
		qx = j->dq.xs + q0 * dims;	/* the queries sorted on the device */
	else if (j->q_resident != NULL)
		qx = j->q_resident + q0 * dims;	/* every query, on the device from the start */
	else
	{
		for (int64_t t = 0; t < nq; t++)
		{
			int64_t		row = j->order != NULL ? j->order[q0 + t] : q0 + t;

			memcpy(B->h_q + t * dims, j->queries->x + row * dims, sizeof(double) * dims);
		}
		KNN_TRY(j, cudaMemcpyAsync(B->d_q, B->h_q, sizeof(double) * dims * nq,
								   cudaMemcpyHostToDevice, B->stream), "query upload");
	}
	/* with several partitions, the first two start on their way now */
	for (int p = 0; j->npart > 1 && p < 2 && p < j->npart; p++)
	{
		gj_status	st = upload_part(j, g, p, p);

		if (st != GJ_OK)
			return st;
	}
	for (int p = 0; p < j->npart; p++)
	{
		int			slot = p % 2;
		int64_t		p0,
					p1;

		if (!j->dev_index)
		{
			part_points(j, g, p, &p0, &p1);
			KNN_TRY(j, cudaStreamWaitEvent(B->stream, j->part_ready[slot], 0), "wait");
		}
		else
			p0 = 0, p1 = j->refs->n;
		if (j->dev_index)
			knn_grid_kernel<<<blocks, KNN_BLOCK, 0, B->stream>>>(j->Gh, *B, qx, nq, nq, dims,
																 j->k, j->heap, self0, 1, 1);
		else if (g != NULL)
		{
			gj_knn_grid G = j->Gh;

			G.cell_id = j->d_cell_id + j->part_cell[p];
			G.ncells = j->part_cell[p + 1] - j->part_cell[p];
			G.start64 = NULL;
			G.start32 = j->d_cell_start + j->part_cell[p];
			G.x = j->d_x[slot] - p0 * dims;	/* addressed by global row */
			G.ids = j->d_ids[slot] - p0;
			G.npoints = p1 - p0;
			knn_grid_kernel<<<blocks, KNN_BLOCK, 0, B->stream>>>(G, *B, qx, nq, nq, dims, j->k,
																 j->heap, self0, p == 0,
																 p == j->npart - 1);
		}
		else if (j->tc)
			KNN_TRY(j, gj_knn_filter_launch(&j->kf, B == &j->buf[0] ? 0 : 1, j->d_x[slot],
											j->d_ids[slot], qx, nq, B->d_bd, B->d_bid,
											B->d_bn, B->d_btop, j->k, j->heap, self0,
											j->d_stop, B->stream), "kNN filter launch");
		else
		{
			/* as many rows as fit the shared memory (19 at 256 dims) */
			int			tile_n = (int) (KNN_TILE_BYTES / (sizeof(double) * dims + sizeof(int64_t)));
			size_t		shm;

			tile_n = tile_n < KNN_TILE ? tile_n : KNN_TILE;
			shm = (sizeof(double) * dims + sizeof(int64_t)) * tile_n;
			knn_brute_kernel<<<blocks, KNN_BLOCK, shm, B->stream>>>(j->d_x[slot], j->d_ids[slot],
																	p0, p1, tile_n, *B, qx, nq, nq,
																	dims, j->k, j->heap, self0, p == 0,
																	p == j->npart - 1, j->d_stop);
		}
		KNN_TRY(j, cudaGetLastError(), "kNN kernel launch");
		if (j->dev_index)
			continue;
		KNN_TRY(j, cudaEventRecord(j->slot_free[slot], B->stream), "event");
		if (j->npart > 1 && p + 2 < j->npart)
		{
			gj_status	st = upload_part(j, g, p + 2, slot);

			if (st != GJ_OK)
				return st;
		}
	}
	KNN_TRY(j, cudaMemcpyAsync(B->h_bd, B->d_bd, sizeof(double) * e,
							   cudaMemcpyDeviceToHost, B->stream), "result copy");
	KNN_TRY(j, cudaMemcpyAsync(B->h_bid, B->d_bid, sizeof(int64_t) * e,
							   cudaMemcpyDeviceToHost, B->stream), "result copy");
	KNN_TRY(j, cudaMemcpyAsync(B->h_bn, B->d_bn, sizeof(int32_t) * nq,
							   cudaMemcpyDeviceToHost, B->stream), "result copy");
	KNN_TRY(j, cudaEventRecord(B->done, B->stream), "event");
	return GJ_OK;
}

/* The id of the query at position pos of the batches' order. */
static inline int64_t
position_id(const struct gj_gpu_knn *j, int64_t pos)
{
	if (j->h_sorted_ids != NULL)
		return j->h_sorted_ids[pos];
	return j->queries->ids[j->order != NULL ? j->order[pos] : pos];
}

/* The id of the batch's query t. */
static inline int64_t
query_id(const struct gj_gpu_knn *j, const knn_batch_buf *B, int64_t t)
{
	return position_id(j, B->q0 + t);
}

/*
 * Wait for a batch (polling, so that a cancel is seen) and turn its lists
 * into rows (query id, reference id, rank, distance).
 */
static gj_status
emit_batch(struct gj_gpu_knn *j, knn_batch_buf *B)
{
	gj_chunk   *ch = NULL;
	cudaError_t e;

	while ((e = cudaEventQuery(B->done)) == cudaErrorNotReady)
	{
		if (__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
			return GJ_ERR_CANCELED;
		struct timespec ts = {0, 200000};

		nanosleep(&ts, NULL);
	}
	if (e != cudaSuccess)
	{
		set_error(j, GJ_ERR_CUDA, "kNN kernel", e);
		return j->eng.error;
	}
	if (j->info.first_ms == 0.0)
		j->info.first_ms = gj_now_ms() - j->t_start;
	if (B->logged >= 0)
	{
		gj_knn_batch_log *L = &j->log[B->logged];

		L->ready_ms = gj_now_ms() - j->t_search;
		if (cudaEventElapsedTime(&L->gpu_ms, B->began, B->done) != cudaSuccess)
			L->gpu_ms = -1.0f;
		cudaGetLastError();
	}
	for (int64_t t = 0; t < B->nq; t++)
	{
		int64_t		qid = query_id(j, B, t);

		for (int r = 0; r < B->h_bn[t]; r++)
		{
			size_t		at = (size_t) r * B->nq + t;

			if (ch != NULL && ch->n == ch->cap)
			{
				gj_queue_put_full(j->eng.q, ch);
				ch = NULL;
			}
			if (ch == NULL)
			{
				ch = gj_queue_get_free(j->eng.q);
				if (ch == NULL)
					return GJ_ERR_CANCELED;
				ch->n = 0;
			}
			ch->a[ch->n] = qid;
			ch->b[ch->n] = B->h_bid[at];
			ch->rank[ch->n] = r + 1;
			ch->dist[ch->n] = sqrt(B->h_bd[at]);
			ch->n++;
		}
	}
	if (ch != NULL)
		gj_queue_put_full(j->eng.q, ch);
	if (B->logged >= 0)
		j->log[B->logged].emitted_ms = gj_now_ms() - j->t_search;
	return GJ_OK;
}

/*
 * The first batch's queries.  The backend waits for the whole first batch
 * before its first row, and a full batch (65536 queries) searches for tens
 * of milliseconds; a sixteenth of it starts the output sooner (about 8 ms
 * on an H100 for 4096 uniform queries among clustered references: its
 * slowest search, one thread a query), and each later batch, twice the one
 * before, is done long before the backend has taken the rows of the
 * previous one.  Brute force starts
 * full: each of its queries scans every reference, so a small batch would
 * take as long as a full one with most of the GPU idle.  So do references
 * in partitions: every batch streams all of them through the device again.
 */
static int64_t
first_batch(const struct gj_gpu_knn *j)
{
	int64_t		n = j->batch / 16;

	if (!j->use_grid || j->npart > 1)
		return j->batch;

	return n > KNN_MIN_FIRST_BATCH ? n : KNN_MIN_FIRST_BATCH;
}

/*
 * A team member's next batch, at most n queries: the queries cut into
 * batches of one size, as many a member (the fewest batches of at most n
 * that m members can share evenly), so that equally fast members end
 * together with every batch full.  Four batches a member at least, so
 * that each has some to take.  A batch's device time has a floor (one
 * CTA's sweep: 18 ms on an H200 for 1,528 128-D queries against 26 ms
 * for 65,536), so small batches at the end, which the guided schedule
 * of stop 62 gave (a share of what was left, down to 16,384), made every
 * member as slow as the slower one had been (two H200s: members 218-222
 * ms against 198-219 with full batches to the last).
 */
static int64_t
team_batch(const struct gj_gpu_knn *j, int64_t n, int64_t nq)
{
	int64_t		m = gj_gpu_share_members(j->share),
				per,
				b;

	if (nq <= 0 || m <= 1)
		return n;				/* nothing to share (and no division by a zero count) */
	/* never above n: the batch buffers hold n queries (fewer where k is large) */
	b = nq / (4 * m);
	b = b > KNN_MIN_TEAM_BATCH ? b : KNN_MIN_TEAM_BATCH;
	n = n < b ? n : b;
	/* batches a member, then their even size, rounded up to whole thread blocks */
	per = (nq + m * n - 1) / (m * n);
	b = (nq + m * per - 1) / (m * per);
	b = (b + KNN_BLOCK - 1) / KNN_BLOCK * KNN_BLOCK;
	return b < n ? b : n;
}

/*
 * The batches, one after the other: positions [q0, q0 + n) of the order,
 * the next ones, or in a team the next ones no member has taken yet.
 */
static void *
driver_main(void *arg)
{
	struct gj_gpu_knn *j = (struct gj_gpu_knn *) arg;
	int64_t		nq = j->queries->n;
	int			cur = 0,
				launched = 0;
	int64_t		n = 0,
				next = 0;
	gj_status	st = GJ_OK;
	double		t0 = gj_now_ms();

	j->t_search = t0;

	/* a thread's device is 0 until set: run where the engine was made */
	if (cudaSetDevice(j->device) != cudaSuccess)
		st = GJ_ERR_CUDA;
	while (st == GJ_OK)
	{
		int64_t		q0;

		/* batches ramp up: the first rows leave while the GPU searches on */
		n = n == 0 ? first_batch(j) : 2 * n;
		n = n < j->batch ? n : j->batch;
		if (j->share != NULL)
			n = team_batch(j, n, nq);
		if (__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
			break;
		q0 = j->share != NULL ? gj_gpu_share_next(j->share, n) : next;
		if (q0 >= nq)
			break;
		n = nq - q0 < n ? nq - q0 : n;
		next = q0 + n;
		st = launch_batch(j, j->g, &j->buf[cur], q0, n);
		if (st != GJ_OK)
			break;
		/* while this batch runs, hand the previous one to the backend */
		if (launched)
			st = emit_batch(j, &j->buf[1 - cur]);
		launched = 1;
		j->info.batches++;
		cur = 1 - cur;
	}
	if (st == GJ_OK && launched)
		st = emit_batch(j, &j->buf[1 - cur]);
	j->info.search_ms = gj_now_ms() - t0;
	if (st != GJ_OK && st != GJ_ERR_CANCELED)
		set_error(j, st, "kNN batch", cudaSuccess);
	if (j->eng.error != GJ_OK)
		gj_queue_cancel(j->eng.q);
	gj_queue_producer_done(j->eng.q);
	return NULL;
}

/* --- the C boundary ------------------------------------------------------ */

static void
free_all(struct gj_gpu_knn *j)
{
	cudaDeviceSynchronize();
	cudaFree(j->d_cell_id);
	cudaFree(j->d_cell_start);
	gj_gpu_grid_free(&j->dg);
	gj_gpu_grid_free(&j->dq);
	cudaFree(j->d_qall);
	for (int b = 0; b < 2; b++)
	{
		knn_batch_buf *B = &j->buf[b];

		cudaFree(j->d_x[b]);
		if (j->part_ready[b])
			cudaEventDestroy(j->part_ready[b]);
		if (j->slot_free[b])
			cudaEventDestroy(j->slot_free[b]);
		cudaFree(B->d_q);
		cudaFree(B->d_bd);
		cudaFree(B->d_bid);
		cudaFree(B->d_bn);
		cudaFree(B->d_btop);
		gj_pinned_free(B->h_bd);
		gj_pinned_free(B->h_bid);
		gj_pinned_free(B->h_bn);
		gj_pinned_free(B->h_q);
		if (B->stream)
			cudaStreamDestroy(B->stream);
		if (B->done)
			cudaEventDestroy(B->done);
		if (B->began)
			cudaEventDestroy(B->began);
	}
	gj_knn_filter_free(&j->kf);
	if (j->copy_stream)
		cudaStreamDestroy(j->copy_stream);
	if (j->registered)
	{
		cudaHostUnregister(j->reg_x);
		cudaHostUnregister(j->reg_ids);
	}
	gj_gpu_stop_free(j->d_stop, j->stop_stream);
	j->d_stop = NULL;
	j->stop_stream = NULL;
	cudaGetLastError();
}

/* The engine interface's hooks (gj_core.h): what failed, what ran. */
static const char *
gpu_knn_error_text(const gj_engine *e)
{
	return ((const struct gj_gpu_knn *) e)->err;
}

static void
gpu_knn_report(const gj_engine *e, gj_engine_report *r)
{
	gj_gpu_knn_info gi;

	gj_gpu_knn_stats((const gj_gpu_knn *) e, &gi);
	r->batches = gi.batches;
	r->done_ms = gi.done_ms;
}

/*
 * Start the GPU kNN join of queries against refs.  With the grid method the
 * index is built on the device when it fits (refs keep their order), else
 * on the host (refs are sorted in place) and the references stream through
 * in partitions.  queries may be refs itself (exclude_self).
 */
typedef struct knn_args
{
	gj_points  *refs;
	const gj_points *queries;
	const gj_knn_options *opt;
} knn_args;

/* A member of a team of GPUs: the whole index on its device, its share of the queries. */
static gj_status
knn_member(void *arg, const gj_gpu_options *gopt, gj_engine **out, char *err, size_t errlen)
{
	knn_args   *a = (knn_args *) arg;

	return gj_gpu_knn_start(a->refs, a->queries, a->opt, gopt, (gj_gpu_knn **) out, err, errlen);
}

/*
 * A team's member: the references are shared with the other members, so
 * this one must not reorder them on the host (the team then runs on one
 * device, which may).
 */
static gj_status
knn_shared_refs(const struct gj_gpu_knn *j, char *err, size_t errlen)
{
	if (j->share == NULL)
		return GJ_OK;
	snprintf(err, errlen, "the references would be reordered on the host");
	return GJ_ERR_LIMIT;
}

/*
 * A team's member fingerprints the order of its queries (their ids
 * position by position) into order_fp; on a thread of its own beside the
 * filter's preparation, whose device work and allocations leave the host
 * thread waiting (1M ids: 2.3-2.9 ms a member on the two-H200 host, until
 * now added to the start).  A pthread start routine.
 */
static void *
knn_fingerprint(void *arg)
{
	struct gj_gpu_knn *j = (struct gj_gpu_knn *) arg;
	uint64_t	fp = gj_fp_mix(GJ_FP_SEED, (uint64_t) j->queries->n);

	for (int64_t pos = 0; pos < j->queries->n; pos++)
		fp = gj_fp_mix(fp, (uint64_t) position_id(j, pos));
	j->order_fp = fp;
	return NULL;
}

/*
 * A team's member publishes its order's fingerprint (order_fp): the shared
 * cursor hands out positions, so every member must have the same order.
 */
static gj_status
knn_publish(const struct gj_gpu_knn *j, char *err, size_t errlen)
{
	gj_status	st;

	if (j->share == NULL)
		return GJ_OK;
	st = gj_gpu_share_publish(j->share, j->order_fp, 0);
	if (st == GJ_ERR_LIMIT)
		snprintf(err, errlen, "the GPUs ordered the queries differently");
	return st;
}

extern "C" gj_status
gj_gpu_knn_start(gj_points *refs, const gj_points *queries,
				 const gj_knn_options *opt, const gj_gpu_options *gopt,
				 gj_gpu_knn **out, char *err, size_t errlen)
{
	struct gj_gpu_knn *j;
	size_t		free_mem,
				total_mem,
				budget;
	gj_status	st = GJ_OK;
	sigset_t	old;
	double		t0 = gj_now_ms();
	pthread_t	fp_thread;
	int			fp_started = 0;
	int64_t		k = gj_knn_effective_k(opt, refs->n);

	*out = NULL;
	err[0] = '\0';
	if (opt->k < 1 || refs->dims != queries->dims ||
		(opt->exclude_self && queries != refs) || opt->self_rows != NULL)
	{
		snprintf(err, errlen, "bad arguments");
		return GJ_ERR_ARG;
	}
	if (refs->n > GJ_MAX_ROWS || queries->n > GJ_MAX_ROWS || k > INT32_MAX / 64)
	{
		snprintf(err, errlen, "input beyond the GPU engine's limits");
		return GJ_ERR_LIMIT;
	}
	if (gj_gpu_team_wanted(gopt))
	{
		/* several GPUs: the handle is the team's, gj_gpu_knn_stats knows it */
		knn_args	a = {refs, queries, opt};

		return gj_gpu_team_start(gopt, knn_member, &a, (gj_engine **) out, err, errlen);
	}
	GJ_CUDA_CHECK(err, errlen, cudaMemGetInfo(&free_mem, &total_mem));
	budget = (size_t) (free_mem * 0.9);
	if (gopt != NULL && gopt->memory_limit > 0 && gopt->memory_limit < budget)
		budget = gopt->memory_limit;

	j = (struct gj_gpu_knn *) calloc(1, sizeof(struct gj_gpu_knn));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = gpu_knn_free;
	j->eng.on_gpu = 1;
	j->eng.error_text = gpu_knn_error_text;
	j->eng.report = gpu_knn_report;
	j->t_start = t0;
	j->share = gopt != NULL ? gopt->share : NULL;
	j->member = gopt != NULL ? gopt->member : 0;
	if (cudaGetDevice(&j->device) != cudaSuccess)
		cudaGetLastError();
	j->refs = refs;
	j->queries = queries;
	j->use_grid = gj_knn_pick_method(opt, refs->dims) == GJ_KNN_GRID;
	j->dims = refs->dims;
	j->k = (int) (k < 1 ? 1 : k);
	j->heap = k >= (opt->heap_min_k > 0 ? opt->heap_min_k : GJ_KNN_HEAP_MIN_K);
	j->exclude_self = opt->exclude_self;
	j->info.heap = j->heap;
	j->eng.q = gj_queue_create(6, 1);
	if (j->eng.q == NULL)
	{
		free(j);
		return GJ_ERR_NOMEM;
	}
	if (k == 0 || queries->n == 0 || refs->n == 0)
	{
		gj_queue_set_producers(j->eng.q, 0);
		*out = j;
		return GJ_OK;
	}
	st = gj_gpu_stop_alloc(&j->d_stop, &j->stop_stream, err, errlen);
	if (st == GJ_OK && cudaStreamCreateWithFlags(&j->copy_stream, cudaStreamNonBlocking) != cudaSuccess)
	{
		set_error(j, GJ_ERR_CUDA, "stream", cudaGetLastError());
		st = j->eng.error;
	}
	j->info.index_ms = gj_now_ms();
	if (st == GJ_OK && j->use_grid)
	{
		size_t		per_query = per_query_bytes(j);
		size_t		index = gj_gpu_grid_bytes(refs->n, j->dims);
		size_t		want_q = 2 * per_query * (size_t) (queries->n < 4096 ? queries->n : 4096);

		if (index + want_q <= budget)
		{
			/* the device index: the references stay resident */
			size_t		refs_resident = (size_t) refs->n * (sizeof(double) * j->dims + 16);

			j->dev_index = 1;
			j->budget_left = budget - refs_resident;
			st = build_device_index(j, j->copy_stream, err, errlen);
			if (st == GJ_OK)
			{
				size_t		resident = refs_resident + (size_t) j->dg.ncells * 12 +
					(size_t) j->dq.n * (sizeof(double) * j->dims + sizeof(uint32_t));

				j->batch = batch_size(j, budget > resident ? budget - resident : 0, per_query);
				if (j->batch < 1)
					st = GJ_ERR_DEVICE_OOM;
			}
		}
		else
		{
			/* too large: sort on the host, stream partitions */
			st = knn_shared_refs(j, err, errlen);
			if (st == GJ_OK)
				st = gj_knn_grid_build(&j->hgrid, refs);
			if (st == GJ_OK)
			{
				j->have_hgrid = 1;
				j->g = &j->hgrid;
				gj_knn_grid_view(&j->Gh, j->g, refs);
				if (!j->exclude_self && queries->n > 1)
					st = gj_knn_query_order(j->g, queries, &j->order);
			}
			if (st == GJ_OK)
				st = alloc_refs(j, j->g, budget);
		}
	}
	else if (st == GJ_OK)
		st = alloc_refs(j, NULL, budget);
	j->info.index_ms = gj_now_ms() - j->info.index_ms;
	if (st == GJ_OK)
	{
		double		t1 = gj_now_ms();

		j->Gh.stop = j->d_stop;
		resident_queries(j, budget);
		st = alloc_batches(j);
		j->info.alloc_ms = gj_now_ms() - t1;
	}
	if (st == GJ_OK && gopt != NULL &&
		(gopt->row_order != NULL || (gopt->block_plan != NULL && gopt->block_plan->m > 0)))
	{
		int			gathered = 0;

		if (!j->dev_index && j->npart == 1 && queries == refs && !j->use_grid)
		{
			size_t		used = (size_t) refs->n * (sizeof(double) * j->dims + sizeof(int64_t)) +
				2 * per_query_bytes(j) * (size_t) j->batch;

			st = upload_ordered(j, gopt->row_order, gopt->block_plan,
								budget > used ? budget - used : 0, &gathered);
		}
		if (st == GJ_OK && !gathered)
		{
			/*
			 * partitions, a grid, or no room: the host orders the rows before
			 * any upload (finding the order from the plan first)
			 */
			const uint32_t *order = gopt->row_order;
			uint32_t   *perm = NULL;

			st = knn_shared_refs(j, err, errlen);
			if (st == GJ_OK && order == NULL)
			{
				st = gj_block_plan_perm(refs, gopt->block_plan, &perm);
				order = perm;
			}
			if (st == GJ_OK && order != NULL)
				st = gj_points_apply_order(refs, order);
			free(perm);
			if (st == GJ_OK && !j->dev_index && j->npart == 1)
				st = upload_whole(j);
		}
		if (st == GJ_OK && cudaStreamSynchronize(j->copy_stream) != cudaSuccess)
			set_error(j, GJ_ERR_CUDA, "reference upload", cudaGetLastError());
		st = j->eng.error != GJ_OK ? j->eng.error : st;
	}
	else if (st == GJ_OK && !j->dev_index && j->npart == 1)
	{
		st = upload_whole(j);
		if (st == GJ_OK && cudaStreamSynchronize(j->copy_stream) != cudaSuccess)
			set_error(j, GJ_ERR_CUDA, "reference upload", cudaGetLastError());
		st = j->eng.error != GJ_OK ? j->eng.error : st;
	}
	if (st == GJ_OK && j->share != NULL)
	{
		/* the query order is final: its fingerprint beside the filter's preparation */
		gj_block_async_signals(&old);
		fp_started = pthread_create(&fp_thread, NULL, knn_fingerprint, j) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!fp_started)
			knn_fingerprint(j);
	}
	if (st == GJ_OK && !j->use_grid && j->npart == 1 && j->dims > GJ_KNN_GRID_MAX_DIMS &&
		(gopt == NULL || !gopt->no_filter))
	{
		double		t1 = gj_now_ms();

		/*
		 * many dimensions, every reference on the device: the tensor-core
		 * filter, where the references' norms allow it and its rows fit
		 * (otherwise the plain tiled scan, as exact, runs)
		 */
		st = gj_knn_filter_prepare(&j->kf, j->d_x[0], refs->n, j->dims, j->batch,
								   gj_knn_pick_method(opt, refs->dims) == GJ_KNN_BLOCKS,
								   j->copy_stream, &j->tc, err, errlen);
		if (st == GJ_ERR_DEVICE_OOM)
		{
			gj_knn_filter_free(&j->kf);
			j->tc = 0;
			err[0] = '\0';
			st = GJ_OK;
		}
		j->info.filter = j->tc;
		j->info.filter_ms = gj_now_ms() - t1;
	}
	if (fp_started)
	{
		double		t1 = gj_now_ms();

		pthread_join(fp_thread, NULL);	/* before j can be freed below */
		j->info.publish_ms = gj_now_ms() - t1;
	}
	if (st != GJ_OK)
	{
		if (err[0] == '\0')
			snprintf(err, errlen, "%s", j->eng.error != GJ_OK ? j->err :
					 st == GJ_ERR_DEVICE_OOM ? "the grid's cells do not fit the GPU memory share" :
					 gj_status_name(st));
		gpu_knn_free(&j->eng);
		return st;
	}
	j->info.partitions = j->npart;
	if (st == GJ_OK)
		pin_refs(j);
	if (st == GJ_OK)
	{
		double		t1 = gj_now_ms();

		st = knn_publish(j, err, errlen);
		j->info.publish_ms += gj_now_ms() - t1;
	}
	if (st != GJ_OK)
	{
		gpu_knn_free(&j->eng);
		return st;
	}
	j->info.upload_ms = gj_now_ms() - t0;

	gj_queue_set_producers(j->eng.q, 1);
	gj_block_async_signals(&old);
	if (pthread_create(&j->thread, NULL, driver_main, j) != 0)
	{
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		snprintf(err, errlen, "pthread_create failed");
		gpu_knn_free(&j->eng);
		return GJ_ERR_THREAD;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	j->started = 1;
	*out = j;
	return GJ_OK;
}

/* A team's are its first member's, with every member's batches and the last one's end. */
extern "C" void
gj_gpu_knn_stats(const gj_gpu_knn *j, gj_gpu_knn_info *st)
{
	gj_engine  *team = (gj_engine *) GJ_ENGINE(j);

	for (int i = 0; i < gj_team_size(team); i++)
	{
		const struct gj_gpu_knn *m = (const struct gj_gpu_knn *) gj_team_member(team, i);
		double		done = m->eng.q != NULL ? gj_queue_done_ms(m->eng.q) : 0.0;

		if (i == 0)
		{
			*st = m->info;
			st->done_ms = done;
			continue;
		}
		st->batches += m->info.batches;
		st->search_ms = st->search_ms > m->info.search_ms ? st->search_ms : m->info.search_ms;
		st->done_ms = st->done_ms > done ? st->done_ms : done;
	}
}

/* Engine j's own first batches (not a team's: ask each member), up to max; how many. */
extern "C" int
gj_gpu_knn_batches(const gj_gpu_knn *j, gj_knn_batch_log *out, int max)
{
	int			n = j->nlog < max ? j->nlog : max;

	memcpy(out, j->log, sizeof(gj_knn_batch_log) * n);
	return n;
}

extern "C" const char *
gj_gpu_knn_error(const gj_gpu_knn *j)
{
	return gj_engine_error_text(GJ_ENGINE(j));
}

static void
gpu_knn_free(gj_engine *e)
{
	struct gj_gpu_knn *j = (struct gj_gpu_knn *) e;
	gj_on_device on(j->device);

	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	gj_gpu_stop_raise(j->d_stop, j->stop_stream);
	if (j->eng.q != NULL)
		gj_queue_cancel(j->eng.q);
	if (j->started)
		pthread_join(j->thread, NULL);
	free_all(j);
	gj_queue_destroy(j->eng.q);
	if (j->have_hgrid)
		gj_grid_free(&j->hgrid);
	free(j->order);
	free(j->part_cell);
	free(j->h_sorted_ids);
	free(j);
}
