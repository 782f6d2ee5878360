-- Per-row functions: eps_neighbor_counts, eps_neighbors, dbscan (and their
-- _sql forms).  Hand-made sets check each rule; random sets are checked
-- against eps_selfjoin (clustering_postgis checks dbscan against PostGIS).

-- Two clusters of four points, a border point exactly eps from both, three
-- duplicates, one far point.  eps 1: the squares' sides (0.5) and diagonals
-- (0.707) are within eps, the border point (1.5, 0) is exactly 1 from (0.5, 0)
-- and from (2.5, 0).
CREATE TABLE c_pts (id int PRIMARY KEY, x float8, y float8);
INSERT INTO c_pts VALUES
  (1, 0, 0), (2, 0.5, 0), (3, 0, 0.5), (4, 0.5, 0.5),
  (11, 2.5, 0), (12, 3, 0), (13, 2.5, 0.5), (14, 3, 0.5),
  (20, 1.5, 0),
  (50, 20, 20), (51, 20, 20), (52, 20, 20),
  (99, 10, 10),
  (100, NULL, 1);   -- skipped: NULL coordinate

SELECT * FROM eps_neighbor_counts('c_pts', '{x,y}', 1) ORDER BY id;
SELECT * FROM eps_neighbors('c_pts', '{x,y}', 1) ORDER BY id;
-- minpts 4: the squares are core, 20 is a border row of both; it joins
-- cluster 0, the one whose smallest core id (1) is least
SELECT * FROM dbscan('c_pts', '{x,y}', 1, 4) ORDER BY id;
-- the same with the clusters' ids swapped: now (2.5, 0)'s cluster has id 1
CREATE TABLE c_swap AS
  SELECT CASE WHEN id BETWEEN 1 AND 4 THEN id + 30 WHEN id BETWEEN 11 AND 14 THEN id - 10 ELSE id END AS id, x, y
  FROM c_pts;
ALTER TABLE c_swap ADD PRIMARY KEY (id);
SELECT * FROM dbscan('c_swap', '{x,y}', 1, 4) ORDER BY id;
-- minpts 3: the duplicates are a cluster; 20 (3 rows within eps) is core and
-- bridges the squares into one cluster
SELECT * FROM dbscan('c_pts', '{x,y}', 1, 3) ORDER BY id;
-- minpts 1: every row is core; minpts 2: lone rows are noise
SELECT cluster, is_core, array_agg(id ORDER BY id) FROM dbscan('c_pts', '{x,y}', 1, 1) GROUP BY 1, 2 ORDER BY 1;
SELECT cluster, is_core, array_agg(id ORDER BY id) FROM dbscan('c_pts', '{x,y}', 1, 2) GROUP BY 1, 2 ORDER BY 1;
-- just below the boundary the border row is noise
SELECT id, cluster, is_core FROM dbscan('c_pts', '{x,y}', 0.9999999999999999, 4) WHERE id = 20;
-- everything noise; everything one cluster
SELECT count(*) FILTER (WHERE cluster IS NULL) AS noise, count(*) FROM dbscan('c_pts', '{x,y}', 0.1, 2);
SELECT count(DISTINCT cluster) AS clusters, bool_and(is_core) AS all_core FROM dbscan('c_pts', '{x,y}', 1000, 5);

-- the _sql forms and a custom scan switched off give the same rows
SELECT count(*) FROM (SELECT * FROM dbscan_sql('SELECT id, x, y FROM c_pts', 1, 4)
   EXCEPT ALL SELECT * FROM dbscan('c_pts', '{x,y}', 1, 4)) d;
SELECT count(*) FROM (SELECT * FROM eps_neighbor_counts_sql('SELECT id, x, y FROM c_pts', 1)
   EXCEPT ALL SELECT * FROM eps_neighbor_counts('c_pts', '{x,y}', 1)) d;
SELECT * FROM eps_neighbors_sql('SELECT id, x, y FROM c_pts WHERE id < 10', 1) ORDER BY id;
SET gpujoin.custom_scan = off;
SELECT * FROM dbscan('c_pts', '{x,y}', 1, 4) ORDER BY id LIMIT 3;
SELECT * FROM eps_neighbors('c_pts', '{x,y}', 1) ORDER BY id LIMIT 2;
RESET gpujoin.custom_scan;

