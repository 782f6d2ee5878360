-- Plain SQL on the engines: joins on a PostGIS distance predicate planned
-- as a GpuJoin.  Every query runs twice, planned with gpujoin.enable_join
-- on (PostgreSQL's own joins disabled, so that the GpuJoin is taken
-- wherever it is offered) and off (PostgreSQL's plan), and the rows are
-- compared both ways with EXCEPT ALL: missing and extra must be 0.
-- The join path is installed when the library is loaded: in a session
-- that has not called a gpujoin function yet, LOAD it (or preload it).
\i sql/include/explain.sql
LOAD 'gpujoin';
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgis;
RESET client_min_messages;
SELECT setseed(0.31);
-- points on a 0.1 grid: duplicates and pairs exactly 0.5 apart (0.3, 0.4, 0.5)
CREATE TABLE jp (id int PRIMARY KEY, g geometry);
INSERT INTO jp SELECT i, ST_MakePoint(round((random() * 30)::numeric, 1)::float8,
                                      round((random() * 30)::numeric, 1)::float8)
FROM generate_series(1, 3000) i;
-- what the engine cannot take: NULL, empty, a line, a polygon, 3-D, multi
INSERT INTO jp VALUES (5001, NULL), (5002, 'POINT EMPTY'), (5003, 'LINESTRING(1 1, 5 5)'),
    (5004, 'POLYGON((10 10, 12 10, 12 12, 10 12, 10 10))'), (5005, 'POINT(3 3)'),
    (5006, 'POINT(3 3)'), (5007, 'POINT Z (4 4 9)'), (5008, 'MULTIPOINT((7 7), (8 8))'),
    (5009, 'LINESTRING EMPTY');
CREATE TABLE jq (id int PRIMARY KEY, g geometry, tag int);
INSERT INTO jq SELECT i, ST_MakePoint(round((random() * 30)::numeric, 1)::float8,
                                      round((random() * 30)::numeric, 1)::float8), i % 7
FROM generate_series(1, 800) i;
INSERT INTO jq VALUES (901, NULL, 1), (902, 'POINT EMPTY', 2), (903, 'LINESTRING(20 20, 22 25)', 3),
    (904, 'POINT(100 100)', 4), (905, 'POINT(3 3.5)', 5);
CREATE INDEX ON jp USING gist (g);
CREATE INDEX ON jq USING gist (g);
ANALYZE jp;
ANALYZE jq;

\i sql/include/join_check.sql

-- ST_DWithin, both argument orders; pairs exactly d apart are in
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 0.5)$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q JOIN jp p ON ST_DWithin(p.g, q.g, 0.5)$$);
-- ST_Distance and <->, with <= and <, either way round
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q, jp p WHERE ST_Distance(q.g, p.g) <= 0.5$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q, jp p WHERE ST_Distance(p.g, q.g) < 0.5$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q, jp p WHERE q.g <-> p.g <= 0.5$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q, jp p WHERE 0.5 > p.g <-> q.g$$);
-- d = 0: duplicates only; a d as an expression; other quals beside it
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 0)$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 0.25 * 2)$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b, q.tag FROM jq q JOIN jp p
    ON q.tag = p.id % 7 AND ST_DWithin(q.g, p.g, 1.5) AND q.id + p.id > 1000$$);
-- self joins
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jp a JOIN jp b ON a.id < b.id AND ST_DWithin(a.g, b.g, 0.3)$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jp a JOIN jp b ON a.id <> b.id AND ST_DWithin(a.g, b.g, 0.3)$$);
-- one table on both sides: read once, each pair found once by the self-join engine
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jp a LEFT JOIN jp b ON a.id <> b.id AND ST_DWithin(a.g, b.g, 0.2)$$);
SELECT * FROM join_check($$SELECT a.id FROM jp a WHERE NOT EXISTS (SELECT 1 FROM jp b WHERE b.id <> a.id AND ST_DWithin(a.g, b.g, 0.2))$$);
SELECT * FROM join_check($$SELECT a.id FROM jp a WHERE EXISTS (SELECT 1 FROM jp b WHERE b.id > a.id AND ST_DWithin(a.g, b.g, 0.2))$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jp a JOIN jp b ON ST_DWithin(a.g, b.g, 0.1) WHERE a.id % 3 = 0 AND b.id % 3 = 0$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jp a JOIN jp b ON ST_DWithin(a.g, b.g, 0.1) WHERE a.id % 3 = 0 AND b.id % 2 = 0$$);
SELECT * FROM join_check($$SELECT a.id FROM jp a JOIN jp b ON ST_DWithin(a.g, b.g, 0.1)$$);
SET enable_nestloop = off;
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
SELECT * FROM pg_temp.explain_analyze($$SELECT count(*) FROM jp a JOIN jp b ON a.id < b.id AND ST_DWithin(a.g, b.g, 0.3)$$);
RESET gpujoin.device;
RESET enable_nestloop;
-- left, semi and anti joins; a left join's filter on the null-extended side
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q LEFT JOIN jp p ON ST_DWithin(q.g, p.g, 0.4)$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q LEFT JOIN jp p ON ST_DWithin(q.g, p.g, 0.4) WHERE p.id IS NULL OR p.id > 100$$);
SELECT * FROM join_check($$SELECT q.id FROM jq q WHERE EXISTS (SELECT 1 FROM jp p WHERE ST_DWithin(q.g, p.g, 0.4))$$);
SELECT * FROM join_check($$SELECT q.id FROM jq q WHERE NOT EXISTS (SELECT 1 FROM jp p WHERE ST_DWithin(q.g, p.g, 0.4))$$);
SELECT * FROM join_check($$SELECT q.id FROM jq q WHERE NOT EXISTS (SELECT 1 FROM jp p WHERE ST_DWithin(q.g, p.g, 0.4) AND p.id % 2 = 0)$$);
-- d NULL (from an init plan), negative, infinite, huge
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q LEFT JOIN jp p ON ST_DWithin(q.g, p.g, (SELECT NULL::float8))$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q LEFT JOIN jp p ON ST_DWithin(q.g, p.g, (SELECT 0.3::float8))$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q JOIN jp p ON q.g <-> p.g <= -1$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q JOIN jp p ON q.g <-> p.g <= 'Infinity' WHERE q.id < 20$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 1e300) WHERE q.id < 5$$);
-- LIMIT, a join under an aggregate, output of both sides' columns
SELECT * FROM join_check($$SELECT count(*) AS n, sum(q.tag) AS t FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 1.0)$$);
SELECT * FROM join_check($$SELECT q.id, ST_AsText(q.g) AS qg, ST_AsText(p.g) AS pg FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 0.2)$$);

