-- gpujoin install script, version 0.8 (copied to gpujoin--0.8.sql by make)
\echo Use "CREATE EXTENSION gpujoin" to load this file. \quit

-- Row estimates for the planner (a sample of the table for eps_selfjoin,
-- k per query row for the kNN joins); also loads the library while the
-- first query is planned, so that its custom scan streams that query too.
CREATE FUNCTION gpujoin_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'gpujoin_support'
LANGUAGE C STRICT;

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
                                 use_spheroid boolean DEFAULT true,
                                 params record DEFAULT NULL)
RETURNS TABLE (a bigint, b bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_selfjoin_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_selfjoin_sql(text, float8, boolean, text, boolean, record) IS
'eps_selfjoin over the rows of a read-only SELECT returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

CREATE FUNCTION gpujoin_info()
RETURNS TABLE (name text, value text)
AS 'MODULE_PATHNAME', 'gpujoin_info'
LANGUAGE C STABLE PARALLEL UNSAFE;

COMMENT ON FUNCTION gpujoin_info() IS
'version, engine in use, CPU threads and GPU of this gpujoin installation';

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
                             use_spheroid boolean DEFAULT false,
                             params record DEFAULT NULL)
RETURNS TABLE (q bigint, r bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_join_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_join_sql(text, text, integer, text, boolean, record) IS
'knn_join over the rows of two read-only SELECTs, each returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

CREATE FUNCTION knn_selfjoin_sql(query text, k integer, metric text DEFAULT 'l2',
                                 use_spheroid boolean DEFAULT false,
                                 params record DEFAULT NULL)
RETURNS TABLE (a bigint, b bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_selfjoin_sql(text, integer, text, boolean, record) IS
'knn_selfjoin over the rows of a read-only SELECT returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

-- Joins between two tables: every (r, s) pair within eps, r from r_tbl and
-- s from s_tbl (both ways of reading rows as in the self-joins).

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
                             use_spheroid boolean DEFAULT true,
                             params record DEFAULT NULL)
RETURNS TABLE (r bigint, s bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_join_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_sql(text, text, float8, text, boolean, record) IS
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
                                    use_spheroid boolean DEFAULT true,
                                    params record DEFAULT NULL)
RETURNS TABLE (r bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_join_counts_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_counts_sql(text, text, float8, text, boolean, record) IS
'eps_join_counts over the rows of two read-only SELECTs (id, coordinates)';

-- One row per input row, computed where the pairs are found: no pair is
-- stored, memory grows with the rows, not with the pairs.

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
                                        use_spheroid boolean DEFAULT true,
                                        params record DEFAULT NULL)
RETURNS TABLE (id bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_neighbor_counts_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbor_counts_sql(text, float8, text, boolean, record) IS
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
                                  use_spheroid boolean DEFAULT true,
                                  params record DEFAULT NULL)
RETURNS TABLE (id bigint, neighbors bigint[], dists float8[])
AS 'MODULE_PATHNAME', 'eps_neighbors_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbors_sql(text, float8, text, boolean, record) IS
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
                           use_spheroid boolean DEFAULT true,
                           params record DEFAULT NULL)
RETURNS TABLE (id bigint, cluster integer, is_core boolean)
AS 'MODULE_PATHNAME', 'dbscan_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION dbscan_sql(text, float8, integer, text, boolean, record) IS
'dbscan over the rows of a read-only SELECT (id, coordinates)';

-- The keyed forms (0.8): each function again with a witness of the key's
-- type (key => NULL::uuid; the join of two sets, one for each side), which
-- returns every row's own key, of that type, in place of an integer id:
-- a uuid or text key, a composite key as a row (NULL::record) or as a
-- composite type whose fields name the key's columns.  The engines rank
-- the keys and return them in their order (read/row_keys.c).  Pass the
-- key and the options by name: the options after the key are in the order
-- that keeps every positional call written for the functions above
-- resolving to them (each position takes the same kind of value in both).

CREATE FUNCTION eps_selfjoin(tbl regclass, cols text[], eps float8,
                             key anyelement,
                             "symmetric" boolean DEFAULT false,
                             metric text DEFAULT 'l2',
                             use_spheroid boolean DEFAULT true,
                             id_col text DEFAULT NULL)
