-- PostGIS geography points in metres on the Earth, as ST_DWithin(geography,
-- geography, d[, use_spheroid]) measures them: on the WGS84 spheroid by
-- default, on PostGIS's sphere with use_spheroid => false.  Checked against
-- PostGIS itself, with pairs within a millimetre of d and at d exactly
-- (ST_Project), near the poles and across the antimeridian.
\i sql/include/explain.sql
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgis;
RESET client_min_messages;
SELECT setseed(0.7);
CREATE TABLE gg (id int PRIMARY KEY, geog geography(Point, 4326));
INSERT INTO gg SELECT i, ST_SetSRID(ST_MakePoint(10 + random() * 0.04, 50 + random() * 0.03), 4326)::geography
FROM generate_series(1, 1500) i;
-- partners at d = 500 m exactly and a millimetre either side, in every direction
INSERT INTO gg SELECT 10000 + id, ST_Project(geog, 500, random() * 2 * pi()) FROM gg WHERE id <= 150;
INSERT INTO gg SELECT 20000 + id, ST_Project(geog, 500.001, random() * 2 * pi()) FROM gg WHERE id <= 100;
INSERT INTO gg SELECT 30000 + id, ST_Project(geog, 499.999, random() * 2 * pi()) FROM gg WHERE id <= 100;
-- and at 500 m on PostGIS's sphere (radius (2a + b) / 3), by the sphere's formula
INSERT INTO gg
SELECT 40000 + id, ST_SetSRID(ST_MakePoint(degrees(lon + atan2(sin(az) * sin(del) * cos(lat),
                                                               cos(del) - sin(lat) * sin(lat2))),
                                           degrees(lat2)), 4326)::geography
FROM (SELECT id, lon, lat, az, del, asin(sin(lat) * cos(del) + cos(lat) * sin(del) * cos(az)) AS lat2
      FROM (SELECT id, radians(ST_X(geog::geometry)) AS lon, radians(ST_Y(geog::geometry)) AS lat,
                   random() * 2 * pi() AS az, 500 / 6371008.771415059 AS del
            FROM gg WHERE id <= 100) s) t;
CREATE INDEX ON gg USING gist (geog);
ANALYZE gg;

-- PostGIS's pairs, both ways of measuring
CREATE TEMP TABLE pg_pairs AS
SELECT sp, a.id AS a, b.id AS b, ST_Distance(a.geog, b.geog, sp) AS dist
FROM (VALUES (true), (false)) v(sp), gg a JOIN gg b ON a.id < b.id
WHERE ST_DWithin(a.geog, b.geog, 500, sp);
-- the test has pairs within a millimetre of d on both sides of it
SELECT sp, count(*) FILTER (WHERE dist > 499.999999) > 20 AS near_d_in
FROM pg_pairs GROUP BY sp ORDER BY sp;
SELECT count(*) > 50 AS near_d_out FROM gg a JOIN gg b ON a.id < b.id
WHERE ST_Distance(a.geog, b.geog) BETWEEN 500 AND 500.002 AND NOT ST_DWithin(a.geog, b.geog, 500);

CREATE TEMP TABLE ours AS
SELECT sp, least(a, b) AS a, greatest(a, b) AS b, dist
FROM (VALUES (true), (false)) v(sp), eps_selfjoin('gg', '{geog}', 500, use_spheroid => sp);
SELECT sp,
       (SELECT count(*) FROM ours o WHERE o.sp = v.sp) AS ours,
       (SELECT count(*) FROM pg_pairs p WHERE p.sp = v.sp) AS postgis,
       (SELECT count(*) FROM (SELECT a, b FROM ours o WHERE o.sp = v.sp
                              EXCEPT SELECT a, b FROM pg_pairs p WHERE p.sp = v.sp) d) AS extra,
       (SELECT count(*) FROM (SELECT a, b FROM pg_pairs p WHERE p.sp = v.sp
                              EXCEPT SELECT a, b FROM ours o WHERE o.sp = v.sp) d) AS missing,
       (SELECT max(abs(o.dist - p.dist)) < 1e-7 FROM ours o JOIN pg_pairs p USING (sp, a, b)
        WHERE o.sp = v.sp) AS dist_matches
