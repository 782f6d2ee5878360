-- Cancel on the GPU engine: statement_timeout = 1.5 s on joins that would
-- run for minutes, one per kind of long GPU work.  Each line reports the
-- seconds until the error came back (the bar: within 1 s of the timeout)
-- and whether the backend's threads are gone afterwards.
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
SELECT setseed(0.7);
DROP TABLE IF EXISTS c4m, c20d, u2m;
CREATE TABLE c4m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y, random() * 100 AS z
    FROM generate_series(1, 4000000) i;
ALTER TABLE c4m ADD PRIMARY KEY (id);
CREATE TABLE u2m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 2000000) i;
ALTER TABLE u2m ADD PRIMARY KEY (id);
CREATE TABLE c20d AS SELECT i AS id, ARRAY(SELECT random() FROM generate_series(1, 20) WHERE i > 0)::float8[] AS v
    FROM generate_series(1, 1000000) i;
ALTER TABLE c20d ADD PRIMARY KEY (id);
VACUUM ANALYZE c4m, c20d, u2m;
CREATE TEMP TABLE cancel_results (case_name text, seconds float8, outcome text, timeout_s float8);
CREATE OR REPLACE FUNCTION cancel_case(c text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
        tmo float8 := extract(epoch FROM current_setting('statement_timeout')::interval);
BEGIN
    RAISE LOG 'gpujoin cancel case: %', c;
    BEGIN
        EXECUTE q;
        INSERT INTO cancel_results VALUES (c, extract(epoch FROM clock_timestamp() - t0), 'finished', tmo);
    EXCEPTION WHEN query_canceled THEN
        INSERT INTO cancel_results VALUES (c, extract(epoch FROM clock_timestamp() - t0), SQLERRM, tmo);
    END;
END $$;
SET gpujoin.device = gpu;
SELECT count(*) FROM eps_selfjoin('c4m', '{x,y,z}', 1e-9) \g /dev/null
SELECT count(*) AS tasks_before FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task') \gset
SET statement_timeout = '1500ms';
-- the server log gets each engine's start and stop times (the phases a cancel waits on)
SET log_min_messages = debug1;
-- issue 18's case: 2M queries, 4M references, k = 20000, on both engines,
-- by the grid and by brute force, and at timeouts landing in other phases
SELECT cancel_case('knn_join 2M x 4M, k = 20000 (grid)', $q$SELECT count(*) FROM knn_join('u2m', 'c4m', '{x,y}', 20000)$q$);
SET statement_timeout = '3000ms';
SELECT cancel_case('knn_join 2M x 4M, k = 20000 (grid, 3 s)', $q$SELECT count(*) FROM knn_join('u2m', 'c4m', '{x,y}', 20000)$q$);
SET statement_timeout = '700ms';
SELECT cancel_case('knn_join 2M x 4M, k = 20000 (grid, 0.7 s)', $q$SELECT count(*) FROM knn_join('u2m', 'c4m', '{x,y}', 20000)$q$);
SET statement_timeout = '1500ms';
SET gpujoin.knn_method = brute;
SELECT cancel_case('knn_join 2M x 4M, k = 20000 (brute force)', $q$SELECT count(*) FROM knn_join('u2m', 'c4m', '{x,y}', 20000)$q$);
RESET gpujoin.knn_method;
SET gpujoin.device = cpu;
SELECT cancel_case('knn_join 2M x 4M, k = 20000 (grid, CPU engine)', $q$SELECT count(*) FROM knn_join('u2m', 'c4m', '{x,y}', 20000)$q$);
SET gpujoin.knn_method = brute;
SELECT cancel_case('knn_join 2M x 4M, k = 20000 (brute force, CPU engine)', $q$SELECT count(*) FROM knn_join('u2m', 'c4m', '{x,y}', 20000)$q$);
RESET gpujoin.knn_method;
SET gpujoin.device = gpu;
SELECT cancel_case('knn_selfjoin 4M, k = 5000 (grid)', $q$SELECT count(*) FROM knn_selfjoin('c4m', '{x,y,z}', 5000)$q$);
SET gpujoin.knn_method = brute;
SELECT cancel_case('knn_selfjoin 4M, k = 200000 (brute force)', $q$SELECT count(*) FROM knn_selfjoin('c4m', '{x,y,z}', 200000)$q$);
RESET gpujoin.knn_method;
SELECT cancel_case('knn_join 1M x 1M 20-D, k = 50 (brute force)', $q$SELECT count(*) FROM knn_join('c20d', 'c20d', '{v}', 50)$q$);
SELECT cancel_case('eps_selfjoin 1M 20-D, eps 0.6 (many candidates, few pairs)', $q$SELECT count(*) FROM eps_selfjoin('c20d', '{v}', 0.6)$q$);
SELECT cancel_case('eps_selfjoin 4M, eps 30 (7e11 pairs)', $q$SELECT count(*) FROM eps_selfjoin('c4m', '{x,y,z}', 30)$q$);
-- beyond the memory limit: counts and DBSCAN slab by slab (core/slab_density.c)
SET gpujoin.gpu_memory_limit = 300;
SELECT cancel_case('dbscan 4M in slabs (300 MB), eps 15', $q$SELECT count(*) FROM dbscan('c4m', '{x,y,z}', 15, 5)$q$);
SELECT cancel_case('eps_neighbor_counts 4M in slabs (300 MB), eps 20', $q$SELECT count(*) FROM eps_neighbor_counts('c4m', '{x,y,z}', 20)$q$);
RESET gpujoin.gpu_memory_limit;
RESET statement_timeout;
RESET log_min_messages;
SELECT count(*) = :tasks_before AS threads_gone FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task');
SELECT count(*) AS still_works FROM eps_selfjoin('c4m', '{x,y,z}', 0.5) WHERE a <= 1000;
\pset footer on
SELECT case_name, timeout_s, round(seconds::numeric, 2) AS seconds, seconds < timeout_s + 1 AS within_1s_of_timeout, outcome
FROM cancel_results;
