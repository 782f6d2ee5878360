-- Plain SQL on the engines, contrib's cube: <-> (cube_distance, Euclidean)
-- joins and LATERAL kNN over cube points, each run with gpujoin.enable_join
-- on and off and the rows compared both ways.
\i sql/include/explain.sql
LOAD 'gpujoin';
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS cube;
RESET client_min_messages;
SELECT setseed(0.5772);
-- points on a 0.1 grid in 3-D: duplicates and pairs exactly 0.5 apart
CREATE TABLE jcu (id int PRIMARY KEY, c cube);
INSERT INTO jcu SELECT i, cube(ARRAY[round((random() * 12)::numeric, 1)::float8,
                                    round((random() * 12)::numeric, 1)::float8,
                                    round((random() * 12)::numeric, 1)::float8])
FROM generate_series(1, 2000) i;
-- what the engine cannot take: NULL, a box, a 2-D point among 3-D ones; a
-- box whose corners are equal is a point
INSERT INTO jcu VALUES (3001, NULL), (3002, cube(ARRAY[1, 1, 1], ARRAY[2, 2, 2])),
    (3003, cube(ARRAY[5, 5])), (3004, cube(ARRAY[3, 3, 3], ARRAY[3, 3, 3])),
    (3005, cube(ARRAY[3, 3, 3]));
CREATE TABLE jcv (id int PRIMARY KEY, c cube);
INSERT INTO jcv SELECT id + 10000, c FROM jcu WHERE id % 4 = 0;
ANALYZE jcu, jcv;

\i sql/include/join_check.sql

-- a self join, both argument orders, <= and <, d = 0
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jcu a JOIN jcu b ON a.id < b.id AND a.c <-> b.c <= 0.5$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b, a.c <-> b.c AS d FROM jcu a JOIN jcv b ON b.c <-> a.c < 0.5$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jcu a JOIN jcu b ON a.c <-> b.c <= 0 AND a.id <> b.id$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jcu a JOIN jcv b ON 0.7 >= a.c <-> b.c$$);
-- left, semi, anti
SELECT * FROM join_check($$SELECT b.id AS a, a.id AS b FROM jcv b LEFT JOIN jcu a ON a.c <-> b.c <= 0.3 AND a.id <> b.id - 10000$$);
SELECT * FROM join_check($$SELECT a.id FROM jcu a WHERE EXISTS (SELECT 1 FROM jcv b WHERE a.c <-> b.c < 0.4)$$);
SELECT * FROM join_check($$SELECT a.id FROM jcu a WHERE NOT EXISTS (SELECT 1 FROM jcv b WHERE a.c <-> b.c <= 0.4)$$);
-- kNN written as LATERAL (cube's GiST kNN operator)
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b, s.d FROM jcv q CROSS JOIN LATERAL
    (SELECT e.id, e.c <-> q.c AS d FROM jcu e WHERE e.id <> q.id - 10000 ORDER BY e.c <-> q.c, e.id LIMIT 5) s$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM jcu q CROSS JOIN LATERAL
    (SELECT e.id FROM jcu e WHERE e.id <> q.id ORDER BY q.c <-> e.c, e.id LIMIT 3) s$$);
SET enable_nestloop = off;
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM jcu a JOIN jcv b ON a.c <-> b.c <= 0.5;
EXPLAIN (COSTS OFF) SELECT q.id, s.id FROM jcv q CROSS JOIN LATERAL
    (SELECT e.id FROM jcu e ORDER BY e.c <-> q.c LIMIT 4) s;
-- the engine's candidates, the box and the 2-D point compared outside it
SELECT * FROM pg_temp.explain_analyze($$SELECT count(*) FROM jcu a JOIN jcv b ON a.c <-> b.c <= 0.5$$);
RESET gpujoin.device;
RESET enable_nestloop;
-- other cube distances stay with PostgreSQL
EXPLAIN (COSTS OFF) SELECT count(*) FROM jcu a JOIN jcv b ON a.c <#> b.c <= 0.5;
DROP TABLE jcu, jcv;
