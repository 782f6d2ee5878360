-- Many dimensions: arrays, both search methods against a naive SQL join
-- (the same float64 operations in the same order), per-row shapes, kNN,
-- the cosine metric, and the host memory limit.
SELECT setseed(0.2611);
CREATE FUNCTION pg_temp.sq(a float8[], b float8[]) RETURNS float8
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE s float8 := 0;
BEGIN
    FOR i IN 1 .. array_length(a, 1) LOOP
        s := s + (a[i] - b[i]) * (a[i] - b[i]);
    END LOOP;
    RETURN s;
END $$;
-- rows of want missing from got plus rows of got missing from want (0: the
-- same multiset): the two queries as text
CREATE FUNCTION pg_temp.differ(want text, got text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM ((%s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL %s)) d',
                   want, got, got, want) INTO n;
    RETURN n;
END $$;
CREATE TABLE h16 (id int PRIMARY KEY, v float8[]);
INSERT INTO h16 SELECT i, ARRAY(SELECT -ln(1 - random()) / 40 + 0 * i FROM generate_series(1, 16))
FROM generate_series(1, 500) i;
-- duplicates, and rows one step of exactly 0.5 away in the last coordinate
INSERT INTO h16 SELECT 1000 + id, v FROM h16 WHERE id <= 15;
INSERT INTO h16 SELECT 2000 + id, v[1:15] || ARRAY[0.5::float8] FROM h16 WHERE id <= 15;
INSERT INTO h16 SELECT 3000 + id, v[1:15] || ARRAY[1.0::float8] FROM h16 WHERE id <= 15;
-- every ordered pair's squared distance, once
CREATE TEMP TABLE sq16 AS
    SELECT a.id AS a, b.id AS b, pg_temp.sq(a.v, b.v) AS s FROM h16 a JOIN h16 b ON a.id <> b.id;
CREATE TEMP TABLE naive16 AS
    SELECT a, b, sqrt(s) AS dist FROM sq16 WHERE a < b AND s <= 0.12::float8 * 0.12::float8;
SELECT count(*) > 200 AS enough_pairs FROM naive16;
-- every method finds exactly the naive pairs, distances bit for bit
SET gpujoin.eps_method = brute;
SELECT count(*) AS diff_brute FROM (
    (TABLE naive16 EXCEPT SELECT * FROM eps_selfjoin('h16', '{v}', 0.12))
    UNION ALL
    (SELECT * FROM eps_selfjoin('h16', '{v}', 0.12) EXCEPT TABLE naive16)) d;
SET gpujoin.eps_method = grid;
SELECT count(*) AS diff_grid FROM (
    (TABLE naive16 EXCEPT SELECT * FROM eps_selfjoin('h16', '{v}', 0.12))
    UNION ALL
    (SELECT * FROM eps_selfjoin('h16', '{v}', 0.12) EXCEPT TABLE naive16)) d;
RESET gpujoin.eps_method;
SELECT count(*) AS diff_auto FROM (
    (TABLE naive16 EXCEPT SELECT * FROM eps_selfjoin('h16', '{v}', 0.12))
    UNION ALL
    (SELECT * FROM eps_selfjoin('h16', '{v}', 0.12) EXCEPT TABLE naive16)) d;
-- pairs exactly 0.5 apart: the rule decides, as the naive join does
SET gpujoin.eps_method = brute;
SELECT count(*) AS diff_at_half FROM (
    (SELECT a, b FROM sq16 WHERE a < b AND s <= 0.25
     EXCEPT SELECT a, b FROM eps_selfjoin('h16', '{v}', 0.5))
    UNION ALL
    (SELECT a, b FROM eps_selfjoin('h16', '{v}', 0.5)
     EXCEPT SELECT a, b FROM sq16 WHERE a < b AND s <= 0.25)) d;

