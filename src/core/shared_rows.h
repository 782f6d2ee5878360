/*
 * shared_rows.h
 *		The parallel read's rows in an anonymous shared file (shared_rows.c).
 */
#ifndef GJ_SHARED_ROWS_H
#define GJ_SHARED_ROWS_H

#include <stddef.h>

#include "gj_core.h"

#define GJ_SHARED_ROWS_FAULTERS 4	/* helper threads that fault a mapping in */

/*
 * A mapped file, or none when base is NULL (so a zeroed struct is empty:
 * fd is only closed while base is set).
 */
typedef struct gj_shared_rows
{
	int			fd;
	void	   *base;			/* mapping of bytes, or NULL */
	size_t		bytes;
	struct gj_shared_rows_faulting *faulting;	/* helpers running, or NULL */
} gj_shared_rows;

extern void gj_shared_rows_init(gj_shared_rows *r);

/* A new anonymous shared file of bytes, mapped; 0, or -1 where none can be had. */
extern int	gj_shared_rows_create(gj_shared_rows *r, size_t bytes);

/*
 * Process pid's descriptor fd, mapped for its first bytes; 0, or -1 when it
 * cannot be opened or is shorter than bytes.
 */
extern int	gj_shared_rows_open(gj_shared_rows *r, int pid, int fd, size_t bytes);

/* Fault r's mapping in on up to nthreads helper threads, in the background. */
extern void gj_shared_rows_fault_in(gj_shared_rows *r, int nthreads);

/* Unmap and close now (helpers stopped first); r is empty after. */
extern void gj_shared_rows_close(gj_shared_rows *r);

/* The same on a detached helper thread (here when none starts); r is empty after. */
extern void gj_shared_rows_release(gj_shared_rows *r);

#endif							/* GJ_SHARED_ROWS_H */
