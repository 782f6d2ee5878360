-- The caller's privileges apply: SPI runs the reads as the calling role.
CREATE TABLE secret (id int PRIMARY KEY, x float8, y float8, owner_name text);
INSERT INTO secret VALUES (1, 0, 0, 'alice'), (2, 0, 0.5, 'bob'), (3, 0, 0.75, 'alice');
CREATE ROLE gj_reader;
SET ROLE gj_reader;
SELECT * FROM eps_selfjoin('secret', '{x,y}', 1);
SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM secret', 1);
RESET ROLE;
-- column privileges: x only is not enough to read y
GRANT SELECT (id, x) ON secret TO gj_reader;
SET ROLE gj_reader;
SELECT * FROM eps_selfjoin('secret', '{x}', 1) ORDER BY a, b;
SELECT * FROM eps_selfjoin('secret', '{x,y}', 1);
RESET ROLE;
-- row-level security filters the rows the join sees
GRANT SELECT ON secret TO gj_reader;
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_alice ON secret FOR SELECT TO gj_reader USING (owner_name = 'alice');
SET ROLE gj_reader;
SELECT * FROM eps_selfjoin('secret', '{x,y}', 1) ORDER BY a, b;
RESET ROLE;
DROP TABLE secret;
DROP ROLE gj_reader;