FROM (VALUES (true), (false)) v(sp) ORDER BY sp;

-- the pairs at d exactly went to PostGIS, and only they
SELECT * FROM pg_temp.explain_analyze($$SELECT * FROM eps_selfjoin('gg', '{geog}', 500)$$);
SELECT * FROM pg_temp.explain_analyze($$SELECT * FROM eps_selfjoin('gg', '{geog}', 500, use_spheroid => false)$$);

-- the _sql form, symmetric output, a restriction
SELECT count(*) AS sql_form_diff FROM (
    SELECT least(a, b), greatest(a, b) FROM eps_selfjoin_sql('SELECT id, geog FROM gg', 500)
    EXCEPT SELECT a, b FROM pg_pairs WHERE sp) d;
SELECT (SELECT count(*) FROM eps_selfjoin('gg', '{geog}', 500, "symmetric" => true))
     = 2 * (SELECT count(*) FROM pg_pairs WHERE sp) AS symmetric_ok;
SELECT b, round(dist::numeric, 6) AS dist FROM eps_selfjoin('gg', '{geog}', 500, "symmetric" => true)
WHERE a = 10001 ORDER BY b LIMIT 5;
SELECT b.id, round(ST_Distance(a.geog, b.geog)::numeric, 6) AS dist FROM gg a JOIN gg b
ON a.id = 10001 AND b.id <> a.id AND ST_DWithin(a.geog, b.geog, 500) ORDER BY b.id LIMIT 5;

-- counts: every row, zero included
SELECT count(*) AS neighbor_counts_diff FROM eps_neighbor_counts('gg', '{geog}', 500) c
FULL JOIN (SELECT a.id, count(b.id) AS n FROM gg a LEFT JOIN gg b
           ON b.id <> a.id AND ST_DWithin(a.geog, b.geog, 500)
           WHERE a.geog IS NOT NULL AND NOT ST_IsEmpty(a.geog::geometry) GROUP BY a.id) p
ON p.id = c.id WHERE c.n IS DISTINCT FROM p.n;
-- ... and for listed rows only, among them rows with partners at d exactly
SELECT c.id, c.n, (SELECT count(*) FROM gg b WHERE b.id <> c.id AND
                   ST_DWithin((SELECT geog FROM gg WHERE id = c.id), b.geog, 500)) AS postgis
FROM eps_neighbor_counts('gg', '{geog}', 500) c
WHERE c.id IN (1, 2, 3, 10001, 10002, 20001, 30001, 40001) ORDER BY c.id;
SELECT * FROM pg_temp.explain_analyze($$SELECT * FROM eps_neighbor_counts('gg', '{geog}', 500) WHERE id IN (1, 2, 3, 10001, 10002, 20001, 30001, 40001)$$);

-- neighbour lists: each row's partners by (metres, id), both ways of measuring;
-- rows without partners come back with empty lists
CREATE TEMP TABLE pg_lists AS
SELECT sp, a.id,
       array_agg(b.id::bigint ORDER BY ST_Distance(a.geog, b.geog, sp), b.id) AS nb,
       array_agg(ST_Distance(a.geog, b.geog, sp) ORDER BY ST_Distance(a.geog, b.geog, sp), b.id) AS nd
