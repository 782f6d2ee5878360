/*
 * bench_shm.c
 *		What a POSIX shared-memory segment of the parallel read's size costs
 *		on this host, phase by phase, as PostgreSQL makes one (dsm_impl.c:
 *		shm_open, posix_fallocate, ftruncate, mmap) and as the read then uses
 *		it (workers, separate processes, write their shares; the leader
 *		reads it all; the segment goes).
 *
 *	bench_shm [MiB [workers]]
 *
 * The phases that PostgreSQL's defaults add to a read in the query
 * (`min_dynamic_shared_memory` = 0) are the fallocate in the leader, the
 * page faults of every process that maps the segment, and the freeing of
 * its pages when the last mapping goes; the variants say which of them
 * can be moved off the leader's path.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Every participant writes its share of the segment, in its own process,
 * opening it by name (a POSIX segment) or through /proc (a memfd's fd).
 */
static double
fill_by_workers(const char *name, size_t size, int workers)
{
	double		t0 = now_ms();

	for (int w = 0; w < workers; w++)
	{
		if (fork() == 0)
		{
			int			fd = name[0] == '/' && strncmp(name, "/proc/", 6) != 0 ?
				shm_open(name, O_RDWR, 0600) : open(name, O_RDWR);
			char	   *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			size_t		lo = size / workers * w,
						hi = w == workers - 1 ? size : size / workers * (w + 1);

			close(fd);
			if (p == MAP_FAILED)
				_exit(1);
			memset(p + lo, w + 1, hi - lo);
			munmap(p, size);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	return now_ms() - t0;
}

static void
run(size_t size, int workers, int fallocate_it)
{
	const char *name = "/gj_bench_shm";
	double		t0,
				t_create,
				t_fill,
				t_map,
				t_read,
				t_unmap,
				t_unlink;
	int			fd;
	char	   *p;
	volatile uint64_t sum = 0;

	shm_unlink(name);
	t0 = now_ms();
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
	{
		perror("shm_open");
		exit(1);
	}
	if (fallocate_it && posix_fallocate(fd, 0, size) != 0)
	{
		perror("posix_fallocate");
		exit(1);
	}
	if (ftruncate(fd, size) != 0)
	{
		perror("ftruncate");
		exit(1);
	}
	t_create = now_ms() - t0;
	t_fill = fill_by_workers(name, size, workers);
	t0 = now_ms();
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	t_map = now_ms() - t0;
	t0 = now_ms();
	for (size_t i = 0; i < size; i += 4096)
		sum += p[i];
	t_read = now_ms() - t0;
	t0 = now_ms();
	munmap(p, size);
	t_unmap = now_ms() - t0;
	t0 = now_ms();
	shm_unlink(name);
	t_unlink = now_ms() - t0;
	printf("%6zu MiB %2d workers %-12s create %7.1f  fill %7.1f  map %5.1f  leader's faults %6.1f  "
		   "unmap %6.1f  unlink %6.1f  ms\n",
		   size >> 20, workers, fallocate_it ? "fallocate" : "ftruncate", t_create, t_fill,
		   t_map, t_read, t_unmap, t_unlink);
}

/*
 * The same rows through a memfd (src/core/shared_rows.c): no fallocate;
 * workers open /proc/<pid>/fd/<fd>; the leader's faults and the release as
 * the extension does them are timed on their own.
 */
static void
run_memfd(size_t size, int workers)
{
	char		path[64];
	double		t0,
				t_create,
				t_fill,
				t_read,
				t_unmap;
	int			fd;
	char	   *p;
	volatile uint64_t sum = 0;

	t0 = now_ms();
	fd = memfd_create("bench_shm", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, size) != 0)
	{
		perror("memfd");
		exit(1);
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	t_create = now_ms() - t0;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) getpid(), fd);
	t_fill = fill_by_workers(path, size, workers);
	t0 = now_ms();
	for (size_t i = 0; i < size; i += 4096)
		sum += p[i];
	t_read = now_ms() - t0;
	t0 = now_ms();
	munmap(p, size);
	close(fd);
	t_unmap = now_ms() - t0;
	printf("%6zu MiB %2d workers %-12s create %7.1f  fill %7.1f  map   -    leader's faults %6.1f  "
		   "unmap and close %6.1f  ms\n",
		   size >> 20, workers, "memfd", t_create, t_fill, t_read, t_unmap);
}

