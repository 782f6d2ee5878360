-- SQL timings on the GPU host: SELECT count(*) FROM eps_selfjoin(...) on the
-- GPU engine and on the CPU engine (all cores), against the executor's
-- ceiling for the same row count (gj_bench_emit_rows, regress/bench_srf).
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpujoin;
CREATE OR REPLACE FUNCTION gj_bench_emit_rows(bigint) RETURNS TABLE (a bigint, b bigint, dist float8)
    AS 'gj_bench_srf', 'gj_bench_emit_rows' LANGUAGE C STRICT;
DROP TABLE IF EXISTS sb_results;
CREATE TABLE sb_results (case_name text, method text, seconds float8, result bigint);
CREATE OR REPLACE FUNCTION sb(c text, m text, dev text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; n bigint;
BEGIN
    PERFORM set_config('gpujoin.device', dev, true);
    t0 := clock_timestamp();
    EXECUTE q INTO n;
    INSERT INTO sb_results VALUES (c, m, extract(epoch FROM clock_timestamp() - t0), n);
END $$;
SELECT setseed(0.31);
DROP TABLE IF EXISTS sb2, sb6;
CREATE TABLE sb2 AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 2000000) i;
CREATE TABLE sb6 AS SELECT i AS id, random() * 100 AS x1, random() * 100 AS x2, random() * 100 AS x3,
    random() * 100 AS x4, random() * 100 AS x5, random() * 100 AS x6 FROM generate_series(1, 2000000) i;
VACUUM ANALYZE sb2, sb6;
SELECT sb('2d read only (eps tiny)', 'gpu', 'gpu', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9, 'id')$q$);
SELECT sb('2d read only (eps tiny)', 'cpu', 'cpu', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 1e-9, 'id')$q$);
SELECT sb('unif2d eps0.1', 'gpu', 'gpu', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.1, 'id')$q$);
SELECT sb('unif2d eps0.1', 'cpu', 'cpu', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.1, 'id')$q$);
SELECT sb('unif2d eps0.3', 'gpu', 'gpu', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3, 'id')$q$);
SELECT sb('unif2d eps0.3', 'cpu', 'cpu', $q$SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.3, 'id')$q$);
SELECT sb('unif6d eps10', 'gpu', 'gpu', $q$SELECT count(*) FROM eps_selfjoin('sb6', '{x1,x2,x3,x4,x5,x6}', 10, 'id')$q$);
SELECT sb('unif6d eps10', 'cpu', 'cpu', $q$SELECT count(*) FROM eps_selfjoin('sb6', '{x1,x2,x3,x4,x5,x6}', 10, 'id')$q$);
SELECT sb(c, 'ceiling', 'cpu', format('SELECT count(*) FROM gj_bench_emit_rows(%s)', n))
FROM (SELECT DISTINCT case_name AS c, result AS n FROM sb_results WHERE method = 'gpu') s;
SELECT case_name, max(result) FILTER (WHERE method = 'gpu') AS pairs,
       round(max(seconds) FILTER (WHERE method = 'gpu')::numeric, 3) AS gpu_s,
       round(max(seconds) FILTER (WHERE method = 'cpu')::numeric, 3) AS cpu_s,
       round(max(seconds) FILTER (WHERE method = 'ceiling')::numeric, 3) AS ceiling_s,
       round((max(seconds) FILTER (WHERE method = 'gpu') / nullif(max(seconds) FILTER (WHERE method = 'ceiling'), 0))::numeric, 2) AS gpu_vs_ceiling,
       bool_and(result = (SELECT max(result) FROM sb_results r2 WHERE r2.case_name = sb_results.case_name)) AS counts_agree
FROM sb_results GROUP BY case_name ORDER BY case_name;
