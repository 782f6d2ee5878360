-- Plain SQL on the engines, pgvector: distance joins on <-> (L2) and <=>
-- (cosine) over vector and halfvec columns, each run with
-- gpujoin.enable_join on and off and the rows compared both ways (run where
-- pgvector is installed: make installcheck WITH_PGVECTOR=1).
LOAD 'gpujoin';
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector;
RESET client_min_messages;
SELECT setseed(0.2718);
CREATE TABLE jv (id int PRIMARY KEY, v vector(24), h halfvec(24));
INSERT INTO jv (id, v)
SELECT i, ARRAY(SELECT (random() * 2 - 1)::real + 0 * i FROM generate_series(1, 24))::vector
FROM generate_series(1, 1200) i;
-- duplicates, a scaled copy (cosine distance 0), a zero vector, a NULL
INSERT INTO jv (id, v) SELECT 2000 + id, v FROM jv WHERE id <= 10;
INSERT INTO jv (id, v) SELECT 3000 + id, ARRAY(SELECT x * 3 FROM unnest(v::real[]) x)::vector FROM jv WHERE id <= 10;
INSERT INTO jv (id, v) VALUES (4000, array_fill(0, ARRAY[24])::vector), (4001, NULL);
UPDATE jv SET h = v::halfvec;
ANALYZE jv;
CREATE TABLE jw (id int PRIMARY KEY, v vector(24), h halfvec(24));
INSERT INTO jw SELECT id + 10000, v, h FROM jv WHERE id % 3 = 0;
ANALYZE jw;

\i sql/include/join_check.sql

-- the L2 distance: self join, both orders, <= and <
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jv b ON a.id < b.id AND a.v <-> b.v <= 2.2$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jv b ON a.id <> b.id AND b.v <-> a.v < 2.2$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.v <-> b.v <= 0$$);
-- the cosine distance; the zero vector has none (pgvector: NaN)
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jv b ON a.id < b.id AND a.v <=> b.v <= 0.35$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.v <=> b.v < 0.0001$$);
-- halfvec, both metrics
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.h <-> b.h <= 2.3$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.h <=> b.h <= 0.3$$);
-- left, semi, anti
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jw a LEFT JOIN jv b ON a.v <-> b.v <= 2.0 AND a.id - 10000 <> b.id$$);
SELECT * FROM join_check($$SELECT a.id FROM jv a WHERE EXISTS (SELECT 1 FROM jw b WHERE a.v <=> b.v <= 0.3)$$);
SELECT * FROM join_check($$SELECT a.id FROM jv a WHERE NOT EXISTS (SELECT 1 FROM jw b WHERE a.v <-> b.v <= 2.0)$$);
-- a d that is NaN passes NaN distances, as in PostgreSQL: every pair by the predicate
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.v <=> b.v <= 'NaN' AND a.id < 50$$);

-- kNN written as LATERAL, as pgvector users write it
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM jv q CROSS JOIN LATERAL
    (SELECT e.id FROM jv e WHERE e.id <> q.id ORDER BY e.v <-> q.v, e.id LIMIT 10) s$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b, s.d FROM jw q CROSS JOIN LATERAL
    (SELECT e.id, e.v <=> q.v AS d FROM jv e ORDER BY e.v <=> q.v, e.id LIMIT 5) s$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM jw q CROSS JOIN LATERAL
    (SELECT e.id FROM jv e ORDER BY e.h <-> q.h, e.id LIMIT 3) s$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM jw q LEFT JOIN LATERAL
    (SELECT e.id FROM jv e WHERE e.id > 4000 ORDER BY e.v <=> q.v LIMIT 3) s ON true$$);
-- an equality key in the pair filter (knn_key.c): kinds of a few rows
-- answered from their own rows, the large kind by the engine, NULL kinds
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM jv q CROSS JOIN LATERAL
    (SELECT e.id FROM jv e WHERE (CASE WHEN e.id < 700 THEN 0 WHEN e.id % 31 = 0 THEN NULL ELSE e.id % 97 END) =
     (CASE WHEN q.id < 700 THEN 0 ELSE q.id % 97 END) AND e.id <> q.id ORDER BY e.v <-> q.v, e.id LIMIT 4) s$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b, s.d FROM jw q LEFT JOIN LATERAL
    (SELECT e.id, e.v <=> q.v AS d FROM jv e WHERE e.id % 50 = q.id % 60 ORDER BY e.v <=> q.v, e.id LIMIT 3) s ON true$$);