-- parameters: a prepared statement's generic plan takes d as $1
SET plan_cache_mode = force_generic_plan;
SET enable_nestloop = off;
PREPARE near(float8) AS SELECT count(*) FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, $1);
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
EXPLAIN (COSTS OFF) EXECUTE near(0.5);
RESET gpujoin.device;
EXECUTE near(0.5);
EXECUTE near(1.0);
EXECUTE near(NULL);
SET gpujoin.enable_join = off;
EXECUTE near(0.5);
EXECUTE near(1.0);
RESET gpujoin.enable_join;
RESET plan_cache_mode;
-- a cursor, fetched in parts and rewound
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT q.id, p.id FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 0.3) ORDER BY 1, 2;
FETCH 3 FROM c;
MOVE ABSOLUTE 0 IN c;
FETCH 2 FROM c;
COMMIT;
-- rescans: the join under a nested loop, d from the outer row
SELECT v.d, (SELECT count(*) FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, v.d)) AS n
FROM (VALUES (0.2::float8), (0.5), (NULL)) v(d);
SET gpujoin.enable_join = off;
SELECT v.d, (SELECT count(*) FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, v.d)) AS n
FROM (VALUES (0.2::float8), (0.5), (NULL)) v(d);
RESET gpujoin.enable_join;
-- LIMIT stops it early
SELECT count(*) FROM (SELECT q.id FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 0.5) LIMIT 7) s;
RESET enable_nestloop;

-- EXPLAIN names the predicate and the engine
SET enable_nestloop = off;
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
EXPLAIN (COSTS OFF) SELECT q.id, p.id FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 0.5) AND q.tag < 3;
RESET gpujoin.device;
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
EXPLAIN (COSTS OFF) SELECT q.id FROM jq q WHERE NOT EXISTS (SELECT 1 FROM jp p WHERE p.g <-> q.g < 0.5);
RESET gpujoin.device;
RESET enable_nestloop;
-- PostgreSQL's plan where an index probe is cheaper: one point against a table
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
EXPLAIN (COSTS OFF) SELECT p.id FROM (SELECT 'POINT(3 3)'::geometry AS g) x JOIN jp p ON ST_DWithin(x.g, p.g, 0.5);
RESET gpujoin.device;
SET gpujoin.enable_join = off;
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
EXPLAIN (COSTS OFF) SELECT q.id, p.id FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 0.5);
RESET gpujoin.device;
RESET gpujoin.enable_join;

-- mixed SRIDs: PostGIS's own error
CREATE TABLE jsrid (id int, g geometry);
INSERT INTO jsrid VALUES (1, ST_SetSRID('POINT(3 3)'::geometry, 4326));
SET enable_nestloop = off;
SELECT count(*) FROM jq q JOIN jsrid s ON ST_DWithin(q.g, s.g, 0.5);
RESET enable_nestloop;

-- geography: metres on the spheroid (default), on the sphere, and <->
CREATE TABLE jgp (id int PRIMARY KEY, g geography);
INSERT INTO jgp SELECT i, ST_MakePoint(random() * 2 - 1, 50 + random())::geography FROM generate_series(1, 2000) i;
INSERT INTO jgp VALUES (3001, NULL), (3002, 'POINT EMPTY'), (3003, 'LINESTRING(0 50, 0.5 50.5)');
CREATE TABLE jgq (id int PRIMARY KEY, g geography);
INSERT INTO jgq SELECT i, ST_MakePoint(random() * 2 - 1, 50 + random())::geography FROM generate_series(1, 500) i;
ANALYZE jgp;
ANALYZE jgq;
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jgq q JOIN jgp p ON ST_DWithin(q.g, p.g, 3000)$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jgq q JOIN jgp p ON ST_DWithin(p.g, q.g, 3000, false)$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jgq q JOIN jgp p ON ST_Distance(q.g, p.g) < 2500$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jgq q JOIN jgp p ON q.g <-> p.g <= 2500$$);
SELECT * FROM join_check($$SELECT q.id FROM jgq q WHERE NOT EXISTS (SELECT 1 FROM jgp p WHERE ST_DWithin(q.g, p.g, 1500))$$);

-- kNN written as LATERAL: the nearest rows of each outer row, as the subquery gives them
CREATE TABLE lk_r (id int PRIMARY KEY, g geometry, gg geography, kind int);
INSERT INTO lk_r SELECT i, ST_MakePoint(random() * 30, random() * 30), NULL, i % 5 FROM generate_series(1, 4000) i;
UPDATE lk_r SET gg = ST_MakePoint(ST_X(g) / 10, 50 + ST_Y(g) / 30)::geography;
INSERT INTO lk_r VALUES (4001, NULL, NULL, 1), (4002, 'LINESTRING(1 1, 9 9)', NULL, 2), (4003, 'POINT EMPTY', NULL, 3);
CREATE TABLE lk_q (id int PRIMARY KEY, g geometry, gg geography);
INSERT INTO lk_q SELECT i, ST_MakePoint(random() * 30, random() * 30), NULL FROM generate_series(1, 600) i;
UPDATE lk_q SET gg = ST_MakePoint(ST_X(g) / 10, 50 + ST_Y(g) / 30)::geography;
INSERT INTO lk_q VALUES (601, NULL, NULL), (602, 'POINT EMPTY', NULL), (603, 'LINESTRING(5 5, 6 9)', NULL);
CREATE INDEX ON lk_r USING gist (g);
CREATE INDEX ON lk_r USING gist (gg);
ANALYZE lk_r;
ANALYZE lk_q;
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b, s.d FROM lk_q q CROSS JOIN LATERAL
    (SELECT r.id, r.g <-> q.g AS d FROM lk_r r ORDER BY r.g <-> q.g LIMIT 5) s WHERE q.id <= 600$$);