-- per-row shapes: by tiles (brute) as by the grid, and the counts as the naive join's
CREATE TEMP TABLE counts_b AS SELECT * FROM eps_neighbor_counts('h16', '{v}', 0.12);
CREATE TEMP TABLE lists_b AS SELECT * FROM eps_neighbors('h16', '{v}', 0.12);
CREATE TEMP TABLE dbscan_b AS SELECT * FROM dbscan('h16', '{v}', 0.12, 3);
SET gpujoin.eps_method = grid;
SELECT count(*) AS counts_differ FROM (
    (TABLE counts_b EXCEPT SELECT * FROM eps_neighbor_counts('h16', '{v}', 0.12))
    UNION ALL
    (SELECT * FROM eps_neighbor_counts('h16', '{v}', 0.12) EXCEPT TABLE counts_b)) d;
SELECT count(*) AS lists_differ FROM (
    (TABLE lists_b EXCEPT SELECT * FROM eps_neighbors('h16', '{v}', 0.12))
    UNION ALL
    (SELECT * FROM eps_neighbors('h16', '{v}', 0.12) EXCEPT TABLE lists_b)) d;
SELECT count(*) AS dbscan_differ FROM (
    (TABLE dbscan_b EXCEPT SELECT * FROM dbscan('h16', '{v}', 0.12, 3))
    UNION ALL
    (SELECT * FROM dbscan('h16', '{v}', 0.12, 3) EXCEPT TABLE dbscan_b)) d;
RESET gpujoin.eps_method;
SELECT count(*) AS counts_vs_naive FROM (
    SELECT c.id, c.n, coalesce(g.n, 0) AS want
    FROM counts_b c LEFT JOIN (SELECT a AS id, count(*) AS n FROM
        (SELECT a, b FROM naive16 UNION ALL SELECT b, a FROM naive16) s GROUP BY a) g USING (id)
    WHERE c.n <> coalesce(g.n, 0)) d;
SELECT count(*) FILTER (WHERE cluster IS NOT NULL) > 0 AS some_clustered,
       count(*) FILTER (WHERE cluster IS NULL) > 0 AS some_noise FROM dbscan_b;

-- eps_join in 16 dimensions: r and s of odd sizes (duplicates and rows
-- exactly 0.5 apart on both sides), every method against the naive pairs,
-- oriented (r, s); and a table with itself: every ordered pair and (a, a)
CREATE TABLE h16r AS SELECT * FROM h16 WHERE id % 3 = 0 OR id > 2000;
CREATE TABLE h16s AS SELECT * FROM h16 WHERE id % 3 <> 0 OR id > 2000;
ALTER TABLE h16r ADD PRIMARY KEY (id);
ALTER TABLE h16s ADD PRIMARY KEY (id);
CREATE TEMP TABLE naive_rs AS
    SELECT a AS r, b AS s, sqrt(sq) AS dist FROM (
        SELECT r.id AS a, s.id AS b, pg_temp.sq(r.v, s.v) AS sq FROM h16r r, h16s s) x
    WHERE sq <= 0.12::float8 * 0.12::float8;
SELECT count(*) > 100 AS enough_rs, count(*) FILTER (WHERE r = s) > 0 AS some_same_id FROM naive_rs;
SET gpujoin.eps_method = brute;
SELECT pg_temp.differ($$SELECT * FROM naive_rs$$,
                      $$SELECT * FROM eps_join('h16r', 'h16s', '{v}', 0.12)$$) AS diff_join_brute;
SET gpujoin.eps_method = blocks;
SELECT pg_temp.differ($$SELECT * FROM naive_rs$$,
                      $$SELECT * FROM eps_join('h16r', 'h16s', '{v}', 0.12)$$) AS diff_join_blocks;
SELECT pg_temp.differ($$SELECT s, r, dist FROM naive_rs$$,
                      $$SELECT * FROM eps_join('h16s', 'h16r', '{v}', 0.12)$$) AS diff_join_blocks_swapped;
SET gpujoin.eps_method = grid;
SELECT pg_temp.differ($$SELECT * FROM naive_rs$$,
                      $$SELECT * FROM eps_join('h16r', 'h16s', '{v}', 0.12)$$) AS diff_join_grid;
RESET gpujoin.eps_method;
SELECT pg_temp.differ($$SELECT * FROM naive_rs$$,
                      $$SELECT * FROM eps_join('h16r', 'h16s', '{v}', 0.12)$$) AS diff_join_auto;
