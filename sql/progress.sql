-- gpujoin_progress: one row per running join.  Another session watching a
-- long join is checked by regress/progress_check.sh; here a join's own
-- input query looks at the view while the join reads it.
CREATE TABLE pg_pts (id int PRIMARY KEY, x float8, y float8);
INSERT INTO pg_pts SELECT i, i % 100, i / 100 FROM generate_series(1, 5000) i;
ANALYZE pg_pts;
-- nothing runs: no rows
SELECT count(*) FROM gpujoin_progress;
-- what the view says of the join that calls this, while it reads
CREATE FUNCTION pg_temp.peek() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM gpujoin_progress WHERE pid = pg_backend_pid() LOOP
        RAISE NOTICE 'function %, phase %, rows read %, of a planner''s estimate %, result rows %, of %, percent within 0-100 %, datname %',
            r.function, r.phase, r.rows_read, r.rows_total > 0, r.result_rows, r.result_total,
            r.percent BETWEEN 0 AND 100, r.datname = current_database();
    END LOOP;
    RETURN 1;
END $$;
-- a query's read: of the size the planner estimates for it
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, x, y FROM pg_pts WHERE (SELECT pg_temp.peek()) = 1', 1.5);
SELECT count(*) FROM knn_selfjoin_sql('SELECT id, x, y FROM pg_pts WHERE (SELECT pg_temp.peek()) = 1', 3);
-- a join's second read adds to the first
-- (knn_join reads its references first, then its queries)
SELECT count(*) FROM knn_join_sql('SELECT id, x, y FROM pg_pts WHERE id <= 10 AND (SELECT pg_temp.peek()) = 1',
                                  'SELECT id, x, y FROM pg_pts', 3);
-- a join that failed, and one that stopped early, leave no row behind
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, x, 1 / (id - 77) FROM pg_pts', 1.5);
SELECT count(*) FROM gpujoin_progress;
SELECT count(*) FROM (SELECT * FROM eps_selfjoin('pg_pts', '{x,y}', 1.5) LIMIT 1) s;
SELECT count(*) FROM gpujoin_progress;
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM eps_selfjoin('pg_pts', '{x,y}', 1.5);
MOVE 2 IN c;
CLOSE c;
COMMIT;
SELECT count(*) FROM gpujoin_progress;
-- inside a subtransaction that rolls back
DO $$
BEGIN
    BEGIN
        PERFORM count(*) FROM eps_selfjoin_sql('SELECT id, x, 1 / (id - 77) FROM pg_pts', 1.5);
    EXCEPTION WHEN division_by_zero THEN
        RAISE NOTICE 'caught';
    END;
END $$;
SELECT count(*) FROM gpujoin_progress;
-- two joins running at once in one query: neither leaves a row behind, and
-- the next join reports again
SELECT count(*) FROM (SELECT * FROM eps_selfjoin('pg_pts', '{x,y}', 1.5) LIMIT 3) a,
                     (SELECT * FROM knn_selfjoin('pg_pts', '{x,y}', 1) LIMIT 3) b;
SELECT count(*) FROM gpujoin_progress;
SELECT count(*) FROM dbscan_sql('SELECT id, x, y FROM pg_pts WHERE (SELECT pg_temp.peek()) = 1', 1.5, 3);
