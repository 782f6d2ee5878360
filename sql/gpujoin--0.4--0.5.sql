-- gpujoin upgrade 0.4 -> 0.5: joins between two tables (eps_join,
-- eps_join_sql, eps_join_counts, eps_join_counts_sql).  Nothing else changes.
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.5'" to load this file. \quit

-- Joins between two tables: every (r, s) pair within eps, r from r_tbl and
-- s from s_tbl (both ways of reading rows as in the self-joins).

CREATE FUNCTION eps_join(r_tbl regclass, s_tbl regclass, cols text[], eps float8,
                         r_id_col text DEFAULT NULL, s_id_col text DEFAULT NULL,
                         s_cols text[] DEFAULT NULL, metric text DEFAULT 'l2')
RETURNS TABLE (r bigint, s bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_join'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join(regclass, regclass, text[], float8, text, text, text[], text) IS
'every pair (r, s) of a row of r_tbl and a row of s_tbl within distance eps (inclusive); '
's_cols defaults to cols; ids default to the integer primary keys; eps_join(t, t, ...) '
'returns every ordered pair, (a, a) included';

CREATE FUNCTION eps_join_sql(r_query text, s_query text, eps float8, metric text DEFAULT 'l2')
RETURNS TABLE (r bigint, s bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_join_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_sql(text, text, float8, text) IS
'eps_join over the rows of two read-only SELECTs, each returning an integer id, '
'then numeric coordinate columns or one float array, vector or halfvec column';

CREATE FUNCTION eps_join_counts(r_tbl regclass, s_tbl regclass, cols text[], eps float8,
                                r_id_col text DEFAULT NULL, s_id_col text DEFAULT NULL,
                                s_cols text[] DEFAULT NULL, metric text DEFAULT 'l2')
RETURNS TABLE (r bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_join_counts'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_counts(regclass, regclass, text[], float8, text, text, text[], text) IS
'for every row of r_tbl, how many rows of s_tbl lie within distance eps (inclusive; 0 for none)';

CREATE FUNCTION eps_join_counts_sql(r_query text, s_query text, eps float8,
                                    metric text DEFAULT 'l2')
RETURNS TABLE (r bigint, n bigint)
AS 'MODULE_PATHNAME', 'eps_join_counts_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION eps_join_counts_sql(text, text, float8, text) IS
'eps_join_counts over the rows of two read-only SELECTs (id, coordinates)';
