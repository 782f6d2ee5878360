-- 0.1 -> ... -> 0.14: ALTER EXTENSION UPDATE adds the support function,
-- then the per-row functions, then the metric argument, then the two-table
-- joins, then use_spheroid, then the progress view, then the keyed forms, then knn_lateral_fill, then knn_lateral_join, then ref_filter, then knn_lateral_bound_filter, then knn_lateral_selfjoin's ref_filter, then the kinds' match; the result is the same catalog (names, arguments, support) as a
-- fresh install.
CREATE FUNCTION pg_temp.catalog() RETURNS TABLE (proname name, args text, has_support boolean)
LANGUAGE sql AS $$
    SELECT p.proname, pg_get_function_arguments(p.oid), p.prosupport <> 0
    FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
    JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'gpujoin'
    ORDER BY 1, 2, 3
$$;
CREATE TEMP TABLE fresh AS SELECT * FROM pg_temp.catalog();
DROP EXTENSION gpujoin;
CREATE EXTENSION gpujoin VERSION '0.1';
SELECT extversion FROM pg_extension WHERE extname = 'gpujoin';
SELECT count(*) FILTER (WHERE has_support) AS with_support, count(*) AS functions FROM pg_temp.catalog();
ALTER EXTENSION gpujoin UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'gpujoin';
SELECT count(*) AS differ FROM ((SELECT * FROM pg_temp.catalog() EXCEPT SELECT * FROM fresh)
    UNION ALL (SELECT * FROM fresh EXCEPT SELECT * FROM pg_temp.catalog())) d;
CREATE TABLE u_pts (id int PRIMARY KEY, x float8);
INSERT INTO u_pts VALUES (1, 0), (2, 0.5), (3, 2);
SELECT * FROM eps_selfjoin('u_pts', '{x}', 1) ORDER BY a, b;
