/*
 * cpu_lists.c
 *		Neighbour lists (eps_neighbors) on the CPU: every row with the ids and
 *		distances of the rows within eps of it, ordered by (distance, id).
 *
 * Worker threads take blocks of consecutive grid-sorted rows, gather each
 * row's neighbours from its cell's 3^n neighbourhood into a private buffer,
 * sort them, and append the finished list to a chunk of lists; the backend
 * only writes an array header into the gap before each list (GJ_LIST_GAP)
 * and hands the list out in place.  A list is never split across
 * chunks; a chunk is handed over when it holds GJ_CHUNK_PAIRS rows or its
 * entries pass GJ_LIST_CHUNK_ENTRIES (one long list may exceed that alone).
 * Memory is bounded by the chunk pool, whatever the number of pairs.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

#define GJ_LIST_BLOCK 256
#define GJ_LIST_CHUNK_ENTRIES (256 * 1024)

typedef struct nb_entry
{
	double		d;
	int64_t		id;
} nb_entry;

struct gj_cpu_lists
{
	gj_engine	eng;			/* first: the queue, the first error, free */
	const gj_grid *g;
	const gj_points *p;
	uint32_t   *rows;			/* the rows to list (a copy), or NULL: all */
	int64_t		nrows;
	int			nthreads;
	pthread_t  *threads;
	int64_t		next;			/* atomic: next block's first row */
	int			stop;			/* atomic */
};

static void cpu_lists_free(gj_engine *e);

static inline int
entry_less(const nb_entry *a, const nb_entry *b)
{
	return a->d < b->d || (a->d == b->d && a->id < b->id);
}

/* Sort by (d, id): insertion sort for short runs, else quicksort. */
static void
sort_entries(nb_entry *e, int64_t n)
{
	while (n > 16)
	{
		nb_entry	pivot,
					t;
		int64_t		i = 0,
					j = n - 1,
					m = n / 2;

		/* median of three as the pivot */
		if (entry_less(&e[m], &e[0]))
		{
			t = e[m]; e[m] = e[0]; e[0] = t;
		}
		if (entry_less(&e[j], &e[0]))
		{
			t = e[j]; e[j] = e[0]; e[0] = t;
		}
		if (entry_less(&e[j], &e[m]))
		{
			t = e[j]; e[j] = e[m]; e[m] = t;
		}
		pivot = e[m];
		for (;;)
		{
			while (entry_less(&e[i], &pivot))
				i++;
			while (entry_less(&pivot, &e[j]))
				j--;
			if (i >= j)
				break;
			t = e[i]; e[i] = e[j]; e[j] = t;
			i++;
			j--;
		}
		/* recurse into the smaller part, loop on the larger */
		if (j + 1 < n - j - 1)
		{
			sort_entries(e, j + 1);
			e += j + 1;
			n -= j + 1;
		}
		else
		{
			sort_entries(e + j + 1, n - j - 1);
			n = j + 1;
		}
	}
	for (int64_t i = 1; i < n; i++)
	{
		nb_entry	x = e[i];
		int64_t		k = i;

		while (k > 0 && entry_less(&x, &e[k - 1]))
		{
			e[k] = e[k - 1];
			k--;
		}
		e[k] = x;
	}
}

/*
 * Long lists by (d, id): a stable LSD radix sort on d's bits (a
 * non-negative double orders as its bit pattern), 11 bits a pass, passes
 * whose digit all entries share skipped; then each run of equal distances
 * by id.  Quicksort's mispredicted branches made it a fifth of long-range
 * geography lists' time (thousands of entries a list).  0 when the
 * scratch memory could not be had (the caller quicksorts instead).
 */
#define GJ_RADIX_MIN 1024
#define GJ_RADIX_BITS 11
#define GJ_RADIX_PASSES 6		/* 6 x 11 >= 64 */

