-- The custom scan: rows stream out of FROM calls, LIMIT and cursors stop the
-- engine, LATERAL/EXISTS rescans, the same rows as the function scan.
\i sql/include/explain.sql
CREATE TABLE s_pts (id int PRIMARY KEY, x float8, y float8);
INSERT INTO s_pts SELECT i, (i * 7919 % 3001) / 300.0, (i * 104729 % 2999) / 300.0
    FROM generate_series(1, 3000) i;
-- 100000 rows in one cell: 5e9 pairs qualify
CREATE TABLE s_one AS SELECT i AS id, (i % 1000) * 1e-9 AS x, 0.0::float8 AS y
    FROM generate_series(1, 100000) i;
ALTER TABLE s_one ADD PRIMARY KEY (id);
ANALYZE s_pts, s_one;
SET gpujoin.device = cpu;		-- EXPLAIN names the engine

-- plans: a custom scan for FROM calls; the function scan when turned off,
-- for ORDINALITY, and in the SELECT list
EXPLAIN (COSTS OFF) SELECT * FROM eps_selfjoin('s_pts', '{x,y}', 0.1);
EXPLAIN (COSTS OFF) SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM s_pts', 0.1) WHERE dist > 0;
EXPLAIN (COSTS OFF) SELECT * FROM knn_join('s_pts', 's_pts', '{x,y}', 3);
EXPLAIN (COSTS OFF) SELECT * FROM eps_selfjoin('s_pts', '{x,y}', 0.1) WITH ORDINALITY;
EXPLAIN (COSTS OFF) SELECT eps_selfjoin('s_pts', '{x,y}', 0.1);
SET gpujoin.custom_scan = off;
EXPLAIN (COSTS OFF) SELECT * FROM eps_selfjoin('s_pts', '{x,y}', 0.1);
RESET gpujoin.custom_scan;
-- EXPLAIN ANALYZE: rows read and made (times and batches need TIMING/VERBOSE)
SELECT * FROM pg_temp.explain_analyze($$SELECT * FROM eps_selfjoin('s_pts', '{x,y}', 0.1, NULL, true)$$);
SELECT * FROM pg_temp.explain_analyze($$SELECT * FROM knn_selfjoin('s_pts', '{x,y}', 4)$$);
RESET gpujoin.device;