/*
 * The rows in nfiles memfds of size / nfiles each, allocated by one
 * fallocate thread per file (each holds only its own file's lock, where
 * faults into one file serialise on it), mapped back to back in one
 * reserved range by the leader and by every worker.
 */
typedef struct alloc_job
{
	int			fd;
	char	   *at;				/* the file's place in the leader's mapping */
	size_t		bytes;
	int			how;			/* 0 fallocate, 1 populate, 2 both */
} alloc_job;

static void *
alloc_file(void *arg)
{
	alloc_job  *j = arg;

	if (j->how != 1 && posix_fallocate(j->fd, 0, j->bytes) != 0)
		perror("posix_fallocate");
#ifdef MADV_POPULATE_WRITE
	if (j->how != 0 && madvise(j->at, j->bytes, MADV_POPULATE_WRITE) != 0)
		perror("madvise");
#endif
	return NULL;
}

static char *
map_files(const int *fds, int nfiles, size_t part)
{
	char	   *base = mmap(NULL, part * nfiles, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	for (int f = 0; f < nfiles; f++)
		if (mmap(base + part * f, part, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fds[f], 0) == MAP_FAILED)
		{
			perror("mmap");
			exit(1);
		}
	return base;
}

static void
run_files(size_t size, int workers, int nfiles, int how)
{
	size_t		part = size / nfiles;
	int			fds[64];
	pthread_t	th[64];
	alloc_job	jobs[64];
	double		t0,
				t_create,
				t_fill,
				t_read,
				t_unmap;
	char	   *p;
	volatile uint64_t sum = 0;

	t0 = now_ms();
	for (int f = 0; f < nfiles; f++)
	{
		fds[f] = memfd_create("bench_shm", MFD_CLOEXEC);
		if (fds[f] < 0 || ftruncate(fds[f], part) != 0)
		{
			perror("memfd");
			exit(1);
		}
	}
	p = map_files(fds, nfiles, part);
	for (int f = 0; f < nfiles; f++)
	{
		jobs[f].fd = fds[f];
		jobs[f].at = p + part * f;
		jobs[f].bytes = part;
		jobs[f].how = how;
		pthread_create(&th[f], NULL, alloc_file, &jobs[f]);
	}
	for (int f = 0; f < nfiles; f++)
		pthread_join(th[f], NULL);
	t_create = now_ms() - t0;
	t0 = now_ms();
	for (int w = 0; w < workers; w++)
	{
		if (fork() == 0)
		{
			int			wfds[64];
			char	   *q;
			size_t		lo = size / workers * w,
						hi = w == workers - 1 ? size : size / workers * (w + 1);

			for (int f = 0; f < nfiles; f++)
			{
				char		path[64];

				snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) getppid(), fds[f]);
				wfds[f] = open(path, O_RDWR);
			}
			q = map_files(wfds, nfiles, part);
			memset(q + lo, w + 1, hi - lo);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	t_fill = now_ms() - t0;
	t0 = now_ms();
	for (size_t i = 0; i < size; i += 4096)
		sum += p[i];
	t_read = now_ms() - t0;
	t0 = now_ms();
	munmap(p, size);
	for (int f = 0; f < nfiles; f++)
		close(fds[f]);
	t_unmap = now_ms() - t0;
	printf("%6zu MiB %2d workers memfd x %-2d %s create %7.1f  fill %7.1f  map   -    leader's faults %6.1f  "
		   "unmap and close %6.1f  ms\n",
		   size >> 20, workers, nfiles, how == 0 ? "fa" : how == 1 ? "po" : "fp",
		   t_create, t_fill, t_read, t_unmap);
}

int
main(int argc, char **argv)
{
	size_t		mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
	int			workers = argc > 2 ? atoi(argv[2]) : 8;

	for (int rep = 0; rep < 2; rep++)
	{
		run(mib << 20, workers, 1);
		run(mib << 20, workers, 0);
		run((mib / 2) << 20, workers, 1);
		run_memfd(mib << 20, workers);
		for (int how = 0; how < 3; how++)
		{
			run_files(mib << 20, workers, 1, how);
			run_files(mib << 20, workers, 8, how);
			run_files(mib << 20, workers, 16, how);
		}
	}
	return 0;
}
