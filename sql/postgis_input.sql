-- PostGIS point columns as input (no build dependency: found at run time),
-- with PostGIS's own meaning: planar distance in the SRID's units, one
-- SRID per join; against ST_DWithin / ST_3DDWithin.
SET client_min_messages = warning;	-- clustering_postgis may have created it
CREATE EXTENSION IF NOT EXISTS postgis;
RESET client_min_messages;
SELECT setseed(0.3);
CREATE TABLE gp (id int PRIMARY KEY, geom geometry(Point, 3857));
INSERT INTO gp SELECT i, ST_SetSRID(ST_MakePoint(random() * 1000, random() * 1000), 3857)
FROM generate_series(1, 3000) i;
-- an empty point and a NULL: skipped, as NULL coordinates
INSERT INTO gp VALUES (3001, 'SRID=3857;POINT EMPTY'), (3002, NULL);
-- an unconstrained geometry column: its SRID comes from its rows
CREATE TABLE gq (id int PRIMARY KEY, g geometry);
INSERT INTO gq SELECT i, ST_SetSRID(ST_MakePoint(random() * 1000, random() * 1000), 3857)
FROM generate_series(1, 2000) i;
CREATE TABLE gz (id int PRIMARY KEY, g geometry(PointZ, 3857));
INSERT INTO gz SELECT i, ST_SetSRID(ST_MakePoint(random() * 100, random() * 100, random() * 100), 3857)
FROM generate_series(1, 2000) i;

SELECT count(*) AS diff_selfjoin FROM (
    (SELECT a, b FROM eps_selfjoin('gp', '{geom}', 20)
     EXCEPT SELECT a.id, b.id FROM gp a JOIN gp b ON a.id < b.id AND ST_DWithin(a.geom, b.geom, 20))
    UNION ALL
    (SELECT a.id, b.id FROM gp a JOIN gp b ON a.id < b.id AND ST_DWithin(a.geom, b.geom, 20)
     EXCEPT SELECT a, b FROM eps_selfjoin('gp', '{geom}', 20))) d;
SELECT (SELECT count(*) FROM eps_join('gq', 'gp', '{g}', 20, s_cols => '{geom}'))
     = (SELECT count(*) FROM gq a JOIN gp b ON ST_DWithin(a.g, b.geom, 20)) AS join_count,
       (SELECT count(*) FROM (SELECT r, s FROM eps_join('gq', 'gp', '{g}', 20, s_cols => '{geom}')
        EXCEPT SELECT a.id, b.id FROM gq a JOIN gp b ON ST_DWithin(a.g, b.geom, 20)) d) AS join_extra;
-- the distance is PostGIS's to the last bit
SELECT count(*) AS dist_differs FROM eps_join('gq', 'gp', '{g}', 20, s_cols => '{geom}') j
JOIN gq ON gq.id = j.r JOIN gp ON gp.id = j.s WHERE j.dist <> ST_Distance(gq.g, gp.geom);
SELECT (SELECT sum(n) FROM eps_join_counts('gq', 'gp', '{g}', 20, s_cols => '{geom}'))
     = (SELECT count(*) FROM gq a JOIN gp b ON ST_DWithin(a.g, b.geom, 20)) AS counts_sum;
-- PointZ: three dimensions, as ST_3DDWithin
SELECT (SELECT count(*) FROM eps_selfjoin('gz', '{g}', 5))
     = (SELECT count(*) FROM gz a JOIN gz b ON a.id < b.id AND ST_3DDWithin(a.g, b.g, 5)) AS z_count;
-- kNN and DBSCAN read it the same way
SELECT count(*) AS knn_rows FROM knn_join('gq', 'gp', '{g}', 3, ref_cols => '{geom}');
-- (the same noise, and the core rows' clusters one-to-one: a border row
-- may join either of two clusters in PostGIS, by row order)
SELECT count(*) FILTER (WHERE (d.cluster IS NULL) <> (p.cid IS NULL)) AS noise_differs,
       count(DISTINCT d.cluster) > 10 AS many_clusters,
       count(DISTINCT (d.cluster, p.cid)) FILTER (WHERE d.is_core) =
           count(DISTINCT d.cluster) FILTER (WHERE d.is_core) AND
       count(DISTINCT d.cluster) FILTER (WHERE d.is_core) =
           count(DISTINCT p.cid) FILTER (WHERE d.is_core) AS same_core_partition
FROM dbscan('gp', '{geom}', 20, 4) d
JOIN (SELECT id, ST_ClusterDBSCAN(geom, 20, 4) OVER (ORDER BY id) AS cid FROM gp WHERE NOT ST_IsEmpty(geom)) p
  ON p.id = d.id;
