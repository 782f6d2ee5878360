/*
 * shared_rows.c
 *		The parallel read's rows in an anonymous shared file (Linux memfd):
 *		made by the reader, opened by its parallel workers through /proc,
 *		its pages faulted in beside the read and freed off the reader's path.
 *
 * A PostgreSQL dynamic shared memory segment of 1 GB (1M rows of 128
 * dimensions) costs the reader three single-threaded passes over its
 * pages that have nothing to do with the rows (regress/bench_shm.c, and
 * regress/BENCHMARKS.md for the GPU host): posix_fallocate allocates and
 * zeroes every page before the query can start; the reader faults on every
 * page again when it reads the rows back; and the last detach unmaps and
 * frees every page before the query can end.  PostgreSQL fallocates so that
 * a full /dev/shm fails the creation rather than a later write with
 * SIGBUS.  A memfd lives on the kernel's internal tmpfs mount, which has
 * no size of its own (its pages count as the backend's memory, like a
 * malloc'd buffer), so it needs no fallocate: the workers' writes allocate
 * its pages in parallel, a few helper threads of the reader fault the
 * reader's own mapping in while the query runs, and a helper thread unmaps
 * and closes it when the rows are done with.
 *
 * A parallel worker is a separate process started by the postmaster, so
 * the reader cannot hand it a descriptor; it opens /proc/<reader>/fd/<fd>
 * instead (same user, so allowed), checks the file's size before mapping
 * it (a write past its end would raise SIGBUS) and the token at its start.
 * Where any of this is unavailable (not Linux, no /proc) the caller falls
 * back to a PostgreSQL segment.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared_rows.h"

#define FAULT_CHUNK ((size_t) 32 << 20)	/* bytes a helper faults between stop checks */

#if defined(__linux__) && defined(MFD_CLOEXEC)
#define HAVE_SHARED_ROWS 1
#endif

typedef struct fault_job
{
	char	   *lo;
	char	   *hi;
	atomic_int *stop;
} fault_job;

struct gj_shared_rows_faulting
{
	pthread_t	threads[GJ_SHARED_ROWS_FAULTERS];
	fault_job	jobs[GJ_SHARED_ROWS_FAULTERS];
	int			started;
	atomic_int	stop;
};

void
gj_shared_rows_init(gj_shared_rows *r)
{
	r->fd = -1;
	r->base = NULL;
	r->bytes = 0;
	r->faulting = NULL;
}

/* Map fd's first bytes read-write and shared; NULL on failure. */
static void *
map_file(int fd, size_t bytes)
{
	void	   *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

int
gj_shared_rows_create(gj_shared_rows *r, size_t bytes)
{
	gj_shared_rows_init(r);
#ifdef HAVE_SHARED_ROWS
	r->fd = memfd_create("gpujoin-read", MFD_CLOEXEC);
	if (r->fd < 0)
		return -1;
	if (ftruncate(r->fd, (off_t) bytes) != 0 || (r->base = map_file(r->fd, bytes)) == NULL)
	{
		close(r->fd);
		r->fd = -1;
		return -1;
	}
	r->bytes = bytes;
	return 0;
#else
	(void) bytes;
	return -1;
#endif
}

int
gj_shared_rows_open(gj_shared_rows *r, int pid, int fd, size_t bytes)
{
	char		path[64];
	struct stat sb;

	gj_shared_rows_init(r);
#ifdef HAVE_SHARED_ROWS
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	r->fd = open(path, O_RDWR | O_CLOEXEC);
	if (r->fd < 0)
		return -1;
	/* a shorter file (not the reader's) would fault past its end */
	if (fstat(r->fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (size_t) sb.st_size < bytes ||
		(r->base = map_file(r->fd, bytes)) == NULL)
	{
		close(r->fd);
		r->fd = -1;
		return -1;
	}
	r->bytes = bytes;
	return 0;
#else
	(void) path;
	(void) sb;
	(void) pid;
	(void) fd;
	(void) bytes;
	return -1;
#endif
}

/*
 * Fault [lo, hi) in, writable, a chunk at a time until told to stop.
 * MADV_POPULATE_WRITE (Linux 5.14) fails with an error where a touch would
 * raise a signal; without it the pages are left to fault when first used.
 */
static void *
fault_range(void *arg)
{
	fault_job  *j = arg;

#ifdef MADV_POPULATE_WRITE
	for (char *p = j->lo; p < j->hi && !atomic_load(j->stop); p += FAULT_CHUNK)
	{
		size_t		len = (size_t) (j->hi - p) < FAULT_CHUNK ? (size_t) (j->hi - p) : FAULT_CHUNK;

		if (madvise(p, len, MADV_POPULATE_WRITE) != 0)
			break;
	}
#else
	(void) j;
#endif
	return NULL;
}

void
gj_shared_rows_fault_in(gj_shared_rows *r, int nthreads)
{
	struct gj_shared_rows_faulting *f;
	size_t		pages,
				per;

	if (r->base == NULL || r->faulting != NULL || nthreads < 1)
		return;
	if (nthreads > GJ_SHARED_ROWS_FAULTERS)
		nthreads = GJ_SHARED_ROWS_FAULTERS;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return;
	atomic_init(&f->stop, 0);
	pages = (r->bytes + 4095) / 4096;
	per = (pages + nthreads - 1) / nthreads;
	for (int t = 0; t < nthreads; t++)
	{
		size_t		p0 = per * t,
					p1 = per * (t + 1) < pages ? per * (t + 1) : pages;

		f->jobs[t].lo = (char *) r->base + p0 * 4096;
		f->jobs[t].hi = (char *) r->base + (p1 * 4096 < r->bytes ? p1 * 4096 : r->bytes);
		f->jobs[t].stop = &f->stop;
		if (f->jobs[t].hi < f->jobs[t].lo)
			f->jobs[t].hi = f->jobs[t].lo;
	}
	f->started = gj_threads_start(f->threads, nthreads, fault_range, f->jobs, sizeof(fault_job));
	r->faulting = f;
}

/* Stop the fault-in helpers and wait for them (at most one chunk each). */
static void
stop_faulting(gj_shared_rows *r)
{
	struct gj_shared_rows_faulting *f = r->faulting;

	if (f == NULL)
		return;
	atomic_store(&f->stop, 1);
	for (int t = 0; t < f->started; t++)
		pthread_join(f->threads[t], NULL);
	free(f);
	r->faulting = NULL;
}

void
gj_shared_rows_close(gj_shared_rows *r)
{
	stop_faulting(r);
	if (r->base != NULL)
	{
		munmap(r->base, r->bytes);
		close(r->fd);
	}
	gj_shared_rows_init(r);
}

static void *
close_detached(void *arg)
{
	gj_shared_rows *r = arg;

	gj_shared_rows_close(r);
	free(r);
	return NULL;
}

void
gj_shared_rows_release(gj_shared_rows *r)
{
	gj_shared_rows *moved;
	pthread_t	th;
	pthread_attr_t attr;
	int			started = 0;

	stop_faulting(r);
	if (r->base == NULL)
		return;
	moved = malloc(sizeof(*moved));
	if (moved != NULL && pthread_attr_init(&attr) == 0)
	{
		sigset_t	old;

		*moved = *r;
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		gj_block_async_signals(&old);
		started = pthread_create(&th, &attr, close_detached, moved) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	if (started)
		gj_shared_rows_init(r);	/* the helper owns the mapping now */
	else
	{
		free(moved);
		gj_shared_rows_close(r);
	}
}
