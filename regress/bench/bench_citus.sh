#!/usr/bin/env bash
# The distributed joins (dist/) against the same calls with every row read
# on the coordinator (gpujoin.distributed = off) and against one node's
# plain tables, side by side in one run, with where the distributed time
# goes (EXPLAIN ANALYZE: plan, repartition, workers' join and rows back)
# and how much the coordinator's backend grows.  Not a test.
#   regress/citus_cluster.sh regress/bench/bench_citus.sh [rows]
# On one machine the coordinator and both workers share its cores: the
# ratios say what the distributed path costs, not what more machines give.
set -uo pipefail
n=${1:-500000}
q() { psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }
q "SET citus.shard_count = 32;
   CREATE TABLE r (id bigint PRIMARY KEY, x float8, y float8);
   CREATE TABLE s (id bigint PRIMARY KEY, x float8, y float8);
   SELECT create_distributed_table('r', 'id');
   SELECT create_distributed_table('s', 'id');
   INSERT INTO r SELECT i, random(), random() FROM generate_series(1, $n) i;
   INSERT INTO s SELECT i, random(), random() FROM generate_series(1, $n) i;
   CREATE TABLE lr AS SELECT * FROM r;
   CREATE TABLE ls AS SELECT * FROM s;
   ALTER TABLE lr ADD PRIMARY KEY (id);
   ALTER TABLE ls ADD PRIMARY KEY (id);
   ANALYZE lr; ANALYZE ls;" >/dev/null
eps=$(awk -v n="$n" 'BEGIN { printf "%.6g", sqrt(2 / (3.14159 * n)) }')   # about 2 neighbours a row
hwm="SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmHWM:\s+(\d+)'))[1]"
# $1 setting, $2 call: "seconds rows peak-kB", the call run twice (the second timed)
timed() {
	psql -X -q -At -c "$1" -c "SELECT count(*) FROM ($2) j" -c "$hwm" -c '\timing on' \
		-c "SELECT count(*) FROM ($2) j" -c '\timing off' -c "$hwm" 2>/dev/null |
		awk '/^Time:/ { t = $2 / 1000 } /^[0-9]+$/ { v[++k] = $1 } END { printf "%.2f %d %d", t, v[3], v[4] - v[2] }'
}
printf "%-14s %10s %9s %9s %9s %11s %11s\n" function rows workers coord one-node "grow-wk kB" "grow-co kB"
for f in "eps_join:SELECT * FROM eps_join('{R}', '{S}', '{x,y}', $eps)" \
	"eps_selfjoin:SELECT * FROM eps_selfjoin('{R}', '{x,y}', $eps)" \
	"neighbor_cnt:SELECT * FROM eps_neighbor_counts('{R}', '{x,y}', $eps)" \
	"knn_join_k5:SELECT * FROM knn_join('{R}', '{S}', '{x,y}', 5)" \
	"knn_self_k5:SELECT * FROM knn_selfjoin('{R}', '{x,y}', 5)"; do
	name=${f%%:*}
	call=${f#*:}
	d=${call//\{R\}/r}
	d=${d//\{S\}/s}
	l=${call//\{R\}/lr}
	l=${l//\{S\}/ls}
	read -r tw rows gw <<<"$(timed "SET gpujoin.distributed = on" "$d")"
	read -r tc _ gc <<<"$(timed "SET gpujoin.distributed = off" "$d")"
	read -r tl _ _ <<<"$(timed "SELECT 1" "$l")"
	printf "%-14s %10s %8ss %8ss %8ss %11s %11s\n" "$name" "$rows" "$tw" "$tc" "$tl" "$gw" "$gc"
	psql -X -q -At -c "EXPLAIN (ANALYZE, COSTS OFF) $d" 2>/dev/null |
		grep -E "Distributed|Rows Moved|Plan Time|Repartition Time|Workers' Join Time" | sed 's/^ */    /'
done
