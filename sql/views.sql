-- Views, materialized views, partitioned and foreign tables; identifiers that need quoting.
CREATE TABLE base (id int PRIMARY KEY, x float8, y float8, keep boolean);
INSERT INTO base SELECT i, i % 7, i / 7, i % 2 = 0 FROM generate_series(1, 49) i;
CREATE VIEW v AS SELECT id, x, y FROM base WHERE keep;
SELECT count(*) FROM eps_selfjoin('v', '{x,y}', 1.5, 'id');
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, x, y FROM base WHERE keep', 1.5);
CREATE MATERIALIZED VIEW mv AS SELECT id, x, y FROM base;
SELECT count(*) FROM eps_selfjoin('mv', '{x,y}', 1.0, 'id');
CREATE UNIQUE INDEX ON mv (id);
-- a view has no primary key: id_col is required
SELECT count(*) FROM eps_selfjoin('v', '{x,y}', 1.5);

-- partitioned table with a primary key
CREATE TABLE part (id int PRIMARY KEY, x float8) PARTITION BY RANGE (id);
CREATE TABLE part1 PARTITION OF part FOR VALUES FROM (0) TO (100);
CREATE TABLE part2 PARTITION OF part FOR VALUES FROM (100) TO (200);
INSERT INTO part SELECT i, i * 0.5 FROM generate_series(0, 199) i;
SELECT count(*) FROM eps_selfjoin('part', '{x}', 0.5);

-- foreign table through file_fdw's program option
CREATE EXTENSION file_fdw;
CREATE SERVER files FOREIGN DATA WRAPPER file_fdw;
CREATE FOREIGN TABLE ft (id int, x float8, y float8) SERVER files
    OPTIONS (program 'printf "1,0,0\n2,0,1\n3,5,5\n4,5,5.5\n"', format 'csv');
SELECT * FROM eps_selfjoin('ft', '{x,y}', 1, 'id') ORDER BY a, b;

-- names that must be quoted, in a schema that must be quoted
CREATE SCHEMA "Odd Schema";
CREATE TABLE "Odd Schema"."My Table" ("ID col" int PRIMARY KEY, "x""q" float8, "Y" float8, "select" float8);
INSERT INTO "Odd Schema"."My Table" VALUES (1, 0, 0, 0), (2, 0, 1, 0), (3, 9, 9, 0);
SELECT * FROM eps_selfjoin('"Odd Schema"."My Table"', ARRAY['x"q', 'Y', 'select'], 1) ORDER BY a, b;
SELECT * FROM eps_selfjoin('"Odd Schema"."My Table"', ARRAY['x"q'], 1, 'ID col') ORDER BY a, b;
-- a column name that looks like SQL is only ever a name
SELECT * FROM eps_selfjoin('"Odd Schema"."My Table"', ARRAY['x"q', 'Y; DROP TABLE base'], 1);
SELECT count(*) FROM base;
-- a table found through search_path is read by its schema-qualified name
SET search_path = "Odd Schema", public;
SELECT * FROM eps_selfjoin('"My Table"', '{Y}', 1) ORDER BY a, b;
RESET search_path;