-- the _sql forms: a query returning (id, geometry) is read the same way
SELECT (SELECT count(*) FROM eps_selfjoin_sql('SELECT id, geom FROM gp', 20))
     = (SELECT count(*) FROM gp a JOIN gp b ON a.id < b.id AND ST_DWithin(a.geom, b.geom, 20)) AS sql_selfjoin,
       (SELECT count(*) FROM eps_join_sql('SELECT id, g FROM gq WHERE id <= 500', 'SELECT id, geom FROM gp;', 20))
     = (SELECT count(*) FROM gq a JOIN gp b ON ST_DWithin(a.g, b.geom, 20) WHERE a.id <= 500) AS sql_join;
-- a PointZ column selected as it is: 3-D, as ST_3DDWithin; computed (no
-- type modifier), 2-D, as ST_DWithin
SELECT (SELECT count(*) FROM eps_selfjoin_sql('SELECT id, g FROM gz', 5))
     = (SELECT count(*) FROM gz a JOIN gz b ON a.id < b.id AND ST_3DDWithin(a.g, b.g, 5)) AS sql_z,
       (SELECT count(*) FROM eps_selfjoin_sql('SELECT id, g::geometry FROM gz', 5))
     = (SELECT count(*) FROM gz a JOIN gz b ON a.id < b.id AND ST_DWithin(a.g, b.g, 5)) AS sql_2d;
-- restriction reads only those rows
SELECT (SELECT count(*) FROM eps_join('gq', 'gp', '{g}', 20, s_cols => '{geom}') WHERE r = 5)
     = (SELECT count(*) FROM gq a JOIN gp b ON ST_DWithin(a.g, b.geom, 20) WHERE a.id = 5) AS restricted;

-- errors: SRIDs differ between the tables, or within one; not points
CREATE TABLE g4326 (id int PRIMARY KEY, g geometry(Point, 4326));
INSERT INTO g4326 VALUES (1, 'SRID=4326;POINT(1 1)');
SELECT * FROM eps_join('g4326', 'gp', '{g}', 1, s_cols => '{geom}');
CREATE TABLE gmix (id int PRIMARY KEY, g geometry);
INSERT INTO gmix VALUES (1, 'SRID=4326;POINT(1 1)'), (2, 'SRID=3857;POINT(1 1)');
SELECT * FROM eps_selfjoin('gmix', '{g}', 1);
-- the same through the _sql forms: SRIDs mixed in a query, or differing
-- between the two queries of a join
SELECT * FROM eps_selfjoin_sql('SELECT id, g FROM gmix', 1);
SELECT * FROM eps_join_sql('SELECT id, g FROM g4326', 'SELECT id, geom FROM gp', 1);
SELECT * FROM knn_join_sql('SELECT id, geom FROM gp', 'SELECT id, g FROM g4326', 1);
CREATE TABLE gpoly (id int PRIMARY KEY, g geometry(Polygon));
SELECT * FROM eps_selfjoin('gpoly', '{g}', 1);
SELECT * FROM eps_selfjoin_sql('SELECT id, g FROM gpoly', 1);
CREATE TABLE gany (id int PRIMARY KEY, g geometry);
INSERT INTO gany VALUES (1, 'LINESTRING(0 0, 1 1)');
SELECT * FROM eps_selfjoin('gany', '{g}', 1);
-- keys of any type: a uuid key on a geometry column, against PostGIS
CREATE TABLE gkeyed AS SELECT md5(id::text)::uuid AS k, geom FROM gp;
ALTER TABLE gkeyed ADD PRIMARY KEY (k);
SELECT count(*) AS keyed_diff FROM (
    (SELECT least(a, b), greatest(a, b) FROM eps_selfjoin('gkeyed', '{geom}', 30, key => NULL::uuid)
     EXCEPT ALL SELECT a.k, b.k FROM gkeyed a JOIN gkeyed b ON a.k < b.k AND ST_DWithin(a.geom, b.geom, 30))
    UNION ALL
    (SELECT a.k, b.k FROM gkeyed a JOIN gkeyed b ON a.k < b.k AND ST_DWithin(a.geom, b.geom, 30)
     EXCEPT ALL SELECT least(a, b), greatest(a, b) FROM eps_selfjoin('gkeyed', '{geom}', 30, key => NULL::uuid))) d;
SELECT count(*) AS keyed_pairs FROM eps_selfjoin_sql('SELECT k, geom FROM gkeyed', 30, key => NULL::uuid);
DROP TABLE gkeyed;
-- (geography: geography.sql)
DROP TABLE gp, gq, gz, g4326, gmix, gpoly, gany;
