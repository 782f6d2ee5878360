-- eps_selfjoin_sql: any read-only SELECT returning id, coordinates.
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE TABLE places (id bigint PRIMARY KEY, g point, kind text);
INSERT INTO places VALUES (1, '(0,0)', 'a'), (2, '(0.5,0)', 'a'), (3, '(0.9,0.9)', 'b'), (4, '(5,5)', 'a');
-- the PostGIS pattern: SELECT id, ST_X(g), ST_Y(g) FROM places WHERE ...
SELECT * FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places', 1) ORDER BY a, b;
SELECT * FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places WHERE kind = ''a''', 1) ORDER BY a, b;
SELECT * FROM eps_selfjoin_sql('SELECT id, ARRAY[g[0], g[1]] FROM places', 1, true) ORDER BY a, b;
SELECT * FROM eps_selfjoin_sql('WITH w AS (SELECT * FROM places) SELECT id::int, g[0]::real FROM w', 1) ORDER BY a, b;
-- rejected: anything but one read-only SELECT
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('INSERT INTO places VALUES (9, ''(1,1)'', ''c'') RETURNING id, 1.0', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('UPDATE places SET kind = ''z'' RETURNING id, 1.0', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('DELETE FROM places RETURNING id, 1.0', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('WITH d AS (DELETE FROM places RETURNING *) SELECT id, 1.0 FROM d', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, 1.0 INTO newtab FROM places', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, 1.0 FROM places FOR UPDATE', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT 1, 1.0; SELECT 2, 2.0', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('DROP TABLE places', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELEC 1', 1)$$);
SELECT count(*) FROM places;
-- rejected: wrong shape
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id FROM places', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT kind, g[0] FROM places', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT 1.5::float8, g[0] FROM places', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, kind FROM places', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, g FROM places', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, ARRAY[1.0], ARRAY[2.0] FROM places', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, ARRAY[1,2] FROM places', 1)$$);
-- a volatile function inside the query is the caller's business
SELECT count(*) FROM eps_selfjoin_sql('SELECT i, random() FROM generate_series(1, 10) i', 2);

-- parameters: params => row(...) gives $1, $2, ... their values and types,
-- as a prepared statement's; the same rows as the values written in
SELECT * FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places WHERE kind = $1', 1,
                               params => row('a'::text)) ORDER BY a, b;
SELECT * FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places WHERE kind = $1 AND id <> $2', 1,
                               params => row('a'::text, 4)) ORDER BY a, b;
-- an untyped literal takes the type its use gives it, as PREPARE's would
SELECT * FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places WHERE id <= $1', 1,
                               params => row('3')) ORDER BY a, b;
-- a query point as parameters; both queries of a join share them
SELECT * FROM knn_join_sql('SELECT 0, $1::float8, $2::float8',
                           'SELECT id, g[0], g[1] FROM places WHERE kind = $3', 2,
                           params => row(0.4, 0.1, 'a'::text)) ORDER BY q, rank;
SELECT * FROM eps_join_sql('SELECT id, g[0], g[1] FROM places WHERE kind = $1',
                           'SELECT id, g[0], g[1] FROM places WHERE kind <> $1', 2,
                           params => row('a'::text)) ORDER BY r, s;
-- through PREPARE, the client's own parameter passed on
PREPARE near(text) AS SELECT count(*) FROM eps_selfjoin_sql(
    'SELECT id, g[0], g[1] FROM places WHERE kind = $1', 1, params => row($1));
EXECUTE near('a');
EXECUTE near('b');
DEALLOCATE near;
-- a NULL parameter is NULL; an unused one is fine
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places WHERE kind = $1', 1,
                                      params => row(NULL::text));
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places', 1, params => row(1, 'x'::text));
-- errors: a $n without a value says how to give one; a value of the wrong type
\set VERBOSITY default
SELECT * FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places WHERE kind = $1', 1);
SELECT * FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places WHERE kind = $2', 1, params => row('a'::text));
\set VERBOSITY terse
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places WHERE id = $1', 1, params => row('x'))$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, g[0], g[1] FROM places WHERE id = $1', 1, params => row('x'::text))$$);
