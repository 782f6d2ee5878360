-- Issue 10 on a small CPU machine, one run, side by side: dbscan (CPU
-- engine) against PostGIS ST_ClusterDBSCAN on 200K and 1M uniform points in
-- [0,100]^2 (eps 0.309, minpts 5), and eps_neighbor_counts against the
-- GROUP BY over eps_selfjoin users write today.  Each timing is the best of
-- two (PostGIS on 1M: one run).  The answers are compared too: the same
-- noise rows, the same partition of core rows, the same counts.
-- usage: psql -X -f regress/bench/bench_density.sql DB   (gpujoin and PostGIS installable)
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
CREATE EXTENSION IF NOT EXISTS postgis;
SET gpujoin.device = cpu;
DROP TABLE IF EXISTS bd_200k, bd_1m, bd_res;
SELECT setseed(0.2);
CREATE TABLE bd_200k AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 200000) i;
CREATE TABLE bd_1m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 1000000) i;
ALTER TABLE bd_200k ADD PRIMARY KEY (id);
ALTER TABLE bd_1m ADD PRIMARY KEY (id);
VACUUM ANALYZE bd_200k, bd_1m;
CREATE TABLE bd_res (case_name text, method text, seconds float8, result text);
\ir bench_timing.sql
CREATE FUNCTION pg_temp.bd(c text, m text, reps int, q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bd_res SELECT c, m, b.seconds, b.result FROM pg_temp.best_of(q, reps) b;
END $$;
-- warm the tables
SELECT count(*) FROM bd_1m \g /dev/null

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['bd_200k', 'bd_1m'] LOOP
        PERFORM pg_temp.bd(t, 'dbscan', 2,
            format('SELECT (max(cluster) + 1) || '' clusters, '' || count(*) FILTER (WHERE cluster IS NULL) || '' noise'' FROM dbscan(%L, ''{x,y}'', 0.309, 5)', t));
        PERFORM pg_temp.bd(t, 'ST_ClusterDBSCAN', CASE WHEN t = 'bd_1m' THEN 1 ELSE 2 END,
            format('SELECT count(DISTINCT c) || '' clusters, '' || count(*) FILTER (WHERE c IS NULL) || '' noise'' FROM (SELECT ST_ClusterDBSCAN(ST_MakePoint(x, y), 0.309, 5) OVER () AS c FROM %I) s', t));
        PERFORM pg_temp.bd(t, 'eps_neighbor_counts', 2,
            format('SELECT sum(n) FROM eps_neighbor_counts(%L, ''{x,y}'', 0.309)', t));
        PERFORM pg_temp.bd(t, 'GROUP BY eps_selfjoin', 2,
            format('SELECT sum(m) FROM (SELECT a, count(*) AS m FROM eps_selfjoin(%L, ''{x,y}'', 0.309, "symmetric" => true) GROUP BY a) g', t));
    END LOOP;
END $$;

-- the same answers: noise rows and the partition of core rows (200K)
WITH g AS (SELECT id, ST_ClusterDBSCAN(ST_MakePoint(x, y), 0.309, 5) OVER () AS pg FROM bd_200k),
     m AS (SELECT d.*, g.pg FROM dbscan('bd_200k', '{x,y}', 0.309, 5) d JOIN g USING (id))
SELECT count(*) FILTER (WHERE (cluster IS NULL) <> (pg IS NULL)) AS noise_differs,
       (SELECT count(*) FROM (SELECT DISTINCT cluster, pg FROM m WHERE is_core) p) AS core_pairs,
       count(DISTINCT cluster) FILTER (WHERE is_core) AS clusters,
       count(DISTINCT pg) FILTER (WHERE is_core) AS postgis_clusters
FROM m;

SELECT case_name AS data, method, round(seconds::numeric, 3) AS seconds, result,
       round((max(seconds) FILTER (WHERE method IN ('ST_ClusterDBSCAN', 'GROUP BY eps_selfjoin'))
              OVER (PARTITION BY case_name, method IN ('dbscan', 'ST_ClusterDBSCAN')) / seconds)::numeric, 1)
              AS speedup_vs_today
FROM bd_res ORDER BY case_name DESC, method IN ('eps_neighbor_counts', 'GROUP BY eps_selfjoin'), seconds;
