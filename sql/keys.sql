-- Keys of any type (0.8): key => NULL::its_type returns each row's own key.
-- Every keyed answer is checked against the classic form on a copy of the
-- rows whose integer ids follow the keys' order (kt_int.n below): the
-- same rows, and the same ranks, lists and clusters, since the keyed
-- forms follow the keys' order where the classic ones follow the ids'.
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- rows of q1 not in q2 and of q2 not in q1 (both multisets)
CREATE FUNCTION pg_temp.differ(q1 text, q2 text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    a bigint;
    b bigint;
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM ((%s) EXCEPT ALL (%s)) d', q1, q2) INTO a;
    EXECUTE format('SELECT count(*) FROM ((%s) EXCEPT ALL (%s)) d', q2, q1) INTO b;
    EXECUTE format('SELECT count(*) FROM (%s) d', q1) INTO n;
    RETURN format('%s rows, %s missing, %s extra', n, b, a);
END $$;

-- 400 rows on a lattice (many ties at distance 1), uuid keys in an order
-- unrelated to the rows', and the same rows with integer ids by key order
CREATE TABLE kt (id uuid PRIMARY KEY, x float8, y float8);
INSERT INTO kt SELECT md5(i::text)::uuid, i % 20, i / 20 FROM generate_series(0, 399) i;
CREATE TABLE kt_int AS SELECT (row_number() OVER (ORDER BY id))::int AS n, id, x, y FROM kt;
ALTER TABLE kt_int ADD PRIMARY KEY (n);

-- the classic form says what to pass
SELECT * FROM eps_selfjoin('kt', '{x,y}', 1);
SELECT * FROM eps_selfjoin('kt', '{x,y}', 1, 'id');
SELECT * FROM eps_selfjoin_sql('SELECT id, x FROM kt', 1);
-- the keyed results: of the key's type
SELECT pg_typeof(a) AS a, pg_typeof(b) AS b, count(*) FROM eps_selfjoin('kt', '{x,y}', 1, key => NULL::uuid) GROUP BY 1, 2;
SELECT * FROM eps_selfjoin('kt', '{x,y}', 1, key => NULL::uuid) ORDER BY a, b LIMIT 3;
-- each function, against the classic form on kt_int
SELECT pg_temp.differ(
    $$SELECT a, b, dist FROM eps_selfjoin('kt', '{x,y}', 1.5, key => NULL::uuid, "symmetric" => true)$$,
    $$SELECT ia.id, ib.id, j.dist FROM eps_selfjoin('kt_int', '{x,y}', 1.5, "symmetric" => true) j
      JOIN kt_int ia ON ia.n = j.a JOIN kt_int ib ON ib.n = j.b$$) AS eps_selfjoin;
SELECT pg_temp.differ(
    $$SELECT a, b, rank, dist FROM knn_selfjoin('kt', '{x,y}', 3, key => NULL::uuid)$$,
    $$SELECT ia.id, ib.id, j.rank, j.dist FROM knn_selfjoin('kt_int', '{x,y}', 3) j
      JOIN kt_int ia ON ia.n = j.a JOIN kt_int ib ON ib.n = j.b$$) AS knn_selfjoin;
SELECT pg_temp.differ(
    $$SELECT id, n FROM eps_neighbor_counts('kt', '{x,y}', 1, key => NULL::uuid)$$,
    $$SELECT i.id, j.n FROM eps_neighbor_counts('kt_int', '{x,y}', 1) j JOIN kt_int i ON i.n = j.id$$)
    AS eps_neighbor_counts;
SELECT pg_temp.differ(
    $$SELECT id, neighbors, dists FROM eps_neighbors('kt', '{x,y}', 1.5, key => NULL::uuid)$$,
    $$SELECT i.id, (SELECT array_agg(k.id ORDER BY o) FROM unnest(j.neighbors) WITH ORDINALITY u(v, o)
                     JOIN kt_int k ON k.n = u.v), j.dists
      FROM eps_neighbors('kt_int', '{x,y}', 1.5) j JOIN kt_int i ON i.n = j.id$$) AS eps_neighbors;
SELECT pg_temp.differ(
    $$SELECT id, cluster, is_core FROM dbscan('kt', '{x,y}', 1, 5, key => NULL::uuid)$$,
    $$SELECT i.id, j.cluster, j.is_core FROM dbscan('kt_int', '{x,y}', 1, 5) j JOIN kt_int i ON i.n = j.id$$)
    AS dbscan;
-- kNN ties go to the smaller key: against plain SQL's ranking by (dist, key)
SELECT pg_temp.differ(
    $$SELECT a, b, rank FROM knn_selfjoin('kt', '{x,y}', 5, key => NULL::uuid)$$,
    $$SELECT a, b, rank::int FROM (SELECT p.id AS a, o.id AS b,
          row_number() OVER (PARTITION BY p.id ORDER BY (p.x - o.x)^2 + (p.y - o.y)^2, o.id) AS rank
      FROM kt p JOIN kt o ON p.id <> o.id) r WHERE rank <= 5$$) AS knn_ties_by_key;

-- two sets, each with its own key type: integer query ids, uuid references
CREATE TABLE kqry (qid int PRIMARY KEY, x float8, y float8);
INSERT INTO kqry SELECT i, (i * 7) % 20 + 0.5, (i * 3) % 20 FROM generate_series(1, 50) i;
SELECT pg_typeof(q) AS q, pg_typeof(r) AS r, count(*)
FROM knn_join('kqry', 'kt', '{x,y}', 4, query_key => NULL::int, ref_key => NULL::uuid) GROUP BY 1, 2;
SELECT pg_temp.differ(
    $$SELECT q, r, rank, dist FROM knn_join('kqry', 'kt', '{x,y}', 4, query_key => NULL::int, ref_key => NULL::uuid)$$,
    $$SELECT j.q::int, k.id, j.rank, j.dist FROM knn_join('kqry', 'kt_int', '{x,y}', 4) j JOIN kt_int k ON k.n = j.r$$)
    AS knn_join;
SELECT pg_temp.differ(
    $$SELECT r, s, dist FROM eps_join('kqry', 'kt', '{x,y}', 1, r_key => NULL::int, s_key => NULL::uuid)$$,
    $$SELECT j.r::int, k.id, j.dist FROM eps_join('kqry', 'kt_int', '{x,y}', 1) j JOIN kt_int k ON k.n = j.s$$)
    AS eps_join;
-- eps_join_counts returns r's keys only: s needs none (a view without one here)
CREATE VIEW kt_view AS SELECT x, y FROM kt;
SELECT pg_temp.differ(
    $$SELECT r, n FROM eps_join_counts('kt', 'kt_view', '{x,y}', 1, r_key => NULL::uuid)$$,
    $$SELECT i.id, j.n FROM eps_join_counts('kt_int', 'kt_int', '{x,y}', 1) j JOIN kt_int i ON i.n = j.r$$)
    AS eps_join_counts;

-- the _sql forms: the query's first column is the key
SELECT pg_temp.differ(
    $$SELECT a, b, dist FROM eps_selfjoin_sql('SELECT id, x, y FROM kt', 1, key => NULL::uuid)$$,
    $$SELECT a, b, dist FROM eps_selfjoin('kt', '{x,y}', 1, key => NULL::uuid)$$) AS eps_selfjoin_sql;
SELECT pg_temp.differ(
    $$SELECT a, b, rank, dist FROM knn_selfjoin_sql('SELECT id, x, y FROM kt', 3, key => NULL::uuid)$$,
    $$SELECT a, b, rank, dist FROM knn_selfjoin('kt', '{x,y}', 3, key => NULL::uuid)$$) AS knn_selfjoin_sql;
SELECT pg_temp.differ(
    $$SELECT q, r, rank, dist FROM knn_join_sql('SELECT qid, x, y FROM kqry', 'SELECT id, x, y FROM kt', 4,
                                              query_key => NULL::int, ref_key => NULL::uuid)$$,
    $$SELECT q, r, rank, dist FROM knn_join('kqry', 'kt', '{x,y}', 4, query_key => NULL::int, ref_key => NULL::uuid)$$)
    AS knn_join_sql;
SELECT pg_temp.differ(
    $$SELECT r, s, dist FROM eps_join_sql('SELECT qid, x, y FROM kqry', 'SELECT id, x, y FROM kt', 1,
                                          r_key => NULL::int, s_key => NULL::uuid)$$,
    $$SELECT r, s, dist FROM eps_join('kqry', 'kt', '{x,y}', 1, r_key => NULL::int, s_key => NULL::uuid)$$)
    AS eps_join_sql;
SELECT pg_temp.differ(
    $$SELECT r, n FROM eps_join_counts_sql('SELECT id, x, y FROM kt', 'SELECT ''any'', x, y FROM kt', 1,
                                           r_key => NULL::uuid)$$,
    $$SELECT r, n FROM eps_join_counts('kt', 'kt', '{x,y}', 1, r_key => NULL::uuid)$$) AS eps_join_counts_sql;
SELECT pg_temp.differ(
    $$SELECT id, n FROM eps_neighbor_counts_sql('SELECT id, x, y FROM kt', 1, key => NULL::uuid)$$,
    $$SELECT id, n FROM eps_neighbor_counts('kt', '{x,y}', 1, key => NULL::uuid)$$) AS eps_neighbor_counts_sql;
SELECT pg_temp.differ(
    $$SELECT id, neighbors, dists FROM eps_neighbors_sql('SELECT id, x, y FROM kt', 1.5, key => NULL::uuid)$$,
    $$SELECT id, neighbors, dists FROM eps_neighbors('kt', '{x,y}', 1.5, key => NULL::uuid)$$) AS eps_neighbors_sql;
SELECT pg_temp.differ(
    $$SELECT id, cluster, is_core FROM dbscan_sql('SELECT id, x, y FROM kt', 1, 5, key => NULL::uuid)$$,
    $$SELECT id, cluster, is_core FROM dbscan('kt', '{x,y}', 1, 5, key => NULL::uuid)$$) AS dbscan_sql;
-- with parameters
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, x, y FROM kt WHERE x < $1', 1, key => NULL::uuid,
                                      params => row(10));

