-- eps_join in many dimensions on the GPU host (regress/gpu/host/run.sh, step joinhd):
-- two tables of Syn16's law (16 exponential columns, rate 40), 1M rows each,
-- eps_join count(*) at eps 0.03 and 0.04 by tiles (auto, and the index forced),
-- eps_join_counts' sum (the same number),
-- by brute force and by the grid (what eps_join ran before it had tiles), each
-- on the GPU; then 100K x 100K of the same law on the CPU engine (16 threads),
-- tiles against the grid.  Every method must give the same count.
\set ON_ERROR_STOP on
\pset pager off
CREATE EXTENSION IF NOT EXISTS gpujoin;
SET max_parallel_workers_per_gather = 8;
SELECT setseed(0.19);
DROP TABLE IF EXISTS j16a, j16b;
CREATE TABLE j16a (id int PRIMARY KEY, v float8[]);
INSERT INTO j16a SELECT i, ARRAY(SELECT -ln(1 - random()) / 40 + 0 * i FROM generate_series(1, 16))
FROM generate_series(1, 1000000) i;
CREATE TABLE j16b (id int PRIMARY KEY, v float8[]);
INSERT INTO j16b SELECT i, ARRAY(SELECT -ln(1 - random()) / 40 + 0 * i FROM generate_series(1, 16))
FROM generate_series(1, 1000000) i;
VACUUM ANALYZE j16a;
VACUUM ANALYZE j16b;
CREATE VIEW j16a_100k AS SELECT * FROM j16a WHERE id <= 100000;
CREATE VIEW j16b_100k AS SELECT * FROM j16b WHERE id <= 100000;

\i regress/gpu/host/timed.sql
SET gpujoin.device = gpu;
SELECT pg_temp.timed('1M x 1M eps 0.03, auto', $$SELECT count(*) FROM eps_join('j16a', 'j16b', '{v}', 0.03)$$);
SET gpujoin.eps_method = blocks;
SELECT pg_temp.timed('1M x 1M eps 0.03, blocks', $$SELECT count(*) FROM eps_join('j16a', 'j16b', '{v}', 0.03)$$);
SET gpujoin.eps_method = brute;
SELECT pg_temp.timed('1M x 1M eps 0.03, brute', $$SELECT count(*) FROM eps_join('j16a', 'j16b', '{v}', 0.03)$$);
SET gpujoin.eps_method = grid;
SELECT pg_temp.timed('1M x 1M eps 0.03, grid', $$SELECT count(*) FROM eps_join('j16a', 'j16b', '{v}', 0.03)$$, 1);
RESET gpujoin.eps_method;
SELECT pg_temp.timed('1M x 1M eps 0.03, counts auto', $$SELECT sum(n) FROM eps_join_counts('j16a', 'j16b', '{v}', 0.03)$$);
SET gpujoin.eps_method = grid;
SELECT pg_temp.timed('1M x 1M eps 0.03, counts grid', $$SELECT sum(n) FROM eps_join_counts('j16a', 'j16b', '{v}', 0.03)$$, 1);
RESET gpujoin.eps_method;
SELECT pg_temp.timed('1M x 1M eps 0.04, auto', $$SELECT count(*) FROM eps_join('j16a', 'j16b', '{v}', 0.04)$$);
SET gpujoin.eps_method = brute;
SELECT pg_temp.timed('1M x 1M eps 0.04, brute', $$SELECT count(*) FROM eps_join('j16a', 'j16b', '{v}', 0.04)$$);
RESET gpujoin.eps_method;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_join('j16a', 'j16b', '{v}', 0.03);
-- beyond the device: slices of each table, every pair of slices across
SET gpujoin.gpu_memory_limit = 200;
SELECT pg_temp.timed('1M x 1M eps 0.03, auto in 200 MB', $$SELECT count(*) FROM eps_join('j16a', 'j16b', '{v}', 0.03)$$, 1);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_join('j16a', 'j16b', '{v}', 0.03);
RESET gpujoin.gpu_memory_limit;

SET gpujoin.device = cpu;
SELECT pg_temp.timed('100K x 100K eps 0.03, cpu auto', $$SELECT count(*) FROM eps_join('j16a_100k', 'j16b_100k', '{v}', 0.03, 'id', 'id')$$, 1);
SET gpujoin.eps_method = grid;
SELECT pg_temp.timed('100K x 100K eps 0.03, cpu grid', $$SELECT count(*) FROM eps_join('j16a_100k', 'j16b_100k', '{v}', 0.03, 'id', 'id')$$, 1);
RESET gpujoin.eps_method;
SET gpujoin.device = gpu;
SELECT pg_temp.timed('100K x 100K eps 0.03, gpu auto', $$SELECT count(*) FROM eps_join('j16a_100k', 'j16b_100k', '{v}', 0.03, 'id', 'id')$$);
SELECT * FROM pg_temp.timings_table();
-- the same answer from every method
SELECT count(DISTINCT result) AS answers, string_agg(DISTINCT split_part(what, ',', 1), '; ') AS cases
FROM timings GROUP BY split_part(what, ',', 1) ORDER BY 2;