-- errors and empty input
SELECT * FROM dbscan('c_pts', '{x,y}', 1, 0);
SELECT * FROM dbscan('c_pts', '{x,y}', 0, 4);
SELECT * FROM dbscan('c_pts', '{x,y}', 'NaN', 4);
SELECT * FROM dbscan('c_pts', '{x,y}', 1, NULL);
SELECT * FROM eps_neighbor_counts('c_pts', '{x,nope}', 1);
SELECT * FROM eps_neighbors(NULL, '{x,y}', 1);
SELECT * FROM eps_neighbor_counts_sql('SELECT 1', 1);
CREATE TABLE c_empty (id int PRIMARY KEY, x float8, y float8);
SELECT count(*) FROM dbscan('c_empty', '{x,y}', 1, 2);
SELECT count(*) FROM eps_neighbors('c_empty', '{x,y}', 1);
SELECT count(*) FROM eps_neighbor_counts('c_empty', '{x,y}', 1);

-- random data: 3000 points in [0,10]^2 with snapped duplicates
SELECT setseed(0.25);
CREATE TABLE c_rand AS
  SELECT i AS id,
         CASE WHEN i % 7 = 0 THEN round(random() * 20) / 2 ELSE random() * 10 END AS x,
         CASE WHEN i % 7 = 0 THEN round(random() * 20) / 2 ELSE random() * 10 END AS y
  FROM generate_series(1, 3000) i;
ALTER TABLE c_rand ADD PRIMARY KEY (id);
-- counts = the self-join's pairs per row
SELECT count(*) AS rows, count(*) FILTER (WHERE c.n <> coalesce(g.m, 0)) AS differ
FROM eps_neighbor_counts('c_rand', '{x,y}', 0.2) c
LEFT JOIN (SELECT a, count(*) AS m FROM eps_selfjoin('c_rand', '{x,y}', 0.2, "symmetric" => true) GROUP BY a) g
  ON g.a = c.id;
-- lists = the self-join's pairs per row, ordered by (dist, id), same distances
SELECT count(*) AS rows,
       count(*) FILTER (WHERE n.neighbors IS DISTINCT FROM coalesce(g.nb, '{}')
                           OR n.dists IS DISTINCT FROM coalesce(g.d, '{}')) AS differ
FROM eps_neighbors('c_rand', '{x,y}', 0.2) n
LEFT JOIN (SELECT a, array_agg(b ORDER BY dist, b) AS nb, array_agg(dist ORDER BY dist, b) AS d
           FROM eps_selfjoin('c_rand', '{x,y}', 0.2, "symmetric" => true) GROUP BY a) g
  ON g.a = n.id;
-- clusters are numbered by their smallest core id
SELECT bool_and(ok) FROM (
  SELECT cluster, min(id) AS m, rank() OVER (ORDER BY min(id)) - 1 = cluster AS ok
  FROM dbscan('c_rand', '{x,y}', 0.2, 5) WHERE is_core GROUP BY cluster) s;
-- core flags = counts + 1 >= minpts
SELECT count(*) FROM dbscan('c_rand', '{x,y}', 0.2, 5) d
  JOIN eps_neighbor_counts('c_rand', '{x,y}', 0.2) c USING (id)
  WHERE d.is_core <> (c.n + 1 >= 5);

-- WHERE id = / = ANY restricts counts and lists to those rows (the rest of
-- the table is only probed), with the same answers as the full call
CREATE TEMP TABLE full_counts AS SELECT * FROM eps_neighbor_counts('c_rand', '{x,y}', 0.2);
CREATE TEMP TABLE full_lists AS SELECT * FROM eps_neighbors('c_rand', '{x,y}', 0.2);
SELECT count(*) AS rows, count(*) FILTER (WHERE r.n IS DISTINCT FROM f.n) AS differ
FROM eps_neighbor_counts('c_rand', '{x,y}', 0.2) r JOIN full_counts f USING (id)
WHERE r.id = ANY ('{1,7,14,500,2999,3000,5000}');
SELECT count(*) AS rows,
       count(*) FILTER (WHERE r.neighbors IS DISTINCT FROM f.neighbors OR r.dists IS DISTINCT FROM f.dists) AS differ
