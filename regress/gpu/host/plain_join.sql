-- Plain SQL on the GPU host (pgvector staged; PostGIS is not there): the
-- GpuJoin of a join written with <-> and <=> against the matching gpujoin
-- function call, on the GPU engine, one run, best of two each.  Cases:
--   2M x 2M vector(16) rows, uniform in the unit cube, q.v <-> r.v <= eps
--     against eps_join (count and checksum of the pairs must agree)
--   the 2M self join a.id < b.id AND a.v <-> b.v <= eps against eps_selfjoin
--     (the GpuJoin joins two sets: both orders of a pair, the qual keeps one)
--   200K x 200K vector(128) with <=> <= d against eps_join(metric cosine)
--   LATERAL kNN, k = 10, on a 1M x 128 clustered table like step knnsql's
--   c128 (made here faster, when that step did not run) against knn_selfjoin
-- The distance joins also with gpujoin.parallel_read_min_rows = -1: their
-- sides read through their plans (the GpuJoin before its parallel read).
-- EXPLAIN ANALYZE of each GpuJoin gives its phases at the end.
\pset footer off
\set ON_ERROR_STOP 0
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
CREATE EXTENSION IF NOT EXISTS vector;
LOAD 'gpujoin';
SET jit = off;
SET gpujoin.device = gpu;
\ir ../../bench/bench_timing.sql
SET statement_timeout = '150s';
-- the tables of an earlier run on this host are kept and taken again
SELECT to_regclass('pjd') IS NULL AS pj_need \gset
\if :pj_need
-- generated without a subquery a row (the GPU host's whole run is one 10-minute call)
SELECT setseed(0.23);
DROP TABLE IF EXISTS pjq, pjr, pjc, pjd;
CREATE TABLE pjq AS SELECT i AS id, ARRAY[random(), random(), random(), random(), random(), random(), random(), random(),
    random(), random(), random(), random(), random(), random(), random(), random()]::real[]::vector(16) AS v
FROM generate_series(1, 2000000) i;
CREATE TABLE pjr AS SELECT i AS id, ARRAY[random(), random(), random(), random(), random(), random(), random(), random(),
    random(), random(), random(), random(), random(), random(), random(), random()]::real[]::vector(16) AS v
FROM generate_series(1, 2000000) i;
CREATE TEMP TABLE pjcentre AS SELECT c, ARRAY(SELECT random() * 2 - 1 + 0 * c FROM generate_series(1, 128))::vector(128) AS x
FROM generate_series(0, 999) c;
CREATE TEMP TABLE pjnoise AS SELECT j, ARRAY(SELECT (random() * 2 - 1) * 0.3 + 0 * j FROM generate_series(1, 128))::vector(128) AS n
FROM generate_series(0, 1008) j;
CREATE TABLE pjc (id int, v vector(128));
INSERT INTO pjc SELECT i, x + n FROM generate_series(1, 200000) i
JOIN pjcentre ON c = i % 1000 JOIN pjnoise ON j = i % 1009;
CREATE TABLE pjd (id int, v vector(128));
INSERT INTO pjd SELECT i, x + n FROM generate_series(1, 200000) i
JOIN pjcentre ON c = (i * 7) % 1000 JOIN pjnoise ON j = (i * 3) % 1009;
-- 1M x 128 in 20 Gaussian clusters (sd 2 a coordinate, as step knnsql's
-- c128): a centre plus two Gaussian vectors of pools of 1009 and 991, the
-- triple distinct for every row (20 * 1009 * 991 > 1M)
SELECT setseed(0.17);
CREATE TEMP TABLE centres AS
    SELECT c, ARRAY(SELECT random() * 100 FROM generate_series(1, 128) WHERE c >= 0)::vector(128) AS x
    FROM generate_series(0, 19) c;
CREATE TEMP TABLE g1 AS SELECT j, (SELECT array_agg(sqrt(2.0) * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))
    FROM generate_series(1, 128) WHERE j >= 0)::vector(128) AS n FROM generate_series(0, 1008) j;
CREATE TEMP TABLE g2 AS SELECT j, (SELECT array_agg(sqrt(2.0) * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))
    FROM generate_series(1, 128) WHERE j >= 0)::vector(128) AS n FROM generate_series(0, 990) j;