-- pairs exactly 0.5 apart across the tables
SET gpujoin.eps_method = blocks;
SELECT pg_temp.differ($$SELECT r.id, s.id FROM h16r r, h16s s WHERE pg_temp.sq(r.v, s.v) <= 0.25$$,
                      $$SELECT r, s FROM eps_join('h16r', 'h16s', '{v}', 0.5)$$) AS diff_join_at_half;
-- a table with itself: the naive self pairs both ways, and (a, a) at 0
SELECT pg_temp.differ($$(SELECT a, b, sqrt(s) FROM sq16 WHERE s <= 0.12::float8 * 0.12::float8
                        UNION ALL SELECT id, id, 0 FROM h16)$$,
                      $$SELECT * FROM eps_join('h16', 'h16', '{v}', 0.12)$$) AS diff_join_itself;
-- eps_join_counts by tiles: every r row's count of s rows, none included
CREATE TEMP TABLE naive_rs_counts AS
    SELECT r.id AS r, count(n.s) AS n FROM h16r r LEFT JOIN naive_rs n ON n.r = r.id GROUP BY r.id;
SELECT count(*) FILTER (WHERE n = 0) > 0 AS some_none, max(n) > 1 AS some_many FROM naive_rs_counts;
SET gpujoin.eps_method = brute;
SELECT pg_temp.differ($$SELECT * FROM naive_rs_counts$$,
                      $$SELECT * FROM eps_join_counts('h16r', 'h16s', '{v}', 0.12)$$) AS diff_counts_brute;
SET gpujoin.eps_method = blocks;
SELECT pg_temp.differ($$SELECT * FROM naive_rs_counts$$,
                      $$SELECT * FROM eps_join_counts('h16r', 'h16s', '{v}', 0.12)$$) AS diff_counts_blocks;
SET gpujoin.eps_method = grid;
SELECT pg_temp.differ($$SELECT * FROM naive_rs_counts$$,
                      $$SELECT * FROM eps_join_counts('h16r', 'h16s', '{v}', 0.12)$$) AS diff_counts_grid;
SET gpujoin.eps_method = blocks;
CREATE TEMP TABLE naive_self_counts AS
    SELECT h.id AS r, 1 + count(q.b) AS n FROM h16 h
    LEFT JOIN sq16 q ON q.a = h.id AND q.s <= 0.12::float8 * 0.12::float8 GROUP BY h.id;
SELECT pg_temp.differ($$SELECT * FROM naive_self_counts$$,
                      $$SELECT * FROM eps_join_counts('h16', 'h16', '{v}', 0.12)$$) AS diff_counts_itself;
RESET gpujoin.eps_method;
-- a restriction on r reads fewer rows, by tiles too
SELECT pg_temp.differ($$SELECT * FROM naive_rs WHERE r = 3$$,
                      $$SELECT * FROM eps_join('h16r', 'h16s', '{v}', 0.12) WHERE r = 3$$) AS diff_join_restricted;
RESET gpujoin.eps_method;

-- kNN in 16 dimensions (brute force by tiles) against a ranking of every pair
CREATE TEMP TABLE knn16 AS
    SELECT a, b, rank::int, sqrt(s) AS dist FROM (
        SELECT a, b, s, row_number() OVER (PARTITION BY a ORDER BY s, b) AS rank FROM sq16) r
    WHERE rank <= 4;
SELECT count(*) AS knn_differ FROM (
    (SELECT * FROM knn_selfjoin('h16', '{v}', 4) EXCEPT TABLE knn16)
    UNION ALL
    (TABLE knn16 EXCEPT SELECT * FROM knn_selfjoin('h16', '{v}', 4))) d;

-- cosine: rows normalised by the documented rule, pairs within eps when
-- the squared distance of the normalised rows is <= 2 eps, dist = d * d / 2
CREATE FUNCTION pg_temp.unit(a float8[]) RETURNS float8[]
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE m float8 := 0; s float8 := 0; y float8[]; r float8;
BEGIN
    FOR i IN 1 .. array_length(a, 1) LOOP m := greatest(m, abs(a[i])); END LOOP;
    FOR i IN 1 .. array_length(a, 1) LOOP y[i] := a[i] / m; s := s + y[i] * y[i]; END LOOP;
    r := sqrt(s);
    FOR i IN 1 .. array_length(a, 1) LOOP y[i] := y[i] / r; END LOOP;
    RETURN y;
