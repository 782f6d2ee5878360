-- gpujoin upgrade 0.2 -> 0.3: per-row results that never store a pair:
-- neighbour counts, neighbour lists and DBSCAN; and the parallel read.
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.3'" to load this file. \quit

-- One row per input row, computed where the pairs are found: no pair is
-- stored, memory grows with the rows, not with the pairs.

CREATE FUNCTION eps_neighbor_counts(tbl regclass, cols text[], eps float8,
                                    id_col text DEFAULT NULL)
RETURNS TABLE (id bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_neighbor_counts'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbor_counts(regclass, text[], float8, text) IS
'for every row of tbl, how many other rows lie within Euclidean distance eps (inclusive)';

CREATE FUNCTION eps_neighbor_counts_sql(query text, eps float8)
RETURNS TABLE (id bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_neighbor_counts_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbor_counts_sql(text, float8) IS
'eps_neighbor_counts over the rows of a read-only SELECT (id, coordinates)';

CREATE FUNCTION eps_neighbors(tbl regclass, cols text[], eps float8,
                              id_col text DEFAULT NULL)
RETURNS TABLE (id bigint, neighbors bigint[], dists float8[])
AS 'MODULE_PATHNAME', 'eps_neighbors'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbors(regclass, text[], float8, text) IS
'for every row of tbl, the ids and distances of the other rows within eps, '
'ordered by (distance, id)';

CREATE FUNCTION eps_neighbors_sql(query text, eps float8)
RETURNS TABLE (id bigint, neighbors bigint[], dists float8[])
AS 'MODULE_PATHNAME', 'eps_neighbors_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_neighbors_sql(text, float8) IS
'eps_neighbors over the rows of a read-only SELECT (id, coordinates)';

CREATE FUNCTION dbscan(tbl regclass, cols text[], eps float8, minpts integer,
                       id_col text DEFAULT NULL)
RETURNS TABLE (id bigint, cluster integer, is_core boolean)
AS 'MODULE_PATHNAME', 'dbscan'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION dbscan(regclass, text[], float8, integer, text) IS
'DBSCAN as ST_ClusterDBSCAN: core rows have minpts rows (itself included) within eps; '
'clusters numbered 0, 1, ... by their smallest core id; a border row joins the '
'lowest-numbered cluster within reach; cluster is NULL for noise';

CREATE FUNCTION dbscan_sql(query text, eps float8, minpts integer)
RETURNS TABLE (id bigint, cluster integer, is_core boolean)
AS 'MODULE_PATHNAME', 'dbscan_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION dbscan_sql(text, float8, integer) IS
'dbscan over the rows of a read-only SELECT (id, coordinates)';

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
