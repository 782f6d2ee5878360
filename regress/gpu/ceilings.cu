/*
 * ceilings.cu
 *		The device's arithmetic ceilings, measured: what the benchmarks
 *		compare the joins with, in the same run, instead of a data sheet.
 *
 * Loops of independent operations, every SM full, timed by events: FP64
 * tensor-core products (mma m8n8k4 and sm_90's m16n8k16, the Gram form's
 * instructions: the faster is its ceiling),
 * TF32 tensor-core products (mma.sync m16n8k8, the instruction the tile
 * filters use; Hopper's wgmma is faster and unused here), and FP64 fused
 * multiply-adds on the vector pipes.  Each is run twice and the faster
 * kept.  Linked into the benchmark programs only, not the extension.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.cuh"
#include "gpu_bench.h"
#include "tile_math.cuh"

#define CEIL_ITERS 4096
#define CEIL_CHAINS 4

/* FP64 mma: CEIL_CHAINS independent 8x8 accumulators a warp. */
__global__ static void
fp64_mma_kernel(double seed, double *sink)
{
	double		a = seed + threadIdx.x,
				b = seed - threadIdx.x;
	double		c[CEIL_CHAINS][2];

	for (int k = 0; k < CEIL_CHAINS; k++)
		c[k][0] = c[k][1] = 0.0;
	for (int it = 0; it < CEIL_ITERS; it++)
		for (int k = 0; k < CEIL_CHAINS; k++)
			asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 "
						 "{%0, %1}, {%2}, {%3}, {%0, %1};"
						 : "+d"(c[k][0]), "+d"(c[k][1]) : "d"(a), "d"(b));
	for (int k = 0; k < CEIL_CHAINS; k++)
		if (c[k][0] + c[k][1] == 12345.678)
			*sink = c[k][0];	/* never: keeps the loop */
}

/* FP64 mma m16n8k16 (sm_90): CEIL_CHAINS independent 16x8 accumulators a warp. */
__global__ static void
fp64_mma16_kernel(double seed, double *sink)
{
	double		a = seed + threadIdx.x,
				b = seed - threadIdx.x;
	double		c[CEIL_CHAINS][4];

	for (int k = 0; k < CEIL_CHAINS; k++)
		c[k][0] = c[k][1] = c[k][2] = c[k][3] = 0.0;
	for (int it = 0; it < CEIL_ITERS / 4; it++)
		for (int k = 0; k < CEIL_CHAINS; k++)
			asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 "
						 "{%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, "
						 "{%12, %13, %14, %15}, {%0, %1, %2, %3};"
						 : "+d"(c[k][0]), "+d"(c[k][1]), "+d"(c[k][2]), "+d"(c[k][3])
						 : "d"(a), "d"(b), "d"(a), "d"(b), "d"(a), "d"(b), "d"(a), "d"(b),
						 "d"(a), "d"(b), "d"(a), "d"(b));
	for (int k = 0; k < CEIL_CHAINS; k++)
		if (c[k][0] + c[k][3] == 12345.678)
			*sink = c[k][0];
}

/* TF32 mma m16n8k8 (float accumulators), CEIL_CHAINS independent ones a warp. */
__global__ static void
tf32_mma_kernel(float seed, float *sink)
{
	uint32_t	a = __float_as_uint(seed + threadIdx.x) & 0xffffe000u,
				b = __float_as_uint(seed - threadIdx.x) & 0xffffe000u;
	float		c[CEIL_CHAINS][4];

	for (int k = 0; k < CEIL_CHAINS; k++)
		c[k][0] = c[k][1] = c[k][2] = c[k][3] = 0.0f;
	for (int it = 0; it < CEIL_ITERS; it++)
		for (int k = 0; k < CEIL_CHAINS; k++)
			asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
						 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
						 : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
						 : "r"(a), "r"(b), "r"(a), "r"(b), "r"(a), "r"(b));
	for (int k = 0; k < CEIL_CHAINS; k++)
		if (c[k][0] + c[k][3] == 12345.678f)
			*sink = c[k][0];
}

