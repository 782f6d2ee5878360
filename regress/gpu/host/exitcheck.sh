#!/usr/bin/env bash
# The SIGBUS at backend exit (README, "Known issues"), A/B: sessions of many
# GPU joins of every kind, each ending with a disconnect, on a server whose
# backends leave without the CUDA teardown (the default) and on one started
# with GJ_CUDA_TEARDOWN=1 (the full teardown, as before the fix).  Counts
# the backends the server log says were killed by a signal, per mode.
# Run from the project root on the GPU host (carry .gpuhost); GJ_EXIT_ROUNDS
# rounds (default 3) of GJ_EXIT_SESSIONS sessions (default 3) per mode;
# GJ_EXIT_MODES picks the modes (default "teardown skip").
. regress/gpu/host/pg_up.sh >/dev/null
OUT=${OUT:-/tmp}
rounds=${GJ_EXIT_ROUNDS:-3}
sessions=${GJ_EXIT_SESSIONS:-3}
psql -qc "DROP DATABASE IF EXISTS ex" -c "CREATE DATABASE ex" postgres
psql -q ex <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION gpujoin;
SELECT setseed(0.2);
CREATE TABLE t2 AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 2000000) i;
CREATE TABLE q3 AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y, random() * 100 AS z FROM generate_series(1, 100000) i;
CREATE TABLE r3 AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y, random() * 100 AS z FROM generate_series(1, 1000000) i;
ALTER TABLE t2 ADD PRIMARY KEY (id);
ALTER TABLE q3 ADD PRIMARY KEY (id);
ALTER TABLE r3 ADD PRIMARY KEY (id);
VACUUM ANALYZE t2, q3, r3;
SQL
# one session: ~40 GPU joins, the mix of regress/gpu/host/bench.sql
session=/tmp/gj_exit_session.sql
{
	echo "SET gpujoin.device = gpu; SET client_min_messages = warning;"
	for e in 0.1 0.3 1e-9; do
		for cs in on off; do
			echo "SET gpujoin.custom_scan = $cs;"
			echo "SELECT count(*) FROM eps_selfjoin('t2', '{x,y}', $e);"
			echo "SELECT count(*) FROM knn_join('q3', 'r3', '{x,y,z}', 20);"
		done
	done
	echo "RESET gpujoin.custom_scan;"
	for i in 1 2 3; do
		echo "SELECT count(*) FROM (SELECT * FROM eps_selfjoin('t2', '{x,y}', 1.0) LIMIT 10) s;"
		echo "SELECT count(*) FROM eps_neighbor_counts('t2', '{x,y}', 0.2) WHERE n > 3;"
		echo "SELECT count(DISTINCT cluster) FROM dbscan('t2', '{x,y}', 0.2, 4);"
		echo "SELECT count(*) FROM knn_selfjoin('r3', '{x,y,z}', 8);"
		echo "SELECT count(*) FROM eps_selfjoin('t2', '{x,y}', 1) WHERE a = 42;"
		echo "EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('t2', '{x,y}', 0.1);"
		echo "SET gpujoin.device = cpu; SELECT count(*) FROM knn_join('q3', 'r3', '{x,y,z}', 20); SET gpujoin.device = gpu;"
	done
} > "$session"
restart() {
	su pgrun -c "$1 LD_LIBRARY_PATH=$LD_LIBRARY_PATH $GJ_PGBIN/pg_ctl -D /tmp/gj-pgdata -l /tmp/gj-pg.log -t 300 -w restart" >/dev/null
	for i in $(seq 120); do pg_isready -q && return; sleep 1; done
}
crashes() { grep -c 'terminated by signal\|exited with exit code [2-9]' /tmp/gj-pg.log; }
modes=${GJ_EXIT_MODES:-teardown skip}
declare -A ran died secs
for mode in $modes; do ran[$mode]=0; died[$mode]=0; secs[$mode]=0; done
for r in $(seq "$rounds"); do
	for mode in $modes; do
		if [ $mode = teardown ]; then restart GJ_CUDA_TEARDOWN=1; else restart ""; fi
		for s in $(seq "$sessions"); do
			before=$(crashes)
			t0=$(date +%s.%N)
			psql -X -qAt -f "$session" ex > "/tmp/gj_exit_$mode.txt" 2>&1
			sleep 1		# the crash came 130-200 ms after the disconnect
			for i in $(seq 120); do pg_isready -q && break; sleep 1; done
			after=$(crashes)
			if [ "$(grep -c '^[0-9]' "/tmp/gj_exit_$mode.txt")" -lt 25 ]; then
				echo "round $r $mode session $s: did not run"; head -3 "/tmp/gj_exit_$mode.txt"
				continue
			fi
			ran[$mode]=$((ran[$mode] + 1))
			died[$mode]=$((died[$mode] + after - before))
			secs[$mode]=$(awk -v a="${secs[$mode]}" -v b="$(date +%s.%N)" -v c="$t0" 'BEGIN { printf "%.1f", a + b - c }')
			echo "round $r $mode session $s: $((after - before)) crashed backends"
		done
	done
done
grep -B2 -A4 'terminated by signal\|exited with exit code [2-9]' /tmp/gj-pg.log | head -40
cp /tmp/gj-pg.log "$OUT/exitcheck_server.log"
cp /tmp/gj_exit_skip.txt "$OUT/exitcheck_session.txt"
restart ""
echo "== exit check: sessions of $(grep -c ';' "$session") statements"
for mode in $modes; do
	echo "exit $mode: ${died[$mode]} crashed backends in ${ran[$mode]} sessions (${secs[$mode]} s)"
done
