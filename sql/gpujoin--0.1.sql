-- gpujoin install script, version 0.1 (frozen: the 0.1 release, for upgrade tests)
\echo Use "CREATE EXTENSION gpujoin" to load this file. \quit

CREATE FUNCTION eps_selfjoin(tbl regclass, cols text[], eps float8,
                             id_col text DEFAULT NULL,
                             "symmetric" boolean DEFAULT false)
RETURNS TABLE (a bigint, b bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_selfjoin'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000;

COMMENT ON FUNCTION eps_selfjoin(regclass, text[], float8, text, boolean) IS
'every pair of rows of tbl within Euclidean distance eps of each other (inclusive); '
'cols names numeric columns or one float array column; id_col defaults to the '
'integer primary key; symmetric returns both (a, b) and (b, a)';

CREATE FUNCTION eps_selfjoin_sql(query text, eps float8,
                                 "symmetric" boolean DEFAULT false)
RETURNS TABLE (a bigint, b bigint, dist float8)
AS 'MODULE_PATHNAME', 'eps_selfjoin_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000;

COMMENT ON FUNCTION eps_selfjoin_sql(text, float8, boolean) IS
'eps_selfjoin over the rows of a read-only SELECT returning an integer id, '
'then numeric coordinate columns or one float array column';

CREATE FUNCTION gpujoin_info()
RETURNS TABLE (name text, value text)
AS 'MODULE_PATHNAME', 'gpujoin_info'
LANGUAGE C STABLE PARALLEL UNSAFE;

COMMENT ON FUNCTION gpujoin_info() IS
'version, engine in use, CPU threads and GPU of this gpujoin installation';

CREATE FUNCTION knn_join(query_tbl regclass, ref_tbl regclass, cols text[], k integer,
                         query_id_col text DEFAULT NULL, ref_id_col text DEFAULT NULL,
                         ref_cols text[] DEFAULT NULL)
RETURNS TABLE (q bigint, r bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_join'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000;

COMMENT ON FUNCTION knn_join(regclass, regclass, text[], integer, text, text, text[]) IS
'for each row of query_tbl, the k rows of ref_tbl nearest in Euclidean distance, '
'ranked 1..k by (dist, reference id); ref_cols defaults to cols; ids default to the '
'integer primary keys';

CREATE FUNCTION knn_selfjoin(tbl regclass, cols text[], k integer, id_col text DEFAULT NULL)
RETURNS TABLE (a bigint, b bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000;

COMMENT ON FUNCTION knn_selfjoin(regclass, text[], integer, text) IS
'for each row of tbl, the k other rows nearest in Euclidean distance, ranked 1..k '
'by (dist, id); a row is never its own neighbour, other rows at distance 0 are';

CREATE FUNCTION knn_join_sql(query_sql text, ref_sql text, k integer)
RETURNS TABLE (q bigint, r bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_join_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000;

COMMENT ON FUNCTION knn_join_sql(text, text, integer) IS
'knn_join over the rows of two read-only SELECTs, each returning an integer id, '
'then numeric coordinate columns or one float array column';

CREATE FUNCTION knn_selfjoin_sql(query text, k integer)
RETURNS TABLE (a bigint, b bigint, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin_sql'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000;

COMMENT ON FUNCTION knn_selfjoin_sql(text, integer) IS
'knn_selfjoin over the rows of a read-only SELECT returning an integer id, '
'then numeric coordinate columns or one float array column';
