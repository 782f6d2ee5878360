#!/usr/bin/env bash
# gpujoin on Citus-distributed tables (issue 45): every function's rows on
# tables distributed over two workers equal its rows on plain copies of
# the same tables (EXCEPT ALL both ways), keyed and _sql forms included;
# and, as measurements for the distributed join to come (not counted), how
# much the coordinator's backend grows for one eps_join (today every row
# travels to it) and whether Citus plans a plain ST_DWithin join of two
# distributed tables.  Run inside regress/citus_cluster.sh.  Ends with
# "citus: N passed, N failed".
set -uo pipefail
passed=0
failed=0
check() {
	if [ "$2" = ok ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL citus: $1 ($2)"
	fi
}
q() { psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }

# gpujoin is installed on every node
for p in $PGPORT $GJ_WORKER_PORTS; do
	v=$(psql -X -q -At -p "$p" -c "SELECT extversion FROM pg_extension WHERE extname = 'gpujoin'")
	[ -n "$v" ] && check "gpujoin on the node of port $p" ok || check "gpujoin on the node of port $p" "not installed"
done

# The same rows twice: distributed (32 shards over the two workers) and
# plain on the coordinator; a lattice with ties for kNN, uuid keys too.
q "SET citus.shard_count = 32;
   CREATE TABLE d_pts (id bigint PRIMARY KEY, k uuid, x float8, y float8);
   CREATE TABLE d_q (id bigint PRIMARY KEY, x float8, y float8);
   SELECT create_distributed_table('d_pts', 'id');
   SELECT create_distributed_table('d_q', 'id');
   INSERT INTO d_pts SELECT i, md5(i::text)::uuid, (i % 60) * 0.5, (i / 60) * 0.5 FROM generate_series(0, 5999) i;
   INSERT INTO d_q SELECT i, (i * 7 % 59) * 0.5 + 0.25, (i * 13 % 97) * 0.5 FROM generate_series(1, 500) i;
   CREATE TABLE l_pts AS SELECT * FROM d_pts;
   CREATE TABLE l_q AS SELECT * FROM d_q;
   ALTER TABLE l_pts ADD PRIMARY KEY (id);
   ALTER TABLE l_q ADD PRIMARY KEY (id);" >/dev/null || { echo "citus: $passed passed, $((failed + 1)) failed"; exit 1; }
shards=$(q "SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'd_pts'::regclass")
[ "$shards" = 2 ] && check "d_pts on two workers" ok || check "d_pts on two workers" "on $shards nodes"

# $2 a query with {P} and {Q} for the tables: on the distributed tables, then the plain ones
same() {
	local name=$1 call=$2 d l out
	d=${call//\{P\}/d_pts}
	d=${d//\{Q\}/d_q}
	l=${call//\{P\}/l_pts}
	l=${l//\{Q\}/l_q}
	out=$(q "SELECT (SELECT count(*) FROM (($d) EXCEPT ALL ($l)) a) || ' ' ||
	                (SELECT count(*) FROM (($l) EXCEPT ALL ($d)) b) || ' ' ||
	                (SELECT count(*) FROM ($l) c)" 2>&1)
	case "$out" in
	"0 0 0") check "$name" "no rows to compare" ;;
	"0 0 "*) check "$name" ok ;;
	*) check "$name" "$out" ;;
	esac
}
same eps_selfjoin "SELECT * FROM eps_selfjoin('{P}', '{x,y}', 0.75)"
same "eps_selfjoin symmetric" "SELECT * FROM eps_selfjoin('{P}', '{x,y}', 0.5, \"symmetric\" => true)"
same eps_join "SELECT * FROM eps_join('{Q}', '{P}', '{x,y}', 0.6)"
same eps_join_counts "SELECT * FROM eps_join_counts('{Q}', '{P}', '{x,y}', 0.6)"
same knn_selfjoin "SELECT * FROM knn_selfjoin('{P}', '{x,y}', 6)"
same knn_join "SELECT * FROM knn_join('{Q}', '{P}', '{x,y}', 5)"
same eps_neighbor_counts "SELECT * FROM eps_neighbor_counts('{P}', '{x,y}', 0.75)"
same eps_neighbors "SELECT * FROM eps_neighbors('{P}', '{x,y}', 0.75)"
same dbscan "SELECT * FROM dbscan('{P}', '{x,y}', 0.5, 5)"
same "eps_selfjoin, uuid keys" "SELECT * FROM eps_selfjoin('{P}', '{x,y}', 0.75, key => NULL::uuid, id_col => 'k')"
same "knn_selfjoin, uuid keys" "SELECT * FROM knn_selfjoin('{P}', '{x,y}', 4, key => NULL::uuid, id_col => 'k')"
same eps_selfjoin_sql "SELECT * FROM eps_selfjoin_sql('SELECT id, x, y FROM {P} WHERE x < 20', 0.75)"
same knn_join_sql "SELECT * FROM knn_join_sql('SELECT id, x, y FROM {Q}', 'SELECT id, x, y FROM {P}', 3)"

# Measurements for the distributed join (issue 45's bar): the coordinator
# backend's peak resident memory (VmHWM) before and after one eps_join of
# two distributed tables, against the size of their coordinates.
q "SET citus.shard_count = 32;
   CREATE TABLE d_big_r (id bigint PRIMARY KEY, x float8, y float8);
   CREATE TABLE d_big_s (id bigint PRIMARY KEY, x float8, y float8);
   SELECT create_distributed_table('d_big_r', 'id');
   SELECT create_distributed_table('d_big_s', 'id');
   INSERT INTO d_big_r SELECT i, random(), random() FROM generate_series(1, 300000) i;
   INSERT INTO d_big_s SELECT i, random(), random() FROM generate_series(1, 300000) i;" >/dev/null
hwm="SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmHWM:\s+(\d+)'))[1]"
mem=$(psql -X -q -At -c "$hwm" -c "SELECT count(*) FROM eps_join('d_big_r', 'd_big_s', '{x,y}', 0.001)" \
	-c "$hwm" 2>&1 | tr '\n' ' ')
read -r hwm0 pairs hwm1 <<<"$mem"
echo "citus: measure: eps_join of two distributed tables of 300,000 rows (9.6 MB of coordinates): $pairs pairs; the coordinator's backend peaked at ${hwm1:-?} kB, ${hwm0:-?} kB before (every row is read there)"
ps=$(psql -X -q -At -c "CREATE EXTENSION IF NOT EXISTS postgis" 2>&1 >/dev/null)
if [ -z "$ps" ]; then
	err=$(psql -X -q -At -c "SET citus.shard_count = 4;
		CREATE TABLE d_g1 (id int PRIMARY KEY, g geometry(Point));
		CREATE TABLE d_g2 (id int PRIMARY KEY, g geometry(Point));
		SELECT create_distributed_table('d_g1', 'id');
		SELECT create_distributed_table('d_g2', 'id');" \
		-c "SELECT count(*) FROM d_g1 a JOIN d_g2 b ON ST_DWithin(a.g, b.g, 0.5)" 2>&1 | grep ERROR | head -1)
	echo "citus: measure: a plain ST_DWithin join of two distributed tables: ${err:-planned}"
else
	echo "citus: measure: PostGIS is not installed on the coordinator: the plain-SQL case did not run"
fi

echo "citus: $passed passed, $failed failed"