static int
radix_entries(nb_entry *e, int64_t n)
{
	nb_entry   *tmp = malloc(sizeof(nb_entry) * n);
	uint32_t   *hist = calloc((size_t) GJ_RADIX_PASSES << GJ_RADIX_BITS, sizeof(uint32_t));
	nb_entry   *src = e,
			   *dst = tmp;
	const uint64_t mask = ((uint64_t) 1 << GJ_RADIX_BITS) - 1;

	if (tmp == NULL || hist == NULL)
	{
		free(tmp);
		free(hist);
		return 0;
	}
	for (int64_t i = 0; i < n; i++)
	{
		uint64_t	k;

		memcpy(&k, &e[i].d, sizeof(k));
		for (int p = 0; p < GJ_RADIX_PASSES; p++)
			hist[((size_t) p << GJ_RADIX_BITS) + ((k >> (GJ_RADIX_BITS * p)) & mask)]++;
	}
	for (int p = 0; p < GJ_RADIX_PASSES; p++)
	{
		uint32_t   *h = hist + ((size_t) p << GJ_RADIX_BITS);
		uint32_t	sum = 0;
		int			one = 0;
		nb_entry   *t;

		for (uint64_t b = 0; b <= mask; b++)
			one |= h[b] == (uint32_t) n;
		if (one)
			continue;			/* every entry has this digit: nothing moves */
		for (uint64_t b = 0; b <= mask; b++)
		{
			uint32_t	c = h[b];

			h[b] = sum;
			sum += c;
		}
		for (int64_t i = 0; i < n; i++)
		{
			uint64_t	k;

			memcpy(&k, &src[i].d, sizeof(k));
			dst[h[(k >> (GJ_RADIX_BITS * p)) & mask]++] = src[i];
		}
		t = src;
		src = dst;
		dst = t;
	}
	if (src != e)
		memcpy(e, src, sizeof(nb_entry) * n);
	free(tmp);
	free(hist);
	/* equal distances (duplicates, lattices): by id */
	for (int64_t i = 0, j; i < n; i = j)
	{
		for (j = i + 1; j < n && e[j].d == e[i].d; j++)
			;
		if (j - i > 1)
			sort_entries(e + i, j - i);
	}
	return 1;
}

/* Hand over the chunk and take an empty one; 0 once cancelled. */
static int
next_chunk(struct gj_cpu_lists *j, gj_chunk **chp)
{
	gj_queue_put_full(j->eng.q, *chp);
	*chp = gj_queue_get_free(j->eng.q);
	if (*chp == NULL)
		return 0;
	(*chp)->off[0] = 0;
	return 1;
}

static void
fail(struct gj_cpu_lists *j, gj_status st)
{
	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	gj_engine_fail(&j->eng, st);
}