DROP TABLE IF EXISTS c128;
CREATE TABLE c128 (id int PRIMARY KEY, v vector(128));
INSERT INTO c128 SELECT i, ce.x + g1.n + g2.n FROM generate_series(1, 1000000) i
JOIN centres ce ON ce.c = i % 20 JOIN g1 ON g1.j = i % 1009 JOIN g2 ON g2.j = i % 991;
VACUUM ANALYZE c128;
ALTER TABLE pjq ADD PRIMARY KEY (id);
ALTER TABLE pjr ADD PRIMARY KEY (id);
ALTER TABLE pjc ADD PRIMARY KEY (id);
ALTER TABLE pjd ADD PRIMARY KEY (id);
VACUUM ANALYZE pjq, pjr, pjc, pjd;
\endif
CREATE TEMP TABLE pjres (case_name text, method text, seconds float8, result text);
CREATE FUNCTION pg_temp.pjb(c text, m text, q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pjres SELECT c, m, b.* FROM pg_temp.best_of(q, 2) b;
END $$;
\set ck 'count(*) || \' \' || sum((a::bigint * 2654435761 + b) % 1000000007)'
SELECT pg_temp.pjb('2M x 2M 16-D <-> 0.45', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT q.id AS a, r.id AS b FROM pjq q JOIN pjr r ON q.v <-> r.v <= 0.45) p$q$) \g /dev/null
SET gpujoin.parallel_read_min_rows = -1;
SELECT pg_temp.pjb('2M x 2M 16-D <-> 0.45', 'GpuJoin, plan read',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT q.id AS a, r.id AS b FROM pjq q JOIN pjr r ON q.v <-> r.v <= 0.45) p$q$) \g /dev/null
SELECT pg_temp.pjb('2M self 16-D <-> 0.45', 'GpuJoin, plan read',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT x.id AS a, y.id AS b FROM pjq x JOIN pjq y ON x.id < y.id AND x.v <-> y.v <= 0.45) p$q$) \g /dev/null
SELECT pg_temp.pjb('200K x 200K 128-D <=> 0.05', 'GpuJoin, plan read',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT q.id AS a, r.id AS b FROM pjc q JOIN pjd r ON q.v <=> r.v <= 0.05) p$q$) \g /dev/null
RESET gpujoin.parallel_read_min_rows;
SELECT pg_temp.pjb('2M x 2M 16-D <-> 0.45', 'function',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT r AS a, s AS b FROM eps_join('pjq', 'pjr', '{v}', 0.45)) p$q$) \g /dev/null
SELECT pg_temp.pjb('2M self 16-D <-> 0.45', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT x.id AS a, y.id AS b FROM pjq x JOIN pjq y ON x.id < y.id AND x.v <-> y.v <= 0.45) p$q$) \g /dev/null
SELECT pg_temp.pjb('2M self 16-D <-> 0.45', 'function',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT a, b FROM eps_selfjoin('pjq', '{v}', 0.45)) p$q$) \g /dev/null
SELECT pg_temp.pjb('200K x 200K 128-D <=> 0.05', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT q.id AS a, r.id AS b FROM pjc q JOIN pjd r ON q.v <=> r.v <= 0.05) p$q$) \g /dev/null
SELECT pg_temp.pjb('200K x 200K 128-D <=> 0.05', 'function',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT r AS a, s AS b FROM eps_join('pjc', 'pjd', '{v}', 0.05, metric => 'cosine')) p$q$) \g /dev/null
SELECT pg_temp.pjb('1M x 128-D LATERAL kNN k=10', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT q.id AS a, s.id AS b FROM c128 q CROSS JOIN LATERAL
        (SELECT e.id FROM c128 e WHERE e.id <> q.id ORDER BY e.v <-> q.v LIMIT 10) s) p$q$) \g /dev/null
SELECT pg_temp.pjb('1M x 128-D LATERAL kNN k=10', 'function',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT a, b FROM knn_selfjoin('c128', '{v}', 10)) p$q$) \g /dev/null
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM pjq q JOIN pjr r ON q.v <-> r.v <= 0.45;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM pjq x JOIN pjq y ON x.id < y.id AND x.v <-> y.v <= 0.45;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM pjc q JOIN pjd r ON q.v <=> r.v <= 0.05;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('pjq', '{v}', 0.45);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_join('pjq', 'pjr', '{v}', 0.45);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM c128 q CROSS JOIN LATERAL
    (SELECT e.id FROM c128 e WHERE e.id <> q.id ORDER BY e.v <-> q.v LIMIT 10) s;
SELECT case_name,
       round(min(seconds) FILTER (WHERE method = 'GpuJoin, plan read')::numeric, 3) AS plan_read_s,
       round(min(seconds) FILTER (WHERE method = 'GpuJoin')::numeric, 3) AS gpujoin_s,
       round(min(seconds) FILTER (WHERE method = 'function')::numeric, 3) AS function_s,
       round((min(seconds) FILTER (WHERE method = 'GpuJoin') /
              min(seconds) FILTER (WHERE method = 'function'))::numeric, 2) AS ratio,
       min(result) AS result, count(DISTINCT result) = 1 AS same
FROM pjres GROUP BY case_name ORDER BY min(ctid);
