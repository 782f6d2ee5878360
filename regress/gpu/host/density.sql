-- Issue 10 on the GPU host, one run: dbscan, eps_neighbor_counts and
-- eps_neighbors end to end in SQL over 2M and 10M points (2-D and 3-D,
-- uniform and clustered) at eps giving about 30 and 300 neighbours a point,
-- GPU engine against the CPU engine (all cores), with the plain scan of the
-- table (reading alone) and, once, the GROUP BY form users write today.
-- Timings are the best of two runs (one for eps_neighbors and GROUP BY).
-- The consumers are cheap aggregates (clusters are numbered 0..k-1, so
-- max(cluster) + 1 counts them without a sort of every row).
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
DROP TABLE IF EXISTS dn_results;
CREATE TABLE dn_results (case_name text, method text, seconds float8, result float8);
\ir ../../bench/bench_timing.sql
CREATE OR REPLACE FUNCTION dn(c text, m text, dev text, reps int, q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('gpujoin.device', dev, true);
    INSERT INTO dn_results SELECT c, m, b.seconds, b.result::float8 FROM pg_temp.best_of(q, reps) b;
END $$;

SELECT setseed(0.1);
DROP TABLE IF EXISTS u2_2m, c3_2m, u2_10m, u3_10m, clump_1m, u2_1m;
CREATE TABLE u2_2m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 2000000) i;
CREATE TEMP TABLE centers AS SELECT c, random() * 100 AS cx, random() * 100 AS cy, random() * 100 AS cz FROM generate_series(0, 19) c;
CREATE TABLE c3_2m AS SELECT i AS id,
    cx + 2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS x,
    cy + 2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS y,
    cz + 2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS z
    FROM generate_series(1, 2000000) i JOIN centers ON c = i % 20;
CREATE TABLE u2_10m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 10000000) i;
CREATE TABLE u3_10m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y, random() * 100 AS z FROM generate_series(1, 10000000) i;
ALTER TABLE u2_2m ADD PRIMARY KEY (id);
ALTER TABLE c3_2m ADD PRIMARY KEY (id);
ALTER TABLE u2_10m ADD PRIMARY KEY (id);
ALTER TABLE u3_10m ADD PRIMARY KEY (id);
-- issue 18's dense wide cell: 1M rows in a square 2 eps across (eps 1), and
-- 1M uniform rows at ~30 neighbours (eps 0.309 in [0, 100)^2)
CREATE TABLE clump_1m AS SELECT i AS id, random() * 2 AS x, random() * 2 AS y FROM generate_series(1, 1000000) i;
CREATE TABLE u2_1m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 1000000) i;
ALTER TABLE clump_1m ADD PRIMARY KEY (id);
ALTER TABLE u2_1m ADD PRIMARY KEY (id);
VACUUM ANALYZE u2_2m, c3_2m, u2_10m, u3_10m, clump_1m, u2_1m;
-- warm up the GPU context and the tables
SELECT count(*) FROM dbscan('u2_2m', '{x,y}', 0.01, 5) \g /dev/null

CREATE TEMP TABLE cases (case_name text, tbl text, cols text, eps float8, lists boolean);
INSERT INTO cases VALUES
    ('2M 2-D uniform ~30',    'u2_2m',  '{x,y}',   0.2185, true),
    ('2M 2-D uniform ~300',   'u2_2m',  '{x,y}',   0.691,  true),
    ('2M 3-D clustered ~30',  'c3_2m',  '{x,y,z}', 0.294,  true),
    ('2M 3-D clustered ~300', 'c3_2m',  '{x,y,z}', 0.634,  true),
    ('10M 2-D uniform ~30',   'u2_10m', '{x,y}',   0.0977, false),
    ('10M 2-D uniform ~300',  'u2_10m', '{x,y}',   0.309,  false),
    ('10M 3-D uniform ~30',   'u3_10m', '{x,y,z}', 0.894,  false),
    ('10M 3-D uniform ~300',  'u3_10m', '{x,y,z}', 1.93,   false);

DO $$
DECLARE c record;
BEGIN
    FOR c IN SELECT * FROM cases LOOP
        PERFORM dn(c.case_name, 'scan', 'cpu', 2,
                   format('SELECT count(*) + sum(x) FROM %I', c.tbl));
        PERFORM dn(c.case_name, 'avg neighbours', 'gpu', 1,
                   format('SELECT avg(n) FROM eps_neighbor_counts(%L, %L, %s)', c.tbl, c.cols, c.eps));
        PERFORM dn(c.case_name, 'dbscan gpu', 'gpu', 2,
                   format('SELECT max(cluster) + 1 FROM dbscan(%L, %L, %s, 5)', c.tbl, c.cols, c.eps));
        PERFORM dn(c.case_name, 'dbscan cpu', 'cpu', 2,
                   format('SELECT max(cluster) + 1 FROM dbscan(%L, %L, %s, 5)', c.tbl, c.cols, c.eps));
        PERFORM dn(c.case_name, 'counts gpu', 'gpu', 2,
                   format('SELECT sum(n) FROM eps_neighbor_counts(%L, %L, %s)', c.tbl, c.cols, c.eps));
        PERFORM dn(c.case_name, 'counts cpu', 'cpu', 2,
                   format('SELECT sum(n) FROM eps_neighbor_counts(%L, %L, %s)', c.tbl, c.cols, c.eps));
        IF c.lists THEN
            PERFORM dn(c.case_name, 'neighbors', 'gpu', 1,
                       format('SELECT sum(cardinality(neighbors)) FROM eps_neighbors(%L, %L, %s)', c.tbl, c.cols, c.eps));
        END IF;
    END LOOP;