/* FP64 fused multiply-adds, 8 independent chains a thread. */
__global__ static void
fp64_fma_kernel(double seed, double *sink)
{
	double		x[8],
				m = 1.0 - 1e-9;

	for (int k = 0; k < 8; k++)
		x[k] = seed + threadIdx.x + k;
	for (int it = 0; it < CEIL_ITERS; it++)
		for (int k = 0; k < 8; k++)
			x[k] = __fma_rn(x[k], m, 1e-9);
	for (int k = 0; k < 8; k++)
		if (x[k] == 12345.678)
			*sink = x[k];
}

/* Seconds of the faster of two launches of kernel k (0-3) on grid x 256 threads. */
static cudaError_t
time_kernel(int k, int grid, void *sink, double *secs)
{
	cudaEvent_t e0,
				e1;
	cudaError_t e;

	*secs = 1e30;
	e = cudaEventCreate(&e0);
	if (e == cudaSuccess)
		e = cudaEventCreate(&e1);
	for (int r = 0; r < 3 && e == cudaSuccess; r++)
	{
		float		ms = 0.0f;

		cudaEventRecord(e0);
		if (k == 0)
			fp64_mma_kernel<<<grid, 256>>>(1.0, (double *) sink);
		else if (k == 1)
			tf32_mma_kernel<<<grid, 256>>>(1.0f, (float *) sink);
		else if (k == 3)
			fp64_mma16_kernel<<<grid, 256>>>(1.0, (double *) sink);
		else
			fp64_fma_kernel<<<grid, 256>>>(1.0, (double *) sink);
		cudaEventRecord(e1);
		e = cudaEventSynchronize(e1);
		if (e == cudaSuccess)
			e = cudaEventElapsedTime(&ms, e0, e1);
		if (e == cudaSuccess && r > 0 && ms * 1e-3 < *secs)
			*secs = ms * 1e-3;	/* the first launch warms up */
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	return e;
}

extern "C" gj_status
gj_gpu_measure_ceilings(gj_gpu_ceilings *c, char *err, size_t errlen)
{
	int			dev = 0,
				sms = 0;
	void	   *sink = NULL;
	double		s;
	double		warps;
	cudaError_t e;

	memset(c, 0, sizeof(*c));
	GJ_CUDA_CHECK(err, errlen, cudaGetDevice(&dev));
	GJ_CUDA_CHECK(err, errlen, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
	GJ_CUDA_CHECK(err, errlen, cudaMalloc(&sink, 64));
	/* 8 blocks of 8 warps an SM: every scheduler has several warps */
	warps = (double) sms * 8 * 8;
	e = time_kernel(0, sms * 8, sink, &s);
	if (e == cudaSuccess)
		c->fp64_mma_m8n8k4 = warps * CEIL_ITERS * CEIL_CHAINS * (2.0 * 8 * 8 * 4) / s;
	if (e == cudaSuccess)
		e = time_kernel(3, sms * 8, sink, &s);
	if (e == cudaSuccess)
		c->fp64_mma_m16n8k16 = warps * (CEIL_ITERS / 4) * CEIL_CHAINS * (2.0 * 16 * 8 * 16) / s;
	/* the Gram form's ceiling: the faster shape */
	c->fp64_tensor = c->fp64_mma_m8n8k4 > c->fp64_mma_m16n8k16 ? c->fp64_mma_m8n8k4 :
		c->fp64_mma_m16n8k16;
	if (e == cudaSuccess)
		e = time_kernel(1, sms * 8, sink, &s);
	if (e == cudaSuccess)
		c->tf32_tensor = warps * CEIL_ITERS * CEIL_CHAINS * (2.0 * 16 * 8 * 8) / s;
	if (e == cudaSuccess)
		e = time_kernel(2, sms * 8, sink, &s);
	if (e == cudaSuccess)
		c->fp64_fma = warps * 32 * CEIL_ITERS * 8 * 2.0 / s;
	cudaFree(sink);
	if (e != cudaSuccess)
	{
		snprintf(err, errlen, "ceilings: %s", cudaGetErrorName(e));
		cudaGetLastError();
		return gj_cuda_status(e);
	}
	return GJ_OK;
}

extern "C" int
gj_bench_pin(void *p, size_t bytes, int on)
{
	cudaError_t e = on ? cudaHostRegister(p, bytes, cudaHostRegisterPortable) : cudaHostUnregister(p);

	cudaGetLastError();
	return e == cudaSuccess ? 0 : -1;
}

/*
 * gj_upload_staged (pinned.cu) of bytes, from pageable or page-locked
 * memory (pinned), to the current device and back: 0 when every byte came
 * back as it was, -1 when not, -2 when the buffers could not be had.  The
 * source is offset by 3 bytes and of an odd size, so the copiers' pieces
 * end anywhere.
 */
extern "C" int
gj_bench_upload_roundtrip(size_t bytes, int pinned)
{
	char	   *src = (char *) malloc(bytes + 3),
			   *back = (char *) malloc(bytes);
	void	   *d = NULL;
	cudaStream_t s = NULL;
	int			r = -2;

	if (src != NULL && back != NULL && cudaMalloc(&d, bytes) == cudaSuccess &&
		cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
		(!pinned || cudaHostRegister(src, bytes + 3, cudaHostRegisterPortable) == cudaSuccess))
	{
		uint64_t	x = 88172645463325252ULL;

		for (size_t i = 0; i < bytes + 3; i++)
		{
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			src[i] = (char) x;
		}
		memset(back, 0, bytes);
		r = gj_upload_staged(d, src + 3, bytes, s) == cudaSuccess &&
			cudaMemcpy(back, d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
			memcmp(back, src + 3, bytes) == 0 ? 0 : -1;
		if (pinned)
			cudaHostUnregister(src);
	}
	cudaGetLastError();
	if (s != NULL)
		cudaStreamDestroy(s);
	cudaFree(d);
	free(src);
	free(back);
	return r;
}

/*
 * The ways bytes of host memory at src can reach the current device, each
 * timed (ms): [0] gj_upload_staged (the host's copies into pinned chunks),
 * [1] cudaHostRegister of src, [2] one DMA from it so registered,
 * [3] cudaHostUnregister.  0: all ran.
 */
extern "C" int
gj_bench_upload_ways(const void *src, size_t bytes, double ms[4])
{
	void	   *d = NULL;
	cudaStream_t s = NULL;
	double		t;
	int			r = -1;

	if (cudaMalloc(&d, bytes) == cudaSuccess &&
		cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess)
	{
		t = gj_now_ms();
		if (gj_upload_staged(d, src, bytes, s) == cudaSuccess)
		{
			ms[0] = gj_now_ms() - t;
			t = gj_now_ms();
			if (cudaHostRegister((void *) src, bytes, cudaHostRegisterDefault) == cudaSuccess)
			{
				ms[1] = gj_now_ms() - t;
				t = gj_now_ms();
				if (cudaMemcpyAsync(d, src, bytes, cudaMemcpyHostToDevice, s) == cudaSuccess &&
					cudaStreamSynchronize(s) == cudaSuccess)
				{
					ms[2] = gj_now_ms() - t;
					r = 0;
				}
				t = gj_now_ms();
				cudaHostUnregister((void *) src);
				ms[3] = gj_now_ms() - t;
			}
		}
	}
	cudaGetLastError();
	if (s != NULL)
		cudaStreamDestroy(s);
	cudaFree(d);
	return r;
}

/* --- several devices' uploads at once (gj_bench_upload_team) --- */

typedef struct up_member
{
	int			dev;
	int			ndev;
	int			mode;
	const char *src;
	size_t		bytes;
	char	   *d;				/* the whole bytes on this device */
	cudaStream_t s;
	pthread_barrier_t *bar;
	struct up_member *all;
	double		ms;
	cudaError_t e;
} up_member;

static void *
up_member_main(void *arg)
{
	up_member  *m = (up_member *) arg;
	int			n = m->ndev,
				i = m->dev;
	size_t		lo = m->bytes / n * i,
				hi = i == n - 1 ? m->bytes : m->bytes / n * (i + 1);
	double		t;

	m->e = cudaSetDevice(i);
	pthread_barrier_wait(m->bar);
	t = gj_now_ms();
	/* from the host: each device its part (0), all of it (1), device 0 all of it (2) */
	if (m->e == cudaSuccess && m->mode == 0)
		m->e = gj_upload_staged(m->d + lo, m->src + lo, hi - lo, m->s);
	else if (m->e == cudaSuccess && (m->mode == 1 || i == 0))
		m->e = gj_upload_staged(m->d, m->src, m->bytes, m->s);
	pthread_barrier_wait(m->bar);
	/* then across: the others' parts (0), or device 0's whole copy (2) */
	for (int j = 0; j < n && m->e == cudaSuccess && m->mode == 0; j++)
	{
		size_t		a = m->bytes / n * j,
					b = j == n - 1 ? m->bytes : m->bytes / n * (j + 1);

		if (j != i)
			m->e = cudaMemcpyPeerAsync(m->d + a, i, m->all[j].d + a, j, b - a, m->s);
	}
	if (m->e == cudaSuccess && m->mode == 2 && i != 0)
		m->e = cudaMemcpyPeerAsync(m->d, i, m->all[0].d, 0, m->bytes, m->s);
	if (m->e == cudaSuccess)
		m->e = cudaStreamSynchronize(m->s);
	m->ms = gj_now_ms() - t;
	pthread_barrier_wait(m->bar);
	return NULL;
}

/*
 * bytes of host memory at src onto each of devices 0 .. ndev-1 at once,
 * timed (*ms: until the last device has them all).  mode 0: each device
 * stages 1/ndev of the bytes, then copies the others' parts from their
 * devices (the team's gj_gpu_share_upload); 1: each stages all; 2: device
 * 0 stages all, then the others copy it from device 0.  0: done.
 */
extern "C" int
gj_bench_upload_team(const void *src, size_t bytes, int ndev, int mode, double *ms)
{
	up_member	m[8];
	pthread_t	th[8];
	pthread_barrier_t bar;
	int			r = 0;

	if (ndev < 1 || ndev > 8)
		return -1;
	memset(m, 0, sizeof(m));
	pthread_barrier_init(&bar, NULL, (unsigned) ndev);
	for (int i = 0; i < ndev; i++)
	{
		m[i].dev = i;
		m[i].ndev = ndev;
		m[i].mode = mode;
		m[i].src = (const char *) src;
		m[i].bytes = bytes;
		m[i].bar = &bar;
		m[i].all = m;
		if (cudaSetDevice(i) != cudaSuccess || cudaMalloc(&m[i].d, bytes) != cudaSuccess ||
			cudaStreamCreateWithFlags(&m[i].s, cudaStreamNonBlocking) != cudaSuccess)
			r = -1;
		for (int j = 0; j < ndev && r == 0; j++)
			if (j != i)
			{
				cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);

				if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
					r = -1;
			}
		cudaGetLastError();
	}
	for (int i = 0; i < ndev && r == 0; i++)
		if (pthread_create(&th[i], NULL, up_member_main, &m[i]) != 0)
		{
			/*
			 * the started ones wait at the barrier for ever (it is no
			 * cancellation point): a benchmark program can only stop
			 */
			fprintf(stderr, "gj_bench_upload_team: pthread_create failed\n");
			exit(2);
		}
	if (r == 0)
		for (int i = 0; i < ndev; i++)
		{
			pthread_join(th[i], NULL);
			if (m[i].e != cudaSuccess)
				r = -1;
			*ms = i == 0 || m[i].ms > *ms ? m[i].ms : *ms;
		}
	for (int i = 0; i < ndev; i++)
	{
		cudaSetDevice(i);
		if (m[i].s != NULL)
			cudaStreamDestroy(m[i].s);
		cudaFree(m[i].d);
	}
	cudaSetDevice(0);
	cudaGetLastError();
	pthread_barrier_destroy(&bar);
	return r;
}

/* cvt.rna.tf32.f32 on the host: to nearest, ties away from zero, 13 low bits zero. */
static float
host_tf32(float v)
{
	uint32_t	u;

	memcpy(&u, &v, 4);
	if ((u & 0x7f800000u) != 0x7f800000u)
		u = (u + 0x1000u) & ~0x1fffu;
	memcpy(&v, &u, 4);
	return v;
}

/*
 * The filter rows' kernel (tile_math.cuh's prep_kernel) against the rule
 * it implements, computed here row by row in the same order: f and h
 * bit for bit, r within 1e-12 of the host's (the device may fuse a * a
 * into its sum; r is a bound widened by 1e-9).  n rows of dims random
 * coordinates (some huge, some tiny), centred on one point (mstride 0) or
 * on each block's own (mstride dims), as TF32 or float32.  0: equal.
 */
extern "C" int
gj_bench_prep_check(int64_t n, int dims, int per_block, int tf32, uint64_t seed)
{
	int			dp = (dims + 7) / 8 * 8;
	int64_t		nb = (n + TILE - 1) / TILE,
				mstride = per_block ? dims : 0,
				nm = per_block ? nb * dims : dims;
	double	   *x = (double *) malloc(sizeof(double) * n * dims),
			   *m = (double *) malloc(sizeof(double) * nm),
			   *r = (double *) malloc(sizeof(double) * n);
	float	   *f = (float *) malloc(sizeof(float) * n * dp),
			   *h = (float *) malloc(sizeof(float) * n);
	double	   *dx = NULL,
			   *dm = NULL,
			   *dr = NULL;
	float	   *df = NULL,
			   *dh = NULL;
	int			bad = -2;

	if (x && m && r && f && h &&
		cudaMalloc(&dx, sizeof(double) * n * dims) == cudaSuccess &&
		cudaMalloc(&dm, sizeof(double) * nm) == cudaSuccess &&
		cudaMalloc(&dr, sizeof(double) * n) == cudaSuccess &&
		cudaMalloc(&df, sizeof(float) * n * dp) == cudaSuccess &&
		cudaMalloc(&dh, sizeof(float) * n) == cudaSuccess)
	{
		uint64_t	z = seed * 2654435761u + 1;

		for (int64_t i = 0; i < n * dims; i++)
		{
			z ^= z << 13;
			z ^= z >> 7;
			z ^= z << 17;
			x[i] = ((double) (z >> 11) / 9007199254740992.0 - 0.5) *
				((z & 15) == 0 ? 1e6 : (z & 15) == 1 ? 1e-6 : 1.0);
		}
		for (int64_t i = 0; i < nm; i++)
			m[i] = x[i % (n * dims)] * 0.5;
		cudaMemcpy(dx, x, sizeof(double) * n * dims, cudaMemcpyHostToDevice);
		cudaMemcpy(dm, m, sizeof(double) * nm, cudaMemcpyHostToDevice);
		cudaMemset(df, 0xff, sizeof(float) * n * dp);	/* poison: every value must be written */
		prep_launch(dx, dm, mstride, n, dims, dp, tf32, df, dh, dr, 0);
		if (cudaDeviceSynchronize() == cudaSuccess &&
			cudaMemcpy(f, df, sizeof(float) * n * dp, cudaMemcpyDeviceToHost) == cudaSuccess &&
			cudaMemcpy(h, dh, sizeof(float) * n, cudaMemcpyDeviceToHost) == cudaSuccess &&
			cudaMemcpy(r, dr, sizeof(double) * n, cudaMemcpyDeviceToHost) == cudaSuccess)
		{
			bad = 0;
			for (int64_t i = 0; i < n && bad == 0; i++)
			{
				const double *mi = m + (i / TILE) * mstride;
				double		nf = 0.0,
							na = 0.0,
							rr;

				for (int k = 0; k < dp; k++)
				{
					float		v = 0.0f;

					if (k < dims)
					{
						double		a = x[i * dims + k] - mi[k];

						v = tf32 ? host_tf32((float) a) : (float) a;
						na += a * a;
					}
					if (memcmp(&v, &f[i * dp + k], 4) != 0)
						bad = -1;
					nf += (double) v * (double) v;
				}
				rr = sqrt(na) * (1.0 + 1e-9);
				if ((float) (nf * 0.5) != h[i] || fabs(r[i] - rr) > 1e-12 * rr)
					bad = -1;
			}
		}
	}
	cudaGetLastError();
	cudaFree(dx);
	cudaFree(dm);
	cudaFree(dr);
	cudaFree(df);
	cudaFree(dh);
	free(x);
	free(m);
	free(r);
	free(f);
	free(h);
	return bad;
}
