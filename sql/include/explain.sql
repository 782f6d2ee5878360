-- EXPLAIN ANALYZE of a query, printed alike by every PostgreSQL gpujoin
-- supports: without times, costs and buffers (18 shows buffers by
-- default), row counts whole (18 prints two decimals).
CREATE FUNCTION pg_temp.explain_analyze(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
        RETURN NEXT regexp_replace(line, '(rows=\d+)\.00', '\1', 'g');
    END LOOP;
END $$;
