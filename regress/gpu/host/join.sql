-- Joins between two tables on the GPU host (issue 19), one run: eps_join
-- count(*) and eps_join_counts on the GPU engine and the CPU engine (all
-- cores), against the executor's streaming ceiling for the same row count
-- (SELECT count(*) FROM (SELECT generate_series(1, n)) s).  Cases: 10M x 10M
-- in 2-D at ~3 partners a row, 2M x 2M in 6-D, and 100K x 10M (one side much
-- larger).  Each timing is the best of two; the CPU engine's of one.  The
-- engines must agree: count, sum(r) and sum(s) of the pairs (order-free),
-- and sum(n) of the counts equal to the pairs.  EXPLAIN ANALYZE of the GPU
-- runs gives the phases (read, index, join, wait, emit) at the end.
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
\ir ../../bench/bench_timing.sql
SELECT setseed(0.19);
DROP TABLE IF EXISTS jr10m, js10m, jr6, js6, jr100k;
CREATE TABLE jr10m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 10000000) i;
CREATE TABLE js10m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 10000000) i;
CREATE TABLE jr100k AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 100000) i;
CREATE TABLE jr6 AS SELECT i AS id, random() AS c1, random() AS c2, random() AS c3, random() AS c4,
    random() AS c5, random() AS c6 FROM generate_series(1, 2000000) i;
CREATE TABLE js6 AS SELECT i AS id, random() AS c1, random() AS c2, random() AS c3, random() AS c4,
    random() AS c5, random() AS c6 FROM generate_series(1, 2000000) i;
VACUUM ANALYZE jr10m, js10m, jr100k, jr6, js6;
CREATE TEMP TABLE jres (case_name text, method text, seconds float8, result text);
CREATE FUNCTION pg_temp.jb(c text, m text, dev text, q text, reps int DEFAULT 2) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('gpujoin.device', dev, true);
    INSERT INTO jres SELECT c, m, b.* FROM pg_temp.best_of(q, reps) b;
END $$;
-- warm up: the GPU context and buffers, the tables in shared buffers
SELECT count(*) FROM eps_join('jr100k', 'js10m', '{x,y}', 1e-9, 'id', 'id') \g /dev/null

-- 1. 10M x 10M, 2-D, eps 0.0309: ~3 partners a row
SELECT pg_temp.jb('10M x 10M 2-D ~3', 'pairs gpu', 'gpu',
    $q$SELECT count(*) || ' ' || sum(r) || ' ' || sum(s) FROM eps_join('jr10m', 'js10m', '{x,y}', 0.0309, 'id', 'id')$q$);
SELECT pg_temp.jb('10M x 10M 2-D ~3', 'pairs cpu', 'cpu',
    $q$SELECT count(*) || ' ' || sum(r) || ' ' || sum(s) FROM eps_join('jr10m', 'js10m', '{x,y}', 0.0309, 'id', 'id')$q$, 1);
SELECT pg_temp.jb('10M x 10M 2-D ~3', 'counts gpu', 'gpu',
    $q$SELECT count(*) || ' ' || sum(n) FROM eps_join_counts('jr10m', 'js10m', '{x,y}', 0.0309, 'id', 'id')$q$);
SELECT pg_temp.jb('10M x 10M 2-D ~3', 'counts cpu', 'cpu',
    $q$SELECT count(*) || ' ' || sum(n) FROM eps_join_counts('jr10m', 'js10m', '{x,y}', 0.0309, 'id', 'id')$q$, 1);

-- 2. 2M x 2M, 6-D, eps 0.1: ~4 partners a row
SELECT pg_temp.jb('2M x 2M 6-D', 'pairs gpu', 'gpu',
    $q$SELECT count(*) || ' ' || sum(r) || ' ' || sum(s) FROM eps_join('jr6', 'js6', '{c1,c2,c3,c4,c5,c6}', 0.1, 'id', 'id')$q$);
SELECT pg_temp.jb('2M x 2M 6-D', 'pairs cpu', 'cpu',
    $q$SELECT count(*) || ' ' || sum(r) || ' ' || sum(s) FROM eps_join('jr6', 'js6', '{c1,c2,c3,c4,c5,c6}', 0.1, 'id', 'id')$q$, 1);
SELECT pg_temp.jb('2M x 2M 6-D', 'counts gpu', 'gpu',
    $q$SELECT count(*) || ' ' || sum(n) FROM eps_join_counts('jr6', 'js6', '{c1,c2,c3,c4,c5,c6}', 0.1, 'id', 'id')$q$);

-- 3. 100K x 10M, 2-D, eps 0.0977: ~30 partners a row
SELECT pg_temp.jb('100K x 10M 2-D ~30', 'pairs gpu', 'gpu',
    $q$SELECT count(*) || ' ' || sum(r) || ' ' || sum(s) FROM eps_join('jr100k', 'js10m', '{x,y}', 0.0977, 'id', 'id')$q$);
SELECT pg_temp.jb('100K x 10M 2-D ~30', 'pairs cpu', 'cpu',
    $q$SELECT count(*) || ' ' || sum(r) || ' ' || sum(s) FROM eps_join('jr100k', 'js10m', '{x,y}', 0.0977, 'id', 'id')$q$, 1);
SELECT pg_temp.jb('100K x 10M 2-D ~30', 'counts gpu', 'gpu',
    $q$SELECT count(*) || ' ' || sum(n) FROM eps_join_counts('jr100k', 'js10m', '{x,y}', 0.0977, 'id', 'id')$q$);

