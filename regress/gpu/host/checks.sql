-- GPU-host checks through SQL (run by regress/gpu/host/run.sh with psql).
-- Each check prints "ok <name>" or "FAIL <name>".
\set ON_ERROR_STOP 1
\pset tuples_only on
\pset format unaligned
CREATE EXTENSION IF NOT EXISTS gpujoin;
SELECT name || ': ' || value FROM gpujoin_info() ORDER BY name;
CREATE OR REPLACE FUNCTION pg_temp.same(q text, eps float8, label text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d bigint; n bigint;
BEGIN
    SET LOCAL gpujoin.device = cpu;
    CREATE TEMP TABLE c_res ON COMMIT DROP AS SELECT * FROM eps_selfjoin_sql(q, eps);
    SET LOCAL gpujoin.device = gpu;
    CREATE TEMP TABLE g_res ON COMMIT DROP AS SELECT * FROM eps_selfjoin_sql(q, eps);
    SELECT count(*) INTO n FROM c_res;
    SELECT count(*) INTO d FROM ((TABLE c_res EXCEPT ALL TABLE g_res) UNION ALL (TABLE g_res EXCEPT ALL TABLE c_res)) x;
    DROP TABLE c_res; DROP TABLE g_res;
    RETURN CASE WHEN d = 0 THEN 'ok ' ELSE 'FAIL ' END || label || ' (' || n || ' pairs, ' || d || ' differ)';
END $$;
CREATE OR REPLACE FUNCTION pg_temp.explain_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
    FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ' || q LOOP
        RETURN NEXT l;
    END LOOP;
END $$;
SELECT setseed(0.77);
CREATE TABLE IF NOT EXISTS gh2 AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 200000) i;
CREATE TABLE IF NOT EXISTS gh5 AS SELECT i AS id, ARRAY[random(), random(), random(), random(), random()] AS p FROM generate_series(1, 50000) i;
CREATE TABLE IF NOT EXISTS ghdup AS SELECT i AS id, (i % 7)::float8 AS x, (i % 3)::float8 AS y FROM generate_series(1, 3000) i;
SELECT pg_temp.same('SELECT id, x, y FROM gh2', 0.3, 'uniform 2-D');
SELECT pg_temp.same('SELECT id, x, y FROM gh2', 1.0, 'uniform 2-D eps 1');
SELECT pg_temp.same('SELECT id, p FROM gh5', 0.1, '5-D arrays');
SELECT pg_temp.same('SELECT id, x, y FROM ghdup', 1.0, 'duplicates, exact eps');
SET gpujoin.gpu_batch_pairs = 1000;
SELECT pg_temp.same('SELECT id, x, y FROM gh2', 0.3, 'uniform 2-D, 1000-pair batches');
SELECT pg_temp.same('SELECT id, x, y FROM ghdup', 1.0, 'duplicates, 1000-pair batches (windows)');
RESET gpujoin.gpu_batch_pairs;
-- too little GPU memory: a NOTICE and the CPU engine, same rows
SET gpujoin.device = cpu;
SELECT count(*) AS cpu_n FROM eps_selfjoin_sql('SELECT id, x, y FROM gh2', 0.5) \gset
SET gpujoin.device = gpu;
SET gpujoin.gpu_memory_limit = 1;
SELECT CASE WHEN count(*) = :cpu_n THEN 'ok' ELSE 'FAIL' END
       || ' memory limit fallback (expect a NOTICE above)' FROM eps_selfjoin_sql('SELECT id, x, y FROM gh2', 0.5);
RESET gpujoin.gpu_memory_limit;
RESET gpujoin.device;
-- beyond the GPU memory limit in 2-D: slabs on the GPU, not the CPU, same rows
CREATE TABLE IF NOT EXISTS gh2m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y
    FROM generate_series(1, 2000000) i;
