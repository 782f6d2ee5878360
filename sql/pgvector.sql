-- pgvector's vector and halfvec columns, read directly (run where pgvector
-- is installed: make installcheck WITH_PGVECTOR=1; run_tests.sh does so).
CREATE EXTENSION vector;
SELECT setseed(0.4417);
CREATE TABLE pv (id int PRIMARY KEY, v vector(32), h halfvec(32), a real[], ah real[]);
INSERT INTO pv (id, a)
SELECT i, ARRAY(SELECT (random() * 2 - 1)::real + 0 * i FROM generate_series(1, 32))
FROM generate_series(1, 400) i;
-- near duplicates, and a row with no vector
INSERT INTO pv (id, a) SELECT 1000 + id, ARRAY(SELECT x + 1e-3::real FROM unnest(a) x) FROM pv WHERE id <= 20;
UPDATE pv SET v = a::vector, h = a::vector::halfvec;
UPDATE pv SET ah = h::vector::real[];
INSERT INTO pv VALUES (5000, NULL, NULL, NULL, NULL);
ANALYZE pv;
-- a vector column gives exactly what the same values as real[] give
SELECT count(*) > 50 AS enough_pairs FROM eps_selfjoin('pv', '{a}', 3.0);
SELECT count(*) AS vector_differ FROM (
    (SELECT * FROM eps_selfjoin('pv', '{v}', 3.0) EXCEPT SELECT * FROM eps_selfjoin('pv', '{a}', 3.0))
    UNION ALL
    (SELECT * FROM eps_selfjoin('pv', '{a}', 3.0) EXCEPT SELECT * FROM eps_selfjoin('pv', '{v}', 3.0))) d;
-- halfvec: its binary16 values, exactly
SELECT count(*) AS halfvec_differ FROM (
    (SELECT * FROM eps_selfjoin('pv', '{h}', 3.0) EXCEPT SELECT * FROM eps_selfjoin('pv', '{ah}', 3.0))
    UNION ALL
    (SELECT * FROM eps_selfjoin('pv', '{ah}', 3.0) EXCEPT SELECT * FROM eps_selfjoin('pv', '{h}', 3.0))) d;
SELECT count(*) AS sql_form_differ FROM (
    (SELECT * FROM eps_selfjoin_sql('SELECT id, v FROM pv', 3.0)
     EXCEPT SELECT * FROM eps_selfjoin('pv', '{a}', 3.0))
    UNION ALL
    (SELECT * FROM eps_selfjoin('pv', '{a}', 3.0)
     EXCEPT SELECT * FROM eps_selfjoin_sql('SELECT id, v FROM pv', 3.0))) d;
-- kNN: the same neighbours as pgvector's exact search (ORDER BY <-> with no index)
CREATE TEMP TABLE pg_knn AS
    SELECT q.id AS a, n.id AS b, n.rank
    FROM pv q CROSS JOIN LATERAL (
        SELECT r.id, row_number() OVER (ORDER BY r.v <-> q.v, r.id)::int AS rank
        FROM pv r WHERE r.id <> q.id AND r.v IS NOT NULL
        ORDER BY r.v <-> q.v, r.id LIMIT 5) n
    WHERE q.v IS NOT NULL;
SELECT count(*) AS knn_differ FROM (
    (SELECT a, b, rank FROM knn_selfjoin('pv', '{v}', 5) EXCEPT TABLE pg_knn)
    UNION ALL
    (TABLE pg_knn EXCEPT SELECT a, b, rank FROM knn_selfjoin('pv', '{v}', 5))) d;
-- cosine: pgvector's <=> ranks the same neighbours; dist agrees to float32 rounding
CREATE TEMP TABLE pg_cos AS
    SELECT q.id AS a, n.id AS b, n.rank, n.d
    FROM pv q CROSS JOIN LATERAL (
        SELECT r.id, r.v <=> q.v AS d, row_number() OVER (ORDER BY r.v <=> q.v, r.id)::int AS rank
        FROM pv r WHERE r.id <> q.id AND r.v IS NOT NULL
        ORDER BY r.v <=> q.v, r.id LIMIT 3) n
    WHERE q.v IS NOT NULL;
SELECT count(*) AS cosine_knn_differ FROM (
    (SELECT a, b, rank FROM knn_selfjoin('pv', '{v}', 3, metric => 'cosine') EXCEPT SELECT a, b, rank FROM pg_cos)
    UNION ALL
    (SELECT a, b, rank FROM pg_cos EXCEPT SELECT a, b, rank FROM knn_selfjoin('pv', '{v}', 3, metric => 'cosine'))) d;
