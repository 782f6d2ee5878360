/*
 * test_core.c
 *		Unit tests of the pure-C core: the grid CPU self-join against the
 *		brute-force oracle on seeded random and adversarial point sets; the
 *		parallel read's shared files (shared_rows.c).
 *
 * Each case builds a point set whose ids are the original row numbers, keeps
 * a copy for the oracle, runs grid build + threaded join, and requires the
 * two pair sets, distances included bit for bit, to be equal.  A failure
 * prints the case name and seed, which reproduce it:
 *		test_core [seed]
 * The last line is "core: N passed, N failed".
 */
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core_internal.h"
#include "shared_rows.h"
#include "datagen.h"
#include "oracle.h"
#include "pairset.h"

static int	passed = 0;
static int	failed = 0;

typedef struct oracle_ctx
{
	gj_pairset *out;
	const int64_t *ids;
} oracle_ctx;

/* The oracle reports row indexes; record the rows' ids. */
static void
oracle_emit(void *arg, int64_t i, int64_t j, double dist)
{
	oracle_ctx *ctx = arg;

	gj_pairset_add(ctx->out, ctx->ids[i], ctx->ids[j], dist);
}

/* Run the grid join on p (consumed: it is sorted in place) into out. */
static gj_status
run_engine(gj_points *p, double eps, int threads, gj_pairset *out)
{
	gj_grid		g;
	gj_cpu_selfjoin *j;
	gj_status	st;

	st = gj_grid_build(&g, p, eps * eps);
	if (st != GJ_OK)
		return st;
	st = gj_cpu_selfjoin_start(&g, p, threads, &j);
	if (st != GJ_OK)
	{
		gj_grid_free(&g);
		return st;
	}
	for (;;)
	{
		gj_chunk   *c;

		st = gj_engine_next(GJ_ENGINE(j), 100, &c);
		if (st == GJ_AGAIN)
			continue;
		if (st != GJ_OK)
			break;
		for (int k = 0; k < c->n; k++)
		{
			if (c->a[k] > c->b[k])
			{
				fprintf(stderr, "engine emitted ids a > b\n");
				st = GJ_ERR_ARG;
			}
			gj_pairset_add(out, c->a[k], c->b[k], c->dist[k]);
		}
		gj_engine_release(GJ_ENGINE(j), c);
	}
	gj_engine_free(GJ_ENGINE(j));
	gj_grid_free(&g);
	return st == GJ_DONE ? GJ_OK : st;
}

/* Compare the engine with the oracle on p (ids must be distinct). */
static void
check_case(const char *name, uint64_t seed, gj_points *p, double eps, int threads)
{
	gj_pairset	want = {0},
				got = {0};
	gj_points	copy;
	gj_status	st;
	const char *why = NULL;
	int64_t		at = -1;

	gj_points_init(&copy, p->dims);
	if (gj_points_reserve(&copy, p->n > 0 ? p->n : 1) != GJ_OK)
		exit(2);
	for (int64_t i = 0; i < p->n; i++)
		gj_points_push(&copy, p->ids[i], p->x + i * p->dims);

	{
		oracle_ctx	ctx = {&want, copy.ids};

		gj_oracle_selfjoin(&copy, eps * eps, oracle_emit, &ctx);
	}
	st = run_engine(p, eps, threads, &got);
	if (st != GJ_OK)
		why = gj_status_name(st);
	else
		why = gj_pairset_diff(&want, &got, &at);
	if (why == NULL)
		passed++;
	else
	{
		failed++;
		printf("FAIL %s seed=%llu n=%lld dims=%d eps=%.17g threads=%d: %s "
			   "(oracle %lld pairs, engine %lld)\n",
			   name, (unsigned long long) seed, (long long) p->n, p->dims, eps,
			   threads, why, (long long) want.n, (long long) got.n);
		gj_pairset_print_at("oracle", &want, "engine", &got, at);
	}
	gj_pairset_free(&want);
	gj_pairset_free(&got);
	gj_points_free(&copy);
}

