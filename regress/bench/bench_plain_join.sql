-- Plain SQL against gpujoin's join path, on any machine (the numbers in
-- BENCHMARKS.md are from the 2-core one, CPU engine, and the GPU host):
--   psql -X -v ncity=171000 -v ncoast=1900000 -v nemb=3000 -v dims=1536 \
--        -f regress/bench/bench_plain_join.sql DB     (gpujoin, postgis, vector)
-- Each query as users write it, planned by PostgreSQL with
-- gpujoin.enable_join off (its GiST nested loop, or a nested loop over
-- every pair for pgvector) and on (the GpuJoin, chosen by its cost), and
-- the matching gpujoin function call, in one run; each answer is a count
-- and a checksum of the pairs, which must agree.  Data (synthetic, the
-- sizes of the issue's cities and coastline):
--   cities, coast  uniform lon/lat points in a 60 x 30 degree box, as
--                  geometry (d = 0.05 and 0.01 degrees: 8 and 0.3 partners a
--                  city) and geography (d = 5 km and 1 km)
--   emb            nemb unit-ish vectors in dims dimensions, 100 clusters,
--                  cosine distance <= 0.15 within a cluster (a.id < b.id)
-- and kNN written as LATERAL (each city's 5 nearest coastline points; the
-- first 1,000 embeddings' 10 nearest others), against knn_join/knn_selfjoin.
-- Best of 2 runs for gpujoin, one for PostgreSQL's plan.
\pset footer off
SET client_min_messages = warning;
-- the join path is there once the library is loaded (or preloaded)
LOAD 'gpujoin';
-- PostgreSQL's plans at their best: no JIT compile in the timings
SET jit = off;
CREATE EXTENSION IF NOT EXISTS gpujoin;
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS vector;
\ir bench_timing.sql
SELECT setseed(0.4242);
DROP TABLE IF EXISTS pj_cities, pj_coast, pj_emb;
CREATE TABLE pj_cities AS SELECT i AS id, ST_MakePoint(random() * 60, random() * 30) AS g
FROM generate_series(1, :ncity) i;
CREATE TABLE pj_coast AS SELECT i AS id, ST_MakePoint(random() * 60, random() * 30) AS g
FROM generate_series(1, :ncoast) i;
-- declared as points of one SRID, as such tables usually are (and as the
-- GpuJoin's parallel read of a side needs)
ALTER TABLE pj_cities ADD PRIMARY KEY (id), ADD COLUMN gg geography(Point, 4326),
    ALTER COLUMN g TYPE geometry(Point, 4326) USING ST_SetSRID(g, 4326);
ALTER TABLE pj_coast ADD PRIMARY KEY (id), ADD COLUMN gg geography(Point, 4326),
    ALTER COLUMN g TYPE geometry(Point, 4326) USING ST_SetSRID(g, 4326);
UPDATE pj_cities SET gg = g::geography;
UPDATE pj_coast SET gg = g::geography;
CREATE INDEX ON pj_cities USING gist (g);
CREATE INDEX ON pj_coast USING gist (g);
CREATE INDEX ON pj_cities USING gist (gg);
CREATE INDEX ON pj_coast USING gist (gg);
CREATE TEMP TABLE pj_centre AS
SELECT c, ARRAY(SELECT random() * 2 - 1 + 0 * c FROM generate_series(1, :dims)) AS x
FROM generate_series(0, 99) c;
CREATE TABLE pj_emb AS
SELECT i AS id, ARRAY(SELECT x[k] + (random() * 2 - 1) * 0.3 + 0 * i
                      FROM generate_series(1, :dims) k)::vector AS v
FROM generate_series(1, :nemb) i JOIN pj_centre ON c = i % 100;
ALTER TABLE pj_emb ADD PRIMARY KEY (id);
VACUUM ANALYZE pj_cities, pj_coast, pj_emb;

CREATE TEMP TABLE pj (case_name text, method text, seconds float8, result text);
CREATE FUNCTION pg_temp.pj(c text, m text, q text, reps int, joins text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('gpujoin.enable_join', joins, true);
    INSERT INTO pj SELECT c, m, b.* FROM pg_temp.best_of(q, reps) b;
    PERFORM set_config('gpujoin.enable_join', 'on', true);
END $$;
-- the pairs' count and checksum, from (a, b)
\set ck 'count(*) || \' \' || sum((a::bigint * 2654435761 + b) % 1000000007)'

SELECT pg_temp.pj('geometry ST_DWithin 0.05', 'PostgreSQL',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT c.id AS a, s.id AS b FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.g, s.g, 0.05)) p$q$, 1, 'off') \g /dev/null
SELECT pg_temp.pj('geometry ST_DWithin 0.05', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT c.id AS a, s.id AS b FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.g, s.g, 0.05)) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('geometry ST_DWithin 0.05', 'eps_join',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT r AS a, s AS b FROM eps_join('pj_cities', 'pj_coast', '{g}', 0.05)) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('geography ST_DWithin 5 km', 'PostgreSQL',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT c.id AS a, s.id AS b FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.gg, s.gg, 5000)) p$q$, 1, 'off') \g /dev/null
SELECT pg_temp.pj('geography ST_DWithin 5 km', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT c.id AS a, s.id AS b FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.gg, s.gg, 5000)) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('geography ST_DWithin 5 km', 'eps_join',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT r AS a, s AS b FROM eps_join('pj_cities', 'pj_coast', '{gg}', 5000)) p$q$, 2, 'on') \g /dev/null
-- sparse: a few partners a city, where PostgreSQL's index probes are cheap and reading dominates
SELECT pg_temp.pj('geometry ST_DWithin 0.01', 'PostgreSQL',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT c.id AS a, s.id AS b FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.g, s.g, 0.01)) p$q$, 1, 'off') \g /dev/null
SELECT pg_temp.pj('geometry ST_DWithin 0.01', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT c.id AS a, s.id AS b FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.g, s.g, 0.01)) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('geometry ST_DWithin 0.01', 'eps_join',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT r AS a, s AS b FROM eps_join('pj_cities', 'pj_coast', '{g}', 0.01)) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('geography ST_DWithin 1 km', 'PostgreSQL',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT c.id AS a, s.id AS b FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.gg, s.gg, 1000)) p$q$, 1, 'off') \g /dev/null
SELECT pg_temp.pj('geography ST_DWithin 1 km', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT c.id AS a, s.id AS b FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.gg, s.gg, 1000)) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('geography ST_DWithin 1 km', 'eps_join',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT r AS a, s AS b FROM eps_join('pj_cities', 'pj_coast', '{gg}', 1000)) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('vector <=> 0.15 (a.id < b.id)', 'PostgreSQL',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT a.id AS a, b.id AS b FROM pj_emb a JOIN pj_emb b ON a.id < b.id AND a.v <=> b.v <= 0.15) p$q$, 1, 'off') \g /dev/null
SELECT pg_temp.pj('vector <=> 0.15 (a.id < b.id)', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT a.id AS a, b.id AS b FROM pj_emb a JOIN pj_emb b ON a.id < b.id AND a.v <=> b.v <= 0.15) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('vector <=> 0.15 (a.id < b.id)', 'eps_selfjoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT a, b FROM eps_selfjoin('pj_emb', '{v}', 0.15, metric => 'cosine')) p$q$, 2, 'on') \g /dev/null

-- kNN written as LATERAL: 171K cities' 5 nearest coastline points (GiST kNN
-- per city), and 1,000 embeddings' 10 nearest others (a sort of every row per
-- query row): the GpuJoin against knn_join on the same rows
SELECT pg_temp.pj('LATERAL 5 nearest (geometry)', 'PostgreSQL',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT c.id AS a, s.id AS b FROM pj_cities c CROSS JOIN LATERAL
        (SELECT t.id FROM pj_coast t ORDER BY t.g <-> c.g LIMIT 5) s) p$q$, 1, 'off') \g /dev/null