END $$;
-- DBSCAN in the dense wide cell (boxes) against uniform rows, both engines
SELECT dn('1M 2-D clump 2 eps across', 'dbscan gpu', 'gpu', 2, $q$SELECT max(cluster) + 1 FROM dbscan('clump_1m', '{x,y}', 1.0, 5)$q$);
SELECT dn('1M 2-D clump 2 eps across', 'dbscan cpu', 'cpu', 2, $q$SELECT max(cluster) + 1 FROM dbscan('clump_1m', '{x,y}', 1.0, 5)$q$);
SELECT dn('1M 2-D uniform ~30', 'dbscan gpu', 'gpu', 2, $q$SELECT max(cluster) + 1 FROM dbscan('u2_1m', '{x,y}', 0.309, 5)$q$);
SELECT dn('1M 2-D uniform ~30', 'dbscan cpu', 'cpu', 2, $q$SELECT max(cluster) + 1 FROM dbscan('u2_1m', '{x,y}', 0.309, 5)$q$);
-- counts in the dense wide cell (lattices) against uniform rows, both engines
SELECT dn('1M 2-D clump 2 eps across', 'counts gpu', 'gpu', 2, $q$SELECT sum(n) FROM eps_neighbor_counts('clump_1m', '{x,y}', 1.0)$q$);
SELECT dn('1M 2-D clump 2 eps across', 'counts cpu', 'cpu', 2, $q$SELECT sum(n) FROM eps_neighbor_counts('clump_1m', '{x,y}', 1.0)$q$);
SELECT dn('1M 2-D uniform ~30', 'counts gpu', 'gpu', 2, $q$SELECT sum(n) FROM eps_neighbor_counts('u2_1m', '{x,y}', 0.309)$q$);
SELECT dn('1M 2-D uniform ~30', 'counts cpu', 'cpu', 2, $q$SELECT sum(n) FROM eps_neighbor_counts('u2_1m', '{x,y}', 0.309)$q$);
-- the form users write today (issue 10: 53.6 s at 2M, eps 0.3)
SELECT dn('2M 2-D uniform ~30', 'GROUP BY gpu', 'gpu', 1,
          $q$SELECT count(*) FROM (SELECT a, count(*) FROM eps_selfjoin('u2_2m', '{x,y}', 0.2185, "symmetric" => true) GROUP BY a) g$q$);

-- agreement: GPU and CPU give the same clusters and counts (sums)
SELECT case_name,
       max(result) FILTER (WHERE method = 'dbscan gpu') = max(result) FILTER (WHERE method = 'dbscan cpu') AS clusters_agree,
       max(result) FILTER (WHERE method = 'counts gpu') = max(result) FILTER (WHERE method = 'counts cpu') AS counts_agree,
       max(result) FILTER (WHERE method = 'neighbors') IS NULL OR
       max(result) FILTER (WHERE method = 'neighbors') = max(result) FILTER (WHERE method = 'counts gpu') AS lists_agree
FROM dn_results GROUP BY case_name ORDER BY min(ctid);

EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM dbscan('u2_10m', '{x,y}', 0.309, 5);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_neighbors('u2_2m', '{x,y}', 0.2185);

SELECT case_name,
       round(max(result) FILTER (WHERE method = 'avg neighbours')::numeric, 1) AS avg_nb,
       max(result) FILTER (WHERE method = 'dbscan gpu')::bigint AS clusters,
       round(max(seconds) FILTER (WHERE method = 'scan')::numeric, 3) AS scan_s,
       round(max(seconds) FILTER (WHERE method = 'dbscan gpu')::numeric, 3) AS dbscan_gpu_s,
       round(max(seconds) FILTER (WHERE method = 'dbscan cpu')::numeric, 3) AS dbscan_cpu_s,
       round(max(seconds) FILTER (WHERE method = 'counts gpu')::numeric, 3) AS counts_gpu_s,
       round(max(seconds) FILTER (WHERE method = 'counts cpu')::numeric, 3) AS counts_cpu_s,
       round(max(seconds) FILTER (WHERE method = 'neighbors')::numeric, 2) AS neighbors_s,
       round(max(seconds) FILTER (WHERE method = 'GROUP BY gpu')::numeric, 2) AS groupby_s
FROM dn_results GROUP BY case_name ORDER BY min(ctid);
