-- Equality and = ANY quals on the output's id columns restrict the query
-- side of the join; the rows must be exactly those the filter keeps.
\i sql/include/explain.sql
CREATE TABLE r_pts (id int, x float8, y float8);
-- ids repeat: two rows with one id pair up with each other
INSERT INTO r_pts SELECT i % 700, (i * 7919 % 3001) / 300.0, (i * 104729 % 2999) / 300.0
    FROM generate_series(1, 2000) i;
INSERT INTO r_pts VALUES (5000, 1, 1), (5001, 1, 1);
ANALYZE r_pts;

-- each restricted query against the same query with the custom scan off,
-- which filters the function scan's full output
CREATE FUNCTION pg_temp.same_rows(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; d bigint;
BEGIN
    SET LOCAL gpujoin.custom_scan = off;
    EXECUTE 'CREATE TEMP TABLE r_off ON COMMIT DROP AS ' || q;
    SET LOCAL gpujoin.custom_scan = on;
    EXECUTE 'CREATE TEMP TABLE r_on ON COMMIT DROP AS ' || q;
    SELECT count(*) INTO n FROM r_on;
    SELECT count(*) INTO d FROM ((TABLE r_on EXCEPT ALL TABLE r_off) UNION ALL (TABLE r_off EXCEPT ALL TABLE r_on)) x;
    DROP TABLE r_off; DROP TABLE r_on;
    RETURN n || ' rows, ' || d || ' differ';
END $$;
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE a = 42$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE b = 42$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id', true) WHERE a = 42$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id', true) WHERE b = 42$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE a IN (1, 2, 3, 699, 5000, 9999)$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id', true) WHERE b = ANY ('{7,8,8,NULL}'::bigint[])$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE a = ANY (ARRAY(SELECT g FROM generate_series(0, 699, 3) g))$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE 17 = a AND dist > 0.1$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE a = 17 AND b = 200$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM r_pts', 1.5) WHERE a = 5000$$);
SELECT pg_temp.same_rows($$SELECT * FROM knn_join('r_pts', 'r_pts', '{x,y}', 4, 'id', 'id') WHERE q = 42$$);
SELECT pg_temp.same_rows($$SELECT * FROM knn_join('r_pts', 'r_pts', '{x,y}', 4, 'id', 'id') WHERE q IN (1, 2, 5001)$$);
SELECT pg_temp.same_rows($$SELECT * FROM knn_join_sql('SELECT id, x, y FROM r_pts', 'SELECT id, x, y FROM r_pts WHERE id IS NOT NULL', 3) WHERE q = 9$$);
SELECT pg_temp.same_rows($$SELECT * FROM knn_selfjoin('r_pts', '{x,y}', 5, 'id') WHERE a = 42$$);
SELECT pg_temp.same_rows($$SELECT * FROM knn_selfjoin_sql('SELECT id, x, y FROM r_pts', 5) WHERE a = ANY ('{1,2,3}')$$);
-- a filter on the reference id cannot restrict a kNN join: it stays a filter
SELECT pg_temp.same_rows($$SELECT * FROM knn_join('r_pts', 'r_pts', '{x,y}', 4, 'id', 'id') WHERE r = 42$$);
-- nothing listed: no rows
SELECT count(*) FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE a = NULL;
SELECT count(*) FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE a = ANY ('{}');
SELECT count(*) FROM knn_selfjoin('r_pts', '{x,y}', 5, 'id') WHERE a = 123456;
-- a few rows directly
SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.05, 'id', true) WHERE a = 5000 ORDER BY b, dist;
SELECT * FROM knn_join('r_pts', 'r_pts', '{x,y}', 3, 'id', 'id') WHERE q = 5001 ORDER BY rank;

-- the plan says so; the qual is still checked on every row
SET gpujoin.device = cpu;
EXPLAIN (COSTS OFF) SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE a = 42;
EXPLAIN (COSTS OFF) SELECT * FROM knn_join('r_pts', 'r_pts', '{x,y}', 4, 'id', 'id') WHERE q = ANY ('{1,2}');
SELECT * FROM pg_temp.explain_analyze($$SELECT * FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE b = 42$$);
PREPARE rq(int) AS SELECT count(*) FROM eps_selfjoin('r_pts', '{x,y}', 0.3, 'id') WHERE a = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE rq(42);
EXECUTE rq(42);
RESET plan_cache_mode;
DEALLOCATE rq;
RESET gpujoin.device;
