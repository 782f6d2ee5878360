-- The SQL boundary on a small CPU machine (issue 9's bars for it), one run:
--   count(*) over ~14M pairs through the custom scan, through the function
--   scan (gpujoin.custom_scan = off), and the executor's ceilings for the
--   same row count (a SELECT-list SRF; FROM generate_series, a tuplestore);
--   LIMIT 10 over 5e11 qualifying pairs (1M rows in one cell) with
--   temp_file_limit = 0, so that any temp file is an error.
-- usage: psql -X -f regress/bench/bench_stream.sql DB   (gpujoin installed)
\pset footer off
SET client_min_messages = warning;
SET work_mem = '4MB';
CREATE EXTENSION IF NOT EXISTS gpujoin;
DROP TABLE IF EXISTS bs_u, bs_one, bs_res;
SELECT setseed(0.42);
CREATE TABLE bs_u AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 1000000) i;
ALTER TABLE bs_u ADD PRIMARY KEY (id);
CREATE TABLE bs_one AS SELECT i AS id, (i % 1000) * 1e-9 AS x, 0.0::float8 AS y FROM generate_series(1, 1000000) i;
ALTER TABLE bs_one ADD PRIMARY KEY (id);
VACUUM ANALYZE bs_u, bs_one;
CREATE TABLE bs_res (case_name text, method text, seconds float8, result bigint);
\ir bench_timing.sql
CREATE FUNCTION pg_temp.bs(c text, m text, cs text, q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('gpujoin.custom_scan', cs, true);
    INSERT INTO bs_res SELECT c, m, b.seconds, b.result::bigint FROM pg_temp.best_of(q, 2) b;
END $$;
SELECT count(*) FROM eps_selfjoin('bs_u', '{x,y}', 1e-9) \g /dev/null
SELECT pg_temp.bs('count eps 0.3', 'custom scan', 'on', $q$SELECT count(*) FROM eps_selfjoin('bs_u', '{x,y}', 0.3)$q$);
SELECT pg_temp.bs('count eps 0.3', 'function scan', 'off', $q$SELECT count(*) FROM eps_selfjoin('bs_u', '{x,y}', 0.3)$q$);
SELECT pg_temp.bs('count eps 0.3', 'SELECT-list SRF', 'on',
    format('SELECT count(*) FROM (SELECT generate_series(1, %s)) s', (SELECT result FROM bs_res LIMIT 1)));
SELECT pg_temp.bs('count eps 0.3', 'FROM generate_series', 'on',
    format('SELECT count(*) FROM generate_series(1, %s)', (SELECT result FROM bs_res LIMIT 1)));
SELECT pg_temp.bs('read + index', 'custom scan', 'on', $q$SELECT count(*) FROM eps_selfjoin('bs_u', '{x,y}', 1e-9)$q$);
SELECT pg_temp.bs('read + index', 'table scan', 'on', $q$SELECT count(*) + (sum(x) + sum(y) < 0)::int FROM bs_u$q$);
SET temp_file_limit = 0;
SELECT pg_temp.bs('LIMIT 10, 5e11 pairs', 'custom scan', 'on', $q$SELECT count(*) FROM (SELECT * FROM eps_selfjoin('bs_one', '{x,y}', 1.0) LIMIT 10) s$q$);
RESET temp_file_limit;
\pset footer on
SELECT case_name, method, result AS rows, round(seconds::numeric, 3) AS seconds FROM bs_res ORDER BY case_name, seconds;
