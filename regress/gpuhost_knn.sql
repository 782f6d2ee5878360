-- kNN in SQL on the GPU host: 1M clustered references (20 Gaussian
-- clusters, sd 2, in [0,100]^3), 100K uniform queries, k = 20 and 100, on
-- the GPU and the CPU engine; the two answers must be identical.
\set ON_ERROR_STOP 1
\timing on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
DROP TABLE IF EXISTS kc, kq;
SELECT setseed(0.5);
CREATE TEMP TABLE centers AS SELECT c, random() * 100 AS cx, random() * 100 AS cy, random() * 100 AS cz FROM generate_series(0, 19) c;
CREATE TABLE kc AS SELECT i AS id,
    cx + 2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS x,
    cy + 2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS y,
    cz + 2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS z
    FROM generate_series(1, 1000000) i JOIN centers ON c = i % 20;
ALTER TABLE kc ADD PRIMARY KEY (id);
CREATE TABLE kq AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y, random() * 100 AS z FROM generate_series(1, 100000) i;
ALTER TABLE kq ADD PRIMARY KEY (id);
VACUUM ANALYZE kc, kq;
\echo == GPU k=20 (cold, then warm)
SET gpujoin.device = gpu;
SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20);
SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20);
\echo == GPU k=100
SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 100);
CREATE TEMP TABLE g20 AS SELECT * FROM knn_join('kq', 'kc', '{x,y,z}', 20);
\echo == CPU k=20, k=100
SET gpujoin.device = cpu;
SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 20);
SELECT count(*) FROM knn_join('kq', 'kc', '{x,y,z}', 100);
\echo == GPU and CPU answers differ in (rows):
SELECT count(*) AS differ FROM ((TABLE g20 EXCEPT SELECT * FROM knn_join('kq', 'kc', '{x,y,z}', 20))
    UNION ALL (SELECT * FROM knn_join('kq', 'kc', '{x,y,z}', 20) EXCEPT TABLE g20)) d;
\echo == executor ceiling for 2M rows (reading + output without a join)
SELECT count(*) FROM (SELECT q.id, r.id, 1, 0.5::float8 FROM kq q CROSS JOIN generate_series(1, 20) r(id)) s;
\echo == GPU self kNN of the 1M references, k=10
SET gpujoin.device = gpu;
SELECT count(*) FROM knn_selfjoin('kc', '{x,y,z}', 10);
