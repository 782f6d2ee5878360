#!/usr/bin/env bash
# The exit stress run (issue 18, item 4): hundreds of short sessions, a few at
# a time, each opening a CUDA context, joining on the GPU, having two joins
# cancelled by statement_timeout part-way (one in the engine's kernels, one
# with a huge k), and disconnecting while the server keeps running.  The
# SIGBUS once seen at backend exit came 130-200 ms after a disconnect in long
# GPU sessions; this counts every backend the server log says was killed by a
# signal or exited abnormally, and every session that did not finish its
# statements.
# Run from the project root on the GPU host (carry .gpuhost):
#   GJ_STRESS_SESSIONS (default 200) sessions, GJ_STRESS_PARALLEL (default 8) at once.
. regress/gpu/host/pg_up.sh >/dev/null
OUT=${OUT:-/tmp}
sessions=${GJ_STRESS_SESSIONS:-200}
parallel=${GJ_STRESS_PARALLEL:-8}
psql -qc "DROP DATABASE IF EXISTS exs" -c "CREATE DATABASE exs" postgres
psql -q exs <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION gpujoin;
SELECT setseed(0.4);
CREATE TABLE t2 AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 500000) i;
CREATE TABLE r3 AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y, random() * 100 AS z FROM generate_series(1, 300000) i;
ALTER TABLE t2 ADD PRIMARY KEY (id);
ALTER TABLE r3 ADD PRIMARY KEY (id);
VACUUM ANALYZE t2, r3;
SQL
session=/tmp/gj_stress_session.sql
cat > "$session" <<'SQL'
SET gpujoin.device = gpu;
SET client_min_messages = warning;
SELECT 'ok', count(*) FROM eps_selfjoin('t2', '{x,y}', 0.05);
SELECT 'ok', count(*) FROM knn_join('r3', 't2', '{x,y}', 4) WHERE q <= 1000;
SET statement_timeout = '250ms';
SELECT 'not cancelled', count(*) FROM eps_selfjoin('t2', '{x,y}', 20);
SELECT 'not cancelled', count(*) FROM knn_selfjoin('t2', '{x,y}', 20000);
RESET statement_timeout;
SELECT 'ok', count(*) FROM dbscan('r3', '{x,y,z}', 1.5, 4) WHERE cluster >= 0;
SELECT 'ok', count(*) FROM (SELECT * FROM eps_selfjoin('t2', '{x,y}', 5) LIMIT 10) s;
SQL
crashes() { grep -c 'terminated by signal\|exited with exit code [2-9]' /tmp/gj-pg.log; }
one() {
	# a session; prints "ok" when its four joins returned and both cancels came back
	local f=/tmp/gj_stress_$1.txt
	psql -X -qAt -f "$session" exs > "$f" 2>&1
	if [ "$(grep -c '^ok|' "$f")" = 4 ] && [ "$(grep -c 'canceling statement due to statement timeout' "$f")" = 2 ]; then
		echo ok
	else
		echo "session $1 did not run as planned:"; head -5 "$f"
	fi
	rm -f "$f"
}
export -f one
export session
before=$(crashes)
t0=$(date +%s.%N)
seq "$sessions" | xargs -P "$parallel" -I{} bash -c 'one {}' > /tmp/gj_stress_all.txt 2>&1
sleep 2		# a crash at exit is logged after the disconnect
for i in $(seq 60); do pg_isready -q && break; sleep 1; done
after=$(crashes)
secs=$(awk -v b="$(date +%s.%N)" -v a="$t0" 'BEGIN { printf "%.0f", b - a }')
grep -v '^ok$' /tmp/gj_stress_all.txt | head -20
grep -B2 -A4 'terminated by signal\|exited with exit code [2-9]' /tmp/gj-pg.log | tail -30
cp /tmp/gj_stress_all.txt "$OUT/exitstress_sessions.txt"
echo "exit stress: $((after - before)) crashed backends; $(grep -c '^ok$' /tmp/gj_stress_all.txt) of $sessions sessions ran as planned ($parallel at a time, $secs s)"
