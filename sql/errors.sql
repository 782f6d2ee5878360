-- Every argument error, with its SQLSTATE.
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE TABLE e (id int PRIMARY KEY, x float8, y float8, t text, f float8, arr float8[], arr4 real[]);
INSERT INTO e VALUES (1, 0, 0, 'a', 0.5, '{0,0}', '{0,0}'), (2, 1, 1, 'b', 1.5, '{1,1}', '{1,1}');
CREATE TABLE nopk (x float8);
CREATE TABLE textpk (id text PRIMARY KEY, x float8);
CREATE TABLE twopk (a int, b int, x float8, PRIMARY KEY (a, b));
CREATE SEQUENCE seq;
CREATE INDEX e_x ON e (x);

-- eps
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x}', 0)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x}', -1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x}', 'NaN')$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x}', 'Infinity')$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT id, x FROM e', '-Infinity')$$);
-- NULL arguments
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin(NULL, '{x}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', NULL, 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x}', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x}', 1, NULL, NULL)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql(NULL, 1)$$);
-- columns
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x,NULL}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{{x},{y}}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x,nosuch}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{X}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x,t}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{ctid}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x,arr}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{arr,arr4}', 1)$$);
-- a column named twice (it would weigh its axis twice): 42701
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x,x}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_join('e', 'e', '{y,x,y}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM knn_selfjoin('e', '{x,y,x}', 1)$$);
-- metric names in any case, as PostgreSQL's settings take theirs
SELECT count(*) FROM knn_selfjoin('e', '{x,y}', 1, metric => 'L2');
SELECT count(*) FROM eps_selfjoin('e', '{x,y}', 2, metric => 'Cosine');
SELECT pg_temp.err($$SELECT * FROM knn_selfjoin('e', '{x,y}', 1, metric => 'l1')$$);
-- id column
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x}', 1, 'f')$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x}', 1, 'nosuch')$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('nopk', '{x}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('textpk', '{x}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('twopk', '{x}', 1)$$);
-- the hint that tells the user what to do
SELECT * FROM eps_selfjoin('nopk', '{x}', 1);
-- not a relation we can read
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('seq', '{x}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('e_x', '{x}', 1)$$);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin('nosuchtable', '{x}', 1)$$);
-- dimension limit: 16,000 (pgvector's) is fine, 16,001 is not; 300 scalar columns are fine
SELECT count(*) FROM eps_selfjoin_sql(
    (SELECT 'SELECT g::int' || string_agg(', 1.0::float8', '') || ' FROM generate_series(1,2) g'
     FROM generate_series(1, 300)), 1.0);
SELECT count(*) FROM eps_selfjoin_sql(
    'SELECT g::int, array_fill(g * 0.01::float8, ARRAY[16000]) FROM generate_series(1,2) g', 1.3);
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT 1::int, array_fill(0.0::float8, ARRAY[16001])', 1)$$);
-- numeric beyond float8 range
SELECT pg_temp.err($$SELECT * FROM eps_selfjoin_sql('SELECT 1, 1e400::numeric', 1)$$);
-- device and threads GUCs
-- gpu: an error without a usable GPU, the same rows with one
SET gpujoin.device = gpu;
SELECT CASE WHEN value LIKE 'none%'
            THEN pg_temp.err($$SELECT * FROM eps_selfjoin('e', '{x}', 1)$$)
                 = '0A000: gpujoin.device is gpu but no GPU is usable'
            ELSE (SELECT count(*) FROM eps_selfjoin('e', '{x}', 1)) = 1
       END AS device_gpu_behaves
FROM gpujoin_info() WHERE name = 'gpu';
RESET gpujoin.device;
SET gpujoin.device = quantum;
-- gpujoin.gpus: GPU numbers separated by commas, or empty for every GPU
SET gpujoin.gpus = 'all';
SET gpujoin.gpus = '0,';
SET gpujoin.gpus = '-1';
SET gpujoin.gpus = '16';
SET gpujoin.gpus = ' 0, 1 ,0';
SHOW gpujoin.gpus;
RESET gpujoin.gpus;
SET gpujoin.cpu_threads = -1;
SET gpujoin.cpu_threads = 100000;
SET gpujoin.nosuch = 1;
