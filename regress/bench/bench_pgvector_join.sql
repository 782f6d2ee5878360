-- eps_join between two tables of embeddings against pgvector's exact join,
-- side by side in one run: 4,000 r rows and 4,000 s rows of vector(768)
-- (random directions; 100 r rows with a planted near-duplicate in s), the
-- pairs within eps = 0.5 (near-duplicates are ~0.008 apart, random pairs ~11).
--   psql -X -f regress/bench/bench_pgvector_join.sql DB      (pgvector and gpujoin installed)
-- pgvector has no index for a distance join, so its exact answer is a nested
-- loop over every pair with v <-> w <= eps; gpujoin runs its tiles (many
-- dimensions) and, for comparison, its grid (gpujoin.eps_method = grid).
-- pgvector's distances are float32, gpujoin's float64: no pair lies near eps.
\set ON_ERROR_STOP on
\pset pager off
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS gpujoin;
SELECT setseed(0.39);
DROP TABLE IF EXISTS bench_vr, bench_vs;
CREATE TABLE bench_vr (id int PRIMARY KEY, v vector(768));
INSERT INTO bench_vr SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 768) WHERE i > 0)::vector
FROM generate_series(1, 4000) i;
CREATE TABLE bench_vs (id int PRIMARY KEY, v vector(768));
INSERT INTO bench_vs SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 768) WHERE i > 0)::vector
FROM generate_series(1, 3900) i;
INSERT INTO bench_vs SELECT 100000 + id,
    (SELECT array_agg(x + (random() - 0.5) * 1e-3) FROM unnest(v::real[]) x)::vector
FROM bench_vr WHERE id <= 100;
VACUUM ANALYZE bench_vr;
VACUUM ANALYZE bench_vs;

CREATE TEMP TABLE bench_times (what text, seconds float8, pairs bigint);
DO $$
DECLARE t0 timestamptz; n bigint;
BEGIN
    t0 := clock_timestamp();
    CREATE TEMP TABLE gj_pairs AS SELECT r, s FROM eps_join('bench_vr', 'bench_vs', '{v}', 0.5);
    INSERT INTO bench_times SELECT 'gpujoin eps_join (auto: tiles)',
        extract(epoch FROM clock_timestamp() - t0), count(*) FROM gj_pairs;
    SET LOCAL gpujoin.eps_method = grid;
    t0 := clock_timestamp();
    SELECT count(*) INTO n FROM eps_join('bench_vr', 'bench_vs', '{v}', 0.5);
    INSERT INTO bench_times VALUES ('gpujoin eps_join, eps_method = grid',
        extract(epoch FROM clock_timestamp() - t0), n);
    t0 := clock_timestamp();
    CREATE TEMP TABLE pv_pairs AS SELECT a.id AS r, b.id AS s FROM bench_vr a JOIN bench_vs b ON a.v <-> b.v <= 0.5;
    INSERT INTO bench_times SELECT 'pgvector a JOIN b ON a.v <-> b.v <= eps',
        extract(epoch FROM clock_timestamp() - t0), count(*) FROM pv_pairs;
END $$;
SELECT current_setting('gpujoin.device') AS device,
       (SELECT value FROM gpujoin_info() WHERE name = 'cpu_threads') AS cpu_threads;
SELECT what, seconds::numeric(10, 3), pairs FROM bench_times;
SELECT (SELECT seconds FROM bench_times WHERE what LIKE 'pgvector%')
       / (SELECT seconds FROM bench_times WHERE what LIKE '%tiles%') AS speedup_over_pgvector;
-- the same pairs
SELECT count(*) AS pairs_differ FROM (
    (TABLE gj_pairs EXCEPT ALL TABLE pv_pairs) UNION ALL (TABLE pv_pairs EXCEPT ALL TABLE gj_pairs)) d;
