-- gpujoin upgrade 0.11 -> 0.12: a prepared LATERAL kNN of distributed tables
-- whose outer WHERE on the query table has a parameter (WHERE a.id = $1)
-- reads only those query rows in a generic plan too: the rewrite passes the
-- condition through knn_lateral_bound_filter, which binds the values when
-- the plan runs.  Nothing else changes.
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.12'" to load this file. \quit

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