SET enable_nestloop = off;
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
EXPLAIN (COSTS OFF) SELECT q.id, s.id FROM jw q CROSS JOIN LATERAL
    (SELECT e.id FROM jv e WHERE e.id <> q.id ORDER BY e.v <-> q.v LIMIT 10) s;
RESET gpujoin.device;
RESET enable_nestloop;

-- vectors of another size than the inner side's: pgvector's own error
CREATE TABLE jx (id int, v vector);
INSERT INTO jx VALUES (1, '[1,2,3]');
SET enable_nestloop = off;
SELECT count(*) FROM jv a JOIN jx b ON a.v <-> b.v <= 1;
SET gpujoin.device = cpu;  -- EXPLAIN names the engine
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM jv a JOIN jw b ON a.v <=> b.v <= 0.2;
RESET gpujoin.device;
RESET enable_nestloop;

-- Sides read by the parallel read, their rows fetched by ctid for the pairs
-- (join/tid_read.c): every table qualifies at this setting.  The same rows
-- as PostgreSQL's plan; EXPLAIN ANALYZE says which sides were read so.
-- The read needs the extension (its pack aggregate), not only the library.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
RESET client_min_messages;
SET gpujoin.parallel_read_min_rows = 0;
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jv b ON a.id < b.id AND a.v <-> b.v <= 2.2$$);
SELECT * FROM read_lines($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jv b ON a.id < b.id AND a.v <-> b.v <= 2.2$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b, a.v <-> b.v AS d FROM jv a JOIN jw b ON a.v <-> b.v <= 2.0$$);
SELECT * FROM read_lines($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.v <-> b.v <= 2.0$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jv b ON a.id <> b.id AND b.v <-> a.v < 2.2$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b, b.h FROM jv a JOIN jv b ON a.id >= b.id AND b.v <-> a.v < 2.2$$);
-- one table on both sides, one side filtered: no self join, one side so
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jv b ON a.id <> b.id AND a.v <-> b.v <= 2.2 AND a.id % 3 = 0$$);
SELECT * FROM read_lines($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jv b ON a.id <> b.id AND a.v <-> b.v <= 2.2 AND a.id % 3 = 0$$);
-- the zero vector and the NULL are left out of the read: they match nothing
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jv b ON a.id < b.id AND a.v <=> b.v <= 0.35$$);
SELECT * FROM join_check($$SELECT a.*, b.id AS b_id, b.v AS b_v, b.h AS b_h FROM jv a JOIN jw b ON a.v <=> b.v < 0.0001$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.h <-> b.h <= 2.3$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.h <=> b.h <= 0.3 AND a.id % 2 = 0$$);
-- semi: both sides so; left and anti: the outer side through its plan
SELECT * FROM join_check($$SELECT a.id FROM jv a WHERE EXISTS (SELECT 1 FROM jw b WHERE a.v <=> b.v <= 0.3)$$);
SELECT * FROM read_lines($$SELECT a.id FROM jv a WHERE EXISTS (SELECT 1 FROM jw b WHERE a.v <=> b.v <= 0.3)$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jw a LEFT JOIN jv b ON a.v <-> b.v <= 2.0 AND a.id - 10000 <> b.id$$);
SELECT * FROM read_lines($$SELECT a.id AS a, b.id AS b FROM jw a LEFT JOIN jv b ON a.v <-> b.v <= 2.0 AND a.id - 10000 <> b.id$$);
SELECT * FROM join_check($$SELECT a.id FROM jv a WHERE NOT EXISTS (SELECT 1 FROM jw b WHERE a.v <-> b.v <= 2.0)$$);
-- a filtered side is read through its plan; the other side still so
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.v <-> b.v <= 2.0 WHERE b.id % 2 = 1$$);
SELECT * FROM read_lines($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.v <-> b.v <= 2.0 WHERE b.id % 2 = 1$$);
-- the key in the output (made from the carried coordinates), left and anti
-- joins whose outer side has no NULL key (read so, every row kept)
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b, a.v <-> b.v AS d, b.v AS bv FROM jw a JOIN jv b ON a.v <-> b.v <= 2.0$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jw a LEFT JOIN jw b ON a.v <-> b.v <= 1.5 AND a.id <> b.id$$);
SELECT * FROM read_lines($$SELECT a.id AS a, b.id AS b FROM jw a LEFT JOIN jw b ON a.v <-> b.v <= 1.5 AND a.id <> b.id$$);
SELECT * FROM join_check($$SELECT a.id FROM jw a WHERE NOT EXISTS (SELECT 1 FROM jv b WHERE a.v <-> b.v <= 1.5 AND b.id <> a.id - 10000)$$);
-- LATERAL kNN on rows carried by the read (no NULL key in jw; jv's NULL and
-- zero rows: read through the plan)
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM jw q CROSS JOIN LATERAL
    (SELECT e.id FROM jw e WHERE e.id <> q.id ORDER BY e.v <-> q.v, e.id LIMIT 7) s$$);