-- ties broken by a second key; NULL, empty and line keys on both sides
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM lk_q q CROSS JOIN LATERAL
    (SELECT r.id FROM lk_r r ORDER BY q.g <-> r.g, r.id LIMIT 4) s$$);
-- the row itself left out; quals on r alone; the distance not in the output
SELECT * FROM join_check($$SELECT a.id AS a, s.id AS b FROM lk_r a CROSS JOIN LATERAL
    (SELECT r.id FROM lk_r r WHERE r.id <> a.id AND r.kind < 3 ORDER BY r.g <-> a.g, r.id LIMIT 3) s WHERE a.id % 7 = 0$$);
-- one table on both sides (read once; the row itself is its own nearest)
SELECT * FROM join_check($$SELECT a.id AS a, s.id AS b, s.d FROM lk_r a CROSS JOIN LATERAL
    (SELECT r.id, r.g <-> a.g AS d FROM lk_r r ORDER BY r.g <-> a.g, r.id LIMIT 3) s$$);
-- (no tie-break: the rows whose keys are NULL or empty, for which every distance ties, left out)
SELECT * FROM join_check($$SELECT a.id AS a, s.id AS b FROM lk_r a LEFT JOIN LATERAL
    (SELECT r.id FROM lk_r r WHERE r.id <> a.id ORDER BY r.g <-> a.g LIMIT 2) s ON true WHERE a.id NOT IN (4001, 4003)$$);
SET enable_nestloop = off;
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
SELECT * FROM pg_temp.explain_analyze($$SELECT count(*) FROM lk_r a CROSS JOIN LATERAL
    (SELECT r.id FROM lk_r r WHERE r.id <> a.id ORDER BY r.g <-> a.g LIMIT 2) s$$);
-- a pair filter most pairs fail (the same kind: one in five): the engine
-- is asked for as many candidates as make about 2k pass (a sample of pairs
-- says how many), so few rows are searched whole; the rows are PostgreSQL's
SELECT * FROM pg_temp.explain_analyze($$SELECT count(*) FROM lk_r a CROSS JOIN LATERAL
    (SELECT r.id FROM lk_r r WHERE r.kind = a.kind AND r.id <> a.id ORDER BY r.g <-> a.g LIMIT 3) s$$);
RESET gpujoin.device;
RESET enable_nestloop;
SELECT * FROM join_check($$SELECT a.id AS a, s.id AS b, s.d FROM lk_r a CROSS JOIN LATERAL
    (SELECT r.id, r.g <-> a.g AS d FROM lk_r r WHERE r.kind = a.kind AND r.id <> a.id ORDER BY r.g <-> a.g, r.id LIMIT 3) s$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM lk_q q LEFT JOIN LATERAL
    (SELECT r.id FROM lk_r r WHERE r.kind = q.id % 50 ORDER BY r.g <-> q.g, r.id LIMIT 4) s ON true$$);
-- rows whose candidates leave the answer unproven are asked again with
-- eight times as many before any is searched whole: points on a lattice
-- (ties everywhere), one kind in twenty, and r.id % 7 too (one pair in 140)
CREATE TABLE lk_t (id int PRIMARY KEY, g geometry, kind int);
INSERT INTO lk_t SELECT i, ST_MakePoint(i % 23, (i / 23) % 19), i % 20 FROM generate_series(1, 3000) i;
ANALYZE lk_t;
SET enable_nestloop = off;
SET gpujoin.device = cpu;
SELECT * FROM pg_temp.explain_analyze($$SELECT count(*) FROM lk_t a CROSS JOIN LATERAL
    (SELECT r.id FROM lk_t r WHERE r.kind = a.kind AND r.id % 7 = a.id % 7 AND r.id <> a.id
     ORDER BY r.g <-> a.g, r.id LIMIT 4) s$$);
RESET gpujoin.device;
RESET enable_nestloop;
SELECT * FROM join_check($$SELECT a.id AS a, s.id AS b, s.d FROM lk_t a CROSS JOIN LATERAL
    (SELECT r.id, r.g <-> a.g AS d FROM lk_t r WHERE r.kind = a.kind AND r.id % 7 = a.id % 7 AND r.id <> a.id
     ORDER BY r.g <-> a.g, r.id LIMIT 4) s$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM lk_q q LEFT JOIN LATERAL
    (SELECT r.id FROM lk_t r WHERE r.kind = q.id % 20 AND r.id % 7 = q.id % 7 ORDER BY r.g <-> q.g, r.id LIMIT 3) s ON true$$);
