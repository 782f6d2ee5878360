-- eps_neighbors against its floor (issue 18, item 3): 2M points at about 30
-- and 300 neighbours a point, the function's lists against the same arrays
-- read back from a materialised copy (the cost of building and emitting
-- them in the backend without any join), and the counts (the join without
-- the arrays).  Consumers touch both arrays of every row.  Best of two.
-- Where marked, the GPU's lists are compared with the CPU engine's row by
-- row (0 rows differing).
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
\ir ../../bench/bench_timing.sql
SELECT setseed(0.15);
DROP TABLE IF EXISTS l2m, l3m, lists_copy;
CREATE TABLE l2m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 2000000) i;
CREATE TABLE l3m AS SELECT i AS id, (i % 500) * 0.2 + random() AS x, (i % 311) * 0.3 + random() AS y,
    random() * 10 AS z FROM generate_series(1, 2000000) i;
ALTER TABLE l2m ADD PRIMARY KEY (id);
ALTER TABLE l3m ADD PRIMARY KEY (id);
VACUUM ANALYZE l2m, l3m;
CREATE TEMP TABLE lr (case_name text, method text, seconds float8, result text);
CREATE FUNCTION pg_temp.lcase(c text, tbl text, cols text, eps float8, compare boolean)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE f text := format('eps_neighbors(%L, %L, %s)', tbl, cols, eps); bad bigint;
BEGIN
    PERFORM set_config('gpujoin.device', 'gpu', true);
    INSERT INTO lr SELECT c, 'counts', b.* FROM pg_temp.best_of(
        format('SELECT sum(n) FROM eps_neighbor_counts(%L, %L, %s)', tbl, cols, eps), 2) b;
    INSERT INTO lr SELECT c, 'lists', b.* FROM pg_temp.best_of(
        format('SELECT sum(cardinality(neighbors) + cardinality(dists)) FROM %s', f), 2) b;
    EXECUTE 'DROP TABLE IF EXISTS lists_copy';
    EXECUTE format('CREATE TABLE lists_copy AS SELECT * FROM %s', f);
    INSERT INTO lr SELECT c, 'from a table', b.* FROM pg_temp.best_of(
        'SELECT sum(cardinality(neighbors) + cardinality(dists)) FROM lists_copy', 2) b;
    PERFORM set_config('gpujoin.device', 'cpu', true);
    INSERT INTO lr SELECT c, 'lists, CPU engine', b.* FROM pg_temp.best_of(
        format('SELECT sum(cardinality(neighbors) + cardinality(dists)) FROM %s', f), 1) b;
    IF compare THEN
        -- the GPU's lists (the copy) against the CPU engine's, row by row
        EXECUTE format('SELECT count(*) FROM lists_copy l FULL JOIN %s c ON l.id = c.id
                        WHERE l.neighbors IS DISTINCT FROM c.neighbors OR l.dists IS DISTINCT FROM c.dists', f)
            INTO bad;
        INSERT INTO lr VALUES (c, 'rows differing', NULL, bad::text);
    END IF;
END $$;
SELECT pg_temp.lcase('2M 2-D uniform ~30', 'l2m', '{x,y}', 0.2185, true);
SELECT pg_temp.lcase('2M 2-D uniform ~300', 'l2m', '{x,y}', 0.691, false);
SELECT pg_temp.lcase('2M 3-D clustered', 'l3m', '{x,y,z}', 0.35, true);
SET gpujoin.device = gpu;
EXPLAIN (ANALYZE, COSTS OFF) SELECT sum(cardinality(neighbors) + cardinality(dists)) FROM eps_neighbors('l2m', '{x,y}', 0.2185);
SELECT case_name,
       round(max(seconds) FILTER (WHERE method = 'counts')::numeric, 3) AS counts_s,
       round(max(seconds) FILTER (WHERE method = 'lists')::numeric, 3) AS lists_s,
       round(max(seconds) FILTER (WHERE method = 'lists, CPU engine')::numeric, 3) AS lists_cpu_s,
       round(max(seconds) FILTER (WHERE method = 'from a table')::numeric, 3) AS table_s,
       round((max(seconds) FILTER (WHERE method = 'lists') /
              max(seconds) FILTER (WHERE method = 'from a table'))::numeric, 2) AS lists_over_table,
       max(result) FILTER (WHERE method = 'lists') = max(result) FILTER (WHERE method = 'from a table') AND
       max(result) FILTER (WHERE method = 'lists') = max(result) FILTER (WHERE method = 'lists, CPU engine') AS same,
       max(result) FILTER (WHERE method = 'rows differing') AS gpu_cpu_rows_differing
FROM lr GROUP BY case_name ORDER BY min(ctid);
