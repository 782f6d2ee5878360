-- Included (\i) by the GPU host's SQL benchmarks: pg_temp.timed(what, query, runs)
-- runs a query returning one bigint that many times and records each run's
-- seconds in the temp table timings; pg_temp.timings_table() lists the best
-- and worst run of each.
CREATE TEMP TABLE timings (what text, run int, seconds float8, result bigint);
CREATE FUNCTION pg_temp.timed(what text, q text, runs int DEFAULT 2) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; r bigint;
BEGIN
    FOR run IN 1 .. runs LOOP
        t0 := clock_timestamp();
        EXECUTE q INTO r;
        INSERT INTO timings VALUES (what, run, extract(epoch FROM clock_timestamp() - t0), r);
    END LOOP;
END $$;
CREATE FUNCTION pg_temp.timings_table() RETURNS TABLE (what text, best_s numeric, worst_s numeric, result bigint)
LANGUAGE sql AS $$
    SELECT what, min(seconds)::numeric(8, 3), max(seconds)::numeric(8, 3), max(result)
    FROM timings GROUP BY what ORDER BY min(run), what
$$;