DROP TABLE lk_t;
-- an equality key in the pair filter (same kind, same tenant): an outer row
-- searched whole needs only its key's inner rows, found by their hash, and
-- a row whose key has few rows is answered from them outright, without the
-- engine.  Skewed: one kind of 2,000 rows (the engine's candidates), 300 of
-- one to nine (their own rows), NULL kinds, kinds equal only under a
-- case-blind collation, rows without a point inside a kind.
CREATE COLLATION lk_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE lk_k (id int PRIMARY KEY, g geometry, kind text, kind8 bigint, kci text COLLATE lk_ci);
INSERT INTO lk_k SELECT i, ST_MakePoint(random() * 30, random() * 30),
    CASE WHEN i <= 2000 THEN 'big' WHEN i % 97 = 0 THEN NULL ELSE 'k' || (i % 300) END,
    CASE WHEN i % 89 = 0 THEN NULL ELSE i % 40 END,
    CASE WHEN i % 2 = 0 THEN 'k' ELSE 'K' END || (i % 300)
FROM generate_series(1, 3500) i;
UPDATE lk_k SET g = NULL WHERE id % 101 = 0;
UPDATE lk_k SET g = 'POINT EMPTY' WHERE id % 103 = 0;
-- a small kind with several rows the engine cannot take (no point, a line)
INSERT INTO lk_k VALUES (9001, NULL, 'k7', 7, 'k7'), (9002, 'POINT EMPTY', 'k7', 7, 'K7'),
    (9003, 'LINESTRING(1 1, 2 2)', 'k7', 7, 'k7'), (9004, NULL, 'k7', 7, 'K7'),
    (9005, 'LINESTRING(20 20, 21 22)', 'k7', 7, 'k7');
-- ... and one whose distances overflow to infinity (after every finite one)
INSERT INTO lk_k VALUES (9011, 'POINT(1e308 1e308)', 'k8', 8, 'k8'), (9012, 'POINT(-1e308 -1e308)', 'k8', 8, 'k8');
-- (more rows than the nearest few a row's answer tries first, so some are left out)
INSERT INTO lk_k SELECT i, ST_MakePoint(i % 30, i % 7), 'k8', 8, 'k8' FROM generate_series(9101, 9130) i;
ANALYZE lk_k;
SET enable_nestloop = off;
SET gpujoin.device = cpu;
SELECT * FROM pg_temp.explain_analyze($$SELECT count(*) FROM lk_k a CROSS JOIN LATERAL
    (SELECT r.id FROM lk_k r WHERE r.kind = a.kind AND r.id <> a.id ORDER BY r.g <-> a.g, r.id LIMIT 4) s$$);
RESET gpujoin.device;
RESET enable_nestloop;
SELECT * FROM join_check($$SELECT a.id AS a, s.id AS b, s.d FROM lk_k a CROSS JOIN LATERAL
    (SELECT r.id, r.g <-> a.g AS d FROM lk_k r WHERE r.kind = a.kind AND r.id <> a.id
     ORDER BY r.g <-> a.g, r.id LIMIT 4) s$$);
SELECT * FROM join_check($$SELECT a.id AS a, s.id AS b FROM lk_k a LEFT JOIN LATERAL
    (SELECT r.id FROM lk_k r WHERE r.kind = a.kind ORDER BY r.g <-> a.g, r.id LIMIT 3) s ON true$$);
-- bigint = int (one hash family, two types), a key computed from q
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM lk_q q LEFT JOIN LATERAL
    (SELECT r.id FROM lk_k r WHERE r.kind8 = q.id % 45 ORDER BY r.g <-> q.g, r.id LIMIT 5) s ON true$$);
-- a key computed from r, and keys equal under the collation alone ('k7' = 'K7')
SELECT * FROM join_check($$SELECT a.id AS a, s.id AS b FROM lk_k a CROSS JOIN LATERAL
    (SELECT r.id FROM lk_k r WHERE upper(r.kind) = upper(a.kind) AND r.id <> a.id
     ORDER BY r.g <-> a.g, r.id LIMIT 3) s WHERE a.id % 5 = 0$$);
SELECT * FROM join_check($$SELECT a.id AS a, s.id AS b FROM lk_k a CROSS JOIN LATERAL
    (SELECT r.id FROM lk_k r WHERE r.kci = a.kci AND r.id <> a.id ORDER BY r.g <-> a.g, r.id LIMIT 3) s$$);
-- LIMIT past every kind's rows, ties left to the engine's order (no second key)
SELECT * FROM join_check($$SELECT a.id AS a, s.id AS b FROM lk_k a CROSS JOIN LATERAL
    (SELECT r.id FROM lk_k r WHERE r.kind = a.kind AND r.id <> a.id AND r.g IS NOT NULL AND NOT ST_IsEmpty(r.g)
     ORDER BY r.g <-> a.g LIMIT 12) s WHERE a.id > 2000 AND a.g IS NOT NULL AND NOT ST_IsEmpty(a.g)$$);
DROP TABLE lk_k;
DROP COLLATION lk_ci;
-- ST_Distance as the key, a filter on the subquery's output
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b, s.d FROM lk_q q CROSS JOIN LATERAL
    (SELECT r.id, ST_Distance(r.g, q.g) AS d FROM lk_r r ORDER BY ST_Distance(r.g, q.g), r.id LIMIT 6) s WHERE s.d < 0.5$$);
-- LEFT JOIN LATERAL keeps the rows with no neighbour
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM lk_q q LEFT JOIN LATERAL
    (SELECT r.id FROM lk_r r WHERE r.kind = 4 AND r.id < 50 ORDER BY r.g <-> q.g, r.id LIMIT 2) s ON true$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM lk_q q LEFT JOIN LATERAL
    (SELECT r.id FROM lk_r r WHERE r.id < 0 ORDER BY r.g <-> q.g LIMIT 2) s ON true$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM lk_q q LEFT JOIN LATERAL
    (SELECT r.id FROM lk_r r ORDER BY r.g <-> q.g, r.id LIMIT 0) s ON true$$);
-- more rows than there are, k past the candidates' margin
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM lk_q q CROSS JOIN LATERAL
    (SELECT r.id FROM lk_r r WHERE r.id <= 30 ORDER BY r.g <-> q.g, r.id LIMIT 50) s WHERE q.id < 40$$);
-- geography's <->: metres on PostGIS's sphere
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b, round(s.d::numeric, 3) AS d FROM lk_q q CROSS JOIN LATERAL
    (SELECT r.id, r.gg <-> q.gg AS d FROM lk_r r ORDER BY r.gg <-> q.gg, r.id LIMIT 3) s$$);
-- the LIMIT a parameter; rescans
SET plan_cache_mode = force_generic_plan;
SET enable_nestloop = off;
PREPARE nearest(bigint) AS SELECT sum(s.id), count(*) FROM lk_q q CROSS JOIN LATERAL
    (SELECT r.id FROM lk_r r ORDER BY r.g <-> q.g, r.id LIMIT $1) s;
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
EXPLAIN (COSTS OFF) EXECUTE nearest(3);
RESET gpujoin.device;
EXECUTE nearest(3);
EXECUTE nearest(0);
EXECUTE nearest(NULL);
EXECUTE nearest(-1);
SET gpujoin.enable_join = off;
EXECUTE nearest(3);
EXECUTE nearest(0);
RESET gpujoin.enable_join;
RESET plan_cache_mode;
SELECT v.n, (SELECT sum(s.id) FROM lk_q q CROSS JOIN LATERAL
    (SELECT r.id FROM lk_r r ORDER BY r.g <-> q.g, r.id LIMIT 2) s WHERE q.id < v.n) AS ids