FROM (VALUES (true), (false)) v(sp), gg a JOIN gg b ON b.id <> a.id
WHERE ST_DWithin(a.geog, b.geog, 500, sp)
GROUP BY sp, a.id;
CREATE TEMP TABLE our_lists AS
SELECT sp, l.* FROM (VALUES (true), (false)) v(sp), eps_neighbors('gg', '{geog}', 500, use_spheroid => sp) l;
SELECT sp,
       (SELECT count(*) FROM our_lists o WHERE o.sp = v.sp) = (SELECT count(*) FROM gg) AS every_row,
       (SELECT count(*) FROM our_lists o FULL JOIN pg_lists p USING (sp, id)
        WHERE coalesce(o.sp, p.sp) = v.sp
          AND o.neighbors IS DISTINCT FROM coalesce(p.nb, '{}')) AS lists_differ,
       (SELECT max(abs(d.o - d.p)) < 1e-7
        FROM our_lists o JOIN pg_lists p USING (sp, id),
             unnest(o.dists, p.nd) AS d(o, p) WHERE o.sp = v.sp) AS dist_matches
FROM (VALUES (true), (false)) v(sp) ORDER BY sp;
SELECT id, cardinality(neighbors) AS n, neighbors[1:3] AS nearest, dists[1:3]::numeric(10, 6)[] AS metres,
       dists[cardinality(dists)]::numeric(10, 6) AS farthest
FROM eps_neighbors('gg', '{geog}', 500) WHERE id IN (7, 100, 10100) ORDER BY id;
-- the _sql form and a restriction to listed rows
SELECT count(*) AS lists_sql_differ FROM eps_neighbors_sql('SELECT id, geog FROM gg', 500) o
JOIN pg_lists p ON p.sp AND p.id = o.id WHERE o.neighbors <> p.nb;
SELECT id, neighbors = (SELECT nb FROM pg_lists WHERE sp AND pg_lists.id = l.id) AS same
FROM eps_neighbors('gg', '{geog}', 500) l WHERE id IN (3, 10003) ORDER BY id;

-- two tables: one much smaller, as r and as s
CREATE TABLE gsmall AS SELECT id, geog FROM gg WHERE id % 7 = 0 OR id > 10000;
ALTER TABLE gsmall ADD PRIMARY KEY (id);
SELECT sp,
       (SELECT count(*) FROM (SELECT r, s FROM eps_join('gsmall', 'gg', '{geog}', 500, use_spheroid => sp)
         EXCEPT SELECT a.id, b.id FROM gsmall a JOIN gg b ON ST_DWithin(a.geog, b.geog, 500, sp)) d)
     + (SELECT count(*) FROM (SELECT a.id, b.id FROM gsmall a JOIN gg b ON ST_DWithin(a.geog, b.geog, 500, sp)
         EXCEPT SELECT r, s FROM eps_join('gsmall', 'gg', '{geog}', 500, use_spheroid => sp)) d) AS small_r_diff,
       (SELECT count(*) FROM (SELECT r, s FROM eps_join('gg', 'gsmall', '{geog}', 500, use_spheroid => sp)
         EXCEPT SELECT a.id, b.id FROM gg a JOIN gsmall b ON ST_DWithin(a.geog, b.geog, 500, sp)) d)
     + (SELECT count(*) FROM (SELECT a.id, b.id FROM gg a JOIN gsmall b ON ST_DWithin(a.geog, b.geog, 500, sp)
         EXCEPT SELECT r, s FROM eps_join('gg', 'gsmall', '{geog}', 500, use_spheroid => sp)) d) AS small_s_diff,
       (SELECT count(*) FROM eps_join_counts('gsmall', 'gg', '{geog}', 500, use_spheroid => sp) c
        JOIN (SELECT a.id, count(b.id) AS n FROM gsmall a LEFT JOIN gg b ON ST_DWithin(a.geog, b.geog, 500, sp)
              GROUP BY a.id) p ON p.id = c.r WHERE c.n <> p.n) AS counts_diff
FROM (VALUES (true), (false)) v(sp) ORDER BY sp;
SELECT count(*) AS join_sql_diff FROM (
    SELECT r, s FROM eps_join_sql('SELECT id, geog FROM gsmall', 'SELECT id, geog FROM gg', 500)
    EXCEPT SELECT a.id, b.id FROM gsmall a JOIN gg b ON ST_DWithin(a.geog, b.geog, 500)) d;

