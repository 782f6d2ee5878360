-- Cancel on the GPU engine: statement_timeout = 1.5 s on joins that would
-- run for minutes, one per kind of long GPU work.  Each line reports the
-- seconds until the error came back (the bar: within 1 s of the timeout)
-- and whether the backend's threads are gone afterwards.
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
SELECT setseed(0.7);
DROP TABLE IF EXISTS c4m, c20d;
CREATE TABLE c4m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y, random() * 100 AS z
    FROM generate_series(1, 4000000) i;
ALTER TABLE c4m ADD PRIMARY KEY (id);
CREATE TABLE c20d AS SELECT i AS id, ARRAY(SELECT random() FROM generate_series(1, 20) WHERE i > 0)::float8[] AS v
    FROM generate_series(1, 1000000) i;
ALTER TABLE c20d ADD PRIMARY KEY (id);
VACUUM ANALYZE c4m, c20d;
CREATE TEMP TABLE cancel_results (case_name text, seconds float8, outcome text);
CREATE OR REPLACE FUNCTION cancel_case(c text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    BEGIN
        EXECUTE q;
        INSERT INTO cancel_results VALUES (c, extract(epoch FROM clock_timestamp() - t0), 'finished');
    EXCEPTION WHEN query_canceled THEN
        INSERT INTO cancel_results VALUES (c, extract(epoch FROM clock_timestamp() - t0), SQLERRM);
    END;
END $$;
SET gpujoin.device = gpu;
SELECT count(*) FROM eps_selfjoin('c4m', '{x,y,z}', 1e-9) \g /dev/null
SELECT count(*) AS tasks_before FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task') \gset
SET statement_timeout = '1500ms';
SELECT cancel_case('knn_selfjoin 4M, k = 5000 (grid)', $q$SELECT count(*) FROM knn_selfjoin('c4m', '{x,y,z}', 5000)$q$);
SET gpujoin.knn_method = brute;
SELECT cancel_case('knn_selfjoin 4M, k = 200000 (brute force)', $q$SELECT count(*) FROM knn_selfjoin('c4m', '{x,y,z}', 200000)$q$);
RESET gpujoin.knn_method;
SELECT cancel_case('knn_join 1M x 1M 20-D, k = 50 (brute force)', $q$SELECT count(*) FROM knn_join('c20d', 'c20d', '{v}', 50)$q$);
SELECT cancel_case('eps_selfjoin 1M 20-D, eps 0.6 (many candidates, few pairs)', $q$SELECT count(*) FROM eps_selfjoin('c20d', '{v}', 0.6)$q$);
SELECT cancel_case('eps_selfjoin 4M, eps 30 (7e11 pairs)', $q$SELECT count(*) FROM eps_selfjoin('c4m', '{x,y,z}', 30)$q$);
RESET statement_timeout;
SELECT count(*) = :tasks_before AS threads_gone FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task');
SELECT count(*) AS still_works FROM eps_selfjoin('c4m', '{x,y,z}', 0.5) WHERE a <= 1000;
\pset footer on
SELECT case_name, round(seconds::numeric, 2) AS seconds, seconds < 2.5 AS within_1s_of_timeout, outcome
FROM cancel_results;