SELECT pg_temp.pj('LATERAL 5 nearest (geometry)', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT c.id AS a, s.id AS b FROM pj_cities c CROSS JOIN LATERAL
        (SELECT t.id FROM pj_coast t ORDER BY t.g <-> c.g LIMIT 5) s) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('LATERAL 5 nearest (geometry)', 'knn_join',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT q AS a, r AS b FROM knn_join('pj_cities', 'pj_coast', '{g}', 5)) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('LATERAL 10 nearest (vector <->)', 'PostgreSQL',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT q.id AS a, s.id AS b FROM pj_emb q CROSS JOIN LATERAL
        (SELECT e.id FROM pj_emb e WHERE e.id <> q.id ORDER BY e.v <-> q.v LIMIT 10) s WHERE q.id <= 1000) p$q$, 1, 'off') \g /dev/null
SELECT pg_temp.pj('LATERAL 10 nearest (vector <->)', 'GpuJoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT q.id AS a, s.id AS b FROM pj_emb q CROSS JOIN LATERAL
        (SELECT e.id FROM pj_emb e WHERE e.id <> q.id ORDER BY e.v <-> q.v LIMIT 10) s WHERE q.id <= 1000) p$q$, 2, 'on') \g /dev/null
SELECT pg_temp.pj('LATERAL 10 nearest (vector <->)', 'knn_selfjoin',
    $q$SELECT $q$ || :'ck' || $q$ FROM (SELECT a, b FROM knn_selfjoin('pj_emb', '{v}', 10) WHERE a <= 1000) p$q$, 2, 'on') \g /dev/null

-- the plans, and where the GpuJoin's time goes
EXPLAIN (COSTS OFF) SELECT count(*) FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.g, s.g, 0.05);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.g, s.g, 0.05);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.gg, s.gg, 5000);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM pj_cities c JOIN pj_coast s ON ST_DWithin(c.g, s.g, 0.01);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM pj_emb a JOIN pj_emb b ON a.id < b.id AND a.v <=> b.v <= 0.15;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM pj_cities c CROSS JOIN LATERAL
    (SELECT t.id FROM pj_coast t ORDER BY t.g <-> c.g LIMIT 5) s;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM pj_emb q CROSS JOIN LATERAL
    (SELECT e.id FROM pj_emb e WHERE e.id <> q.id ORDER BY e.v <-> q.v LIMIT 10) s WHERE q.id <= 1000;
SELECT case_name,
       round(min(seconds) FILTER (WHERE method = 'PostgreSQL')::numeric, 3) AS postgresql_s,
       round(min(seconds) FILTER (WHERE method = 'GpuJoin')::numeric, 3) AS gpujoin_s,
       round(min(seconds) FILTER (WHERE method NOT IN ('PostgreSQL', 'GpuJoin'))::numeric, 3) AS function_s,
       round((min(seconds) FILTER (WHERE method = 'PostgreSQL') /
              min(seconds) FILTER (WHERE method = 'GpuJoin'))::numeric, 1) AS speedup,
       round((min(seconds) FILTER (WHERE method = 'GpuJoin') /
              min(seconds) FILTER (WHERE method NOT IN ('PostgreSQL', 'GpuJoin')))::numeric, 2) AS vs_function,
       min(result) AS result,
       count(DISTINCT result) = 1 AS same
FROM pj GROUP BY case_name ORDER BY min(ctid);
SELECT name, value FROM gpujoin_info() WHERE name IN ('engine', 'cpu threads');
DROP TABLE pj_cities, pj_coast, pj_emb;