RETURNS TABLE (a anyelement, b anyelement, dist float8)
AS 'MODULE_PATHNAME', 'eps_selfjoin'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_selfjoin(regclass, text[], float8, anyelement, boolean, text, boolean, text) IS
'eps_selfjoin returning each row''s own key, of the type of key (key => '
'NULL::uuid): id_col, or the primary key (record: its columns as a row; a '
'composite type: the columns its fields name)';

CREATE FUNCTION eps_selfjoin_sql(query text, eps float8, key anyelement,
                                 metric text DEFAULT 'l2',
                                 use_spheroid boolean DEFAULT true,
                                 params record DEFAULT NULL,
                                 "symmetric" boolean DEFAULT false)
RETURNS TABLE (a anyelement, b anyelement, dist float8)
AS 'MODULE_PATHNAME', 'eps_selfjoin_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_selfjoin_sql(text, float8, anyelement, text, boolean, record, boolean) IS
'eps_selfjoin_sql whose query returns a key of the type of key first (any type '
'with a btree order)';

CREATE FUNCTION knn_join(query_tbl regclass, ref_tbl regclass, cols text[], k integer,
                         query_key anyelement, ref_key anycompatible,
                         ref_cols text[] DEFAULT NULL, metric text DEFAULT 'l2',
                         use_spheroid boolean DEFAULT false,
                         query_id_col text DEFAULT NULL, ref_id_col text DEFAULT NULL)