END $$;
CREATE TABLE hc (id int PRIMARY KEY, v float8[]);
INSERT INTO hc SELECT i, ARRAY(SELECT (i % 7) + random() * 0.3 - 0.15 + 0 * d FROM generate_series(1, 24) d)
FROM generate_series(1, 300) i;
INSERT INTO hc SELECT 1000 + id, ARRAY(SELECT x * 1000 FROM unnest(v) x) FROM hc WHERE id <= 10;  -- same directions
INSERT INTO hc VALUES (5000, array_fill(0.0::float8, ARRAY[24]));  -- no direction: skipped
CREATE TEMP TABLE unit_hc AS SELECT id, pg_temp.unit(v) AS u FROM hc WHERE id <> 5000;
CREATE TEMP TABLE naive_cos AS
    SELECT a, b, sqrt(s) AS d FROM (
        SELECT a.id AS a, b.id AS b, pg_temp.sq(a.u, b.u) AS s
        FROM unit_hc a JOIN unit_hc b ON a.id < b.id) p
    WHERE s <= 2 * 0.002::float8;
SELECT count(*) > 100 AS enough_pairs FROM naive_cos;
SELECT count(*) AS cosine_differ FROM (
    (SELECT a, b, d * d * 0.5 FROM naive_cos
     EXCEPT SELECT * FROM eps_selfjoin('hc', '{v}', 0.002, metric => 'cosine'))
    UNION ALL
    (SELECT * FROM eps_selfjoin('hc', '{v}', 0.002, metric => 'cosine')
     EXCEPT SELECT a, b, d * d * 0.5 FROM naive_cos)) d;
-- dist is 1 - cosine similarity (to rounding)
SELECT max(abs(dist - (1 - (SELECT sum(x * y) FROM unnest(a.v, b.v) u(x, y))
                        / sqrt((SELECT sum(x * x) FROM unnest(a.v) x))
                        / sqrt((SELECT sum(y * y) FROM unnest(b.v) y))))) < 1e-12 AS is_cosine
FROM eps_selfjoin('hc', '{v}', 0.002, metric => 'cosine') j JOIN hc a ON a.id = j.a JOIN hc b ON b.id = j.b;
SELECT count(*) AS same_direction_at_zero FROM eps_selfjoin('hc', '{v}', 1e-9, metric => 'cosine')
WHERE b = a + 1000;
SELECT a, b, rank FROM knn_selfjoin('hc', '{v}', 2, metric => 'cosine') WHERE a IN (1, 1001) ORDER BY a, rank;
SELECT count(*) AS rows_counted FROM eps_neighbor_counts('hc', '{v}', 0.002, metric => 'cosine');
-- eps_join with cosine, by tiles: the naive pairs across two halves, (r, s),
-- the zero row dropped on either side; and the _sql form gives the same
CREATE TABLE hc_r AS SELECT * FROM hc WHERE id % 2 = 0;
CREATE TABLE hc_s AS SELECT * FROM hc WHERE id % 2 = 1 OR id = 5000;
ALTER TABLE hc_r ADD PRIMARY KEY (id);
ALTER TABLE hc_s ADD PRIMARY KEY (id);
CREATE TEMP TABLE naive_cos_rs AS
    SELECT a AS r, b AS s, d * d * 0.5 AS dist FROM naive_cos WHERE a % 2 = 0 AND b % 2 = 1
    UNION ALL SELECT b, a, d * d * 0.5 FROM naive_cos WHERE b % 2 = 0 AND a % 2 = 1;
SET gpujoin.eps_method = blocks;
SELECT pg_temp.differ($$SELECT * FROM naive_cos_rs$$,
                      $$SELECT * FROM eps_join('hc_r', 'hc_s', '{v}', 0.002, metric => 'cosine')$$) AS cosine_join_differ;
SELECT pg_temp.differ($$SELECT * FROM naive_cos_rs$$,
                      $$SELECT * FROM eps_join_sql('SELECT id, v FROM hc_r', 'SELECT id, v FROM hc_s', 0.002, metric => 'cosine')$$) AS cosine_join_sql_differ;