-- near the poles and across the antimeridian
CREATE TABLE gpole (id int PRIMARY KEY, geog geography(Point, 4326));
INSERT INTO gpole SELECT i, ST_SetSRID(ST_MakePoint(random() * 360 - 180, 89.99 + random() * 0.01), 4326)::geography
FROM generate_series(1, 300) i;
INSERT INTO gpole SELECT i, ST_SetSRID(ST_MakePoint(-89.995 - random() * 0.005, 0), 4326)::geography
FROM generate_series(301, 310) i;
INSERT INTO gpole SELECT 1000 + i, ST_SetSRID(ST_MakePoint(CASE WHEN i % 2 = 0 THEN 180 - random() * 0.01
                                                               ELSE -180 + random() * 0.01 END,
                                                          random() * 0.01), 4326)::geography
FROM generate_series(1, 300) i;
INSERT INTO gpole SELECT 2000 + id, ST_Project(geog, 300, random() * 2 * pi()) FROM gpole
WHERE id <= 80 OR id BETWEEN 1001 AND 1080;
INSERT INTO gpole VALUES (5000, 'SRID=4326;POINT(0 90)'), (5001, 'SRID=4326;POINT(45 90)'),
    (5002, 'SRID=4326;POINT(180 0)'), (5003, 'SRID=4326;POINT(-180 0)'), (5004, 'SRID=4326;POINT(-90 -90)');
SELECT sp,
       (SELECT count(*) FROM eps_selfjoin('gpole', '{geog}', 300, use_spheroid => sp)) AS ours,
       (SELECT count(*) FROM (SELECT least(a, b), greatest(a, b) FROM eps_selfjoin('gpole', '{geog}', 300, use_spheroid => sp)
         EXCEPT SELECT a.id, b.id FROM gpole a JOIN gpole b ON a.id < b.id AND ST_DWithin(a.geog, b.geog, 300, sp)) d)
     + (SELECT count(*) FROM (SELECT a.id, b.id FROM gpole a JOIN gpole b ON a.id < b.id AND ST_DWithin(a.geog, b.geog, 300, sp)
         EXCEPT SELECT least(a, b), greatest(a, b) FROM eps_selfjoin('gpole', '{geog}', 300, use_spheroid => sp)) d) AS diff
FROM (VALUES (true), (false)) v(sp) ORDER BY sp;
-- the two poles' points and the antimeridian's: 0 m apart
SELECT a, b, round(dist::numeric, 6) AS dist FROM eps_selfjoin('gpole', '{geog}', 1)
WHERE a >= 5000 ORDER BY a, b;

-- long range: 2,000 km over the whole globe (the band is wide there)
CREATE TABLE gglobe (id int PRIMARY KEY, geog geography(Point, 4326));
INSERT INTO gglobe SELECT i, ST_SetSRID(ST_MakePoint(random() * 360 - 180, degrees(asin(2 * random() - 1))), 4326)::geography
FROM generate_series(1, 400) i;
SELECT sp,
       (SELECT count(*) FROM (SELECT least(a, b), greatest(a, b) FROM eps_selfjoin('gglobe', '{geog}', 2e6, use_spheroid => sp)
         EXCEPT SELECT a.id, b.id FROM gglobe a JOIN gglobe b ON a.id < b.id AND ST_DWithin(a.geog, b.geog, 2e6, sp)) d)
     + (SELECT count(*) FROM (SELECT a.id, b.id FROM gglobe a JOIN gglobe b ON a.id < b.id AND ST_DWithin(a.geog, b.geog, 2e6, sp)
         EXCEPT SELECT least(a, b), greatest(a, b) FROM eps_selfjoin('gglobe', '{geog}', 2e6, use_spheroid => sp)) d) AS diff,
       (SELECT max(abs(j.dist - ST_Distance(a.geog, b.geog, sp)))
        FROM eps_selfjoin('gglobe', '{geog}', 2e6, use_spheroid => sp) j
        JOIN gglobe a ON a.id = j.a JOIN gglobe b ON b.id = j.b) < CASE WHEN sp THEN 1.0 ELSE 1e-6 END AS dist_within_bound