FROM (VALUES (10), (100)) v(n);
SET gpujoin.enable_join = off;
SELECT v.n, (SELECT sum(s.id) FROM lk_q q CROSS JOIN LATERAL
    (SELECT r.id FROM lk_r r ORDER BY r.g <-> q.g, r.id LIMIT 2) s WHERE q.id < v.n) AS ids
FROM (VALUES (10), (100)) v(n);
RESET gpujoin.enable_join;
RESET enable_nestloop;
-- one query point keeps the index's kNN scan
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
EXPLAIN (COSTS OFF) SELECT s.id FROM (SELECT 'POINT(3 3)'::geometry AS g) x CROSS JOIN LATERAL
    (SELECT r.id FROM lk_r r ORDER BY r.g <-> x.g LIMIT 5) s;
EXPLAIN (COSTS OFF) SELECT q.id, s.id FROM lk_q q CROSS JOIN LATERAL
    (SELECT r.id, r.g <-> q.g AS d FROM lk_r r WHERE r.id <> q.id ORDER BY r.g <-> q.g LIMIT 5) s;
RESET gpujoin.device;

-- cancel: statement_timeout stops a join comparing every pair, and a kNN search of every row
SET enable_nestloop = off;
SET statement_timeout = '300ms';
DO $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM count(*) FROM jp a JOIN jp b ON a.g <-> b.g <= 'Infinity' JOIN jq c ON c.g <-> b.g <= 'Infinity';
    RAISE NOTICE 'not cancelled';
EXCEPTION WHEN query_canceled THEN
    RAISE NOTICE 'cancelled within a second: %', clock_timestamp() - t0 < interval '1 second';
END $$;
DO $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM count(*) FROM lk_r q CROSS JOIN LATERAL (SELECT r.id FROM lk_r r ORDER BY r.g <-> q.g LIMIT NULL) s;
    RAISE NOTICE 'not cancelled';
EXCEPTION WHEN query_canceled THEN
    RAISE NOTICE 'cancelled within a second: %', clock_timestamp() - t0 < interval '1 second';
END $$;
RESET statement_timeout;
RESET enable_nestloop;

-- row-level security and privileges apply to each side as in any plan
CREATE ROLE gj_join_reader;
GRANT SELECT ON jq TO gj_join_reader;
GRANT SELECT (id, g) ON jp TO gj_join_reader;
GRANT EXECUTE ON FUNCTION join_check(text) TO gj_join_reader;
ALTER TABLE jq ENABLE ROW LEVEL SECURITY;
CREATE POLICY jq_tag ON jq TO gj_join_reader USING (tag < 4);
SET ROLE gj_join_reader;
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 0.5)$$);
SELECT count(*) FROM jq q JOIN jp p ON ST_DWithin(q.g, p.g, 0.5) AND p.id > 0 WHERE q.tag >= 4;
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM jq q JOIN jsrid p ON ST_DWithin(q.g, p.g, 0.5)$$);
-- LATERAL: the table scanned again is checked as the subquery's was; a policy keeps PostgreSQL's plan
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM jq q CROSS JOIN LATERAL
    (SELECT p.id FROM jp p ORDER BY p.g <-> q.g, p.id LIMIT 2) s$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM jq q CROSS JOIN LATERAL
    (SELECT p.id FROM jsrid p ORDER BY p.g <-> q.g LIMIT 2) s$$);
SELECT * FROM join_check($$SELECT p.id AS a, s.id AS b FROM jp p CROSS JOIN LATERAL
    (SELECT q.id FROM jq q ORDER BY q.g <-> p.g, q.id LIMIT 2) s WHERE p.id < 100$$);
RESET ROLE;
DROP POLICY jq_tag ON jq;
ALTER TABLE jq DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON jq, jp FROM gj_join_reader;
REVOKE ALL ON FUNCTION join_check(text) FROM gj_join_reader;
DROP ROLE gj_join_reader;

