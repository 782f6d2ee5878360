-- gpujoin upgrade 0.1 -> 0.2: the planner support function (row estimates,
-- and loading the library during planning so that its custom scan streams
-- rows of the functions in FROM from a session's first query on).
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.2'" to load this file. \quit

CREATE FUNCTION gpujoin_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'gpujoin_support'
LANGUAGE C STRICT;

ALTER FUNCTION eps_selfjoin(regclass, text[], float8, text, boolean) SUPPORT gpujoin_support;
ALTER FUNCTION eps_selfjoin_sql(text, float8, boolean) SUPPORT gpujoin_support;
ALTER FUNCTION knn_join(regclass, regclass, text[], integer, text, text, text[]) SUPPORT gpujoin_support;
ALTER FUNCTION knn_selfjoin(regclass, text[], integer, text) SUPPORT gpujoin_support;
ALTER FUNCTION knn_join_sql(text, text, integer) SUPPORT gpujoin_support;
ALTER FUNCTION knn_selfjoin_sql(text, integer) SUPPORT gpujoin_support;