RESET gpujoin.eps_method;
-- bad metrics
SELECT * FROM eps_selfjoin('hc', '{v}', 0.1, metric => 'l1');
SELECT * FROM eps_selfjoin('hc', '{v}', 0.1, metric => NULL);

-- the host memory limit: checked before reading (statistics) and while reading
CREATE TABLE hbig (id int PRIMARY KEY, v float8[]);
INSERT INTO hbig SELECT i, array_fill(i::float8, ARRAY[100]) FROM generate_series(1, 3000) i;
ANALYZE hbig;
SET gpujoin.host_memory_limit = '1MB';
SELECT count(*) FROM eps_selfjoin('hbig', '{v}', 0.5);
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, v FROM hbig', 0.5);
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, v FROM hbig WHERE id <= 1000', 0.5);
RESET gpujoin.host_memory_limit;
SELECT count(*) FROM eps_selfjoin('hbig', '{v}', 0.5);
-- eps_join's tiles copy both tables: past the limit the grid answers (the same pairs)
CREATE TABLE hmid (id int PRIMARY KEY, v float8[]);
INSERT INTO hmid SELECT i, ARRAY(SELECT (i % 97 + j) / 50.0 FROM generate_series(1, 16) j) FROM generate_series(1, 2500) i;
SET gpujoin.eps_method = blocks;
SELECT count(*) AS join_pairs FROM eps_join('hmid', 'hmid', '{v}', 0.05);
SET gpujoin.host_memory_limit = '1MB';
SELECT count(*) AS join_pairs_by_grid FROM eps_join('hmid', 'hmid', '{v}', 0.05);
SELECT sum(n) AS join_counts_by_grid FROM eps_join_counts('hmid', 'hmid', '{v}', 0.05);
RESET gpujoin.host_memory_limit;
RESET gpujoin.eps_method;

-- auto's kNN method in many dimensions, from the sampled contrast: the
-- blocks' index for clustered rows, brute force for uniform ones (where the
-- bounds would skip nothing); the same neighbours either way
CREATE TABLE hk_clust (id int PRIMARY KEY, v float8[]);
INSERT INTO hk_clust SELECT i, ARRAY(SELECT (i % 10) * 10 + ((i * 7919 + d * 104729) % 1000) / 1000.0
                                     FROM generate_series(1, 24) d)
    FROM generate_series(1, 5000) i;
CREATE TABLE hk_unif (id int PRIMARY KEY, v float8[]);
SELECT setseed(0.25);
INSERT INTO hk_unif SELECT i, ARRAY(SELECT random() * 100 FROM generate_series(1, 64) d WHERE i > 0)
    FROM generate_series(1, 5000) i;
