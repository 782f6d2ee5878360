-- Where a keyed call's time goes on the GPU: EXPLAIN ANALYZE VERBOSE of the
-- same eps_selfjoin and knn_selfjoin with bigint ids and with uuid keys
-- (2M 2-D rows), the engine's phases side by side.
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
SET gpujoin.device = gpu;
SELECT setseed(0.44);
DROP TABLE IF EXISTS ke_int, ke_uuid;
CREATE TABLE ke_int AS SELECT i AS id, random() AS x, random() AS y FROM generate_series(1, 2000000) i;
ALTER TABLE ke_int ADD PRIMARY KEY (id);
CREATE TABLE ke_uuid AS SELECT md5(id::text)::uuid AS id, x, y FROM ke_int;
ALTER TABLE ke_uuid ADD PRIMARY KEY (id);
VACUUM ANALYZE ke_int, ke_uuid;
SET client_min_messages = debug1;
\timing on
SELECT count(*) FROM eps_selfjoin('ke_int', '{x,y}', 0.001);
SELECT count(*) FROM eps_selfjoin('ke_uuid', '{x,y}', 0.001, key => NULL::uuid);
SET gpujoin.parallel_read_min_rows = -1;
SELECT count(*) FROM eps_selfjoin('ke_int', '{x,y}', 0.001);
SELECT count(*) FROM eps_selfjoin('ke_int', '{x,y}', 0.001, key => NULL::int);
RESET gpujoin.parallel_read_min_rows;
SET client_min_messages = warning;
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('ke_int', '{x,y}', 0.001);
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('ke_uuid', '{x,y}', 0.001, key => NULL::uuid);
DROP TABLE ke_int, ke_uuid;