/* Make a data set of a kind, run it, free it. */
static void
run_kind(gj_kind kind, const char *name, uint64_t seed, int64_t n, int dims,
		 double eps, int threads)
{
	gj_points	p;

	gj_gen_points(&p, kind, n, dims, seed);
	check_case(name, seed, &p, eps, threads);
	gj_points_free(&p);
}

/* Cancel a large join mid-way: must return promptly and leak nothing. */
static void
check_cancel(uint64_t seed)
{
	gj_points	p;
	gj_grid		g;
	gj_cpu_selfjoin *j;
	gj_chunk   *c = NULL;
	gj_status	st;

	gj_gen_points(&p, GJ_GEN_ONE_CELL, 20000, 2, seed);
	if (gj_grid_build(&g, &p, 1e6 * 1e6) != GJ_OK ||
		gj_cpu_selfjoin_start(&g, &p, 4, &j) != GJ_OK)
	{
		failed++;
		printf("FAIL cancel seed=%llu: could not start\n", (unsigned long long) seed);
		gj_points_free(&p);
		return;
	}
	do
		st = gj_engine_next(GJ_ENGINE(j), 100, &c);
	while (st == GJ_AGAIN);
	if (st == GJ_OK)
	{
		gj_engine_release(GJ_ENGINE(j), c);
		passed++;
	}
	else
	{
		failed++;
		printf("FAIL cancel seed=%llu: no first chunk (%s)\n",
			   (unsigned long long) seed, gj_status_name(st));
	}
	gj_engine_free(GJ_ENGINE(j));	/* cancels 200M pairs still to come */
	gj_grid_free(&g);
	gj_points_free(&p);
}

/* Storage a gj_points borrows (the parallel read's shared segment). */
typedef struct borrowed
{
	void	   *block;
	int			released;
} borrowed;

static void
release_block(void *arg)
{
	borrowed   *b = arg;

	free(b->block);
	b->block = NULL;
	b->released++;
}

/*
 * Points in borrowed storage: the join is still exact, and the storage is
 * released exactly once, whether the grid build replaces the arrays, the
 * buffer grows, or it is just freed.
 */
static void
check_borrowed(uint64_t seed)
{
	static const char *modes[] = {"join", "grow", "free"};
	gj_points	src;

	gj_gen_points(&src, GJ_GEN_UNIFORM, 5000, 3, seed);
	for (int m = 0; m < 3; m++)
	{
		borrowed	b = {0};
		gj_points	p;
		size_t		idbytes = sizeof(int64_t) * src.n;
		bool		ok = true;

		b.block = malloc(idbytes + sizeof(double) * src.n * src.dims);
		gj_points_init(&p, src.dims);
		p.n = p.cap = src.n;
		p.ids = b.block;
		p.x = (double *) ((char *) b.block + idbytes);
		memcpy(p.ids, src.ids, idbytes);
		memcpy(p.x, src.x, sizeof(double) * src.n * src.dims);
		p.release = release_block;
		p.release_arg = &b;
		if (m == 0)
		{
			int			before = failed;

			check_case("borrowed", seed, &p, gj_gen_typical_eps(GJ_GEN_UNIFORM, src.n, 3, 4.0), 2);
			ok = failed == before && b.released == 1;
			passed -= failed == before;		/* counted once, below */
		}
		else if (m == 1)
		{
			double		row[3] = {1, 2, 3};

			ok = gj_points_push(&p, 99, row) == GJ_OK && b.released == 1 &&
				p.n == src.n + 1 && p.ids[src.n] == 99 && p.x[src.n * 3 + 2] == 3 &&
				memcmp(p.ids, src.ids, idbytes) == 0 &&
				memcmp(p.x, src.x, sizeof(double) * src.n * 3) == 0;
		}
		gj_points_free(&p);
		ok = ok && b.released == 1;
		if (ok)
			passed++;
		else
		{
			failed++;
			printf("FAIL borrowed storage (%s) seed=%llu: released %d times\n", modes[m],
				   (unsigned long long) seed, b.released);
		}
		free(b.block);
	}
	gj_points_free(&src);
}

