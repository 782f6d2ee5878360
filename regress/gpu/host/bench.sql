-- The SQL boundary on the GPU host, one run: every row of the table in
-- issue 9, each case on the GPU engine, the CPU engine (all cores) and the
-- function scan (gpujoin.custom_scan = off, the old path), against the
-- executor's ceilings for the same row count measured in the same run:
--   stream:  SELECT count(*) FROM (SELECT generate_series(1, n)) s
--            (a SELECT-list SRF: rows stream, nothing is stored)
--   store:   SELECT count(*) FROM generate_series(1, n)
--            (a FROM function: rows go through a tuplestore)
--   scan:    SELECT count(*), sum(x), sum(y) FROM the table (reading alone;
--            parallel as the planner likes, and serial in the store column)
--   index probe: the GiST (cube) probe users write for one row today
-- Each timing is the best of three runs (the host's own speed drifts by up
-- to 1.4x between calls, and by less within one), the slow paths that are
-- only context (function scan and tuplestore of eps 0.3) the best of two.
-- EXPLAIN ANALYZE of the GPU runs
-- gives the phases (read, index, join, wait, emit) at the end.
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
DROP TABLE IF EXISTS sb_results;
CREATE TABLE sb_results (case_name text, method text, seconds float8, result bigint);
\ir ../../bench/bench_timing.sql
CREATE OR REPLACE FUNCTION sb(c text, m text, dev text, cs text, q text, reps int DEFAULT 3) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('gpujoin.device', dev, true);
    PERFORM set_config('gpujoin.custom_scan', cs, true);
    INSERT INTO sb_results SELECT c, m, b.seconds, b.result::bigint FROM pg_temp.best_of(q, reps) b;
END $$;
CREATE OR REPLACE FUNCTION sb_ceilings(c text, store_reps int DEFAULT 3) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    SELECT max(result) INTO n FROM sb_results WHERE case_name = c AND method = 'gpu';
    PERFORM sb(c, 'stream', 'cpu', 'on', format('SELECT count(*) FROM (SELECT generate_series(1, %s)) s', n));
    PERFORM sb(c, 'store', 'cpu', 'on', format('SELECT count(*) FROM generate_series(1, %s)', n), store_reps);
END $$;

\ir ../../bench/bench_tables.sql
CREATE EXTENSION IF NOT EXISTS cube;
-- the index probes users write today (GiST over cube, like PostGIS's)
CREATE INDEX sb2_cube ON sb2 USING gist (cube(ARRAY[x, y]));
CREATE INDEX kc_cube ON kc USING gist (cube(ARRAY[x, y, z]));
ANALYZE sb2, kc;
-- warm up: the GPU context, buffers, the table in shared buffers
SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9) \g /dev/null

