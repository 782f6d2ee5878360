-- Basic API: results, symmetric output, id columns, coordinate types, GUCs.
CREATE EXTENSION gpujoin;

CREATE TABLE pts (id int PRIMARY KEY, x float8, y float8);
INSERT INTO pts VALUES (1, 0, 0), (2, 1, 0), (3, 0, 1), (4, 3, 3), (5, 3.5, 3), (6, 10, 10);

SELECT * FROM eps_selfjoin('pts', ARRAY['x', 'y'], 1.0) ORDER BY a, b;
SELECT * FROM eps_selfjoin('pts', '{x,y}', 1.5) ORDER BY a, b;
-- symmetric: both orientations, never a row with itself
SELECT * FROM eps_selfjoin('pts', '{x,y}', 1.0, NULL, true) ORDER BY a, b;
SELECT * FROM eps_selfjoin('pts', '{x,y}', 1.0, "symmetric" => true) ORDER BY a, b;
-- named arguments, explicit id column
SELECT * FROM eps_selfjoin(tbl => 'pts', cols => '{x}', eps => 0.5, id_col => 'id') ORDER BY a, b;

-- every supported coordinate and id type
CREATE TABLE typed (
    rid bigint, sid smallint,
    c_int2 smallint, c_int4 integer, c_int8 bigint,
    c_f4 real, c_f8 double precision, c_num numeric);
INSERT INTO typed VALUES
    (10, 1, 0, 0, 0, 0, 0, 0),
    (20, 2, 1, 1, 1, 1, 1, 1),
    (30, 3, 2, 2, 2, 2.5, 2, 2.000000001);
SELECT * FROM eps_selfjoin('typed', '{c_int2}', 1, 'rid') ORDER BY a, b;
SELECT * FROM eps_selfjoin('typed', '{c_int4}', 1, 'sid') ORDER BY a, b;
SELECT * FROM eps_selfjoin('typed', '{c_int8, c_f8}', 1.5, 'rid') ORDER BY a, b;
SELECT * FROM eps_selfjoin('typed', '{c_f4}', 1, 'rid') ORDER BY a, b;
SELECT * FROM eps_selfjoin('typed', '{c_num}', 1, 'rid') ORDER BY a, b;
-- a domain over a numeric type counts as that type
CREATE DOMAIN coord AS float8 CHECK (VALUE > -1e6);
CREATE TABLE dom (id int PRIMARY KEY, x coord);
INSERT INTO dom VALUES (1, 0), (2, 0.25);
SELECT * FROM eps_selfjoin('dom', '{x}', 0.25) ORDER BY a, b;

-- an empty table and a single row give no rows
CREATE TABLE empty (id int PRIMARY KEY, x float8);
SELECT count(*) FROM eps_selfjoin('empty', '{x}', 1);
INSERT INTO empty VALUES (1, 0);
SELECT count(*) FROM eps_selfjoin('empty', '{x}', 1);

-- GUCs
SET gpujoin.device = cpu;
SELECT count(*) FROM eps_selfjoin('pts', '{x,y}', 1.0);
RESET gpujoin.device;
SET gpujoin.cpu_threads = 1;
SELECT count(*) FROM eps_selfjoin('pts', '{x,y}', 1.0);
RESET gpujoin.cpu_threads;
SELECT name FROM gpujoin_info() ORDER BY name COLLATE "C";
SELECT value FROM gpujoin_info() WHERE name = 'version';

-- catalog properties the design requires
SELECT proname, provolatile, proparallel, prosecdef, obj_description(oid, 'pg_proc') IS NOT NULL AS has_comment
FROM pg_proc WHERE proname IN ('eps_selfjoin', 'eps_selfjoin_sql', 'gpujoin_info') ORDER BY proname;
