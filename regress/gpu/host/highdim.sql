-- Many dimensions in SQL on the GPU host (regress/gpu/host/run.sh, step highdimsql):
-- Syn16D2M (2M rows, 16 exponential columns, rate 40) with eps_neighbor_counts and
-- eps_selfjoin count(*) at eps 0.03/0.04/0.05, and 100K x 768 pgvector embeddings with
-- planted near-duplicates (cosine eps_selfjoin, knn_selfjoin k = 10), each end to end
-- on the GPU with EXPLAIN ANALYZE for the phases, best of two.  The CPU engine is
-- measured by regress/gpu/gpu_tiles bench on a subset (it takes minutes at 2M rows).
\set ON_ERROR_STOP on
\pset pager off
CREATE EXTENSION IF NOT EXISTS gpujoin;
SET max_parallel_workers_per_gather = 8;
SELECT setseed(0.16);
DROP TABLE IF EXISTS syn16;
CREATE TABLE syn16 (id int PRIMARY KEY, x1 float8, x2 float8, x3 float8, x4 float8, x5 float8,
    x6 float8, x7 float8, x8 float8, x9 float8, x10 float8, x11 float8, x12 float8, x13 float8,
    x14 float8, x15 float8, x16 float8);
INSERT INTO syn16 SELECT i, -ln(1 - random()) / 40, -ln(1 - random()) / 40, -ln(1 - random()) / 40,
    -ln(1 - random()) / 40, -ln(1 - random()) / 40, -ln(1 - random()) / 40, -ln(1 - random()) / 40,
    -ln(1 - random()) / 40, -ln(1 - random()) / 40, -ln(1 - random()) / 40, -ln(1 - random()) / 40,
    -ln(1 - random()) / 40, -ln(1 - random()) / 40, -ln(1 - random()) / 40, -ln(1 - random()) / 40,
    -ln(1 - random()) / 40
FROM generate_series(1, 2000000) i;
VACUUM ANALYZE syn16;

\i regress/gpu/host/timed.sql
SET gpujoin.device = gpu;
SELECT pg_temp.timed('Syn16D2M counts eps 0.03', $$SELECT sum(n) FROM eps_neighbor_counts('syn16', '{x1,x2,x3,x4,x5,x6,x7,x8,x9,x10,x11,x12,x13,x14,x15,x16}', 0.03)$$);
SELECT pg_temp.timed('Syn16D2M count(*) eps 0.03', $$SELECT count(*) FROM eps_selfjoin('syn16', '{x1,x2,x3,x4,x5,x6,x7,x8,x9,x10,x11,x12,x13,x14,x15,x16}', 0.03)$$);
SELECT pg_temp.timed('Syn16D2M counts eps 0.04', $$SELECT sum(n) FROM eps_neighbor_counts('syn16', '{x1,x2,x3,x4,x5,x6,x7,x8,x9,x10,x11,x12,x13,x14,x15,x16}', 0.04)$$);
SELECT pg_temp.timed('Syn16D2M count(*) eps 0.04', $$SELECT count(*) FROM eps_selfjoin('syn16', '{x1,x2,x3,x4,x5,x6,x7,x8,x9,x10,x11,x12,x13,x14,x15,x16}', 0.04)$$);
SELECT pg_temp.timed('Syn16D2M counts eps 0.05', $$SELECT sum(n) FROM eps_neighbor_counts('syn16', '{x1,x2,x3,x4,x5,x6,x7,x8,x9,x10,x11,x12,x13,x14,x15,x16}', 0.05)$$);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)
SELECT count(*) FROM eps_selfjoin('syn16', '{x1,x2,x3,x4,x5,x6,x7,x8,x9,x10,x11,x12,x13,x14,x15,x16}', 0.03);

-- embeddings: 100K random unit directions in 768-D, 2,000 of them with a planted
-- near-duplicate (the original plus noise 1e-3 per coordinate)
CREATE EXTENSION IF NOT EXISTS vector;
DROP TABLE IF EXISTS emb;
CREATE TABLE emb (id int PRIMARY KEY, v vector(768));
INSERT INTO emb SELECT i, (SELECT array_agg(random() - 0.5) FROM generate_series(1, 768) WHERE i > 0)::vector
FROM generate_series(1, 98000) i;
INSERT INTO emb SELECT 100000 + id, (SELECT array_agg(x + (random() - 0.5) * 1e-3) FROM unnest(v::real[]) x)::vector
FROM emb WHERE id <= 2000;
VACUUM ANALYZE emb;
SELECT pg_temp.timed('emb 100K x 768 cosine eps 0.001 count(*)', $$SELECT count(*) FROM eps_selfjoin('emb', '{v}', 0.001, metric => 'cosine')$$);
SELECT pg_temp.timed('emb 100K x 768 knn_selfjoin k=10 count(*)', $$SELECT count(*) FROM knn_selfjoin('emb', '{v}', 10)$$);
SELECT pg_temp.timed('emb 100K x 768 knn_selfjoin cosine k=10 count(*)', $$SELECT count(*) FROM knn_selfjoin('emb', '{v}', 10, metric => 'cosine')$$);
-- the phases (read, index, join, emit) of each, with the parallel read and then serially
-- (DEBUG1: the read's own phases)
SET client_min_messages = debug1;
EXPLAIN (ANALYZE, COSTS OFF)
SELECT count(*) FROM knn_selfjoin('emb', '{v}', 10, metric => 'cosine');
EXPLAIN (ANALYZE, COSTS OFF)
SELECT count(*) FROM knn_selfjoin('emb', '{v}', 10);
EXPLAIN (ANALYZE, COSTS OFF)
SELECT count(*) FROM eps_selfjoin('emb', '{v}', 0.001, metric => 'cosine');
SET gpujoin.parallel_read_min_rows = -1;
SELECT pg_temp.timed('emb serial read: cosine eps 0.001 count(*)', $$SELECT count(*) FROM eps_selfjoin('emb', '{v}', 0.001, metric => 'cosine')$$);
EXPLAIN (ANALYZE, COSTS OFF)
SELECT count(*) FROM eps_selfjoin('emb', '{v}', 0.001, metric => 'cosine');
RESET gpujoin.parallel_read_min_rows;
SET gpujoin.knn_method = brute;
SELECT pg_temp.timed('emb knn_method brute: knn_selfjoin k=10 count(*)', $$SELECT count(*) FROM knn_selfjoin('emb', '{v}', 10)$$);
EXPLAIN (ANALYZE, COSTS OFF)
SELECT count(*) FROM knn_selfjoin('emb', '{v}', 10);
RESET gpujoin.knn_method;
RESET client_min_messages;
-- the 1M x 128 kNN case: regress/gpu/host/knnsql.sql (step knnsql)
SELECT * FROM pg_temp.timings_table();
