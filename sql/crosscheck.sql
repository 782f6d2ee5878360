-- Random data against a naive SQL cross join: EXCEPT both ways must be empty,
-- distances included (same float64 operations in the same order).
SELECT setseed(0.2026);
CREATE TABLE r2 (id int PRIMARY KEY, x float8, y float8);
INSERT INTO r2 SELECT i, random() * 100, random() * 100 FROM generate_series(1, 3000) i;
-- a skewed cluster on top
INSERT INTO r2 SELECT 3000 + i, 50 + random() * 0.5, 50 + random() * 0.5 FROM generate_series(1, 500) i;
CREATE TEMP TABLE naive2 AS
    SELECT a.id AS a, b.id AS b, sqrt((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)) AS dist
    FROM r2 a JOIN r2 b ON a.id < b.id
    WHERE (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) <= 2.5::float8 * 2.5::float8;
SELECT count(*) > 5000 AS enough_pairs FROM naive2;
SELECT count(*) AS missing FROM (TABLE naive2 EXCEPT SELECT * FROM eps_selfjoin('r2', '{x,y}', 2.5)) d;
SELECT count(*) AS extra FROM (SELECT * FROM eps_selfjoin('r2', '{x,y}', 2.5) EXCEPT TABLE naive2) d;
-- symmetric output is the naive join both ways
SELECT count(*) AS sym_diff FROM (
    (SELECT * FROM eps_selfjoin('r2', '{x,y}', 2.5, NULL, true)
     EXCEPT (TABLE naive2 UNION ALL SELECT b, a, dist FROM naive2))
    UNION ALL
    ((TABLE naive2 UNION ALL SELECT b, a, dist FROM naive2)
     EXCEPT SELECT * FROM eps_selfjoin('r2', '{x,y}', 2.5, NULL, true))) d;
SELECT (SELECT count(*) FROM eps_selfjoin('r2', '{x,y}', 2.5, NULL, true)) = 2 * (SELECT count(*) FROM naive2) AS sym_count;

-- 5-D, one thread and all threads
CREATE TABLE r5 (id int PRIMARY KEY, c1 float8, c2 float8, c3 float8, c4 float8, c5 float8);
INSERT INTO r5 SELECT i, random(), random(), random(), random(), random() FROM generate_series(1, 1200) i;
CREATE TEMP TABLE naive5 AS
    SELECT a.id AS a, b.id AS b,
           sqrt((a.c1 - b.c1) * (a.c1 - b.c1) + (a.c2 - b.c2) * (a.c2 - b.c2) + (a.c3 - b.c3) * (a.c3 - b.c3)
                + (a.c4 - b.c4) * (a.c4 - b.c4) + (a.c5 - b.c5) * (a.c5 - b.c5)) AS dist
    FROM r5 a JOIN r5 b ON a.id < b.id
    WHERE (a.c1 - b.c1) * (a.c1 - b.c1) + (a.c2 - b.c2) * (a.c2 - b.c2) + (a.c3 - b.c3) * (a.c3 - b.c3)
          + (a.c4 - b.c4) * (a.c4 - b.c4) + (a.c5 - b.c5) * (a.c5 - b.c5) <= 0.2::float8 * 0.2::float8;
SELECT count(*) > 500 AS enough_pairs FROM naive5;
SET gpujoin.cpu_threads = 1;
SELECT count(*) AS diff_1thread FROM (
    (TABLE naive5 EXCEPT SELECT * FROM eps_selfjoin('r5', '{c1,c2,c3,c4,c5}', 0.2))
    UNION ALL
    (SELECT * FROM eps_selfjoin('r5', '{c1,c2,c3,c4,c5}', 0.2) EXCEPT TABLE naive5)) d;
RESET gpujoin.cpu_threads;
SELECT count(*) AS diff_all_threads FROM (
    (TABLE naive5 EXCEPT SELECT * FROM eps_selfjoin('r5', '{c1,c2,c3,c4,c5}', 0.2))
    UNION ALL
    (SELECT * FROM eps_selfjoin('r5', '{c1,c2,c3,c4,c5}', 0.2) EXCEPT TABLE naive5)) d;
