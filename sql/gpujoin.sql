-- gpujoin install script, version 0.1 (copied to gpujoin--0.1.sql by make)
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
