-- gpujoin upgrade 0.12 -> 0.13: a LATERAL kNN of distributed tables whose
-- subquery keeps the other rows and filters them too (WHERE b.id <> a.id
-- AND b.open) runs on the workers: knn_lateral_selfjoin takes ref_filter,
-- and knn_lateral_fill takes other_col and ref_filter together.  Nothing
-- else changes.
\echo Use "ALTER EXTENSION gpujoin UPDATE TO '0.13'" to load this file. \quit

-- The rows of a LATERAL kNN that knn_join leaves out (internal: the
-- planner's rewrite of q JOIN LATERAL (SELECT .. FROM r [WHERE r.c <> q.c]
-- ORDER BY r.g op q.g LIMIT k) for Citus-distributed tables calls it
-- beside knn_lateral_join or knn_selfjoin's form, other_col telling it
-- which).  op is the ORDER BY's operator, <-> or <=> of the columns'
-- types.  A value is proper where its distance to itself is neither NULL
-- nor NaN: PostGIS's is NULL for a NULL, empty or not finite point,
-- pgvector's for a NULL vector, and <=>'s NaN for a zero vector.  The
-- distance of two proper values is a number, and the engine ranks those;
-- any other is NaN or NULL, which sort last in that order, in no order
-- among themselves.  So a query_tbl row that is not proper gets any k rows
-- of ref_tbl, the proper ones first, then those with a NaN distance; and
-- where ref_tbl holds fewer than k proper rows, every proper row gets the
-- others to make up k, those with a NaN distance first.  knn_join skips
-- rows that are not proper, so it returns neither.  other_col: query_tbl
-- is ref_tbl, and a row's references are the rows whose other_col differs
-- from its own (a unique, non-NULL column: the others).  keep_alone: a row
-- with no reference at all (ref_tbl empty, or only the row itself) comes
-- once with a NULL reference (LEFT JOIN LATERAL's row).  ref_filter
-- (0.11): an SQL condition on ref_tbl's columns, the subquery's WHERE on r
-- alone; ref_tbl's references are its rows where it holds (with other_col
-- since 0.13: then a row is among its table's references where it holds on
-- the row, and its references are the others of those).  query_filter
-- (0.11): one on query_tbl's columns, the outer query's WHERE on q alone;
-- only its rows where it holds are query rows.
-- They run as the caller, as their query.  Returns whole rows: query_row
-- and ref_row are NULL::query_tbl and NULL::ref_tbl.
CREATE OR REPLACE FUNCTION knn_lateral_fill(query_tbl regclass, ref_tbl regclass, query_col text, ref_col text,
                                 k integer, query_row anyelement, ref_row anycompatible,
                                 other_col text DEFAULT NULL, keep_alone boolean DEFAULT false,
                                 op text DEFAULT '<->', ref_filter text DEFAULT NULL,
                                 query_filter text DEFAULT NULL)
RETURNS TABLE (q anyelement, r anycompatible)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE AS $fn$
DECLARE
    qop text;
    rop text;
    qtype text := pg_catalog.pg_typeof(query_row);
    rtype text := pg_catalog.pg_typeof(ref_row);
    self integer := CASE WHEN other_col IS NULL THEN 0 ELSE 1 END;
    other text := 'true';
    -- ref_tbl's rows that are references (the alias x's columns, unqualified)
    refs text := pg_catalog.format('(%s)', coalesce(ref_filter, 'true'));
    -- ... and query_tbl's rows that are among them (other_col's form: the
    -- same table), which lack themselves
    among text := CASE WHEN other_col IS NULL THEN 'false' ELSE pg_catalog.format('(%s)', coalesce(ref_filter, 'true')) END;
    -- ... and query_tbl's that are query rows (the alias x's too)
    queries text := pg_catalog.format('(%s)', coalesce(query_filter, 'true'));
    -- proper(column, operator, alias): its distance to itself a number
    proper text := '(%3$s.%1$I %2$s %3$s.%1$I) OPERATOR(pg_catalog.<>) ''NaN''::pg_catalog.float8';
    points bigint;
    total bigint;