-- Sides read by the parallel read, their tuples fetched by ctid for the
-- pairs (join/tid_read.c): PostGIS columns declared as 2-D points of one
-- SRID, every table so read at this setting; an empty point sends a side
-- back to its plan.  The extension's read aggregate is needed.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
RESET client_min_messages;
SET gpujoin.parallel_read_min_rows = 0;
CREATE TABLE tp (id int PRIMARY KEY, g geometry(Point, 3857));
INSERT INTO tp SELECT id, ST_SetSRID(g, 3857) FROM jp
WHERE GeometryType(g) = 'POINT' AND NOT ST_IsEmpty(g) AND ST_NDims(g) = 2;
INSERT INTO tp VALUES (9001, NULL);
CREATE TABLE tq (id int PRIMARY KEY, g geometry(Point, 3857), tag int);
INSERT INTO tq SELECT id, ST_SetSRID(g, 3857), tag FROM jq
WHERE GeometryType(g) = 'POINT' AND NOT ST_IsEmpty(g);
CREATE TABLE te (id int PRIMARY KEY, g geometry(Point, 3857));
INSERT INTO te SELECT id, g FROM tq;
INSERT INTO te VALUES (9002, 'SRID=3857;POINT EMPTY');
CREATE TABLE tw (id int PRIMARY KEY, g geometry(Point, 4326));
INSERT INTO tw VALUES (1, 'SRID=4326;POINT(3 3)');
CREATE TABLE tgp (id int PRIMARY KEY, g geography(Point, 4326));
INSERT INTO tgp SELECT id, g FROM jgp WHERE GeometryType(g) = 'POINT' AND NOT ST_IsEmpty(g::geometry);
CREATE TABLE tgq (id int PRIMARY KEY, g geography(Point, 4326));
INSERT INTO tgq SELECT id, g FROM jgq;
ANALYZE tp, tq, te, tw, tgp, tgq;
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM tq q JOIN tp p ON ST_DWithin(q.g, p.g, 0.5)$$);
SELECT * FROM read_lines($$SELECT q.id AS a, p.id AS b FROM tq q JOIN tp p ON ST_DWithin(q.g, p.g, 0.5)$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b, q.g <-> p.g AS d FROM tq q JOIN tp p ON p.g <-> q.g < 0.5 AND q.tag <> 3$$);
SELECT * FROM read_lines($$SELECT q.id AS a, p.id AS b, q.g <-> p.g AS d FROM tq q JOIN tp p ON p.g <-> q.g < 0.5 AND q.tag <> 3$$);
SELECT * FROM read_lines($$SELECT q.id AS a, p.id AS b, q.tag FROM tq q JOIN tp p ON p.g <-> q.g < 0.5$$) WHERE read_lines ~ 'Fetched';
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM tp a JOIN tp b ON a.id < b.id AND ST_Distance(a.g, b.g) <= 0.3$$);
SELECT * FROM read_lines($$SELECT a.id AS a, b.id AS b FROM tp a JOIN tp b ON a.id < b.id AND ST_Distance(a.g, b.g) <= 0.3$$);
SELECT * FROM join_check($$SELECT q.id FROM tq q WHERE EXISTS (SELECT 1 FROM tp p WHERE ST_DWithin(q.g, p.g, 0.2))$$);
SELECT * FROM join_check($$SELECT q.id FROM tq q WHERE NOT EXISTS (SELECT 1 FROM tp p WHERE ST_DWithin(q.g, p.g, 0.2))$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM tq q LEFT JOIN tp p ON ST_DWithin(q.g, p.g, 0.3)$$);
SELECT * FROM read_lines($$SELECT q.id AS a, p.id AS b FROM tq q LEFT JOIN tp p ON ST_DWithin(q.g, p.g, 0.3)$$);
-- LATERAL kNN: typed geometry carried with the ids (the ORDER BY key made
-- from x, y and the SRID where ranked); tp's NULL row: tp through its plan
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b, s.d FROM tq q CROSS JOIN LATERAL
    (SELECT e.id, e.g <-> q.g AS d FROM tq e WHERE e.id <> q.id ORDER BY e.g <-> q.g, e.id LIMIT 4) s$$);
SELECT * FROM read_lines($$SELECT q.id AS a, s.id AS b FROM tq q CROSS JOIN LATERAL
    (SELECT e.id FROM tq e WHERE e.id <> q.id ORDER BY e.g <-> q.g, e.id LIMIT 4) s$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b, s.g FROM tq q CROSS JOIN LATERAL
    (SELECT p.id, p.g FROM tp p ORDER BY ST_Distance(p.g, q.g), p.id LIMIT 3) s$$);
SELECT * FROM read_lines($$SELECT q.id AS a, s.id AS b, s.g FROM tq q CROSS JOIN LATERAL
    (SELECT p.id, p.g FROM tp p ORDER BY ST_Distance(p.g, q.g), p.id LIMIT 3) s$$);
-- an empty point: that side through its plan
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM te q JOIN tp p ON q.g <-> p.g <= 0.5$$);
SELECT * FROM read_lines($$SELECT q.id AS a, p.id AS b FROM te q JOIN tp p ON q.g <-> p.g <= 0.5$$);
-- another SRID on the other side: PostGIS's error
SET enable_nestloop = off;
SELECT count(*) FROM tp p JOIN tw w ON ST_DWithin(p.g, w.g, 0.5);
RESET enable_nestloop;
-- geography: the spheroid, the sphere, <->
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM tgq q JOIN tgp p ON ST_DWithin(q.g, p.g, 3000)$$);
SELECT * FROM read_lines($$SELECT q.id AS a, p.id AS b FROM tgq q JOIN tgp p ON ST_DWithin(q.g, p.g, 3000)$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM tgq q JOIN tgp p ON ST_DWithin(p.g, q.g, 3000, false)$$);
SELECT * FROM join_check($$SELECT q.id AS a, p.id AS b FROM tgq q JOIN tgp p ON q.g <-> p.g <= 2500$$);
-- knn_lateral_fill (the distributed LATERAL kNN's rows without a point):
-- a query row without one gets k references (NULL distances); with fewer
-- than k points among the references, the others make up k
CREATE TABLE fq (id int, g geometry(Point, 3857), tag text);
INSERT INTO fq VALUES (1, 'SRID=3857;POINT(0 0)', 'a'), (2, NULL, 'null'), (3, 'SRID=3857;POINT EMPTY', 'empty'),
    (4, ST_SetSRID(ST_MakePoint('NaN', 0), 3857), 'nan'), (5, ST_SetSRID(ST_MakePoint('Infinity', 0), 3857), 'inf');
CREATE TABLE fr (id int, g geometry(Point, 3857));
INSERT INTO fr VALUES (10, 'SRID=3857;POINT(1 1)'), (11, 'SRID=3857;POINT(2 2)'), (12, NULL), (13, 'SRID=3857;POINT EMPTY');
SELECT (f.q).id, (f.q).tag, count(*) AS refs, count(*) FILTER (WHERE (f.r).g <-> (f.q).g IS NULL) AS null_dist
FROM knn_lateral_fill('fq', 'fr', 'g', 'g', 3, NULL::fq, NULL::fr) f GROUP BY 1, 2 ORDER BY 1;
SELECT (f.q).id, count(*) AS refs, count(*) FILTER (WHERE (f.r).g <-> (f.r).g IS NULL) AS without_point
FROM knn_lateral_fill('fq', 'fr', 'g', 'g', 2, NULL::fq, NULL::fr) f GROUP BY 1 ORDER BY 1;
-- ... the same as PostgreSQL's own LATERAL with knn_join's rows, by distance
SELECT count(*) AS differ FROM (
    (SELECT q.id, s.d FROM fq q CROSS JOIN LATERAL (SELECT r.g <-> q.g AS d FROM fr r ORDER BY r.g <-> q.g LIMIT 3) s
     EXCEPT ALL
     SELECT (p.q).id, (p.r).g <-> (p.q).g FROM knn_join('fq', 'fr', '{g}', 3, query_key => NULL::fq, ref_key => NULL::fr) p
     EXCEPT ALL
     SELECT (f.q).id, (f.r).g <-> (f.q).g FROM knn_lateral_fill('fq', 'fr', 'g', 'g', 3, NULL::fq, NULL::fr) f)) x;
-- other_col: the other rows of one table (WHERE r.id <> q.id), against
-- PostgreSQL's LATERAL with knn_selfjoin's rows, by distance
SELECT (f.q).id, count(*) AS refs, count(*) FILTER (WHERE (f.r).id = (f.q).id) AS itself,
    count(*) FILTER (WHERE (f.r).g <-> (f.r).g IS NULL) AS without_point
FROM knn_lateral_fill('fr', 'fr', 'g', 'g', 3, NULL::fr, NULL::fr, other_col => 'id') f GROUP BY 1 ORDER BY 1;
SELECT count(*) AS differ FROM (
    (SELECT q.id, s.d FROM fr q CROSS JOIN LATERAL (SELECT r.g <-> q.g AS d FROM fr r WHERE r.id <> q.id ORDER BY r.g <-> q.g LIMIT 3) s
     EXCEPT ALL
     SELECT (p.a).id, (p.b).g <-> (p.a).g FROM knn_selfjoin('fr', '{g}', 3, key => NULL::fr) p
     EXCEPT ALL
     SELECT (f.q).id, (f.r).g <-> (f.q).g FROM knn_lateral_fill('fr', 'fr', 'g', 'g', 3, NULL::fr, NULL::fr, 'id') f)) x;
-- other_col and ref_filter (0.13): the other rows where the filter holds
-- (WHERE r.id <> q.id AND r.ok); a row it fails on is not among its own
-- references.  fs: duplicates, rows without a point on both sides of the
-- filter, three proper rows where it holds (fewer than k others for them).
-- PostgreSQL's LATERAL, less its rows of two proper points (the engine's:
-- here PostgreSQL's own, so the rest is the fill's), is the fill's rows
CREATE TABLE fs (id int PRIMARY KEY, g geometry(Point, 3857), ok boolean);
INSERT INTO fs VALUES (1, 'SRID=3857;POINT(0 0)', true), (2, 'SRID=3857;POINT(1 0)', false),
    (3, 'SRID=3857;POINT(0 0)', true), (4, NULL, true), (5, 'SRID=3857;POINT EMPTY', false),
    (6, ST_SetSRID(ST_MakePoint('NaN', 0), 3857), true), (7, 'SRID=3857;POINT(5 5)', true), (8, NULL, false);
