-- gpujoin upgrade 0.5 -> 0.6: PostGIS geography points in metres on the
-- Earth, and a use_spheroid argument last on every join and per-row
-- function (true: the WGS84 spheroid of ST_DWithin(geography, geography, d),
-- false: PostGIS's sphere; the kNN joins rank on the sphere as PostGIS's
-- <-> does, so theirs defaults to false).  A function's arguments cannot
-- change in place, so each is dropped and created again; calls written for
-- 0.5 mean the same.  (A view or function of yours that calls one of them
-- must be dropped first and made again after the update.)
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.6'" to load this file. \quit

DROP FUNCTION eps_selfjoin(regclass, text[], float8, text, boolean, text);
DROP FUNCTION eps_selfjoin_sql(text, float8, boolean, text);
DROP FUNCTION knn_join(regclass, regclass, text[], integer, text, text, text[], text);
DROP FUNCTION knn_selfjoin(regclass, text[], integer, text, text);
DROP FUNCTION knn_join_sql(text, text, integer, text);
DROP FUNCTION knn_selfjoin_sql(text, integer, text);
DROP FUNCTION eps_join(regclass, regclass, text[], float8, text, text, text[], text);
DROP FUNCTION eps_join_sql(text, text, float8, text);
DROP FUNCTION eps_join_counts(regclass, regclass, text[], float8, text, text, text[], text);
DROP FUNCTION eps_join_counts_sql(text, text, float8, text);
DROP FUNCTION eps_neighbor_counts(regclass, text[], float8, text, text);
DROP FUNCTION eps_neighbor_counts_sql(text, float8, text);
DROP FUNCTION eps_neighbors(regclass, text[], float8, text, text);
DROP FUNCTION eps_neighbors_sql(text, float8, text);
DROP FUNCTION dbscan(regclass, text[], float8, integer, text, text);
DROP FUNCTION dbscan_sql(text, float8, integer, text);

CREATE FUNCTION eps_selfjoin(tbl regclass, cols text[], eps float8,
                             id_col text DEFAULT NULL,
                             "symmetric" boolean DEFAULT false,
                             metric text DEFAULT 'l2',
                             use_spheroid boolean DEFAULT true)
