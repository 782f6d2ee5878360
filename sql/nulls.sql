-- NULL, NaN and infinite ids or coordinates: such rows are skipped, one NOTICE says so.
CREATE TABLE n (id int, x float8, y float8, v numeric);
INSERT INTO n VALUES
    (1, 0, 0, 0), (2, 0, 0.5, 0.5),
    (NULL, 0, 0, 0),            -- NULL id
    (3, NULL, 0, 0),            -- NULL coordinate
    (4, 'NaN', 0, 'NaN'),       -- NaN
    (5, 'Infinity', 0, 0),      -- infinite
    (6, 0, '-Infinity', 0),
    (7, 0, 0.25, 0.25);
SELECT * FROM eps_selfjoin('n', '{x,y}', 1, 'id') ORDER BY a, b;
-- numeric NaN and numeric infinity are skipped the same way
INSERT INTO n VALUES (8, 0, 0, 'Infinity');
SELECT * FROM eps_selfjoin('n', '{v}', 1, 'id') ORDER BY a, b;
-- every row skipped: no rows, one notice
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, x FROM n WHERE id IS NULL OR x = ''NaN''', 1);
-- float arrays: a NULL array or a NULL element skips the row
CREATE TABLE na (id int PRIMARY KEY, p float8[]);
INSERT INTO na VALUES (1, '{0,0}'), (2, '{0,1}'), (3, NULL), (4, '{0,NULL}'), (5, '{NaN,0}'), (6, '{0,-Infinity}');
SELECT * FROM eps_selfjoin('na', '{p}', 1) ORDER BY a, b;
-- no notice when nothing is skipped
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, p FROM na WHERE id <= 2', 1);