-- the custom scan and the function scan return the same rows
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
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('s_pts', '{x,y}', 0.15)$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin('s_pts', '{x,y}', 0.15, 'id', true)$$);
SELECT pg_temp.same_rows($$SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM s_pts WHERE id % 3 = 0', 0.3)$$);
SELECT pg_temp.same_rows($$SELECT * FROM knn_join('s_pts', 's_pts', '{x,y}', 5)$$);
SELECT pg_temp.same_rows($$SELECT * FROM knn_selfjoin_sql('SELECT id, ARRAY[x, y] FROM s_pts', 7)$$);
SELECT pg_temp.same_rows($$SELECT * FROM knn_join_sql('SELECT id, x, y FROM s_pts WHERE id < 100', 'SELECT id, x, y FROM s_pts', 2)$$);

-- LIMIT over 5e9 pairs returns at once; the engine stops with the query
-- (its threads gone once the statement is, but for the one that may still
-- be unmapping a parallel read's rows for a moment: up to 10 s for that)
CREATE FUNCTION pg_temp.threads_back(n bigint) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..1000 LOOP
        IF (SELECT count(*) FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task')) <= n THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.01);
    END LOOP;
    RETURN false;
END $$;
SELECT count(*) AS tasks_before FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task') \gset
DO $$
DECLARE t0 timestamptz := clock_timestamp(); n bigint;
BEGIN
    SELECT count(*) INTO n FROM (SELECT * FROM eps_selfjoin('s_one', '{x,y}', 1.0) LIMIT 10) s;
    RAISE NOTICE 'LIMIT 10: % rows, within 2 s: %', n, clock_timestamp() - t0 < interval '2 s';
    t0 := clock_timestamp();
    PERFORM 1 WHERE EXISTS (SELECT 1 FROM knn_selfjoin('s_one', '{x,y}', 50000));
    RAISE NOTICE 'EXISTS over k = 50000: within 2 s: %', clock_timestamp() - t0 < interval '2 s';
END $$;
SELECT pg_temp.threads_back(:tasks_before) AS threads_gone;
-- no tuplestore: a count over thousands of pairs with 64 kB of work_mem
-- writes no temp file (temp_file_limit would stop it)
SET work_mem = '64kB';
SET temp_file_limit = '64kB';
SELECT count(*) FROM eps_selfjoin('s_pts', '{x,y}', 0.3);
SET gpujoin.custom_scan = off;
-- the function scan spills (the error's quoting differs by version)
DO $$
BEGIN
    PERFORM count(*) FROM eps_selfjoin('s_pts', '{x,y}', 0.3);
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE '%: %', SQLSTATE, replace(SQLERRM, '"', '');
END $$;
RESET gpujoin.custom_scan;
RESET temp_file_limit;
RESET work_mem;

-- a cursor fetched partly, then closed: the engine stops at CLOSE
BEGIN;
DECLARE c CURSOR FOR SELECT a <= b AS ordered FROM eps_selfjoin('s_one', '{x,y}', 1.0);
FETCH 3 FROM c;
FETCH 2 FROM c;
CLOSE c;
SELECT pg_temp.threads_back(:tasks_before) AS threads_gone;
COMMIT;

-- LATERAL with an outer reference: one job per outer row (rescans)
SELECT t.eps, count(*) FROM (VALUES (0.05), (0.1), (0.2)) t(eps),
    LATERAL eps_selfjoin('s_pts', '{x,y}', t.eps) GROUP BY t.eps ORDER BY t.eps;
SELECT t.eps, (SELECT count(*) FROM eps_selfjoin('s_pts', '{x,y}', t.eps)) AS pairs
    FROM (VALUES (0.05), (0.1), (0.2)) t(eps) ORDER BY t.eps;
SELECT q.id, n.r, n.rank FROM s_pts q,
    LATERAL knn_join_sql(format('SELECT id, x, y FROM s_pts WHERE id = %s', q.id),
                         'SELECT id, x, y FROM s_pts', 2) n
    WHERE q.id <= 3 ORDER BY q.id, n.rank;
-- EXISTS as a correlated subplan (OFFSET 0 keeps it one): a = $param restricts
SELECT count(*) FROM s_pts p WHERE p.id <= 200 AND EXISTS
    (SELECT 1 FROM eps_selfjoin('s_pts', '{x,y}', 0.05) j WHERE j.a = p.id OFFSET 0);
SELECT count(*) FROM s_pts p WHERE p.id <= 200 AND EXISTS
    (SELECT 1 FROM eps_selfjoin('s_pts', '{x,y}', 0.05) j WHERE j.a = p.id);
-- parameters of a prepared statement, custom and generic plans
PREPARE pj(float8) AS SELECT count(*) FROM eps_selfjoin('s_pts', '{x,y}', $1);
EXECUTE pj(0.1); EXECUTE pj(0.1); EXECUTE pj(0.1); EXECUTE pj(0.1); EXECUTE pj(0.1);
EXECUTE pj(0.2);
SET plan_cache_mode = force_generic_plan;
EXECUTE pj(0.05);
RESET plan_cache_mode;
DEALLOCATE pj;
-- errors behave as in the function: NULL and bad arguments, EXECUTE privilege
SELECT * FROM eps_selfjoin('s_pts', '{x,y}', NULL);
SELECT * FROM eps_selfjoin('s_pts', '{x,y}', -1);
SELECT * FROM knn_selfjoin('s_pts', '{x,y}', 0);
CREATE ROLE gj_noexec;
GRANT SELECT ON s_pts TO gj_noexec;
REVOKE EXECUTE ON FUNCTION eps_selfjoin(regclass, text[], float8, text, boolean, text, boolean) FROM PUBLIC;
SET ROLE gj_noexec;
SELECT count(*) FROM eps_selfjoin('s_pts', '{x,y}', 0.1);
RESET ROLE;
GRANT EXECUTE ON FUNCTION eps_selfjoin(regclass, text[], float8, text, boolean, text, boolean) TO PUBLIC;
SET ROLE gj_noexec;
SELECT count(*) FROM eps_selfjoin('s_pts', '{x,y}', 0.1);
RESET ROLE;
DROP OWNED BY gj_noexec;
DROP ROLE gj_noexec;
-- joins, ORDER BY and aggregates over the streamed rows
SELECT p.id, count(*) FROM s_pts p JOIN eps_selfjoin('s_pts', '{x,y}', 0.1) j ON j.a = p.id
    WHERE p.id <= 5 GROUP BY p.id ORDER BY p.id;
SELECT a, b FROM eps_selfjoin('s_pts', '{x,y}', 0.2) ORDER BY dist DESC, a, b LIMIT 3;
DROP TABLE s_one;