-- count(*) over the pairs
SELECT sb('1 eps 0.1 count', 'gpu', 'gpu', 'on', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.1)$q$);
SELECT sb('1 eps 0.1 count', 'cpu', 'cpu', 'on', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.1)$q$);
SELECT sb('1 eps 0.1 count', 'gpu, function scan', 'gpu', 'off', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.1)$q$);
SELECT sb_ceilings('1 eps 0.1 count');
SELECT sb('2 eps 0.3 count', 'gpu', 'gpu', 'on', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3)$q$);
SELECT sb('2 eps 0.3 count', 'cpu', 'cpu', 'on', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3)$q$);
SELECT sb('2 eps 0.3 count', 'gpu, function scan', 'gpu', 'off', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3)$q$, 2);
SELECT sb_ceilings('2 eps 0.3 count', 2);
-- LIMIT 10 over 623M pairs (the function scan took 104 s: not repeated)
SELECT sb('3 eps 1.0 LIMIT 10', 'gpu', 'gpu', 'on', $q$SELECT count(*) FROM (SELECT * FROM eps_selfjoin('sb2', '{x,y}', 1.0) LIMIT 10) s$q$);
SELECT sb('3 eps 1.0 LIMIT 10', 'cpu', 'cpu', 'on', $q$SELECT count(*) FROM (SELECT * FROM eps_selfjoin('sb2', '{x,y}', 1.0) LIMIT 10) s$q$);
-- reading and indexing alone (no pairs), against reading the table
SELECT sb('4 read + index', 'gpu', 'gpu', 'on', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9)$q$);
SELECT sb('4 read + index', 'cpu', 'cpu', 'on', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9)$q$);
SELECT sb('4 read + index', 'gpu, function scan', 'gpu', 'off', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9)$q$);
SELECT sb('4 read + index', 'scan', 'cpu', 'on', $q$SELECT count(*) + (sum(x) + sum(y) < 0)::int FROM sb2$q$);
SET max_parallel_workers_per_gather = 0;
SELECT sb('4 read + index', 'serial scan', 'cpu', 'on', $q$SELECT count(*) + (sum(x) + sum(y) < 0)::int FROM sb2$q$);
RESET max_parallel_workers_per_gather;
-- kNN: 100K queries, 1M clustered references, 3-D, k = 20
SELECT sb('5 knn k=20 count', 'gpu', 'gpu', 'on', $q$SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20)$q$);
SELECT sb('5 knn k=20 count', 'cpu', 'cpu', 'on', $q$SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20)$q$);
SELECT sb('5 knn k=20 count', 'gpu, function scan', 'gpu', 'off', $q$SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20)$q$);
SELECT sb_ceilings('5 knn k=20 count');
-- filters on the id columns: restricted joins against the filtered function
-- scan and the index probe users write today (gpujoin.device = auto: a few
-- query rows stay on the CPU)
SELECT sb('6 eps WHERE a = 42', 'gpu', 'auto', 'on', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1) WHERE a = 42$q$);
-- (the function scan materialises all 623M pairs first: 161 s in an earlier run, not repeated)
SELECT sb('6 eps WHERE a = 42', 'index probe', 'cpu', 'on', $q$SELECT count(*) FROM sb2 a JOIN sb2 b
    ON cube(ARRAY[b.x, b.y]) <@ cube_enlarge(cube(ARRAY[a.x, a.y]), 1, 2) AND a.id <= b.id AND a.id <> b.id
    AND (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) <= 1 WHERE a.id = 42$q$);
SELECT sb('7 knn WHERE q = 1', 'gpu', 'auto', 'on', $q$SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20) WHERE q = 1$q$);
SELECT sb('7 knn WHERE q = 1', 'gpu, function scan', 'auto', 'off', $q$SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20) WHERE q = 1$q$);
SELECT sb('7 knn WHERE q = 1', 'index probe', 'cpu', 'on', $q$SELECT count(*) FROM kq q, LATERAL (SELECT id FROM kc
    ORDER BY cube(ARRAY[kc.x, kc.y, kc.z]) <-> cube(ARRAY[q.x, q.y, q.z]) LIMIT 20) r WHERE q.id = 1$q$);

-- the answers agree across engines and paths
SELECT case_name, count(DISTINCT result) = 1 AS results_agree
FROM sb_results WHERE method NOT IN ('stream', 'store', 'scan', 'serial scan')
GROUP BY case_name ORDER BY case_name;

-- phases of the GPU runs
SET gpujoin.device = gpu;
EXPLAIN (ANALYZE, COSTS OFF, VERBOSE) SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3);
EXPLAIN (ANALYZE, COSTS OFF, VERBOSE) SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9);
EXPLAIN (ANALYZE, COSTS OFF, VERBOSE) SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20);
SET gpujoin.device = cpu;
EXPLAIN (ANALYZE, COSTS OFF, VERBOSE) SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20);
RESET gpujoin.device;

\pset footer on
SELECT case_name,
       max(result) FILTER (WHERE method = 'gpu') AS rows,
       round(max(seconds) FILTER (WHERE method = 'gpu')::numeric, 3) AS gpu_s,
       round(max(seconds) FILTER (WHERE method = 'cpu')::numeric, 3) AS cpu_s,
       round(max(seconds) FILTER (WHERE method = 'gpu, function scan')::numeric, 3) AS fscan_s,
       round(max(seconds) FILTER (WHERE method IN ('stream', 'scan', 'index probe'))::numeric, 3) AS ceiling_s,
       round(max(seconds) FILTER (WHERE method IN ('store', 'serial scan'))::numeric, 3) AS store_s,
       round((max(seconds) FILTER (WHERE method = 'gpu') /
              nullif(max(seconds) FILTER (WHERE method IN ('stream', 'scan', 'index probe')), 0))::numeric, 2) AS gpu_vs_ceiling,
       round((max(seconds) FILTER (WHERE method = 'cpu') /
              nullif(max(seconds) FILTER (WHERE method = 'gpu'), 0))::numeric, 1) AS cpu_vs_gpu
FROM sb_results GROUP BY case_name ORDER BY case_name;
