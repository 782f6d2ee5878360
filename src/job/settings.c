/*
 * settings.c
 *		The job's settings: how the eps and kNN functions search, and
 *		whether long joins report their progress.  A leaf: the plan and
 *		the emitter read them through the accessors below.
 */
#include "postgres.h"

#include "utils/guc.h"

#include "job/job_internal.h"

static int	eps_method_guc = GJ_EPS_AUTO;
static int	knn_method_guc = GJ_KNN_AUTO;
static bool progress_guc = false;

static const struct config_enum_entry knn_method_options[] = {
	{"auto", GJ_KNN_AUTO, false},
	{"grid", GJ_KNN_GRID, false},
	{"brute", GJ_KNN_BRUTE, false},
	{"blocks", GJ_KNN_BLOCKS, false},
	{NULL, 0, false}
};

static const struct config_enum_entry eps_method_options[] = {
	{"auto", GJ_EPS_AUTO, false},
	{"grid", GJ_EPS_GRID, false},
	{"brute", GJ_EPS_BRUTE, false},
	{"blocks", GJ_EPS_BLOCKS, false},
	{NULL, 0, false}
};

/* The job's settings (from _PG_init). */
void
GjJobInit(void)
{
	DefineCustomBoolVariable("gpujoin.progress",
							 "Report the progress of long joins as NOTICEs, at most one a second.",
							 NULL,
							 &progress_guc,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.knn_method",
							 "Search of the kNN joins: auto, grid, blocks or brute.",
							 "grid searches a grid of a few dimensions; brute compares every pair; "
							 "blocks is brute force over rows sorted into small blocks, skipping "
							 "blocks whose bounds are farther than the k-th neighbour so far. "
							 "auto uses the grid up to 6 dimensions and blocks above; all give "
							 "the same answer.",
							 &knn_method_guc,
							 GJ_KNN_AUTO,
							 knn_method_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.eps_method",
							 "Search of the eps joins, counts, lists and DBSCAN: auto, grid, blocks or brute.",
							 "grid compares each row with the rows of its neighbouring grid cells; "
							 "brute compares every pair in vectorised tiles (tensor cores on the GPU); "
							 "blocks sorts the rows into small blocks and compares the tiles of "
							 "blocks whose bounds are within eps. "
							 "auto takes the grid up to 3 dimensions and otherwise the grid or blocks, "
							 "whichever a sample says costs less; all give the same answer.",
							 &eps_method_guc,
							 GJ_EPS_AUTO,
							 eps_method_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}

GjEpsMethod
GjEpsMethodSetting(void)
{
	return (GjEpsMethod) eps_method_guc;
}

gj_knn_method
GjKnnMethodSetting(void)
{
	return (gj_knn_method) knn_method_guc;
}

bool
GjProgressSetting(void)
{
	return progress_guc;
}
