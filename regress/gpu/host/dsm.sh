#!/usr/bin/env bash
# The 1M x 128 kNN case in SQL (step knnsql's table c128) with the parallel
# read's rows in a shared file of the reader's (gpujoin.parallel_read_file,
# the default) or in a PostgreSQL segment, each with PostgreSQL's defaults
# and with min_dynamic_shared_memory = 2GB.  A new 1 GB POSIX segment is
# allocated page by page (posix_fallocate) before the read can start, faulted
# in again by every process that touches it and freed page by page at the
# end; one carved from the main region keeps its pages mapped from one
# query to the next; the file is allocated by the workers' writes, faulted
# into the reader beside the query and freed on a helper thread.  Alternates
# the variants (a server restart each), three sessions each, three runs a
# session, the first (the session's CUDA start) not counted.  Needs
# regress/gpu/host/pg_up.sh sourced.  Usage: regress/gpu/host/dsm.sh [DB]
set -uo pipefail
db=${1:-gj_regress}
q="SELECT count(*) FROM knn_selfjoin('c128', '{v}', 10)"
out=$(mktemp)
variants="file own-segment main-region main-region+file"
restart() {
	su pgrun -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $GJ_PGBIN/pg_ctl -D /tmp/gj-pgdata -l /tmp/gj-pg.log -w restart" >/dev/null
}
setting() {
	case "$1" in
		main-region*) psql -qc "ALTER SYSTEM SET min_dynamic_shared_memory = '2GB'" postgres ;;
		*) psql -qc "ALTER SYSTEM RESET min_dynamic_shared_memory" postgres ;;
	esac
	restart
}
file_setting() {
	case "$1" in
		*file) echo "SET gpujoin.parallel_read_file = on" ;;
		*) echo "SET gpujoin.parallel_read_file = off" ;;
	esac
}
for r in 1 2 3; do
	for v in $variants; do
		setting "$v"
		psql -XAt -c "SET gpujoin.device = gpu" -c "$(file_setting "$v")" -c '\timing on' \
			-c "$q" -c "$q" -c "$q" "$db" 2>&1 |
			awk -v v="$v" '/^Time:/ { n++; if (n > 1) print v, $2 }' >> "$out"
	done
done
# the read's phases in each setting (DEBUG1) and the scan's (EXPLAIN ANALYZE
# without per-row timing), the second run of a session
for v in $variants; do
	setting "$v"
	psql -XAt -c "SET gpujoin.device = gpu" -c "$(file_setting "$v")" -c "$q" \
		-c "SET client_min_messages = debug1" -c "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) $q" "$db" 2>&1 |
		grep -E "read [0-9]+ rows|engine started|(Read|Index|Join|Wait|Emit|Execution) Time" |
		tr -s ' ' | sed "s/^/$v: /"
done
psql -qc "ALTER SYSTEM RESET min_dynamic_shared_memory" postgres
restart
for v in $variants; do
	awk -v v="$v" '$1 == v { print $2 }' "$out" | sort -n |
		awk -v v="$v" '{ x[NR] = $1 } END { if (NR) printf "%s: best %.1f ms, median %.1f ms of %d\n", v, x[1], x[int((NR + 1) / 2)], NR }'
done
rm -f "$out"
