-- Geography joins against PostGIS (issue 19), on any machine (the numbers
-- in BENCHMARKS.md are from the 2-core one, CPU engine):
--   psql -X -f regress/bench/bench_geography.sql DB      (needs gpujoin and postgis)
-- bench_join.sql's data as lon/lat geography: 100K r rows against 1M s rows,
-- uniform in a 50 km square at 50 N (0.699 x 0.450 degrees), d = 500 m on
-- the WGS84 spheroid (~310 s rows within d of an r row) and d = 155 m (~30):
--   count(*) FROM eps_join(...)  against  count(*) FROM r JOIN s ON ST_DWithin
--   eps_join_counts(...)         against  r LEFT JOIN s ON ST_DWithin GROUP BY r
-- PostGIS with GiST indexes on both geography columns and parallel workers
-- as the planner likes, driven from r (100K probes of s's index, its
-- faster plan in bench_join.sql).  gpujoin best of two runs, PostGIS one
-- run (minutes); both sides must give the same count (and sum).
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
CREATE EXTENSION IF NOT EXISTS postgis;
\ir bench_timing.sql
SELECT setseed(0.1919);
DROP TABLE IF EXISTS bg_r, bg_s;
CREATE TABLE bg_r AS SELECT i AS id, ST_SetSRID(ST_MakePoint(10 + random() * 0.6987, 50 + random() * 0.4496), 4326)::geography AS geog
FROM generate_series(1, 100000) i;
CREATE TABLE bg_s AS SELECT i AS id, ST_SetSRID(ST_MakePoint(10 + random() * 0.6987, 50 + random() * 0.4496), 4326)::geography AS geog
FROM generate_series(1, 1000000) i;
ALTER TABLE bg_r ADD PRIMARY KEY (id);
ALTER TABLE bg_s ADD PRIMARY KEY (id);
CREATE INDEX ON bg_r USING gist (geog);
CREATE INDEX ON bg_s USING gist (geog);
VACUUM ANALYZE bg_r, bg_s;
CREATE TEMP TABLE bg (case_name text, method text, seconds float8, result text);
CREATE FUNCTION pg_temp.bg(c text, m text, q text, reps int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bg SELECT c, m, b.* FROM pg_temp.best_of(q, reps) b;
END $$;
SELECT pg_temp.bg(format('d %s m count(*)', d), 'gpujoin',
           format($q$SELECT count(*) FROM eps_join('bg_r', 'bg_s', '{geog}', %s)$q$, d), 2),
       pg_temp.bg(format('d %s m count(*)', d), 'PostGIS',
           format($q$SELECT sum(n) FROM (SELECT bg_r.id, count(*) AS n
                     FROM bg_r JOIN bg_s ON ST_DWithin(bg_r.geog, bg_s.geog, %s) GROUP BY bg_r.id) c$q$, d), 1),
       pg_temp.bg(format('d %s m counts', d), 'gpujoin',
           format($q$SELECT count(*) || ' ' || sum(n) FROM eps_join_counts('bg_r', 'bg_s', '{geog}', %s)$q$, d), 2),
       pg_temp.bg(format('d %s m counts', d), 'PostGIS',
           format($q$SELECT count(*) || ' ' || sum(n) FROM (SELECT bg_r.id, count(bg_s.id) AS n
                     FROM bg_r LEFT JOIN bg_s ON ST_DWithin(bg_r.geog, bg_s.geog, %s) GROUP BY bg_r.id) c$q$, d), 1)
FROM unnest('{155,500}'::float8[]) d \g /dev/null
EXPLAIN (COSTS OFF) SELECT sum(n) FROM (SELECT bg_r.id, count(*) AS n
    FROM bg_r JOIN bg_s ON ST_DWithin(bg_r.geog, bg_s.geog, 500) GROUP BY bg_r.id) c;
SELECT case_name,
       round(max(seconds) FILTER (WHERE method = 'gpujoin')::numeric, 3) AS gpujoin_s,
       round(min(seconds) FILTER (WHERE method = 'PostGIS')::numeric, 3) AS postgis_s,
       round((min(seconds) FILTER (WHERE method = 'PostGIS') /
              max(seconds) FILTER (WHERE method = 'gpujoin'))::numeric, 1) AS speedup,
       max(result) FILTER (WHERE method = 'gpujoin') AS result,
       max(result) FILTER (WHERE method = 'gpujoin') = ALL (array_agg(result) FILTER (WHERE method = 'PostGIS')) AS same
FROM bg GROUP BY case_name ORDER BY min(ctid);
SELECT name, value FROM gpujoin_info() WHERE name IN ('engine', 'cpu threads');
DROP TABLE bg_r, bg_s;
