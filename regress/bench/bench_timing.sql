-- The benchmarks' one timing rule, included with \ir: the fastest of reps
-- runs of a query that returns one value, and that value (as text).
CREATE OR REPLACE FUNCTION pg_temp.best_of(q text, reps int, OUT seconds float8, OUT result text)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
    seconds := 1e9;
    FOR i IN 1..reps LOOP
        t0 := clock_timestamp();
        EXECUTE q INTO result;
        seconds := least(seconds, extract(epoch FROM clock_timestamp() - t0));
    END LOOP;
END $$;

-- The spread of interleaved rounds: per method of table tbl (round,
-- method, seconds, result; round 0 is the warm-up), how many runs and
-- distinct results, and min, median and max seconds, fastest median first.
CREATE OR REPLACE FUNCTION pg_temp.spread_of(tbl regclass)
RETURNS TABLE (method text, runs bigint, results bigint, min_s numeric, median_s numeric, max_s numeric)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
        SELECT method, count(*), count(DISTINCT result),
               round(min(seconds)::numeric, 3),
               round((percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds))::numeric, 3),
               round(max(seconds)::numeric, 3)
        FROM %s WHERE round > 0 GROUP BY method ORDER BY 5$q$, tbl);
END $$;
