/*
 * shared_rows.c
 *		The parallel read's rows in anonymous shared files (Linux memfds):
 *		made and allocated by the reader on several threads, opened by its
 *		parallel workers through /proc, freed off the reader's path.
 *
 * A PostgreSQL dynamic shared memory segment of 1 GB (1M rows of 128
 * dimensions) costs the reader two single-threaded passes over pages that
 * have nothing to do with the rows (regress/bench/bench_shm.c; the GPU host's
 * numbers are in regress/bench/BENCHMARKS.md): posix_fallocate allocates and
 * zeroes every page before the query can start (105-205 ms), and the last
 * detach unmaps and frees every page before the query can end (140-190
 * ms).  PostgreSQL fallocates so that a full /dev/shm fails the creation,
 * not a later write with SIGBUS.  We fallocate several memfds at once, a
 * thread a file: a file's allocation serialises on that file's lock (8
 * workers faulting pages into one file took longer than one fallocate),
 * files' allocations do not, and 16 files of 64 MB took 22-24 ms (8 of
 * 128 MB: 30 ms).  The threads run while the reader's query starts its
 * workers, so the allocation is a head start, not a reservation: memfds
 * live on the kernel's internal tmpfs mount, which has no size of its own
 * (a write never meets a full file system), and their pages count as the
 * backend's memory, like a malloc'd buffer's, so what the allocation has
 * not done by then, the first write does, and the files are only made
 * while the host's available memory has room to spare.  The reader maps
 * the files back to back in one reserved range, so the rows are one array
 * to it, as they are to every worker, which maps them the same way.  The
 * mappings keep the files alive, so every process closes its
 * descriptors once the files are mapped (the reader once its workers are
 * done), and a helper thread unmaps them when the rows are done with.
 *
 * A parallel worker is a separate process started by the postmaster, so
 * the reader cannot hand it a descriptor; it opens /proc/<reader>/fd/<fd>
 * instead (same user, so allowed) and checks each file's size before
 * mapping it (a write past its end would raise SIGBUS).  Where any of this
 * is unavailable (not Linux, no /proc) the caller falls back to a
 * PostgreSQL segment.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core_internal.h"
#include "shared_rows.h"

#define PART_ALIGN ((size_t) 2 << 20)	/* a file's size: a multiple of this */
#define PART_MIN ((size_t) 64 << 20)	/* ... and of at least this (below: one file) */

#if defined(__linux__) && defined(MFD_CLOEXEC)
#define HAVE_SHARED_ROWS 1
#endif

typedef struct alloc_job
{
	int			fd;
	size_t		bytes;
	char	   *map;			/* the reader's mapping of the file */
	int			rc;
} alloc_job;

/* The allocation running beside the reader (gj_shared_rows_create). */
struct gj_shared_rows_alloc
{
	int			nfiles;
	int			started;		/* threads; the rest was allocated inline */
	pthread_t	threads[GJ_SHARED_ROWS_MAX_FILES];
	alloc_job	jobs[GJ_SHARED_ROWS_MAX_FILES];
};

void
gj_shared_rows_init(gj_shared_rows *r)
{
	memset(r, 0, sizeof(*r));
}

/*
 * Map r's files back to back into one reserved range; r->base set, or NULL
 * (nothing left mapped) on failure.
 */
static void
map_parts(gj_shared_rows *r)
{
	size_t		total = r->part * r->nfiles;
	char	   *base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	r->base = NULL;
	if (base == MAP_FAILED)
		return;
	for (int f = 0; f < r->nfiles; f++)
	{
		if (mmap(base + r->part * f, r->part, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
				 r->fds[f], 0) == MAP_FAILED)
		{
			munmap(base, total);
			return;
		}
	}
	r->base = base;
}

