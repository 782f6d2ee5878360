-- How fast the backend takes the GPU's pairs, by result-buffer size: count(*)
-- over eps_selfjoin(sb2, 0.3) (56.4M rows) on the GPU with its default
-- buffers (2M pairs, 48 MB each) and with smaller ones
-- (gpujoin.gpu_batch_pairs), against the CPU engine and the streaming
-- ceiling, five rounds interleaved; min and median per method.  The GPU
-- never keeps the backend waiting here (Wait Time ~1 ms), so what differs
-- is what a row costs the backend to take from each kind of buffer.
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
\ir ../../bench/bench_tables.sql
\ir ../../bench/bench_timing.sql
DROP TABLE IF EXISTS em_results;
CREATE TABLE em_results (round int, method text, seconds float8, result bigint);
CREATE OR REPLACE FUNCTION em(r int, m text, dev text, batch int, q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('gpujoin.device', dev, true);
    PERFORM set_config('gpujoin.gpu_batch_pairs', batch::text, true);
    INSERT INTO em_results SELECT r, m, b.seconds, b.result::bigint FROM pg_temp.best_of(q, 1) b;
END $$;
SELECT em(0, 'warm', 'gpu', 0, $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3)$q$);
DO $$
BEGIN
    FOR r IN 1..5 LOOP
        PERFORM em(r, 'gpu, 2M-pair buffers', 'gpu', 0, $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3)$q$);
        PERFORM em(r, 'gpu, 256K-pair buffers', 'gpu', 262144, $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3)$q$);
        PERFORM em(r, 'gpu, 64K-pair buffers', 'gpu', 65536, $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3)$q$);
        PERFORM em(r, 'cpu engine', 'cpu', 0, $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3)$q$);
        PERFORM em(r, 'ceiling', 'cpu', 0, $q$SELECT count(*) FROM (SELECT generate_series(1, 56402623)) s$q$);
    END LOOP;
END $$;
\pset footer on
SELECT * FROM pg_temp.spread_of('em_results');
