-- gpujoin upgrade 0.8 -> 0.9: knn_lateral_fill, which the planner's
-- LATERAL kNN of Citus-distributed tables calls beside knn_join (the rows
-- without a point, as PostgreSQL orders them).  Nothing else changes.
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.9'" to load this file. \quit

-- The rows of a LATERAL kNN that knn_join leaves out (internal: the
-- planner's rewrite of q JOIN LATERAL (SELECT .. FROM r [WHERE r.c <> q.c]
-- ORDER BY r.g <-> q.g LIMIT k) for Citus-distributed tables calls it
-- beside knn_join, or knn_selfjoin with other_col).  PostgreSQL's distance
-- is NULL where either point is NULL, empty or not finite, and NULLs sort
-- last, in no order: a row of query_tbl without a point gets any k rows of
-- ref_tbl, those with a point first; when ref_tbl holds fewer than k
-- points, every other row gets ref_tbl's rows without one, up to k in all.
-- knn_join skips rows without a point, so it returns neither.  other_col:
-- query_tbl is ref_tbl, and a row's references are the rows whose
-- other_col differs from its own (a unique, non-NULL column: the others).
-- keep_alone: a row with no reference at all (ref_tbl empty, or only the
-- row itself) comes once with a NULL reference (LEFT JOIN LATERAL's row).
-- A point is a value whose distance (<-> of its type) to itself is not
-- NULL.  Returns whole rows: query_row and ref_row are NULL::query_tbl and
-- NULL::ref_tbl.
CREATE FUNCTION knn_lateral_fill(query_tbl regclass, ref_tbl regclass, query_col text, ref_col text,
                                 k integer, query_row anyelement, ref_row anycompatible,
                                 other_col text DEFAULT NULL, keep_alone boolean DEFAULT false)
RETURNS TABLE (q anyelement, r anycompatible)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE AS $fn$
DECLARE
    qop text;
    rop text;
    qtype text := pg_catalog.pg_typeof(query_row);
    rtype text := pg_catalog.pg_typeof(ref_row);
    self integer := CASE WHEN other_col IS NULL THEN 0 ELSE 1 END;
    other text := 'true';
    points bigint;
    total bigint;
BEGIN
    IF k IS NULL OR k < 1 THEN
        RAISE EXCEPTION 'knn_lateral_fill: k must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.pg_typeof(query_row)::oid IS DISTINCT FROM
           (SELECT c.reltype FROM pg_catalog.pg_class c WHERE c.oid = query_tbl)
       OR pg_catalog.pg_typeof(ref_row)::oid IS DISTINCT FROM
           (SELECT c.reltype FROM pg_catalog.pg_class c WHERE c.oid = ref_tbl) THEN
        RAISE EXCEPTION 'knn_lateral_fill: query_row and ref_row must be NULL::query_tbl and NULL::ref_tbl'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF other_col IS NOT NULL THEN
        IF query_tbl <> ref_tbl OR NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                WHERE a.attrelid = query_tbl AND a.attname = other_col AND a.attnum > 0 AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'knn_lateral_fill: other_col must be a column of query_tbl, which must be ref_tbl'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        other := pg_catalog.format('(c.rows[i]).%1$I <> (t.row).%1$I', other_col);
    END IF;
    -- the distance operator of each column's type, qualified by its schema
    SELECT pg_catalog.format('OPERATOR(%I.<->)', n.nspname) INTO qop
    FROM pg_catalog.pg_attribute a
    JOIN pg_catalog.pg_operator o ON o.oprname = '<->' AND o.oprleft = a.atttypid AND o.oprright = a.atttypid
    JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
    WHERE a.attrelid = query_tbl AND a.attname = query_col AND a.attnum > 0 AND NOT a.attisdropped;
    SELECT pg_catalog.format('OPERATOR(%I.<->)', n.nspname) INTO rop
    FROM pg_catalog.pg_attribute a
    JOIN pg_catalog.pg_operator o ON o.oprname = '<->' AND o.oprleft = a.atttypid AND o.oprright = a.atttypid
    JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
    WHERE a.attrelid = ref_tbl AND a.attname = ref_col AND a.attnum > 0 AND NOT a.attisdropped;
    IF qop IS NULL OR rop IS NULL THEN
        RAISE EXCEPTION 'knn_lateral_fill: no column % of % or % of % with a distance operator <->',
            query_col, query_tbl, ref_col, ref_tbl USING ERRCODE = 'undefined_column';
    END IF;
    -- no reference at all: each row once, with a NULL one (keep_alone)
    IF keep_alone THEN
        EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM (SELECT 1 FROM %s u LIMIT 2) s', ref_tbl)
            INTO total;
        IF total <= self THEN
            RETURN QUERY EXECUTE pg_catalog.format('SELECT t.*::%s, NULL::%s FROM %s t', qtype, rtype, query_tbl);
            RETURN;
        END IF;
    END IF;
    -- the references' first k + 1 points (not the row itself: it has none)
    -- and k + 1 without one, read here (x.*::type: a whole row, where a
    -- column of the table could be named x), then each query row without a
    -- point takes the first k that are not itself
    RETURN QUERY EXECUTE pg_catalog.format(
        'WITH t AS MATERIALIZED (SELECT x.*::%1$s AS row FROM %2$s x WHERE (x.%3$I %4$s x.%3$I) IS NULL), '
        'p AS MATERIALIZED (SELECT x.*::%5$s AS row FROM %6$s x WHERE (x.%7$I %8$s x.%7$I) IS NOT NULL LIMIT %9$s), '
        'n AS MATERIALIZED (SELECT x.*::%5$s AS row FROM %6$s x WHERE (x.%7$I %8$s x.%7$I) IS NULL LIMIT %9$s), '
        'c AS (SELECT pg_catalog.array_agg(a.row ORDER BY a.o) AS rows FROM '
        '(SELECT p.row, 0 AS o FROM p UNION ALL SELECT n.row, 1 FROM n) a) '
        'SELECT t.row, e.row FROM t, c, LATERAL (SELECT c.rows[i] AS row FROM pg_catalog.generate_subscripts(c.rows, 1) i '
        'WHERE %10$s ORDER BY i LIMIT %11$s) e',
        qtype, query_tbl, query_col, qop, rtype, ref_tbl, ref_col, rop, k + 1, other, k);
    -- fewer than k points among a row's references: the others make up k
    EXECUTE pg_catalog.format(
        'SELECT pg_catalog.count(*) FROM (SELECT 1 FROM %s u WHERE (u.%I %s u.%I) IS NOT NULL LIMIT %s) s',
        ref_tbl, ref_col, rop, ref_col, k + 1) INTO points;
    IF points - self < k THEN
        RETURN QUERY EXECUTE pg_catalog.format(
            'SELECT t.*::%s, s.row FROM %s t, '
            '(SELECT u.*::%s AS row FROM %s u WHERE (u.%I %s u.%I) IS NULL LIMIT %s) s '
            'WHERE (t.%I %s t.%I) IS NOT NULL',
            qtype, query_tbl, rtype, ref_tbl, ref_col, rop, ref_col, k - (points - self),
            query_col, qop, query_col);
    END IF;
END
$fn$;

COMMENT ON FUNCTION knn_lateral_fill(regclass, regclass, text, text, integer, anyelement, anycompatible, text, boolean) IS
'internal to the LATERAL kNN of distributed tables: the rows knn_join leaves out, query rows '
'without a point with any k references, and references without a point where fewer than k have one';
