-- kNN against the LATERAL ... ORDER BY distance, id LIMIT k formulation on
-- random data (uniform, a dense cluster, exact duplicates), distances
-- included: EXCEPT both ways must be empty.
SELECT setseed(0.4242);
CREATE TABLE kr (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO kr SELECT i, random() * 100, random() * 100, random() * 100 FROM generate_series(1, 1500) i;
INSERT INTO kr SELECT 1500 + i, 30 + random() * 0.2, 30 + random() * 0.2, 30 + random() * 0.2 FROM generate_series(1, 300) i;
INSERT INTO kr SELECT 1800 + id, x, y, z FROM kr WHERE id <= 50;
CREATE TABLE kq (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO kq SELECT i, random() * 120 - 10, random() * 120 - 10, random() * 120 - 10 FROM generate_series(1, 400) i;
INSERT INTO kq SELECT 400 + i, 30 + random() * 0.2, 30 + random() * 0.2, 30 + random() * 0.2 FROM generate_series(1, 50) i;

CREATE TEMP TABLE lat_join AS
    SELECT q.id AS q, n.id AS r, n.rank::int, n.dist
    FROM kq q, LATERAL (
        SELECT r.id, row_number() OVER (ORDER BY d.s, r.id) AS rank, sqrt(d.s) AS dist
        FROM kr r, LATERAL (SELECT (q.x - r.x) * (q.x - r.x) + (q.y - r.y) * (q.y - r.y) + (q.z - r.z) * (q.z - r.z) AS s) d
        ORDER BY d.s, r.id LIMIT 15) n;
SELECT count(*) AS lateral_rows FROM lat_join;
SELECT count(*) AS differ FROM (
    (TABLE lat_join EXCEPT SELECT * FROM knn_join('kq', 'kr', '{x,y,z}', 15))
    UNION ALL
    (SELECT * FROM knn_join('kq', 'kr', '{x,y,z}', 15) EXCEPT TABLE lat_join)) d;

-- self join, k = 40 (max-heap buffers), against LATERAL excluding the row
CREATE TEMP TABLE lat_self AS
    SELECT a.id AS a, n.id AS b, n.rank::int, n.dist
    FROM kr a, LATERAL (
        SELECT b.id, row_number() OVER (ORDER BY d.s, b.id) AS rank, sqrt(d.s) AS dist
        FROM kr b, LATERAL (SELECT (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) + (a.z - b.z) * (a.z - b.z) AS s) d
        WHERE b.id <> a.id
        ORDER BY d.s, b.id LIMIT 40) n
    WHERE a.id % 7 = 0;
SELECT count(*) AS lateral_rows FROM lat_self;
SELECT count(*) AS differ FROM (
    (TABLE lat_self EXCEPT SELECT * FROM knn_selfjoin('kr', '{x,y,z}', 40) WHERE a % 7 = 0)
    UNION ALL
    (SELECT * FROM knn_selfjoin('kr', '{x,y,z}', 40) WHERE a % 7 = 0 EXCEPT TABLE lat_self)) d;

-- 9-D uses brute force by default: same check
CREATE TABLE k9 (id int PRIMARY KEY, v float8[]);
INSERT INTO k9 SELECT i, ARRAY(SELECT random() FROM generate_series(1, 9) WHERE i > 0) FROM generate_series(1, 600) i;
CREATE TEMP TABLE lat9 AS
    SELECT a.id AS a, n.id AS b, n.rank::int, n.dist
    FROM k9 a, LATERAL (
        SELECT b.id, row_number() OVER (ORDER BY d.s, b.id) AS rank, sqrt(d.s) AS dist
        FROM k9 b, LATERAL (SELECT sum((a.v[i] - b.v[i]) * (a.v[i] - b.v[i]) ORDER BY i) AS s FROM generate_series(1, 9) i) d
        WHERE b.id <> a.id
        ORDER BY d.s, b.id LIMIT 5) n
    WHERE a.id <= 100;
SELECT count(*) AS differ FROM (
    (TABLE lat9 EXCEPT SELECT * FROM knn_selfjoin('k9', '{v}', 5) WHERE a <= 100)
    UNION ALL
    (SELECT * FROM knn_selfjoin('k9', '{v}', 5) WHERE a <= 100 EXCEPT TABLE lat9)) d;
