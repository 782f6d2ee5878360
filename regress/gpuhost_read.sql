-- The read, by number of parallel workers, on the GPU host: gpujoin's read
-- + index (eps_selfjoin with eps 1e-9: no pairs) against the plain table
-- scan (count, sum, sum) at the same parallelism, the table's
-- parallel_workers set to each count in turn (7: all that
-- max_worker_processes = 8 leaves beside the replication launcher).  Runs after
-- regress/gpuhost_bench.sql (its tables sb2, kc).  Best of three; the read
-- and index times come from EXPLAIN ANALYZE of the fastest run.
\pset footer off
SET client_min_messages = warning;
SET gpujoin.device = gpu;
SET max_parallel_workers_per_gather = 8;
DROP TABLE IF EXISTS rd_results;
CREATE TABLE rd_results (tbl text, workers int, what text, seconds float8, read_ms float8, index_ms float8);
\ir bench_timing.sql
CREATE OR REPLACE FUNCTION rd(tbl text, w int, what text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE best float8; plan json; rms float8 := NULL; ims float8 := NULL; node json;
BEGIN
    EXECUTE format('ALTER TABLE %I SET (parallel_workers = %s)', tbl, w);
    SELECT b.seconds INTO best FROM pg_temp.best_of(q, 3) b;
    IF what = 'gpujoin' THEN
        FOR i IN 1..2 LOOP
            EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO plan;
            node := plan -> 0 -> 'Plan' -> 'Plans' -> 0;
            IF rms IS NULL OR (node ->> 'Read Time')::float8 < rms THEN
                rms := (node ->> 'Read Time')::float8;
                ims := (node ->> 'Index Time')::float8;
            END IF;
        END LOOP;
    END IF;
    INSERT INTO rd_results VALUES (tbl, w, what, best, rms, ims);
END $$;
\o /dev/null
SELECT rd('sb2', 0, 'gpujoin', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9)$q$);
SELECT rd('sb2', 0, 'scan', $q$SELECT count(*) + (sum(x) + sum(y) < 0)::int FROM sb2$q$);
SELECT rd('kc', 0, 'gpujoin', $q$SELECT count(*) FROM eps_selfjoin('kc', '{x,y,z}', 1e-9)$q$);
SELECT rd('kc', 0, 'scan', $q$SELECT count(*) + (sum(x) + sum(y) + sum(z) < 0)::int FROM kc$q$);
SELECT rd('sb2', 3, 'gpujoin', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9)$q$);
SELECT rd('sb2', 3, 'scan', $q$SELECT count(*) + (sum(x) + sum(y) < 0)::int FROM sb2$q$);
SELECT rd('kc', 3, 'gpujoin', $q$SELECT count(*) FROM eps_selfjoin('kc', '{x,y,z}', 1e-9)$q$);
SELECT rd('kc', 3, 'scan', $q$SELECT count(*) + (sum(x) + sum(y) + sum(z) < 0)::int FROM kc$q$);
SELECT rd('sb2', 5, 'gpujoin', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9)$q$);
SELECT rd('sb2', 5, 'scan', $q$SELECT count(*) + (sum(x) + sum(y) < 0)::int FROM sb2$q$);
SELECT rd('kc', 5, 'gpujoin', $q$SELECT count(*) FROM eps_selfjoin('kc', '{x,y,z}', 1e-9)$q$);
SELECT rd('kc', 5, 'scan', $q$SELECT count(*) + (sum(x) + sum(y) + sum(z) < 0)::int FROM kc$q$);
SELECT rd('sb2', 7, 'gpujoin', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9)$q$);
SELECT rd('sb2', 7, 'scan', $q$SELECT count(*) + (sum(x) + sum(y) < 0)::int FROM sb2$q$);
SELECT rd('kc', 7, 'gpujoin', $q$SELECT count(*) FROM eps_selfjoin('kc', '{x,y,z}', 1e-9)$q$);
SELECT rd('kc', 7, 'scan', $q$SELECT count(*) + (sum(x) + sum(y) + sum(z) < 0)::int FROM kc$q$);
\o
ALTER TABLE sb2 RESET (parallel_workers);
ALTER TABLE kc RESET (parallel_workers);
\pset footer on
SELECT tbl, workers,
       round(max(seconds) FILTER (WHERE what = 'gpujoin')::numeric, 3) AS gpujoin_s,
       round(max(read_ms) FILTER (WHERE what = 'gpujoin')::numeric, 1) AS read_ms,
       round(max(index_ms) FILTER (WHERE what = 'gpujoin')::numeric, 1) AS index_ms,
       round(max(seconds) FILTER (WHERE what = 'scan')::numeric, 3) AS scan_s,
       round((max(seconds) FILTER (WHERE what = 'gpujoin') /
              max(seconds) FILTER (WHERE what = 'scan'))::numeric, 2) AS ratio
FROM rd_results GROUP BY tbl, workers ORDER BY tbl DESC, workers;
