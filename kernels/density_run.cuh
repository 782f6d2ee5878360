/*
 * density_run.cuh
 *		What the GPU's per-row passes share (density.cu's counts and DBSCAN,
 *		lists.cu's neighbour lists): one run's device grid and per-row
 *		arrays, the walk over a cell's 3^n neighbourhood, and launches
 *		specialised for the common dimensionalities.
 */
#ifndef GJ_DENSITY_RUN_CUH
#define GJ_DENSITY_RUN_CUH

#include "density_boxes.cuh"
#include "../src/core/lattice.h"

#define GJ_DENSITY_BLOCK 256

/*
 * Call f(cell) for every non-empty cell of cell c's 3^n neighbourhood (c
 * included): along the last indexed dimension a range of ids around each
 * prefix, prefixes being zero and every forward prefix with its mirror.
 * Stops (returning false) when f does.
 */
template <typename F>
__device__ __forceinline__ bool
for_each_neighbour(const gj_dev_grid &G, const gj_grid_params &P, uint32_t c, F f)
{
	int64_t		cc[GJ_MAX_INDEXED_DIMS];
	int			last = P.nidx - 1;
	int64_t		id;

	if (P.nidx == 0)
		return f((int64_t) c);
	id = G.cell_id[c];
	{
		int64_t		rest = id;

		for (int k = last; k >= 0; k--)
		{
			cc[k] = rest % P.ncell_dim[k];
			rest /= P.ncell_dim[k];
		}
	}
	int64_t		has_lo = cc[last] > 0;
	int64_t		has_hi = cc[last] + 1 < P.ncell_dim[last];

	for (int p = -1; p < P.nprefix; p++)
		for (int sign = 1; sign >= -1; sign -= 2)
		{
			int64_t		base = id;

			if (p < 0 && sign < 0)
				continue;		/* the zero prefix has no mirror */
			if (p >= 0)
			{
				bool		valid = true;

				for (int k = 0; k < last; k++)
				{
					int64_t		ck = cc[k] + sign * P.prefix_vec[p][k];

					if (ck < 0 || ck >= P.ncell_dim[k])
						valid = false;
				}
				if (!valid)
					continue;
				base = id + sign * P.prefix_off[p];
			}
			for (int64_t k = gj_dev_lower_bound(G.cell_id, G.ncells, base - has_lo);
				 k < G.ncells && G.cell_id[k] <= base + has_hi; k++)
				if (!f(k))
					return false;
		}
	return true;
}

/* The point's coordinates, in registers when DIMS is known. */
template <int DIMS>
struct point_reg
{
	double		x[DIMS > 0 ? DIMS : 1];
	const double *p;

	__device__ __forceinline__ point_reg(const gj_dev_grid &G, int dims, uint32_t i)
	{
		if constexpr (DIMS > 0)
		{
#pragma unroll
			for (int d = 0; d < DIMS; d++)
				x[d] = G.xs[(int64_t) i * DIMS + d];
			p = x;
		}
		else
			p = G.xs + (int64_t) i * dims;
	}
};

/* Launch kernel K<DIMS> specialised for the common dimensionalities. */
#define LAUNCH_DIMS(K, dims, grid, stream, ...) \
	do { \
		switch (dims) \
		{ \
			case 1: K<1><<<grid, GJ_DENSITY_BLOCK, 0, stream>>>(__VA_ARGS__); break; \
			case 2: K<2><<<grid, GJ_DENSITY_BLOCK, 0, stream>>>(__VA_ARGS__); break; \
			case 3: K<3><<<grid, GJ_DENSITY_BLOCK, 0, stream>>>(__VA_ARGS__); break; \
			case 4: K<4><<<grid, GJ_DENSITY_BLOCK, 0, stream>>>(__VA_ARGS__); break; \
			default: K<0><<<grid, GJ_DENSITY_BLOCK, 0, stream>>>(__VA_ARGS__); break; \
		} \
	} while (0)

/* Everything one call holds on the device. */
typedef struct density_run
{
	cudaStream_t stream;
	cudaStream_t stop_stream;
	int		   *d_stop;
	gj_grid		plan;
	gj_grid_params P;
	gj_dev_grid G;
	int			have_grid;
	int32_t    *d_val;			/* counts, or representatives */
	int32_t    *d_parent;
	uint8_t    *d_core;
	long long  *d_minid;
	uint8_t    *d_compact;		/* per cell */
	int32_t    *d_first_core;	/* per cell */
	gj_dev_boxes B;				/* DBSCAN: the dense wide cells' boxes */
	gj_lattice	L;				/* uncapped counts: the dense cells' lattices (device arrays) */
	int32_t    *d_lat_of;		/* per cell: its lattice or -1; NULL: none */
	uint32_t   *d_order;		/* with the lattices: the rows in the order to count them */
	size_t		room;			/* device bytes the budget leaves beyond the above */
	int32_t    *d_val_out;
	uint8_t    *d_core_out;
} density_run;

/*
 * Budget check (the index and GJ_GPU_DENSITY_ROW_BYTES + extra_per_row a
 * row), upload, device index and per-row arrays (DBSCAN's too when
 * dbscan); run_free frees what it got, whatever failed.
 */
extern gj_status run_prepare(density_run *r, const gj_points *p, double eps2,
							 const gj_gpu_options *opt, int dbscan, size_t extra_per_row,
							 gj_gpu_density_info *info, char *err, size_t errlen);
extern void run_free(density_run *r);

/*
 * Lattices for the dense cells (dims <= 3), which run_launch_counts then
 * counts through when uncapped; left out (the counts go row by row) when
 * the budget has no room for them.  Synchronous, on r->stream.
 */
extern gj_status run_lattices(density_run *r, int dims, char *err, size_t errlen);
extern void run_lattices_free(density_run *r);

/*
 * Every row's count within eps, itself included, up to cap, into r->d_val
 * in the grid's sorted order: queued on r->stream, not waited for.
 */
extern void run_launch_counts(density_run *r, int dims, int32_t cap);

#endif							/* GJ_DENSITY_RUN_CUH */
