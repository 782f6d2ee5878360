#!/usr/bin/env bash
# How a distributed join's time grows with the number of Citus workers:
# the same rows (uniform 2-D, about two neighbours a row) on clusters of
# 1, 2 and 4 workers made on this machine, each call on the workers with
# EXPLAIN ANALYZE's parts (plan, repartition, workers' join and rows back).
# Not a test.  On one machine every worker shares its cores: what this
# shows is what the extra nodes and tasks cost, not what more machines give.
#   regress/bench/bench_citus_workers.sh [rows] [worker counts...]
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rows=${1:-200000}
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 2 4)
eps=$(awk -v n="$rows" 'BEGIN { printf "%.6g", sqrt(2 / (3.14159 * n)) }')
one() {
	local q="psql -X -q -At -v ON_ERROR_STOP=1"
	$q -c "SET citus.shard_count = 32;
	   CREATE TABLE r (id bigint PRIMARY KEY, x float8, y float8);
	   CREATE TABLE s (id bigint PRIMARY KEY, x float8, y float8);
	   SELECT create_distributed_table('r', 'id');
	   SELECT create_distributed_table('s', 'id');
	   INSERT INTO r SELECT i, random(), random() FROM generate_series(1, $GJ_BENCH_ROWS) i;
	   INSERT INTO s SELECT i, random(), random() FROM generate_series(1, $GJ_BENCH_ROWS) i;" >/dev/null
	for call in "eps_join('r', 's', '{x,y}', $eps)" "knn_selfjoin('r', '{x,y}', 5)" "dbscan('r', '{x,y}', $eps, 3)"; do
		$q -c "SELECT count(*) FROM $call" >/dev/null	# warm
		$q -c "EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM $call" |
			awk -v w="$GJ_NWORKERS" -v c="${call%%(*}" '
				/Distributed:/ { sub(/.*Distributed: /, ""); strips = $1 }
				/Plan Time:/ && !/Planning/ { plan = $3 }
				/Repartition Time:/ { move = $3 }
				/Workers. Join Time:/ { join = $4 }
				/Execution Time:/ { total = $3 }
				END { printf "%-8s %7d %-13s %9.0f %11.0f %12.0f %9.0f\n", w, strips, c, plan, move, join, total }'
	done
}
export -f one
export GJ_BENCH_ROWS=$rows eps
printf "%-8s %7s %-13s %9s %11s %12s %9s\n" workers strips call "plan ms" "repart. ms" "wk join ms" "total ms"
for w in "${counts[@]}"; do
	GJ_CITUS_WORKERS=$w GJ_NWORKERS=$w "$here/citus_cluster.sh" bash -c one
done
