-- statement_timeout stops a long join within a second and leaves no threads behind.
CREATE TABLE big AS SELECT i AS id, (i % 1000) * 1e-9 AS x, 0.0::float8 AS y FROM generate_series(1, 200000) i;
ALTER TABLE big ADD PRIMARY KEY (id);
-- warm up first (a GPU engine's runtime keeps helper threads), then count;
-- the count must come back once the statement is over, but the thread that
-- unmaps a parallel read's rows (core/shared_rows.c) may still be at it for
-- a moment, so wait up to 10 s for it.  At most as many as before, not
-- exactly as many: such a thread left by the query before may have been
-- counted in "before"
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
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, x, y FROM big WHERE id <= 2000', 1e-12);
SELECT count(*) AS tasks_before FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task') \gset
SET statement_timeout = '300ms';
DO $$
DECLARE
    t0 timestamptz := clock_timestamp();
    elapsed interval;
BEGIN
    -- all 200000 points in one cell: 2e10 pairs, far more than 300 ms of work
    PERFORM count(*) FROM eps_selfjoin('big', '{x,y}', 1.0);
    RAISE NOTICE 'the join was not cancelled';
EXCEPTION WHEN query_canceled THEN
    elapsed := clock_timestamp() - t0;
    RAISE NOTICE 'cancelled: %, within a second of the timeout: %', SQLERRM, elapsed < interval '1.3 s';
END $$;
RESET statement_timeout;
SELECT pg_temp.threads_back(:tasks_before) AS threads_gone;
-- the backend is healthy afterwards
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, x, y FROM big WHERE id <= 2000', 1e-12);

-- every phase stops within a second: reading (a huge cross join as input),
-- the restricted join (100000 listed rows, all in one cell), the custom
-- scan's streaming join under a slow consumer (a sort of 2e10 rows)
SELECT count(*) AS tasks_before FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task') \gset
CREATE FUNCTION pg_temp.cancel_within(q text, limit_s float8) RETURNS text LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    EXECUTE q;
    RETURN 'not cancelled';
EXCEPTION WHEN query_canceled THEN
    RETURN 'cancelled within ' || limit_s || ' s: ' ||
        (clock_timestamp() - t0 < make_interval(secs => limit_s));
END $$;
SET statement_timeout = '300ms';
SELECT pg_temp.cancel_within($$SELECT count(*) FROM eps_selfjoin_sql('SELECT a.id, a.x, b.x FROM big a, big b', 1)$$, 1.3);
SELECT pg_temp.cancel_within($$SELECT count(*) FROM eps_selfjoin('big', '{x,y}', 1.0) WHERE a = ANY (ARRAY(SELECT generate_series(1, 100000)::bigint))$$, 1.3);
SELECT pg_temp.cancel_within($$SELECT a FROM eps_selfjoin('big', '{x,y}', 1.0) ORDER BY dist LIMIT 1$$, 1.3);
-- per-row functions over the one cell: counting 2.6e12 distances (1.6M
-- rows: a GPU counts big's 4e10 in less than the timeout), DBSCAN's core
-- counts over 1.6M rows in one cell wider than eps with minpts past the
-- rows (its boxes link such a cell at once, but no row is core, so each
-- counts its reachable boxes to the end: 2e12 distances; big's own cell
-- is compact, below), sorting 200000 lists of 200000
SELECT pg_temp.cancel_within($$SELECT count(*) FROM eps_neighbor_counts_sql('SELECT a.id * 8 + b.i, a.x, a.y FROM big a, generate_series(0, 7) b(i)', 1.0)$$, 1.3);
SELECT pg_temp.cancel_within($$SELECT count(*) FROM dbscan_sql('SELECT a.id * 8 + b.i, (a.id % 1000) * 0.0009, (a.id / 200 % 1000) * 0.0009 FROM big a, generate_series(0, 7) b(i)', 1.0, 10000000)$$, 1.3);
SELECT pg_temp.cancel_within($$SELECT count(*) FROM eps_neighbors('big', '{x,y}', 1.0)$$, 1.3);
RESET statement_timeout;
SELECT pg_temp.threads_back(:tasks_before) AS threads_gone;
-- all 200000 rows within eps of each other (a compact cell): one cluster,
-- found without the 2e10 pairs (the bound only guards against a hang)
SET statement_timeout = '20s';
SELECT count(*), min(cluster), max(cluster), bool_and(is_core) FROM dbscan('big', '{x,y}', 1.0, 5);
SELECT min(n), max(n) FROM eps_neighbor_counts('big', '{x,y}', 1.0);
RESET statement_timeout;

-- the same for a kNN join: brute force over 300000 32-D points, 9e10
-- distances, in two clusters 1e6 apart, so that the GPU's tensor-core
-- filter cannot rule pairs out and every pair goes through the float64
-- rule (seconds even on a large GPU).  k = 1000: with k = 10 the GPU's
-- seed bound (knn_tiles.cu, used up to k = 256) made this join end within
-- the second on the H100 (each row has 299 exact copies, so the bound is
-- small from the start)
CREATE TABLE big16 AS SELECT i AS id, ARRAY(SELECT ((i::bigint * 7919 + d * 104729) % 1000 + (i % 2) * 1e6)::float8 FROM generate_series(1, 32) d) AS v
    FROM generate_series(1, 300000) i;
ALTER TABLE big16 ADD PRIMARY KEY (id);
SELECT count(*) FROM knn_selfjoin_sql('SELECT id, v FROM big16 WHERE id <= 300', 2);
SELECT count(*) AS tasks_before FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task') \gset
SET statement_timeout = '1s';
DO $$
DECLARE
    t0 timestamptz := clock_timestamp();
    elapsed interval;
BEGIN
    PERFORM count(*) FROM knn_selfjoin('big16', '{v}', 1000);
    RAISE NOTICE 'the kNN join was not cancelled';
EXCEPTION WHEN query_canceled THEN
    elapsed := clock_timestamp() - t0;
    RAISE NOTICE 'cancelled: %, within a second of the timeout: %', SQLERRM, elapsed < interval '2 s';
END $$;
RESET statement_timeout;
SELECT pg_temp.threads_back(:tasks_before) AS threads_gone;
SELECT count(*) FROM knn_selfjoin_sql('SELECT id, v FROM big16 WHERE id <= 300', 2);

-- kNN with a huge k: each query's own search grows with k (20,000 of the
-- 200,000 references by the grid, 150,000 by brute force, against big's
-- heavy ties), so the engines must read their stop word inside a query's
-- search, not only between queries or batches
CREATE TABLE u200k AS SELECT i AS id, (i::bigint * 7919 % 200003) * 0.0005 AS x, (i::bigint * 104729 % 199999) * 0.0005 AS y
    FROM generate_series(1, 200000) i;
ALTER TABLE u200k ADD PRIMARY KEY (id);
SELECT count(*) AS tasks_before FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task') \gset
SET statement_timeout = '300ms';
-- (their result-size NOTICE races the cancel: not shown)
SET client_min_messages = warning;
SELECT pg_temp.cancel_within($$SELECT count(*) FROM knn_join('u200k', 'u200k', '{x,y}', 20000)$$, 1.3);
SELECT pg_temp.cancel_within($$SELECT count(*) FROM knn_join('u200k', 'big', '{x,y}', 20000)$$, 1.3);
SET gpujoin.knn_method = brute;
SELECT pg_temp.cancel_within($$SELECT count(*) FROM knn_join('u200k', 'u200k', '{x,y}', 150000)$$, 1.3);
SELECT pg_temp.cancel_within($$SELECT count(*) FROM knn_selfjoin('big', '{x,y}', 150000)$$, 1.3);
RESET gpujoin.knn_method;
RESET client_min_messages;
RESET statement_timeout;
SELECT pg_temp.threads_back(:tasks_before) AS threads_gone;
SELECT count(*) FROM knn_join_sql('SELECT id, x, y FROM u200k WHERE id <= 100', 'SELECT id, x, y FROM u200k', 20000);

-- eps_join and eps_join_counts in 32 dimensions by tiles (the cross plan):
-- 60,000 x 60,000 rows all within eps, 3.6e9 pairs, far past the timeout
CREATE VIEW big16a AS SELECT * FROM big16 WHERE id <= 60000;
SELECT count(*) AS tasks_before FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task') \gset
SET statement_timeout = '1s';
SELECT pg_temp.cancel_within($$SELECT count(*) FROM eps_join('big16a', 'big16a', '{v}', 1e9, 'id', 'id')$$, 2);
SET gpujoin.eps_method = blocks;
SELECT pg_temp.cancel_within($$SELECT count(*) FROM eps_join('big16a', 'big16a', '{v}', 1e9, 'id', 'id')$$, 2);
SELECT pg_temp.cancel_within($$SELECT count(*) FROM eps_join_counts('big16a', 'big16a', '{v}', 1e9, 'id', 'id')$$, 2);
RESET gpujoin.eps_method;
RESET statement_timeout;
SELECT pg_temp.threads_back(:tasks_before) AS threads_gone;
SELECT count(*) FROM eps_join_sql('SELECT id, v FROM big16 WHERE id <= 300', 'SELECT id, v FROM big16 WHERE id <= 300', 0.5);
