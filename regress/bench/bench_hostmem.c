/*
 * bench_hostmem.c
 *		What big host buffers cost before the rows are in them: first
 *		writes into fresh memory against touched memory and against
 *		gj_big_alloc's (huge pages, faulted in on threads), and the block
 *		sort of the many-dimension engines on such rows.
 *
 * Usage: regress/bench/bench_hostmem [rows dims]...  (default: 1000000 128 and
 * 100000 768, the kNN sets).  One line per set; the copies are of
 * the rows' bytes, on one thread as the serial reader writes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"

static double
copy_ms(char *dst, const char *src, size_t bytes)
{
	double		t0 = gj_now_ms();

	memcpy(dst, src, bytes);
	return gj_now_ms() - t0;
}

static void
one_set(int64_t n, int dims)
{
	gj_points	p;
	size_t		bytes = (size_t) n * dims * sizeof(double);
	char	   *fresh,
			   *big;
	double		t_fresh,
				t_touched,
				t_prep,
				t_big,
				t0,
				t_order,
				t_again;

	gj_gen_points(&p, GJ_GEN_CLUSTERS, n, dims, 7);
	fresh = malloc(bytes);
	t_fresh = copy_ms(fresh, (const char *) p.x, bytes);
	t_touched = copy_ms(fresh, (const char *) p.x, bytes);
	t0 = gj_now_ms();
	big = gj_big_alloc(bytes);
	t_prep = gj_now_ms() - t0;
	t_big = copy_ms(big, (const char *) p.x, bytes);
	if (fresh == NULL || big == NULL || memcmp(fresh, big, bytes) != 0)
	{
		printf("copies differ\n");
		exit(1);
	}
	free(fresh);
	free(big);
	t0 = gj_now_ms();
	gj_points_block_order(&p);
	t_order = gj_now_ms() - t0;
	t0 = gj_now_ms();
	gj_points_block_order(&p);
	t_again = gj_now_ms() - t0;
	printf("| %lld x %d | %.0f | %.1f | %.1f | %.1f + %.1f | %.1f | %.1f |\n",
		   (long long) n, dims, bytes / 1e6, t_fresh, t_touched, t_prep, t_big, t_order, t_again);
	gj_points_free(&p);
}

int
main(int argc, char **argv)
{
	printf("| rows x dims | MB | copy into fresh ms | into touched ms | gj_big_alloc + copy ms | block order ms | again ms |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	if (argc < 3)
	{
		one_set(1000000, 128);
		one_set(100000, 768);
	}
	for (int a = 1; a + 1 < argc; a += 2)
		one_set(atoll(argv[a]), atoi(argv[a + 1]));
	return 0;
}