-- text keys order by their collation: ties to the smaller text
SELECT * FROM knn_selfjoin_sql($$SELECT k, x FROM (VALUES ('b', 0), ('a', 1), ('c', 1), ('d', 2)) v(k, x)$$,
                               1, key => NULL::text) ORDER BY a;
SELECT * FROM eps_neighbors_sql($$SELECT k, x FROM (VALUES ('b', 0), ('a', 1), ('c', 1), ('d', -1)) v(k, x)$$,
                                1, key => NULL::text) ORDER BY id;

-- the order of keys of each kind: signed integers (negative first), rows
-- field by field with NULL fields last, as ORDER BY orders them
SELECT id, neighbors FROM eps_neighbors_sql($$SELECT k, 0 FROM (VALUES (3::int), (-1), (-5), (0)) v(k)$$,
                                            1, key => NULL::int) ORDER BY id;
SELECT id, neighbors FROM eps_neighbors_sql($$SELECT k, 0 FROM (VALUES (3::bigint), (-1), (-9223372036854775808), (9223372036854775807)) v(k)$$,
                                            1, key => NULL::bigint) WHERE id = 3;
SELECT id, neighbors FROM eps_neighbors_sql(
    $$SELECT ROW(a, b), 0 FROM (VALUES (1, 2), (1, NULL), (NULL, 1), (NULL, NULL), (0, 5)) v(a, b)$$,
    1, key => NULL::record) WHERE id = ROW(0, 5);
