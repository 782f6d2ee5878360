-- gpujoin upgrade 0.6 -> 0.7: the gpujoin_progress view (running joins,
-- from any session), the error a read of a geometry column that is not
-- declared Point raises on a line or polygon (gpujoin_not_a_point), and a
-- params argument last on every _sql form: a row whose fields are the
-- values of the queries' $1, $2, ...  A function's arguments cannot change
-- in place, so the _sql forms are dropped and created again; calls written
-- for 0.6 mean the same.  (A view or function of yours that calls one of
-- them must be dropped first and made again after the update.)
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.7'" to load this file. \quit

DROP FUNCTION eps_selfjoin_sql(text, float8, boolean, text, boolean);
DROP FUNCTION knn_join_sql(text, text, integer, text, boolean);
DROP FUNCTION knn_selfjoin_sql(text, integer, text, boolean);
DROP FUNCTION eps_join_sql(text, text, float8, text, boolean);
DROP FUNCTION eps_join_counts_sql(text, text, float8, text, boolean);
DROP FUNCTION eps_neighbor_counts_sql(text, float8, text, boolean);
DROP FUNCTION eps_neighbors_sql(text, float8, text, boolean);
DROP FUNCTION dbscan_sql(text, float8, integer, text, boolean);

CREATE FUNCTION eps_selfjoin_sql(query text, eps float8,
                                 "symmetric" boolean DEFAULT false,
                                 metric text DEFAULT 'l2',
                                 use_spheroid boolean DEFAULT true,
                                 params record DEFAULT NULL)
RETURNS TABLE (a bigint, b bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_selfjoin_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

CREATE FUNCTION knn_join_sql(query_sql text, ref_sql text, k integer,
                             metric text DEFAULT 'l2',
                             use_spheroid boolean DEFAULT false,
                             params record DEFAULT NULL)
RETURNS TABLE (q bigint, r bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_join_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

CREATE FUNCTION knn_selfjoin_sql(query text, k integer, metric text DEFAULT 'l2',
                                 use_spheroid boolean DEFAULT false,
                                 params record DEFAULT NULL)
RETURNS TABLE (a bigint, b bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

CREATE FUNCTION eps_join_sql(r_query text, s_query text, eps float8, metric text DEFAULT 'l2',
                             use_spheroid boolean DEFAULT true,
                             params record DEFAULT NULL)
RETURNS TABLE (r bigint, s bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_join_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

CREATE FUNCTION eps_join_counts_sql(r_query text, s_query text, eps float8,
                                    metric text DEFAULT 'l2',
                                    use_spheroid boolean DEFAULT true,
                                    params record DEFAULT NULL)
RETURNS TABLE (r bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_join_counts_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

CREATE FUNCTION eps_neighbor_counts_sql(query text, eps float8, metric text DEFAULT 'l2',
                                        use_spheroid boolean DEFAULT true,
                                        params record DEFAULT NULL)
RETURNS TABLE (id bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_neighbor_counts_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

CREATE FUNCTION eps_neighbors_sql(query text, eps float8, metric text DEFAULT 'l2',
                                  use_spheroid boolean DEFAULT true,
                                  params record DEFAULT NULL)
RETURNS TABLE (id bigint, neighbors bigint[], dists float8[])
AS 'MODULE_PATHNAME', 'eps_neighbors_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

CREATE FUNCTION dbscan_sql(query text, eps float8, minpts integer, metric text DEFAULT 'l2',
                           use_spheroid boolean DEFAULT true,
                           params record DEFAULT NULL)
RETURNS TABLE (id bigint, cluster integer, is_core boolean)
AS 'MODULE_PATHNAME', 'dbscan_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_selfjoin_sql(text, float8, boolean, text, boolean, record) IS
'eps_selfjoin over the rows of a read-only SELECT returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

COMMENT ON FUNCTION knn_join_sql(text, text, integer, text, boolean, record) IS
'knn_join over the rows of two read-only SELECTs, each returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

COMMENT ON FUNCTION knn_selfjoin_sql(text, integer, text, boolean, record) IS
'knn_selfjoin over the rows of a read-only SELECT returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

COMMENT ON FUNCTION eps_join_sql(text, text, float8, text, boolean, record) IS
'eps_join over the rows of two read-only SELECTs, each returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

COMMENT ON FUNCTION eps_join_counts_sql(text, text, float8, text, boolean, record) IS
'eps_join_counts over the rows of two read-only SELECTs (id, coordinates)';

COMMENT ON FUNCTION eps_neighbor_counts_sql(text, float8, text, boolean, record) IS
'eps_neighbor_counts over the rows of a read-only SELECT (id, coordinates)';

COMMENT ON FUNCTION eps_neighbors_sql(text, float8, text, boolean, record) IS
'eps_neighbors over the rows of a read-only SELECT (id, coordinates)';

COMMENT ON FUNCTION dbscan_sql(text, float8, integer, text, boolean, record) IS
'dbscan over the rows of a read-only SELECT (id, coordinates)';

-- Running joins, one row each, as pg_stat_progress_* show commands: the
-- backend's pid, the function, its phase (read, index, join, emit), rows
-- read of the total where known, result rows so far of the total where
-- known or estimated (kNN: rows x k; eps: the sample's estimate), that as a
-- percent, and seconds since it began.  Another role's joins show to
-- members of pg_read_all_stats.
CREATE FUNCTION gpujoin_progress_rows(OUT pid integer, OUT function text, OUT phase text,
                                      OUT rows_read bigint, OUT rows_total bigint,
                                      OUT result_rows bigint, OUT result_total bigint,
                                      OUT percent float8, OUT elapsed_s float8, OUT datid oid)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpujoin_progress'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW gpujoin_progress AS
    SELECT p.pid, d.datname, p.function, p.phase, p.rows_read, p.rows_total,
           p.result_rows, p.result_total, round(p.percent::numeric, 1) AS percent,
           round(p.elapsed_s::numeric, 1) AS elapsed_s
    FROM gpujoin_progress_rows() p LEFT JOIN pg_catalog.pg_database d ON d.oid = p.datid;

COMMENT ON VIEW gpujoin_progress IS
'running gpujoin calls: pid, function, phase (read, index, join, emit), rows read, '
'result rows so far, percent of the known or estimated result, seconds elapsed';

-- The error of a read that meets a line or polygon in a geometry column
-- whose type does not say Point (internal: the reads call it).
CREATE FUNCTION gpujoin_not_a_point(fname text, col text, id text, type text) RETURNS float8
AS 'MODULE_PATHNAME', 'gpujoin_not_a_point'
LANGUAGE C VOLATILE PARALLEL SAFE;
