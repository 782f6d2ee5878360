/*
 * datagen.h
 *		Seeded synthetic point sets for the unit tests, the GPU check and the
 *		benchmarks (the same generator everywhere, so a seed means one data set).
 */
#ifndef GJ_DATAGEN_H
#define GJ_DATAGEN_H

#include <stdint.h>

#include "core_internal.h"

typedef enum gj_kind
{
	GJ_GEN_UNIFORM,				/* uniform in [0,100]^d */
	GJ_GEN_EXPONENTIAL,			/* each coordinate exponential, rate 40 */
	GJ_GEN_CLUSTERS,			/* 20 Gaussian clusters (sd 2) in [0,100]^d */
	GJ_GEN_DUPLICATES,			/* drawn from n/10 distinct uniform points */
	GJ_GEN_ONE_CELL,			/* uniform in [0,1e-3]^d: one cell for most eps */
	GJ_GEN_GRID_SNAPPED,		/* multiples of 0.5 in [0,10]: exact-eps pairs */
	/* for many dimensions */
	GJ_GEN_LOWVAR_FIRST,		/* uniform, dimension d spread 100 (d+1)^2 / dims^2 */
	GJ_GEN_OFFSET,				/* 1e4 + uniform in [0,0.01]: large norms, tiny differences */
	GJ_GEN_FAR_CLUSTERS,		/* half at -1e4, half at +1e4, spread 0.01 */
	GJ_GEN_LATTICE_STEPS		/* integer centres plus steps of 0.5 or 1 in a few
								 * dimensions: many pairs exactly 0.5, 1, sqrt(0.5) apart */
} gj_kind;

extern uint64_t gj_rng_next(uint64_t *state);
extern double gj_rng_uniform(uint64_t *state);
extern void gj_gen_points(gj_points *p, gj_kind kind, int64_t n, int dims,
						  uint64_t seed);
/* The first n rows of src into a fresh dst (exits on OOM). */
extern void gj_points_copy(gj_points *dst, const gj_points *src, int64_t n);

/* DIR/NAME.csv: id,x1,..,xd per line, %.17g (bit-exact for COPY and numpy). */
extern void gj_write_csv(const char *dir, const char *name, const gj_points *p);
extern double gj_gen_typical_eps(gj_kind kind, int64_t n, int dims,
								 double neighbours);

/*
 * Hand-made boundary sets for every engine's tests: lattices where pairs lie
 * exactly eps apart, 3-4-5 triangles, subnormal and underflowing eps*eps,
 * float64 range overflow.  Case k (0, 1, ...) fills p (ids 0..n-1), its name
 * and up to GJ_GEN_MAX_EPS eps values; returns 0 past the last case.
 */
#define GJ_GEN_MAX_EPS 3

/* p's rows alternately into fresh r (even rows) and s (odd rows): two-set tests. */
extern void gj_points_split_alternate(const gj_points *p, gj_points *r, gj_points *s);

/* Ids become a seeded permutation of 0..n-1 (order-independence tests). */
extern void gj_scramble_ids(gj_points *p, uint64_t seed);

/*
 * A rule between two eps for the band tests (slab_density.c's band): rows
 * within in2 (squared) always, beyond out2 never, in between as a hash of
 * the two ids and seed says, about half of the pairs; gj_oracle_rule's form.
 */
typedef struct gj_gen_band
{
	double		in2,
				out2;
	uint64_t	seed;
} gj_gen_band;

extern int	gj_gen_band_within(void *arg, const gj_points *p, int64_t i, int64_t j);

/*
 * DBSCAN's adversarial chain: nclusters tight groups of 6 points in 2-D,
 * centres 2 eps apart on a line, each with one more point exactly eps from
 * its centre, so a lone point lies exactly eps from two clusters.
 */
extern void gj_gen_chain(gj_points *p, int nclusters, double eps, uint64_t seed);

/*
 * A dense clump 2 eps across (eps 25: uniform in [0, 50)^dims), every 40th
 * row spread 3x wider; gap 1 or 2 moves every other row 74 or 76 further
 * along the first dimension (a second clump just under or just over eps
 * from the first).  Its cells are dense and not compact: DBSCAN's boxes.
 */
#define GJ_GEN_CLUMP_EPS 25.0
extern void gj_gen_clump(gj_points *p, int64_t n, int dims, int gap, uint64_t seed);
extern int	gj_gen_boundary_case(int k, gj_points *p, const char **name,
								 double *eps, int *neps);

/*
 * Two sets in one array, as an eps join by tiles takes them (opt.cross):
 * R, rows [0, nr) of p, then S, the rest of p, or with same R again (the
 * same coordinates), S's ids moved up by GJ_GEN_S_ID so that the order of
 * a pair shows.  With plan, each set is sorted into blocks by it, as the
 * job sorts them.  *ns: S's rows (out starts S at row nr).
 */
#define GJ_GEN_S_ID ((int64_t) 1 << 40)
extern void gj_gen_two_sets(gj_points *out, const gj_points *p, int64_t nr, int same,
							const gj_block_plan *plan, int64_t *ns);
/* Both arrangements: two[0] as given, two[1] sorted by R's model plan at eps2. */
extern void gj_gen_two_sets_sorted(gj_points two[2], const gj_points *p, int64_t nr, int same,
								   double eps2, int64_t *ns);

#endif
