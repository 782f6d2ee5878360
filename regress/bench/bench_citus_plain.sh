#!/usr/bin/env bash
# Plain SQL ST_DWithin joins of two Citus-distributed tables (dist/plain_sql.c),
# side by side in one run:
#   1. gpujoin loaded after citus, the plain SQL a user writes: the inner
#      join on geometry(Point) columns goes to the workers as one eps_join
#      of the rows whole (dist/plain_pairs.c); the same join written as a
#      LEFT JOIN whose WHERE makes it inner reads each table as a subquery,
#      joined by a GpuJoin on the coordinator (dist/plain_sql.c);
#   2. the same subqueries written by hand, gpujoin not loaded: PostGIS's
#      nested loop over Citus's intermediate results (what a user can do
#      without gpujoin; written as plain SQL, Citus refuses the join);
#   3. eps_join on the workers (dist/), the pairs' ids only;
#   4. one node's plain tables, GpuJoin (gpujoin loaded).
# Uniform points in a 100 x 100 square, eps 0.5 (about 0.8 partners a row);
# the best of two runs (the hand-written nested loop: one).  Not a test.
#   regress/citus_cluster.sh regress/bench/bench_citus_plain.sh [rows of q]
set -uo pipefail
n=${1:-5000}
q() { psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }
q "CREATE EXTENSION IF NOT EXISTS postgis" >/dev/null
q "SET citus.shard_count = 32;
   CREATE TABLE q (id int PRIMARY KEY, g geometry(Point));
   CREATE TABLE pts (id int PRIMARY KEY, g geometry(Point));
   SELECT create_distributed_table('q', 'id');
   SELECT create_distributed_table('pts', 'id');
   SELECT setseed(0.52);
   INSERT INTO q SELECT i, ST_MakePoint(random() * 100, random() * 100) FROM generate_series(1, $n) i;
   INSERT INTO pts SELECT i, ST_MakePoint(random() * 100, random() * 100) FROM generate_series(1, $n * 5 / 2) i;
   CREATE TABLE lq AS SELECT * FROM q;
   CREATE TABLE lpts AS SELECT * FROM pts;
   ANALYZE lq; ANALYZE lpts;" >/dev/null
# $1 session setup, $2 query, $3 runs: "seconds result" of the best run
timed() {
	local args=(-X -q -At -c "$1" -c '\timing on')
	for _ in $(seq "$3"); do args+=(-c "$2"); done
	psql "${args[@]}" 2>&1 | awk '/^Time:/ { t = $2 / 1000; if (best == "" || t < best) best = t }
		/^[0-9]+$/ { r = $1 } /ERROR/ { err = 1 } END { if (err) print "error"; else printf "%.3f %s", best, r }'
}
load="LOAD 'gpujoin'"
plain="SELECT count(*) FROM q JOIN pts ON ST_DWithin(q.g, pts.g, 0.5)"
hand="SELECT count(*) FROM (SELECT * FROM q OFFSET 0) q JOIN (SELECT * FROM pts OFFSET 0) pts ON ST_DWithin(q.g, pts.g, 0.5)"
echo "q: $n rows, pts: $((n * 5 / 2)) rows, distributed in 32 shards over two workers"
printf "%-58s %9s %9s\n" way seconds pairs
printf "%-58s %9s %9s\n" "plain SQL, gpujoin loaded (on the workers)" $(timed "$load" "$plain" 2)
printf "%-58s %9s %9s\n" "plain SQL as a LEFT JOIN, gpujoin loaded (coordinator)" \
	$(timed "$load" "SELECT count(*) FROM q LEFT JOIN pts ON ST_DWithin(q.g, pts.g, 0.5) WHERE pts.id IS NOT NULL" 2)
printf "%-58s %9s %9s\n" "plain SQL, gpujoin not loaded (Citus)" $(timed "SELECT 1" "$plain" 1)
printf "%-58s %9s %9s\n" "subqueries by hand, gpujoin not loaded (nested loop)" $(timed "SELECT 1" "$hand" 1)
printf "%-58s %9s %9s\n" "eps_join on the workers" $(timed "SELECT 1" "SELECT count(*) FROM eps_join('q', 'pts', '{g}', 0.5)" 2)
printf "%-58s %9s %9s\n" "one node's tables, GpuJoin" $(timed "$load" "SELECT count(*) FROM lq JOIN lpts ON ST_DWithin(lq.g, lpts.g, 0.5)" 2)
