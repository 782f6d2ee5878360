-- Boundary semantics: inclusive eps, duplicates, one cell, huge and tiny eps.
-- integer lattice: axis neighbours are exactly eps = 1 apart and included
CREATE TABLE lat AS SELECT (i * 10 + j) AS id, i::float8 AS x, j::float8 AS y
    FROM generate_series(0, 9) i, generate_series(0, 9) j;
ALTER TABLE lat ADD PRIMARY KEY (id);
SELECT count(*), min(dist), max(dist) FROM eps_selfjoin('lat', '{x,y}', 1.0);
SELECT count(*) FROM eps_selfjoin('lat', '{x,y}', 0.9999999999999999);
-- diagonals are sqrt(2) apart: the float64 rule decides, as documented
SELECT count(*) FROM eps_selfjoin('lat', '{x,y}', sqrt(2.0::float8));
SELECT count(*) FROM eps_selfjoin('lat', '{x,y}', 1.4142135623730951);
SELECT count(*) FROM eps_selfjoin('lat', '{x,y}', 1.414213562373095);
-- 3-4-5 triangles at exactly eps
SELECT * FROM eps_selfjoin_sql('SELECT i, 3.0 * i, 4.0 * i FROM generate_series(1, 4) i', 5) ORDER BY a, b;
-- duplicate points pair at distance 0; a row never pairs with itself
CREATE TABLE dup (id int PRIMARY KEY, x float8, y float8);
INSERT INTO dup SELECT i, 1, 1 FROM generate_series(1, 5) i;
INSERT INTO dup VALUES (6, 1, 2);
SELECT * FROM eps_selfjoin('dup', '{x,y}', 0.5) ORDER BY a, b;
SELECT count(*) FROM eps_selfjoin('dup', '{x,y}', 0.5, NULL, true);
-- duplicate ids are returned as given
SELECT * FROM eps_selfjoin_sql('SELECT 7, 0.0 UNION ALL SELECT 7, 0.5 UNION ALL SELECT 3, 0.75', 1) ORDER BY a, b, dist;
-- everything in one cell: all n(n-1)/2 pairs
SELECT count(*) FROM eps_selfjoin_sql('SELECT i, i * 1e-9, i * 1e-9 FROM generate_series(1, 2000) i', 1);
-- huge eps: eps*eps overflows float64, every pair qualifies
SELECT count(*), max(dist) FROM eps_selfjoin_sql('SELECT i, i * 1e150, -i * 1e150 FROM generate_series(1, 50) i', 1e200);
SELECT count(*) FROM eps_selfjoin_sql('SELECT i, (i % 3 - 1) * 1.5e308 FROM generate_series(1, 30) i', 1e300);
-- tiny eps: only exact (or subnormally close) duplicates
SELECT count(*) FROM eps_selfjoin_sql('SELECT i, (i % 4)::float8 FROM generate_series(1, 40) i', 1e-300);
SELECT count(*) FROM eps_selfjoin_sql('SELECT i, (i % 4) * 1e-320 FROM generate_series(1, 40) i', 1e-300);
-- wide coordinate range with small eps
SELECT * FROM eps_selfjoin_sql('SELECT 1, -1e15::float8 UNION ALL SELECT 2, -1e15 + 0.125 UNION ALL SELECT 3, 1e15', 0.125) ORDER BY a, b;
