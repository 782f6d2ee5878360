#!/usr/bin/env bash
# gpujoin_progress seen from a second session, as a user would watch it:
# a join runs in one psql while another polls the view.  Needs a running
# server that psql reaches (PG* variables) with gpujoin installable; run by
# regress/run_tests.sh inside its throwaway cluster.  Ends with
# "progress: N passed, N failed".
#   progress_check.sh [database]
set -uo pipefail
db=${1:-progress_check}
passed=0
failed=0
check() {
	if [ "$2" = ok ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL progress: $1 ($2)"
	fi
}
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" -c "$1"; }

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null || exit 1
q "CREATE EXTENSION gpujoin" || exit 1
# 300K 2-D rows: eps 0.02 gives 56M pairs, a few seconds on 2 cores
q "CREATE TABLE pc AS SELECT i AS id, random() AS x, random() AS y FROM generate_series(1, 300000) i;
   ALTER TABLE pc ADD PRIMARY KEY (id); ANALYZE pc;
   CREATE ROLE pc_other; GRANT SELECT ON gpujoin_progress TO pc_other" >/dev/null 2>&1 ||
	q "GRANT SELECT ON gpujoin_progress TO pc_other" >/dev/null

# Runs $1 in the background and polls the view until it ends; prints the
# rows seen (pid|function|phase|rows_read|rows_total|result_rows|result_total|percent|elapsed_s)
# to $2 and what the other role saw to $2.other.
watch() {
	local out=$2
	: > "$out"
	: > "$out.other"
	psql -X -q -At -d "$db" -c "$1" > "$out.result" 2>&1 &
	local bg=$!
	for _ in $(seq 1 300); do
		q "SELECT pid, function, phase, rows_read, rows_total, result_rows, result_total, percent, elapsed_s
		   FROM gpujoin_progress" >> "$out"
		psql -X -q -At -d "$db" -c "SET ROLE pc_other" -c "SELECT count(*) FROM gpujoin_progress" >> "$out.other" 2>&1
		kill -0 $bg 2>/dev/null || break
		sleep 0.1
	done
	wait $bg
}

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# 1. an eps self-join: seen in its phases, the percent of the sampled estimate
watch "SELECT count(*) FROM eps_selfjoin('pc', '{x,y}', 0.02)" "$log/eps"
seen=$(grep -c '|eps_selfjoin|' "$log/eps")
[ "$seen" -ge 2 ] && r=ok || r="seen $seen times"
check "an eps_selfjoin shows while it runs" "$r"
# (a row is published when the join begins, before its read has planned
# its query and knows the total: read, 0 rows, total and percent NULL, as
# the view documents; a sample can land there, so that one state is let be)
started='!($3 == "read" && $4 == 0 && $5 == "")'
bad=$(awk -F'|' '$2 == "eps_selfjoin" && '"$started"' && ($8 == "" || $8 < 0 || $8 > 100)' "$log/eps" | head -1)
[ -z "$bad" ] && r=ok || r="row $bad"
check "its percent is between 0 and 100" "$r"
emit=$(awk -F'|' '$2 == "eps_selfjoin" && $3 == "emit" && $8 > 0 && $6 > 0' "$log/eps" | wc -l)
[ "$emit" -ge 1 ] && r=ok || r="no emit row with a percent above 0"
check "it reaches the emit phase with result rows and a percent" "$r"
bad=$(awk -F'|' '$2 == "eps_selfjoin" && '"$started"' && ($4 > $5 || $5 < 300000 * 0.9)' "$log/eps" | head -1)
[ -z "$bad" ] && r=ok || r="row $bad"
check "rows read of about 300000" "$r"
n=$(q "SELECT count(*) FROM gpujoin_progress")
[ "$n" = 0 ] && r=ok || r="$n rows"
check "the view is empty after the join" "$r"
grep -qE '^[0-9]+$' "$log/eps.result" && r=ok || r="$(head -2 "$log/eps.result")"
check "the watched join returned its count" "$r"
bad=$(grep -v '^0$' "$log/eps.other" | head -1)
[ -z "$bad" ] && r=ok || r="saw $bad"
check "another role does not see the join" "$r"

# 2. kNN: the result's size is rows x k
watch "SELECT count(*) FROM knn_selfjoin('pc', '{x,y}', 150)" "$log/knn"
bad=$(awk -F'|' '$2 == "knn_selfjoin" && $7 != "" && $7 != 45000000' "$log/knn" | head -1)
seen=$(grep -c '|knn_selfjoin|' "$log/knn")
[ "$seen" -ge 1 ] && [ -z "$bad" ] && r=ok || r="seen $seen, row $bad"
check "a knn_selfjoin shows, of 300000 x 150 result rows" "$r"

# 3. a cancelled join leaves the view
psql -X -q -At -d "$db" -c "SELECT count(*) FROM eps_selfjoin('pc', '{x,y}', 0.03)" > "$log/cancel.result" 2>&1 &
bg=$!
pid=
for _ in $(seq 1 100); do
	pid=$(q "SELECT pid FROM gpujoin_progress LIMIT 1")
	[ -n "$pid" ] && break
	sleep 0.1
done
if [ -n "$pid" ]; then
	q "SELECT pg_cancel_backend($pid)" >/dev/null
	wait $bg
	n=$(q "SELECT count(*) FROM gpujoin_progress")
	[ "$n" = 0 ] && grep -q "canceling statement" "$log/cancel.result" && r=ok ||
		r="$n rows after cancel; $(head -1 "$log/cancel.result")"
else
	wait $bg
	r="never seen"
fi
check "a cancelled join leaves the view" "$r"

psql -X -q -d postgres -c "DROP DATABASE $db" >/dev/null
psql -X -q -d postgres -c "DROP ROLE IF EXISTS pc_other" >/dev/null
echo "progress: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
