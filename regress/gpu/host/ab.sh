#!/usr/bin/env bash
# Builds of gpujoin.so on one query, side by side in one run on the GPU host:
#   regress/gpu/host/ab.sh LIB_A LIB_B DB "SQL" [ROUNDS [LIB_C ...]]
# Each round installs each build in turn (unlinked first: a running backend
# keeps its mapping, see gpuhost_pg_up.sh), and times SQL three times in a new
# session with gpujoin.device = gpu; the first of the three carries the
# session's CUDA start and is not counted.  Builds are named A, B, C, ... in
# the order given.  Prints "name round run ms" lines, then each build's best
# and median.  Needs regress/gpu/host/pg_up.sh sourced.
set -uo pipefail
a=$1 b=$2 db=$3 sql=$4 rounds=${5:-2}
shift 4
[ $# -gt 0 ] && shift
libs=("$a" "$b" "$@")
names=(A B C D E F G H)
lib=/opt/pgx/usr/lib/postgresql/15/lib
out=$(mktemp)
for r in $(seq 1 "$rounds"); do
	for i in "${!libs[@]}"; do
		v=${names[$i]}
		rm -f "$lib/gpujoin.so" && cp "${libs[$i]}" "$lib/gpujoin.so"
		psql -XAt -c "SET gpujoin.device = gpu" -c '\timing on' -c "$sql" -c "$sql" -c "$sql" "$db" 2>&1 |
			awk -v v="$v" -v r="$r" '/^Time:/ { n++; if (n > 1) print v, r, n, $2 }' | tee -a "$out"
	done
done
for i in "${!libs[@]}"; do
	v=${names[$i]}
	awk -v v="$v" '$1 == v { print $4 }' "$out" | sort -n |
		awk -v v="$v" -v f="${libs[$i]}" '{ x[NR] = $1 } END { if (NR) printf "%s (%s): best %.1f ms, median %.1f ms of %d\n", v, f, x[1], x[int((NR + 1) / 2)], NR }'
done
rm -f "$out"