SELECT * FROM read_lines($$SELECT q.id AS a, s.id AS b FROM jw q CROSS JOIN LATERAL
    (SELECT e.id FROM jw e WHERE e.id <> q.id ORDER BY e.v <-> q.v, e.id LIMIT 7) s$$);
-- e.id <> q.id tested by row where id is unique; not where ids repeat
SELECT * FROM read_lines($$SELECT q.id AS a, s.id AS b FROM jw q CROSS JOIN LATERAL
    (SELECT e.id FROM jw e WHERE q.id <> e.id ORDER BY e.v <-> q.v LIMIT 7) s$$) WHERE read_lines ~ 'By';
CREATE TABLE jd AS SELECT id % 50 AS id, v FROM jw;
INSERT INTO jd SELECT id, v FROM jd WHERE id < 5;
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b, s.v <-> q.v AS d FROM jd q CROSS JOIN LATERAL
    (SELECT e.id, e.v FROM jd e WHERE e.id <> q.id ORDER BY e.v <-> q.v, e.id LIMIT 3) s$$);
SELECT * FROM read_lines($$SELECT q.id AS a, s.id AS b FROM jd q CROSS JOIN LATERAL
    (SELECT e.id FROM jd e WHERE e.id <> q.id ORDER BY e.v <-> q.v LIMIT 3) s$$) WHERE read_lines ~ 'By';
DROP TABLE jd;
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b, s.d, s.v FROM jw q LEFT JOIN LATERAL
    (SELECT e.id, e.v, e.v <-> q.v AS d FROM jw e WHERE e.id > q.id ORDER BY e.v <-> q.v, e.id LIMIT 3) s ON true$$);
SELECT * FROM join_check($$SELECT q.id AS a, s.id AS b FROM jv q CROSS JOIN LATERAL
    (SELECT e.id FROM jw e ORDER BY e.v <-> q.v, e.id LIMIT 4) s$$);
SELECT * FROM read_lines($$SELECT q.id AS a, s.id AS b FROM jv q CROSS JOIN LATERAL
    (SELECT e.id FROM jw e ORDER BY e.v <-> q.v, e.id LIMIT 4) s$$);
-- a rescan with another d each time, and a d that reads nothing
SELECT * FROM join_check($$SELECT g, s.n FROM generate_series(0, 2) g CROSS JOIN LATERAL
    (SELECT count(*) AS n FROM jv a JOIN jw b ON a.v <-> b.v <= g * 0.9) s$$);