SELECT array_agg(ROW(a, b) ORDER BY ROW(a, b)) AS "ORDER BY" FROM (VALUES (1, 2), (1, NULL), (NULL, 1), (NULL, NULL)) v(a, b);

-- a composite primary key: as a row (record), or as a type whose fields name its columns
CREATE TABLE korders (tenant int, order_no int, x float8, PRIMARY KEY (tenant, order_no));
INSERT INTO korders SELECT i % 3, i, i FROM generate_series(1, 12) i;
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('korders', '{x}', 1, key => NULL::int)$$);
SELECT * FROM eps_selfjoin('korders', '{x}', 1, key => NULL::record) ORDER BY a, b LIMIT 4;
-- joined back to the table by its key
SELECT j.a, o.x, count(*) FROM eps_selfjoin('korders', '{x}', 1, key => NULL::record) j
JOIN korders o ON j.a = (o.tenant, o.order_no) GROUP BY 1, 2 ORDER BY 1 LIMIT 3;
CREATE TYPE korder_key AS (tenant int, order_no int);
SELECT (a).tenant, (a).order_no, (b).order_no AS b_order_no
FROM knn_selfjoin('korders', '{x}', 1, key => NULL::korder_key) ORDER BY 1, 2 LIMIT 4;
SELECT id, neighbors FROM eps_neighbors('korders', '{x}', 1, key => NULL::korder_key) ORDER BY id LIMIT 2;
SELECT * FROM dbscan_sql('SELECT ROW(tenant, order_no)::korder_key, x FROM korders', 1, 2,
                         key => NULL::korder_key) ORDER BY id LIMIT 3;
