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