CREATE TEMP TABLE fs_pg AS SELECT q.id, s.d FROM fs q CROSS JOIN LATERAL
    (SELECT r.g <-> q.g AS d FROM fs r WHERE r.id <> q.id AND r.ok ORDER BY r.g <-> q.g LIMIT 3) s;
CREATE TEMP TABLE fs_engine AS SELECT q.id, s.d FROM fs q CROSS JOIN LATERAL
    (SELECT r.g <-> q.g AS d FROM fs r WHERE r.id <> q.id AND r.ok AND r.g <-> r.g = 0 ORDER BY r.g <-> q.g LIMIT 3) s
    WHERE q.g <-> q.g = 0;
CREATE TEMP TABLE fs_fill AS SELECT (f.q).id, (f.r).g <-> (f.q).g AS d
    FROM knn_lateral_fill('fs', 'fs', 'g', 'g', 3, NULL::fs, NULL::fs, other_col => 'id', ref_filter => 'ok') f;
SELECT id, count(*) AS refs FROM fs_fill GROUP BY 1 ORDER BY 1;
SELECT (SELECT count(*) FROM (TABLE fs_pg EXCEPT ALL (TABLE fs_engine UNION ALL TABLE fs_fill)) x) AS missing,
    (SELECT count(*) FROM ((TABLE fs_engine UNION ALL TABLE fs_fill) EXCEPT ALL TABLE fs_pg) y) AS extra,
    (SELECT count(*) FROM fs_pg) AS rows;
-- ... keep_alone: the filter's one row has no reference (NULLs); the others
-- have that row (proper ones by the engine, so none here)
SELECT (f.q).id, (f.r).id AS ref FROM knn_lateral_fill('fs', 'fs', 'g', 'g', 3, NULL::fs, NULL::fs,
    other_col => 'id', keep_alone => true, ref_filter => 'id = 7') f ORDER BY 1, 2;