SELECT * FROM join_check($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw b ON a.v <-> b.v <= NULL::float8$$);
-- a declared vector(24) against an undeclared one: the plan reads both, pgvector's error
SET enable_nestloop = off;
SELECT count(*) FROM jv a JOIN jx b ON a.v <-> b.v <= 1;
SELECT count(*) FROM jx b JOIN jv a ON b.v <-> a.v <= 1;
RESET enable_nestloop;
-- a user who may read the table's columns only through a column grant, or
-- the table only through a view: the plan reads it (as that user, or as
-- the view's owner)
CREATE ROLE gj_tid_reader;
GRANT SELECT (id, v) ON jv TO gj_tid_reader;
CREATE VIEW jw_view AS SELECT id, v FROM jw;
GRANT SELECT ON jw_view TO gj_tid_reader;
SET ROLE gj_tid_reader;
SELECT * FROM read_lines($$SELECT a.id AS a, b.id AS b FROM jv a JOIN jw_view b ON a.v <-> b.v <= 2.0$$);
SELECT count(*), sum(a.id * 7 + b.id) FROM jv a JOIN jw_view b ON a.v <-> b.v <= 2.0;
RESET ROLE;
SELECT count(*), sum(a.id * 7 + b.id) FROM jv a JOIN jw b ON a.v <-> b.v <= 2.0;
SET gpujoin.enable_join = off;
SELECT count(*), sum(a.id * 7 + b.id) FROM jv a JOIN jw b ON a.v <-> b.v <= 2.0;
RESET gpujoin.enable_join;
DROP VIEW jw_view;
REVOKE ALL ON jv FROM gj_tid_reader;
DROP ROLE gj_tid_reader;
DROP FUNCTION read_lines(text);
RESET gpujoin.parallel_read_min_rows;
-- knn_lateral_fill by <=> (op): a zero vector's distance is NaN, after
-- every number and before NULL.  A query row with a zero or NULL vector
-- gets k references (nonzero ones first, then zero, then NULL); with fewer
-- than k nonzero references, the others make up k in that order.  Against
-- PostgreSQL's own LATERAL, with the nonzero rows' pairs from knn_join by
-- the cosine metric: the same distances (ties may pick other rows)
CREATE TABLE cq (id int, v vector(3));
INSERT INTO cq VALUES (1, '[1,0,0]'), (2, '[0,0,0]'), (3, NULL), (4, '[0,2,1]');
CREATE TABLE cr (id int PRIMARY KEY, v vector(3));
INSERT INTO cr VALUES (10, '[1,1,0]'), (11, '[0,0,0]'), (12, NULL), (13, '[0,0,0]');
SELECT (f.q).id, string_agg(coalesce(((f.r).v <=> (f.q).v)::text, 'null'), ' ' ORDER BY (f.r).v <=> (f.q).v) AS dists
FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 3, NULL::cq, NULL::cr, op => '<=>') f GROUP BY 1 ORDER BY 1;
SELECT count(*) AS differ FROM (
    (SELECT q.id, s.d FROM cq q CROSS JOIN LATERAL (SELECT r.v <=> q.v AS d FROM cr r ORDER BY r.v <=> q.v LIMIT 3) s
     EXCEPT ALL
     SELECT (p.q).id, (p.r).v <=> (p.q).v FROM knn_join('cq', 'cr', '{v}', 3, query_key => NULL::cq, ref_key => NULL::cr, metric => 'cosine') p
     EXCEPT ALL
     SELECT (f.q).id, (f.r).v <=> (f.q).v FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 3, NULL::cq, NULL::cr, op => '<=>') f)) x;
SELECT count(*) AS rows FROM cq q CROSS JOIN LATERAL (SELECT r.v <=> q.v AS d FROM cr r ORDER BY r.v <=> q.v LIMIT 3) s;
-- the other rows of one table, by <=> and by <->
SELECT count(*) AS differ FROM (
    (SELECT q.id, s.d FROM cr q CROSS JOIN LATERAL (SELECT r.v <=> q.v AS d FROM cr r WHERE r.id <> q.id ORDER BY r.v <=> q.v LIMIT 2) s
     EXCEPT ALL
     SELECT (p.a).id, (p.b).v <=> (p.a).v FROM knn_selfjoin('cr', '{v}', 2, key => NULL::cr, metric => 'cosine') p
     EXCEPT ALL
     SELECT (f.q).id, (f.r).v <=> (f.q).v FROM knn_lateral_fill('cr', 'cr', 'v', 'v', 2, NULL::cr, NULL::cr, 'id', op => '<=>') f)) x;