FROM (VALUES (true), (false)) v(sp) ORDER BY sp;

-- DBSCAN in metres: against DBSCAN by its definition over PostGIS's own
-- ST_DWithin pairs (core: minpts rows within d, itself included; clusters
-- numbered by their least core id; a border row joins the least-numbered
-- cluster in reach)
CREATE FUNCTION geo_dbscan_oracle(tbl regclass, d float8, minpts int, sp boolean)
RETURNS TABLE (id bigint, cluster int, is_core boolean) LANGUAGE plpgsql AS $$
DECLARE
    changed bigint;
BEGIN
    DROP TABLE IF EXISTS o_pairs, o_lab;
    EXECUTE format('CREATE TEMP TABLE o_pairs AS SELECT a.id::bigint AS a, b.id::bigint AS b '
                   'FROM %s a JOIN %s b ON ST_DWithin(a.geog, b.geog, %s, %L)', tbl, tbl, d, sp);
    CREATE INDEX ON o_pairs (a);
    CREATE TEMP TABLE o_lab AS SELECT a AS id, count(*) >= minpts AS core, a AS lab FROM o_pairs GROUP BY a;
    ALTER TABLE o_lab ADD PRIMARY KEY (id);
    ANALYZE o_pairs, o_lab;
    LOOP
        UPDATE o_lab l SET lab = m.lab
        FROM (SELECT p.a, min(n.lab) AS lab FROM o_pairs p JOIN o_lab n ON n.id = p.b AND n.core
              GROUP BY p.a) m
        WHERE l.id = m.a AND l.core AND m.lab < l.lab;
        GET DIAGNOSTICS changed = ROW_COUNT;
        EXIT WHEN changed = 0;
    END LOOP;
    RETURN QUERY
    WITH ranks AS (SELECT lab, (dense_rank() OVER (ORDER BY lab) - 1)::int AS rk
                   FROM (SELECT DISTINCT lab FROM o_lab WHERE core) c)
    SELECT l.id,
           CASE WHEN l.core THEN (SELECT rk FROM ranks WHERE ranks.lab = l.lab)
                ELSE (SELECT min(r.rk) FROM o_pairs p JOIN o_lab n ON n.id = p.b AND n.core
                      JOIN ranks r ON r.lab = n.lab WHERE p.a = l.id) END,
           l.core
    FROM o_lab l;
END $$;
-- a line of rows 100 m apart along a meridian: every neighbour pair is in
-- the band, about half of them within d by PostGIS's rounding
CREATE TABLE eline AS SELECT i AS id, ST_Project('SRID=4326;POINT(10 50)'::geography, 100 * i, 0) AS geog
FROM generate_series(0, 2000) i;
ALTER TABLE eline ADD PRIMARY KEY (id);
SET client_min_messages = warning;
CREATE TEMP TABLE dbscan_cases AS
SELECT * FROM (VALUES ('gg'::regclass, 60.0::float8, 3, true), ('gg', 60, 3, false),
                      ('gg', 500, 125, true), ('gpole', 300, 4, true),
                      ('eline', 100, 3, true)) v(tbl, d, minpts, sp);
