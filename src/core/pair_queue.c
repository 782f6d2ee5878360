/*
 * pair_queue.c
 *		A bounded queue of result chunks between producer threads and the one
 *		consumer (the backend thread that writes tuples).
 *
 * A fixed pool of chunks circulates: producers take an empty chunk, fill it
 * and hand it over full; the consumer writes its rows out and gives it back.
 * The bound is what keeps memory flat when tuple output is slower than the
 * join: producers block on an empty pool.  The consumer waits with a timeout
 * so that it can check for interrupts while producers are busy, and cancel
 * wakes everyone, so that a cancelled join's threads can be joined at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "core_internal.h"

struct gj_pair_queue
{
	pthread_mutex_t mu;
	pthread_cond_t cv_free;		/* a chunk went back to the pool */
	pthread_cond_t cv_full;		/* a full chunk arrived, or a producer ended */
	gj_chunk   *free_head;
	gj_chunk   *full_head;
	gj_chunk   *full_tail;
	int			producers;
	int			canceled;
	int			nchunks;
	gj_chunk   *chunks;			/* the pool, for destroy */
	int			external;		/* the pool's arrays belong to the caller */
	double		done_ms;		/* gj_now_ms() when the last producer ended */
};

/* A queue with room for nchunks chunk descriptors, all empty. */
static gj_pair_queue *
queue_alloc(int nchunks)
{
	gj_pair_queue *q = calloc(1, sizeof(gj_pair_queue));

	if (q == NULL)
		return NULL;
	/* a queue that only passes other queues' chunks on (a team's) has none */
	q->chunks = nchunks > 0 ? calloc(nchunks, sizeof(gj_chunk)) : NULL;
	if (q->chunks == NULL && nchunks > 0)
	{
		free(q);
		return NULL;
	}
	for (int i = 0; i < nchunks; i++)
		q->chunks[i].home = q;
	q->nchunks = nchunks;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv_free, NULL);
	pthread_cond_init(&q->cv_full, NULL);
	return q;
}

/*
 * A queue with nchunks empty chunks of GJ_CHUNK_PAIRS rows each (with a
 * rank array for kNN results); NULL on OOM.
 */
gj_pair_queue *
gj_queue_create(int nchunks, int with_rank)
{
	gj_pair_queue *q = queue_alloc(nchunks);

	if (q == NULL)
		return NULL;
	for (int i = 0; i < nchunks; i++)
	{
		gj_chunk   *c = &q->chunks[i];

		c->cap = GJ_CHUNK_PAIRS;
		c->a = malloc(sizeof(int64_t) * GJ_CHUNK_PAIRS);
		c->b = malloc(sizeof(int64_t) * GJ_CHUNK_PAIRS);
		c->dist = malloc(sizeof(double) * GJ_CHUNK_PAIRS);
		c->rank = with_rank ? malloc(sizeof(int32_t) * GJ_CHUNK_PAIRS) : NULL;
		if (c->a == NULL || c->b == NULL || c->dist == NULL ||
			(with_rank && c->rank == NULL))
		{
			gj_queue_destroy(q);
			return NULL;
		}
		c->next = q->free_head;
		q->free_head = c;
	}
	return q;
}

/*
 * A queue of nchunks empty chunks of neighbour lists: up to GJ_CHUNK_PAIRS
 * rows, entries growing as gj_chunk_reserve_list asks; NULL on OOM.
 */
gj_pair_queue *
gj_queue_create_lists(int nchunks)
{
	gj_pair_queue *q = queue_alloc(nchunks);

	if (q == NULL)
		return NULL;
	for (int i = 0; i < nchunks; i++)
	{
		gj_chunk   *c = &q->chunks[i];

		c->cap = GJ_CHUNK_PAIRS;
		c->a = malloc(sizeof(int64_t) * GJ_CHUNK_PAIRS);
		c->off = malloc(sizeof(int64_t) * (GJ_CHUNK_PAIRS + 1));
		c->next = q->free_head;
		q->free_head = c;
		if (c->a == NULL || c->off == NULL || !gj_chunk_reserve_list(c, GJ_CHUNK_PAIRS))
		{
			gj_queue_destroy(q);
			return NULL;
		}
		c->off[0] = 0;
	}
	return q;
}

/*
 * Room for at least `entries` list entries in c (its filler owns it);
 * 0 on OOM, with c unchanged.
 */
int
gj_chunk_reserve_list(gj_chunk *c, int64_t entries)
{
	int64_t		cap = c->ncap > 0 ? c->ncap : 1024;
	int64_t    *nb;
	double	   *nd;

	if (entries <= c->ncap)
		return 1;
	while (cap < entries)
		cap *= 2;
	nb = realloc(c->nb, sizeof(int64_t) * cap);
	if (nb == NULL)
		return 0;
	c->nb = nb;
	nd = realloc(c->nd, sizeof(double) * cap);
	if (nd == NULL)
		return 0;
	c->nd = nd;
	c->ncap = cap;
	return 1;
}

/*
 * A queue over chunks whose arrays the caller owns (the GPU engine's pinned
 * buffers); the pool array is copied, the arrays are not freed by destroy.
 */
