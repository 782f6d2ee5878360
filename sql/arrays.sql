-- Float array columns: same answers as separate columns.
SELECT setseed(0.42);
CREATE TABLE ac (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO ac SELECT i, random() * 10, random() * 10, random() * 10 FROM generate_series(1, 600) i;
CREATE TABLE aa AS SELECT id, ARRAY[x, y, z] AS p, ARRAY[x, y, z]::real[] AS p4 FROM ac;
ALTER TABLE aa ADD PRIMARY KEY (id);
SELECT count(*) FROM eps_selfjoin('ac', '{x,y,z}', 1.0);
SELECT count(*) FROM (
    (SELECT * FROM eps_selfjoin('ac', '{x,y,z}', 1.0) EXCEPT SELECT * FROM eps_selfjoin('aa', '{p}', 1.0))
    UNION ALL
    (SELECT * FROM eps_selfjoin('aa', '{p}', 1.0) EXCEPT SELECT * FROM eps_selfjoin('ac', '{x,y,z}', 1.0))) d;
-- real[] is widened to float8 exactly, like a real column
CREATE TABLE ar AS SELECT id, x::real AS x, y::real AS y, z::real AS z FROM ac;
SELECT count(*) FROM (
    (SELECT * FROM eps_selfjoin('ar', '{x,y,z}', 1.0, 'id') EXCEPT SELECT * FROM eps_selfjoin('aa', '{p4}', 1.0))
    UNION ALL
    (SELECT * FROM eps_selfjoin('aa', '{p4}', 1.0) EXCEPT SELECT * FROM eps_selfjoin('ar', '{x,y,z}', 1.0, 'id'))) d;
-- 64 dimensions against the naive distance
-- (one series: random() is drawn in its order, whatever the plan)
CREATE TABLE hd AS SELECT n / 64 + 1 AS id, array_agg(r ORDER BY n) AS p
    FROM (SELECT n, random() AS r FROM generate_series(0, 300 * 64 - 1) n) s GROUP BY n / 64;
WITH naive AS (
    SELECT a.id AS a, b.id AS b,
           (SELECT sum((a.p[d] - b.p[d]) * (a.p[d] - b.p[d])) FROM generate_series(1, 64) d) AS s
    FROM hd a JOIN hd b ON a.id < b.id)
SELECT (SELECT count(*) FROM naive WHERE s <= 2.6 * 2.6) AS naive_pairs,
       (SELECT count(*) FROM eps_selfjoin('hd', '{p}', 2.6, 'id')) AS gpujoin_pairs;
-- array shape errors
CREATE TABLE bad (id int PRIMARY KEY, p float8[]);
INSERT INTO bad VALUES (1, '{0,0}'), (2, '{0,0,0}');
SELECT * FROM eps_selfjoin('bad', '{p}', 1);
TRUNCATE bad;
INSERT INTO bad VALUES (1, '{{0,0},{1,1}}');
SELECT * FROM eps_selfjoin('bad', '{p}', 1);
TRUNCATE bad;
INSERT INTO bad VALUES (1, '{}');
SELECT * FROM eps_selfjoin('bad', '{p}', 1);