static void *
lists_worker(void *arg)
{
	struct gj_cpu_lists *j = arg;
	const gj_grid *g = j->g;
	const gj_points *p = j->p;
	int64_t		nbr[GJ_MAX_ALL_NEIGHBOURS];
	int			nn = 0;
	int64_t		cell = -1;
	int64_t		bufcap = 1024;
	nb_entry   *buf = malloc(sizeof(nb_entry) * bufcap);
	gj_chunk   *ch = gj_queue_get_free(j->eng.q);

	if (buf == NULL)
		fail(j, GJ_ERR_NOMEM);
	if (ch != NULL)
		ch->off[0] = 0;
	while (ch != NULL && buf != NULL && !__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
	{
		int64_t		b0 = __atomic_fetch_add(&j->next, GJ_LIST_BLOCK, __ATOMIC_RELAXED);
		int64_t		b1 = b0 + GJ_LIST_BLOCK < j->nrows ? b0 + GJ_LIST_BLOCK : j->nrows;

		if (b0 >= j->nrows)
			break;
		for (int64_t k = b0; k < b1 && ch != NULL; k++)
		{
			int64_t		i = j->rows != NULL ? j->rows[k] : k;
			const double *xi = p->x + i * p->dims;
			int64_t		n = 0,
						at;

			if (__atomic_load_n(&j->stop, __ATOMIC_RELAXED))
				break;
			if (cell < 0 || i >= g->cell_start[cell + 1])
			{
				cell = gj_grid_cell_of_row(g, i, cell);
				nn = gj_grid_neighbourhood(g, cell, nbr);
			}
			for (int k = 0; k < nn; k++)
			{
				int64_t		r1 = g->cell_start[nbr[k] + 1];

				for (int64_t r = g->cell_start[nbr[k]]; r < r1; r++)
				{
					double		s;

					if (r == i)
						continue;
					s = gj_sqdist(xi, p->x + r * p->dims, p->dims);
					if (s > g->eps2)
						continue;
					if (n == bufcap)
					{
						nb_entry   *nbuf = realloc(buf, sizeof(nb_entry) * bufcap * 2);

						if (nbuf == NULL)
						{
							fail(j, GJ_ERR_NOMEM);
							goto out;
						}
						buf = nbuf;
						bufcap *= 2;
					}
					buf[n].d = sqrt(s);
					buf[n].id = p->ids[r];
					n++;
				}
			}
			if (n < GJ_RADIX_MIN || !radix_entries(buf, n))
				sort_entries(buf, n);

			/* the list goes whole, after its gap, into a chunk with room for it */
			if (ch->n == ch->cap ||
				(ch->n > 0 && ch->off[ch->n] + GJ_LIST_GAP + n > GJ_LIST_CHUNK_ENTRIES))
			{
				if (!next_chunk(j, &ch))
					goto out;
			}
			at = ch->off[ch->n] + GJ_LIST_GAP;
			if (!gj_chunk_reserve_list(ch, at + n))
			{
				fail(j, GJ_ERR_NOMEM);
				goto out;
			}
			for (int64_t e = 0; e < n; e++)
			{
				ch->nb[at + e] = buf[e].id;
				ch->nd[at + e] = buf[e].d;
			}
			ch->a[ch->n] = p->ids[i];
			ch->n++;
			ch->off[ch->n] = at + n;
		}
		/* a block's rows are consecutive; the next block may not be */
		cell = -1;
	}
out:
	if (ch != NULL)
		gj_queue_put_full(j->eng.q, ch);
	free(buf);
	gj_queue_producer_done(j->eng.q);
	return NULL;
}

gj_status
gj_cpu_lists_start(const gj_grid *g, const gj_points *p, const uint32_t *rows,
				   int64_t nrows, int nthreads, gj_cpu_lists **out)
{
	struct gj_cpu_lists *j;
	int64_t		want;

	if (rows == NULL)
		nrows = p->n;
	want = (nrows + GJ_LIST_BLOCK - 1) / GJ_LIST_BLOCK;

	*out = NULL;
	if (nthreads <= 0)
		nthreads = gj_cpu_count();
	if (want < nthreads)
		nthreads = want < 1 ? 1 : (int) want;
	j = calloc(1, sizeof(struct gj_cpu_lists));
	if (j == NULL)
		return GJ_ERR_NOMEM;
	j->eng.free = cpu_lists_free;
	j->g = g;
	j->p = p;
	j->nrows = nrows;
	j->threads = calloc(nthreads, sizeof(pthread_t));
	j->eng.q = gj_queue_create_lists(2 * nthreads + 2);
	if (rows != NULL)
	{
		j->rows = malloc(sizeof(uint32_t) * (nrows + 1));
		if (j->rows != NULL)
			memcpy(j->rows, rows, sizeof(uint32_t) * nrows);
	}
	if (j->threads == NULL || j->eng.q == NULL || (rows != NULL && j->rows == NULL))
	{
		cpu_lists_free(&j->eng);
		return GJ_ERR_NOMEM;
	}
	if (nrows == 0)
	{
		gj_queue_set_producers(j->eng.q, 0);
		*out = j;
		return GJ_OK;
	}
	j->nthreads = gj_engine_start_workers(&j->eng, j->threads, nthreads, lists_worker, j, 0);
	if (j->nthreads == 0)
	{
		cpu_lists_free(&j->eng);
		return GJ_ERR_THREAD;
	}
	*out = j;
	return GJ_OK;
}

/* Stop the workers, wait for them and free everything.  NULL is a no-op. */
static void
cpu_lists_free(gj_engine *e)
{
	struct gj_cpu_lists *j = (struct gj_cpu_lists *) e;

	__atomic_store_n(&j->stop, 1, __ATOMIC_RELAXED);
	if (j->eng.q != NULL)
		gj_queue_cancel(j->eng.q);
	for (int t = 0; t < j->nthreads; t++)
		pthread_join(j->threads[t], NULL);
	gj_queue_destroy(j->eng.q);
	free(j->threads);
	free(j->rows);
	free(j);
}