RETURNS TABLE (a bigint, b bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_selfjoin'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_selfjoin(regclass, text[], float8, text, boolean, text, boolean) IS
'every pair of rows of tbl within distance eps of each other (inclusive); '
'cols names numeric columns or one float array, vector or halfvec column; id_col '
'defaults to the integer primary key; symmetric returns both (a, b) and (b, a); '
'metric is l2 (Euclidean) or cosine (1 - cosine similarity)';

CREATE FUNCTION eps_selfjoin_sql(query text, eps float8,
                                 "symmetric" boolean DEFAULT false,
                                 metric text DEFAULT 'l2',
                                 use_spheroid boolean DEFAULT true)
RETURNS TABLE (a bigint, b bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_selfjoin_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_selfjoin_sql(text, float8, boolean, text, boolean) IS
'eps_selfjoin over the rows of a read-only SELECT returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

CREATE FUNCTION knn_join(query_tbl regclass, ref_tbl regclass, cols text[], k integer,
                         query_id_col text DEFAULT NULL, ref_id_col text DEFAULT NULL,
                         ref_cols text[] DEFAULT NULL, metric text DEFAULT 'l2',
                         use_spheroid boolean DEFAULT false)
RETURNS TABLE (q bigint, r bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_join'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_join(regclass, regclass, text[], integer, text, text, text[], text, boolean) IS
'for each row of query_tbl, the k rows of ref_tbl nearest by metric (l2 or cosine), '
'ranked 1..k by (dist, reference id); ref_cols defaults to cols; ids default to the '
'integer primary keys';

CREATE FUNCTION knn_selfjoin(tbl regclass, cols text[], k integer, id_col text DEFAULT NULL,
                             metric text DEFAULT 'l2',
                             use_spheroid boolean DEFAULT false)
RETURNS TABLE (a bigint, b bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_selfjoin(regclass, text[], integer, text, text, boolean) IS
'for each row of tbl, the k other rows nearest by metric (l2 or cosine), ranked 1..k '
'by (dist, id); a row is never its own neighbour, other rows at distance 0 are';

CREATE FUNCTION knn_join_sql(query_sql text, ref_sql text, k integer,
                             metric text DEFAULT 'l2',
                             use_spheroid boolean DEFAULT false)
RETURNS TABLE (q bigint, r bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_join_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_join_sql(text, text, integer, text, boolean) IS
'knn_join over the rows of two read-only SELECTs, each returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

CREATE FUNCTION knn_selfjoin_sql(query text, k integer, metric text DEFAULT 'l2',
                                 use_spheroid boolean DEFAULT false)
RETURNS TABLE (a bigint, b bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_selfjoin_sql(text, integer, text, boolean) IS
'knn_selfjoin over the rows of a read-only SELECT returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

CREATE FUNCTION eps_join(r_tbl regclass, s_tbl regclass, cols text[], eps float8,
                         r_id_col text DEFAULT NULL, s_id_col text DEFAULT NULL,
                         s_cols text[] DEFAULT NULL, metric text DEFAULT 'l2',
                         use_spheroid boolean DEFAULT true)
RETURNS TABLE (r bigint, s bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_join'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join(regclass, regclass, text[], float8, text, text, text[], text, boolean) IS
'every pair (r, s) of a row of r_tbl and a row of s_tbl within distance eps (inclusive); '
's_cols defaults to cols; ids default to the integer primary keys; eps_join(t, t, ...) '
'returns every ordered pair, (a, a) included';

CREATE FUNCTION eps_join_sql(r_query text, s_query text, eps float8, metric text DEFAULT 'l2',
                             use_spheroid boolean DEFAULT true)
RETURNS TABLE (r bigint, s bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_join_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_sql(text, text, float8, text, boolean) IS
'eps_join over the rows of two read-only SELECTs, each returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

CREATE FUNCTION eps_join_counts(r_tbl regclass, s_tbl regclass, cols text[], eps float8,
                                r_id_col text DEFAULT NULL, s_id_col text DEFAULT NULL,
                                s_cols text[] DEFAULT NULL, metric text DEFAULT 'l2',
                                use_spheroid boolean DEFAULT true)
RETURNS TABLE (r bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_join_counts'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_counts(regclass, regclass, text[], float8, text, text, text[], text, boolean) IS
'for every row of r_tbl, how many rows of s_tbl lie within distance eps (inclusive; 0 for none)';

CREATE FUNCTION eps_join_counts_sql(r_query text, s_query text, eps float8,
                                    metric text DEFAULT 'l2',
                                    use_spheroid boolean DEFAULT true)
RETURNS TABLE (r bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_join_counts_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_counts_sql(text, text, float8, text, boolean) IS
'eps_join_counts over the rows of two read-only SELECTs (id, coordinates)';

CREATE FUNCTION eps_neighbor_counts(tbl regclass, cols text[], eps float8,
                                    id_col text DEFAULT NULL, metric text DEFAULT 'l2',
                                    use_spheroid boolean DEFAULT true)
RETURNS TABLE (id bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_neighbor_counts'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbor_counts(regclass, text[], float8, text, text, boolean) IS
'for every row of tbl, how many other rows lie within distance eps (inclusive)';

CREATE FUNCTION eps_neighbor_counts_sql(query text, eps float8, metric text DEFAULT 'l2',
                                        use_spheroid boolean DEFAULT true)
RETURNS TABLE (id bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_neighbor_counts_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbor_counts_sql(text, float8, text, boolean) IS
'eps_neighbor_counts over the rows of a read-only SELECT (id, coordinates)';

CREATE FUNCTION eps_neighbors(tbl regclass, cols text[], eps float8,
                              id_col text DEFAULT NULL, metric text DEFAULT 'l2',
                              use_spheroid boolean DEFAULT true)
RETURNS TABLE (id bigint, neighbors bigint[], dists float8[])
AS 'MODULE_PATHNAME', 'eps_neighbors'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbors(regclass, text[], float8, text, text, boolean) IS
'for every row of tbl, the ids and distances of the other rows within eps, '
'ordered by (distance, id)';

CREATE FUNCTION eps_neighbors_sql(query text, eps float8, metric text DEFAULT 'l2',
                                  use_spheroid boolean DEFAULT true)
RETURNS TABLE (id bigint, neighbors bigint[], dists float8[])
AS 'MODULE_PATHNAME', 'eps_neighbors_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbors_sql(text, float8, text, boolean) IS
'eps_neighbors over the rows of a read-only SELECT (id, coordinates)';

CREATE FUNCTION dbscan(tbl regclass, cols text[], eps float8, minpts integer,
                       id_col text DEFAULT NULL, metric text DEFAULT 'l2',
                       use_spheroid boolean DEFAULT true)
RETURNS TABLE (id bigint, cluster integer, is_core boolean)
AS 'MODULE_PATHNAME', 'dbscan'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION dbscan(regclass, text[], float8, integer, text, text, boolean) IS
'DBSCAN as ST_ClusterDBSCAN: core rows have minpts rows (itself included) within eps; '
'clusters numbered 0, 1, ... by their smallest core id; a border row joins the '
'lowest-numbered cluster within reach; cluster is NULL for noise';

CREATE FUNCTION dbscan_sql(query text, eps float8, minpts integer, metric text DEFAULT 'l2',
                           use_spheroid boolean DEFAULT true)
RETURNS TABLE (id bigint, cluster integer, is_core boolean)
AS 'MODULE_PATHNAME', 'dbscan_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION dbscan_sql(text, float8, integer, text, boolean) IS
'dbscan over the rows of a read-only SELECT (id, coordinates)';