DROP TABLE fs;
-- keep_alone: with no references at all (an empty table; one row and
-- other_col), each row once with a NULL reference, as LEFT JOIN LATERAL
-- gives it NULLs; not where it has references
CREATE TABLE fe (id int, g geometry(Point, 3857));
SELECT (f.q).id, f.r IS NULL AS no_reference FROM knn_lateral_fill('fq', 'fe', 'g', 'g', 3, NULL::fq, NULL::fe, keep_alone => true) f ORDER BY 1;
SELECT count(*) FROM knn_lateral_fill('fq', 'fe', 'g', 'g', 3, NULL::fq, NULL::fe);
INSERT INTO fe VALUES (1, 'SRID=3857;POINT(5 5)');
SELECT (f.q).id, f.r IS NULL AS no_reference FROM knn_lateral_fill('fe', 'fe', 'g', 'g', 3, NULL::fe, NULL::fe, 'id', true) f;
SELECT count(*) FROM knn_lateral_fill('fq', 'fe', 'g', 'g', 3, NULL::fq, NULL::fe, keep_alone => true) f WHERE f.r IS NULL;
DROP TABLE fe;
-- knn_lateral_strip (a strip's LATERAL query on a worker) numbers each query
-- row's run of rows 1, 2, ..; a run longer than k, one that starts again
-- (the rows of a query row apart), one whose distances go down (NaN after
-- numbers and NULL last, as ORDER BY) or rows of other types are errors
SELECT (s.q).id, (s.r).id, s.rank, s.dist FROM knn_lateral_strip(
    $$SELECT x.ctid, x, y, (y.id - x.id)::float8 FROM fq x, fr y WHERE x.id <= 2 ORDER BY x.ctid, y.id$$,
    4, NULL::fq, NULL::fr) s;
SELECT count(*) FROM knn_lateral_strip($$SELECT x.ctid, x, y, 0::float8 FROM fq x, fr y ORDER BY x.ctid$$,
    3, NULL::fq, NULL::fr);
SELECT count(*) FROM knn_lateral_strip($$SELECT x.ctid, x, y, 0::float8 FROM fq x, fr y ORDER BY y.id, x.ctid$$,
    4, NULL::fq, NULL::fr);
SELECT count(*) FROM knn_lateral_strip($$SELECT x.ctid, x, x, 0::float8 FROM fq x$$, 4, NULL::fq, NULL::fr);
SELECT (s.q).id, s.rank, s.dist FROM knn_lateral_strip(
    $$SELECT x.ctid, x, y, d FROM fq x, fr y, (VALUES (1, 0.5::float8), (2, 'NaN'), (3, NULL)) v(i, d)
      WHERE x.id = 1 AND y.id = 10 ORDER BY i$$, 3, NULL::fq, NULL::fr) s;
SELECT count(*) FROM knn_lateral_strip($$SELECT x.ctid, x, y, (20 - y.id)::float8 FROM fq x, fr y
    WHERE x.id = 1 ORDER BY y.id$$, 4, NULL::fq, NULL::fr);
SELECT count(*) FROM knn_lateral_strip($$SELECT x.ctid, x, y, d FROM fq x, fr y, (VALUES (1, 'NaN'::float8), (2, 1e300)) v(i, d)
    WHERE x.id = 1 AND y.id = 10 ORDER BY i$$, 4, NULL::fq, NULL::fr);
SELECT count(*) FROM knn_lateral_strip($$SELECT x.ctid, x, y, d FROM fq x, fr y, (VALUES (1, NULL::float8), (2, 'NaN')) v(i, d)
    WHERE x.id = 1 AND y.id = 10 ORDER BY i$$, 4, NULL::fq, NULL::fr);
-- ... or runs by a row number from 1 (a shard answering query rows read
-- from a Citus intermediate result, which have no ctid): the same rules
SELECT s.q, (s.r).id, s.rank, s.dist FROM knn_lateral_strip(
    $$SELECT x.id::int8, x.id::int8, y, (y.id - x.id)::float8 FROM fq x, fr y WHERE x.id <= 2 ORDER BY x.id, y.id$$,
    4, NULL::bigint, NULL::fr) s;
SELECT count(*) FROM knn_lateral_strip($$SELECT x.id::int8, x.id::int8, y, 0::float8 FROM fq x, fr y ORDER BY y.id, x.id$$,
    4, NULL::bigint, NULL::fr);
SELECT count(*) FROM knn_lateral_strip($$SELECT x.id::int8 - 1, x.id::int8, y, 0::float8 FROM fq x, fr y WHERE x.id = 1$$,
    4, NULL::bigint, NULL::fr);
-- knn_lateral_join's filters are each one condition, nothing else
SELECT count(*) FROM knn_lateral_join('fq', 'fr', '{g}', 3, NULL::fq, NULL::fr, ref_filter => 'true LIMIT 1');
SELECT count(*) FROM knn_lateral_join('fq', 'fr', '{g}', 3, NULL::fq, NULL::fr, query_filter => 'true; SELECT 1');
SELECT count(*) FROM knn_lateral_join('fq', 'fr', '{g}', 3, NULL::fq, NULL::fr, query_filter => 'id = 1) UNION (SELECT');
SELECT count(*) FROM knn_lateral_join('fq', 'fr', '{g}', 3, NULL::fq, NULL::fr, query_filter => 'id = 1');
-- knn_lateral_bound_filter binds a generic plan's parameters into the
-- outer WHERE: each value a literal of its type that reads back the same
-- whatever the session's float digits, DateStyle and IntervalStyle
SET extra_float_digits = -10;
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'sql_standard';
SELECT knn_lateral_bound_filter('(id = $1) AND (tag <> $2)', ROW(42, 'it''s'::text), 'fq');
SELECT knn_lateral_bound_filter('id::float8 < $1 AND id::float4 > $2', ROW(1::float8 / 3, 1::float4 / 3::float4), 'fq');
SELECT knn_lateral_bound_filter('now()::date > $1 AND interval ''1 day'' < $2', ROW('2026-11-29'::date, '1 day 02:03:04'::interval), 'fq');
SELECT knn_lateral_bound_filter('(id = $1) OR (id = $1 + 1)', ROW(NULL::int), 'fq');
SELECT '0.3333333333333333'::float8 = 1::float8 / 3 AS same8, '0.33333334'::float4 = 1::float4 / 3::float4 AS same4;
RESET extra_float_digits;
RESET DateStyle;
RESET IntervalStyle;
SELECT knn_lateral_bound_filter('id = $2', ROW(1), 'fq');
SELECT knn_lateral_bound_filter('true) UNION (SELECT', ROW(1), 'fq');
SELECT knn_lateral_bound_filter('id = $1 LIMIT 1', ROW(1), 'fq');
SELECT knn_lateral_bound_filter('nosuch = $1', ROW(1), 'fq');
SELECT knn_lateral_bound_filter('id = $1', NULL, 'fq');
SELECT * FROM knn_lateral_fill('fq', 'fr', 'g', 'g', 3, NULL::fq, NULL::fr, other_col => 'id');
SELECT * FROM knn_lateral_fill('fq', 'fr', 'g', 'g', 0, NULL::fq, NULL::fr);
SELECT * FROM knn_lateral_fill('fq', 'fr', 'g', 'g', 3, NULL::fr, NULL::fr);
SELECT * FROM knn_lateral_fill('fq', 'fr', 'tag', 'g', 3, NULL::fq, NULL::fr);
DROP TABLE fq, fr;
DROP TABLE tp, tq, te, tw, tgp, tgq;
DROP FUNCTION read_lines(text);
RESET gpujoin.parallel_read_min_rows;
