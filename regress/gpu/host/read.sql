-- The read, by number of parallel workers, on the GPU host: gpujoin's read
-- + index (eps_selfjoin with eps 1e-9: no pairs) against the plain table
-- scan (count, sum, sum) at the same parallelism, the table's
-- parallel_workers set to each count in turn (7: all that
-- max_worker_processes = 8 leaves beside the replication launcher), on the
-- benchmark's tables (regress/bench/bench_tables.sql): 2M 2-D rows (sb2), 1M 3-D
-- (kc) and 100K 3-D (kq).  Best of three; the read and index times come
-- from EXPLAIN ANALYZE of the fastest run.
\pset footer off
SET client_min_messages = warning;
SET gpujoin.device = gpu;
SET max_parallel_workers_per_gather = 8;
CREATE EXTENSION IF NOT EXISTS gpujoin;
\ir ../../bench/bench_tables.sql
DROP TABLE IF EXISTS rd_results;
CREATE TABLE rd_results (tbl text, workers int, what text, seconds float8, read_ms float8, index_ms float8);
\ir ../../bench/bench_timing.sql
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
-- each count of workers: both tables, gpujoin then the scan; \gexec runs
-- every call as its own statement (its own transaction)
SELECT format('SELECT rd(%L, %s, %L, %L)', t.tbl, w.n, m.what,
              CASE m.what WHEN 'gpujoin' THEN format('SELECT count(*) FROM eps_selfjoin(%L, %L, 1e-9)', t.tbl, t.cols)
                          ELSE format('SELECT count(*) + (%s < 0)::int FROM %I', t.sums, t.tbl) END)
FROM (VALUES (0), (3), (5), (7)) w(n),
     (VALUES (1, 'sb2', '{x,y}', 'sum(x) + sum(y)'), (2, 'kc', '{x,y,z}', 'sum(x) + sum(y) + sum(z)'),
             (3, 'kq', '{x,y,z}', 'sum(x) + sum(y) + sum(z)')) t(o, tbl, cols, sums),
     (VALUES (1, 'gpujoin'), (2, 'scan')) m(o, what)
ORDER BY w.n, t.o, m.o
\gexec
\o
ALTER TABLE sb2 RESET (parallel_workers);
ALTER TABLE kc RESET (parallel_workers);
ALTER TABLE kq RESET (parallel_workers);
\pset footer on
SELECT tbl, workers,
       round(max(seconds) FILTER (WHERE what = 'gpujoin')::numeric, 3) AS gpujoin_s,
       round(max(read_ms) FILTER (WHERE what = 'gpujoin')::numeric, 1) AS read_ms,
       round(max(index_ms) FILTER (WHERE what = 'gpujoin')::numeric, 1) AS index_ms,
       round(max(seconds) FILTER (WHERE what = 'scan')::numeric, 3) AS scan_s,
       round((max(seconds) FILTER (WHERE what = 'gpujoin') /
              max(seconds) FILTER (WHERE what = 'scan'))::numeric, 2) AS ratio
FROM rd_results GROUP BY tbl, workers ORDER BY tbl DESC, workers;
-- what the reader's own size rule picks for each table (no parallel_workers set)
SET gpujoin.device = gpu;
CREATE TEMP TABLE rd_default (tbl text, read_workers int, read_ms float8);
DO $$
DECLARE plan json; node json; t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['sb2', 'kc', 'kq'] LOOP
        EXECUTE format('EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM eps_selfjoin(%L, %L, 1e-9)',
                       t, CASE t WHEN 'sb2' THEN '{x,y}' ELSE '{x,y,z}' END) INTO plan;
        node := plan -> 0 -> 'Plan' -> 'Plans' -> 0;
        INSERT INTO rd_default VALUES (t, (node ->> 'Read Workers')::int, (node ->> 'Read Time')::float8);
    END LOOP;
END $$;
SELECT * FROM rd_default;