ANALYZE hk_clust;
ANALYZE hk_unif;
-- the value of one EXPLAIN ANALYZE property of q ('none' where absent)
CREATE FUNCTION pg_temp.explain_value(q text, prop text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; m text := 'none';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
        line := regexp_replace(line, '(rows=\d+)\.00', '\1', 'g');
        IF line LIKE '%' || prop || ':%' THEN m := trim(substr(line, strpos(line, ':') + 1)); END IF;
    END LOOP;
    RETURN m;
END $$;
CREATE FUNCTION pg_temp.knn_method(q text) RETURNS text LANGUAGE sql AS $$
    SELECT split_part(pg_temp.explain_value(q, 'kNN Method'), ' ', 1)
$$;
SELECT pg_temp.knn_method($$SELECT * FROM knn_selfjoin('hk_clust', '{v}', 5)$$) AS clustered,
       pg_temp.knn_method($$SELECT * FROM knn_selfjoin('hk_unif', '{v}', 5)$$) AS uniform;
-- the blocks' key: kNN keys every dimension up to 16 (its threshold is not
-- known before the join; the eps joins' model at eps 0 once keyed one)
CREATE FUNCTION pg_temp.knn_method_text(q text) RETURNS text LANGUAGE sql AS $$
    SELECT regexp_replace(pg_temp.explain_value(q, 'kNN Method'), 'contrast [0-9.]+', 'contrast N')
$$;
SELECT pg_temp.knn_method_text($$SELECT * FROM knn_selfjoin('hk_clust', '{v}', 5)$$) AS self_join;
SELECT pg_temp.knn_method_text($$SELECT * FROM knn_join('hk_clust', 'hk_clust', '{v}', 5)$$) AS two_tables;
CREATE TEMP TABLE hk_auto AS SELECT * FROM knn_selfjoin('hk_clust', '{v}', 5);
SET gpujoin.knn_method = brute;
SELECT count(*) AS auto_vs_brute_differ FROM (
    (TABLE hk_auto EXCEPT SELECT * FROM knn_selfjoin('hk_clust', '{v}', 5))
    UNION ALL
    (SELECT * FROM knn_selfjoin('hk_clust', '{v}', 5) EXCEPT TABLE hk_auto)) d;
-- a setting other than auto is taken as it is, with no sample
SELECT pg_temp.knn_method($$SELECT * FROM knn_selfjoin('hk_unif', '{v}', 5)$$) AS forced;
RESET gpujoin.knn_method;
SELECT count(*) FROM hk_auto;

-- auto's eps method on tiles (EXPLAIN's Tiles line, numbers masked): brute
-- force without the sample or the blocks' model where brute force is
-- predicted to cost less than choosing (a small table), else on the CPU
-- engine the blocks' index; a setting other than auto is taken as it is;
-- the same pairs every way.  On the CPU engine with one thread, so that the
-- prediction is the same on every machine and in the GPU host's pass.
CREATE TABLE he_exp (id int PRIMARY KEY, v float8[]);
SELECT setseed(0.31);
INSERT INTO he_exp SELECT i, ARRAY(SELECT -ln(1 - random()) / 40 FROM generate_series(1, 16) d WHERE i > 0)
    FROM generate_series(1, 12000) i;
CREATE VIEW he_small AS SELECT * FROM he_exp WHERE id <= 500;
ANALYZE he_exp;
CREATE FUNCTION pg_temp.tiles_method(q text) RETURNS text LANGUAGE sql AS $$
    SELECT regexp_replace(pg_temp.explain_value(q, 'Tiles'), '[0-9][0-9.]*', 'N', 'g')
$$;
SET gpujoin.device = cpu;
SET gpujoin.cpu_threads = 1;
SELECT pg_temp.tiles_method($$SELECT * FROM eps_selfjoin('he_small', '{v}', 0.03, 'id')$$) AS small_self,
       pg_temp.tiles_method($$SELECT * FROM eps_join('he_small', 'he_small', '{v}', 0.03, 'id', 'id')$$) AS small_join;
SELECT pg_temp.tiles_method($$SELECT * FROM eps_selfjoin('he_exp', '{v}', 0.03)$$) AS large_self;
SELECT pg_temp.tiles_method($$SELECT * FROM eps_join('he_exp', 'he_exp', '{v}', 0.03)$$) AS large_join;
SELECT pg_temp.tiles_method($$SELECT * FROM eps_neighbor_counts('he_exp', '{v}', 0.03)$$) AS large_counts;
SET gpujoin.eps_method = brute;
SELECT pg_temp.tiles_method($$SELECT * FROM eps_selfjoin('he_exp', '{v}', 0.03)$$) AS forced_brute;
SET gpujoin.eps_method = blocks;
SELECT pg_temp.tiles_method($$SELECT * FROM eps_selfjoin('he_small', '{v}', 0.03, 'id')$$) AS forced_blocks;
RESET gpujoin.eps_method;
CREATE TEMP TABLE he_auto AS SELECT * FROM eps_selfjoin('he_exp', '{v}', 0.045);
RESET gpujoin.cpu_threads;
SET gpujoin.eps_method = brute;
SELECT (SELECT count(*) FROM he_auto) AS pairs, count(*) AS auto_vs_brute_differ FROM (
    (TABLE he_auto EXCEPT SELECT * FROM eps_selfjoin('he_exp', '{v}', 0.045))
    UNION ALL
    (SELECT * FROM eps_selfjoin('he_exp', '{v}', 0.045) EXCEPT TABLE he_auto)) d;
RESET gpujoin.eps_method;
RESET gpujoin.device;
