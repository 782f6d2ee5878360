-- Issue 17's rule for gpujoin.eps_method = auto on the GPU host
-- (regress/gpu/host/run.sh, step auto): the path auto chooses is never more
-- than 10% slower than the other.  Syn16's law (16 exponential columns, rate
-- 40): the 2M-row self join (Syn16D2M) and a 1M x 1M eps_join, each at eps
-- 0.03 and 0.04, and a 20K-row self join (auto's fixed costs); auto and
-- every forced method taken in turn, three rounds, so that a drift of the
-- host falls on every method alike; medians.  Then EXPLAIN ANALYZE of auto
-- and of blocks with DEBUG1 (the sample's and the model's time, the key's
-- dimensions) for where any gap goes.  Every method must give the same count.
\set ON_ERROR_STOP on
\pset pager off
CREATE EXTENSION IF NOT EXISTS gpujoin;
SET max_parallel_workers_per_gather = 8;
SELECT setseed(0.21);
DROP TABLE IF EXISTS a16a, a16b, a16;
CREATE TABLE a16a (id int PRIMARY KEY, v float8[]);
INSERT INTO a16a SELECT i, ARRAY(SELECT -ln(1 - random()) / 40 + 0 * i FROM generate_series(1, 16))
FROM generate_series(1, 1000000) i;
CREATE TABLE a16b (id int PRIMARY KEY, v float8[]);
INSERT INTO a16b SELECT i, ARRAY(SELECT -ln(1 - random()) / 40 + 0 * i FROM generate_series(1, 16))
FROM generate_series(1, 1000000) i;
CREATE TABLE a16 AS SELECT id, v FROM a16a UNION ALL SELECT id + 1000000, v FROM a16b;
ALTER TABLE a16 ADD PRIMARY KEY (id);
VACUUM ANALYZE a16a, a16b, a16;
CREATE VIEW a16_20k AS SELECT * FROM a16 WHERE id <= 20000;

\i regress/gpu/host/timed.sql
SET gpujoin.device = gpu;
-- the session's CUDA start, not timed
SELECT count(*) FROM eps_join('a16a', 'a16b', '{v}', 0.001);
DO $$
DECLARE
    c record;
    m text;
BEGIN
    FOR round IN 1 .. 3 LOOP
        FOR c IN SELECT * FROM (VALUES
            ('self 0.03', $q$SELECT count(*) FROM eps_selfjoin('a16', '{v}', 0.03)$q$, '{auto,blocks,brute}'::text[]),
            ('join 0.03', $q$SELECT count(*) FROM eps_join('a16a', 'a16b', '{v}', 0.03)$q$, '{auto,blocks,brute}'),
            ('self 0.04', $q$SELECT count(*) FROM eps_selfjoin('a16', '{v}', 0.04)$q$, '{auto,blocks,brute}'),
            ('join 0.04', $q$SELECT count(*) FROM eps_join('a16a', 'a16b', '{v}', 0.04)$q$, '{auto,blocks,brute}'),
            ('self 20K 0.03', $q$SELECT count(*) FROM eps_selfjoin('a16_20k', '{v}', 0.03, 'id')$q$, '{auto,blocks,brute}'))
            AS t (what, q, methods)
        LOOP
            FOREACH m IN ARRAY c.methods LOOP
                PERFORM set_config('gpujoin.eps_method', m, false);
                PERFORM pg_temp.timed(c.what || ', ' || m, c.q, 1);
            END LOOP;
        END LOOP;
    END LOOP;
    PERFORM set_config('gpujoin.eps_method', 'auto', false);
END $$;

-- medians of the rounds, and auto against the best forced method
SELECT split_part(what, ', ', 1) AS "case", split_part(what, ', ', 2) AS method,
       (percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds))::numeric(8, 3) AS median_s,
       min(seconds)::numeric(8, 3) AS best_s, max(seconds)::numeric(8, 3) AS worst_s,
       count(DISTINCT result) AS answers, max(result) AS result
FROM timings GROUP BY 1, 2 ORDER BY 1, 2;
WITH m AS (
    SELECT split_part(what, ', ', 1) AS c, split_part(what, ', ', 2) AS method,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) AS med
    FROM timings GROUP BY 1, 2)
SELECT a.c AS "case", a.med::numeric(8, 3) AS auto_s,
       min(f.med)::numeric(8, 3) AS best_forced_s,
       (a.med / min(f.med))::numeric(6, 3) AS auto_over_best
FROM m a JOIN m f ON f.c = a.c AND f.method <> 'auto'
WHERE a.method = 'auto' GROUP BY a.c, a.med ORDER BY 1;
-- the same answer from every method
SELECT split_part(what, ', ', 1) AS "case", count(DISTINCT result) AS answers
FROM timings GROUP BY 1 ORDER BY 1;

SET client_min_messages = debug1;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('a16', '{v}', 0.03);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_join('a16a', 'a16b', '{v}', 0.03);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('a16', '{v}', 0.04);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('a16_20k', '{v}', 0.03, 'id');
SET gpujoin.eps_method = blocks;
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('a16', '{v}', 0.03);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_join('a16a', 'a16b', '{v}', 0.03);
EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('a16', '{v}', 0.04);
RESET gpujoin.eps_method;
RESET client_min_messages;