/*
 * gj_points_concat: a's rows then b's, ids and coordinates bit for bit,
 * for empty sides, one row, and sets large enough to be copied on several
 * threads with the seam inside a thread's range; mismatched dims refused.
 */
static void
check_concat(uint64_t seed)
{
	static const int64_t sizes[][2] = {{0, 0}, {0, 3}, {3, 0}, {1, 1}, {70001, 5}, {5, 300000},
	{250000, 250001}};

	for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++)
	{
		gj_points	a,
					b,
					out;
		int			dims = c % 2 ? 2 : 7;
		bool		ok;

		gj_gen_points(&a, GJ_GEN_UNIFORM, sizes[c][0], dims, seed + c);
		gj_gen_points(&b, GJ_GEN_CLUSTERS, sizes[c][1], dims, seed + 100 + c);
		for (int64_t i = 0; i < b.n; i++)
			b.ids[i] += 1000000000;
		ok = gj_points_concat(&out, &a, &b) == GJ_OK && out.n == a.n + b.n && out.dims == dims &&
			(a.n == 0 || (memcmp(out.x, a.x, sizeof(double) * a.n * dims) == 0 &&
						  memcmp(out.ids, a.ids, sizeof(int64_t) * a.n) == 0)) &&
			(b.n == 0 || (memcmp(out.x + a.n * dims, b.x, sizeof(double) * b.n * dims) == 0 &&
						  memcmp(out.ids + a.n, b.ids, sizeof(int64_t) * b.n) == 0));
		if (ok)
			passed++;
		else
		{
			failed++;
			printf("FAIL concat %lld + %lld rows of %d dims seed=%llu\n", (long long) a.n,
				   (long long) b.n, dims, (unsigned long long) seed);
		}
		gj_points_free(&out);
		gj_points_free(&a);
		gj_points_free(&b);
	}
	{
		gj_points	a,
					b,
					out;

		gj_points_init(&a, 2);
		gj_points_init(&b, 3);
		gj_points_init(&out, 2);
		if (gj_points_concat(&out, &a, &b) == GJ_ERR_ARG && out.n == 0)
			passed++;
		else
		{
			failed++;
			printf("FAIL concat of 2 and 3 dimensions was not refused\n");
		}
	}
}

/* The shared hand-made boundary sets (datagen.c), each eps, 2 threads. */
/*
 * The radix sort in 1, 3 and 7 slices (whatever this machine's cores):
 * sorted, stable (rows of equal keys in their first order), the same rows,
 * and the same result for every slice count.  Keys with few distinct values
 * (many ties), and maxima needing one, two and six 8-bit passes.
 */
static void
check_sort(uint64_t seed)
{
	int64_t		n = 200003;
	int64_t		maxkeys[] = {200, 1000, (int64_t) 1 << 40};
	int			slices[] = {1, 3, 7};
	int64_t    *orig = malloc(sizeof(int64_t) * n);
	int64_t    *keys = malloc(sizeof(int64_t) * n);
	uint32_t   *vals = malloc(sizeof(uint32_t) * n);
	uint32_t   *first = malloc(sizeof(uint32_t) * n);

	for (int m = 0; m < 3; m++)
	{
		uint64_t	s = seed + m;

		for (int64_t i = 0; i < n; i++)
		{
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			orig[i] = (int64_t) ((s >> 11) % (uint64_t) (maxkeys[m] + 1));
		}
		for (int t = 0; t < 3; t++)
		{
			const char *why = NULL;

			memcpy(keys, orig, sizeof(int64_t) * n);
			for (int64_t i = 0; i < n; i++)
				vals[i] = (uint32_t) i;
			if (gj_sort_by_key_slices(keys, vals, n, maxkeys[m], slices[t]) != GJ_OK)
				why = "failed";
			for (int64_t i = 0; why == NULL && i < n; i++)
			{
				if (keys[i] != orig[vals[i]])
					why = "a key left its row";
				else if (i > 0 && keys[i] < keys[i - 1])
					why = "not sorted";
				else if (i > 0 && keys[i] == keys[i - 1] && vals[i] <= vals[i - 1])
					why = "not stable (or a row twice)";
				else if (t > 0 && vals[i] != first[i])
					why = "differs from one slice";
			}
			if (t == 0)
				memcpy(first, vals, sizeof(uint32_t) * n);
			if (why == NULL)
				passed++;
			else
			{
				failed++;
				printf("FAIL sort maxkey=%lld slices=%d: %s\n", (long long) maxkeys[m], slices[t], why);
			}
		}
	}
	free(orig);
	free(keys);
	free(vals);
	free(first);
}

