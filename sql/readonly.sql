-- The input is read read-only and validated: a query cannot change the
-- database by any route; a regclass of 0 is a clean error.
CREATE TABLE ro_pts (id int PRIMARY KEY, x float8, y float8);
INSERT INTO ro_pts VALUES (1, 0, 0), (2, 0.5, 0), (3, 5, 5);
CREATE TABLE ro_log (n int);
CREATE SEQUENCE ro_seq;
CREATE FUNCTION ro_write() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO ro_log VALUES (1);
    RETURN 1;
END $$;
CREATE FUNCTION ro_read() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN (SELECT count(*) FROM ro_pts);
END $$;
CREATE TEMP TABLE ro_temp (n int);
CREATE FUNCTION pg_temp.ro_write_temp() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO ro_temp VALUES (1);
    RETURN 1;
END $$;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- a volatile function that writes: refused, nothing written
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM ro_pts WHERE ro_write() = 1', 1)$$);
SELECT pg_temp.err($$SELECT * FROM knn_selfjoin_sql('SELECT id, x, y FROM ro_pts WHERE ro_write() = 1', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, x, nextval(''ro_seq'')::float8 FROM ro_pts', 1)$$);
-- the error says whose guard refused the write, and why
SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM ro_pts WHERE ro_write() = 1', 1);
-- the same through a view read by the relation form
CREATE VIEW ro_view AS SELECT id, x, y FROM ro_pts WHERE ro_write() = 1;
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('ro_view', '{x,y}', 1, 'id')$$);
-- a temporary table is written in read-only mode too: caught, rolled back
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM ro_pts WHERE pg_temp.ro_write_temp() = 1', 1)$$);
-- the same inside a transaction that has written already
BEGIN;
INSERT INTO ro_temp VALUES (2);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM ro_pts WHERE pg_temp.ro_write_temp() = 1', 1)$$);
COMMIT;
SELECT (SELECT count(*) FROM ro_log) AS log_rows, (SELECT count(*) FROM ro_temp) AS temp_rows,
       (SELECT last_value FROM ro_seq) AS seq, (SELECT is_called FROM ro_seq) AS seq_called;
-- a volatile function that only reads is fine, also inside INSERT ... SELECT
SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM ro_pts WHERE ro_read() = 3', 1) ORDER BY a, b;
CREATE TABLE ro_out (a bigint, b bigint, dist float8);
INSERT INTO ro_out SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM ro_pts WHERE ro_read() = 3', 1);
INSERT INTO ro_out SELECT * FROM eps_selfjoin('ro_pts', '{x,y}', 1);
SELECT count(*) FROM ro_out;
-- read-only mode ends with the read: writing afterwards works
INSERT INTO ro_log VALUES (7);
SELECT count(*) FROM ro_log;
SHOW transaction_read_only;

-- regclass 0 ('-') is no relation
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('-'::regclass, '{x,y}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM knn_join('-'::regclass, 'ro_pts', '{x,y}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM knn_selfjoin(0::oid::regclass, '{x,y}', 1)$$);
SELECT pg_temp.err($$SELECT eps_selfjoin('-'::regclass, '{x,y}', 1)$$);

-- the parallel read's probe of an array column's length runs under the same
-- guard: a row-level security policy that writes is refused there too
CREATE TABLE ro_arr (id int PRIMARY KEY, a float8[]);
INSERT INTO ro_arr SELECT i, ARRAY[i, i] FROM generate_series(1, 100) i;
ANALYZE ro_arr;
CREATE ROLE ro_user;
GRANT SELECT ON ro_arr TO ro_user;
GRANT INSERT ON ro_log TO ro_user;
ALTER TABLE ro_arr ENABLE ROW LEVEL SECURITY;
CREATE POLICY ro_arr_writes ON ro_arr FOR SELECT TO ro_user USING (ro_write() = 1);
SELECT count(*) AS log_before FROM ro_log;
SET gpujoin.parallel_read_min_rows = 0;
SET ROLE ro_user;
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('ro_arr', '{a}', 1)$$);
RESET ROLE;
RESET gpujoin.parallel_read_min_rows;
SELECT count(*) AS log_after FROM ro_log;
DROP POLICY ro_arr_writes ON ro_arr;
REVOKE ALL ON ro_arr FROM ro_user;
REVOKE ALL ON ro_log FROM ro_user;
DROP ROLE ro_user;
