-- Row estimates: eps_selfjoin from a block sample of the table, kNN joins
-- from k times the query rows; a NOTICE when eps covers most of the data.
CREATE TABLE e_unif AS SELECT i AS id, ((i * 7919 % 20011) / 200.0)::float8 AS x,
    ((i * 104729 % 19997) / 200.0)::float8 AS y, ((i * 7919 % 20011) / 200.0)::numeric AS xn
    FROM generate_series(1, 20000) i;
-- stored in x order: two neighbours often share a block
CREATE TABLE e_sorted AS SELECT * FROM e_unif ORDER BY x, y;
ANALYZE e_unif, e_sorted;
CREATE FUNCTION pg_temp.plan_rows(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
    RETURN (j -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;
CREATE FUNCTION pg_temp.close(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE est float8; n bigint;
BEGIN
    est := pg_temp.plan_rows(q);
    EXECUTE 'SELECT count(*) FROM (' || q || ') s' INTO n;
    RETURN CASE WHEN est BETWEEN n / 2.0 AND n * 2.0 THEN 'within 2x' ELSE 'off' END
        || ' (' || n || ' rows)';
END $$;
SELECT pg_temp.close($$SELECT * FROM eps_selfjoin('e_unif', '{x,y}', 2, 'id')$$);
SELECT pg_temp.close($$SELECT * FROM eps_selfjoin('e_unif', '{x,y}', 5, 'id', true)$$);
SELECT pg_temp.close($$SELECT * FROM eps_selfjoin('e_sorted', '{x,y}', 2, 'id')$$);
SELECT pg_temp.close($$SELECT * FROM eps_selfjoin('e_sorted', '{x,y}', 0.5, 'id')$$);
-- eps_join: a block sample of each table; eps_join_counts: a row per r row
SELECT pg_temp.close($$SELECT * FROM eps_join('e_unif', 'e_sorted', '{x,y}', 2, 'id', 'id')$$);
SELECT pg_temp.close($$SELECT * FROM eps_join('e_sorted', 'e_sorted', '{x,y}', 0.5, 'id', 'id')$$);
-- two tables stored in the same order: their samples must not take the same blocks
CREATE TABLE e_sorted2 AS SELECT * FROM e_sorted;
ANALYZE e_sorted2;
SELECT pg_temp.close($$SELECT * FROM eps_join('e_sorted', 'e_sorted2', '{x,y}', 0.5, 'id', 'id')$$);
SELECT pg_temp.plan_rows($$SELECT * FROM eps_join_counts('e_unif', 'e_sorted', '{x,y}', 2, 'id', 'id')$$);
-- kNN: k per query row, k capped at the references
SELECT pg_temp.plan_rows($$SELECT * FROM knn_join('e_unif', 'e_sorted', '{x,y}', 7, 'id', 'id')$$);
SELECT pg_temp.plan_rows($$SELECT * FROM knn_selfjoin('e_unif', '{x,y}', 3, 'id')$$);
-- not estimated: the _sql forms, views, non-constant arguments, numeric columns
CREATE VIEW e_view AS SELECT * FROM e_unif;
SELECT pg_temp.plan_rows($$SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM e_unif', 2)$$);
SELECT pg_temp.plan_rows($$SELECT * FROM eps_selfjoin('e_view', '{x,y}', 2, 'id')$$);
SELECT pg_temp.plan_rows($$SELECT * FROM eps_selfjoin('e_unif', '{xn,y}', 2, 'id')$$);
SELECT pg_temp.plan_rows($$SELECT * FROM (VALUES (2.0)) v(e), LATERAL eps_selfjoin('e_unif', '{x,y}', v.e, 'id')$$) > 0;
-- a tiny table is read whole: the estimate is the count
CREATE TABLE e_tiny (id int PRIMARY KEY, x float8, y float8);
INSERT INTO e_tiny VALUES (1, 0, 0), (2, 1, 0), (3, 0, 1), (4, 3, 3), (5, 3.5, 3), (6, 10, 10);
SELECT pg_temp.plan_rows($$SELECT * FROM eps_selfjoin('e_tiny', '{x,y}', 1)$$);
-- no privilege, no sample (and the query's own error at run time)
CREATE ROLE gj_est;
SET ROLE gj_est;
SELECT pg_temp.plan_rows($$SELECT * FROM eps_selfjoin('e_tiny', '{x,y}', 1)$$);
SELECT * FROM eps_selfjoin('e_tiny', '{x,y}', 1);
RESET ROLE;
DROP ROLE gj_est;
-- eps wider than the data (degrees against a radius in metres): a NOTICE
-- before the first row
SELECT count(*) FROM (SELECT * FROM eps_selfjoin('e_unif', '{x,y}', 1000, 'id') LIMIT 1) s;
SELECT count(*) FROM eps_selfjoin('e_unif', '{x,y}', 1000, 'id') WHERE a = 1;