RETURNS TABLE (q anyelement, r anycompatible, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_join'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_join(regclass, regclass, text[], integer, anyelement, anycompatible, text[], text, boolean, text, text) IS
'knn_join returning the rows'' own keys, of the types of query_key and ref_key; '
'ties by the reference key''s order';

CREATE FUNCTION knn_selfjoin(tbl regclass, cols text[], k integer, key anyelement,
                             metric text DEFAULT 'l2',
                             use_spheroid boolean DEFAULT false,
                             id_col text DEFAULT NULL)
RETURNS TABLE (a anyelement, b anyelement, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_selfjoin(regclass, text[], integer, anyelement, text, boolean, text) IS
'knn_selfjoin returning the rows'' own keys, of the type of key; ties by the key''s '
'order';

CREATE FUNCTION knn_join_sql(query_sql text, ref_sql text, k integer,
                             query_key anyelement, ref_key anycompatible,
                             params record DEFAULT NULL,
                             metric text DEFAULT 'l2',
                             use_spheroid boolean DEFAULT false)
RETURNS TABLE (q anyelement, r anycompatible, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_join_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_join_sql(text, text, integer, anyelement, anycompatible, record, text, boolean) IS
'knn_join_sql whose queries return keys of the types of query_key and ref_key '
'first';

CREATE FUNCTION knn_selfjoin_sql(query text, k integer, key anyelement,
                                 use_spheroid boolean DEFAULT false,
                                 params record DEFAULT NULL,
                                 metric text DEFAULT 'l2')
RETURNS TABLE (a anyelement, b anyelement, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_selfjoin_sql(text, integer, anyelement, boolean, record, text) IS
'knn_selfjoin_sql whose query returns a key of the type of key first';

CREATE FUNCTION eps_join(r_tbl regclass, s_tbl regclass, cols text[], eps float8,
                         r_key anyelement, s_key anycompatible,
                         s_cols text[] DEFAULT NULL, metric text DEFAULT 'l2',
                         use_spheroid boolean DEFAULT true,
                         r_id_col text DEFAULT NULL, s_id_col text DEFAULT NULL)
RETURNS TABLE (r anyelement, s anycompatible, dist float8)
AS 'MODULE_PATHNAME', 'eps_join'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join(regclass, regclass, text[], float8, anyelement, anycompatible, text[], text, boolean, text, text) IS
'eps_join returning the rows'' own keys, of the types of r_key and s_key';

CREATE FUNCTION eps_join_sql(r_query text, s_query text, eps float8,
                             r_key anyelement, s_key anycompatible,
                             params record DEFAULT NULL,
                             metric text DEFAULT 'l2',
                             use_spheroid boolean DEFAULT true)
RETURNS TABLE (r anyelement, s anycompatible, dist float8)
AS 'MODULE_PATHNAME', 'eps_join_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_sql(text, text, float8, anyelement, anycompatible, record, text, boolean) IS
'eps_join_sql whose queries return keys of the types of r_key and s_key first';

CREATE FUNCTION eps_join_counts(r_tbl regclass, s_tbl regclass, cols text[], eps float8,
                                r_key anyelement,
                                s_id_col text DEFAULT NULL,
                                s_cols text[] DEFAULT NULL, metric text DEFAULT 'l2',
                                use_spheroid boolean DEFAULT true,
                                r_id_col text DEFAULT NULL)
RETURNS TABLE (r anyelement, n bigint)
AS 'MODULE_PATHNAME', 'eps_join_counts'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_counts(regclass, regclass, text[], float8, anyelement, text, text[], text, boolean, text) IS
'eps_join_counts returning the r rows'' own keys, of the type of r_key (s rows '
'need no key)';

CREATE FUNCTION eps_join_counts_sql(r_query text, s_query text, eps float8,
                                    r_key anyelement,
                                    use_spheroid boolean DEFAULT true,
                                    params record DEFAULT NULL,
                                    metric text DEFAULT 'l2')
RETURNS TABLE (r anyelement, n bigint)
AS 'MODULE_PATHNAME', 'eps_join_counts_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_counts_sql(text, text, float8, anyelement, boolean, record, text) IS
'eps_join_counts_sql whose r query returns a key of the type of r_key first (the '
's query any first column)';

CREATE FUNCTION eps_neighbor_counts(tbl regclass, cols text[], eps float8,
                                    key anyelement,
                                    metric text DEFAULT 'l2',
                                    use_spheroid boolean DEFAULT true,
                                    id_col text DEFAULT NULL)
RETURNS TABLE (id anyelement, n bigint)
AS 'MODULE_PATHNAME', 'eps_neighbor_counts'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbor_counts(regclass, text[], float8, anyelement, text, boolean, text) IS
'eps_neighbor_counts returning each row''s own key, of the type of key';

CREATE FUNCTION eps_neighbor_counts_sql(query text, eps float8, key anyelement,
                                        use_spheroid boolean DEFAULT true,
                                        params record DEFAULT NULL,
                                        metric text DEFAULT 'l2')
RETURNS TABLE (id anyelement, n bigint)
AS 'MODULE_PATHNAME', 'eps_neighbor_counts_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbor_counts_sql(text, float8, anyelement, boolean, record, text) IS
'eps_neighbor_counts_sql whose query returns a key of the type of key first';

CREATE FUNCTION eps_neighbors(tbl regclass, cols text[], eps float8,
                              key anyelement,
                              metric text DEFAULT 'l2',
                              use_spheroid boolean DEFAULT true,
                              id_col text DEFAULT NULL)
RETURNS TABLE (id anyelement, neighbors anyarray, dists float8[])
AS 'MODULE_PATHNAME', 'eps_neighbors'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbors(regclass, text[], float8, anyelement, text, boolean, text) IS
'eps_neighbors returning the rows'' own keys, of the type of key; lists ordered by '
'(distance, key)';

CREATE FUNCTION eps_neighbors_sql(query text, eps float8, key anyelement,
                                  use_spheroid boolean DEFAULT true,
                                  params record DEFAULT NULL,
                                  metric text DEFAULT 'l2')
RETURNS TABLE (id anyelement, neighbors anyarray, dists float8[])
AS 'MODULE_PATHNAME', 'eps_neighbors_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbors_sql(text, float8, anyelement, boolean, record, text) IS
'eps_neighbors_sql whose query returns a key of the type of key first';

CREATE FUNCTION dbscan(tbl regclass, cols text[], eps float8, minpts integer,
                       key anyelement,
                       metric text DEFAULT 'l2',
                       use_spheroid boolean DEFAULT true,
                       id_col text DEFAULT NULL)
RETURNS TABLE (id anyelement, cluster integer, is_core boolean)
AS 'MODULE_PATHNAME', 'dbscan'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION dbscan(regclass, text[], float8, integer, anyelement, text, boolean, text) IS
'dbscan returning each row''s own key, of the type of key; clusters numbered by '
'their smallest core key';

CREATE FUNCTION dbscan_sql(query text, eps float8, minpts integer, key anyelement,
                           use_spheroid boolean DEFAULT true,
                           params record DEFAULT NULL,
                           metric text DEFAULT 'l2')
RETURNS TABLE (id anyelement, cluster integer, is_core boolean)
AS 'MODULE_PATHNAME', 'dbscan_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION dbscan_sql(text, float8, integer, anyelement, boolean, record, text) IS
'dbscan_sql whose query returns a key of the type of key first';


-- The parallel read: gpujoin's functions read large tables with
-- SELECT gpujoin_pack(token, id, coordinates...) FROM tbl, so that parallel
-- workers convert rows into point buffers (internal; calling it directly
-- only counts rows).
CREATE FUNCTION gpujoin_pack_trans(internal, bigint, VARIADIC "any") RETURNS internal
AS 'MODULE_PATHNAME', 'gpujoin_pack_trans' LANGUAGE C PARALLEL SAFE;
CREATE FUNCTION gpujoin_pack_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME', 'gpujoin_pack_combine' LANGUAGE C PARALLEL SAFE;
CREATE FUNCTION gpujoin_pack_serial(internal) RETURNS bytea
AS 'MODULE_PATHNAME', 'gpujoin_pack_serial' LANGUAGE C STRICT PARALLEL SAFE;
CREATE FUNCTION gpujoin_pack_deserial(bytea, internal) RETURNS internal
AS 'MODULE_PATHNAME', 'gpujoin_pack_deserial' LANGUAGE C STRICT PARALLEL SAFE;
CREATE FUNCTION gpujoin_pack_final(internal) RETURNS bigint
AS 'MODULE_PATHNAME', 'gpujoin_pack_final' LANGUAGE C PARALLEL SAFE;
CREATE AGGREGATE gpujoin_pack(bigint, VARIADIC "any") (
    SFUNC = gpujoin_pack_trans, STYPE = internal,
    COMBINEFUNC = gpujoin_pack_combine,
    SERIALFUNC = gpujoin_pack_serial, DESERIALFUNC = gpujoin_pack_deserial,
    FINALFUNC = gpujoin_pack_final,
    PARALLEL = SAFE);

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

-- The rows of a LATERAL kNN that knn_join leaves out (internal: the
-- planner's rewrite of q JOIN LATERAL (SELECT .. FROM r [WHERE r.c <> q.c]
-- ORDER BY r.g op q.g LIMIT k) for Citus-distributed tables calls it
-- beside knn_lateral_join or knn_selfjoin's form, other_col telling it
-- which).  op is the ORDER BY's operator, <-> or <=> of the columns'
-- types.  A value is proper where its distance to itself is neither NULL
-- nor NaN: PostGIS's is NULL for a NULL, empty or not finite point,
-- pgvector's for a NULL vector, and <=>'s NaN for a zero vector.  The
-- distance of two proper values is a number, and the engine ranks those;
-- any other is NaN or NULL, which sort last in that order, in no order
-- among themselves.  So a query_tbl row that is not proper gets any k rows
-- of ref_tbl, the proper ones first, then those with a NaN distance; and
-- where ref_tbl holds fewer than k proper rows, every proper row gets the
-- others to make up k, those with a NaN distance first.  knn_join skips
-- rows that are not proper, so it returns neither.  other_col: query_tbl
-- is ref_tbl, and a row's references are the rows whose other_col differs
-- from its own (a unique, non-NULL column: the others).  keep_alone: a row
-- with no reference at all (ref_tbl empty, or only the row itself) comes
-- once with a NULL reference (LEFT JOIN LATERAL's row).  ref_filter
-- (0.11): an SQL condition on ref_tbl's columns, the subquery's WHERE on r
-- alone; ref_tbl's references are its rows where it holds (with other_col
-- since 0.13: then a row is among its table's references where it holds on
-- the row, and its references are the others of those).  query_filter
-- (0.11): one on query_tbl's columns, the outer query's WHERE on q alone;
-- only its rows where it holds are query rows.
-- They run as the caller, as their query.  Returns whole rows: query_row
-- and ref_row are NULL::query_tbl and NULL::ref_tbl.
CREATE FUNCTION knn_lateral_fill(query_tbl regclass, ref_tbl regclass, query_col text, ref_col text,
                                 k integer, query_row anyelement, ref_row anycompatible,
                                 other_col text DEFAULT NULL, keep_alone boolean DEFAULT false,
                                 op text DEFAULT '<->', ref_filter text DEFAULT NULL,
                                 query_filter text DEFAULT NULL)
RETURNS TABLE (q anyelement, r anycompatible)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE AS $fn$
DECLARE
    qop text;
    rop text;
    qtype text := pg_catalog.pg_typeof(query_row);
    rtype text := pg_catalog.pg_typeof(ref_row);
    self integer := CASE WHEN other_col IS NULL THEN 0 ELSE 1 END;
    other text := 'true';
    -- ref_tbl's rows that are references (the alias x's columns, unqualified)
    refs text := pg_catalog.format('(%s)', coalesce(ref_filter, 'true'));
    -- ... and query_tbl's rows that are among them (other_col's form: the
    -- same table), which lack themselves
    among text := CASE WHEN other_col IS NULL THEN 'false' ELSE pg_catalog.format('(%s)', coalesce(ref_filter, 'true')) END;
    -- ... and query_tbl's that are query rows (the alias x's too)
    queries text := pg_catalog.format('(%s)', coalesce(query_filter, 'true'));
    -- proper(column, operator, alias): its distance to itself a number
    proper text := '(%3$s.%1$I %2$s %3$s.%1$I) OPERATOR(pg_catalog.<>) ''NaN''::pg_catalog.float8';
    points bigint;
    total bigint;
