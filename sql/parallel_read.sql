-- The parallel read: large tables are read by parallel workers through the
-- packing aggregate.  Forced here on a small table; every function must
-- give the same rows as the serial read, skip the same rows, and apply
-- row-level security and privileges the same way.
CREATE TABLE pr_pts (id int PRIMARY KEY, x float8, y numeric, z int);
INSERT INTO pr_pts SELECT i, (i * 7919 % 3001) / 300.0, ((i * 104729 % 2999) / 300.0)::numeric, i % 7
    FROM generate_series(1, 20000) i;
INSERT INTO pr_pts VALUES (20001, NULL, 1, 1), (20002, 'NaN', 1, 1), (20003, 'Infinity', 2, 2);
ANALYZE pr_pts;
CREATE FUNCTION pg_temp.summary(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
    EXECUTE 'SELECT coalesce(md5(string_agg(t::text, '','' ORDER BY t::text)), ''none'') || '' '' || count(*) FROM (' || q || ') t' INTO r;
    RETURN r;
END $$;
CREATE TEMP TABLE pr_serial AS SELECT 1 AS k, ''::text AS s LIMIT 0;
SET gpujoin.parallel_read_min_rows = -1;
INSERT INTO pr_serial VALUES
  (1, pg_temp.summary($$SELECT * FROM eps_selfjoin('pr_pts', '{x,y,z}', 0.2)$$)),
  (2, pg_temp.summary($$SELECT * FROM knn_selfjoin('pr_pts', '{x,y}', 3)$$)),
  (3, pg_temp.summary($$SELECT * FROM dbscan('pr_pts', '{x,y}', 0.1, 4)$$)),
  (4, pg_temp.summary($$SELECT * FROM eps_neighbor_counts('pr_pts', '{x,y}', 0.1)$$)),
  (5, pg_temp.summary($$SELECT * FROM knn_join('pr_pts', 'pr_pts', '{x,y}', 2)$$));
-- force parallel workers for any table size
SET gpujoin.parallel_read_min_rows = 0;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT k, s = pg_temp.summary(q) AS same FROM pr_serial JOIN (VALUES
  (1, $$SELECT * FROM eps_selfjoin('pr_pts', '{x,y,z}', 0.2)$$),
  (2, $$SELECT * FROM knn_selfjoin('pr_pts', '{x,y}', 3)$$),
  (3, $$SELECT * FROM dbscan('pr_pts', '{x,y}', 0.1, 4)$$),
  (4, $$SELECT * FROM eps_neighbor_counts('pr_pts', '{x,y}', 0.1)$$),
  (5, $$SELECT * FROM knn_join('pr_pts', 'pr_pts', '{x,y}', 2)$$)) v(k, q) USING (k)
ORDER BY k;
-- one array column: the dimensions come from its first array, and workers
-- convert (and detoast) the arrays, and for cosine normalise them; NULL
-- arrays, NULL elements, NaN and (cosine) zero rows are skipped and
-- reported as in the serial read
CREATE TABLE pr_arr (id int PRIMARY KEY, a float8[], r real[]);
INSERT INTO pr_arr SELECT i, ARRAY[(i * 7919 % 3001) / 300.0, (i * 104729 % 2999) / 300.0, i % 5, i % 3],
    ARRAY[(i * 7919 % 3001) / 300.0, (i * 104729 % 2999) / 300.0, i % 5, i % 3]::real[]
    FROM generate_series(1, 20000) i;
INSERT INTO pr_arr VALUES (20001, NULL, NULL), (20002, '{1,NULL,1,1}', '{1,NULL,1,1}'),
    (20003, '{NaN,1,1,1}', '{NaN,1,1,1}'), (20004, '{0,0,0,0}', '{0,0,0,0}');
ANALYZE pr_arr;
SET gpujoin.parallel_read_min_rows = -1;
INSERT INTO pr_serial VALUES
  (6, pg_temp.summary($$SELECT * FROM eps_selfjoin('pr_arr', '{a}', 0.3)$$)),
  (7, pg_temp.summary($$SELECT * FROM knn_selfjoin('pr_arr', '{r}', 3)$$)),
  (8, pg_temp.summary($$SELECT * FROM eps_neighbor_counts('pr_arr', '{a}', 0.2, metric => 'cosine')$$));
SET gpujoin.parallel_read_min_rows = 0;
SELECT k, s = pg_temp.summary(q) AS same FROM pr_serial JOIN (VALUES
  (6, $$SELECT * FROM eps_selfjoin('pr_arr', '{a}', 0.3)$$),
  (7, $$SELECT * FROM knn_selfjoin('pr_arr', '{r}', 3)$$),
  (8, $$SELECT * FROM eps_neighbor_counts('pr_arr', '{a}', 0.2, metric => 'cosine')$$)) v(k, q) USING (k)
ORDER BY k;
-- arrays of another length than the first: the same error as serially
-- (terse: a worker or the leader may meet the row, and only a worker's
-- error carries a CONTEXT line)
INSERT INTO pr_arr VALUES (20005, '{1,2,3}', '{1,2,3}');
\set VERBOSITY terse
SELECT count(*) FROM eps_selfjoin('pr_arr', '{a}', 0.3);
SET gpujoin.parallel_read_min_rows = -1;
SELECT count(*) FROM eps_selfjoin('pr_arr', '{a}', 0.3);
SET gpujoin.parallel_read_min_rows = 0;
\set VERBOSITY default
DELETE FROM pr_arr WHERE id = 20005;
-- statistics that promise too few rows: the shared segment fills up and
-- the rest travels from the workers as bytea (checked against the serial
-- read of the _sql form)
CREATE TABLE pr_grow (id int PRIMARY KEY, x float8, y float8) WITH (autovacuum_enabled = false);
INSERT INTO pr_grow SELECT i, (i * 7919 % 3001) / 300.0, (i * 104729 % 2999) / 300.0 FROM generate_series(1, 1000) i;
ANALYZE pr_grow;
INSERT INTO pr_grow SELECT i, (i::bigint * 7919 % 3001) / 300.0, (i::bigint * 104729 % 2999) / 300.0 FROM generate_series(1001, 40000) i;
SELECT pg_temp.summary($$SELECT * FROM eps_neighbor_counts('pr_grow', '{x,y}', 0.1)$$) =
       pg_temp.summary($$SELECT id, count(b) FILTER (WHERE b IS NOT NULL)
                        FROM pr_grow LEFT JOIN eps_selfjoin_sql('SELECT id, x, y FROM pr_grow', 0.1, true) ON a = id
                        GROUP BY id$$) AS same;
SELECT count(*) FROM eps_neighbor_counts('pr_grow', '{x,y}', 0.1);
-- the rows through a PostgreSQL segment instead of the reader's shared
-- file (gpujoin.parallel_read_file = off: the path taken where no memfd
-- can be made): the same rows, and the same overflow as bytea
SET gpujoin.parallel_read_file = off;
SELECT k, s = pg_temp.summary(q) AS same FROM pr_serial JOIN (VALUES
  (1, $$SELECT * FROM eps_selfjoin('pr_pts', '{x,y,z}', 0.2)$$),
  (2, $$SELECT * FROM knn_selfjoin('pr_pts', '{x,y}', 3)$$),
  (7, $$SELECT * FROM knn_selfjoin('pr_arr', '{r}', 3)$$),
  (8, $$SELECT * FROM eps_neighbor_counts('pr_arr', '{a}', 0.2, metric => 'cosine')$$)) v(k, q) USING (k)
ORDER BY k;
SELECT pg_temp.summary($$SELECT * FROM eps_neighbor_counts('pr_grow', '{x,y}', 0.1)$$) =
       pg_temp.summary($$SELECT id, count(b) FILTER (WHERE b IS NOT NULL)
                        FROM pr_grow LEFT JOIN eps_selfjoin_sql('SELECT id, x, y FROM pr_grow', 0.1, true) ON a = id
                        GROUP BY id$$) AS same;
RESET gpujoin.parallel_read_file;
-- workers did the reading (the leader's part counts as one); skipped rows
-- are reported as in the serial read
CREATE FUNCTION pg_temp.read_workers(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE line text; n int := 0;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
        line := regexp_replace(line, '(rows=\d+)\.00', '\1', 'g');
        IF line LIKE '%Read Workers:%' THEN n := split_part(line, ':', 2)::int; END IF;
    END LOOP;
    RETURN n;
END $$;
SELECT pg_temp.read_workers($$SELECT * FROM eps_neighbor_counts('pr_pts', '{x,y}', 0.1)$$) > 0 AS parallel;
SELECT pg_temp.read_workers($$SELECT * FROM eps_neighbor_counts('pr_arr', '{a}', 0.1)$$) > 0 AS parallel_arrays;
SELECT count(*) FROM eps_neighbor_counts('pr_pts', '{x,y}', 0.1);
-- row-level security and column privileges apply in the workers
CREATE ROLE pr_reader;
GRANT SELECT (id, x, y) ON pr_pts TO pr_reader;
ALTER TABLE pr_pts ENABLE ROW LEVEL SECURITY;
CREATE POLICY pr_even ON pr_pts FOR SELECT TO pr_reader USING (id % 2 = 0);
SET ROLE pr_reader;
SELECT count(*), min(id % 2), max(id % 2) FROM eps_neighbor_counts('pr_pts', '{x,y}', 0.1);
SELECT count(*) FROM eps_neighbor_counts('pr_pts', '{x,z}', 0.1);
RESET ROLE;
DROP POLICY pr_even ON pr_pts;
REVOKE ALL ON pr_pts FROM pr_reader;
DROP ROLE pr_reader;
-- a write-protected read: still read-only in the workers
SELECT count(*) FROM dbscan('pr_pts', '{x,y}', 0.1, 4) WHERE cluster IS NULL;
-- the aggregate called directly only counts
SELECT gpujoin_pack(0, id, x, y) FROM pr_pts;
-- and refuses a token this session did not issue (one naming a shared
-- segment, and one without), whether the leader or a worker meets it
-- first (terse: only a worker's error carries a CONTEXT line)
\set VERBOSITY terse
SELECT gpujoin_pack(8589934593, id, x, y) FROM pr_pts;
SELECT gpujoin_pack(5, id, x, y) FROM pr_pts;
SET max_parallel_workers_per_gather = 0;
SELECT gpujoin_pack(8589934593, id, x, y) FROM pr_pts;
SET max_parallel_workers_per_gather = 2;
\set VERBOSITY default
RESET gpujoin.parallel_read_min_rows;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
