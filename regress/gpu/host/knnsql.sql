-- Issue 17's kNN case in SQL on the GPU host (regress/gpu/host/run.sh, step knnsql):
-- 1M rows in 128 dimensions, 20 Gaussian clusters (sd 2, centres uniform in
-- [0,100]^128), as vector(128); knn_selfjoin k = 10 count(*), end to end on the
-- GPU, best of three, then EXPLAIN ANALYZE with DEBUG1 for the phases (read,
-- index with the engine's start, join, emit).
\set ON_ERROR_STOP on
\pset pager off
CREATE EXTENSION IF NOT EXISTS gpujoin;
CREATE EXTENSION IF NOT EXISTS vector;
SET max_parallel_workers_per_gather = 8;
SELECT setseed(0.17);
CREATE TEMP TABLE centres AS
    SELECT c, ARRAY(SELECT random() * 100 FROM generate_series(1, 128) WHERE c >= 0) AS x
    FROM generate_series(0, 19) c;
DROP TABLE IF EXISTS c128;
CREATE TABLE c128 (id int PRIMARY KEY, v vector(128));
INSERT INTO c128 SELECT i, (SELECT array_agg(ce.x[d] + 2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))
                            FROM generate_series(1, 128) d)::vector
FROM generate_series(1, 1000000) i JOIN centres ce ON ce.c = i % 20;
VACUUM ANALYZE c128;

\i regress/gpu/host/timed.sql
SET gpujoin.device = gpu;
SELECT pg_temp.timed('c128 1M x 128 clusters knn_selfjoin k=10 count(*)', $$SELECT count(*) FROM knn_selfjoin('c128', '{v}', 10)$$, 3);
SET client_min_messages = debug1;
EXPLAIN (ANALYZE, COSTS OFF)
SELECT count(*) FROM knn_selfjoin('c128', '{v}', 10);
RESET client_min_messages;
SELECT * FROM pg_temp.timings_table();
