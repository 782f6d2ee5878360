/*
 * big_buffers.c
 *		Host buffers of many megabytes: asked for huge pages, and touched
 *		for the first time on threads.
 *
 * A fresh page costs a fault and its zeroing when it is first written.
 * Measured on the 16-core H100 host (regress/bench/BENCHMARKS.md): copying 1 GB
 * into fresh memory took 697 ms on one thread, into memory already
 * touched 165 ms, into fresh memory with MADV_HUGEPAGE 378 ms.  The reader
 * fills its buffer on one thread, and the sort into blocks gathers into a
 * new one, so for 100K rows of 768 dimensions (614 MB) each paid about
 * 0.4 s in faults alone.  So a big buffer asks the kernel for transparent
 * huge pages (2 MB: 512 times fewer faults, and a cheaper free) and its
 * pages are faulted in by every core at once, before the rows arrive.
 * Both are hints: where huge pages are off or the fault-in cannot start
 * its threads, the buffer is still good and the first write faults.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core_internal.h"

#define GJ_BIG_BYTES ((size_t) 32 << 20)	/* smaller buffers: plain malloc */
#define GJ_TOUCH_STEP 4096					/* bytes between touched addresses */
#define GJ_TOUCH_MIN_PAGES 8192				/* pages a thread is worth starting for */

typedef struct touch_arg
{
	volatile char *base;
} touch_arg;

static void
touch_pages(void *arg, int64_t p0, int64_t p1)
{
	touch_arg  *t = arg;

	for (int64_t p = p0; p < p1; p++)
		t->base[p * GJ_TOUCH_STEP] = 0;
}

/*
 * Ask for huge pages over [p, p + bytes) and fault it in on threads.  The
 * contents become zero bytes at touched addresses; callers only do this
 * to memory they have not written yet.
 */
void
gj_big_prepare(void *p, size_t bytes)
{
	uintptr_t	lo = ((uintptr_t) p + 4095) & ~(uintptr_t) 4095,
				hi = ((uintptr_t) p + bytes) & ~(uintptr_t) 4095;
	touch_arg	t;
	int64_t		pages;

	if (p == NULL || bytes < GJ_BIG_BYTES || hi <= lo)
		return;
#ifdef MADV_HUGEPAGE
	(void) madvise((void *) lo, hi - lo, MADV_HUGEPAGE);
#endif
	t.base = (volatile char *) lo;
	pages = (int64_t) ((hi - lo) / GJ_TOUCH_STEP);
	(void) gj_run_rows(touch_pages, &t, 0, pages, gj_slices_for(pages, GJ_TOUCH_MIN_PAGES));
}

/* malloc(bytes), prepared as above when it is big. */
void *
gj_big_alloc(size_t bytes)
{
	void	   *p = malloc(bytes);

	gj_big_prepare(p, bytes);
	return p;
}