SELECT count(*) AS differ FROM (
    (SELECT q.id, s.d FROM cr q CROSS JOIN LATERAL (SELECT r.v <-> q.v AS d FROM cr r WHERE r.id <> q.id ORDER BY r.v <-> q.v LIMIT 2) s
     EXCEPT ALL
     SELECT (p.a).id, (p.b).v <-> (p.a).v FROM knn_selfjoin('cr', '{v}', 2, key => NULL::cr) p
     EXCEPT ALL
     SELECT (f.q).id, (f.r).v <-> (f.q).v FROM knn_lateral_fill('cr', 'cr', 'v', 'v', 2, NULL::cr, NULL::cr, 'id') f)) x;
SELECT * FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 3, NULL::cq, NULL::cr, op => '<#>');
-- ref_filter (0.11): the references are cr's rows where it holds.  Without
-- row 10 no reference is proper, so knn_join has no rows and the fill
-- returns all of PostgreSQL's (both ways); a filter no row passes leaves
-- each query row alone (keep_alone); not with other_col
SELECT count(*) AS differ FROM (
    (SELECT q.id, s.d FROM cq q CROSS JOIN LATERAL (SELECT r.v <=> q.v AS d FROM cr r WHERE r.id <> 10 ORDER BY r.v <=> q.v LIMIT 3) s
     EXCEPT ALL
     SELECT (f.q).id, (f.r).v <=> (f.q).v FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 3, NULL::cq, NULL::cr, op => '<=>', ref_filter => 'id <> 10') f)
    UNION ALL
    (SELECT (f.q).id, (f.r).v <=> (f.q).v FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 3, NULL::cq, NULL::cr, op => '<=>', ref_filter => 'id <> 10') f
     EXCEPT ALL
     SELECT q.id, s.d FROM cq q CROSS JOIN LATERAL (SELECT r.v <=> q.v AS d FROM cr r WHERE r.id <> 10 ORDER BY r.v <=> q.v LIMIT 3) s)) x;
SELECT (f.q).id, (f.r).id FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 2, NULL::cq, NULL::cr, ref_filter => 'id >= 12') f ORDER BY 1, 2;
SELECT (f.q).id, f.r IS NULL AS alone FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 2, NULL::cq, NULL::cr, keep_alone => true, ref_filter => 'false') f ORDER BY 1;
-- ... with other_col (0.13): a row where it holds lacks itself (11, 13: one
-- proper other, so the row without a vector makes up k = 2); 10 has two
-- proper references (the engine's: none here), and 12, without one, takes them
SELECT (f.q).id, (f.r).id FROM knn_lateral_fill('cr', 'cr', 'v', 'v', 2, NULL::cr, NULL::cr, 'id', ref_filter => 'id > 10') f
ORDER BY 1, 2;
-- query_filter (0.11): only query_tbl's rows where it holds are query rows
SELECT count(*) AS differ FROM (
    (SELECT q.id, s.d FROM cq q CROSS JOIN LATERAL (SELECT r.v <=> q.v AS d FROM cr r WHERE r.id <> 10 ORDER BY r.v <=> q.v LIMIT 3) s WHERE q.id >= 2
     EXCEPT ALL
     SELECT (f.q).id, (f.r).v <=> (f.q).v FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 3, NULL::cq, NULL::cr, op => '<=>', ref_filter => 'id <> 10', query_filter => 'id >= 2') f)
    UNION ALL
    (SELECT (f.q).id, (f.r).v <=> (f.q).v FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 3, NULL::cq, NULL::cr, op => '<=>', ref_filter => 'id <> 10', query_filter => 'id >= 2') f
     EXCEPT ALL
     SELECT q.id, s.d FROM cq q CROSS JOIN LATERAL (SELECT r.v <=> q.v AS d FROM cr r WHERE r.id <> 10 ORDER BY r.v <=> q.v LIMIT 3) s WHERE q.id >= 2)) x;
SELECT (f.q).id, (f.r).id FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 2, NULL::cq, NULL::cr, ref_filter => 'id >= 12', query_filter => 'id IN (1, 3)') f ORDER BY 1, 2;
SELECT (f.q).id, f.r IS NULL AS alone FROM knn_lateral_fill('cq', 'cr', 'v', 'v', 2, NULL::cq, NULL::cr, keep_alone => true, ref_filter => 'false', query_filter => 'id < 3') f ORDER BY 1;
DROP TABLE cq, cr;
