-- The GPU host benchmarks' tables, included with \ir: sb2, 2,000,000
-- uniform 2-D rows; kc, 1,000,000 3-D references in 20 Gaussian clusters;
-- kq, 100,000 uniform 3-D queries.  Fixed seeds: every script and run
-- joins the same rows.
SELECT setseed(0.31);
DROP TABLE IF EXISTS sb2, kc, kq;
CREATE TABLE sb2 AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 2000000) i;
ALTER TABLE sb2 ADD PRIMARY KEY (id);
SELECT setseed(0.5);
CREATE TEMP TABLE centers AS SELECT c, random() * 100 AS cx, random() * 100 AS cy, random() * 100 AS cz FROM generate_series(0, 19) c;
CREATE TABLE kc AS SELECT i AS id,
    cx + 2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS x,
    cy + 2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS y,
    cz + 2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS z
    FROM generate_series(1, 1000000) i JOIN centers ON c = i % 20;
ALTER TABLE kc ADD PRIMARY KEY (id);
CREATE TABLE kq AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y, random() * 100 AS z FROM generate_series(1, 100000) i;
ALTER TABLE kq ADD PRIMARY KEY (id);
VACUUM ANALYZE sb2, kc, kq;