-- 4. a self-join of 10M rows whole, and forced into about 8 slabs by the memory limit
SELECT pg_temp.jb('10M self-join 2-D ~3', 'whole', 'gpu',
    $q$SELECT count(*) || ' ' || sum(a) || ' ' || sum(b) FROM eps_selfjoin('js10m', '{x,y}', 0.0309, 'id')$q$);
SET gpujoin.gpu_memory_limit = 650;
SELECT pg_temp.jb('10M self-join 2-D ~3', 'slabs', 'gpu',
    $q$SELECT count(*) || ' ' || sum(a) || ' ' || sum(b) FROM eps_selfjoin('js10m', '{x,y}', 0.0309, 'id')$q$);
SELECT pg_temp.jb('10M x 10M 2-D ~3', 'pairs gpu slabs', 'gpu',
    $q$SELECT count(*) || ' ' || sum(r) || ' ' || sum(s) FROM eps_join('jr10m', 'js10m', '{x,y}', 0.0309, 'id', 'id')$q$, 1);
SET gpujoin.device = gpu;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('js10m', '{x,y}', 0.0309, 'id');
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_join('jr10m', 'js10m', '{x,y}', 0.0309, 'id', 'id');
RESET gpujoin.device;
RESET gpujoin.gpu_memory_limit;

-- 5. neighbour counts (~30 neighbours) and DBSCAN (~3, minpts 3: many small
-- clusters) of 10M rows whole, and in slabs under the same 650 MB limit; the
-- answers must be the same
SELECT pg_temp.jb('10M counts 2-D ~30', 'whole', 'gpu',
    $q$SELECT count(*) || ' ' || sum(n) || ' ' || sum(n::bigint * id) FROM eps_neighbor_counts('js10m', '{x,y}', 0.0977, 'id')$q$);
SELECT pg_temp.jb('10M dbscan 2-D ~3', 'whole', 'gpu',
    $q$SELECT max(cluster) || ' ' || sum(cluster::bigint * id) || ' ' || count(*) FILTER (WHERE is_core) FROM dbscan('js10m', '{x,y}', 0.0309, 3, 'id')$q$);
SET gpujoin.gpu_memory_limit = 650;
SELECT pg_temp.jb('10M counts 2-D ~30', 'slabs', 'gpu',
    $q$SELECT count(*) || ' ' || sum(n) || ' ' || sum(n::bigint * id) FROM eps_neighbor_counts('js10m', '{x,y}', 0.0977, 'id')$q$);
SELECT pg_temp.jb('10M dbscan 2-D ~3', 'slabs', 'gpu',
    $q$SELECT max(cluster) || ' ' || sum(cluster::bigint * id) || ' ' || count(*) FILTER (WHERE is_core) FROM dbscan('js10m', '{x,y}', 0.0309, 3, 'id')$q$);
SET gpujoin.device = gpu;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM dbscan('js10m', '{x,y}', 0.0309, 3, 'id');
RESET gpujoin.device;
RESET gpujoin.gpu_memory_limit;

-- the streaming ceiling for each case's pairs
DO $$
DECLARE c text; n bigint;
BEGIN
    FOR c, n IN SELECT case_name, split_part(result, ' ', 1)::bigint FROM jres WHERE method = 'pairs gpu' LOOP
        PERFORM pg_temp.jb(c, 'stream ceiling', 'cpu', format('SELECT count(*) FROM (SELECT generate_series(1, %s)) s', n));
    END LOOP;
END $$;

SET gpujoin.device = gpu;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_join('jr10m', 'js10m', '{x,y}', 0.0309, 'id', 'id');
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_join('jr6', 'js6', '{c1,c2,c3,c4,c5,c6}', 0.1, 'id', 'id');
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_join_counts('jr10m', 'js10m', '{x,y}', 0.0309, 'id', 'id');

SELECT case_name,
       round(max(seconds) FILTER (WHERE method = 'pairs gpu')::numeric, 3) AS pairs_gpu_s,
       round(max(seconds) FILTER (WHERE method = 'pairs cpu')::numeric, 3) AS pairs_cpu_s,
       round(max(seconds) FILTER (WHERE method = 'stream ceiling')::numeric, 3) AS ceiling_s,
       round(max(seconds) FILTER (WHERE method = 'counts gpu')::numeric, 3) AS counts_gpu_s,
       round(max(seconds) FILTER (WHERE method = 'counts cpu')::numeric, 3) AS counts_cpu_s,
       split_part(max(result) FILTER (WHERE method = 'pairs gpu'), ' ', 1) AS pairs,
       max(result) FILTER (WHERE method = 'pairs gpu') IS NOT DISTINCT FROM
           coalesce(max(result) FILTER (WHERE method = 'pairs cpu'), max(result) FILTER (WHERE method = 'pairs gpu'))
       AND split_part(max(result) FILTER (WHERE method = 'counts gpu'), ' ', 2) =
           split_part(max(result) FILTER (WHERE method = 'pairs gpu'), ' ', 1)
       AND max(result) FILTER (WHERE method = 'counts gpu') IS NOT DISTINCT FROM
           coalesce(max(result) FILTER (WHERE method = 'counts cpu'), max(result) FILTER (WHERE method = 'counts gpu'))
           AS engines_agree
FROM jres GROUP BY case_name ORDER BY min(ctid);
SELECT case_name, method, round(seconds::numeric, 3) AS seconds, result,
       result = first_value(result) OVER (PARTITION BY case_name ORDER BY ctid) AS same
FROM jres WHERE case_name IN ('10M self-join 2-D ~3', '10M counts 2-D ~30', '10M dbscan 2-D ~3') OR method IN ('pairs gpu', 'pairs gpu slabs') AND case_name = '10M x 10M 2-D ~3'
ORDER BY ctid;
DROP TABLE jr10m, js10m, jr100k, jr6, js6;