CREATE TEMP TABLE dbscan_oracle AS
SELECT c.*, o.* FROM dbscan_cases c, geo_dbscan_oracle(c.tbl, c.d, c.minpts, c.sp) o;
SELECT c.tbl, c.d, c.minpts, c.sp,
       (SELECT count(*) FROM dbscan(c.tbl, '{geog}', c.d, c.minpts, use_spheroid => c.sp) o
        FULL JOIN (SELECT * FROM dbscan_oracle p WHERE (p.tbl, p.d, p.sp) = (c.tbl, c.d, c.sp)) p USING (id)
        WHERE o.cluster IS DISTINCT FROM p.cluster OR o.is_core IS DISTINCT FROM p.is_core) AS differ,
       (SELECT format('%s clusters, %s core, %s border, %s noise', count(DISTINCT cluster),
                      count(*) FILTER (WHERE is_core), count(*) FILTER (WHERE NOT is_core AND cluster IS NOT NULL),
                      count(*) FILTER (WHERE cluster IS NULL))
        FROM dbscan_oracle p WHERE (p.tbl, p.d, p.sp) = (c.tbl, c.d, c.sp)) AS oracle
FROM dbscan_cases c;
-- the rows 500 m apart decide whether their ends are core: some have
-- exactly minpts rows within d
SELECT count(*) > 0 AS core_at_d_exactly FROM dbscan_oracle o
JOIN eps_neighbor_counts('gg', '{geog}', 500) c USING (id)
WHERE o.d = 500 AND c.n + 1 = 125 AND o.is_core;
SELECT count(*) AS dbscan_sql_differ FROM dbscan_sql('SELECT id, geog FROM gg', 60, 3) o
FULL JOIN (SELECT * FROM dbscan_oracle WHERE d = 60 AND sp) p USING (id)
WHERE o.cluster IS DISTINCT FROM p.cluster OR o.is_core IS DISTINCT FROM p.is_core;
RESET client_min_messages;
SELECT * FROM pg_temp.explain_analyze($$SELECT * FROM dbscan('gg', '{geog}', 500, 125)$$);

-- kNN ranks on the sphere, as PostGIS's <-> does
SELECT count(*) AS knn_diff FROM (
    SELECT q, r, rank FROM knn_join('gsmall', 'gg', '{geog}', 4)
    EXCEPT
    SELECT a.id, x.id, x.rk::int FROM gsmall a CROSS JOIN LATERAL (
        SELECT b.id, row_number() OVER (ORDER BY a.geog <-> b.geog, b.id) AS rk
        FROM gg b WHERE b.geog IS NOT NULL ORDER BY a.geog <-> b.geog, b.id LIMIT 4) x) d;
SELECT max(abs(k.dist - ST_Distance(a.geog, b.geog, false))) < 1e-7 AS knn_dist_matches
FROM knn_selfjoin('gpole', '{geog}', 3) k JOIN gpole a ON a.id = k.a JOIN gpole b ON b.id = k.b;

-- errors
\set VERBOSITY sqlstate
SELECT count(*) FROM knn_join('gsmall', 'gg', '{geog}', 4, use_spheroid => true);
SELECT count(*) FROM eps_selfjoin('gg', '{geog}', 500, metric => 'cosine');
SELECT count(*) FROM dbscan('gg', '{geog}', 500, 3, metric => 'cosine');
CREATE TABLE gplain (id int PRIMARY KEY, x float8, y float8);
INSERT INTO gplain VALUES (1, 0, 0), (2, 1, 1);
SELECT count(*) FROM eps_selfjoin('gplain', '{x,y}', 2, use_spheroid => false);
CREATE TABLE ggeom (id int PRIMARY KEY, geog geometry(Point, 4326));
INSERT INTO ggeom VALUES (1, 'SRID=4326;POINT(10 50)');
SELECT count(*) FROM eps_join('ggeom', 'gg', '{geog}', 500);
CREATE TABLE gmixed (id int PRIMARY KEY, geog geography);
INSERT INTO gmixed VALUES (1, 'SRID=4326;POINT(10 50)'), (2, 'SRID=4269;POINT(10 50)');
SELECT count(*) FROM eps_selfjoin('gmixed', '{geog}', 500);
CREATE TABLE gline (id int PRIMARY KEY, geog geography(LineString, 4326));
SELECT count(*) FROM eps_selfjoin('gline', '{geog}', 500);
\set VERBOSITY default
-- NULL and empty points are skipped, as NULL coordinates; an untyped
-- column's line is PostGIS's own error
CREATE TABLE gnull (id int PRIMARY KEY, geog geography);
INSERT INTO gnull VALUES (1, 'SRID=4326;POINT(10 50)'), (2, 'SRID=4326;POINT(10 50.001)'),
    (3, NULL), (4, 'SRID=4326;POINT EMPTY');
