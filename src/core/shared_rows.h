/*
 * shared_rows.h
 *		The parallel read's rows in anonymous shared files (shared_rows.c).
 */
#ifndef GJ_SHARED_ROWS_H
#define GJ_SHARED_ROWS_H

#include <stddef.h>

#include "gj_core.h"

#define GJ_SHARED_ROWS_MAX_FILES 16

/*
 * nfiles files of part bytes each, mapped back to back from base; none
 * when base is NULL (so a zeroed struct is empty: the fds are only closed
 * while base is set).
 */
typedef struct gj_shared_rows_alloc gj_shared_rows_alloc;

typedef struct gj_shared_rows
{
	void	   *base;
	size_t		part;
	int			nfiles;
	int			fds[GJ_SHARED_ROWS_MAX_FILES];
	gj_shared_rows_alloc *alloc;	/* the pages' allocation while it runs */
} gj_shared_rows;

extern void gj_shared_rows_init(gj_shared_rows *r);

/* The host's MemAvailable (free or reclaimable without swapping) in bytes; 0: unknown. */
extern double gj_memory_available(void);

/*
 * At least bytes in up to max_files new anonymous shared files, mapped;
 * 0, or -1 where they cannot be had (no memfd, or not the memory).  Their
 * pages are being allocated on helper threads, a thread a file, when this
 * returns: a head start for the writers, not a reservation (a page not
 * yet allocated is allocated by its first write, as a malloc'd buffer's).
 */
extern int	gj_shared_rows_create(gj_shared_rows *r, size_t bytes, int max_files);

/*
 * Wait for the allocation (if any is running); 0 when it allocated every
 * page, -1 when it could not.  Closing the descriptors waits for it first.
 */
extern int	gj_shared_rows_allocated(gj_shared_rows *r);

/*
 * Another process's files (its pid and descriptors, as the creator's r
 * holds them), mapped the same way, their descriptors here closed again
 * (the mapping keeps the files); 0, or -1 when one cannot be opened or is
 * shorter than part.
 */
extern int	gj_shared_rows_open(gj_shared_rows *r, int pid, const int *fds, int nfiles,
								size_t part);

/*
 * Map the pages of [addr, addr + len) of a shared mapping into this process
 * at once (MADV_POPULATE_WRITE, where the kernel has it), instead of a
 * fault a page as they are first written.
 */
extern void gj_shared_rows_prefault(void *addr, size_t len);

/* Close the descriptors, keeping the mapping (which keeps the files). */
extern void gj_shared_rows_drop_fds(gj_shared_rows *r);

/* Unmap and close now; r is empty after. */
extern void gj_shared_rows_close(gj_shared_rows *r);

/* The same on a detached helper thread (here when none starts); r is empty after. */
extern void gj_shared_rows_release(gj_shared_rows *r);

#endif							/* GJ_SHARED_ROWS_H */
