-- eps_join, eps_join_sql, eps_join_counts(_sql): two tables against a SQL
-- join with the same float64 rule (EXCEPT both ways, distances included,
-- and row counts, since EXCEPT drops duplicates).
SELECT setseed(0.1911);
-- r: 2,500 rows over [-10, 110]^2, beyond s on every side; s: 9,000 rows in
-- [0, 100]^2 and a clump; ids repeat in s (a non-key id column).
CREATE TABLE jr (id int PRIMARY KEY, x float8, y float8);
INSERT INTO jr SELECT i, random() * 120 - 10, random() * 120 - 10 FROM generate_series(1, 2500) i;
CREATE TABLE js (sid int PRIMARY KEY, gid int, px float8, py float8);
INSERT INTO js SELECT i, i % 4000, random() * 100, random() * 100 FROM generate_series(1, 8000) i;
INSERT INTO js SELECT 8000 + i, i, 40 + random() * 0.3, 60 + random() * 0.3 FROM generate_series(1, 1000) i;
INSERT INTO jr SELECT 2500 + i, 40 + random() * 0.3, 60 + random() * 0.3 FROM generate_series(1, 50) i;
CREATE INDEX ON js (px);
ANALYZE jr, js;
-- the SQL join: an index range on px (eps plus a margin), then the rule
CREATE FUNCTION pg_temp.naive(eps float8) RETURNS TABLE (r bigint, s bigint, dist float8)
LANGUAGE sql AS $$
    SELECT jr.id, js.gid, sqrt((jr.x - js.px) * (jr.x - js.px) + (jr.y - js.py) * (jr.y - js.py))
    FROM jr JOIN js ON js.px BETWEEN jr.x - (eps + 1) AND jr.x + (eps + 1)
    WHERE (jr.x - js.px) * (jr.x - js.px) + (jr.y - js.py) * (jr.y - js.py) <= eps * eps
$$;
CREATE TEMP TABLE naive AS SELECT * FROM pg_temp.naive(1.5);
SELECT count(*) > 5000 AS enough_pairs FROM naive;
SELECT count(*) AS missing FROM (TABLE naive EXCEPT
    SELECT * FROM eps_join('jr', 'js', '{x,y}', 1.5, s_id_col => 'gid', s_cols => '{px,py}')) d;
SELECT count(*) AS extra FROM (
    SELECT * FROM eps_join('jr', 'js', '{x,y}', 1.5, s_id_col => 'gid', s_cols => '{px,py}')
    EXCEPT TABLE naive) d;
SELECT (SELECT count(*) FROM eps_join('jr', 'js', '{x,y}', 1.5, s_id_col => 'gid', s_cols => '{px,py}'))
     = (SELECT count(*) FROM naive) AS same_count;
-- the other way round (the engine indexes the other table): the same pairs
SELECT count(*) AS diff_swapped FROM (
    (SELECT s, r, dist FROM naive EXCEPT
     SELECT * FROM eps_join('js', 'jr', '{px,py}', 1.5, 'gid', NULL, '{x,y}'))
    UNION ALL
    (SELECT * FROM eps_join('js', 'jr', '{px,py}', 1.5, 'gid', NULL, '{x,y}')
     EXCEPT SELECT s, r, dist FROM naive)) d;
-- the query form, one thread and all threads
SET gpujoin.cpu_threads = 1;
SELECT count(*) AS diff_sql_1thread FROM (
    (TABLE naive EXCEPT SELECT * FROM eps_join_sql('SELECT id, x, y FROM jr', 'SELECT gid, px, py FROM js', 1.5))
    UNION ALL
    (SELECT * FROM eps_join_sql('SELECT id, x, y FROM jr', 'SELECT gid, px, py FROM js', 1.5) EXCEPT TABLE naive)) d;
RESET gpujoin.cpu_threads;
SELECT count(*) AS rows_sql FROM eps_join_sql('SELECT id, x, y FROM jr', 'SELECT gid, px, py FROM js', 1.5);
-- a small eps (brute force below the index's threshold is tested by the
-- restricted cases below; here both tables are large)
SELECT count(*) AS diff_small_eps FROM (
    (SELECT * FROM pg_temp.naive(0.05) EXCEPT
     SELECT * FROM eps_join('jr', 'js', '{x,y}', 0.05, s_id_col => 'gid', s_cols => '{px,py}'))
    UNION ALL
    (SELECT * FROM eps_join('jr', 'js', '{x,y}', 0.05, s_id_col => 'gid', s_cols => '{px,py}')
     EXCEPT SELECT * FROM pg_temp.naive(0.05))) d;

