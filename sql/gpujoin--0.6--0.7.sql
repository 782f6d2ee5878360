-- gpujoin upgrade 0.6 -> 0.7: the gpujoin_progress view (running joins,
-- from any session), and the error a read of a geometry column that is not
-- declared Point raises on a line or polygon (gpujoin_not_a_point).
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.7'" to load this file. \quit

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
