-- Keys of any type against integer ids (issue 44, item 2): the same rows
-- with an integer, a uuid, a text and a two-column key, each function's
-- classic call on the integer table and its keyed call on the others, side
-- by side in one run (best of 2, gpujoin.device as the session has it).
-- What a key costs: keeping each row's value, ranking them once, serial
-- reads (the parallel read packs integer ids), and the keys on output.
--   psql -v rows=1000000 -f regress/bench/bench_keys.sql
-- prints one row per (function, key) with seconds and the ratio to the
-- integer ids' call; every call's result (a count) must agree.
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
\ir bench_timing.sql
\if :{?rows}
\else
\set rows 1000000
\endif
SELECT setseed(0.44);
DROP TABLE IF EXISTS bk_int, bk_uuid, bk_text, bk_pair;
CREATE TABLE bk_int AS SELECT i AS id, random() AS x, random() AS y FROM generate_series(1, :rows) i;
ALTER TABLE bk_int ADD PRIMARY KEY (id);
CREATE TABLE bk_uuid AS SELECT md5(id::text)::uuid AS id, x, y FROM bk_int;
ALTER TABLE bk_uuid ADD PRIMARY KEY (id);
CREATE TABLE bk_text AS SELECT 'user-' || md5(id::text) AS id, x, y FROM bk_int;
ALTER TABLE bk_text ADD PRIMARY KEY (id);
CREATE TABLE bk_pair AS SELECT id % 97 AS tenant, id AS n, x, y FROM bk_int;
ALTER TABLE bk_pair ADD PRIMARY KEY (tenant, n);
VACUUM ANALYZE bk_int, bk_uuid, bk_text, bk_pair;
-- eps for about 6 neighbours a row, whatever the size
SELECT sqrt(6.0 / (pi() * :rows)) AS eps \gset

CREATE TEMP TABLE bk (fn text, key text, seconds float8, result text);
CREATE FUNCTION pg_temp.bk_case(fn text, args text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    k record;
BEGIN
    FOR k IN SELECT * FROM (VALUES (1, 'bigint ids', 'bk_int', ''),
                                   (2, 'uuid', 'bk_uuid', ', key => NULL::uuid'),
                                   (3, 'text', 'bk_text', ', key => NULL::text'),
                                   (4, 'record (2 columns)', 'bk_pair', ', key => NULL::record')) v(o, name, tbl, w)
             ORDER BY o LOOP
        INSERT INTO bk SELECT fn, k.name, b.* FROM pg_temp.best_of(
            format('SELECT count(*) FROM %s(%L, %s%s)', fn, k.tbl, args, k.w), 2) b;
    END LOOP;
END $$;
SELECT pg_temp.bk_case('eps_selfjoin', format('''{x,y}'', %s', :eps));
SELECT pg_temp.bk_case('knn_selfjoin', '''{x,y}'', 5');
SELECT pg_temp.bk_case('eps_neighbors', format('''{x,y}'', %s', :eps));
SELECT pg_temp.bk_case('dbscan', format('''{x,y}'', %s, 4', :eps));

-- where a keyed call's extra time goes: the read's DEBUG line (ms in the
-- query: serial for keys; ms after: ranking the keys), ids then each key
SET client_min_messages = debug1;
SELECT count(*) FROM eps_selfjoin('bk_int', '{x,y}', :eps);
SELECT count(*) FROM eps_selfjoin('bk_uuid', '{x,y}', :eps, key => NULL::uuid);
SELECT count(*) FROM eps_selfjoin('bk_text', '{x,y}', :eps, key => NULL::text);
SELECT count(*) FROM eps_selfjoin('bk_pair', '{x,y}', :eps, key => NULL::record);
SET client_min_messages = warning;
SELECT current_setting('gpujoin.device') AS device, :rows AS rows;
SELECT b.fn, b.key, round(b.seconds::numeric, 3) AS seconds,
       round((b.seconds / i.seconds)::numeric, 2) AS vs_ids,
       b.result = i.result AS same_count
FROM bk b JOIN bk i ON i.fn = b.fn AND i.key = 'bigint ids'
ORDER BY b.fn, b.seconds;
DROP TABLE bk_int, bk_uuid, bk_text, bk_pair;