SELECT max(abs(k.dist - c.d)) < 1e-6 AS cosine_dist_agrees
FROM knn_selfjoin('pv', '{v}', 3, metric => 'cosine') k JOIN pg_cos c USING (a, b);
-- vectors of different lengths in one column
CREATE TABLE pv_mixed (id int PRIMARY KEY, v vector);
INSERT INTO pv_mixed VALUES (1, '[1,2,3]'), (2, '[1,2]');
SELECT * FROM eps_selfjoin('pv_mixed', '{v}', 1);
-- the memory check reads the declared dimension before any row
CREATE TABLE pv_big (id int PRIMARY KEY, v vector(64));
INSERT INTO pv_big SELECT i, array_fill(i::real, ARRAY[64])::vector FROM generate_series(1, 5000) i;
ANALYZE pv_big;
SET gpujoin.host_memory_limit = '1MB';
SELECT count(*) FROM eps_selfjoin('pv_big', '{v}', 0.5);
RESET gpujoin.host_memory_limit;
-- a type called vector that is not pgvector's is not read as one
CREATE SCHEMA other;
CREATE TYPE other.vector AS (x float8);
CREATE TABLE pv_other (id int PRIMARY KEY, v other.vector);
SELECT * FROM eps_selfjoin('pv_other', '{v}', 1);
DROP TABLE pv_other;
DROP SCHEMA other CASCADE;
-- the parallel read of vector and halfvec columns (dimensions from the
-- declared type): the serial read's rows, with workers doing the reading
CREATE TEMP TABLE pv_serial AS
    SELECT 'v' AS c, * FROM knn_selfjoin('pv', '{v}', 3)
    UNION ALL SELECT 'h', * FROM knn_selfjoin('pv', '{h}', 3, metric => 'cosine');
SET gpujoin.parallel_read_min_rows = 0;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT count(*) AS parallel_vector_differ FROM (
    (SELECT 'v' AS c, * FROM knn_selfjoin('pv', '{v}', 3)
     UNION ALL SELECT 'h', * FROM knn_selfjoin('pv', '{h}', 3, metric => 'cosine')
     EXCEPT SELECT * FROM pv_serial)
    UNION ALL
    (SELECT * FROM pv_serial
     EXCEPT (SELECT 'v' AS c, * FROM knn_selfjoin('pv', '{v}', 3)
             UNION ALL SELECT 'h', * FROM knn_selfjoin('pv', '{h}', 3, metric => 'cosine')))) d;
SELECT count(*) FROM pv_serial;
CREATE FUNCTION pg_temp.read_workers(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE line text; n int := 0;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
        line := regexp_replace(line, '(rows=\d+)\.00', '\1', 'g');
        IF line LIKE '%Read Workers:%' THEN n := split_part(line, ':', 2)::int; END IF;
    END LOOP;
    RETURN n;
END $$;
SELECT pg_temp.read_workers($$SELECT * FROM knn_selfjoin('pv', '{v}', 3)$$) > 0 AS parallel_vector,
       pg_temp.read_workers($$SELECT * FROM knn_selfjoin('pv', '{h}', 3)$$) > 0 AS parallel_halfvec;
RESET gpujoin.parallel_read_min_rows;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- keys of any type: a text key on vector rows (in the ids' order), as the ids
CREATE TABLE pvkey AS SELECT 'doc-' || lpad(id::text, 6, '0') AS k, v FROM pv;
SELECT count(*) AS keyed_knn_diff FROM (
    (SELECT a, b, rank, dist FROM knn_selfjoin('pvkey', '{v}', 3, key => NULL::text, id_col => 'k')
     EXCEPT ALL SELECT 'doc-' || lpad(a::text, 6, '0'), 'doc-' || lpad(b::text, 6, '0'), rank, dist
     FROM knn_selfjoin('pv', '{v}', 3))
    UNION ALL
    (SELECT 'doc-' || lpad(a::text, 6, '0'), 'doc-' || lpad(b::text, 6, '0'), rank, dist
     FROM knn_selfjoin('pv', '{v}', 3)
     EXCEPT ALL SELECT a, b, rank, dist FROM knn_selfjoin('pvkey', '{v}', 3, key => NULL::text, id_col => 'k'))) d;
DROP TABLE pvkey;
