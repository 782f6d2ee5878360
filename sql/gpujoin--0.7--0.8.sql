-- gpujoin upgrade 0.7 -> 0.8: the keyed forms.  Every function gets an
-- overload with a witness of the key's type (key => NULL::uuid) that
-- returns the rows' own keys, of any type with a btree order, in place of
-- integer ids.  The functions of 0.7 are unchanged: a call written for
-- them resolves to them as before.
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.8'" to load this file. \quit

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

