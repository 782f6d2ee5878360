/*
 * resources.h
 *		Ownership of everything a join holds outside palloc
 *		(resources.c), for the job and for the planner's sampled estimates.
 */
#ifndef GJ_RESOURCES_H
#define GJ_RESOURCES_H

#include "gpujoin.h"

/*
 * Everything a join holds outside palloc (malloc'd points, the grid, worker
 * threads, GPU memory), owned by a memory context whose reset/delete
 * callback releases it: on success, ERROR, cancel and statement_timeout
 * alike.
 */
typedef struct GjResources
{
	MemoryContext cxt;
	gj_points	points;			/* the (reference) points */
	gj_points	queries;		/* kNN join: the query points */
	gj_points	both;			/* eps_join by tiles: queries' rows, then points' */
	gj_grid		grid;
	bool		have_grid;
	bool		block_ordered;	/* points (and queries) sorted for the tile index */
	gj_engine  *engine;			/* the running engine, whichever it is */
	gj_engine  *next_engine;	/* GPU slabs: the next step's, started early */
	int32_t    *rowval;			/* per-row shapes: count or cluster, by row */
	uint8_t    *rowflag;		/* dbscan: is_core, by row */
	int64_t    *list_off;		/* lists from pairs: row i's are [off[i], off[i+1]) */
	int64_t    *list_nb;		/* ... of these ids */
	double	   *list_nd;		/* ... and distances */
	gj_geo_side geo_points;		/* geography: points' and queries' rows as read */
	gj_geo_side geo_queries;
} GjResources;

extern GjResources *GjResourcesCreate(MemoryContext parent);
extern void GjResourcesStopEngine(GjResources *res);
extern void GjResourcesRelease(GjResources *res);

#endif							/* GJ_RESOURCES_H */
