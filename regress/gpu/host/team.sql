-- Several GPUs in SQL (regress/gpu/host/run.sh, step teamsql): gpujoin.gpus.
-- The tile join (eps_selfjoin, eps_neighbor_counts on 500K exponential rows in
-- 32-D, Syn32D2M's distribution) and the kNN join (knn_selfjoin on 100K clustered
-- rows in 128-D) on GPU 0 alone, on a team of two members on GPU 0 ('0,0',
-- which any host has) and on every visible GPU (''): the rows must be equal as
-- multisets, EXPLAIN must name the team's GPUs, a GPU that is not there must be
-- refused.  Then the times of one GPU against every GPU, best of two.
-- Lines start with "ok" or "FAIL".
\set ON_ERROR_STOP on
\pset pager off
CREATE EXTENSION IF NOT EXISTS gpujoin;
SET client_min_messages = warning;
SELECT setseed(0.45);
DROP TABLE IF EXISTS syn32, clu128;
CREATE TABLE syn32 (id int PRIMARY KEY, v float8[]);
INSERT INTO syn32
SELECT i, (SELECT array_agg(-ln(1 - random()) / 40) FROM generate_series(1, 32) WHERE i > 0)
FROM generate_series(1, 500000) i;
CREATE TABLE clu128 (id int PRIMARY KEY, v float8[]);
INSERT INTO clu128
SELECT i, (SELECT array_agg(c + random()) FROM (SELECT (i % 20) * 3.0 AS c FROM generate_series(1, 128)) g)
FROM generate_series(1, 100000) i;
VACUUM ANALYZE syn32, clu128;
SET gpujoin.device = gpu;

-- q's rows under each setting of gpujoin.gpus, compared with GPU 0's
CREATE FUNCTION pg_temp.same(what text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n0 bigint; bad bigint; s text;
BEGIN
    SET gpujoin.gpus = '0';
    EXECUTE 'CREATE TEMP TABLE r0 AS ' || q;
    SELECT count(*) INTO n0 FROM r0;
    FOREACH s IN ARRAY ARRAY['0,0', ''] LOOP
        EXECUTE format('SET gpujoin.gpus = %L', s);
        EXECUTE 'CREATE TEMP TABLE r1 AS ' || q;
        SELECT count(*) INTO bad FROM ((TABLE r0 EXCEPT ALL TABLE r1) UNION ALL (TABLE r1 EXCEPT ALL TABLE r0)) d;
        RAISE WARNING '% % with gpujoin.gpus = ''%'': % rows, % differ from GPU 0''s',
            CASE WHEN bad = 0 AND n0 > 0 THEN 'ok' ELSE 'FAIL' END, what, s, n0, bad;
        DROP TABLE r1;
    END LOOP;
    DROP TABLE r0;
    RESET gpujoin.gpus;
END $$;

SELECT pg_temp.same('eps_selfjoin syn32 eps 0.08', $$SELECT * FROM eps_selfjoin('syn32', '{v}', 0.08)$$);
SELECT pg_temp.same('eps_neighbor_counts syn32 eps 0.08', $$SELECT * FROM eps_neighbor_counts('syn32', '{v}', 0.08)$$);
SELECT pg_temp.same('knn_selfjoin clu128 k 10', $$SELECT * FROM knn_selfjoin('clu128', '{v}', 10)$$);

-- EXPLAIN names the team
CREATE FUNCTION pg_temp.explain_has(what text, q text, pattern text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE l text; hit text;
BEGIN
    FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ' || q LOOP
        IF l ~ pattern THEN hit := l; END IF;
    END LOOP;
    RAISE WARNING '% %: %', CASE WHEN hit IS NOT NULL THEN 'ok' ELSE 'FAIL' END, what, coalesce(hit, 'no ' || pattern);
END $$;
SET gpujoin.gpus = '0,0';
SELECT pg_temp.explain_has('EXPLAIN of the tile join on a team', $$SELECT count(*) FROM eps_selfjoin('syn32', '{v}', 0.08)$$, 'GPUs: 2');
SELECT pg_temp.explain_has('EXPLAIN of the kNN join on a team', $$SELECT count(*) FROM knn_selfjoin('clu128', '{v}', 10)$$, 'GPUs: 2');
RESET gpujoin.gpus;

-- a GPU that is not there: an error under device = gpu, the CPU (with a NOTICE) under auto
SET gpujoin.gpus = '15';
DO $$ BEGIN
    PERFORM count(*) FROM eps_selfjoin('syn32', '{v}', 0.08);
    RAISE WARNING 'FAIL a missing GPU was not refused';
EXCEPTION WHEN feature_not_supported THEN
    RAISE WARNING 'ok a missing GPU is refused: %', SQLERRM;
END $$;
SET gpujoin.device = auto;
SET client_min_messages = notice;
SELECT count(*) AS "auto with a missing GPU runs on the CPU" FROM eps_selfjoin('syn32', '{v}', 0.08);
SET client_min_messages = warning;
SET gpujoin.device = gpu;
RESET gpujoin.gpus;

-- one GPU against every GPU, end to end in SQL (read and output included)
\i regress/gpu/host/timed.sql
SET gpujoin.gpus = '0';
SELECT pg_temp.timed('syn32 500K eps 0.08 count(*), GPU 0', $$SELECT count(*) FROM eps_selfjoin('syn32', '{v}', 0.08)$$);
SELECT pg_temp.timed('clu128 100K knn_selfjoin k 10 count(*), GPU 0', $$SELECT count(*) FROM knn_selfjoin('clu128', '{v}', 10)$$);
RESET gpujoin.gpus;
SELECT pg_temp.timed('syn32 500K eps 0.08 count(*), every GPU', $$SELECT count(*) FROM eps_selfjoin('syn32', '{v}', 0.08)$$);
SELECT pg_temp.timed('clu128 100K knn_selfjoin k 10 count(*), every GPU', $$SELECT count(*) FROM knn_selfjoin('clu128', '{v}', 10)$$);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('syn32', '{v}', 0.08);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM knn_selfjoin('clu128', '{v}', 10);
SELECT * FROM pg_temp.timings_table();
DROP TABLE syn32, clu128;
