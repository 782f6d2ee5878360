/*
 * nocuda.c
 *		The CUDA boundary for builds without nvcc: there is never a GPU.
 */
#include <stdio.h>
#include <string.h>

#include "gj_cuda.h"

/* No CUDA in this build. */
gj_status
gj_cuda_probe(gj_cuda_device_info *info)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->error, sizeof(info->error), "built without CUDA");
	return GJ_ERR_NODEVICE;
}

gj_status
gj_gpu_use_device(int device, char *err, size_t errlen)
{
	(void) device;
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

const char *
gj_gpu_team_failure(void)
{
	return "";
}

const char *
gj_cuda_build_info(void)
{
	return "none (built without nvcc)";
}

gj_status
gj_gpu_selfjoin_start(const gj_points *p, double eps2, const gj_gpu_options *opt,
					  gj_gpu_selfjoin **out, char *err, size_t errlen)
{
	(void) p;
	(void) eps2;
	(void) opt;
	*out = NULL;
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

/* Never reached: start never succeeds in this build. */
void
gj_gpu_selfjoin_stats(const gj_gpu_selfjoin *j, gj_gpu_stats *st)
{
	(void) j;
	memset(st, 0, sizeof(*st));
}

const char *
gj_gpu_selfjoin_error(const gj_gpu_selfjoin *j)
{
	(void) j;
	return "built without CUDA";
}

void
gj_gpu_release_cache(void)
{
}

gj_status
gj_gpu_knn_start(gj_points *refs, const gj_points *queries,
				 const gj_knn_options *opt,
				 const gj_gpu_options *gopt, gj_gpu_knn **out,
				 char *err, size_t errlen)
{
	(void) refs;
	(void) queries;
	(void) opt;
	(void) gopt;
	*out = NULL;
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

void
gj_gpu_knn_stats(const gj_gpu_knn *j, gj_gpu_knn_info *st)
{
	(void) j;
	memset(st, 0, sizeof(*st));
}

int
gj_gpu_knn_batches(const gj_gpu_knn *j, gj_knn_batch_log *out, int max)
{
	(void) j;
	(void) out;
	(void) max;
	return 0;
}

const char *
gj_gpu_knn_error(const gj_gpu_knn *j)
{
	(void) j;
	return "built without CUDA";
}

size_t
gj_gpu_grid_bytes(int64_t n, int dims)
{
	return (size_t) n * (16 * (size_t) dims + 112);
}

gj_status
gj_gpu_join_start(const gj_points *p, const gj_points *queries, double eps2, int swap,
				  const gj_gpu_options *opt, gj_gpu_selfjoin **out, char *err,
				  size_t errlen)
{
	(void) p;
	(void) queries;
	(void) eps2;
	(void) swap;
	(void) opt;
	*out = NULL;
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

gj_status
gj_gpu_join_counts(const gj_points *p, const gj_points *queries, double eps2,
				   const gj_gpu_options *opt, int32_t *counts,
				   gj_gpu_density_info *info, char *err, size_t errlen)
{
	(void) p;
	(void) queries;
	(void) eps2;
	(void) opt;
	(void) counts;
	memset(info, 0, sizeof(*info));
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

gj_status
gj_gpu_count_within(const gj_points *p, double eps2, int32_t cap,
					const gj_gpu_options *opt, int32_t *counts,
					gj_gpu_density_info *info, char *err, size_t errlen)
{
	(void) p;
	(void) eps2;
	(void) cap;
	(void) opt;
	(void) counts;
	memset(info, 0, sizeof(*info));
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

gj_status
gj_gpu_dbscan(const gj_points *p, double eps2, int32_t minpts,
			  const gj_gpu_options *opt, int32_t *root, uint8_t *core,
			  gj_gpu_density_info *info, char *err, size_t errlen)
{
	(void) p;
	(void) eps2;
	(void) minpts;
	(void) opt;
	(void) root;
	(void) core;
	memset(info, 0, sizeof(*info));
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

gj_status
gj_gpu_order_along(const gj_points *p, int dim, const gj_gpu_options *opt, uint32_t *perm,
				   char *err, size_t errlen)
{
	(void) p;
	(void) dim;
	(void) opt;
	(void) perm;
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

gj_status
gj_gpu_dbscan_given(const gj_points *p, double eps2, const uint8_t *core,
					const int64_t *key, const gj_gpu_options *opt, int32_t *rep,
					gj_gpu_density_info *info, char *err, size_t errlen)
{
	(void) p;
	(void) eps2;
	(void) core;
	(void) key;
	(void) opt;
	(void) rep;
	memset(info, 0, sizeof(*info));
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

static gj_status
no_join_counts(void *arg, const gj_points *s, const gj_points *r, double eps2,
			   int32_t *counts)
{
	(void) s;
	(void) r;
	(void) eps2;
	(void) counts;
	snprintf(((gj_gpu_slab_ctx *) arg)->err, 256, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

static gj_status
no_dbscan_given(void *arg, const gj_points *w, double eps2, const uint8_t *core,
				const int64_t *key, int32_t *rep)
{
	(void) w;
	(void) eps2;
	(void) core;
	(void) key;
	(void) rep;
	snprintf(((gj_gpu_slab_ctx *) arg)->err, 256, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

void
gj_gpu_slab_engine(gj_slab_engine *e, gj_gpu_slab_ctx *ctx)
{
	memset(ctx->err, 0, sizeof(ctx->err));
	memset(&ctx->info, 0, sizeof(ctx->info));
	e->arg = ctx;
	e->join_counts = no_join_counts;
	e->dbscan_given = no_dbscan_given;
	e->order = NULL;
	e->rows = NULL;
}

gj_status
gj_gpu_tiles_start(const gj_points *p, const gj_tiles_options *opt,
				   const gj_gpu_options *gopt, gj_gpu_tiles **out, char *err, size_t errlen)
{
	(void) p;
	(void) opt;
	(void) gopt;
	*out = NULL;
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

/* Never reached: start never succeeds in this build. */
void
gj_gpu_tiles_stats(const gj_gpu_tiles *j, gj_gpu_tiles_info *info)
{
	(void) j;
	memset(info, 0, sizeof(*info));
}

const char *
gj_gpu_tiles_error(const gj_gpu_tiles *j)
{
	(void) j;
	return "built without CUDA";
}

gj_status
gj_gpu_tiles_gram_error(const gj_points *p, double *worst, char *err, size_t errlen)
{
	(void) p;
	*worst = 0;
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

gj_status
gj_gpu_lists_start(const gj_points *p, double eps2, const gj_gpu_options *opt,
				   gj_gpu_lists **out, char *err, size_t errlen)
{
	(void) p;
	(void) eps2;
	(void) opt;
	*out = NULL;
	snprintf(err, errlen, "built without CUDA");
	return GJ_ERR_NODEVICE;
}

gj_status
gj_gpu_lists_start_windows(const gj_points *p, double eps2, const gj_gpu_options *opt,
						   const gj_slab_window *win, int64_t nwin, gj_gpu_lists **out,
						   char *err, size_t errlen)
{
	(void) win;
	(void) nwin;
	return gj_gpu_lists_start(p, eps2, opt, out, err, errlen);
}

size_t
gj_gpu_lists_device_bytes(size_t memory_limit)
{
	(void) memory_limit;
	return 0;
}

/* Never reached: start never succeeds in this build. */
void
gj_gpu_lists_stats(const gj_gpu_lists *j, gj_gpu_lists_info *info)
{
	(void) j;
	memset(info, 0, sizeof(*info));
}

const char *
gj_gpu_lists_error(const gj_gpu_lists *j)
{
	(void) j;
	return "built without CUDA";
}