BEGIN
    IF k IS NULL OR k < 1 THEN
        RAISE EXCEPTION 'knn_lateral_fill: k must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF op IS NULL OR op NOT IN ('<->', '<=>') THEN
        RAISE EXCEPTION 'knn_lateral_fill: op must be <-> or <=>' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.pg_typeof(query_row)::oid IS DISTINCT FROM
           (SELECT c.reltype FROM pg_catalog.pg_class c WHERE c.oid = query_tbl)
       OR pg_catalog.pg_typeof(ref_row)::oid IS DISTINCT FROM
           (SELECT c.reltype FROM pg_catalog.pg_class c WHERE c.oid = ref_tbl) THEN
        RAISE EXCEPTION 'knn_lateral_fill: query_row and ref_row must be NULL::query_tbl and NULL::ref_tbl'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF other_col IS NOT NULL THEN
        IF query_tbl <> ref_tbl OR NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                WHERE a.attrelid = query_tbl AND a.attname = other_col AND a.attnum > 0 AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'knn_lateral_fill: other_col must be a column of query_tbl, which must be ref_tbl'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        other := pg_catalog.format('(c.rows[i]).%1$I <> (t.row).%1$I', other_col);
    END IF;
    -- the distance operator of each column's type, qualified by its schema
    SELECT pg_catalog.format('OPERATOR(%I.%s)', n.nspname, op) INTO qop
    FROM pg_catalog.pg_attribute a
    JOIN pg_catalog.pg_operator o ON o.oprname = op AND o.oprleft = a.atttypid AND o.oprright = a.atttypid
    JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
    WHERE a.attrelid = query_tbl AND a.attname = query_col AND a.attnum > 0 AND NOT a.attisdropped;
    SELECT pg_catalog.format('OPERATOR(%I.%s)', n.nspname, op) INTO rop
    FROM pg_catalog.pg_attribute a
    JOIN pg_catalog.pg_operator o ON o.oprname = op AND o.oprleft = a.atttypid AND o.oprright = a.atttypid
    JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
    WHERE a.attrelid = ref_tbl AND a.attname = ref_col AND a.attnum > 0 AND NOT a.attisdropped;
    IF qop IS NULL OR rop IS NULL THEN
        RAISE EXCEPTION 'knn_lateral_fill: no column % of % or % of % with a distance operator %',
            query_col, query_tbl, ref_col, ref_tbl, op USING ERRCODE = 'undefined_column';
    END IF;
    -- no reference at all: each such row once, with a NULL one (keep_alone);
    -- none has a row below (its list holds no row but itself)
    IF keep_alone THEN
        EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM (SELECT 1 FROM %s x WHERE %s LIMIT 2) s',
            ref_tbl, refs) INTO total;
        IF total = 0 OR (total = 1 AND self = 1) THEN
            -- ref_tbl has none, or only one row, which is the row itself where it is among them
            RETURN QUERY EXECUTE pg_catalog.format('SELECT x.*::%s, NULL::%s FROM %s x WHERE %s AND %s',
                qtype, rtype, query_tbl, queries,
                CASE WHEN total = 0 THEN 'true' ELSE pg_catalog.format('(%s) IS TRUE', among) END);
            IF total = 0 OR ref_filter IS NULL THEN
                RETURN;
            END IF;
        END IF;
    END IF;
    -- the references' first k + 1 proper rows (not the row itself: it is
    -- not proper) and k + 1 others, a NaN distance before a NULL, read here
    -- (x.*::type: a whole row, where a column of the table could be named
    -- x), then each query row that is not proper takes the first k that
    -- are not itself
    RETURN QUERY EXECUTE pg_catalog.format(
        'WITH t AS MATERIALIZED (SELECT x.*::%1$s AS row FROM %2$s x WHERE (%3$s) IS NOT TRUE AND %13$s), '
        'p AS MATERIALIZED (SELECT x.*::%4$s AS row FROM %5$s x WHERE %6$s AND %12$s LIMIT %7$s), '
        'n AS MATERIALIZED (SELECT x.*::%4$s AS row FROM %5$s x WHERE (%6$s) IS NOT TRUE AND %12$s '
        'ORDER BY (x.%8$I %9$s x.%8$I) IS NULL LIMIT %7$s), '
        'c AS (SELECT pg_catalog.array_agg(a.row ORDER BY a.o) AS rows FROM '
        '(SELECT p.row, 0 AS o FROM p UNION ALL SELECT n.row, 1 FROM n) a) '
        'SELECT t.row, e.row FROM t, c, LATERAL (SELECT c.rows[i] AS row FROM pg_catalog.generate_subscripts(c.rows, 1) i '
        'WHERE %10$s ORDER BY i LIMIT %11$s) e',
        qtype, query_tbl, pg_catalog.format(proper, query_col, qop, 'x'), rtype, ref_tbl,
        pg_catalog.format(proper, ref_col, rop, 'x'), k + 1, ref_col, rop, other, k, refs, queries);
    -- fewer than k proper rows among a row's references: the others make up
    -- k.  A proper row among the references (lacks 1) is one of those rows itself.
    EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM (SELECT 1 FROM %s x WHERE %s AND %s LIMIT %s) s',
        ref_tbl, pg_catalog.format(proper, ref_col, rop, 'x'), refs, k + 1) INTO points;
    FOR lacks IN 0 .. self LOOP
        IF points - lacks < k THEN
            RETURN QUERY EXECUTE pg_catalog.format(
                'SELECT t.row, s.row FROM (SELECT x.*::%s AS row FROM %s x WHERE %s AND %s AND (%s) IS %s) t, '
                '(SELECT x.*::%s AS row FROM %s x WHERE (%s) IS NOT TRUE AND %s ORDER BY (x.%I %s x.%I) IS NULL LIMIT %s) s',
                qtype, query_tbl, pg_catalog.format(proper, query_col, qop, 'x'), queries, among,
                CASE WHEN lacks = 1 THEN 'TRUE' ELSE 'NOT TRUE' END,
                rtype, ref_tbl, pg_catalog.format(proper, ref_col, rop, 'x'), refs, ref_col, rop, ref_col,
                k - (points - lacks));
        END IF;
    END LOOP;