static void
check_boundaries(void)
{
	gj_points	p;
	const char *name;
	double		eps[GJ_GEN_MAX_EPS];
	int			neps;

	for (int k = 0; gj_gen_boundary_case(k, &p, &name, eps, &neps); k++)
	{
		/* each run sorts p in place: the next eps gets a permuted set */
		for (int e = 0; e < neps; e++)
			check_case(name, 0, &p, eps[e], 2);
		gj_points_free(&p);
	}
}

static void
expect(bool ok, const char *what)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("FAIL shared rows: %s\n", what);
	}
}

/* Mappings of the read's files left in this process (/proc/self/maps). */
static int
read_mappings(void)
{
	FILE	   *f = fopen("/proc/self/maps", "r");
	char		line[512];
	int			n = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, "gpujoin-read") != NULL;
	fclose(f);
	return n;
}

/*
 * The parallel read's shared files: an empty (zeroed) struct closes
 * nothing (a zeroed state once closed descriptor 0, and with it a file
 * PostgreSQL reopened there); files made in parts are one array to the
 * maker and to another process that opens them through /proc, which sees
 * and makes the same bytes; a size or descriptor that does not match is
 * refused; descriptors dropped leave the mapping; the release's helper
 * leaves no mapping behind.
 */
static long
minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* Whether this kernel maps pages ahead on request (Linux 5.14+). */
static bool
populate_works(void)
{
#ifdef MADV_POPULATE_WRITE
	char	   *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	bool		ok;

	if (p == MAP_FAILED)
		return false;
	ok = madvise(p, 4096, MADV_POPULATE_WRITE) == 0;
	munmap(p, 4096);
	return ok;
#else
	return false;
#endif
}