int
gj_shared_rows_allocated(gj_shared_rows *r)
{
	gj_shared_rows_alloc *a = r->alloc;
	int			ok = 1;

	if (a == NULL)
		return 0;
	for (int f = 0; f < a->started; f++)
		pthread_join(a->threads[f], NULL);
	for (int f = 0; f < a->nfiles; f++)
		ok &= a->jobs[f].rc == 0;
	free(a);
	r->alloc = NULL;
	return ok ? 0 : -1;
}

/* (the allocation's threads use the descriptors: they finish first) */
static void
close_fds(gj_shared_rows *r)
{
	(void) gj_shared_rows_allocated(r);
	for (int f = 0; f < r->nfiles; f++)
	{
		if (r->fds[f] >= 0)
			close(r->fds[f]);
		r->fds[f] = -1;
	}
}

void
gj_shared_rows_drop_fds(gj_shared_rows *r)
{
	if (r->base != NULL)
		close_fds(r);
}


/*
 * madvise in steps of GJ_ADVISE_STEP bytes.  madvise holds the process's
 * mmap lock (shared) for as long as a call runs: over 1 GB, tens of ms,
 * in which every mmap and munmap of the backend waits, the next query's
 * files among them: the 1M x 128 kNN join run twice in a row waited 31-53
 * ms for the first's release to make the second's files, 1-14 ms with
 * steps (H100 host).  Between steps a waiting writer gets in.
 */
#define GJ_ADVISE_STEP ((size_t) 16 << 20)

static void
advise_in_steps(char *addr, size_t len, int advice)
{
	for (size_t off = 0; off < len; off += GJ_ADVISE_STEP)
	{
		size_t		n = len - off < GJ_ADVISE_STEP ? len - off : GJ_ADVISE_STEP;

		if (madvise(addr + off, n, advice) != 0)
			return;
	}
}

void
gj_shared_rows_prefault(void *addr, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	size_t		page = (size_t) sysconf(_SC_PAGESIZE);
	uintptr_t	a0 = (uintptr_t) addr / page * page,
				a1 = ((uintptr_t) addr + len + page - 1) / page * page;

	if (len > 0)
		(void) madvise((void *) a0, a1 - a0, MADV_POPULATE_WRITE);
#else
	(void) addr;
	(void) len;
#endif
}

/*
 * Allocate a file's pages, then map them into the reader.  fallocate, not
 * faults: on the H100 host 16 threads fallocated 1 GB in 16 files in 22
 * ms, where faulting the same pages into the reader's mapping
 * (MADV_POPULATE_WRITE) took 69 ms, and allocating and then mapping them
 * 54 ms (regress/bench/bench_shm: "fa", "po", "fp").  The mapping is done here,
 * while the workers start, because otherwise the reader faults every page
 * in as it first reads it: ~40-50 ms a GB, on one core, in the engine's
 * upload (the 1M x 128 kNN join's median on the H100 host: 951 -> 865 ms).
 * Where MADV_POPULATE_WRITE is unknown (before Linux 5.14), the upload
 * faults as before.
 */
static void *
alloc_file(void *arg)
{
	alloc_job  *j = arg;

	j->rc = posix_fallocate(j->fd, 0, (off_t) j->bytes);
#ifdef MADV_POPULATE_WRITE
	if (j->rc == 0 && j->map != NULL)
		advise_in_steps(j->map, j->bytes, MADV_POPULATE_WRITE);
#endif
	return NULL;
}

/* The host's MemAvailable, from /proc/meminfo. */
double
gj_memory_available(void)
{
	FILE	   *f = fopen("/proc/meminfo", "r");
	char		line[128];
	double		kb = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024.0;
}