END
$fn$;

COMMENT ON FUNCTION knn_lateral_fill(regclass, regclass, text, text, integer, anyelement, anycompatible, text, boolean, text, text, text) IS
'internal to the LATERAL kNN of distributed tables: the rows knn_join leaves out, query rows '
'without a proper value with any k references, and references without one where fewer than k have one';

-- A LATERAL kNN of Citus-distributed tables by PostgreSQL's own order
-- (internal: the planner's rewrite of q JOIN LATERAL (SELECT .. FROM r
-- [WHERE r.c <> q.c] ORDER BY r.v <-> q.v LIMIT k) calls them beside
-- knn_lateral_fill).  knn_join's arguments and rows, but each query row's
-- k nearest by the column type's own <->: pgvector's, in float32, where
-- knn_join ranks by the exact distance (each strip then answers by its
-- own LATERAL query, knn_lateral_strip), or a 2-D geometry point's, which
-- PostGIS computes as knn_join does; rank and dist as PostgreSQL orders
-- and computes them, ties in no particular order, and no NOTICE of the
-- rows without a value (knn_lateral_fill returns theirs).  Run on the
-- workers only; elsewhere an error.  The C functions are knn_join's and
-- knn_selfjoin's, which tell these by their names.  ref_filter (0.11): the
-- subquery's WHERE on r alone, an SQL condition on ref_tbl's columns: the
-- references are ref_tbl's rows where it holds, read so on the workers;
-- query_filter (0.11): the outer WHERE on q alone, the same for the query
-- rows (knn_lateral_selfjoin's too: those rows' nearest others among all
-- the table's; and its ref_filter (0.13), the subquery's WHERE on r beside
-- r.id <> q.id: each query row's nearest others among the rows where it
-- holds).  They run as the caller, as their query.  query_match and
-- ref_match (0.14; knn_lateral_selfjoin's match_col): the subquery's
-- r.m = q.m, columns of one type compared by its own =: a query row's
-- references are only those whose ref_match equals its query_match (none
-- where it is NULL).  The rows move between the workers by that value,
-- not by space, and each strip's LATERAL query returns every row of it
-- itself, rows without a value too, so knn_lateral_fill is not called;
-- keep_alone (with a match only) gives a query row with no reference one
-- row with a NULL one; ref_order (with a match only): columns of ref_tbl
-- after the distance in the ORDER BY, ascending (ORDER BY r.g <-> q.g,
-- r.id: ties in the id's order).
CREATE FUNCTION knn_lateral_join(query_tbl regclass, ref_tbl regclass, cols text[], k integer,
                                 query_key anyelement, ref_key anycompatible,
                                 ref_cols text[] DEFAULT NULL, metric text DEFAULT 'l2',
                                 use_spheroid boolean DEFAULT false,
                                 query_id_col text DEFAULT NULL, ref_id_col text DEFAULT NULL,
                                 ref_filter text DEFAULT NULL, query_filter text DEFAULT NULL,
                                 query_match text DEFAULT NULL, ref_match text DEFAULT NULL,
                                 keep_alone boolean DEFAULT false, ref_order text[] DEFAULT NULL)
RETURNS TABLE (q anyelement, r anycompatible, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_join'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_lateral_join(regclass, regclass, text[], integer, anyelement, anycompatible, text[], text, boolean, text, text, text, text, text, text, boolean, text[]) IS
'internal to the LATERAL kNN of distributed tables: knn_join ranked by the column''s own <->, '
'on the workers';

CREATE FUNCTION knn_lateral_selfjoin(tbl regclass, cols text[], k integer, key anyelement,
                                     metric text DEFAULT 'l2',
                                     use_spheroid boolean DEFAULT false,
                                     id_col text DEFAULT NULL, query_filter text DEFAULT NULL,
                                     ref_filter text DEFAULT NULL, match_col text DEFAULT NULL,
                                     keep_alone boolean DEFAULT false, ref_order text[] DEFAULT NULL)
RETURNS TABLE (a anyelement, b anyelement, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_lateral_selfjoin(regclass, text[], integer, anyelement, text, boolean, text, text, text, text, boolean, text[]) IS
'internal to the LATERAL kNN of distributed tables: knn_selfjoin ranked by the column''s own <->, '
'on the workers';

-- One strip's LATERAL kNN on a worker (internal to knn_lateral_join): runs
-- sql, read-only and as the caller, whose rows are (the query row's ctid,
-- its key, a reference's key, the distance), a query row's references
-- together and in order, and numbers each query row's references 1, 2, ..
CREATE FUNCTION knn_lateral_strip(sql text, k integer, query_key anyelement, ref_key anycompatible)
RETURNS TABLE (q anyelement, r anycompatible, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_lateral_strip'
LANGUAGE C STABLE PARALLEL UNSAFE;

COMMENT ON FUNCTION knn_lateral_strip(text, integer, anyelement, anycompatible) IS
'internal to knn_lateral_join: a strip''s LATERAL kNN on a worker, its rows ranked';

-- A condition on tbl's columns with a prepared statement's parameters in
-- it ($1 .., of params' field types), their values bound, as SQL over
-- tbl's columns (internal: the LATERAL kNN rewrite's query_filter in a
-- generic plan, whose parameters have values only when it runs).  Each
-- value is written as a literal of its type, floats in full.
CREATE FUNCTION knn_lateral_bound_filter(filter text, params record, tbl regclass)
RETURNS text
AS 'MODULE_PATHNAME', 'knn_lateral_bound_filter'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION knn_lateral_bound_filter(text, record, regclass) IS
'internal to the LATERAL kNN of distributed tables: a condition with a prepared statement''s parameters, bound';