static void
check_shared_rows(void)
{
	gj_shared_rows r,
				w,
				z;
	size_t		bytes = ((size_t) 130 << 20) + 12345;	/* two files of 64 MB or more */
	int			pipefd[2];
	int			low;
	pid_t		pid;
	int			status = -1;

	/* a zeroed struct owns nothing, whatever its fds say */
	if (pipe(pipefd) != 0)
		return;
	low = pipefd[0];
	memset(&z, 0, sizeof(z));
	z.fds[0] = low;
	z.nfiles = 1;
	gj_shared_rows_close(&z);
	gj_shared_rows_release(&z);
	memset(&z, 0, sizeof(z));
	gj_shared_rows_release(&z);
	expect(fcntl(low, F_GETFD) != -1 && fcntl(0, F_GETFD) != -1,
		   "an empty struct's close or release closed a descriptor");
	close(pipefd[0]);
	close(pipefd[1]);

	if (gj_memory_available() < 1.5 * (double) bytes + 512.0 * 1024 * 1024)
	{
		printf("shared rows: not enough available memory for the files' checks (not counted)\n");
		return;
	}
	if (gj_shared_rows_create(&r, bytes, GJ_SHARED_ROWS_MAX_FILES) != 0)
	{
		expect(false, "could not make the files");
		return;
	}
	expect(r.base != NULL && r.nfiles >= 1 && r.nfiles <= GJ_SHARED_ROWS_MAX_FILES &&
		   r.part * r.nfiles >= bytes && r.part % ((size_t) 2 << 20) == 0 &&
		   (r.nfiles > 1 || gj_cpu_count() == 1),
		   "the files' shape");
	/* the allocation the threads ran beside: every page of every file */
	{
		bool		full = gj_shared_rows_allocated(&r) == 0 && r.alloc == NULL;
		struct stat sb;

		for (int f = 0; f < r.nfiles && full; f++)
			full = fstat(r.fds[f], &sb) == 0 && (size_t) sb.st_blocks * 512 >= r.part;
		expect(full && gj_shared_rows_allocated(&r) == 0, "the files' pages were not allocated");
	}
	if (populate_works())
	{
		long		f0 = minor_faults();

		/* the last file's end: no other check wrote it yet */
		memset((char *) r.base + r.part * r.nfiles - ((size_t) 2 << 20), 7, (size_t) 2 << 20);
		expect(minor_faults() - f0 < 64, "the maker's mapping was not populated");
	}
	for (size_t i = 0; i < bytes / 8; i++)
		((uint64_t *) r.base)[i] = i * 0x9E3779B97F4A7C15ULL;

	/* another process: opens them through /proc, reads ours, writes its own */
	fflush(stdout);
	pid = fork();
	if (pid == 0)
	{
		int			bad = 0;

		if (gj_shared_rows_open(&w, (int) getppid(), r.fds, r.nfiles, r.part) != 0)
			_exit(2);
		for (int f = 0; f < w.nfiles; f++)
			if (w.fds[f] != -1)
				_exit(4);		/* mapped, its descriptors should be closed */
		for (size_t i = 0; i < bytes / 8 && !bad; i++)
			bad = ((uint64_t *) w.base)[i] != i * 0x9E3779B97F4A7C15ULL;
		for (size_t i = 0; i < bytes / 8; i++)
			((uint64_t *) w.base)[i] = ~i;
		gj_shared_rows_close(&w);
		_exit(bad ? 3 : 0);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	expect(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "another process could not open or read the files");
	{
		bool		same = true;

		for (size_t i = 0; i < bytes / 8 && same; i++)
			same = ((uint64_t *) r.base)[i] == ~(uint64_t) i;
		expect(same, "another process's writes are not in the maker's mapping");
	}

	/* refused: files shorter than asked, a descriptor that is not one */
	expect(gj_shared_rows_open(&w, (int) getpid(), r.fds, r.nfiles, r.part + 4096) != 0 &&
		   w.base == NULL, "a part longer than the files was accepted");
	{
		int			bogus[GJ_SHARED_ROWS_MAX_FILES];

		memcpy(bogus, r.fds, sizeof(bogus));
		bogus[r.nfiles - 1] = 1000000;
		expect(gj_shared_rows_open(&w, (int) getpid(), bogus, r.nfiles, r.part) != 0 &&
			   w.base == NULL, "a descriptor that is not open was accepted");
	}

	/*
	 * Pages mapped ahead by gj_shared_rows_prefault: writing them takes no
	 * faults, where writing pages not mapped ahead takes one a page.
	 */
	if (populate_works())
	{
		long		f0;
		size_t		span = (size_t) 2 << 20;

		if (gj_shared_rows_open(&w, (int) getpid(), r.fds, r.nfiles, r.part) == 0)
		{
			gj_shared_rows_prefault((char *) w.base + 12345, span);
			f0 = minor_faults();
			memset((char *) w.base + 12345, 8, span);
			{
				long		ahead = minor_faults() - f0;

				f0 = minor_faults();
				memset((char *) w.base + 4 * span, 9, span);
				long		other = minor_faults() - f0;

				expect(ahead < 64 && other >= 256,
					   "prefaulted pages still fault, or others do not");
			}
			expect(((char *) r.base)[12345 + span - 1] == 8, "a prefaulted write did not reach the file");
			gj_shared_rows_close(&w);
		}
		else
			expect(false, "could not open the files again");
	}
	else
		printf("shared rows: no MADV_POPULATE_WRITE here, the mapping checks not run (not counted)\n");

	/* descriptors dropped: closed, the mapping still the files */
	{
		int			fd0 = r.fds[0];

		gj_shared_rows_drop_fds(&r);
		((uint64_t *) r.base)[1] = 42;
		expect(fcntl(fd0, F_GETFD) == -1 && ((uint64_t *) r.base)[1] == 42 && read_mappings() > 0,
			   "dropping the descriptors");
	}

	/* released on a helper thread: the mappings go (within 5 s) */
	gj_shared_rows_release(&r);
	expect(r.base == NULL, "the struct is not empty after the release");
	for (int i = 0; i < 500 && read_mappings() != 0; i++)
		usleep(10000);
	expect(read_mappings() == 0, "the files are still mapped 5 s after the release");

	/* one file when asked for one, closed while it may still be allocating */
	if (gj_shared_rows_create(&r, bytes, 1) == 0)
	{
		expect(r.nfiles == 1 && r.part >= bytes, "one file when asked for one");
		gj_shared_rows_close(&r);
		expect(read_mappings() == 0 && r.alloc == NULL, "a closed file is still mapped");
	}
	else
		expect(false, "could not make one file");

	/* released at once, the allocation running: the helper waits for it, then unmaps */
	if (gj_shared_rows_create(&r, bytes, GJ_SHARED_ROWS_MAX_FILES) == 0)
	{
		gj_shared_rows_release(&r);
		for (int i = 0; i < 500 && read_mappings() != 0; i++)
			usleep(10000);
		expect(r.base == NULL && read_mappings() == 0,
			   "files released while allocating are still mapped after 5 s");
	}
	else
		expect(false, "could not make the files again");
}

int
main(int argc, char **argv)
{
	uint64_t	base = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261121;
	static const struct
	{
		gj_kind		kind;
		const char *name;
	}			kinds[] = {
		{GJ_GEN_UNIFORM, "uniform"},
		{GJ_GEN_EXPONENTIAL, "exponential"},
		{GJ_GEN_CLUSTERS, "clusters"},
		{GJ_GEN_DUPLICATES, "duplicates"},
		{GJ_GEN_ONE_CELL, "one-cell"},
		{GJ_GEN_GRID_SNAPPED, "grid-snapped"},
	};
	static const int dim_list[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 33, 64};
	int			ndims = sizeof(dim_list) / sizeof(dim_list[0]);
	uint64_t	seed = base;
	const char *only = getenv("GJ_TEST_ONLY");

	printf("test_core: base seed %llu\n", (unsigned long long) base);

	/* edge sizes */
	for (int n = 0; n <= 3; n++)
		run_kind(GJ_GEN_UNIFORM, "tiny", seed++, n, 2, 50.0, 2);

	/* every kind, every dimensionality, eps from tiny to huge */
	for (int k = 0; k < (int) (sizeof(kinds) / sizeof(kinds[0])); k++)
		for (int d = 0; d < ndims; d++)
		{
			int			dims = dim_list[d];
			int64_t		n = dims <= 8 ? 1500 : 600;
			/* eps for a few neighbours on average, then much smaller/larger */
			double		typical = gj_gen_typical_eps(kinds[k].kind, n, dims, 4.0);
			double		scales[] = {1e-9, 0.3, 1.0, 3.0, 1e6};

			for (int s = 0; s < 5; s++, seed++)
				if (only == NULL)
					run_kind(kinds[k].kind, kinds[k].name, seed, n, dims,
							 typical * scales[s], 1 + (int) (seed % 4));
		}

	/* large grids: many cells, threads > cores, tasks split across cells */
	run_kind(GJ_GEN_UNIFORM, "uniform-big", seed++, 30000, 2,
			 gj_gen_typical_eps(GJ_GEN_UNIFORM, 30000, 2, 10.0), 8);
	run_kind(GJ_GEN_EXPONENTIAL, "expo-big", seed++, 30000, 2,
			 gj_gen_typical_eps(GJ_GEN_EXPONENTIAL, 30000, 2, 30.0), 3);
	run_kind(GJ_GEN_ONE_CELL, "one-cell-big", seed++, 6000, 3, 1e9, 4);
	run_kind(GJ_GEN_UNIFORM, "uniform-6d", seed++, 20000, 6,
			 gj_gen_typical_eps(GJ_GEN_UNIFORM, 20000, 6, 10.0), 4);

	check_boundaries();
	check_cancel(seed++);
	check_borrowed(seed++);
	check_concat(seed++);
	check_sort(seed++);
	check_shared_rows();

	printf("core: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