-- counts: every r row, 0 where none
SELECT count(*) AS count_diff FROM (
    SELECT jr.id, count(n.r) AS n FROM jr LEFT JOIN naive n ON n.r = jr.id GROUP BY jr.id
    EXCEPT SELECT * FROM eps_join_counts('jr', 'js', '{x,y}', 1.5, s_cols => '{px,py}')) d;
SELECT count(*) AS count_rows, count(*) FILTER (WHERE n = 0) > 0 AS some_zero,
       sum(n) = (SELECT count(*) FROM naive) AS sums_to_pairs
FROM eps_join_counts('jr', 'js', '{x,y}', 1.5, s_cols => '{px,py}');
SELECT count(*) AS count_sql_diff FROM (
    SELECT * FROM eps_join_counts('jr', 'js', '{x,y}', 1.5, s_cols => '{px,py}')
    EXCEPT SELECT * FROM eps_join_counts_sql('SELECT id, x, y FROM jr', 'SELECT sid, px, py FROM js', 1.5)) d;

-- restriction: r = ..., s = ANY (...), read from that side only (the
-- engine is chosen as without it: the one named is the CPU's here)
SET gpujoin.device = cpu;
EXPLAIN (COSTS OFF) SELECT * FROM eps_join('jr', 'js', '{x,y}', 1.5, s_cols => '{px,py}') WHERE r = 2510;
RESET gpujoin.device;
SELECT count(*) AS diff_r FROM (
    (SELECT r, s FROM eps_join('jr', 'js', '{x,y}', 1.5, s_id_col => 'gid', s_cols => '{px,py}') WHERE r = 2510
     EXCEPT SELECT r, s FROM naive WHERE r = 2510)
    UNION ALL
    (SELECT r, s FROM naive WHERE r = 2510 EXCEPT
     SELECT r, s FROM eps_join('jr', 'js', '{x,y}', 1.5, s_id_col => 'gid', s_cols => '{px,py}') WHERE r = 2510)) d;
SELECT (SELECT count(*) FROM eps_join('jr', 'js', '{x,y}', 1.5, s_id_col => 'gid', s_cols => '{px,py}')
        WHERE s = ANY ('{5,17,3000}'))
     = (SELECT count(*) FROM naive WHERE s = ANY ('{5,17,3000}')) AS same_s_restricted;
SELECT * FROM eps_join_counts('jr', 'js', '{x,y}', 1.5, s_cols => '{px,py}') WHERE r IN (1, 2510) ORDER BY r;
SELECT jr.id, count(n.r) FROM jr LEFT JOIN naive n ON n.r = jr.id WHERE jr.id IN (1, 2510) GROUP BY 1 ORDER BY 1;

-- LATERAL: eps from the outer row (count(j.*) uses the whole row, which the
-- custom scan's tuple is not: the function scan runs, same rows)
EXPLAIN (COSTS OFF) SELECT count(j.*) FROM eps_join('jr', 'js', '{x,y}', 1, s_cols => '{px,py}') j;
SELECT e.eps, count(j.*) = (SELECT count(*) FROM pg_temp.naive(e.eps)) AS same
FROM (VALUES (0.5::float8), (1.0)) e(eps),
     LATERAL eps_join('jr', 'js', '{x,y}', e.eps, s_id_col => 'gid', s_cols => '{px,py}') j
GROUP BY e.eps ORDER BY e.eps;

-- one table on both sides: every ordered pair and every (a, a)
SELECT (SELECT count(*) FROM eps_join('jr', 'jr', '{x,y}', 1.5))
     = 2 * (SELECT count(*) FROM eps_selfjoin('jr', '{x,y}', 1.5)) + (SELECT count(*) FROM jr) AS self_as_join;
SELECT count(*) AS self_pairs FROM eps_join('jr', 'jr', '{x,y}', 1.5) WHERE r = s AND dist = 0;

-- exactly eps apart and duplicates on both sides: multiples of 0.5
CREATE TABLE gr (id int PRIMARY KEY, x float8, y float8);
CREATE TABLE gs (id int PRIMARY KEY, x float8, y float8);
INSERT INTO gr SELECT i, (i % 7) * 0.5, (i / 7 % 5) * 0.5 FROM generate_series(0, 69) i;
INSERT INTO gs SELECT i, (i % 9) * 0.5, (i / 9 % 4) * 0.5 FROM generate_series(0, 71) i;
SELECT count(*) AS diff_exact FROM (
    (SELECT gr.id, gs.id, sqrt((gr.x - gs.x) * (gr.x - gs.x) + (gr.y - gs.y) * (gr.y - gs.y))
     FROM gr, gs WHERE (gr.x - gs.x) * (gr.x - gs.x) + (gr.y - gs.y) * (gr.y - gs.y) <= 0.25
     EXCEPT SELECT * FROM eps_join('gr', 'gs', '{x,y}', 0.5))
    UNION ALL
    (SELECT * FROM eps_join('gr', 'gs', '{x,y}', 0.5) EXCEPT
     SELECT gr.id, gs.id, sqrt((gr.x - gs.x) * (gr.x - gs.x) + (gr.y - gs.y) * (gr.y - gs.y))
     FROM gr, gs WHERE (gr.x - gs.x) * (gr.x - gs.x) + (gr.y - gs.y) * (gr.y - gs.y) <= 0.25)) d;
SELECT count(*) AS rows_exact, count(*) FILTER (WHERE dist = 0.5) AS at_eps FROM eps_join('gr', 'gs', '{x,y}', 0.5);
SELECT count(*) AS rows_naive FROM gr, gs WHERE (gr.x - gs.x) * (gr.x - gs.x) + (gr.y - gs.y) * (gr.y - gs.y) <= 0.25;

-- NULL and NaN rows on either side are skipped, with the NOTICE
CREATE TABLE nr (id int, x float8, y float8);
CREATE TABLE ns (id int, x float8, y float8);
INSERT INTO nr VALUES (1, 0, 0), (2, NULL, 0), (3, 'NaN', 0), (NULL, 0, 0), (4, 1, 1);
INSERT INTO ns VALUES (10, 0, 0.5), (11, 'Infinity', 0), (12, 0, NULL), (13, 1, 1.5);
SELECT * FROM eps_join('nr', 'ns', '{x,y}', 1, 'id', 'id') ORDER BY r, s;
SELECT * FROM eps_join_counts('nr', 'ns', '{x,y}', 1, 'id', 'id') ORDER BY r;

-- empty sides
CREATE TABLE je (id int PRIMARY KEY, x float8, y float8);
SELECT count(*) AS r_empty FROM eps_join('je', 'jr', '{x,y}', 1);
SELECT count(*) AS s_empty FROM eps_join('jr', 'je', '{x,y}', 1);
SELECT count(*) AS count_rows, max(n) AS max_n FROM eps_join_counts('jr', 'je', '{x,y}', 1);
SELECT count(*) AS restricted_none FROM eps_join('jr', 'js', '{x,y}', 1, s_cols => '{px,py}') WHERE r = -5;

-- cosine, as eps_selfjoin's: 1 - cosine similarity
SELECT r, s, round(dist::numeric, 12) AS dist
FROM eps_join_sql('VALUES (1, 1.0, 0.0), (2, 0.0, 3.0)', 'VALUES (7, 2.0, 0.1), (8, -1.0, 0.0)', 0.01, 'cosine')
ORDER BY r, s;

-- errors
SELECT * FROM eps_join('jr', 'js', '{x,y}', 0, s_cols => '{px,py}');
SELECT * FROM eps_join('jr', 'js', '{x,y}', 'NaN', s_cols => '{px,py}');
SELECT * FROM eps_join(NULL, 'js', '{x,y}', 1);
SELECT * FROM eps_join('jr', 'js', '{x,y}', 1);
SELECT * FROM eps_join('jr', 'js', '{x,y}', 1, s_cols => '{px}');
SELECT * FROM eps_join('jr', 'js', '{x,y}', 1, s_cols => '{px,py}', metric => 'l1');
SELECT * FROM eps_join_sql('SELECT id, x, y FROM jr', 'DELETE FROM js RETURNING sid, px, py', 1);
SELECT * FROM eps_join_sql('SELECT id, x, y FROM jr', NULL, 1);