CREATE OR REPLACE FUNCTION pg_temp.same_join(rq text, sq text, eps float8, label text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d bigint; n bigint;
BEGIN
    SET LOCAL gpujoin.device = cpu;
    CREATE TEMP TABLE c_res ON COMMIT DROP AS SELECT * FROM eps_join_sql(rq, sq, eps);
    SET LOCAL gpujoin.device = gpu;
    CREATE TEMP TABLE g_res ON COMMIT DROP AS SELECT * FROM eps_join_sql(rq, sq, eps);
    SELECT count(*) INTO n FROM c_res;
    SELECT count(*) INTO d FROM ((TABLE c_res EXCEPT ALL TABLE g_res) UNION ALL (TABLE g_res EXCEPT ALL TABLE c_res)) x;
    DROP TABLE c_res; DROP TABLE g_res;
    RETURN CASE WHEN d = 0 THEN 'ok ' ELSE 'FAIL ' END || label || ' (' || n || ' rows, ' || d || ' differ)';
END $$;
SET gpujoin.gpu_memory_limit = 200;
SELECT pg_temp.same('SELECT id, x, y FROM gh2m', 0.05, '2M 2-D self-join in slabs (200 MB)');
SELECT pg_temp.same('SELECT id, x, y FROM gh2m', 0.08, '2M 2-D self-join in slabs (200 MB), eps 0.08');
SELECT pg_temp.same_join('SELECT id, x * 1.2 - 10, y FROM gh2m WHERE id % 2 = 0', 'SELECT id, x, y FROM gh2m', 0.05,
                         'eps_join 1M x 2M in slabs (200 MB), s indexed');
SELECT pg_temp.same_join('SELECT id, x, y FROM gh2m', 'SELECT id, x * 1.2 - 10, y FROM gh2m WHERE id % 2 = 0', 0.05,
                         'eps_join 2M x 1M in slabs (200 MB), r indexed');
CREATE OR REPLACE FUNCTION pg_temp.same_counts(rq text, sq text, eps float8, label text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d bigint; n bigint;
BEGIN
    SET LOCAL gpujoin.device = cpu;
    CREATE TEMP TABLE c_res ON COMMIT DROP AS SELECT * FROM eps_join_counts_sql(rq, sq, eps);
    SET LOCAL gpujoin.device = gpu;
    CREATE TEMP TABLE g_res ON COMMIT DROP AS SELECT * FROM eps_join_counts_sql(rq, sq, eps);
    SELECT sum(c_res.n) INTO n FROM c_res;
    SELECT count(*) INTO d FROM ((TABLE c_res EXCEPT ALL TABLE g_res) UNION ALL (TABLE g_res EXCEPT ALL TABLE c_res)) x;
    DROP TABLE c_res; DROP TABLE g_res;
    RETURN CASE WHEN d = 0 THEN 'ok ' ELSE 'FAIL ' END || label || ' (' || n || ' counted, ' || d || ' rows differ)';
END $$;
SELECT pg_temp.same_counts('SELECT id, x * 1.2 - 10, y FROM gh2m WHERE id % 2 = 0', 'SELECT id, x, y FROM gh2m', 0.05,
                           'eps_join_counts 1M x 2M in slabs (200 MB)');
SET gpujoin.device = gpu;
SELECT CASE WHEN plan LIKE '%GPU Slabs: %' THEN 'ok' ELSE 'FAIL' END || ' EXPLAIN shows the counts'' slabs: '
       || coalesce(substring(plan from 'GPU Slabs: [^\n]*'), plan)
FROM (SELECT string_agg(x, E'\n') AS plan FROM pg_temp.explain_lines(
      $$SELECT count(*) FROM eps_join_counts('gh2', 'gh2m', '{x,y}', 0.05, 'id', 'id')$$) x) e;
SELECT CASE WHEN plan LIKE '%GPU Slabs: %' THEN 'ok' ELSE 'FAIL' END || ' EXPLAIN shows the slabs: '
       || coalesce(substring(plan from 'GPU Slabs: [^\n]*'), plan)
FROM (SELECT string_agg(x, E'\n') AS plan FROM pg_temp.explain_lines(
      $$SELECT count(*) FROM eps_selfjoin('gh2m', '{x,y}', 0.05, 'id')$$) x) e;
RESET gpujoin.device;
-- at 450 MB two half-budget steps fit at once: each next step starts while
-- the current one's rows go out (4M rows: 2M and a copy 0.001 apart)
SET gpujoin.gpu_memory_limit = 450;
SELECT pg_temp.same('SELECT id, x, y FROM gh2m UNION ALL SELECT id + 2000000, x + 0.001, y FROM gh2m', 0.05,
                    '4M 2-D self-join in slabs (450 MB), steps started early');
SELECT pg_temp.same_join('SELECT id, x * 1.2 - 10, y FROM gh2m', 'SELECT id, x, y FROM gh2m', 0.05,
                         'eps_join 2M x 2M in slabs (450 MB), steps started early');
SET gpujoin.device = gpu;
SELECT CASE WHEN plan ~ 'GPU Slabs: [^\n]* started early' THEN 'ok' ELSE 'FAIL' END || ' EXPLAIN shows steps started early: '
       || coalesce(substring(plan from 'GPU Slabs: [^\n]*'), plan)
FROM (SELECT string_agg(x, E'\n') AS plan FROM pg_temp.explain_lines(
      $$SELECT count(*) FROM eps_selfjoin_sql('SELECT id, x, y FROM gh2m UNION ALL SELECT id + 2000000, x + 0.001, y FROM gh2m', 0.05)$$) x) e;
RESET gpujoin.device;
SET gpujoin.gpu_memory_limit = 200;
-- per-row answers beyond the limit: counts and DBSCAN in slabs, row for row the CPU's
CREATE OR REPLACE FUNCTION pg_temp.same_rows(q text, label text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d bigint; n bigint;
BEGIN
    SET LOCAL gpujoin.device = cpu;
    EXECUTE 'CREATE TEMP TABLE c_res ON COMMIT DROP AS ' || q;
    SET LOCAL gpujoin.device = gpu;
    EXECUTE 'CREATE TEMP TABLE g_res ON COMMIT DROP AS ' || q;
    SELECT count(*) INTO n FROM c_res;
    SELECT count(*) INTO d FROM ((TABLE c_res EXCEPT ALL TABLE g_res) UNION ALL (TABLE g_res EXCEPT ALL TABLE c_res)) x;
    DROP TABLE c_res; DROP TABLE g_res;
    RETURN CASE WHEN d = 0 AND n > 0 THEN 'ok ' ELSE 'FAIL ' END || label || ' (' || n || ' rows, ' || d || ' differ)';
END $$;
SELECT pg_temp.same_rows($$SELECT * FROM eps_neighbor_counts_sql('SELECT id, x, y FROM gh2m', 0.05)$$,
                         'eps_neighbor_counts 2M in slabs (200 MB)');
SELECT pg_temp.same_rows($$SELECT * FROM dbscan_sql('SELECT id, x, y FROM gh2m', 0.05, 4)$$,
                         'dbscan 2M in slabs (200 MB), minpts 4');
SELECT pg_temp.same_rows($$SELECT * FROM dbscan_sql('SELECT id, x, y FROM gh2m', 0.1, 12)$$,
                         'dbscan 2M in slabs (200 MB), eps 0.1 minpts 12');
SELECT pg_temp.same_rows($$SELECT * FROM dbscan_sql('SELECT id, floor(x / 25) * 30, y FROM gh2m', 0.08, 5)$$,
                         'dbscan 2M in slabs (200 MB), 4 lines of 500K rows (halos wider than a slab)');
SELECT pg_temp.same_rows($$SELECT * FROM eps_neighbors_sql('SELECT id, x, y FROM gh2m', 0.05)$$,
                         'eps_neighbors 2M in slabs (200 MB)');
SET gpujoin.device = gpu;
SELECT CASE WHEN plan LIKE '%GPU Slabs: %' THEN 'ok' ELSE 'FAIL' END || ' EXPLAIN shows the lists'' slabs: '
       || coalesce(substring(plan from 'GPU Slabs: [^\n]*'), plan)
FROM (SELECT string_agg(x, E'\n') AS plan FROM pg_temp.explain_lines(
      $$SELECT count(*) FROM eps_neighbors('gh2m', '{x,y}', 0.05, 'id')$$) x) e;
SELECT CASE WHEN plan LIKE '%GPU Slabs: %' THEN 'ok' ELSE 'FAIL' END || ' EXPLAIN shows dbscan''s slabs: '
       || coalesce(substring(plan from 'GPU Slabs: [^\n]*'), plan)
FROM (SELECT string_agg(x, E'\n') AS plan FROM pg_temp.explain_lines(
      $$SELECT count(*) FROM dbscan('gh2m', '{x,y}', 0.05, 4, 'id')$$) x) e;
SELECT CASE WHEN plan LIKE '%GPU Slabs: %' THEN 'ok' ELSE 'FAIL' END || ' EXPLAIN shows the neighbour counts'' slabs: '
       || coalesce(substring(plan from 'GPU Slabs: [^\n]*'), plan)
FROM (SELECT string_agg(x, E'\n') AS plan FROM pg_temp.explain_lines(
      $$SELECT count(*) FROM eps_neighbor_counts('gh2m', '{x,y}', 0.05, 'id')$$) x) e;
RESET gpujoin.device;
RESET gpujoin.gpu_memory_limit;
-- many dimensions beyond a GPU memory limit: the tile join in slices, not the CPU
CREATE TABLE IF NOT EXISTS gh16 AS SELECT i AS id,
    array_agg(floor(i / 5000.0) + random() * 0.5 ORDER BY d)::float8[] AS v
    FROM generate_series(1, 100000) i, generate_series(1, 16) d GROUP BY i;
SET gpujoin.gpu_memory_limit = 48;
SET gpujoin.eps_method = brute;
SELECT pg_temp.same('SELECT id, v FROM gh16', 0.35, '16-D brute force in slices (48 MB)');
SET gpujoin.eps_method = blocks;
SELECT pg_temp.same('SELECT id, v FROM gh16', 0.35, '16-D blocks in slices (48 MB)');
SET gpujoin.device = gpu;
SELECT CASE WHEN plan LIKE '%GPU Slices: %' THEN 'ok' ELSE 'FAIL' END || ' EXPLAIN shows the slices: '
       || coalesce(substring(plan from 'GPU Slices: [^\n]*'), plan)
FROM (SELECT string_agg(x, E'\n') AS plan FROM pg_temp.explain_lines(
      $$SELECT count(*) FROM eps_selfjoin('gh16', '{v}', 0.35, 'id')$$) x) e;
RESET gpujoin.eps_method;
RESET gpujoin.gpu_memory_limit;
RESET gpujoin.device;
SET gpujoin.progress = on;
SELECT 'ok progress run: ' || count(*) FROM eps_selfjoin('gh2', '{x,y}', 3.0, 'id');
RESET gpujoin.progress;
-- kNN through SQL: GPU and CPU engines give the same rows (pg_temp.same_rows above)
SELECT pg_temp.same_rows($$SELECT * FROM knn_join_sql('SELECT id, x, y FROM gh2 WHERE id % 10 = 0', 'SELECT id, x, y FROM gh2', 8)$$, 'knn_join 20K x 200K, device index');
SELECT pg_temp.same_rows($$SELECT * FROM knn_selfjoin('gh2', '{x,y}', 40, 'id')$$, 'knn_selfjoin 200K k=40 (heap), device index');
SELECT pg_temp.same_rows($$SELECT * FROM knn_selfjoin_sql('SELECT id, p FROM gh5', 5)$$, 'knn_selfjoin 5-D');
SET gpujoin.knn_method = brute;
SELECT pg_temp.same_rows($$SELECT * FROM knn_join_sql('SELECT id, x, y FROM gh2 WHERE id % 50 = 0', 'SELECT id, x, y FROM gh2', 3)$$, 'knn_join brute force');
RESET gpujoin.knn_method;
SET gpujoin.gpu_memory_limit = 8;
SELECT pg_temp.same_rows($$SELECT * FROM knn_join_sql('SELECT id, x, y FROM gh2 WHERE id % 10 = 0', 'SELECT id, x, y FROM gh2', 8)$$, 'knn_join in partitions (8 MB)');
RESET gpujoin.gpu_memory_limit;
-- streaming on the GPU: LIMIT, and the custom scan against the function scan
SET gpujoin.device = gpu;
SELECT CASE WHEN count(*) = 10 THEN 'ok' ELSE 'FAIL' END || ' GPU LIMIT 10'
FROM (SELECT * FROM eps_selfjoin('gh2', '{x,y}', 5, 'id') LIMIT 10) s;
CREATE TEMP TABLE cs_on AS SELECT * FROM eps_selfjoin('gh2', '{x,y}', 0.4, 'id', true);
SET gpujoin.custom_scan = off;
CREATE TEMP TABLE cs_off AS SELECT * FROM eps_selfjoin('gh2', '{x,y}', 0.4, 'id', true);
RESET gpujoin.custom_scan;
SELECT CASE WHEN count(*) = 0 THEN 'ok' ELSE 'FAIL' END || ' GPU custom scan = function scan (symmetric, ' ||
       (SELECT count(*) FROM cs_on) || ' rows)'
FROM ((TABLE cs_on EXCEPT ALL TABLE cs_off) UNION ALL (TABLE cs_off EXCEPT ALL TABLE cs_on)) x;
RESET gpujoin.device;