SELECT a, b, round(dist::numeric, 6) AS dist FROM eps_selfjoin('gnull', '{geog}', 200);
INSERT INTO gnull VALUES (5, 'SRID=4326;LINESTRING(10 50, 11 50)');
SELECT count(*) FROM eps_selfjoin('gnull', '{geog}', 200);
-- another spheroid: GRS 80 (NAD83), from spatial_ref_sys
CREATE TABLE gnad (id int PRIMARY KEY, geog geography(Point, 4269));
INSERT INTO gnad SELECT id, ST_SetSRID(geog::geometry, 4269)::geography FROM gg WHERE id <= 800 OR id > 10000;
SELECT count(*) AS nad83_diff FROM (
    (SELECT least(a, b), greatest(a, b) FROM eps_selfjoin('gnad', '{geog}', 500)
     EXCEPT SELECT a.id, b.id FROM gnad a JOIN gnad b ON a.id < b.id AND ST_DWithin(a.geog, b.geog, 500))
    UNION ALL
    (SELECT a.id, b.id FROM gnad a JOIN gnad b ON a.id < b.id AND ST_DWithin(a.geog, b.geog, 500)
     EXCEPT SELECT least(a, b), greatest(a, b) FROM eps_selfjoin('gnad', '{geog}', 500))) d;
-- keys of any type: a text key per row, the pairs and the kNN (ties by key) as by ids
CREATE TABLE gkey AS SELECT 'site-' || lpad(id::text, 6, '0') AS k, id, geog FROM gnad;
ALTER TABLE gkey ADD PRIMARY KEY (k);
SELECT count(*) AS keyed_pairs_diff FROM (
    (SELECT a, b FROM eps_selfjoin('gkey', '{geog}', 500, key => NULL::text)
     EXCEPT ALL SELECT 'site-' || lpad(a::text, 6, '0'), 'site-' || lpad(b::text, 6, '0') FROM eps_selfjoin('gnad', '{geog}', 500))
    UNION ALL
    (SELECT 'site-' || lpad(a::text, 6, '0'), 'site-' || lpad(b::text, 6, '0') FROM eps_selfjoin('gnad', '{geog}', 500)
     EXCEPT ALL SELECT a, b FROM eps_selfjoin('gkey', '{geog}', 500, key => NULL::text))) d;
SELECT count(*) AS keyed_knn_diff FROM (
    (SELECT a, b, rank FROM knn_selfjoin('gkey', '{geog}', 3, key => NULL::text)
     EXCEPT ALL SELECT 'site-' || lpad(a::text, 6, '0'), 'site-' || lpad(b::text, 6, '0'), rank FROM knn_selfjoin('gnad', '{geog}', 3))
    UNION ALL
    (SELECT 'site-' || lpad(a::text, 6, '0'), 'site-' || lpad(b::text, 6, '0'), rank FROM knn_selfjoin('gnad', '{geog}', 3)
     EXCEPT ALL SELECT a, b, rank FROM knn_selfjoin('gkey', '{geog}', 3, key => NULL::text))) d;
DROP TABLE gkey;
DROP FUNCTION geo_dbscan_oracle;
DROP TABLE eline, gg, gsmall, gpole, gglobe, gplain, ggeom, gmixed, gline, gnull, gnad;