BEGIN
    IF k IS NULL OR k < 1 THEN
        RAISE EXCEPTION 'knn_lateral_fill: k must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF op IS NULL OR op NOT IN ('<->', '<=>') THEN
        RAISE EXCEPTION 'knn_lateral_fill: op must be <-> or <=>' USING ERRCODE = 'invalid_parameter_value';
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
    SELECT pg_catalog.format('OPERATOR(%I.%s)', n.nspname, op) INTO qop
    FROM pg_catalog.pg_attribute a
    JOIN pg_catalog.pg_operator o ON o.oprname = op AND o.oprleft = a.atttypid AND o.oprright = a.atttypid
    JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
    WHERE a.attrelid = query_tbl AND a.attname = query_col AND a.attnum > 0 AND NOT a.attisdropped;
    SELECT pg_catalog.format('OPERATOR(%I.%s)', n.nspname, op) INTO rop
    FROM pg_catalog.pg_attribute a
    JOIN pg_catalog.pg_operator o ON o.oprname = op AND o.oprleft = a.atttypid AND o.oprright = a.atttypid
    JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
    WHERE a.attrelid = ref_tbl AND a.attname = ref_col AND a.attnum > 0 AND NOT a.attisdropped;
    IF qop IS NULL OR rop IS NULL THEN
        RAISE EXCEPTION 'knn_lateral_fill: no column % of % or % of % with a distance operator %',
            query_col, query_tbl, ref_col, ref_tbl, op USING ERRCODE = 'undefined_column';
    END IF;
    -- no reference at all: each such row once, with a NULL one (keep_alone);
    -- none has a row below (its list holds no row but itself)
    IF keep_alone THEN
        EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM (SELECT 1 FROM %s x WHERE %s LIMIT 2) s',
            ref_tbl, refs) INTO total;
        IF total = 0 OR (total = 1 AND self = 1) THEN
            -- ref_tbl has none, or only one row, which is the row itself where it is among them
            RETURN QUERY EXECUTE pg_catalog.format('SELECT x.*::%s, NULL::%s FROM %s x WHERE %s AND %s',
                qtype, rtype, query_tbl, queries,
                CASE WHEN total = 0 THEN 'true' ELSE pg_catalog.format('(%s) IS TRUE', among) END);
            IF total = 0 OR ref_filter IS NULL THEN
                RETURN;
            END IF;
        END IF;
    END IF;
    -- the references' first k + 1 proper rows (not the row itself: it is
    -- not proper) and k + 1 others, a NaN distance before a NULL, read here
    -- (x.*::type: a whole row, where a column of the table could be named
    -- x), then each query row that is not proper takes the first k that
    -- are not itself
    RETURN QUERY EXECUTE pg_catalog.format(
        'WITH t AS MATERIALIZED (SELECT x.*::%1$s AS row FROM %2$s x WHERE (%3$s) IS NOT TRUE AND %13$s), '
        'p AS MATERIALIZED (SELECT x.*::%4$s AS row FROM %5$s x WHERE %6$s AND %12$s LIMIT %7$s), '
        'n AS MATERIALIZED (SELECT x.*::%4$s AS row FROM %5$s x WHERE (%6$s) IS NOT TRUE AND %12$s '
        'ORDER BY (x.%8$I %9$s x.%8$I) IS NULL LIMIT %7$s), '
        'c AS (SELECT pg_catalog.array_agg(a.row ORDER BY a.o) AS rows FROM '
        '(SELECT p.row, 0 AS o FROM p UNION ALL SELECT n.row, 1 FROM n) a) '
        'SELECT t.row, e.row FROM t, c, LATERAL (SELECT c.rows[i] AS row FROM pg_catalog.generate_subscripts(c.rows, 1) i '
        'WHERE %10$s ORDER BY i LIMIT %11$s) e',
        qtype, query_tbl, pg_catalog.format(proper, query_col, qop, 'x'), rtype, ref_tbl,
        pg_catalog.format(proper, ref_col, rop, 'x'), k + 1, ref_col, rop, other, k, refs, queries);
    -- fewer than k proper rows among a row's references: the others make up
    -- k.  A proper row among the references (lacks 1) is one of those rows itself.
    EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM (SELECT 1 FROM %s x WHERE %s AND %s LIMIT %s) s',
        ref_tbl, pg_catalog.format(proper, ref_col, rop, 'x'), refs, k + 1) INTO points;
    FOR lacks IN 0 .. self LOOP
        IF points - lacks < k THEN
            RETURN QUERY EXECUTE pg_catalog.format(
                'SELECT t.row, s.row FROM (SELECT x.*::%s AS row FROM %s x WHERE %s AND %s AND (%s) IS %s) t, '
                '(SELECT x.*::%s AS row FROM %s x WHERE (%s) IS NOT TRUE AND %s ORDER BY (x.%I %s x.%I) IS NULL LIMIT %s) s',
                qtype, query_tbl, pg_catalog.format(proper, query_col, qop, 'x'), queries, among,
                CASE WHEN lacks = 1 THEN 'TRUE' ELSE 'NOT TRUE' END,
                rtype, ref_tbl, pg_catalog.format(proper, ref_col, rop, 'x'), refs, ref_col, rop, ref_col,
                k - (points - lacks));
        END IF;
    END LOOP;
END
$fn$;

COMMENT ON FUNCTION knn_lateral_fill(regclass, regclass, text, text, integer, anyelement, anycompatible, text, boolean, text, text, text) IS
'internal to the LATERAL kNN of distributed tables: the rows knn_join leaves out, query rows '
'without a proper value with any k references, and references without one where fewer than k have one';

-- knn_lateral_selfjoin gains ref_filter (internal: only the planner's
-- rewrite calls it)
DROP FUNCTION knn_lateral_selfjoin(regclass, text[], integer, anyelement, text, boolean, text, text);

CREATE FUNCTION knn_lateral_selfjoin(tbl regclass, cols text[], k integer, key anyelement,
                                     metric text DEFAULT 'l2',
                                     use_spheroid boolean DEFAULT false,
                                     id_col text DEFAULT NULL, query_filter text DEFAULT NULL,
                                     ref_filter text DEFAULT NULL)
RETURNS TABLE (a anyelement, b anyelement, rank integer, dist float8)
AS 'MODULE_PATHNAME', 'knn_selfjoin'
LANGUAGE C STABLE PARALLEL UNSAFE COST 100000 ROWS 100000
SUPPORT gpujoin_support;

COMMENT ON FUNCTION knn_lateral_selfjoin(regclass, text[], integer, anyelement, text, boolean, text, text, text) IS
'internal to the LATERAL kNN of distributed tables: knn_selfjoin ranked by the column''s own <->, '
'on the workers';