gj_pair_queue *
gj_queue_create_external(gj_chunk *pool, int nchunks)
{
	gj_pair_queue *q = queue_alloc(nchunks);

	if (q == NULL)
		return NULL;
	q->external = 1;
	for (int i = 0; i < nchunks; i++)
	{
		q->chunks[i] = pool[i];
		q->chunks[i].n = 0;
		q->chunks[i].home = q;
		q->chunks[i].next = q->free_head;
		q->free_head = &q->chunks[i];
	}
	return q;
}

/* Free the pool; no thread may use q any more. */
void
gj_queue_destroy(gj_pair_queue *q)
{
	if (q == NULL)
		return;
	for (int i = 0; i < q->nchunks && !q->external; i++)
	{
		free(q->chunks[i].a);
		free(q->chunks[i].b);
		free(q->chunks[i].dist);
		free(q->chunks[i].rank);
		free(q->chunks[i].off);
		free(q->chunks[i].nb);
		free(q->chunks[i].nd);
	}
	free(q->chunks);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv_free);
	pthread_cond_destroy(&q->cv_full);
	free(q);
}

/* Number of producers the consumer waits for before GJ_DONE. */
void
gj_queue_set_producers(gj_pair_queue *q, int n)
{
	pthread_mutex_lock(&q->mu);
	q->producers = n;
	if (n == 0)
		q->done_ms = gj_now_ms();
	pthread_mutex_unlock(&q->mu);
}

/* An empty chunk; blocks while the pool is empty.  NULL once cancelled. */
gj_chunk *
gj_queue_get_free(gj_pair_queue *q)
{
	gj_chunk   *c = NULL;

	pthread_mutex_lock(&q->mu);
	while (q->free_head == NULL && !q->canceled)
		pthread_cond_wait(&q->cv_free, &q->mu);
	if (!q->canceled)
	{
		c = q->free_head;
		q->free_head = c->next;
		c->n = 0;
		c->next = NULL;
	}
	pthread_mutex_unlock(&q->mu);
	return c;
}

/* Hand a filled chunk to the consumer (an empty one goes back to the pool). */
void
gj_queue_put_full(gj_pair_queue *q, gj_chunk *c)
{
	if (c->n == 0)
	{
		gj_queue_release(q, c);
		return;
	}
	pthread_mutex_lock(&q->mu);
	c->next = NULL;
	if (q->full_tail)
		q->full_tail->next = c;
	else
		q->full_head = c;
	q->full_tail = c;
	pthread_cond_signal(&q->cv_full);
	pthread_mutex_unlock(&q->mu);
}

/* A producer has finished; the last one lets the consumer see GJ_DONE. */
void
gj_queue_producer_done(gj_pair_queue *q)
{
	double		now = gj_now_ms();

	pthread_mutex_lock(&q->mu);
	if (--q->producers == 0)
		q->done_ms = now;
	pthread_cond_broadcast(&q->cv_full);
	pthread_mutex_unlock(&q->mu);
}

/*
 * The next full chunk, waiting up to timeout_ms: GJ_OK with *out set,
 * GJ_AGAIN on timeout, GJ_DONE when every producer has finished and nothing
 * is left, GJ_ERR_CANCELED after gj_queue_cancel.
 */
gj_status
gj_queue_take(gj_pair_queue *q, int timeout_ms, gj_chunk **out)
{
	struct timespec deadline;
	gj_status	st = GJ_OK;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L)
	{
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}

	*out = NULL;
	pthread_mutex_lock(&q->mu);
	while (q->full_head == NULL && q->producers > 0 && !q->canceled)
	{
		if (pthread_cond_timedwait(&q->cv_full, &q->mu, &deadline) == ETIMEDOUT)
			break;
	}
	if (q->canceled)
		st = GJ_ERR_CANCELED;
	else if (q->full_head != NULL)
	{
		*out = q->full_head;
		q->full_head = q->full_head->next;
		if (q->full_head == NULL)
			q->full_tail = NULL;
	}
	else if (q->producers <= 0)
		st = GJ_DONE;
	else
		st = GJ_AGAIN;
	pthread_mutex_unlock(&q->mu);
	return st;
}

/*
 * Give a consumed chunk back to its pool: its home queue's, which is q
 * unless q only handed it on (gj_queue_pass).
 */
void
gj_queue_release(gj_pair_queue *q, gj_chunk *c)
{
	if (c->home != NULL)
		q = c->home;
	c->n = 0;
	pthread_mutex_lock(&q->mu);
	c->next = q->free_head;
	q->free_head = c;
	pthread_cond_signal(&q->cv_free);
	pthread_mutex_unlock(&q->mu);
}

/* Wake and stop everyone: producers get no more chunks, the consumer stops. */
void
gj_queue_cancel(gj_pair_queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->canceled = 1;
	pthread_cond_broadcast(&q->cv_free);
	pthread_cond_broadcast(&q->cv_full);
	pthread_mutex_unlock(&q->mu);
}

/* Whether gj_queue_cancel was called. */
int
gj_queue_canceled(gj_pair_queue *q)
{
	int			c;

	pthread_mutex_lock(&q->mu);
	c = q->canceled;
	pthread_mutex_unlock(&q->mu);
	return c;
}

/* When the last producer finished (gj_now_ms), or 0 while one still runs. */
double
gj_queue_done_ms(gj_pair_queue *q)
{
	double		t;

	pthread_mutex_lock(&q->mu);
	t = q->producers <= 0 ? q->done_ms : 0.0;
	pthread_mutex_unlock(&q->mu);
	return t;
}
