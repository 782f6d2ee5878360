-- knn_selfjoin against pgvector's exact search, side by side in one run:
-- 20,000 rows of 768-dim vector (random directions, 200 with a planted
-- near-duplicate), each row's 10 nearest other rows.
--   psql -X -f regress/bench/bench_pgvector.sql DB      (pgvector and gpujoin installed)
-- pgvector has no index here, so ORDER BY v <-> q.v LIMIT 10 per row is its
-- exact answer; it is timed on 400 query rows and scaled to all 20,000 (each
-- row's search is the same work).  Its distances are float32, gpujoin's
-- float64: the answers are compared as sets of (row, neighbour), and the
-- rows where they differ are counted (near-ties that float32 orders
-- otherwise).
\set ON_ERROR_STOP on
\pset pager off
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS gpujoin;
SELECT setseed(0.5);
DROP TABLE IF EXISTS bench_vec;
CREATE TABLE bench_vec (id int PRIMARY KEY, v vector(768));
INSERT INTO bench_vec SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 768) WHERE i > 0)::vector
FROM generate_series(1, 19800) i;
INSERT INTO bench_vec SELECT 100000 + id,
    (SELECT array_agg(x + (random() - 0.5) * 1e-3) FROM unnest(v::real[]) x)::vector
FROM bench_vec WHERE id <= 200;
VACUUM ANALYZE bench_vec;

CREATE TEMP TABLE bench_times (what text, seconds float8);
DO $$
DECLARE t0 timestamptz;
BEGIN
    t0 := clock_timestamp();
    CREATE TEMP TABLE gj_knn AS SELECT a, b FROM knn_selfjoin('bench_vec', '{v}', 10);
    INSERT INTO bench_times VALUES ('gpujoin knn_selfjoin, all 20,000 rows',
                                    extract(epoch FROM clock_timestamp() - t0));
    t0 := clock_timestamp();
    CREATE TEMP TABLE pv_knn AS
        SELECT q.id AS a, n.id AS b
        FROM (SELECT * FROM bench_vec WHERE id <= 400) q CROSS JOIN LATERAL (
            SELECT r.id FROM bench_vec r WHERE r.id <> q.id ORDER BY r.v <-> q.v LIMIT 10) n;
    INSERT INTO bench_times VALUES ('pgvector exact LATERAL, 400 rows',
                                    extract(epoch FROM clock_timestamp() - t0));
END $$;
SELECT current_setting('gpujoin.device') AS device,
       (SELECT value FROM gpujoin_info() WHERE name = 'cpu_threads') AS cpu_threads;
SELECT what, seconds::numeric(10, 2) FROM bench_times;
SELECT (SELECT seconds FROM bench_times WHERE what LIKE 'pgvector%') * 50
       / (SELECT seconds FROM bench_times WHERE what LIKE 'gpujoin%') AS speedup_all_rows;
-- the same answers: rows of the 400 whose neighbour sets differ
SELECT count(DISTINCT a) AS rows_differ FROM (
    (SELECT a, b FROM gj_knn WHERE a <= 400 EXCEPT SELECT a, b FROM pv_knn)
    UNION ALL
    (SELECT a, b FROM pv_knn EXCEPT SELECT a, b FROM gj_knn WHERE a <= 400)) d;
SELECT count(*) AS near_duplicates_found FROM gj_knn g WHERE g.b = g.a + 100000;