int
gj_shared_rows_create(gj_shared_rows *r, size_t bytes, int max_files)
{
#ifdef HAVE_SHARED_ROWS
	gj_shared_rows_alloc *a;
	int			nfiles = (int) (bytes / PART_MIN),
				ok = 1;

	gj_shared_rows_init(r);
	/* the margin PostgreSQL's segment gets on /dev/shm (the glue's parallel_read.c) */
	if (bytes == 0 || gj_memory_available() < 1.5 * (double) bytes + 256.0 * 1024 * 1024)
		return -1;
	if (nfiles > gj_cpu_count())
		nfiles = gj_cpu_count();
	if (nfiles > max_files)
		nfiles = max_files;
	nfiles = nfiles < 1 ? 1 : nfiles > GJ_SHARED_ROWS_MAX_FILES ? GJ_SHARED_ROWS_MAX_FILES : nfiles;
	r->part = (bytes + nfiles - 1) / nfiles;
	r->part = (r->part + PART_ALIGN - 1) / PART_ALIGN * PART_ALIGN;
	for (int f = 0; f < nfiles && ok; f++)
	{
		r->fds[f] = memfd_create("gpujoin-read", MFD_CLOEXEC);
		r->nfiles = f + 1;
		ok = r->fds[f] >= 0 && ftruncate(r->fds[f], (off_t) r->part) == 0;
	}
	if (ok)
		map_parts(r);
	if (r->base == NULL || (a = calloc(1, sizeof(*a))) == NULL)
	{
		if (r->base != NULL)
			munmap(r->base, r->part * r->nfiles);
		close_fds(r);
		gj_shared_rows_init(r);
		return -1;
	}
	/*
	 * A thread a file, left running: the reader's query starts its workers
	 * meanwhile (10-30 ms), and most pages are there when they write.  The
	 * files no thread took are allocated here.
	 */
	a->nfiles = nfiles;
	for (int f = 0; f < nfiles; f++)
	{
		a->jobs[f].fd = r->fds[f];
		a->jobs[f].bytes = r->part;
		a->jobs[f].map = (char *) r->base + r->part * f;
		a->jobs[f].rc = -1;
	}
	a->started = gj_threads_start(a->threads, nfiles, alloc_file, a->jobs, sizeof(alloc_job));
	for (int f = a->started; f < nfiles; f++)
		alloc_file(&a->jobs[f]);
	r->alloc = a;
	return 0;
#else
	(void) bytes;
	gj_shared_rows_init(r);
	return -1;
#endif
}

int
gj_shared_rows_open(gj_shared_rows *r, int pid, const int *fds, int nfiles, size_t part)
{
	int			ok = 1;

	gj_shared_rows_init(r);
#ifdef HAVE_SHARED_ROWS
	if (nfiles < 1 || nfiles > GJ_SHARED_ROWS_MAX_FILES || part == 0)
		return -1;
	r->part = part;
	for (int f = 0; f < nfiles && ok; f++)
	{
		char		path[64];
		struct stat sb;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fds[f]);
		r->fds[f] = open(path, O_RDWR | O_CLOEXEC);
		r->nfiles = f + 1;
		/* a shorter file (not the reader's) would fault past its end */
		ok = r->fds[f] >= 0 && fstat(r->fds[f], &sb) == 0 && S_ISREG(sb.st_mode) &&
			(size_t) sb.st_size >= part;
	}
	if (ok)
		map_parts(r);
	close_fds(r);				/* the mapping keeps the files */
	if (r->base == NULL)
	{
		gj_shared_rows_init(r);
		return -1;
	}
	return 0;
#else
	(void) pid;
	(void) fds;
	(void) nfiles;
	(void) part;
	(void) ok;
	return -1;
#endif
}

void
gj_shared_rows_close(gj_shared_rows *r)
{
	(void) gj_shared_rows_allocated(r);
	if (r->base != NULL)
	{
		/*
		 * Drop the pages from the mapping first: madvise zaps them under
		 * the process's mmap lock held shared (in steps, so that the next
		 * query's mmaps need not wait for all of it), where munmap would
		 * hold it exclusive for as long, stalling every page fault and
		 * mmap of the backend's own thread meanwhile.
		 */
#ifdef MADV_DONTNEED
		advise_in_steps(r->base, r->part * r->nfiles, MADV_DONTNEED);
#endif
		munmap(r->base, r->part * r->nfiles);
		close_fds(r);
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
