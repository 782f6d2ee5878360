-- A LATERAL kNN whose subquery filters the pair, "the nearest of the same
-- kind", as users write it, on any machine (gpujoin, postgis):
--   psql -X -v rows=20000 -v kinds=10 -f regress/bench/bench_lateral_filter.sql DB
-- rows uniform points in a 100 x 100 square, kind = id % kinds, a GiST
-- index on the points.  In one run: PostgreSQL's plan (gpujoin.enable_join
-- off: the GiST scan, filtered, once per row), the GpuJoin (enable_nestloop
-- off, so it is the plan whatever its cost), and the plan the planner
-- chooses with both on; each answer a count and a sum of the distances,
-- which must agree.  Best of 2 for gpujoin, one run for PostgreSQL's plan.
\pset footer off
SET client_min_messages = warning;
LOAD 'gpujoin';
SET jit = off;
CREATE EXTENSION IF NOT EXISTS gpujoin;
CREATE EXTENSION IF NOT EXISTS postgis;
\ir bench_timing.sql
\if :{?rows}
\else
\set rows 20000
\endif
\if :{?kinds}
\else
\set kinds 10
\endif
SELECT setseed(0.31);
DROP TABLE IF EXISTS bl_kind;
CREATE TABLE bl_kind (id int PRIMARY KEY, kind int, g geometry(Point));
INSERT INTO bl_kind SELECT i, i % :kinds, ST_MakePoint(random() * 100, random() * 100)
FROM generate_series(1, :rows) i;
CREATE INDEX ON bl_kind USING gist (g);
ANALYZE bl_kind;
CREATE TEMP TABLE bl_q AS SELECT $q$SELECT count(*) || ' ' || round(sum(n.d)::numeric, 6) FROM bl_kind a CROSS JOIN LATERAL
    (SELECT b.g <-> a.g AS d FROM bl_kind b WHERE b.kind = a.kind AND b.id <> a.id ORDER BY b.g <-> a.g LIMIT 5) n$q$ AS q;
CREATE TEMP TABLE bl_times (method text, seconds float8, result text);
SET gpujoin.enable_join = off;
INSERT INTO bl_times SELECT 'PostgreSQL (GiST, filtered)', b.* FROM bl_q, pg_temp.best_of(bl_q.q, 1) b;
RESET gpujoin.enable_join;
SET enable_nestloop = off;
INSERT INTO bl_times SELECT 'GpuJoin', b.* FROM bl_q, pg_temp.best_of(bl_q.q, 2) b;
RESET enable_nestloop;
INSERT INTO bl_times SELECT 'the planner''s choice', b.* FROM bl_q, pg_temp.best_of(bl_q.q, 2) b;
SELECT :rows AS rows, :kinds AS kinds, current_setting('gpujoin.device') AS device;
SELECT method, round(seconds::numeric, 3) AS seconds, result FROM bl_times;
SELECT count(DISTINCT result) = 1 AS same_answers FROM bl_times;
-- the planner's choice, as EXPLAIN shows it
SELECT q FROM bl_q \gset
EXPLAIN (COSTS OFF) :q;
DROP TABLE bl_kind;