FROM eps_neighbors('c_rand', '{x,y}', 0.2) r JOIN full_lists f USING (id)
WHERE r.id IN (1, 7, 14, 500, 2999, 3000, 5000);
SELECT id, n FROM eps_neighbor_counts_sql('SELECT id, x, y FROM c_rand', 0.2) WHERE id = 7;
SELECT count(*) FROM eps_neighbors('c_rand', '{x,y}', 0.2) WHERE id = ANY ('{}');
EXPLAIN (COSTS OFF) SELECT * FROM eps_neighbors('c_rand', '{x,y}', 0.2) WHERE id = 42;
SET gpujoin.device = cpu;		-- EXPLAIN names the engine
-- dbscan cannot be restricted: a row's cluster depends on every row
EXPLAIN (COSTS OFF) SELECT * FROM dbscan('c_rand', '{x,y}', 0.2, 5) WHERE id = 42;
RESET gpujoin.device;

-- streaming: LIMIT and a cursor closed early
SELECT count(*) FROM (SELECT * FROM eps_neighbors('c_rand', '{x,y}', 5) LIMIT 10) s;
BEGIN;
DECLARE cur CURSOR FOR SELECT id, cardinality(neighbors) FROM eps_neighbors('c_rand', '{x,y}', 3);
MOVE FORWARD 2 IN cur;
CLOSE cur;
COMMIT;
SET gpujoin.device = cpu;		-- EXPLAIN names the engine
EXPLAIN (COSTS OFF) SELECT * FROM eps_neighbor_counts('c_rand', '{x,y}', 0.2);
EXPLAIN (COSTS OFF) SELECT * FROM dbscan('c_rand', '{x,y}', 0.2, 5) WHERE cluster = 3;
-- the row estimate is the table's size
EXPLAIN SELECT * FROM eps_neighbors('c_rand', '{x,y}', 0.2);
RESET gpujoin.device;

-- a dense clump wider than eps: 200,000 rows 2 eps across, so no cell is
-- compact; DBSCAN links it box by box (density_boxes.h), where pair by
-- pair it took about a minute on two cores (the timeout only guards)
SET statement_timeout = '60s';
SELECT count(*), count(DISTINCT cluster), min(cluster), bool_and(is_core)
FROM dbscan_sql('SELECT i, (i % 997) * 0.002, (i / 997) * 0.01 FROM generate_series(1, 200000) i', 1.0, 5);
-- with a sparse ring of 40 rows around it, 2.6 eps out or more: noise
SELECT count(*) FILTER (WHERE cluster IS NULL) AS noise, count(DISTINCT cluster) AS clusters
FROM dbscan_sql($$SELECT i, (i % 997) * 0.002, (i / 997) * 0.01 FROM generate_series(1, 200000) i
                 UNION ALL SELECT 300000 + j, 1 + 4 * cos(j * pi() / 20), 1 + 4 * sin(j * pi() / 20)
                 FROM generate_series(1, 40) j$$, 1.0, 5);
RESET statement_timeout;

-- counts in a dense cell: 4,500 rows on a grid of 1/64 in a square 1.4 eps
-- across, so one cell holds over 2,048 rows and is counted through its
-- lattice (lattice.h), with duplicates and pairs exactly eps apart; every
-- 15th row's count (others within eps) against brute force in SQL (same
-- sum, same order)
CREATE TEMP TABLE c_dense AS
SELECT i AS id, ((i * 7919) % 90) / 64.0::float8 AS x, ((i * 104729) % 89) / 64.0::float8 AS y
FROM generate_series(1, 4500) i;
ALTER TABLE c_dense ADD PRIMARY KEY (id);
SELECT count(*) AS rows_checked, sum(c.n) AS total,
       count(*) FILTER (WHERE c.n <> b.n) AS differ
FROM eps_neighbor_counts('c_dense', '{x,y}', 1.0) c
JOIN (SELECT a.id, count(*) AS n
      FROM c_dense a JOIN c_dense o
        ON o.id <> a.id AND (a.x - o.x) * (a.x - o.x) + (a.y - o.y) * (a.y - o.y) <= 1.0
      WHERE a.id % 15 = 0 GROUP BY a.id) b USING (id);
