/*
 * clock.c
 *		The core's clock and its cancel hook: the two things it asks of
 *		whoever embeds it.
 */
#include <time.h>

#include "core_internal.h"

static gj_interrupt_fn interrupt_hook = NULL;

/* Monotonic milliseconds, for phase timings and progress. */
double
gj_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Install the hook long single-threaded work polls (NULL: none). */
void
gj_set_interrupt_hook(gj_interrupt_fn fn)
{
	interrupt_hook = fn;
}

/* Whether the embedder wants the current long operation to stop. */
int
gj_interrupted(void)
{
	return interrupt_hook != NULL && interrupt_hook();
}
