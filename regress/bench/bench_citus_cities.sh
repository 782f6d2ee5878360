#!/usr/bin/env bash
# Issue 45's bar on data the size of its cities and coastline: 171K and
# 1.9M PostGIS points (uniform in a 60 x 30 degree box, as
# bench_plain_join.sql makes them) in two distributed tables; eps_join at
# 0.05 and knn_join k = 5 on the workers and with every row read on the
# coordinator, side by side: time, result rows, and how much the
# coordinator's backend grows (VmHWM) against the input's size.  Not a test.
#   regress/citus_cluster.sh regress/bench/bench_citus_cities.sh [ncity] [ncoast]
set -uo pipefail
nc=${1:-171000}
ns=${2:-1900000}
psql -X -q -At -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS postgis" \
	-c "SET citus.shard_count = 32;
   CREATE TABLE cities (id bigint PRIMARY KEY, g geometry(Point, 4326));
   CREATE TABLE coast (id bigint PRIMARY KEY, g geometry(Point, 4326));
   SELECT create_distributed_table('cities', 'id');
   SELECT create_distributed_table('coast', 'id');
   INSERT INTO cities SELECT i, ST_SetSRID(ST_MakePoint(random() * 60, random() * 30), 4326) FROM generate_series(1, $nc) i;
   INSERT INTO coast SELECT i, ST_SetSRID(ST_MakePoint(random() * 60, random() * 30), 4326) FROM generate_series(1, $ns) i;" >/dev/null 2>&1
mb=$(awk -v n=$((nc + ns)) 'BEGIN { printf "%.1f", n * 24 / 1e6 }')	# x, y and an id a row
hwm="SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmHWM:\s+(\d+)'))[1]"
echo "cities $nc, coast $ns: $mb MB of coordinates and ids"
printf "%-22s %-4s %10s %9s %12s\n" call mode rows seconds "grew kB"
for call in "eps_join('cities', 'coast', '{g}', 0.05)" "knn_join('cities', 'coast', '{g}', 5)"; do
	for mode in on off; do
		psql -X -q -At -c "SET gpujoin.distributed = $mode" -c "$hwm" -c '\timing on' \
			-c "SELECT count(*) FROM $call" -c '\timing off' -c "$hwm" 2>/dev/null |
			awk -v c="${call%%(*}" -v m="$mode" '/^Time:/ { t = $2 / 1000 } /^[0-9]+$/ { v[++k] = $1 }
				END { printf "%-22s %-4s %10d %9.2f %12d\n", c, m, v[2], t, v[3] - v[1] }'
	done
done
