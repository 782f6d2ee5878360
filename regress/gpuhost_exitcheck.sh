#!/usr/bin/env bash
# Diagnostic for the SIGBUS at backend exit (README, "Known issues"): one psql
# session per kind of query on the GPU host, each followed by a look at the
# server log for crashed backends.  None of these short sessions crashed on
# 2026-11-23; the long session of regress/gpuhost_bench.sql did.
# Run from the project root on the GPU host (carry .gpuhost).
. .gpuhost/pg-up.sh >/dev/null
df -h /dev/shm | tail -1; ulimit -a | grep -i "core\|locked"
psql -qc "DROP DATABASE IF EXISTS ex" -c "CREATE DATABASE ex" postgres
psql -q ex <<'SQL'
CREATE EXTENSION gpujoin;
CREATE TABLE t2 AS SELECT i AS id, random()*100 AS x, random()*100 AS y FROM generate_series(1, 2000000) i;
ALTER TABLE t2 ADD PRIMARY KEY (id);
CREATE TABLE q3 AS SELECT i AS id, random()*100 AS x, random()*100 AS y, random()*100 AS z FROM generate_series(1, 100000) i;
CREATE TABLE r3 AS SELECT i AS id, random()*100 AS x, random()*100 AS y, random()*100 AS z FROM generate_series(1, 1000000) i;
ALTER TABLE q3 ADD PRIMARY KEY (id); ALTER TABLE r3 ADD PRIMARY KEY (id);
VACUUM ANALYZE;
SQL
check() {
	sleep 0.7
	n=$(grep -c "terminated by signal" /tmp/gj-pg.log)
	echo "$1: crashes so far $n"
}
run() { name=$1; shift; psql -qAt ex -c "$@" >/dev/null 2>&1; check "$name"; }
run "nothing" "SELECT 1"
run "gpu info" "SELECT * FROM gpujoin_info()"
run "gpu eps small" "SET gpujoin.device=gpu; SELECT count(*) FROM eps_selfjoin_sql('SELECT id, x, y FROM t2 WHERE id < 1000', 1)"
run "gpu eps 2M 0.3" "SET gpujoin.device=gpu; SELECT count(*) FROM eps_selfjoin('t2', '{x,y}', 0.3)"
run "gpu eps 2M fscan" "SET gpujoin.device=gpu; SET gpujoin.custom_scan=off; SELECT count(*) FROM eps_selfjoin('t2', '{x,y}', 0.1)"
run "gpu knn" "SET gpujoin.device=gpu; SELECT count(*) FROM knn_join('q3', 'r3', '{x,y,z}', 20)"
run "cpu knn" "SET gpujoin.device=cpu; SELECT count(*) FROM knn_join('q3', 'r3', '{x,y,z}', 20)"
run "parallel scan" "SELECT count(*), sum(x) FROM t2"
run "gpu eps + parallel scan" "SET gpujoin.device=gpu; SELECT count(*) FROM eps_selfjoin('t2', '{x,y}', 0.1); SELECT count(*), sum(x) FROM t2"
run "gpu knn + parallel scan" "SET gpujoin.device=gpu; SELECT count(*) FROM knn_join('q3', 'r3', '{x,y,z}', 20); SELECT count(*), sum(x) FROM t2"
run "cpu eps + parallel" "SET gpujoin.device=cpu; SELECT count(*) FROM eps_selfjoin('t2', '{x,y}', 0.1); SELECT count(*), sum(x) FROM t2"
run "gpu eps LIMIT" "SET gpujoin.device=gpu; SELECT count(*) FROM (SELECT * FROM eps_selfjoin('t2', '{x,y}', 1.0) LIMIT 10) s"
run "gpu explain analyze" "SET gpujoin.device=gpu; EXPLAIN (ANALYZE, VERBOSE) SELECT count(*) FROM eps_selfjoin('t2', '{x,y}', 0.1)"
grep -B3 -A3 "terminated by signal" /tmp/gj-pg.log | head -40
cp /tmp/gj-pg.log $OUT/server.log
