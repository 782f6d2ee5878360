-- The plain-SQL join tests' helpers.  join_check(q): q run with the
-- GpuJoin (PostgreSQL's joins disabled, so it is taken wherever offered)
-- and with PostgreSQL's own plan, the rows compared both ways (EXCEPT ALL);
-- gpujoin says whether the GpuJoin was in the plan.
CREATE OR REPLACE FUNCTION join_check(q text)
RETURNS TABLE (gpujoin bool, nrows bigint, missing bigint, extra bigint)
LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    gpujoin := false;
    PERFORM set_config('gpujoin.enable_join', 'on', true);
    PERFORM set_config('enable_nestloop', 'off', true);
    PERFORM set_config('enable_hashjoin', 'off', true);
    PERFORM set_config('enable_mergejoin', 'off', true);
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        IF line LIKE '%GpuJoin%' THEN
            gpujoin := true;
        END IF;
    END LOOP;
    EXECUTE 'CREATE TEMP TABLE jc_on AS ' || q;
    PERFORM set_config('gpujoin.enable_join', 'off', true);
    PERFORM set_config('enable_nestloop', 'on', true);
    PERFORM set_config('enable_hashjoin', 'on', true);
    PERFORM set_config('enable_mergejoin', 'on', true);
    EXECUTE 'CREATE TEMP TABLE jc_off AS ' || q;
    SELECT count(*) INTO nrows FROM jc_off;
    SELECT count(*) INTO missing FROM (SELECT * FROM jc_off EXCEPT ALL SELECT * FROM jc_on) d;
    SELECT count(*) INTO extra FROM (SELECT * FROM jc_on EXCEPT ALL SELECT * FROM jc_off) d;
    DROP TABLE jc_on;
    DROP TABLE jc_off;
    PERFORM set_config('gpujoin.enable_join', 'on', true);
    RETURN NEXT;
END $$;
-- read_lines(q): the lines of q's EXPLAIN ANALYZE that say how the GpuJoin
-- read its sides (worker counts and fetched rows blurred: they vary).
CREATE OR REPLACE FUNCTION read_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    PERFORM set_config('enable_nestloop', 'off', true);
    PERFORM set_config('enable_hashjoin', 'off', true);
    PERFORM set_config('enable_mergejoin', 'off', true);
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
        line := regexp_replace(line, '(rows=\d+)\.00', '\1', 'g');
        IF line ~ 'GpuJoin|Parallel Read|Self Join|Filter By|Fetched' THEN
            RETURN NEXT regexp_replace(regexp_replace(line, '\d+ workers', 'N workers'),
                                       'Ctid: [1-9]\d*', 'Ctid: (some)');
        END IF;
    END LOOP;
END $$;
