-- How much one cell of regress/gpu/host/bench.sql moves within a run: the
-- cells nearest a bar (count over eps 0.1 against its streaming ceiling,
-- the kNN join on each engine against its ceiling) timed in nine rounds,
-- the methods interleaved within each round so that a drift of the host
-- touches all of them alike.  Prints min, median and max per method, the
-- median of the per-round ratios and the ratio of the best times; then
-- the GPU phases of eps 0.1 over five EXPLAIN ANALYZE runs: the read, the
-- index and the first row, which the per-row timing of EXPLAIN ANALYZE
-- does not inflate (it does the rest).  Runs on its own: it makes the
-- benchmark's tables.
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
\ir ../../bench/bench_tables.sql
\ir ../../bench/bench_timing.sql
DROP TABLE IF EXISTS sp_results;
CREATE TABLE sp_results (round int, method text, seconds float8, result bigint);
CREATE OR REPLACE FUNCTION sp(r int, m text, dev text, q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('gpujoin.device', dev, true);
    INSERT INTO sp_results SELECT r, m, b.seconds, b.result::bigint FROM pg_temp.best_of(q, 1) b;
END $$;
CREATE OR REPLACE FUNCTION sp_best(m text) RETURNS float8 LANGUAGE sql AS
    $$SELECT min(seconds) FROM sp_results WHERE method = m AND round > 0$$;
-- warm up: the GPU context, buffers, the tables in shared buffers
SELECT sp(0, 'warm', 'gpu', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.1)$q$);
SELECT sp(0, 'warm', 'cpu', $q$SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20)$q$);
SELECT sp(0, 'warm', 'gpu', $q$SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20)$q$);
DO $$
BEGIN
    FOR r IN 1..9 LOOP
        PERFORM sp(r, 'eps 0.1 gpu', 'gpu', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.1)$q$);
        PERFORM sp(r, 'eps 0.1 ceiling', 'cpu', $q$SELECT count(*) FROM (SELECT generate_series(1, 6280109)) s$q$);
        PERFORM sp(r, 'knn gpu', 'gpu', $q$SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20)$q$);
        PERFORM sp(r, 'knn cpu', 'cpu', $q$SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20)$q$);
        PERFORM sp(r, 'knn ceiling', 'cpu', $q$SELECT count(*) FROM (SELECT generate_series(1, 2000000)) s$q$);
    END LOOP;
END $$;

\pset footer on
SELECT * FROM pg_temp.spread_of('sp_results');
WITH p AS (
    SELECT round,
           max(seconds) FILTER (WHERE method = 'eps 0.1 gpu') / max(seconds) FILTER (WHERE method = 'eps 0.1 ceiling') AS eps_vs_ceiling,
           max(seconds) FILTER (WHERE method = 'knn gpu') / max(seconds) FILTER (WHERE method = 'knn ceiling') AS knn_vs_ceiling,
           max(seconds) FILTER (WHERE method = 'knn cpu') / max(seconds) FILTER (WHERE method = 'knn gpu') AS knn_cpu_vs_gpu
    FROM sp_results WHERE round > 0 GROUP BY round)
SELECT 'median of per-round ratios' AS what,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY eps_vs_ceiling))::numeric, 2) AS eps01_gpu_vs_ceiling,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY knn_vs_ceiling))::numeric, 2) AS knn_gpu_vs_ceiling,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY knn_cpu_vs_gpu))::numeric, 2) AS knn_cpu_vs_gpu
FROM p
UNION ALL
SELECT 'best over best',
       round((sp_best('eps 0.1 gpu') / sp_best('eps 0.1 ceiling'))::numeric, 2),
       round((sp_best('knn gpu') / sp_best('knn ceiling'))::numeric, 2),
       round((sp_best('knn cpu') / sp_best('knn gpu'))::numeric, 2);

-- the GPU phases of eps 0.1 and of the kNN join, run by run (Wait Time: the
-- backend waiting for the engine's chunks, the first included; Total: the
-- last row, inflated by EXPLAIN ANALYZE's per-row timing)
SET gpujoin.device = gpu;
CREATE TEMP TABLE sp_phases (query text, run int, read_ms float8, index_ms float8,
    first_row_ms float8, wait_ms float8, total_ms float8, workers int);
DO $$
DECLARE plan json; node json; q text;
BEGIN
    FOREACH q IN ARRAY ARRAY[$q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.1)$q$,
                             $q$SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20)$q$] LOOP
        FOR r IN 1..5 LOOP
            EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO plan;
            node := plan -> 0 -> 'Plan' -> 'Plans' -> 0;
            INSERT INTO sp_phases VALUES (CASE WHEN q LIKE '%knn%' THEN 'knn' ELSE 'eps 0.1' END, r,
                (node ->> 'Read Time')::float8, (node ->> 'Index Time')::float8,
                (node ->> 'Actual Startup Time')::float8, (node ->> 'Wait Time')::float8,
                (node ->> 'Actual Total Time')::float8, (node ->> 'Read Workers')::int);
        END LOOP;
    END LOOP;
END $$;
SELECT * FROM sp_phases ORDER BY query, run;
