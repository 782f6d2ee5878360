-- kNN joins: API, ties, k above the reference count, distance-0 duplicates,
-- self exclusion, NULL/NaN rows, arrays, the _sql forms, both search methods,
-- and every argument error with its SQLSTATE.
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- a 5 x 4 lattice of unit spacing: many equal distances, ties on the id
CREATE TABLE knn_lat (id int PRIMARY KEY, x float8, y float8, v float8[]);
INSERT INTO knn_lat SELECT i, i % 5, i / 5, ARRAY[i % 5, i / 5] FROM generate_series(0, 19) i;
CREATE TABLE knn_qs (qid bigint PRIMARY KEY, x float8, y float8);
INSERT INTO knn_qs VALUES (100, 0, 0), (101, 2.5, 1.5), (102, -1000, 7), (103, 2, 1);

SELECT * FROM knn_join('knn_qs', 'knn_lat', '{x,y}', 4) ORDER BY q, rank;
-- ranks are 1..k in (dist, id) order, every list has k rows
SELECT q, count(*), bool_and(ok) AS ranked FROM (
    SELECT q, (dist, r) >= lag((dist, r), 1, (0::float8, -1::bigint)) OVER (PARTITION BY q ORDER BY rank) AS ok
    FROM knn_join('knn_qs', 'knn_lat', '{x,y}', 6)) s GROUP BY q ORDER BY q;
-- self join: a row is never its own neighbour
SELECT * FROM knn_selfjoin('knn_lat', '{x,y}', 3) WHERE a IN (0, 7, 19) ORDER BY a, rank;
SELECT count(*) AS self_pairs FROM knn_selfjoin('knn_lat', '{x,y}', 5) WHERE a = b;
-- k above the number of references: all of them (self: all but itself)
SELECT count(*), max(rank) FROM knn_join('knn_qs', 'knn_lat', '{x,y}', 1000);
SELECT count(*), max(rank) FROM knn_selfjoin('knn_lat', '{x,y}', 1000);
SELECT count(*) FROM knn_join('knn_qs', 'knn_lat', '{x,y}', 2147483647);

-- duplicates at distance 0 are neighbours; only the row itself is excluded
CREATE TABLE knn_dup (id int PRIMARY KEY, x float8, y float8);
INSERT INTO knn_dup VALUES (1, 5, 5), (2, 5, 5), (3, 5, 5), (4, 6, 5), (5, 0, 0);
SELECT * FROM knn_selfjoin('knn_dup', '{x,y}', 3) ORDER BY a, rank;

-- arrays, ref_cols, explicit ids, the _sql forms: one answer
CREATE TABLE knn_qa (name text, num int UNIQUE, p real[], px float8, py float8);
INSERT INTO knn_qa VALUES ('a', 7, '{1,1}', 1, 1), ('b', 8, '{3.5,2}', 3.5, 2);
SELECT * FROM knn_join('knn_qa', 'knn_lat', '{p}', 2, 'num', NULL, '{v}') ORDER BY q, rank;
SELECT * FROM knn_join('knn_qa', 'knn_lat', '{px,py}', 2, 'num', 'id', '{x,y}') ORDER BY q, rank;
SELECT * FROM knn_join_sql('SELECT num, px, py FROM knn_qa', 'SELECT id, x, y FROM knn_lat', 2) ORDER BY q, rank;
SELECT count(*) AS differ FROM (
    (SELECT * FROM knn_selfjoin('knn_lat', '{x,y}', 4) EXCEPT SELECT * FROM knn_selfjoin_sql('SELECT id, v FROM knn_lat', 4))
    UNION ALL
    (SELECT * FROM knn_selfjoin_sql('SELECT id, v FROM knn_lat', 4) EXCEPT SELECT * FROM knn_selfjoin('knn_lat', '{x,y}', 4))) d;

-- knn_brute force gives the same answer as the grid
SET gpujoin.knn_method = brute;
CREATE TEMP TABLE knn_brute AS SELECT * FROM knn_join('knn_qs', 'knn_lat', '{x,y}', 7);
RESET gpujoin.knn_method;
SELECT count(*) AS differ FROM (
    (TABLE knn_brute EXCEPT SELECT * FROM knn_join('knn_qs', 'knn_lat', '{x,y}', 7))
    UNION ALL
    (SELECT * FROM knn_join('knn_qs', 'knn_lat', '{x,y}', 7) EXCEPT TABLE knn_brute)) d;

-- NULL and NaN rows are skipped on either side, with a NOTICE
CREATE TABLE knn_holes (id int PRIMARY KEY, x float8, y float8);
INSERT INTO knn_holes VALUES (1, 0, 0), (2, NULL, 1), (3, 'NaN', 1), (4, 1, 0);
SELECT * FROM knn_selfjoin('knn_holes', '{x,y}', 5) ORDER BY a, rank;
SELECT * FROM knn_join('knn_holes', 'knn_dup', '{x,y}', 1) ORDER BY q;
-- empty inputs: no rows
CREATE TABLE knn_empty (id int PRIMARY KEY, x float8, y float8);
SELECT count(*) FROM knn_join('knn_qs', 'knn_empty', '{x,y}', 3);
SELECT count(*) FROM knn_join('knn_empty', 'knn_lat', '{x,y}', 3);
SELECT count(*) FROM knn_selfjoin('knn_dup', '{x,y}', 1) WHERE a = 5;
SELECT count(*) FROM knn_selfjoin_sql('SELECT id, x, y FROM knn_dup WHERE id = 1', 3);

-- errors
SELECT pg_temp.err($$SELECT * FROM knn_join('knn_qs', 'knn_lat', '{x,y}', 0)$$);
SELECT pg_temp.err($$SELECT * FROM knn_selfjoin('knn_lat', '{x,y}', -5)$$);
SELECT pg_temp.err($$SELECT * FROM knn_join(NULL, 'knn_lat', '{x,y}', 3)$$);
SELECT pg_temp.err($$SELECT * FROM knn_join('knn_qs', NULL, '{x,y}', 3)$$);
SELECT pg_temp.err($$SELECT * FROM knn_join('knn_qs', 'knn_lat', NULL, 3)$$);
SELECT pg_temp.err($$SELECT * FROM knn_join('knn_qs', 'knn_lat', '{x,y}', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM knn_selfjoin('knn_lat', '{x,y}', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM knn_join_sql('SELECT qid, x FROM knn_qs', NULL, 3)$$);
SELECT pg_temp.err($$SELECT * FROM knn_selfjoin_sql(NULL, 3)$$);
SELECT pg_temp.err($$SELECT * FROM knn_join('knn_qs', 'knn_lat', '{x}', 3, NULL, NULL, '{x,y}')$$);
SELECT pg_temp.err($$SELECT * FROM knn_join('knn_qs', 'knn_lat', '{x,nope}', 3)$$);
SELECT pg_temp.err($$SELECT * FROM knn_join('knn_qs', 'knn_lat', '{x,y}', 3, NULL, 'nope')$$);
SELECT pg_temp.err($$SELECT * FROM knn_join('knn_qa', 'knn_lat', '{px,py}', 3)$$);
SELECT pg_temp.err($$SELECT * FROM knn_join('knn_qs', 'knn_lat', '{v}', 3)$$);
SELECT pg_temp.err($$SELECT * FROM knn_join_sql('SELECT qid, x, y FROM knn_qs', 'DELETE FROM knn_lat RETURNING id, x, y', 3)$$);
SELECT pg_temp.err($$SELECT * FROM knn_selfjoin_sql('SELECT x, id FROM knn_lat', 3)$$);
SELECT count(*) AS lat_rows_kept FROM knn_lat;
