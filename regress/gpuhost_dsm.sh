#!/usr/bin/env bash
# The 1M x 128 kNN case in SQL (step knnsql's table c128) with the parallel
# read's shared segment of its own, as by default, against one carved from
# PostgreSQL's main shared memory (min_dynamic_shared_memory = 2GB): a new
# 1 GB segment is allocated page by page (posix_fallocate) before the read can
# start and faulted in again by every process that touches it, while the main
# region's pages stay mapped from one query to the next.  Alternates the two
# settings (a server restart each), three sessions each, three runs a session,
# the first (the session's CUDA start) not counted.  Needs
# regress/gpuhost_pg_up.sh sourced.  Usage: regress/gpuhost_dsm.sh [DB]
set -uo pipefail
db=${1:-gj_regress}
q="SELECT count(*) FROM knn_selfjoin('c128', '{v}', 10)"
out=$(mktemp)
restart() {
	su pgrun -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $GJ_PGBIN/pg_ctl -D /tmp/gj-pgdata -l /tmp/gj-pg.log -w restart" >/dev/null
}
setting() {
	if [ "$1" = main-region ]; then
		psql -qc "ALTER SYSTEM SET min_dynamic_shared_memory = '2GB'" postgres
	else
		psql -qc "ALTER SYSTEM RESET min_dynamic_shared_memory" postgres
	fi
	restart
}
for r in 1 2 3; do
	for v in own-segment main-region; do
		setting "$v"
		psql -XAt -c "SET gpujoin.device = gpu" -c '\timing on' -c "$q" -c "$q" -c "$q" "$db" 2>&1 |
			awk -v v="$v" '/^Time:/ { n++; if (n > 1) print v, $2 }' >> "$out"
	done
done
# the read's phases in each setting (DEBUG1), the second run of a session
for v in own-segment main-region; do
	setting "$v"
	psql -XAt -c "SET gpujoin.device = gpu" -c "$q" -c "SET client_min_messages = debug1" -c "$q" "$db" 2>&1 |
		grep -E "read [0-9]+ rows|engine started" | sed "s/^/$v: /"
done
setting own-segment
for v in own-segment main-region; do
	awk -v v="$v" '$1 == v { print $2 }' "$out" | sort -n |
		awk -v v="$v" '{ x[NR] = $1 } END { if (NR) printf "%s: best %.1f ms, median %.1f ms of %d\n", v, x[1], x[int((NR + 1) / 2)], NR }'
done
rm -f "$out"
