-- gpujoin upgrade 0.13 -> 0.14: a LATERAL kNN of Citus-distributed tables whose
-- subquery keeps the rows of the query row's own kind (WHERE r.kind =
-- q.kind), the kind not the tables' distribution column, runs on the
-- workers: knn_lateral_join takes query_match, ref_match, keep_alone and
-- ref_order (ORDER BY r.g <-> q.g, r.id), knn_lateral_selfjoin match_col,
-- keep_alone and ref_order.
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.14'" to load this file. \quit

-- Both are made again (internal: only the planner's rewrite calls them).
DROP FUNCTION knn_lateral_join(regclass, regclass, text[], integer, anyelement, anycompatible, text[], text, boolean, text, text, text, text);

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

DROP FUNCTION knn_lateral_selfjoin(regclass, text[], integer, anyelement, text, boolean, text, text, text);

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