-- another column as the key
SELECT * FROM knn_selfjoin('korders', '{x}', 1, key => NULL::int, id_col => 'order_no') ORDER BY a LIMIT 3;
-- a domain key: as the domain, or as its base type; never a base value as the domain
CREATE DOMAIN ksku AS text CHECK (VALUE LIKE 'sku-%');
CREATE TABLE kdom (sku ksku PRIMARY KEY, x float8);
INSERT INTO kdom VALUES ('sku-1', 0), ('sku-2', 0.5), ('sku-3', 3);
SELECT a, b, pg_typeof(a) FROM eps_selfjoin('kdom', '{x}', 1, key => NULL::ksku);
SELECT a, b, pg_typeof(a) FROM eps_selfjoin('kdom', '{x}', 1, key => NULL::text);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT ''bad'', 0', 1, key => NULL::ksku)$$);

-- rows with a NULL key are skipped and counted, as NULL ids are; equal keys are distinct rows
SELECT * FROM eps_selfjoin_sql($$SELECT k, x FROM (VALUES ('a', 0), (NULL, 0), ('a', 0.5)) v(k, x)$$,
                               1, key => NULL::text);

-- the custom scan restricts integer ids by a qual, not keys (their ids are
-- ranks): a qual on a keyed call filters its rows, and the answer is the same
SELECT * FROM knn_selfjoin('kt_int', '{x,y}', 2, key => NULL::int, id_col => 'n') WHERE a = 7 ORDER BY rank;
SELECT * FROM knn_selfjoin('kt_int', '{x,y}', 2) WHERE a = 7 ORDER BY rank;
CREATE FUNCTION pg_temp.plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        IF line NOT LIKE '%Engine:%' THEN   -- (the engine depends on gpujoin.device)
            RETURN NEXT line;
        END IF;
    END LOOP;
END $$;
SELECT * FROM pg_temp.plan($$SELECT * FROM knn_selfjoin('kt_int', '{x,y}', 2, key => NULL::int, id_col => 'n') WHERE a = 7$$);
SELECT * FROM pg_temp.plan($$SELECT * FROM knn_selfjoin('kt_int', '{x,y}', 2) WHERE a = 7$$);
-- outside the custom scan: the SELECT list's materialised call
SELECT count(*), count(DISTINCT b), min(b::text) FROM (SELECT (knn_selfjoin('kt', '{x,y}', 1, key => NULL::uuid)).b) s;
SET gpujoin.custom_scan = off;
SELECT pg_temp.differ(
    $$SELECT a, b, rank, dist FROM knn_selfjoin('kt', '{x,y}', 3, key => NULL::uuid)$$,
    $$SELECT ia.id, ib.id, j.rank, j.dist FROM knn_selfjoin('kt_int', '{x,y}', 3) j
      JOIN kt_int ia ON ia.n = j.a JOIN kt_int ib ON ib.n = j.b$$) AS knn_selfjoin_materialised;
RESET gpujoin.custom_scan;

-- calls written for the classic forms still resolve to them
SELECT count(*) FROM eps_selfjoin('kt_int', '{x,y}', 1, 'n');
SELECT count(*) FROM eps_selfjoin('kt_int', '{x,y}', 1, NULL);
SELECT count(*) FROM eps_selfjoin_sql('SELECT n, x, y FROM kt_int', 1, true);
SELECT count(*) FROM knn_join('kqry', 'kt_int', '{x,y}', 2, 'qid', 'n');
SELECT count(*) FROM knn_selfjoin_sql('SELECT n, x, y FROM kt_int', 2, 'l2');
SELECT count(*) FROM dbscan_sql('SELECT n, x, y FROM kt_int', 1, 2, 'L2');
SELECT count(*) FROM eps_join_sql('SELECT n, x, y FROM kt_int', 'SELECT n, x, y FROM kt_int', 1, 'l2');

-- errors
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('kt', '{x,y}', 1, key => NULL::int)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('kt_int', '{x,y}', 1, key => NULL::uuid)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id::text, x FROM kt', 1, key => NULL::uuid)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT point(x, y), x FROM kt', 1, key => NULL::point)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('kt_view', '{x,y}', 1, key => NULL::uuid)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('kt', '{x,y}', 1, key => NULL)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT 1::numeric, 1e400::numeric', 1, key => NULL::numeric)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT ''k1''::text, 1e400::numeric', 1, key => NULL::text)$$);
