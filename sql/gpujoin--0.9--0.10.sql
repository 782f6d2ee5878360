-- gpujoin upgrade 0.9 -> 0.10: knn_lateral_join, knn_lateral_selfjoin and
-- knn_lateral_strip, which the planner's LATERAL kNN of Citus-distributed
-- tables calls (PostgreSQL's order: pgvector's float32 one on the workers).
-- Nothing else changes.
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.10'" to load this file. \quit

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
-- knn_selfjoin's, which tell these by their names.
CREATE FUNCTION knn_lateral_join(query_tbl regclass, ref_tbl regclass, cols text[], k integer,
                                 query_key anyelement, ref_key anycompatible,
                                 ref_cols text[] DEFAULT NULL, metric text DEFAULT 'l2',
                                 use_spheroid boolean DEFAULT false,
                                 query_id_col text DEFAULT NULL, ref_id_col text DEFAULT NULL)
RETURNS TABLE (q anyelement, r anycompatible, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_join'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_lateral_join(regclass, regclass, text[], integer, anyelement, anycompatible, text[], text, boolean, text, text) IS
'internal to the LATERAL kNN of distributed tables: knn_join ranked by the column''s own <->, '
'on the workers';

CREATE FUNCTION knn_lateral_selfjoin(tbl regclass, cols text[], k integer, key anyelement,
                                     metric text DEFAULT 'l2',
                                     use_spheroid boolean DEFAULT false,
                                     id_col text DEFAULT NULL)
RETURNS TABLE (a anyelement, b anyelement, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_lateral_selfjoin(regclass, text[], integer, anyelement, text, boolean, text) IS
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
