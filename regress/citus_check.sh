#!/usr/bin/env bash
# gpujoin on Citus-distributed tables (issue 45): every function's rows on
# tables distributed over two workers equal its rows on plain copies of
# the same tables (EXCEPT ALL both ways), keyed and _sql forms included.
# The eps and kNN joins, counts, lists and DBSCAN run on the workers (dist/): checked on a
# lattice with pairs exactly eps apart, on skewed rows with a dense clump
# where the strips are cut, duplicates and NULL/NaN/infinite coordinates,
# with few and many strips, tiny and huge eps; EXPLAIN names the nodes;
# the calls the workers cannot answer exactly run here with a NOTICE; the
# intermediate tables are gone after success, a cancel and a worker lost
# mid-join, on every node; the coordinator's backend holds less than the
# input's size.
# Run inside regress/citus_cluster.sh.  Ends with "citus: N passed, N failed".
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

# $1 settings, $2 name, $3 a query with {P} {Q} (d_pts, d_q), {S} {Q2} {K} (d_st, d_q2, d_ku), {G} {G2} (d_gp, d_gq), {T} (d_tx), {R} (d_ref, a reference table),
# {V} {V2} {H} (d_v1, d_v2: vector(3); d_h: halfvec(64)), {A} {A2} {A20} (d_a: float8[2], d_a2: float4[2], d_a20: float8[20]),
# {E} {E2} (d_geo, d_geq: geography), {VB} (d_vb: a bare vector), {B} (d_bd: dbscan's border rows),
# {CV} {CQ} (d_cv: vector(8), d_cq: halfvec(8), for the cosine metric), {GZ} (d_gz: PointZ), {D} (d_gd: declared points)
# for the distributed tables, then their plain copies
same_st() {
	local set=$1 name=$2 call=$3 d l out
	d=${call//\{P\}/d_pts}
	d=${d//\{Q\}/d_q}
	d=${d//\{S\}/d_st}
	d=${d//\{Q2\}/d_q2}
	d=${d//\{K\}/d_ku}
	d=${d//\{G\}/d_gp}
	d=${d//\{G2\}/d_gq}
	d=${d//\{T\}/d_tx}
	d=${d//\{R\}/d_ref}
	d=${d//\{V\}/d_v1}
	d=${d//\{V2\}/d_v2}
	d=${d//\{H\}/d_h}
	d=${d//\{A\}/d_a}
	d=${d//\{A2\}/d_a2}
	d=${d//\{A20\}/d_a20}
	d=${d//\{E\}/d_geo}
	d=${d//\{E2\}/d_geq}
	d=${d//\{VB\}/d_vb}
	d=${d//\{B\}/d_bd}
	d=${d//\{CV\}/d_cv}
	d=${d//\{CQ\}/d_cq}
	d=${d//\{GZ\}/d_gz}
	d=${d//\{D\}/d_gd}
	l=${call//\{P\}/l_pts}
	l=${l//\{Q\}/l_q}
	l=${l//\{S\}/l_st}
	l=${l//\{Q2\}/l_q2}
	l=${l//\{K\}/l_ku}
	l=${l//\{G\}/l_gp}
	l=${l//\{G2\}/l_gq}
	l=${l//\{T\}/l_tx}
	l=${l//\{R\}/l_ref}
	l=${l//\{V\}/l_v1}
	l=${l//\{V2\}/l_v2}
	l=${l//\{H\}/l_h}
	l=${l//\{A\}/l_a}
	l=${l//\{A2\}/l_a2}
	l=${l//\{A20\}/l_a20}
	l=${l//\{E\}/l_geo}
	l=${l//\{E2\}/l_geq}
	l=${l//\{VB\}/l_vb}
	l=${l//\{B\}/l_bd}
	l=${l//\{CV\}/l_cv}
	l=${l//\{CQ\}/l_cq}
	l=${l//\{GZ\}/l_gz}
	l=${l//\{D\}/l_gd}
	out=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "$set" -c "SELECT (SELECT count(*) FROM (($d) EXCEPT ALL ($l)) a) || ' ' ||
	                (SELECT count(*) FROM (($l) EXCEPT ALL ($d)) b) || ' ' ||
	                (SELECT count(*) FROM ($l) c)" 2>&1 | grep -Ev '^(NOTICE|DETAIL|HINT):' | tail -1)
	case "$out" in
	"0 0 0") check "$name" "no rows to compare" ;;
	"0 0 "*) check "$name" ok ;;
	*) check "$name" "$out" ;;
	esac
}
same() { same_st "SELECT 1" "$@"; }

# $1 name, $2 a call on distributed tables, $3 the same on their plain
# copies: the same NOTICE and DETAIL of the rows skipped (non-empty)
same_notice() {
	local nd nl
	nd=$(psql -X -q -At -c "$2" 2>&1 | grep -E '^(NOTICE|DETAIL):')
	nl=$(psql -X -q -At -c "$3" 2>&1 | grep -E '^(NOTICE|DETAIL):')
	[ -n "$nl" ] && [ "$nd" = "$nl" ] && check "$1" ok || check "$1" "$(tr '\n' ' ' <<<"$nd") / $(tr '\n' ' ' <<<"$nl")"
}

# $1 name, $2 a call of distributed tables: it runs on the workers, in more
# than one strip (16 asked for)
call_in_strips() {
	local plan
	plan=$(q "SET gpujoin.distributed_strips = 16; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $2" 2>&1)
	grep -q "Engine: citus workers" <<<"$plan" && grep -Eq "Distributed: [0-9]+ strips" <<<"$plan" &&
		! grep -q "Distributed: 1 strips" <<<"$plan" && check "$1: on the workers, in strips" ok ||
		check "$1: on the workers, in strips" "$(tr '\n' ' ' <<<"$plan" | cut -c1-300)"
}
# $1 a distributed table, $2 its coordinate column: its eps_selfjoin, so
in_strips() { call_in_strips "$1" "SELECT * FROM eps_selfjoin('$1', '{$2}', 0.4)"; }

# $1 name, $2 a plain-SQL join of distributed tables (run with gpujoin
# loaded), $3 the same of their plain copies in a session where gpujoin is
# not loaded (the extensions' own operators): equal as multisets, non-empty
same_as_own() {
	local out
	psql -X -q -At -c "LOAD 'gpujoin'" -c "CREATE TABLE own_gpu AS $2" >/dev/null 2>&1
	out=$(psql -X -q -At -c "CREATE TABLE own_pg AS $3" \
		-c "SELECT (SELECT count(*) FROM (TABLE own_gpu EXCEPT ALL TABLE own_pg) x) || ' ' || (SELECT count(*) FROM (TABLE own_pg EXCEPT ALL TABLE own_gpu) y) || ' ' || (SELECT count(*) FROM own_pg)" \
		-c "SELECT count(*) FROM pg_settings WHERE name = 'gpujoin.enable_join'" 2>&1 | tail -2 | tr '\n' ' ')
	case "$out" in
	"0 0 0 "*) check "$1" "no rows: $out" ;;
	"0 0 "*" 0 ") check "$1" ok ;;
	*) check "$1" "$out" ;;
	esac
	q "DROP TABLE IF EXISTS own_gpu, own_pg" >/dev/null 2>&1
}
# $1 name, $2 whose rows, $3 a LATERAL kNN of distributed tables, $4 the same of
# their plain copies: the rows (same_as_own), and EXPLAIN: the call on the
# workers.  Both ways: the query rows sent to every shard of the references
# (gpujoin.distributed_broadcast_rows above any table here), and both tables
# repartitioned into strips (0)
lateral_on_workers() {
	local plan b way want opts=${PGOPTIONS:-}
	for b in 1000000 0; do
		[ "$b" = 0 ] && way=", in strips" want="Distributed: [0-9]+ strips of" ||
			way=", by shard" want="Distributed: [0-9]+ query rows to every worker, answered by the [0-9]+ shards"
		PGOPTIONS="$opts -c gpujoin.distributed_broadcast_rows=$b" same_as_own "$1$way, $2 rows" "$3" "$4"
		plan=$(PGOPTIONS="$opts -c gpujoin.distributed_broadcast_rows=$b" psql -X -q -At -c "LOAD 'gpujoin'" \
			-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $3" 2>&1)
		grep -Eq "Function Call: knn_lateral_(self)?join" <<<"$plan" && grep -q "Engine: citus workers" <<<"$plan" &&
			grep -Eq "$want" <<<"$plan" && ! grep -q "Distributed Subplan" <<<"$plan" && check "$1$way: EXPLAIN" ok ||
			check "$1$way: EXPLAIN" "$(tr '\n' ' ' <<<"$plan" | cut -c1-300)"
	done
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

# The eps functions ran on the workers, in tasks on both
plan=$(q "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT * FROM eps_join('d_q', 'd_pts', '{x,y}', 0.6)" 2>&1)
if grep -q "Engine: citus workers" <<<"$plan" && grep -q "tasks on 2 nodes" <<<"$plan"; then
	check "EXPLAIN: eps_join ran on both workers" ok
else
	check "EXPLAIN: eps_join ran on both workers" "$(tr '\n' ' ' <<<"$plan" | cut -c1-300)"
fi

# Rows made to break the strips: uniform rows, a dense clump (the
# histogram cuts through it), a row of points exactly eps = 0.4 apart
# across the space, duplicated rows, and NULL, NaN and infinite coordinates.
q "SET citus.shard_count = 8;
   CREATE TABLE d_st (id bigint PRIMARY KEY, id2 bigint, k uuid, x float8, y float8);
   CREATE TABLE d_q2 (id bigint PRIMARY KEY, x float8, y float8);
   SELECT create_distributed_table('d_st', 'id');
   SELECT create_distributed_table('d_q2', 'id');
   INSERT INTO d_st (id, x, y) SELECT i, (i * 7919 % 5000) * 0.01, (i * 104729 % 5000) * 0.01 FROM generate_series(1, 3000) i;
   INSERT INTO d_st (id, x, y) SELECT i, 25 + (i * 31 % 300) * 0.01, 20 + (i * 17 % 293) * 0.01 FROM generate_series(3001, 4500) i;
   INSERT INTO d_st (id, x, y) SELECT i, (i - 6001) * 0.4, 40 FROM generate_series(4501, 4625) i;
   INSERT INTO d_st (id, x, y) SELECT id + 10000, x, y FROM d_st WHERE id % 20 = 0;
   INSERT INTO d_st (id, x, y) VALUES (20001, NULL, 1), (20002, 'NaN', 2), (20003, 'Infinity', 3), (20004, 1, '-Infinity');
   UPDATE d_st SET id2 = id % 100, k = md5(id::text)::uuid;
   INSERT INTO d_q2 SELECT i, (i * 13 % 1000) * 0.05, (i * 7 % 1000) * 0.05 FROM generate_series(1, 800) i;
   CREATE TABLE d_ku (k uuid PRIMARY KEY, x float8, y float8);
   SELECT create_distributed_table('d_ku', 'k');
   INSERT INTO d_ku SELECT k, x, y FROM d_st;
   CREATE TABLE l_ku AS SELECT * FROM d_ku;
   ALTER TABLE l_ku ADD PRIMARY KEY (k);
   CREATE TABLE l_st AS SELECT * FROM d_st;
   CREATE TABLE l_q2 AS SELECT * FROM d_q2;
   ALTER TABLE l_st ADD PRIMARY KEY (id);
   ALTER TABLE l_q2 ADD PRIMARY KEY (id);" >/dev/null || check "the strips' rows" "not made"
for strips in 0 3 16 64; do
	set="SET gpujoin.distributed_strips = $strips"
	same_st "$set" "strips $strips: eps_selfjoin" "SELECT * FROM eps_selfjoin('{S}', '{x,y}', 0.4)"
	same_st "$set" "strips $strips: eps_selfjoin symmetric" "SELECT * FROM eps_selfjoin('{S}', '{x,y}', 0.4, \"symmetric\" => true)"
	same_st "$set" "strips $strips: eps_join" "SELECT * FROM eps_join('{Q2}', '{S}', '{x,y}', 0.4)"
	same_st "$set" "strips $strips: eps_join of a table with itself" "SELECT * FROM eps_join('{S}', '{S}', '{x,y}', 0.4)"
	same_st "$set" "strips $strips: eps_join_counts" "SELECT * FROM eps_join_counts('{S}', '{Q2}', '{x,y}', 0.4)"
	same_st "$set" "strips $strips: eps_neighbor_counts" "SELECT * FROM eps_neighbor_counts('{S}', '{x,y}', 0.4)"
	same_st "$set" "strips $strips: eps_neighbors" "SELECT id, neighbors::text, dists::text FROM eps_neighbors('{S}', '{x,y}', 0.4)"
	same_st "$set" "strips $strips: knn_join" "SELECT * FROM knn_join('{Q2}', '{S}', '{x,y}', 5)"
	same_st "$set" "strips $strips: knn_selfjoin" "SELECT * FROM knn_selfjoin('{S}', '{x,y}', 4)"
	same_st "$set" "strips $strips: dbscan" "SELECT * FROM dbscan('{S}', '{x,y}', 0.4, 4)"
	same_st "$set" "strips $strips: dbscan, minpts 1" "SELECT * FROM dbscan('{S}', '{x,y}', 0.3, 1)"
done
# 30 rows at one point (more duplicates with smaller ids than k) among spread ones
q "CREATE TABLE d_dup (id bigint PRIMARY KEY, x float8, y float8);
   SELECT create_distributed_table('d_dup', 'id', shard_count => 4);
   INSERT INTO d_dup SELECT i, CASE WHEN i <= 30 THEN 5 ELSE (i * 37 % 101) * 0.1 END,
                               CASE WHEN i <= 30 THEN 5 ELSE (i * 53 % 97) * 0.1 END FROM generate_series(1, 400) i;
   CREATE TABLE l_dup AS SELECT * FROM d_dup;" >/dev/null
dup=$(q "SET gpujoin.distributed_strips = 8;
   SELECT (SELECT count(*) FROM (SELECT * FROM knn_selfjoin('d_dup', '{x,y}', 3) EXCEPT ALL SELECT * FROM knn_selfjoin('l_dup', '{x,y}', 3, id_col => 'id')) a) || ' ' ||
          (SELECT count(*) FROM (SELECT * FROM knn_selfjoin('l_dup', '{x,y}', 3, id_col => 'id') EXCEPT ALL SELECT * FROM knn_selfjoin('d_dup', '{x,y}', 3)) b)" 2>&1 | tail -1)
[ "$dup" = "0 0" ] && check "knn_selfjoin, more duplicates than k" ok || check "knn_selfjoin, more duplicates than k" "$dup"
same_st "SET gpujoin.distributed_strips = 64" "knn_selfjoin, k above a strip's rows" "SELECT * FROM knn_selfjoin('{S}', '{x,y}', 100)"
same_st "SET gpujoin.distributed_strips = 16" "knn_join, k = 1" "SELECT * FROM knn_join('{S}', '{Q2}', '{x,y}', 1)"
set="SET gpujoin.distributed_strips = 16"
same_st "$set" "eps_selfjoin, uuid keys (the distribution column)" "SELECT * FROM eps_selfjoin('{K}', '{x,y}', 0.4, key => NULL::uuid)"
same_st "$set" "eps_selfjoin symmetric, uuid keys" "SELECT * FROM eps_selfjoin('{K}', '{x,y}', 0.4, key => NULL::uuid, \"symmetric\" => true)"
same_st "$set" "eps_neighbor_counts, uuid keys" "SELECT * FROM eps_neighbor_counts('{K}', '{x,y}', 0.4, key => NULL::uuid)"
same_st "$set" "knn_selfjoin, uuid keys" "SELECT * FROM knn_selfjoin('{K}', '{x,y}', 3, key => NULL::uuid)"
same_st "$set" "knn_join, uuid and bigint keys" "SELECT * FROM knn_join('{K}', '{Q2}', '{x,y}', 3, query_key => NULL::uuid, ref_key => NULL::bigint)"
same_st "$set" "eps_neighbors, uuid keys" "SELECT id, neighbors::text, dists::text FROM eps_neighbors('{K}', '{x,y}', 0.4, key => NULL::uuid)"
same_st "$set" "dbscan, uuid keys" "SELECT * FROM dbscan('{K}', '{x,y}', 0.4, 4, key => NULL::uuid)"
same_st "$set" "dbscan, non-unique id column (on the coordinator)" "SELECT * FROM dbscan('{S}', '{x,y}', 0.4, 4, id_col => 'id2')"
same_st "$set" "dbscan, huge eps (one cluster)" "SELECT * FROM dbscan('{S}', '{x,y}', 1e6, 10)"
same_st "$set" "dbscan, tiny eps (duplicates only)" "SELECT * FROM dbscan('{S}', '{x,y}', 1e-12, 2)"
same_st "$set" "eps_neighbor_counts, non-unique id column" "SELECT * FROM eps_neighbor_counts('{S}', '{x,y}', 0.4, id_col => 'id2')"
same_st "$set" "eps_selfjoin, uuid keys of a non-unique column (on the coordinator)" "SELECT * FROM eps_selfjoin('{S}', '{x,y}', 0.4, key => NULL::uuid, id_col => 'k')"
same_st "$set" "eps_join, uuid and bigint keys" "SELECT * FROM eps_join('{S}', '{Q2}', '{x,y}', 0.4, r_key => NULL::uuid, s_key => NULL::bigint, r_id_col => 'k')"
same_st "$set" "eps_join_counts, uuid keys" "SELECT * FROM eps_join_counts('{S}', '{Q2}', '{x,y}', 0.4, r_key => NULL::uuid, r_id_col => 'k')"
same_st "$set" "eps_selfjoin, tiny eps (duplicates only)" "SELECT * FROM eps_selfjoin('{S}', '{x,y}', 1e-12)"
same_st "$set" "eps_join, huge eps (every pair)" "SELECT * FROM eps_join('{Q2}', '{Q2}', '{x,y}', 1e6)"
same_st "$set" "eps_neighbor_counts, 1-D" "SELECT * FROM eps_neighbor_counts('{S}', '{x}', 0.05)"
# the rows skipped for a NULL, NaN or infinite coordinate: the single node's NOTICEs, not one a strip
same_notice "skipped rows: the single node's NOTICE" \
	"SELECT count(*) FROM eps_join('d_q2', 'd_st', '{x,y}', 0.4)" "SELECT count(*) FROM eps_join('l_q2', 'l_st', '{x,y}', 0.4)"
same_notice "dbscan: the single node's skipped-rows NOTICE" \
	"SELECT count(*) FROM dbscan('d_st', '{x,y}', 0.4, 4)" "SELECT count(*) FROM dbscan('l_st', '{x,y}', 0.4, 4)"
call_in_strips dbscan "SELECT * FROM dbscan('d_st', '{x,y}', 0.4, 4)"

# dbscan's clusters cross the strips, and a border row takes the lowest
# cluster of the whole table, not of its strip: two chains of core rows
# 0.7 apart (eps 0.4, minpts 20), each one cluster from end to end, and
# rows halfway between them, within eps of both and no core row.  Chain A
# has the smallest id of all at its right end and large ids at its left,
# chain B small ids at its left: in a strip at the left, B's piece has the
# smaller id, but A is cluster 0, and every border row joins A.
q "CREATE TABLE d_bd (id bigint PRIMARY KEY, x float8, y float8);
   SELECT create_distributed_table('d_bd', 'id', shard_count => 4);
   INSERT INTO d_bd SELECT 2 * (1000 - i), i * 0.04, 0 FROM generate_series(0, 999) i;
   INSERT INTO d_bd SELECT 2 * i + 101, i * 0.04, 0.7 FROM generate_series(0, 999) i;
   INSERT INTO d_bd SELECT 5000 + i, i * 1.0, 0.35 FROM generate_series(0, 39) i;
   CREATE TABLE l_bd AS SELECT * FROM d_bd;
   ALTER TABLE l_bd ADD PRIMARY KEY (id);" >/dev/null || check "the border rows' chains" "not made"
# the single node: two clusters, and border rows within eps of core rows of both (else the case is not made)
both=$(q "CREATE TEMP TABLE c AS SELECT * FROM dbscan('l_bd', '{x,y}', 0.4, 20);
	SELECT (SELECT count(DISTINCT cluster) FROM c) || ' ' || count(*) FROM c b WHERE b.id >= 5000 AND NOT b.is_core AND b.cluster = 0 AND
	(SELECT count(DISTINCT k.cluster) FROM c k JOIN l_bd p ON p.id = k.id JOIN l_bd bp ON bp.id = b.id
	 WHERE k.is_core AND (p.x - bp.x) ^ 2 + (p.y - bp.y) ^ 2 <= 0.16) = 2" 2>&1 | tail -1)
case "$both" in
"2 "[1-9]*) check "dbscan: border rows within reach of two clusters (the case is made)" ok ;;
*) check "dbscan: border rows within reach of two clusters (the case is made)" "$both" ;;
esac
for strips in 0 16 64; do
	same_st "SET gpujoin.distributed_strips = $strips" "strips $strips: dbscan, border rows of two clusters" "SELECT * FROM dbscan('{B}', '{x,y}', 0.4, 20)"
done

# A reference table beside a distributed one stays where it is: each strip
# reads its rows from its node's copy (only the distributed rows move)
q "CREATE TABLE d_ref (id bigint PRIMARY KEY, x float8, y float8);
   SELECT create_reference_table('d_ref');
   INSERT INTO d_ref SELECT * FROM d_q2;
   INSERT INTO d_ref VALUES (99001, NULL, 1), (99002, 'NaN', 2);
   CREATE TABLE l_ref AS SELECT * FROM d_ref;
   ALTER TABLE l_ref ADD PRIMARY KEY (id);" >/dev/null || check "the reference table" "not made"
for strips in 0 16; do
	set="SET gpujoin.distributed_strips = $strips"
	same_st "$set" "strips $strips: eps_join with a reference table" "SELECT * FROM eps_join('{S}', '{R}', '{x,y}', 0.4)"
	same_st "$set" "strips $strips: eps_join_counts with a reference table" "SELECT * FROM eps_join_counts('{S}', '{R}', '{x,y}', 0.4)"
	same_st "$set" "strips $strips: knn_join with a reference table" "SELECT * FROM knn_join('{S}', '{R}', '{x,y}', 4)"
done
moved=$(q "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT * FROM knn_join('d_st', 'd_ref', '{x,y}', 4)" 2>/dev/null |
	sed -n 's/.*Rows Moved: //p')
kept=$(q "SELECT count(*) FROM d_st WHERE x > '-Infinity' AND x < 'Infinity' AND y > '-Infinity' AND y < 'Infinity'")
[ -n "$moved" ] && [ "$moved" = "$kept" ] && check "a reference table is not moved" ok ||
	check "a reference table is not moved" "moved ${moved:-?}, the distributed side has $kept"

# text keys in a collation whose order is not bytewise: pairs, lists and
# ranks in the single node's order of keys (bytewise, as keys rank)
if q "CREATE TABLE d_tx (k text COLLATE \"en-US-x-icu\" PRIMARY KEY, x float8, y float8);
	SELECT create_distributed_table('d_tx', 'k', shard_count => 8);
	INSERT INTO d_tx SELECT CASE WHEN i % 2 = 0 THEN 'a' ELSE 'B' END || md5(i::text), (i % 40) * 0.5, (i / 40) * 0.5
	FROM generate_series(1, 1600) i;
	CREATE TABLE l_tx AS SELECT * FROM d_tx;
	ALTER TABLE l_tx ADD PRIMARY KEY (k);" >/dev/null 2>&1; then
	set="SET gpujoin.distributed_strips = 8"
	same_st "$set" "text keys (ICU collation): eps_selfjoin" "SELECT * FROM eps_selfjoin('{T}', '{x,y}', 0.5, key => NULL::text)"
	same_st "$set" "text keys (ICU collation): knn_selfjoin" "SELECT * FROM knn_selfjoin('{T}', '{x,y}', 3, key => NULL::text)"
	same_st "$set" "text keys (ICU collation): eps_neighbors" "SELECT id, neighbors::text, dists::text FROM eps_neighbors('{T}', '{x,y}', 0.5, key => NULL::text)"
else
	echo "citus: measure: no ICU collation en-US-x-icu: the text-key checks did not run"
fi

# PostGIS geometry points: the same rows on the workers (the strips cut x or y)
if psql -X -q -At -c "CREATE EXTENSION IF NOT EXISTS postgis" >/dev/null 2>&1; then
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_gp (id bigint PRIMARY KEY, g geometry(Point, 4326));
	   CREATE TABLE d_gq (id bigint PRIMARY KEY, g geometry);
	   SELECT create_distributed_table('d_gp', 'id');
	   SELECT create_distributed_table('d_gq', 'id');
	   INSERT INTO d_gp SELECT id, ST_SetSRID(ST_MakePoint(x, y), 4326) FROM d_st WHERE x IS NOT NULL AND x < 'Infinity' AND y > '-Infinity';
	   INSERT INTO d_gp VALUES (30001, NULL), (30002, 'SRID=4326;POINT EMPTY');
	   INSERT INTO d_gq SELECT id, ST_SetSRID(ST_MakePoint(x, y), 4326) FROM d_q2;
	   CREATE TABLE l_gp AS SELECT * FROM d_gp;
	   CREATE TABLE l_gq AS SELECT * FROM d_gq;
	   ALTER TABLE l_gp ADD PRIMARY KEY (id);
	   ALTER TABLE l_gq ADD PRIMARY KEY (id);" >/dev/null || check "geometry rows" "not made"
	set="SET gpujoin.distributed_strips = 16"
	same_st "$set" "geometry: eps_selfjoin" "SELECT * FROM eps_selfjoin('{G}', '{g}', 0.4)"
	same_st "$set" "geometry: eps_join" "SELECT * FROM eps_join('{G2}', '{G}', '{g}', 0.4)"
	same_st "$set" "geometry: eps_neighbor_counts" "SELECT * FROM eps_neighbor_counts('{G}', '{g}', 0.4)"
	same_st "$set" "geometry: knn_join" "SELECT * FROM knn_join('{G2}', '{G}', '{g}', 4)"
	same_st "$set" "geometry: knn_selfjoin" "SELECT * FROM knn_selfjoin('{G}', '{g}', 4)"
	same_st "$set" "geometry: dbscan" "SELECT * FROM dbscan('{G}', '{g}', 0.4, 4)"
	plan=$(q "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT * FROM eps_selfjoin('d_gp', '{g}', 0.4)" 2>&1)
	grep -q "Engine: citus workers" <<<"$plan" && check "geometry: on the workers" ok ||
		check "geometry: on the workers" "$(tr '\n' ' ' <<<"$plan" | cut -c1-200)"
	# PointZ: x, y and z, as one node reads a type that declares a Z; the
	# strips cut whichever spreads widest (z, of these rows); a NULL and an empty point
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_gz (id bigint PRIMARY KEY, g geometry(PointZ));
	   SELECT create_distributed_table('d_gz', 'id');
	   INSERT INTO d_gz SELECT id, ST_MakePoint(x / 100, y / 100, (id % 97) * 0.5) FROM d_st WHERE x IS NOT NULL AND x < 'Infinity' AND y > '-Infinity';
	   INSERT INTO d_gz VALUES (30001, NULL), (30002, 'POINT Z EMPTY');
	   CREATE TABLE l_gz AS SELECT * FROM d_gz;
	   ALTER TABLE l_gz ADD PRIMARY KEY (id);" >/dev/null || check "PointZ rows" "not made"
	same_st "$set" "PointZ: eps_selfjoin" "SELECT * FROM eps_selfjoin('{GZ}', '{g}', 0.6)"
	same_st "$set" "PointZ: knn_selfjoin" "SELECT * FROM knn_selfjoin('{GZ}', '{g}', 4)"
	same_st "$set" "PointZ: dbscan" "SELECT * FROM dbscan('{GZ}', '{g}', 0.6, 3)"
	plan=$(q "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT * FROM eps_selfjoin('d_gz', '{g}', 0.6)" 2>&1)
	grep -q "Engine: citus workers" <<<"$plan" && grep -q "strips of dimension 3" <<<"$plan" &&
		check "PointZ: on the workers, z cut" ok ||
		check "PointZ: on the workers, z cut" "$(tr '\n' ' ' <<<"$plan" | cut -c1-200)"

	# geography on the workers: strips of latitude, halos of eps metres in
	# degrees (at most eps / (b^2 / a) radians), the workers' engines and
	# PostGIS for the band; points over the whole globe, a cluster at the
	# antimeridian near the pole, duplicates, a NULL and an empty point
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_geo (id bigint PRIMARY KEY, g geography(Point, 4326));
	   CREATE TABLE d_geq (id bigint PRIMARY KEY, g geography);
	   SELECT create_distributed_table('d_geo', 'id');
	   SELECT create_distributed_table('d_geq', 'id');
	   INSERT INTO d_geo SELECT i, ST_SetSRID(ST_MakePoint((hashint4(i) % 18000) / 100.0, (hashint4(i * 7) % 9000) / 100.0), 4326)::geography
	          FROM generate_series(1, 6000) i;
	   INSERT INTO d_geo SELECT 10000 + i, ST_SetSRID(ST_MakePoint(179.999 - (i % 3) * 0.0005 - (i % 2) * 359.998, 89.99 - i * 0.0001), 4326)::geography
	          FROM generate_series(1, 50) i;
	   INSERT INTO d_geo SELECT 20000 + id, g FROM d_geo WHERE id % 50 = 0;
	   INSERT INTO d_geo VALUES (30001, NULL), (30002, 'SRID=4326;POINT EMPTY');
	   INSERT INTO d_geq SELECT id, g FROM d_geo WHERE id % 7 = 0 AND g IS NOT NULL;
	   CREATE TABLE l_geo AS SELECT * FROM d_geo;
	   CREATE TABLE l_geq AS SELECT * FROM d_geq;
	   ALTER TABLE l_geo ADD PRIMARY KEY (id);
	   ALTER TABLE l_geq ADD PRIMARY KEY (id);" >/dev/null || check "geography rows" "not made"
	same_st "$set" "geography: eps_selfjoin (spheroid)" "SELECT * FROM eps_selfjoin('{E}', '{g}', 100000)"
	same_st "$set" "geography: eps_join (sphere)" "SELECT * FROM eps_join('{E2}', '{E}', '{g}', 200000, use_spheroid => false)"
	same_st "$set" "geography: eps_join_counts" "SELECT * FROM eps_join_counts('{E2}', '{E}', '{g}', 150000)"
	same_st "$set" "geography: eps_neighbors" "SELECT id, neighbors::text, dists::text FROM eps_neighbors('{E}', '{g}', 100000)"
	same_st "$set" "geography: knn_join" "SELECT * FROM knn_join('{E2}', '{E}', '{g}', 4)"
	same_st "$set" "geography: knn_selfjoin" "SELECT * FROM knn_selfjoin('{E}', '{g}', 3)"
	same_st "$set" "geography: dbscan (spheroid)" "SELECT * FROM dbscan('{E}', '{g}', 150000, 3)"
	same_notice "geography: the single node's skipped-rows NOTICE" \
		"SELECT count(*) FROM eps_selfjoin('d_geo', '{g}', 100000)" "SELECT count(*) FROM eps_selfjoin('l_geo', '{g}', 100000)"
	in_strips d_geo g
	plan=$(q "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT * FROM eps_selfjoin('d_geo', '{g}', 100000)" 2>&1)
	grep -Eq "Distributed: [0-9]+ strips of latitude" <<<"$plan" && check "geography: EXPLAIN says the strips cut latitude" ok ||
		check "geography: EXPLAIN says the strips cut latitude" "$(tr '\n' ' ' <<<"$plan" | cut -c1-300)"

	# plain SQL distance joins of two distributed tables, which Citus refuses
	# alone ("complex joins"): gpujoin loaded after citus reads each table as a
	# subquery, and the GpuJoin joins them (PostGIS's rows; NULL and empty
	# points included; ties of the kNN broken by id on both sides)
	load="LOAD 'gpujoin'"
	same_st "$load" "plain SQL: ST_DWithin join" "SELECT a.id, b.id FROM {G2} a JOIN {G} b ON ST_DWithin(a.g, b.g, 0.4)"
	same_st "$load" "plain SQL: ST_DWithin self join" "SELECT a.id, b.id FROM {G} a JOIN {G} b ON a.id < b.id AND ST_DWithin(a.g, b.g, 0.4)"
	same_st "$load" "plain SQL: <-> <= d, other quals, a column" "SELECT a.id, b.id, b.g FROM {G2} a JOIN {G} b ON a.g <-> b.g <= 0.4 AND b.id % 3 <> 0"
	same_st "$load" "plain SQL: LEFT JOIN ST_DWithin" "SELECT a.id, b.id FROM {G2} a LEFT JOIN {G} b ON ST_DWithin(a.g, b.g, 0.2)"
	# ... and where the columns declare 2-D points of one SRID, the inner
	# joins go to the workers: entry a becomes eps_join's pairs, its rows
	# whole (a key of the table's row type), b the pair's other row; the
	# query's quals decide.  d_gd: d_gq's points declared, a dropped column
	# before and a text column after the point, so columns go by number
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_gd (id bigint PRIMARY KEY, gone int, g geometry(Point, 4326), tag text);
	   ALTER TABLE d_gd DROP COLUMN gone;
	   SELECT create_distributed_table('d_gd', 'id');
	   INSERT INTO d_gd SELECT id, g, 't' || id FROM d_gq;
	   INSERT INTO d_gd VALUES (50001, NULL, 'null'), (50002, 'SRID=4326;POINT EMPTY', 'empty'),
	          (50003, ST_SetSRID(ST_MakePoint('NaN', 1), 4326), 'nan');
	   CREATE TABLE l_gd AS SELECT * FROM d_gd;" >/dev/null || check "declared point rows" "not made"
	for j in "SELECT a.id AS a, b.id AS b FROM {D} a JOIN {P} b ON ST_DWithin(a.g, b.g, 0.4)" \
		"SELECT a.tag, b.id, b.g FROM {D} a, {P} b WHERE a.g <-> b.g <= 0.4 AND b.id % 3 <> 0" \
		"SELECT b.id AS b, a.* FROM {P} b JOIN {D} a ON ST_Distance(b.g, a.g) < 0.3" \
		"SELECT a.id AS a, b.id AS b FROM {P} a JOIN {P} b ON a.id < b.id AND ST_DWithin(a.g, b.g, 0.4)" \
		"SELECT a.id, count(*) FROM {P} a JOIN {P} b ON ST_DWithin(a.g, b.g, 1e-12) GROUP BY a.id" \
		"WITH n AS (SELECT a.tag, b.id FROM {D} a JOIN {P} b ON 0.25 >= a.g <-> b.g) SELECT * FROM n WHERE id % 2 = 0" \
		"SELECT count(*), sum(a.id - b.id) FROM {D} a JOIN {D} b ON ST_DWithin(a.g, b.g, 1e6)"; do
		d=${j//\{D\}/d_gd}
		d=${d//\{P\}/d_gp}
		l=${j//\{D\}/l_gd}
		l=${l//\{P\}/l_gp}
		same_as_own "plain SQL on the workers: ${j:0:70}, PostGIS's rows" "$d" "$l"
		plan=$(psql -X -q -At -c "$load" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $d" 2>&1)
		grep -q "Function Call: eps_join" <<<"$plan" && grep -q "Engine: citus workers" <<<"$plan" &&
			! grep -q "Distributed Subplan" <<<"$plan" && check "plain SQL on the workers: ${j:0:70}: EXPLAIN" ok ||
			check "plain SQL on the workers: ${j:0:70}: EXPLAIN" "$(tr '\n' ' ' <<<"$plan" | cut -c1-300)"
	done
	# geometry(Point), its SRID left open: the workers too; a second SRID
	# among the rows is an error, as PostGIS's own join gives one
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_g0 (id bigint PRIMARY KEY, g geometry(Point));
	   SELECT create_distributed_table('d_g0', 'id');
	   INSERT INTO d_g0 SELECT id, ST_SetSRID(g, 0) FROM d_gp;
	   CREATE TABLE l_g0 AS SELECT * FROM d_g0;" >/dev/null || check "SRID-open point rows" "not made"
	same_as_own "plain SQL on the workers: geometry(Point) with no SRID, PostGIS's rows" \
		"SELECT a.id AS a, b.id AS b FROM d_g0 a JOIN d_g0 b ON ST_DWithin(a.g, b.g, 0.3)" \
		"SELECT a.id AS a, b.id AS b FROM l_g0 a JOIN l_g0 b ON ST_DWithin(a.g, b.g, 0.3)"
	q "INSERT INTO d_g0 VALUES (90001, 'SRID=4326;POINT(1 1)'); INSERT INTO l_g0 VALUES (90001, 'SRID=4326;POINT(1 1)')" >/dev/null
	ed=$(psql -X -q -At -c "$load" -c "SELECT count(*) FROM d_g0 a JOIN d_g0 b ON ST_DWithin(a.g, b.g, 0.3)" 2>&1 | grep -c ERROR)
	el=$(psql -X -q -At -c "SELECT count(*) FROM l_g0 a JOIN l_g0 b ON ST_DWithin(a.g, b.g, 0.3)" 2>&1 | grep -c ERROR)
	[ "$ed" = 1 ] && [ "$el" = 1 ] && check "plain SQL on the workers: two SRIDs, an error as PostGIS's" ok ||
		check "plain SQL on the workers: two SRIDs, an error as PostGIS's" "errors: workers $ed, PostGIS $el"
	# ... not where the rows would not be the query's: read here as before
	for j in "SELECT a.id, b.id FROM d_gd a LEFT JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.2)" \
		"SELECT a.id, b.id FROM d_gd a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.2) OR a.id = b.id" \
		"SELECT a.id, b.id FROM d_gq a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.2)" \
		"SELECT a.id, b.id FROM d_gd a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0)" \
		"SELECT a.id, b.id FROM d_gd a JOIN d_gp b ON ST_DWithin(a.g, b.g, 'Infinity')"; do
		plan=$(psql -X -q -At -c "$load" -c "EXPLAIN (COSTS OFF) $j" 2>&1)
		grep -q "Distributed Subplan" <<<"$plan" && ! grep -q "Function Call" <<<"$plan" &&
			check "plain SQL read here: ${j:0:80}" ok || check "plain SQL read here: ${j:0:80}" "$(tr '\n' ' ' <<<"$plan" | cut -c1-300)"
	done
	# gpujoin.distributed = off: every table read here, the rows the same
	plan=$(psql -X -q -At -c "$load" -c "SET gpujoin.distributed = off" -c "EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM d_gd a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.4)" 2>&1)
	grep -q "Distributed Subplan" <<<"$plan" && ! grep -q "Function Call" <<<"$plan" &&
		check "plain SQL, gpujoin.distributed = off: read here" ok || check "plain SQL, gpujoin.distributed = off: read here" "$(tr '\n' ' ' <<<"$plan" | cut -c1-300)"
	same_st "$load; SET gpujoin.distributed = off" "plain SQL, gpujoin.distributed = off: the same rows" \
		"SELECT a.id AS a, b.id AS b FROM {D} a JOIN {G} b ON ST_DWithin(a.g, b.g, 0.4)"
	same_as_own "plain SQL: ST_DWithin or an id, PostGIS's rows" \
		"SELECT a.id AS a, b.id AS b FROM d_gd a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.2) OR a.id = b.id" \
		"SELECT a.id AS a, b.id AS b FROM l_gd a JOIN l_gp b ON ST_DWithin(a.g, b.g, 0.2) OR a.id = b.id"
	# a prepared plan follows a change of the table's columns
	out=$(psql -X -q -At -c "$load" -c "PREPARE pj AS SELECT count(*), max(a.tag) FROM d_gd a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.4)" \
		-c "EXECUTE pj" -c "ALTER TABLE d_gd ADD COLUMN extra int DEFAULT 7" -c "EXECUTE pj" \
		-c "ALTER TABLE d_gd DROP COLUMN extra" -c "EXECUTE pj" 2>&1 | grep -E '^[0-9]+[|]' | tr '\n' ' ')
	set -- $out
	[ $# = 3 ] && [ "$1" = "$2" ] && [ "$2" = "$3" ] && check "plain SQL on the workers: a prepared plan after ALTER TABLE" ok ||
		check "plain SQL on the workers: a prepared plan after ALTER TABLE" "$out"
	# LATERAL kNN of declared points: entry a becomes knn_join's rows, a's
	# row once for each neighbour, with knn_lateral_fill's for rows without
	# a point (d_gd's NULL, empty and NaN ones get any k rows, NULL
	# distances); the subquery its own target list over the neighbour.
	# Compared by (row, distance): PostgreSQL may break ties either way,
	# the distances of a row's first k are one multiset.  d_gs: two points
	# and two rows without one, fewer than k: the others make up k.  WHERE
	# b.id <> a.id of one table (id unique, not NULL): the other rows,
	# knn_selfjoin's, and (0.13) with a filter on b beside it: the other
	# rows where it holds, a row not among them where it fails on the row
	# (knn_lateral_selfjoin's ref_filter).  LEFT JOIN LATERAL .. ON true: a
	# row with no references (d_ge empty, d_g1 one row) gets NULLs,
	# constants too; .. ON a condition: a row none of whose neighbours
	# meets it gets NULLs once (its row grouped with its neighbours).
	# d_xq, d_xr: coordinates of 1e200, whose squares overflow (PostGIS's
	# distance NULL, the engine's infinite: both after every finite one).
	q "SET citus.shard_count = 4;
	   CREATE TABLE d_gs (id bigint PRIMARY KEY, g geometry(Point, 4326));
	   SELECT create_distributed_table('d_gs', 'id');
	   INSERT INTO d_gs VALUES (1, 'SRID=4326;POINT(1 1)'), (2, 'SRID=4326;POINT(2 2)'), (3, NULL), (4, 'SRID=4326;POINT EMPTY');
	   CREATE TABLE l_gs AS SELECT * FROM d_gs;
	   CREATE TABLE d_ge (id bigint PRIMARY KEY, g geometry(Point, 4326));
	   SELECT create_distributed_table('d_ge', 'id');
	   CREATE TABLE l_ge AS SELECT * FROM d_ge;
	   CREATE TABLE d_g1 (id bigint PRIMARY KEY, g geometry(Point, 4326));
	   SELECT create_distributed_table('d_g1', 'id');
	   INSERT INTO d_g1 VALUES (1, 'SRID=4326;POINT(1 1)');
	   CREATE TABLE l_g1 AS SELECT * FROM d_g1;
	   CREATE TABLE d_xq (id bigint PRIMARY KEY, g geometry(Point));
	   CREATE TABLE d_xr (id bigint PRIMARY KEY, g geometry(Point));
	   SELECT create_distributed_table('d_xq', 'id');
	   SELECT create_distributed_table('d_xr', 'id');
	   INSERT INTO d_xq VALUES (1, 'POINT(0 0)'), (2, 'POINT(1e200 0)'), (3, 'POINT(-1e200 1)'), (4, 'POINT(5 5)'), (5, NULL);
	   INSERT INTO d_xr VALUES (1, 'POINT(1e200 0)'), (2, 'POINT(-1e200 0)'), (3, 'POINT(0 1)'), (4, 'POINT(0 1)'),
	          (5, 'POINT(0 1)'), (6, NULL), (7, 'POINT EMPTY');
	   CREATE TABLE l_xq AS SELECT * FROM d_xq;
	   CREATE TABLE l_xr AS SELECT * FROM d_xr;
	   CREATE TABLE d_np (id bigint, g geometry(Point, 4326));
	   SELECT create_distributed_table('d_np', 'id');
	   INSERT INTO d_np SELECT id, g FROM d_gp WHERE id < 200;" >/dev/null || check "few point rows" "not made"
	for j in "SELECT a.id, n.d FROM {D} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {P} b ORDER BY b.g <-> a.g LIMIT 5) n" \
		"SELECT a.tag, n.d, n.e FROM {D} a, LATERAL (SELECT ST_Distance(a.g, b.g) AS d, b.g <-> a.g AS e FROM {P} b ORDER BY ST_Distance(b.g, a.g) LIMIT 3) n" \
		"SELECT a.id, n.d FROM {P} a JOIN LATERAL (SELECT a.g <-> b.g AS d FROM {P} b ORDER BY a.g <-> b.g LIMIT 4) n ON true" \
		"SELECT a.id, n.d FROM {D} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {S} b ORDER BY b.g <-> a.g LIMIT 3) n" \
		"SELECT a.id % 7 AS m, count(*), max(n.d) FROM {D} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {P} b ORDER BY b.g <-> a.g LIMIT 2) n WHERE n.d < 0.3 GROUP BY 1" \
		"SELECT a.id, n.d FROM {P} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {D} b ORDER BY b.g <-> a.g LIMIT 40) n" \
		"SELECT a.id, n.d FROM {P} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {P} b WHERE b.id <> a.id ORDER BY b.g <-> a.g LIMIT 4) n" \
		"SELECT a.tag, n.d FROM {D} a, LATERAL (SELECT ST_Distance(b.g, a.g) AS d FROM {D} b WHERE a.id <> b.id ORDER BY b.g <-> a.g LIMIT 2) n" \
		"SELECT a.id, n.d FROM {S} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {S} b WHERE b.id <> a.id ORDER BY b.g <-> a.g LIMIT 3) n" \
		"SELECT a.id, n.d FROM {D} a LEFT JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {P} b ORDER BY b.g <-> a.g LIMIT 3) n ON true" \
		"SELECT a.id, n.d, n.one FROM {D} a LEFT JOIN LATERAL (SELECT b.g <-> a.g AS d, 1 AS one FROM {E} b ORDER BY b.g <-> a.g LIMIT 3) n ON true" \
		"SELECT a.id, n.d, n.one FROM {O} a LEFT JOIN LATERAL (SELECT b.g <-> a.g AS d, 1 AS one FROM {O} b WHERE b.id <> a.id ORDER BY b.g <-> a.g LIMIT 3) n ON true" \
		"SELECT a.id, n.d FROM {S} a LEFT JOIN LATERAL (SELECT a.g <-> b.g AS d FROM {S} b WHERE a.id <> b.id ORDER BY a.g <-> b.g LIMIT 2) n ON true WHERE n.d IS NULL" \
		"SELECT a.id, n.d FROM {XQ} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {XR} b ORDER BY b.g <-> a.g LIMIT 4) n" \
		"SELECT a.id, n.d FROM {D} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {D} b WHERE b.tag LIKE 't%1' ORDER BY b.g <-> a.g LIMIT 3) n" \
		"SELECT a.id, n.d, n.one FROM {D} a LEFT JOIN LATERAL (SELECT b.g <-> a.g AS d, 1 AS one FROM {P} b WHERE b.id % 5 = 0 AND b.id < 40 ORDER BY b.g <-> a.g LIMIT 12) n ON true" \
		"SELECT a.id, n.d FROM {D} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {P} b ORDER BY b.g <-> a.g LIMIT 4) n WHERE a.tag IN ('null', 't5', 'nan', 't77') AND n.d < 0.9" \
		"SELECT a.id, n.d FROM {P} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {P} b WHERE b.id <> a.id ORDER BY b.g <-> a.g LIMIT 4) n WHERE a.id % 9 = 2" \
		"SELECT a.id, n.d, n.one FROM {O} a LEFT JOIN LATERAL (SELECT b.g <-> a.g AS d, 1 AS one FROM {O} b WHERE b.id <> a.id ORDER BY b.g <-> a.g LIMIT 3) n ON true WHERE a.id > 0" \
		"SELECT a.id, n.d FROM {P} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {P} b WHERE b.id <> a.id AND b.id % 3 = 0 ORDER BY b.g <-> a.g LIMIT 4) n" \
		"SELECT a.tag, n.d FROM {D} a, LATERAL (SELECT ST_Distance(b.g, a.g) AS d FROM {D} b WHERE a.id <> b.id AND (b.tag LIKE 't%1' OR b.tag IN ('null', 'nan')) ORDER BY b.g <-> a.g LIMIT 3) n" \
		"SELECT a.id, n.d, n.one FROM {O} a LEFT JOIN LATERAL (SELECT b.g <-> a.g AS d, 1 AS one FROM {O} b WHERE b.id <> a.id AND b.id > 0 ORDER BY b.g <-> a.g LIMIT 3) n ON true" \
		"SELECT a.id, n.d FROM {S} a LEFT JOIN LATERAL (SELECT a.g <-> b.g AS d FROM {S} b WHERE a.id <> b.id AND b.id <> 2 ORDER BY a.g <-> b.g LIMIT 3) n ON true" \
		"SELECT a.id, n.d FROM {P} a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {P} b WHERE b.id <> a.id AND b.id % 500 = 0 ORDER BY b.g <-> a.g LIMIT 6) n WHERE a.id % 9 = 2" \
		"SELECT a.id, n.d FROM {D} a LEFT JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM {P} b ORDER BY b.g <-> a.g LIMIT 4) n ON n.d < 0.3" \
		"SELECT a.id, n.d, n.one FROM {P} a LEFT JOIN LATERAL (SELECT b.g <-> a.g AS d, 1 AS one FROM {P} b ORDER BY b.g <-> a.g LIMIT 3) n ON n.d < 0.26 AND a.id % 2 = 0" \
		"SELECT a.tag, n.d FROM {D} a LEFT JOIN LATERAL (SELECT ST_Distance(b.g, a.g) AS d FROM {D} b WHERE b.id <> a.id ORDER BY b.g <-> a.g LIMIT 3) n ON n.d > 0" \
		"SELECT a.id, n.d FROM {P} a LEFT JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {P} b WHERE b.id <> a.id AND b.id % 7 = 0 ORDER BY b.g <-> a.g LIMIT 3) n ON n.d < 1 WHERE a.id % 5 = 1" \
		"SELECT a.id, n.d FROM {O} a LEFT JOIN LATERAL (SELECT b.g <-> a.g AS d FROM {O} b WHERE b.id <> a.id ORDER BY b.g <-> a.g LIMIT 3) n ON n.d < 1" \
		"SELECT a.id, n.d FROM {S} a LEFT JOIN LATERAL (SELECT a.g <-> b.g AS d FROM {S} b ORDER BY a.g <-> b.g LIMIT 3) n ON n.d IS NULL OR n.d > 1"; do
		d=${j//\{D\}/d_gd}
		d=${d//\{P\}/d_gp}
		d=${d//\{S\}/d_gs}
		d=${d//\{E\}/d_ge}
		d=${d//\{O\}/d_g1}
		d=${d//\{XQ\}/d_xq}
		d=${d//\{XR\}/d_xr}
		l=${j//\{D\}/l_gd}
		l=${l//\{P\}/l_gp}
		l=${l//\{S\}/l_gs}
		l=${l//\{E\}/l_ge}
		l=${l//\{O\}/l_g1}
		l=${l//\{XQ\}/l_xq}
		l=${l//\{XR\}/l_xr}
		lateral_on_workers "LATERAL kNN on the workers: ${j:0:80}" "PostGIS's" "$d" "$l"
	done
	# knn_lateral_join of 2-D points: PostGIS's order is the engine's, knn_join's rows
	out=$(psql -X -q -At -c "$load" -c "CREATE TEMP TABLE kl AS SELECT (q).id AS q, (r).id AS r, rank, dist FROM knn_lateral_join('d_gd', 'd_gp', '{g}', 4, NULL::d_gd, NULL::d_gp)" \
		-c "CREATE TEMP TABLE kj AS SELECT q, r, rank, dist FROM knn_join('d_gd', 'd_gp', '{g}', 4, query_id_col => 'id', ref_id_col => 'id')" \
		-c "SELECT (SELECT count(*) FROM (TABLE kl EXCEPT ALL TABLE kj) x) || ' ' || (SELECT count(*) FROM (TABLE kj EXCEPT ALL TABLE kl) y) || ' ' || (SELECT count(*) FROM kj)" 2>&1 | tail -1)
	grep -Eq "^0 0 [1-9][0-9]*$" <<<"$out" && check "knn_lateral_join of geometry points: knn_join's rows" ok ||
		check "knn_lateral_join of geometry points: knn_join's rows" "$out"
	# rows without a point are returned (knn_lateral_fill), so no NOTICE says they were skipped
	out=$(psql -X -q -At -c "$load" -c "SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gp b ORDER BY b.g <-> a.g LIMIT 3) n" 2>&1)
	grep -q "^[0-9]*$" <<<"$out" && ! grep -qi "skipped" <<<"$out" &&
		check "LATERAL kNN on the workers: no NOTICE of skipped rows" ok ||
		check "LATERAL kNN on the workers: no NOTICE of skipped rows" "$(tr '\n' ' ' <<<"$out")"
	# ... and with no references, a CROSS JOIN LATERAL has no rows, as PostgreSQL's
	out=$(psql -X -q -At -c "$load" -c "SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_ge b ORDER BY b.g <-> a.g LIMIT 3) n" \
		-c "SELECT count(*) FROM d_g1 a CROSS JOIN LATERAL (SELECT b.id FROM d_g1 b WHERE b.id <> a.id ORDER BY b.g <-> a.g LIMIT 3) n" 2>&1 |
		grep -E '^[0-9]+$|ERROR' | tr '\n' ' ')
	[ "$out" = "0 0 " ] && check "LATERAL kNN on the workers: no references, no rows" ok ||
		check "LATERAL kNN on the workers: no references, no rows" "$out"
	# the neighbours are knn_join's (ties on the smaller row), ids and all
	out=$(psql -X -q -At -c "$load" -c "SELECT (SELECT count(*) FROM (SELECT a.id, n.id FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gp b ORDER BY b.g <-> a.g LIMIT 3) n WHERE a.g <-> a.g = 0
	      EXCEPT ALL SELECT (p.q).id, (p.r).id FROM knn_join('d_gd', 'd_gp', '{g}', 3, query_key => NULL::d_gd, ref_key => NULL::d_gp) p) x),
	      (SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gp b ORDER BY b.g <-> a.g LIMIT 3) n)" 2>&1 | tail -1)
	rows=$(q "SELECT 3 * count(*) FROM d_gd")
	[ "$out" = "0|$rows" ] && check "LATERAL kNN on the workers: knn_join's neighbours, k for every row" ok ||
		check "LATERAL kNN on the workers: knn_join's neighbours, k for every row" "$out (rows $rows)"
	# a prepared LATERAL kNN follows a change of the table's columns
	out=$(psql -X -q -At -c "$load" -c "PREPARE pk AS SELECT count(*), max(a.tag), max(n.d) FROM d_gd a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM d_gp b ORDER BY b.g <-> a.g LIMIT 3) n" \
		-c "EXECUTE pk" -c "ALTER TABLE d_gd ADD COLUMN extra int DEFAULT 7" -c "EXECUTE pk" \
		-c "ALTER TABLE d_gd DROP COLUMN extra" -c "EXECUTE pk" 2>&1 | grep -E '^[0-9]+[|]' | tr '\n' ' ')
	set -- $out
	[ $# = 3 ] && [ "$1" = "$2" ] && [ "$2" = "$3" ] && check "LATERAL kNN on the workers: a prepared plan after ALTER TABLE" ok ||
		check "LATERAL kNN on the workers: a prepared plan after ALTER TABLE" "$out"
	# ... not where the rows would not be the subquery's: Citus's error, with
	# a hint naming knn_join (read as subqueries, a LATERAL kNN would re-read
	# one for every outer row)
	for j in "SELECT count(*) FROM d_gq a CROSS JOIN LATERAL (SELECT b.id FROM d_gp b ORDER BY b.g <-> a.g LIMIT 4) n" \
		"SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gp b WHERE b.id <> a.id ORDER BY b.g <-> a.g LIMIT 4) n" \
		"SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gd b WHERE b.tag <> a.tag ORDER BY b.g <-> a.g LIMIT 4) n" \
		"SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gd b WHERE b.id < a.id ORDER BY b.g <-> a.g LIMIT 4) n" \
		"SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gp b ORDER BY b.g <-> a.g DESC LIMIT 4) n" \
		"SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gp b ORDER BY b.g <-> a.g LIMIT 4 OFFSET 1) n" \
		"SELECT count(*) FROM d_np a LEFT JOIN LATERAL (SELECT b.id FROM d_gp b ORDER BY b.g <-> a.g LIMIT 4) n ON n.id > 3" \
		"SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gd b WHERE b.id <> a.id AND b.tag <> a.tag ORDER BY b.g <-> a.g LIMIT 4) n" \
		"SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gp b WHERE random() < 2 ORDER BY b.g <-> a.g LIMIT 4) n"; do
		out=$(psql -X -q -At -c "$load" -c "$j" 2>&1)
		grep -q "complex joins\|cannot push down\|not supported" <<<"$out" && grep -q "HINT:.*knn_join" <<<"$out" &&
			check "plain SQL: the LATERAL kNN left to Citus, with a hint: ${j:34:80}" ok ||
			check "plain SQL: the LATERAL kNN left to Citus, with a hint: ${j:34:80}" "$out"
	done
	# ... and they are PostGIS's own rows: the plain copies joined in a session
	# where gpujoin is not loaded (a nested loop calling ST_DWithin)
	same_as_own "plain SQL: PostGIS's rows" \
		"SELECT a.id AS a, b.id AS b FROM d_gq a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.4)" \
		"SELECT a.id AS a, b.id AS b FROM l_gq a JOIN l_gp b ON ST_DWithin(a.g, b.g, 0.4)"
	plan=$(psql -X -q -At -c "$load" -c "EXPLAIN (COSTS OFF) SELECT count(*) FROM d_gq a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.4)" 2>&1)
	grep -q "Distributed Subplan" <<<"$plan" && check "plain SQL: each table read as a subquery" ok ||
		check "plain SQL: each table read as a subquery" "$(tr '\n' ' ' <<<"$plan" | cut -c1-200)"
	out=$(psql -X -q -At -c "$load" -c "SET gpujoin.enable_join = off" -c "SELECT count(*) FROM d_gq a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.4)" 2>&1)
	grep -q "complex joins" <<<"$out" && check "plain SQL: gpujoin.enable_join = off leaves Citus's error" ok ||
		check "plain SQL: gpujoin.enable_join = off leaves Citus's error" "$out"
	# the caller's privileges still apply to the table read inside the subquery
	q "DROP ROLE IF EXISTS gj_plain_reader; CREATE ROLE gj_plain_reader;
	   GRANT SELECT ON d_gq TO gj_plain_reader; GRANT USAGE ON SCHEMA public TO gj_plain_reader" >/dev/null 2>&1
	out=$(psql -X -q -At -c "$load" -c "SET ROLE gj_plain_reader" -c "SELECT count(*) FROM d_gq a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.4)" 2>&1)
	grep -q "permission denied for table d_gp" <<<"$out" && check "plain SQL: a table the caller may not read is refused" ok ||
		check "plain SQL: a table the caller may not read is refused" "$out"
	q "GRANT SELECT ON d_gd TO gj_plain_reader" >/dev/null 2>&1
	out=$(psql -X -q -At -c "$load" -c "SET ROLE gj_plain_reader" -c "SELECT count(*) FROM d_gd a JOIN d_gp b ON ST_DWithin(a.g, b.g, 0.4)" 2>&1)
	grep -q "permission denied for table d_gp" <<<"$out" && check "plain SQL on the workers: a table the caller may not read is refused" ok ||
		check "plain SQL on the workers: a table the caller may not read is refused" "$out"
	out=$(psql -X -q -At -c "$load" -c "SET ROLE gj_plain_reader" -c "SELECT count(*) FROM d_gd a CROSS JOIN LATERAL (SELECT b.id FROM d_gp b ORDER BY b.g <-> a.g LIMIT 4) n" 2>&1)
	# (not rewritten: the caller does not read it plainly; Citus's error)
	grep -q "ERROR" <<<"$out" && ! grep -qE "^[0-9]+$" <<<"$out" &&
		check "LATERAL kNN: a table the caller may not read gives an error, no rows" ok ||
		check "LATERAL kNN: a table the caller may not read gives an error, no rows" "$out"
else
	echo "citus: measure: PostGIS is not installed: the geometry checks did not run"
fi

# pgvector: <-> and <=> joins of two distributed tables in plain SQL, against
# pgvector's own operators on the plain copies in a session without gpujoin
if psql -X -q -At -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null 2>&1; then
	load="LOAD 'gpujoin'"
	fin="x IS NOT NULL AND y IS NOT NULL AND x NOT IN ('NaN', 'Infinity', '-Infinity') AND y NOT IN ('NaN', 'Infinity', '-Infinity')"
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_v1 (id bigint PRIMARY KEY, v vector(3));
	   CREATE TABLE d_v2 (id bigint PRIMARY KEY, v vector(3));
	   SELECT create_distributed_table('d_v1', 'id');
	   SELECT create_distributed_table('d_v2', 'id');
	   INSERT INTO d_v1 SELECT id, ('[' || x || ',' || y || ',1]')::vector FROM d_st WHERE $fin;
	   INSERT INTO d_v2 SELECT id, ('[' || x || ',' || (x + y) / 2 || ',1.1]')::vector FROM d_q2 WHERE $fin;
	   CREATE TABLE l_v1 AS SELECT * FROM d_v1;
	   CREATE TABLE l_v2 AS SELECT * FROM d_v2;" >/dev/null || check "vector rows" "not made"
	for op in "<-> 0.3" "<=> 0.0001"; do
		set -- $op
		same_as_own "plain SQL: pgvector $1 join, pgvector's rows" \
			"SELECT a.id AS a, b.id AS b FROM d_v2 a JOIN d_v1 b ON a.v $1 b.v <= $2" \
			"SELECT a.id AS a, b.id AS b FROM l_v2 a JOIN l_v1 b ON a.v $1 b.v <= $2"
		# vector(3) on both sides: on the workers (l2 or cosine, eps widened by float32's rounding)
		plan=$(psql -X -q -At -c "$load" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT a.id AS a, b.id AS b FROM d_v2 a JOIN d_v1 b ON a.v $1 b.v <= $2" 2>&1)
		grep -q "Function Call: eps_join" <<<"$plan" && grep -q "Engine: citus workers" <<<"$plan" &&
			check "plain SQL: pgvector $1 join on the workers" ok ||
			check "plain SQL: pgvector $1 join on the workers" "$(tr '\n' ' ' <<<"$plan" | cut -c1-300)"
	done
	# the functions on vector columns run on the workers: the strips cut an
	# element of the vectors (cast to real[]), the workers read the vectors.
	# d_st's clumps, ties exactly eps apart and duplicates, a NULL vector;
	# then 64-D halfvec, whose cut dimension comes from a sample
	q "INSERT INTO d_v1 VALUES (40001, NULL);
	   INSERT INTO l_v1 VALUES (40001, NULL);
	   ALTER TABLE l_v1 ADD PRIMARY KEY (id);
	   ALTER TABLE l_v2 ADD PRIMARY KEY (id);
	   CREATE TABLE d_h (id bigint PRIMARY KEY, h halfvec(64));
	   SELECT create_distributed_table('d_h', 'id', shard_count => 8);
	   INSERT INTO d_h SELECT id, (SELECT ('[' || string_agg(CASE WHEN d = 1 THEN x WHEN d = 2 THEN y
	          ELSE ((hashint8(id * 64 + d) % 8) * 0.125)::float8 END::text, ',' ORDER BY d) || ']')
	          FROM generate_series(1, 64) d)::halfvec FROM d_st WHERE $fin AND abs(x) < 60000 AND abs(y) < 60000;
	   INSERT INTO d_h SELECT id + 50000, h FROM d_h WHERE id % 17 = 0;
	   CREATE TABLE l_h AS SELECT * FROM d_h;
	   ALTER TABLE l_h ADD PRIMARY KEY (id);" >/dev/null || check "vector rows for the functions" "not made"
	set="SET gpujoin.distributed_strips = 16"
	same_st "$set" "vector: eps_selfjoin" "SELECT * FROM eps_selfjoin('{V}', '{v}', 0.4)"
	same_st "$set" "vector: eps_join" "SELECT * FROM eps_join('{V2}', '{V}', '{v}', 0.4)"
	same_st "$set" "vector: eps_join_counts" "SELECT * FROM eps_join_counts('{V2}', '{V}', '{v}', 0.4)"
	same_st "$set" "vector: eps_neighbor_counts" "SELECT * FROM eps_neighbor_counts('{V}', '{v}', 0.4)"
	same_st "$set" "vector: eps_neighbors" "SELECT id, neighbors::text, dists::text FROM eps_neighbors('{V}', '{v}', 0.4)"
	same_st "$set" "vector: knn_join" "SELECT * FROM knn_join('{V2}', '{V}', '{v}', 4)"
	same_st "$set" "vector: knn_selfjoin" "SELECT * FROM knn_selfjoin('{V}', '{v}', 3)"
	same_st "$set" "vector: dbscan" "SELECT * FROM dbscan('{V}', '{v}', 0.4, 4)"
	same_st "$set" "halfvec(64): eps_selfjoin" "SELECT * FROM eps_selfjoin('{H}', '{h}', 1.0)"
	same_st "$set" "halfvec(64): knn_selfjoin" "SELECT * FROM knn_selfjoin('{H}', '{h}', 4)"
	in_strips d_v1 v
	in_strips d_h h
	# the cosine metric: the strips cut a normalised element (x / |x|), and the
	# halos are the distance of unit vectors at cosine distance eps, sqrt(2 eps).
	# Directions in 40 clumps at magnitudes 1 to 7, negative elements, zero
	# vectors (skipped, as one node says), a NULL, duplicates; halfvec queries
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_cv (id bigint PRIMARY KEY, v vector(8));
	   SELECT create_distributed_table('d_cv', 'id');
	   INSERT INTO d_cv SELECT i, (SELECT array_agg(((hashint8(i % 40 * 8 + d) % 100) / 50.0 - 1.0 +
	          ((hashint8(i * 8 + d) % 100) / 2000.0)) * (1 + i % 7) ORDER BY d) FROM generate_series(1, 8) d)::vector
	          FROM generate_series(1, 4000) i;
	   INSERT INTO d_cv SELECT 10000 + i, '[0,0,0,0,0,0,0,0]' FROM generate_series(1, 3) i;
	   INSERT INTO d_cv VALUES (20000, NULL);
	   INSERT INTO d_cv SELECT id + 30000, v FROM d_cv WHERE id % 50 = 0 AND v IS NOT NULL;
	   CREATE TABLE l_cv AS SELECT * FROM d_cv;
	   ALTER TABLE l_cv ADD PRIMARY KEY (id);
	   CREATE TABLE d_cq (id bigint PRIMARY KEY, v halfvec(8));
	   SELECT create_distributed_table('d_cq', 'id');
	   INSERT INTO d_cq SELECT id, v::halfvec FROM d_cv WHERE id % 9 = 0 AND v IS NOT NULL;
	   CREATE TABLE l_cq AS SELECT * FROM d_cq;
	   ALTER TABLE l_cq ADD PRIMARY KEY (id);" >/dev/null || check "cosine rows" "not made"
	for strips in 0 16; do
		set="SET gpujoin.distributed_strips = $strips"
		same_st "$set" "cosine, strips $strips: eps_selfjoin" "SELECT * FROM eps_selfjoin('{CV}', '{v}', 0.02, metric => 'cosine')"
		same_st "$set" "cosine, strips $strips: eps_join, halfvec with vector" "SELECT * FROM eps_join('{CQ}', '{CV}', '{v}', 0.05, metric => 'cosine')"
		same_st "$set" "cosine, strips $strips: eps_neighbor_counts" "SELECT * FROM eps_neighbor_counts('{CV}', '{v}', 0.02, metric => 'cosine')"
		same_st "$set" "cosine, strips $strips: knn_selfjoin" "SELECT * FROM knn_selfjoin('{CV}', '{v}', 5, metric => 'cosine')"
		same_st "$set" "cosine, strips $strips: knn_join" "SELECT * FROM knn_join('{CQ}', '{CV}', '{v}', 3, metric => 'cosine')"
		same_st "$set" "cosine, strips $strips: dbscan" "SELECT * FROM dbscan('{CV}', '{v}', 0.02, 4, metric => 'cosine')"
	done
	same_notice "cosine: the single node's NOTICE of the zero vectors" \
		"SELECT count(*) FROM eps_selfjoin('d_cv', '{v}', 0.02, metric => 'cosine')" \
		"SELECT count(*) FROM eps_selfjoin('l_cv', '{v}', 0.02, metric => 'cosine')"
	call_in_strips cosine "SELECT * FROM knn_selfjoin('d_cv', '{v}', 5, metric => 'cosine')"
	# LATERAL kNN of pgvector columns: pgvector ranks in float32, so each
	# strip answers by its own LATERAL query on the worker (knn_lateral_join,
	# knn_lateral_selfjoin), its halo widened by float32's rounding; rows
	# without a vector from knn_lateral_fill.  d_v1's clumps, exact ties and
	# duplicates and a NULL vector; d_h's 64-D halfvec; d_cv's 8-D clumps at
	# seven magnitudes with zero vectors.  Compared by (row, distance), as
	# the PostGIS forms above.
	for j in "SELECT a.id, n.d FROM {V2} a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b ORDER BY b.v <-> a.v LIMIT 5) n" \
		"SELECT a.id, n.d FROM {V} a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b WHERE b.id <> a.id ORDER BY b.v <-> a.v LIMIT 4) n" \
		"SELECT a.id, n.d FROM {H} a, LATERAL (SELECT a.h <-> b.h AS d FROM {H} b WHERE a.id <> b.id ORDER BY a.h <-> b.h LIMIT 3) n" \
		"SELECT a.id, n.d, n.one FROM {CV} a LEFT JOIN LATERAL (SELECT b.v <-> a.v AS d, 1 AS one FROM {CV} b ORDER BY b.v <-> a.v LIMIT 6) n ON true" \
		"SELECT a.id % 5 AS m, count(*), max(n.d) FROM {V2} a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b ORDER BY b.v <-> a.v LIMIT 40) n WHERE n.d < 1 GROUP BY 1" \
		"SELECT a.id, n.d FROM {CV} a CROSS JOIN LATERAL (SELECT b.v <=> a.v AS d FROM {CV} b ORDER BY b.v <=> a.v LIMIT 5) n" \
		"SELECT a.id, n.d FROM {CV} a CROSS JOIN LATERAL (SELECT b.v <=> a.v AS d FROM {CV} b WHERE b.id <> a.id ORDER BY b.v <=> a.v LIMIT 4) n" \
		"SELECT a.id, n.d FROM {CQ} a LEFT JOIN LATERAL (SELECT a.v <=> b.v AS d FROM {CQ} b WHERE a.id <> b.id ORDER BY a.v <=> b.v LIMIT 3) n ON true" \
		"SELECT a.id, n.d FROM {V2} a, LATERAL (SELECT b.v <=> a.v AS d FROM {V} b ORDER BY b.v <=> a.v LIMIT 7) n" \
		"SELECT a.id, n.d FROM {V2} a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b WHERE b.id % 3 <> 0 AND vector_norm(b.v) < 2 ORDER BY b.v <-> a.v LIMIT 5) n" \
		"SELECT a.id, n.d, n.one FROM {CV} a LEFT JOIN LATERAL (SELECT b.v <=> a.v AS d, 1 AS one FROM {CV} b WHERE b.id <= 4 ORDER BY b.v <=> a.v LIMIT 6) n ON true" \
		"SELECT a.id, n.d FROM {V} a LEFT JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b WHERE false ORDER BY b.v <-> a.v LIMIT 2) n ON true" \
		"SELECT a.id, n.d FROM {V2} a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b ORDER BY b.v <-> a.v LIMIT 5) n WHERE a.id % 50 = 7" \
		"SELECT a.id, n.d, n.one FROM {CV} a LEFT JOIN LATERAL (SELECT b.v <=> a.v AS d, 1 AS one FROM {CV} b WHERE b.id <= 4 ORDER BY b.v <=> a.v LIMIT 6) n ON true WHERE a.id % 3 = 1" \
		"SELECT a.id, n.d FROM {V} a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b WHERE b.id <> a.id ORDER BY b.v <-> a.v LIMIT 4) n WHERE a.id < 100" \
		"SELECT a.id, n.d FROM {CV} a CROSS JOIN LATERAL (SELECT b.v <=> a.v AS d FROM {CV} b WHERE b.id <> a.id ORDER BY b.v <=> a.v LIMIT 4) n WHERE a.id % 7 = 3" \
		"SELECT a.id, n.d FROM {V} a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b WHERE b.id <> a.id AND b.id % 4 <> 1 ORDER BY b.v <-> a.v LIMIT 4) n" \
		"SELECT a.id, n.d FROM {CV} a LEFT JOIN LATERAL (SELECT a.v <=> b.v AS d FROM {CV} b WHERE a.id <> b.id AND b.id % 3 = 0 ORDER BY a.v <=> b.v LIMIT 3) n ON true" \
		"SELECT a.id, n.d FROM {V} a LEFT JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b WHERE b.id <> a.id ORDER BY b.v <-> a.v LIMIT 4) n ON n.d < 0.3" \
		"SELECT a.id, n.d FROM {CV} a LEFT JOIN LATERAL (SELECT a.v <=> b.v AS d FROM {CV} b ORDER BY a.v <=> b.v LIMIT 3) n ON n.d < 0.001"; do
		d=${j//\{V2\}/d_v2}
		d=${d//\{V\}/d_v1}
		d=${d//\{H\}/d_h}
		d=${d//\{CV\}/d_cv}
		d=${d//\{CQ\}/d_cq}
		l=${j//\{V2\}/l_v2}
		l=${l//\{V\}/l_v1}
		l=${l//\{H\}/l_h}
		l=${l//\{CV\}/l_cv}
		l=${l//\{CQ\}/l_cq}
		lateral_on_workers "pgvector LATERAL kNN on the workers: ${j:0:80}" "pgvector's" "$d" "$l"
	done
	# an order float32 reverses: from [0,0], [0.760496974,0.912635505] is
	# nearer than [1.0324409,0.587643623] exactly (the engine's order, which
	# knn_join keeps), farther by pgvector's <-> in float32 (an FMA sum; the
	# measure line says whether this build reverses them): PostgreSQL's row
	q "CREATE TABLE d_rq (id bigint PRIMARY KEY, v vector(2));
	   CREATE TABLE d_rr (id bigint PRIMARY KEY, v vector(2));
	   SELECT create_distributed_table('d_rq', 'id', shard_count => 4);
	   SELECT create_distributed_table('d_rr', 'id', shard_count => 4);
	   INSERT INTO d_rq VALUES (1, '[0,0]'), (2, '[3,3]');
	   INSERT INTO d_rr VALUES (1, '[1.0324409,0.587643623]'), (2, '[0.760496974,0.912635505]'), (3, '[3,3.5]'), (4, '[5,5]');
	   CREATE TABLE l_rq AS SELECT * FROM d_rq;
	   CREATE TABLE l_rr AS SELECT * FROM d_rr;" >/dev/null || check "reversed rows" "not made"
	same_as_own "pgvector LATERAL kNN on the workers: an order float32 reverses, pgvector's row" \
		"SELECT a.id, n.id AS n, n.d FROM d_rq a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM d_rr b ORDER BY b.v <-> a.v LIMIT 1) n" \
		"SELECT a.id, n.id AS n, n.d FROM l_rq a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM l_rr b ORDER BY b.v <-> a.v LIMIT 1) n"
	echo "citus: measure: float32 reverses the order of the two rows: $(psql -X -q -At -c "SELECT '[1.0324409,0.587643623]'::vector <-> '[0,0]' < '[0.760496974,0.912635505]'::vector <-> '[0,0]'")," \
		"the nearest by knn_join: $(psql -X -q -At -c "$load" -c "SELECT r FROM knn_join('d_rq', 'd_rr', '{v}', 1, query_id_col => 'id', ref_id_col => 'id') WHERE q = 1" 2>&1 | tail -1) (2 exactly)"
	# a reversal across a strip border, where only the halo's widening by
	# float32's rounding (dist_knn.c, PgOrderBound) brings pgvector's row.
	# Two strips cut at 0 (as many rows on either side, one in the histogram's
	# bucket just below 0).  Query row 1 lies on the cut, in the upper strip;
	# its nearest by the engine's float64 distance, B, is in its own strip, and
	# pgvector's (float32 sums, plain or FMA: found by a search modelling
	# both, for <-> and <=>) in the lower one, farther than B from the cut in
	# the cut coordinate: outside a halo as wide as the engine's bound.  With
	# the widening taken out, both queries returned the engine's row (Rows
	# Moved 10 instead of 11 and 12).
	q "CREATE TABLE d_hq (id bigint PRIMARY KEY, v vector(2));
	   CREATE TABLE d_hr (id bigint PRIMARY KEY, v vector(2));
	   CREATE TABLE d_hcq (id bigint PRIMARY KEY, v vector(2));
	   CREATE TABLE d_hcr (id bigint PRIMARY KEY, v vector(2));
	   SELECT create_distributed_table(t, 'id', shard_count => 4) FROM unnest('{d_hq,d_hr,d_hcq,d_hcr}'::text[]) t;
	   INSERT INTO d_hq VALUES (1, '[0,0]'), (2, '[-512,0]'), (3, '[512,0]'), (4, '[-200,10]');
	   INSERT INTO d_hr VALUES (1, '[-0.790993452,0]'), (2, '[0.726059258,0.313860744]'), (3, '[-512,0]'),
	          (4, '[512,0]'), (5, '[-200,10]'), (6, '[200,10]');
	   INSERT INTO d_hcq VALUES (1, '[0,1.85534632]'), (2, '[-1,0]'), (3, '[1,0]'), (4, '[-0.5,0.3]');
	   INSERT INTO d_hcr VALUES (1, '[0.000538362714,0.777602673]'), (2, '[-0.000570247939,0.803425789]'),
	          (3, '[-1,0]'), (4, '[1,0]'), (5, '[-0.5,0.3]'), (6, '[0.5,0.3]');
	   CREATE TABLE l_hq AS SELECT * FROM d_hq;
	   CREATE TABLE l_hr AS SELECT * FROM d_hr;
	   CREATE TABLE l_hcq AS SELECT * FROM d_hcq;
	   CREATE TABLE l_hcr AS SELECT * FROM d_hcr;" >/dev/null || check "rows reversed across a border" "not made"
	# the construction: the engine's nearest and pgvector's differ, as meant
	out=$(psql -X -q -At -c "$load" \
		-c "SELECT r FROM knn_join('l_hq', 'l_hr', '{v}', 1, query_id_col => 'id', ref_id_col => 'id') WHERE q = 1" \
		-c "SELECT r FROM knn_join('l_hcq', 'l_hcr', '{v}', 1, query_id_col => 'id', ref_id_col => 'id', metric => 'cosine') WHERE q = 1" 2>&1 | tr '\n' ' ')
	out="$out/ $(psql -X -q -At -c "SELECT id FROM l_hr ORDER BY v <-> (SELECT v FROM l_hq WHERE id = 1) LIMIT 1" \
		-c "SELECT id FROM l_hcr ORDER BY v <=> (SELECT v FROM l_hcq WHERE id = 1) LIMIT 1" 2>&1 | tr '\n' ' ')"
	[ "$out" = "2 1 / 1 2 " ] && check "rows reversed across a border: the engine's nearest and pgvector's differ" ok ||
		check "rows reversed across a border: the engine's nearest and pgvector's differ" "$out (want 2 1 / 1 2)"
	for op in "<->" "<=>"; do
		[ "$op" = "<->" ] && t=h || t=hc
		j="SELECT a.id, n.id AS n, n.d FROM d_${t}q a CROSS JOIN LATERAL (SELECT b.id, b.v $op a.v AS d FROM d_${t}r b ORDER BY b.v $op a.v LIMIT 1) n"
		PGOPTIONS="${PGOPTIONS:-} -c gpujoin.distributed_strips=2" lateral_on_workers \
			"pgvector LATERAL kNN on the workers: a pair $op reverses across a strip border" "pgvector's" \
			"$j" "${j//d_${t}/l_${t}}"
		plan=$(PGOPTIONS="${PGOPTIONS:-} -c gpujoin.distributed_strips=2 -c gpujoin.distributed_broadcast_rows=0" \
			psql -X -q -At -c "$load" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $j" 2>&1)
		grep -q "Distributed: 2 strips of dimension 1," <<<"$plan" &&
			check "pgvector LATERAL kNN on the workers: a pair $op reverses across a strip border: two strips" ok ||
			check "pgvector LATERAL kNN on the workers: a pair $op reverses across a strip border: two strips" "$(grep Distributed <<<"$plan")"
	done
	# an outer WHERE on the query table alone: only those rows are query
	# rows (knn_lateral_join's query_filter), and a parameter of a custom
	# plan is bound first; the rows are pgvector's either way
	plan=$(psql -X -q -At -c "$load" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT a.id, n.d FROM d_v2 a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM d_v1 b ORDER BY b.v <-> a.v LIMIT 5) n WHERE a.id % 50 = 7" 2>&1)
	grep "Function Call: knn_lateral_join" <<<"$plan" | grep -q "NULL::text, '((id % (50)::bigint) = 7)'::text" &&
		check "pgvector LATERAL kNN on the workers: an outer WHERE on the query table reads only its rows" ok ||
		check "pgvector LATERAL kNN on the workers: an outer WHERE on the query table reads only its rows" "$(grep "Function Call" <<<"$plan" | cut -c1-300)"
	# ... and in the other rows' form, those rows' nearest others among all
	plan=$(psql -X -q -At -c "$load" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT a.id, n.d FROM d_v1 a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM d_v1 b WHERE b.id <> a.id ORDER BY b.v <-> a.v LIMIT 4) n WHERE a.id < 100" 2>&1)
	grep "Function Call: knn_lateral_selfjoin" <<<"$plan" | grep -q "NULL::text, '(id < 100)'::text, NULL::text" &&
		check "pgvector LATERAL kNN on the workers: an outer WHERE in the other rows' form reads only its rows" ok ||
		check "pgvector LATERAL kNN on the workers: an outer WHERE in the other rows' form reads only its rows" "$(grep "Function Call" <<<"$plan" | cut -c1-300)"
	j="SELECT a.id, n.d FROM {V2} a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b WHERE b.id % 2 = 0 ORDER BY b.v <-> a.v LIMIT 3) n WHERE a.id = \$1"
	d=${j//\{V2\}/d_v2}
	d=${d//\{V\}/d_v1}
	l=${j//\{V2\}/l_v2}
	l=${l//\{V\}/l_v1}
	id=$(psql -X -q -At -c "SELECT min(id) FROM l_v2 WHERE v IS NOT NULL" 2>&1)
	out=$(psql -X -q -At -c "$load" -c "PREPARE pd(bigint) AS $d" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE pd($id)" \
		-c "CREATE TABLE own_gpu AS EXECUTE pd($id)" 2>&1 | grep "Function Call")
	psql -X -q -At -c "PREPARE pl(bigint) AS $l" -c "CREATE TABLE own_pg AS EXECUTE pl($id)" >/dev/null 2>&1
	same=$(psql -X -q -At -c "SELECT (SELECT count(*) FROM (TABLE own_gpu EXCEPT ALL TABLE own_pg) x) || ' ' || (SELECT count(*) FROM (TABLE own_pg EXCEPT ALL TABLE own_gpu) y) || ' ' || (SELECT count(*) FROM own_pg)" 2>&1)
	q "DROP TABLE IF EXISTS own_gpu, own_pg" >/dev/null 2>&1
	grep -q "'((id % (2)::bigint) = 0)'::text, '(id = ''$id''::bigint)'::text" <<<"$out" && [ "$same" = "0 0 3" ] &&
		check "pgvector LATERAL kNN on the workers: WHERE a.id = \$1 of a prepared statement, bound, pgvector's rows" ok ||
		check "pgvector LATERAL kNN on the workers: WHERE a.id = \$1 of a prepared statement, bound, pgvector's rows" "$same; $(cut -c1-300 <<<"$out")"
	# ... and in a generic plan (the plan cache's choice after five runs; forced
	# here), whose parameter has no value while planning: bound when it runs
	# (knn_lateral_bound_filter, 0.12), one query row, pgvector's rows
	out=$(psql -X -q -At -c "$load" -c "SET plan_cache_mode = force_generic_plan" -c "PREPARE pd(bigint) AS $d" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE pd($id)" -c "CREATE TABLE own_gpu AS EXECUTE pd($id)" 2>&1 |
		grep -E "Function Call|Distributed")
	psql -X -q -At -c "PREPARE pl(bigint) AS $l" -c "CREATE TABLE own_pg AS EXECUTE pl($id)" >/dev/null 2>&1
	same=$(psql -X -q -At -c "SELECT (SELECT count(*) FROM (TABLE own_gpu EXCEPT ALL TABLE own_pg) x) || ' ' || (SELECT count(*) FROM (TABLE own_pg EXCEPT ALL TABLE own_gpu) y) || ' ' || (SELECT count(*) FROM own_pg)" 2>&1)
	q "DROP TABLE IF EXISTS own_gpu, own_pg" >/dev/null 2>&1
	grep -q "knn_lateral_bound_filter('(id = \$1)'::text, ROW(\$1)" <<<"$out" && grep -q "Distributed: 1 query rows" <<<"$out" &&
		[ "$same" = "0 0 3" ] &&
		check "pgvector LATERAL kNN on the workers: WHERE a.id = \$1 of a generic plan, bound when it runs, pgvector's rows" ok ||
		check "pgvector LATERAL kNN on the workers: WHERE a.id = \$1 of a generic plan, bound when it runs, pgvector's rows" "$same; $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
	# query rows in one part of space, references everywhere: the strips
	# (cut over both tables' rows, along the first element, the widest)
	# without query rows take no halo.  Before, each took every reference
	# (31,777 rows moved here; 5,901 now)
	q "CREATE TABLE d_skq (id bigint PRIMARY KEY, v vector(2));
	   CREATE TABLE d_skr (id bigint PRIMARY KEY, v vector(2));
	   SELECT create_distributed_table(t, 'id', shard_count => 4) FROM unnest('{d_skq,d_skr}'::text[]) t;
	   INSERT INTO d_skq SELECT i, ARRAY[(hashint4(i) % 1000 + 1000) / 40000.0, (hashint4(-i) % 1000 + 1000) / 4000.0]::vector
	          FROM generate_series(1, 500) i;
	   INSERT INTO d_skr SELECT i, ARRAY[(hashint4(i + 7) % 1000 + 1000) / 2000.0, (hashint4(-i - 7) % 1000 + 1000) / 4000.0]::vector
	          FROM generate_series(1, 5000) i;
	   CREATE TABLE l_skq AS SELECT * FROM d_skq;
	   CREATE TABLE l_skr AS SELECT * FROM d_skr;" >/dev/null || check "skewed query rows" "not made"
	j="SELECT a.id, n.d FROM d_skq a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM d_skr b ORDER BY b.v <-> a.v LIMIT 5) n"
	lateral_on_workers "pgvector LATERAL kNN on the workers: query rows in one part of space" "pgvector's" "$j" "${j//d_sk/l_sk}"
	plan=$(PGOPTIONS="${PGOPTIONS:-} -c gpujoin.distributed_broadcast_rows=0" psql -X -q -At -c "$load" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $j" 2>&1)
	moved=$(sed -n 's/.*Rows Moved: //p' <<<"$plan")
	echo "citus: measure: query rows in one part of space: $moved rows moved for 5,500"
	grep -q "strips of dimension 1," <<<"$plan" && [ -n "$moved" ] && [ "$moved" -lt 15000 ] &&
		check "pgvector LATERAL kNN on the workers: the strips without query rows take no halo" ok ||
		check "pgvector LATERAL kNN on the workers: the strips without query rows take no halo" "${moved:-no count} rows moved for 5,500"
	# a few query rows (gpujoin.distributed_broadcast_rows, 1000 by default):
	# sent to every worker, each shard of the references answering them where
	# it lies; more rows, or a transaction that ran on the workers before
	# (its writes may be on other connections than the shards' reads), take
	# the strips.  A row written in the transaction is among the rows.
	id=$(psql -X -q -At -c "SELECT min(id) FROM l_v2 WHERE v IS NOT NULL" 2>&1)
	j="SELECT a.id, n.id AS n, n.d FROM d_v2 a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM d_v1 b ORDER BY b.v <-> a.v LIMIT 3) n WHERE a.id = $id"
	plan=$(psql -X -q -At -c "$load" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $j" 2>&1)
	grep -Eq "Distributed: 1 query rows to every worker, answered by the [0-9]+ shards of the references" <<<"$plan" &&
		grep -q "Rows Made: 3" <<<"$plan" &&
		check "pgvector LATERAL kNN of one query row: by the shards, by default" ok ||
		check "pgvector LATERAL kNN of one query row: by the shards, by default" "$(grep -E "Distributed|Rows Made" <<<"$plan" | tr '\n' ' ')"
	out=$(psql -X -q -At -c "$load" -c "BEGIN" -c "INSERT INTO d_v1 SELECT 90001, v FROM d_v2 WHERE id = $id" \
		-c "SELECT n || ':' || d FROM ($j) x ORDER BY d, n LIMIT 1" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $j" \
		-c "ROLLBACK" 2>&1 | grep -E "^90001:|Distributed:" | tr '\n' ' ')
	grep -q "^90001:0 .*Distributed: [0-9]* strips of" <<<"$out" &&
		check "pgvector LATERAL kNN of one query row after a write in its transaction: in strips, the row written among its rows" ok ||
		check "pgvector LATERAL kNN of one query row after a write in its transaction: in strips, the row written among its rows" "$out"
	# near-ties across many strip borders: vector(8) rows on the lattice
	# {0, 0.5, 1}^8, each element moved by a multiple of 2^-20, so that many
	# pairs' distances differ by about float32's rounding, and 32 strips cut
	# inside the lattice's dense levels (rows within 1e-5 of each other on
	# both sides of a border)
	q "CREATE TABLE d_nt (id bigint PRIMARY KEY, v vector(8));
	   SELECT create_distributed_table('d_nt', 'id', shard_count => 4);
	   INSERT INTO d_nt SELECT i, (SELECT array_agg((hashint8(i * 8 + d) % 3 + 3) % 3 * 0.5
	          + ((hashint8(i * 16 + d) % 7) * 2 ^ -20)::float8 ORDER BY d) FROM generate_series(1, 8) d)::vector
	          FROM generate_series(1, 3000) i;
	   CREATE TABLE l_nt AS SELECT * FROM d_nt;
	   ALTER TABLE l_nt ADD PRIMARY KEY (id);" >/dev/null || check "near-tie rows" "not made"
	for op in "<->" "<=>"; do
		PGOPTIONS="${PGOPTIONS:-} -c gpujoin.distributed_strips=32" same_as_own \
			"pgvector LATERAL kNN on the workers: near-ties by $op over 32 strips, pgvector's rows" \
			"SELECT a.id, n.d FROM d_nt a CROSS JOIN LATERAL (SELECT b.v $op a.v AS d FROM d_nt b WHERE b.id <> a.id ORDER BY b.v $op a.v LIMIT 6) n" \
			"SELECT a.id, n.d FROM l_nt a CROSS JOIN LATERAL (SELECT b.v $op a.v AS d FROM l_nt b WHERE b.id <> a.id ORDER BY b.v $op a.v LIMIT 6) n"
	done
	plan=$(psql -X -q -At -c "$load" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT a.id, n.d FROM d_nt a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM d_nt b WHERE b.id <> a.id ORDER BY b.v <-> a.v LIMIT 6) n" 2>&1)
	grep -q "Distributed: [0-9]* strips of" <<<"$plan" &&
		check "pgvector LATERAL kNN of 3,000 query rows: in strips, by default" ok ||
		check "pgvector LATERAL kNN of 3,000 query rows: in strips, by default" "$(grep Distributed <<<"$plan")"
	# each row's neighbours ranked 1 .. k by <->, as PostgreSQL's ORDER BY
	out=$(psql -X -q -At -c "$load" -c "SELECT count(*), count(DISTINCT q), min(rank), max(rank), count(*) FILTER (WHERE dist <> (q).v <-> (r).v),
	        count(DISTINCT (q, rank)), count(*) FILTER (WHERE dist < before)
	        FROM (SELECT j.*, lag(dist) OVER (PARTITION BY q ORDER BY rank) AS before
	              FROM knn_lateral_join('d_v2', 'd_v1', '{v}', 3, NULL::d_v2, NULL::d_v1) j) x" 2>&1 | tail -1)
	want=$(psql -X -q -At -c "SELECT count(*) * 3 || '|' || count(*) || '|1|3|0|' || count(*) * 3 || '|0' FROM l_v2 WHERE v IS NOT NULL" 2>&1)
	[ "$out" = "$want" ] && check "knn_lateral_join: k rows a query row, ranked 1 .. k in order of dist, dist is <->" ok ||
		check "knn_lateral_join: k rows a query row, ranked 1 .. k in order of dist, dist is <->" "$out (want $want)"
	# only on the workers, only pgvector's distances and 2-D points: an error elsewhere, never other rows
	out=$(psql -X -q -At -c "$load" -c "SELECT count(*) FROM knn_lateral_join('l_v2', 'l_v1', '{v}', 3, NULL::l_v2, NULL::l_v1)" 2>&1)
	grep -q "knn_lateral_join: runs on the workers of Citus-distributed tables only" <<<"$out" &&
		check "knn_lateral_join of plain tables: an error" ok || check "knn_lateral_join of plain tables: an error" "$out"
	out=$(psql -X -q -At -c "$load" -c "SELECT count(*) FROM knn_lateral_selfjoin('d_pts', '{x,y}', 3, NULL::d_pts)" 2>&1)
	grep -q "knn_lateral_selfjoin: cannot run on the workers: PostgreSQL's order is kept for pgvector's <-> and <=> and 2-D geometry points only" <<<"$out" &&
		check "knn_lateral_selfjoin of numeric columns: an error" ok || check "knn_lateral_selfjoin of numeric columns: an error" "$out"
	# a halfvec cast to vector (no column on one side: not a distance of two
	# columns) stays Citus's error
	out=$(psql -X -q -At -c "$load" -c "SELECT count(*) FROM d_cq a CROSS JOIN LATERAL (SELECT b.id FROM d_cv b ORDER BY b.v <-> a.v::vector LIMIT 4) n" 2>&1)
	grep -q "^ERROR:  complex joins" <<<"$out" &&
		check "plain SQL: a LATERAL kNN of a cast halfvec left to Citus" ok ||
		check "plain SQL: a LATERAL kNN of a cast halfvec left to Citus" "$out"
	# a bare vector (no declared dimensions): its rows' dimensions, read first;
	# vectors of two dimensions stay on the coordinator with one node's error
	q "CREATE TABLE d_vb (id bigint PRIMARY KEY, v vector);
	   SELECT create_distributed_table('d_vb', 'id', shard_count => 8);
	   INSERT INTO d_vb SELECT * FROM d_v1;
	   CREATE TABLE l_vb AS SELECT * FROM d_vb;
	   ALTER TABLE l_vb ADD PRIMARY KEY (id);" >/dev/null || check "bare vector rows" "not made"
	same_st "$set" "bare vector: eps_selfjoin" "SELECT * FROM eps_selfjoin('{VB}', '{v}', 0.4)"
	same_st "$set" "bare vector with vector(3): knn_join" "SELECT * FROM knn_join('{V2}', '{VB}', '{v}', 4)"
	in_strips d_vb v
	q "INSERT INTO d_vb VALUES (40002, '[1,2]')" >/dev/null
	out=$(psql -X -q -At -c "SELECT count(*) FROM eps_selfjoin('d_vb', '{v}', 0.4)" 2>&1 | tr '\n' ' ')
	grep -q "read on this node: its vectors are not all of one dimension" <<<"$out" && grep -q "different lengths" <<<"$out" &&
		check "vectors of two dimensions: on the coordinator, one node's error" ok ||
		check "vectors of two dimensions: on the coordinator, one node's error" "$out"
else
	echo "citus: measure: pgvector is not installed: the vector joins did not run"
fi
# float8[] and float4[] coordinates on the workers: d_st's rows as arrays,
# with its NULL, NaN and infinite coordinates (a NULL element or a NaN skips
# the row, as on one node); 20-D arrays, whose cut dimension comes from a
# sample; arrays of two lengths stay on the coordinator (one node's error)
q "SET citus.shard_count = 8;
   CREATE TABLE d_a (id bigint PRIMARY KEY, a float8[]);
   CREATE TABLE d_a2 (id bigint PRIMARY KEY, a float4[]);
   CREATE TABLE d_a20 (id bigint PRIMARY KEY, a float8[]);
   SELECT create_distributed_table('d_a', 'id');
   SELECT create_distributed_table('d_a2', 'id');
   SELECT create_distributed_table('d_a20', 'id');
   INSERT INTO d_a SELECT id, ARRAY[x, y] FROM d_st;
   INSERT INTO d_a VALUES (60001, NULL);
   INSERT INTO d_a2 SELECT id, ARRAY[x, y]::float4[] FROM d_q2 WHERE abs(x) < 1e30 AND abs(y) < 1e30;
   INSERT INTO d_a20 SELECT id, ARRAY[x, y] || (SELECT array_agg((hashtext(x::text || ',' || d) % 4) * 0.25 ORDER BY d)
          FROM generate_series(3, 20) d)::float8[] FROM d_st;
   CREATE TABLE l_a AS SELECT * FROM d_a;
   CREATE TABLE l_a2 AS SELECT * FROM d_a2;
   CREATE TABLE l_a20 AS SELECT * FROM d_a20;
   ALTER TABLE l_a ADD PRIMARY KEY (id);
   ALTER TABLE l_a2 ADD PRIMARY KEY (id);
   ALTER TABLE l_a20 ADD PRIMARY KEY (id);" >/dev/null || check "array rows" "not made"
set="SET gpujoin.distributed_strips = 16"
same_st "$set" "float8[]: eps_selfjoin" "SELECT * FROM eps_selfjoin('{A}', '{a}', 0.4)"
same_st "$set" "float4[] with float8[]: eps_join" "SELECT * FROM eps_join('{A2}', '{A}', '{a}', 0.4)"
same_st "$set" "float8[]: eps_neighbor_counts" "SELECT * FROM eps_neighbor_counts('{A}', '{a}', 0.4)"
same_st "$set" "float4[] with float8[]: knn_join" "SELECT * FROM knn_join('{A2}', '{A}', '{a}', 4)"
same_st "$set" "float8[]: knn_selfjoin" "SELECT * FROM knn_selfjoin('{A}', '{a}', 3)"
same_st "$set" "float8[]: dbscan" "SELECT * FROM dbscan('{A}', '{a}', 0.4, 4)"
same_st "$set" "float8[20]: eps_selfjoin" "SELECT * FROM eps_selfjoin('{A20}', '{a}', 0.6)"
same_st "$set" "float8[20]: knn_selfjoin" "SELECT * FROM knn_selfjoin('{A20}', '{a}', 4)"
same_notice "float8[]: the single node's skipped-rows NOTICE" \
	"SELECT count(*) FROM eps_selfjoin('d_a', '{a}', 0.4)" "SELECT count(*) FROM eps_selfjoin('l_a', '{a}', 0.4)"
in_strips d_a a
in_strips d_a20 a
q "INSERT INTO d_a VALUES (60002, '{1,2,3}')" >/dev/null
out=$(psql -X -q -At -c "SELECT count(*) FROM eps_selfjoin('d_a', '{a}', 0.4)" 2>&1 | tr '\n' ' ')
grep -q "read on this node: its coordinate arrays are not all" <<<"$out" && grep -q "coordinate arrays have different lengths" <<<"$out" &&
	check "arrays of two lengths: on the coordinator, one node's error" ok ||
	check "arrays of two lengths: on the coordinator, one node's error" "$out"
q "DELETE FROM d_a WHERE id = 60002" >/dev/null

# calls the strips cannot answer exactly run here, with a NOTICE, same rows
same_st "$set" "eps_selfjoin, non-unique id column (on the coordinator)" "SELECT * FROM eps_selfjoin('{S}', '{x,y}', 0.4, id_col => 'id2')"
same_st "$set" "cosine of numeric columns (on the coordinator)" "SELECT * FROM eps_selfjoin('{S}', '{x,y}', 0.001, metric => 'cosine')"
note=$(q "SELECT count(*) FROM eps_selfjoin('d_st', '{x,y}', 0.001, metric => 'cosine')" 2>&1 | grep -c "read on this node: the cosine metric is distributed for pgvector columns only")
[ "$note" = 1 ] && check "NOTICE: cosine of numeric columns" ok || check "NOTICE: cosine of numeric columns" "no NOTICE"
note=$(q "SELECT count(*) FROM eps_selfjoin('d_st', '{x,y}', 0.4, id_col => 'id2')" 2>&1 | grep -c "read on this node: its id column has no unique index")
[ "$note" = 1 ] && check "NOTICE: a non-unique id column" ok || check "NOTICE: a non-unique id column" "no NOTICE"
note=$(psql -X -q -At -c "SET default_transaction_read_only = on" -c "SELECT count(*) FROM eps_join('d_q2', 'd_st', '{x,y}', 0.4)" 2>&1 | tr '\n' ' ')
case "$note" in
*"the transaction is read-only"*) check "a read-only transaction: on the coordinator, with a NOTICE" ok ;;
*) check "a read-only transaction: on the coordinator, with a NOTICE" "$note" ;;
esac

# The coordinator holds result rows, never the input (issue 45's bar): its
# backend's peak resident memory (VmHWM) over one eps_join of two
# distributed tables of 500,000 rows (16 MB of coordinates), after a
# first call with a tiny eps has warmed Citus's own caches and
# connections (about 25 MB whatever the input); then the same call with
# gpujoin.distributed = off, which reads every row here, for comparison.
q "SET citus.shard_count = 32;
   CREATE TABLE d_big_r (id bigint PRIMARY KEY, x float8, y float8);
   CREATE TABLE d_big_s (id bigint PRIMARY KEY, x float8, y float8);
   SELECT create_distributed_table('d_big_r', 'id');
   SELECT create_distributed_table('d_big_s', 'id');
   INSERT INTO d_big_r SELECT i, random(), random() FROM generate_series(1, 500000) i;
   INSERT INTO d_big_s SELECT i, random(), random() FROM generate_series(1, 500000) i;" >/dev/null
hwm="SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmHWM:\s+(\d+)'))[1]"
mem=$(psql -X -q -At -c "SELECT count(*) FROM eps_join('d_big_r', 'd_big_s', '{x,y}', 1e-9)" -c "$hwm" \
	-c "SELECT count(*) FROM eps_join('d_big_r', 'd_big_s', '{x,y}', 0.0005)" -c "$hwm" 2>&1 | tr '\n' ' ')
read -r _ hwm0 pairs hwm1 <<<"$mem"
echo "citus: measure: eps_join of two distributed tables of 500,000 rows (16 MB of coordinates): $pairs pairs; the coordinator's backend peaked at ${hwm1:-?} kB, ${hwm0:-?} kB after a warm-up call"
if [ -n "${hwm1:-}" ] && [ -n "${hwm0:-}" ] && [ $((hwm1 - hwm0)) -lt 15625 ]; then
	check "the coordinator's backend grew less than the input's 16 MB" ok
else
	check "the coordinator's backend grew less than the input's 16 MB" "${hwm0:-?} -> ${hwm1:-?} kB"
fi
# the same for dbscan of one of them (eps 0.002: about 6 neighbours a row,
# 435K core rows), after a warm-up call whose 500,000 rows are all noise:
# less than its 12 MB of ids and coordinates, what one node's read holds
mem=$(psql -X -q -At -c "SELECT count(*) FROM dbscan('d_big_s', '{x,y}', 1e-9, 5)" -c "$hwm" \
	-c "SELECT count(*) FILTER (WHERE is_core) FROM dbscan('d_big_s', '{x,y}', 0.002, 5)" -c "$hwm" 2>&1 | tr '\n' ' ')
read -r _ hwm0 core hwm1 <<<"$mem"
echo "citus: measure: dbscan of a distributed table of 500,000 rows (12 MB of ids and coordinates): $core core rows; the coordinator's backend peaked at ${hwm1:-?} kB, ${hwm0:-?} kB after a warm-up call"
if [ -n "${hwm1:-}" ] && [ -n "${hwm0:-}" ] && [ "${core:-0}" -gt 0 ] 2>/dev/null && [ $((hwm1 - hwm0)) -lt 11718 ]; then
	check "dbscan: the coordinator's backend grew less than the input's 12 MB" ok
else
	check "dbscan: the coordinator's backend grew less than the input's 12 MB" "${hwm0:-?} -> ${hwm1:-?} kB, ${core:-?} core rows"
fi
# ... and for a plain ST_DWithin join of the same rows as geometry(Point)
# columns, which goes to the workers as an eps_join of the rows whole
if psql -X -q -At -c "CREATE EXTENSION IF NOT EXISTS postgis" >/dev/null 2>&1; then
	q "SET citus.shard_count = 32;
	   CREATE TABLE d_big_gr (id bigint PRIMARY KEY, g geometry(Point, 4326));
	   CREATE TABLE d_big_gs (id bigint PRIMARY KEY, g geometry(Point, 4326));
	   SELECT create_distributed_table('d_big_gr', 'id', colocate_with => 'd_big_r');
	   SELECT create_distributed_table('d_big_gs', 'id', colocate_with => 'd_big_s');
	   INSERT INTO d_big_gr SELECT id, ST_SetSRID(ST_MakePoint(x, y), 4326) FROM d_big_r;
	   INSERT INTO d_big_gs SELECT id, ST_SetSRID(ST_MakePoint(x, y), 4326) FROM d_big_s;" >/dev/null
	mem=$(psql -X -q -At -c "LOAD 'gpujoin'" -c "SELECT count(*) FROM d_big_gr a JOIN d_big_gs b ON ST_DWithin(a.g, b.g, 1e-9)" -c "$hwm" \
		-c "SELECT count(*) FROM d_big_gr a JOIN d_big_gs b ON ST_DWithin(a.g, b.g, 0.0005)" -c "$hwm" 2>&1 | tr '\n' ' ')
	read -r _ hwm0 gpairs hwm1 <<<"$mem"
	echo "citus: measure: a plain ST_DWithin join of the same rows as geometry(Point): $gpairs pairs; the coordinator's backend peaked at ${hwm1:-?} kB, ${hwm0:-?} kB after a warm-up query"
	if [ -n "${hwm1:-}" ] && [ -n "${hwm0:-}" ] && [ "${gpairs:-x}" = "${pairs:-y}" ] && [ $((hwm1 - hwm0)) -lt 15625 ]; then
		check "plain SQL: the coordinator's backend grew less than the input's 16 MB, eps_join's pairs" ok
	else
		check "plain SQL: the coordinator's backend grew less than the input's 16 MB, eps_join's pairs" "${hwm0:-?} -> ${hwm1:-?} kB, ${gpairs:-?} pairs against ${pairs:-?}"
	fi
fi
mem=$(psql -X -q -At -c "SET gpujoin.distributed = off" -c "SELECT count(*) FROM eps_join('d_big_r', 'd_big_s', '{x,y}', 1e-9)" \
	-c "$hwm" -c "SELECT count(*) FROM eps_join('d_big_r', 'd_big_s', '{x,y}', 0.0005)" -c "$hwm" 2>&1 | tr '\n' ' ')
read -r _ hwm0 pairs hwm1 <<<"$mem"
echo "citus: measure: the same with gpujoin.distributed = off (every row read here): peaked at ${hwm1:-?} kB, ${hwm0:-?} kB after a warm-up call"
if psql -X -q -At -c "CREATE EXTENSION IF NOT EXISTS postgis" >/dev/null 2>&1; then
	# (tables of their own: d_g1 is the LATERAL checks' one-row table)
	err=$(psql -X -q -At -c "SET citus.shard_count = 4;
		CREATE TABLE d_gn1 (id int PRIMARY KEY, g geometry(Point));
		CREATE TABLE d_gn2 (id int PRIMARY KEY, g geometry(Point));
		SELECT create_distributed_table('d_gn1', 'id');
		SELECT create_distributed_table('d_gn2', 'id');" \
		-c "SELECT count(*) FROM d_gn1 a JOIN d_gn2 b ON ST_DWithin(a.g, b.g, 0.5)" 2>&1 | grep ERROR | head -1)
	echo "citus: measure: a plain ST_DWithin join of two distributed tables, gpujoin not loaded: ${err:-planned}"
else
	echo "citus: measure: PostGIS is not installed on the coordinator: the plain-SQL case did not run"
fi

# A cancel (statement_timeout) stops a distributed join within a second:
# $1 what, $2 a call of several seconds
times_out() {
	local t0 err ms
	t0=$(date +%s%N)
	err=$(psql -X -q -At -c "SET statement_timeout = 700" -c "$2" 2>&1)
	ms=$((($(date +%s%N) - t0) / 1000000))
	case "$err" in
	*"statement timeout"*) [ "$ms" -lt 1700 ] && check "statement_timeout stops a distributed $1 within 1 s" ok ||
		check "statement_timeout stops a distributed $1 within 1 s" "$ms ms" ;;
	*) check "statement_timeout stops a distributed $1" "$err" ;;
	esac
	echo "citus: measure: statement_timeout = 700 ms: the distributed $1 ended after $ms ms"
}
times_out join "SELECT count(*) FROM eps_join('d_big_r', 'd_big_s', '{x,y}', 0.002)"
times_out dbscan "SELECT count(*) FROM dbscan('d_big_s', '{x,y}', 0.002, 5)"
[ "$(q "SELECT to_regclass('d_big_gr') IS NOT NULL")" = t ] &&
	times_out "plain ST_DWithin join" "LOAD 'gpujoin'; SELECT count(*) FROM d_big_gr a JOIN d_big_gs b ON ST_DWithin(a.g, b.g, 0.002)"

# A cancel of a pgvector LATERAL kNN while the workers run their
# LATERAL queries (knn_lateral_strip), in strips and by shard (every row a
# query row, sent to every worker): the query ends within a second, no
# such query still runs on a worker, no intermediate table is left
if [ "$(q "SELECT count(*) FROM pg_extension WHERE extname = 'vector'")" = 1 ]; then
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_lw (id bigint PRIMARY KEY, v vector(32), kind int);
	   SELECT create_distributed_table('d_lw', 'id');
	   INSERT INTO d_lw SELECT i, (SELECT array_agg((hashint8(i * 32 + d) % 1000) / 1000.0)
	          FROM generate_series(1, 32) d)::vector, i % 2 FROM generate_series(1, 30000) i;" >/dev/null
	w1=${GJ_WORKER_PORTS%% *}
	# the third way: strips of the kind's hash (the same kind, not the distribution column)
	for way in "in strips:0:" "by shard:100000:" "by kind:0:WHERE b.kind = a.kind"; do
		wb=${way#*:}
		(psql -X -q -At -c "SET application_name = 'gj_lateral_cancel'" -c "LOAD 'gpujoin'" \
			-c "SET gpujoin.distributed_broadcast_rows = ${wb%%:*}" \
			-c "SELECT count(*) FROM d_lw a CROSS JOIN LATERAL (SELECT b.id FROM d_lw b ${way##*:} ORDER BY b.v <=> a.v LIMIT 10) n" \
			>/tmp/gj_lateral_cancel.$$ 2>&1; date +%s%N >/tmp/gj_lateral_cancel_end.$$) &
		seen=0
		for _ in $(seq 1 600); do
			[ "$(psql -X -q -At -p "$w1" -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%knn\_lateral\_strip(c.lq%'
				AND state = 'active' AND pid <> pg_backend_pid()")" -gt 0 ] && { seen=1; break; }
			sleep 0.1
		done
		t0=$(date +%s%N)
		q "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'gj_lateral_cancel'" >/dev/null
		wait
		ms=$((($(cat /tmp/gj_lateral_cancel_end.$$) - t0) / 1000000))
		sleep 0.5
		left=$(psql -X -q -At -p "$w1" -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%knn\_lateral\_strip(c.lq%'
			AND state = 'active' AND pid <> pg_backend_pid()")
		tables=$(q "SELECT count(*) FROM pg_class WHERE relname LIKE 'gpujoin\_%\_cells'")
		name="a cancel during the workers' LATERAL queries, ${way%%:*}: ends within 1 s, nothing left running or made"
		if [ "$seen" = 1 ] && grep -q "canceling statement" /tmp/gj_lateral_cancel.$$ && [ "$ms" -lt 1000 ] && [ "$left" = 0 ] && [ "$tables" = 0 ]; then
			check "$name" ok
		else
			check "$name" "seen $seen, $ms ms, $left still running, $tables tables: $(tr '\n' ' ' </tmp/gj_lateral_cancel.$$ | cut -c1-200)"
		fi
		echo "citus: measure: a cancel during the workers' LATERAL queries, ${way%%:*}: the query ended $ms ms later"
		rm -f /tmp/gj_lateral_cancel.$$ /tmp/gj_lateral_cancel_end.$$
	done
fi

# Tables distributed by the key of the kNN's equality ("the nearest of the
# same kind", the kind the distribution column): Citus itself runs the
# LATERAL on each shard.  With gpujoin preloaded on the workers, each
# shard's query is a GpuJoin that searches each row among its kind's rows
# (join/knn_key.c): the rows equal PostgreSQL's on a plain copy.  Kinds of
# 1,500 rows (the engine's candidates) and 750 of four (their own rows).
if psql -X -q -At -c "CREATE EXTENSION IF NOT EXISTS postgis" >/dev/null 2>&1; then
	for p in $GJ_WORKER_PORTS; do
		psql -X -q -p "$p" -c "ALTER SYSTEM SET session_preload_libraries = 'gpujoin'" -c "SELECT pg_reload_conf()" >/dev/null
	done
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_kind (id int, kind int, g geometry(Point), PRIMARY KEY (kind, id));
	   SELECT create_distributed_table('d_kind', 'kind');
	   INSERT INTO d_kind SELECT i, CASE WHEN i % 2 = 0 THEN i % 4 ELSE i % 1500 END,
	       ST_MakePoint((i * 7919 % 1000) * 0.1, (i * 104729 % 997) * 0.1) FROM generate_series(1, 6000) i;
	   ANALYZE d_kind;
	   CREATE TABLE l_kind AS SELECT * FROM d_kind; CREATE INDEX ON l_kind (kind); ANALYZE l_kind;" >/dev/null
	kq='SELECT a.id AS a, n.id AS b, n.d FROM %s a CROSS JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM %s b
	    WHERE b.kind = a.kind AND b.id <> a.id ORDER BY b.g <-> a.g, b.id LIMIT 4) n'
	same_as_own "LATERAL kNN of the same kind, tables distributed by the kind" \
		"$(printf "$kq" d_kind d_kind)" "$(printf "$kq" l_kind l_kind)"
	plan=$(psql -X -q -At -c "SET citus.explain_all_tasks = on" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*) FROM ($(printf "$kq" d_kind d_kind)) x" 2>&1)
	[ "$(grep -c 'Custom Scan (GpuJoin)' <<<"$plan")" = 8 ] && grep -Eq "Rows Searched By Key: [1-9]" <<<"$plan" &&
		grep -Eq "Rows In Engine Order: [1-9]" <<<"$plan" &&
		check "the same kind, distributed by the kind: a GpuJoin on each of 8 shards, by key and by the engine" ok ||
		check "the same kind, distributed by the kind: a GpuJoin on each of 8 shards, by key and by the engine" \
			"$(tr '\n' ' ' <<<"$plan" | cut -c1-300)"
	for p in $GJ_WORKER_PORTS; do
		psql -X -q -p "$p" -c "ALTER SYSTEM RESET session_preload_libraries" -c "SELECT pg_reload_conf()" >/dev/null
	done
	q "DROP TABLE d_kind, l_kind" >/dev/null
fi

# "The nearest of the same kind" where the kind is not the distribution
# column (WHERE b.kind = a.kind): Citus refuses it; the rewrite calls
# knn_lateral_join with query_match and ref_match, which moves the rows
# into strips by the kind's hash (dist/match.c), and each strip's LATERAL
# query answers on its worker, rows without a point and NULL kinds
# included.  Kinds skewed (half the rows in one), NULL kinds, NULL and
# empty points; the rows (a, distance) equal PostgreSQL's on plain copies,
# and each neighbour is of the row's kind at that distance (ties may give
# any of the tied rows).
if psql -X -q -At -c "CREATE EXTENSION IF NOT EXISTS postgis" >/dev/null 2>&1; then
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_mk (id int PRIMARY KEY, kind int, g geometry(Point));
	   SELECT create_distributed_table('d_mk', 'id');
	   INSERT INTO d_mk SELECT i, CASE WHEN i % 97 = 0 THEN NULL WHEN i % 2 = 0 THEN 0 ELSE i % 500 END,
	       CASE WHEN i % 89 = 0 THEN NULL WHEN i % 83 = 0 THEN 'POINT EMPTY'::geometry
	            ELSE ST_MakePoint((i * 7919 % 1000) * 0.1, (i * 104729 % 997) * 0.1) END
	   FROM generate_series(1, 6000) i;
	   CREATE TABLE d_mq (id int PRIMARY KEY, kind int, g geometry(Point));
	   SELECT create_distributed_table('d_mq', 'id');
	   INSERT INTO d_mq SELECT i, CASE WHEN i % 50 = 0 THEN NULL ELSE i % 520 END,
	       CASE WHEN i % 71 = 0 THEN NULL ELSE ST_MakePoint((i * 31 % 1000) * 0.1, (i * 17 % 997) * 0.1) END
	   FROM generate_series(1, 1500) i;
	   CREATE TABLE l_mk AS SELECT * FROM d_mk; ALTER TABLE l_mk ADD PRIMARY KEY (id); CREATE INDEX ON l_mk (kind);
	   CREATE TABLE l_mq AS SELECT * FROM d_mq; ALTER TABLE l_mq ADD PRIMARY KEY (id);
	   ANALYZE d_mk, d_mq, l_mk, l_mq;" >/dev/null
	for j in "SELECT a.id, n.d FROM {K} a CROSS JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM {K} b WHERE b.kind = a.kind AND b.id <> a.id ORDER BY b.g <-> a.g LIMIT 4) n" \
		"SELECT a.id, n.d FROM {Q} a CROSS JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM {K} b WHERE a.kind = b.kind ORDER BY b.g <-> a.g LIMIT 3) n" \
		"SELECT a.id, n.d FROM {Q} a LEFT JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM {K} b WHERE b.kind = a.kind ORDER BY b.g <-> a.g LIMIT 3) n ON true" \
		"SELECT a.id, n.d FROM {K} a LEFT JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM {K} b WHERE b.kind = a.kind AND b.id <> a.id AND b.id % 3 <> 0 ORDER BY b.g <-> a.g LIMIT 2) n ON true WHERE a.id % 5 = 1" \
		"SELECT a.id, n.d FROM {Q} a LEFT JOIN LATERAL (SELECT b.id, ST_Distance(b.g, a.g) AS d FROM {K} b WHERE b.kind = a.kind ORDER BY b.g <-> a.g LIMIT 3) n ON n.d < 20" \
		"SELECT a.id, n.d FROM {K} a CROSS JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM {K} b WHERE b.kind = a.kind ORDER BY b.g <-> a.g LIMIT 700) n WHERE a.kind IS DISTINCT FROM 0"; do
		d=${j//\{K\}/d_mk}
		d=${d//\{Q\}/d_mq}
		l=${j//\{K\}/l_mk}
		l=${l//\{Q\}/l_mq}
		same_as_own "LATERAL kNN of the same kind, not the distribution column: ${j:0:90}" "$d" "$l"
		# every neighbour of the row's kind, at its distance
		bad=$(psql -X -q -At -c "LOAD 'gpujoin'" -c "SELECT count(*) FROM (${d/SELECT a.id, n.d/SELECT a.id AS a, n.id AS b, n.d}) x
		       JOIN l_mk b ON b.id = x.b JOIN l_$([[ $j == *"{Q} a"* ]] && echo mq || echo mk) a ON a.id = x.a
		       WHERE a.kind IS DISTINCT FROM b.kind OR (b.g <-> a.g) IS DISTINCT FROM x.d AND ST_Distance(b.g, a.g) IS DISTINCT FROM x.d" 2>&1 | tail -1)
		[ "$bad" = 0 ] && check "... its neighbours of the row's kind, at their distance" ok ||
			check "... its neighbours of the row's kind, at their distance" "$bad"
	done
	# ties in a fixed order (ORDER BY the distance, b.id): the neighbours themselves are PostgreSQL's
	for j in "SELECT a.id AS a, n.id AS b, n.d FROM {K} a CROSS JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM {K} b WHERE b.kind = a.kind AND b.id <> a.id ORDER BY b.g <-> a.g, b.id LIMIT 4) n" \
		"SELECT a.id AS a, n.id AS b, n.d FROM {Q} a LEFT JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM {K} b WHERE b.kind = a.kind ORDER BY b.g <-> a.g, b.id LIMIT 700) n ON true"; do
		d=${j//\{K\}/d_mk}
		d=${d//\{Q\}/d_mq}
		l=${j//\{K\}/l_mk}
		l=${l//\{Q\}/l_mq}
		same_as_own "the same kind, ties by b.id, the neighbours themselves: ${j:0:90}" "$d" "$l"
	done
	# ... where the kind is not in the query, a second key stays Citus's error, with the hint
	out=$(psql -X -q -At -c "LOAD 'gpujoin'" -c "SELECT count(*) FROM d_mq a CROSS JOIN LATERAL (SELECT b.id FROM d_mk b ORDER BY b.g <-> a.g, b.id LIMIT 3) n" 2>&1)
	grep -q "ERROR:  complex joins" <<<"$out" && grep -q "HINT:  gpujoin's knn_join" <<<"$out" &&
		check "ties by b.id without the kind: Citus's error, with the hint" ok ||
		check "ties by b.id without the kind: Citus's error, with the hint" "$(tr '\n' ' ' <<<"$out" | cut -c1-200)"
	kq='SELECT a.id, n.d FROM %s a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM %s b WHERE b.kind = a.kind ORDER BY b.g <-> a.g LIMIT 3) n'
	plan=$(psql -X -q -At -c "LOAD 'gpujoin'" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $(printf "$kq" d_mq d_mk)" 2>&1)
	grep -q "Function Call: knn_lateral_join" <<<"$plan" && grep -q "Engine: citus workers" <<<"$plan" &&
		grep -Eq "Distributed: [0-9]+ strips of the hash of kind, tasks on 2 nodes" <<<"$plan" &&
		check "the same kind, not the distribution column: EXPLAIN, strips of the kind's hash on both workers" ok ||
		check "the same kind, not the distribution column: EXPLAIN, strips of the kind's hash on both workers" \
			"$(tr '\n' ' ' <<<"$plan" | cut -c1-300)"
	# kinds of two types of one hash family (bigint = int): each side hashed by its own type
	q "CREATE TABLE d_mb (id int PRIMARY KEY, kind bigint, g geometry(Point)); SELECT create_distributed_table('d_mb', 'id');
	   INSERT INTO d_mb SELECT id, kind, g FROM d_mk; CREATE TABLE l_mb AS SELECT * FROM d_mb;
	   CREATE TABLE d_mn (id int PRIMARY KEY, kind numeric, g geometry(Point)); SELECT create_distributed_table('d_mn', 'id')" >/dev/null
	kq='SELECT a.id, n.d FROM %s a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM %s b WHERE b.kind = a.kind ORDER BY b.g <-> a.g LIMIT 3) n'
	same_as_own "the same kind, bigint = int, PostGIS's rows" "$(printf "$kq" d_mq d_mb)" "$(printf "$kq" l_mq l_mb)"
	kq='SELECT a.id, n.d FROM %s a LEFT JOIN LATERAL (SELECT b.g <-> a.g AS d FROM %s b WHERE a.kind = b.kind ORDER BY b.g <-> a.g LIMIT 2) n ON true'
	same_as_own "the same kind, int = bigint, LEFT JOIN, PostGIS's rows" "$(printf "$kq" d_mb d_mq)" "$(printf "$kq" l_mb l_mq)"
	# ... not numeric = int (a cast, no one family): Citus's error, with the hint
	out=$(psql -X -q -At -c "LOAD 'gpujoin'" -c "SELECT count(*) FROM d_mq a CROSS JOIN LATERAL (SELECT b.id FROM d_mn b WHERE b.kind = a.kind ORDER BY b.g <-> a.g LIMIT 3) n" 2>&1)
	grep -q "ERROR:  complex joins" <<<"$out" && grep -q "HINT:  gpujoin's knn_join" <<<"$out" &&
		check "the same kind, numeric = int: Citus's error, with the hint" ok ||
		check "the same kind, numeric = int: Citus's error, with the hint" "$(tr '\n' ' ' <<<"$out" | cut -c1-200)"
	# a few query rows (an outer WHERE on q): only the references of their kinds move
	kq='SELECT a.id, n.d FROM %s a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM %s b WHERE b.kind = a.kind AND b.id <> a.id ORDER BY b.g <-> a.g LIMIT 3) n WHERE a.id IN (7, 77, 778, 2425)'
	same_as_own "the same kind, not the distribution column, a few query rows" "$(printf "$kq" d_mk d_mk)" "$(printf "$kq" l_mk l_mk)"
	moved=$(psql -X -q -At -c "LOAD 'gpujoin'" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $(printf "$kq" d_mk d_mk)" 2>&1 |
		sed -n 's/.*Rows Moved: \([0-9]*\).*/\1/p')
	want=$(q "SELECT 4 + count(*) FROM l_mk WHERE kind IN (SELECT kind FROM l_mk WHERE id IN (7, 77, 778, 2425))")
	[ "$moved" = "$want" ] && check "... only the query rows and the references of their kinds move ($moved rows)" ok ||
		check "... only the query rows and the references of their kinds move ($moved rows)" "want $want"
	# knn_lateral_join's kinds, called wrong: clear errors
	kj="SELECT count(*) FROM knn_lateral_join('d_mq', '%s', '{g}', 3, NULL::d_mq, NULL::%s, %s)"
	out=$(for a in "query_match => 'kind'" "keep_alone => true" "query_match => 'kind', ref_match => 'nokind'" \
		"query_match => 'kind', ref_match => 'kind'|d_mn" "query_match => 'kind', ref_match => 'ctid'" \
		"ref_order => '{id}'" "query_match => 'kind', ref_match => 'kind', ref_order => '{noid}'"; do
		t=d_mk
		[[ $a == *"|"* ]] && t=${a##*|} a=${a%|*}
		psql -X -q -At -c "$(printf "$kj" "$t" "$t" "$a")" 2>&1 | grep ERROR
	done)
	grep -q "query_match and ref_match must be given together" <<<"$out" && grep -q "keep_alone needs query_match" <<<"$out" &&
		grep -q 'column "nokind" of relation "d_mk" does not exist' <<<"$out" &&
		grep -q "no equality of numeric and integer with hash functions that agree" <<<"$out" &&
		grep -q '"ctid" is not a user column' <<<"$out" && grep -q "ref_order needs query_match" <<<"$out" &&
		grep -q 'column "noid" of relation "d_mk" does not exist' <<<"$out" &&
		check "knn_lateral_join's kinds called wrong: seven clear errors" ok ||
		check "knn_lateral_join's kinds called wrong: seven clear errors" "$(tr '\n' ' ' <<<"$out" | cut -c1-500)"
	# timing, side by side: 20,000 rows in 100 kinds on the workers, PostgreSQL on a plain copy
	q "CREATE TABLE d_mt (id int PRIMARY KEY, kind int, g geometry(Point)); SELECT create_distributed_table('d_mt', 'id');
	   INSERT INTO d_mt SELECT i, i % 100, ST_MakePoint(random() * 100, random() * 100) FROM generate_series(1, 20000) i;
	   CREATE TABLE l_mt AS SELECT * FROM d_mt; ALTER TABLE l_mt ADD PRIMARY KEY (id); CREATE INDEX ON l_mt USING gist (g);
	   CREATE INDEX ON l_mt (kind); ANALYZE d_mt, l_mt" >/dev/null
	tq='SELECT count(*) FROM %s a CROSS JOIN LATERAL (SELECT b.g <-> a.g AS d FROM %s b WHERE b.kind = a.kind AND b.id <> a.id ORDER BY b.g <-> a.g LIMIT 5) n'
	t0=$(date +%s%N)
	cd_=$(psql -X -q -At -c "LOAD 'gpujoin'" -c "$(printf "$tq" d_mt d_mt)" 2>&1 | tail -1)
	t1=$(date +%s%N)
	cl_=$(psql -X -q -At -c "$(printf "$tq" l_mt l_mt)" 2>&1 | tail -1)
	t2=$(date +%s%N)
	echo "citus: measure: 20,000 rows in 100 kinds, k = 5 others of the kind: on the workers $(((t1 - t0) / 1000000)) ms, PostgreSQL on a plain copy (GiST) $(((t2 - t1) / 1000000)) ms (psql included)"
	[ "$cd_" = 100000 ] && [ "$cl_" = 100000 ] && check "20,000 rows in 100 kinds: 5 rows each, as PostgreSQL's" ok ||
		check "20,000 rows in 100 kinds: 5 rows each, as PostgreSQL's" "$cd_ / $cl_"
	q "DROP TABLE d_mk, d_mq, d_mb, d_mn, d_mt, l_mk, l_mq, l_mb, l_mt" >/dev/null
fi

# ... and of pgvector columns, the kind a text: <-> in float32, and <=>,
# whose distance of a zero vector is NaN; NULL vectors and kinds
if [ "$(q "SELECT count(*) FROM pg_extension WHERE extname = 'vector'")" = 1 ]; then
	q "SET citus.shard_count = 8;
	   CREATE TABLE d_vk (id int PRIMARY KEY, kind text, v vector(3));
	   SELECT create_distributed_table('d_vk', 'id');
	   INSERT INTO d_vk SELECT i, CASE WHEN i % 61 = 0 THEN NULL WHEN i % 3 = 0 THEN 'big' ELSE 'k' || (i % 300) END,
	       CASE WHEN i % 53 = 0 THEN NULL WHEN i % 59 = 0 THEN '[0,0,0]'::vector
	            ELSE ('[' || (i * 7919 % 1000) * 0.01 || ',' || (i * 104729 % 997) * 0.01 || ',' || (i % 7) || ']')::vector END
	   FROM generate_series(1, 5000) i;
	   CREATE TABLE l_vk AS SELECT * FROM d_vk; ALTER TABLE l_vk ADD PRIMARY KEY (id); ANALYZE d_vk, l_vk;" >/dev/null
	for j in "SELECT a.id, n.d FROM {V} a CROSS JOIN LATERAL (SELECT b.v <-> a.v AS d FROM {V} b WHERE b.kind = a.kind AND b.id <> a.id ORDER BY b.v <-> a.v LIMIT 3) n" \
		"SELECT a.id, n.d FROM {V} a LEFT JOIN LATERAL (SELECT b.v <=> a.v AS d FROM {V} b WHERE b.kind = a.kind ORDER BY b.v <=> a.v LIMIT 4) n ON true" \
		"SELECT a.id AS a, n.id AS b, n.d FROM {V} a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM {V} b WHERE b.kind = a.kind ORDER BY b.v <-> a.v, b.id LIMIT 3) n"; do
		same_as_own "pgvector LATERAL kNN of the same kind, not the distribution column: ${j:0:90}" \
			"${j//\{V\}/d_vk}" "${j//\{V\}/l_vk}"
	done
	q "DROP TABLE d_vk, l_vk" >/dev/null
fi

# A worker lost mid-join (its backends terminated): a clear error, no row
out=$(mktemp)
(psql -X -q -At -c "SELECT count(*) FROM eps_join('d_big_r', 'd_big_s', '{x,y}', 0.002)" >"$out" 2>&1) &
sleep 1.5
w2=${GJ_WORKER_PORTS##* }
psql -X -q -At -p "$w2" -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
	WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname = current_database()" >/dev/null
wait
if grep -q "ERROR" "$out" && ! grep -qE '^[0-9]+$' "$out"; then
	check "a worker lost mid-join: an error, no rows" ok
else
	check "a worker lost mid-join: an error, no rows" "$(tr '\n' ' ' <"$out" | cut -c1-200)"
fi
grep -m1 ERROR "$out" | sed 's/^/citus: measure: a worker lost mid-join: /'
rm -f "$out"
n=$(q "SELECT count(*) FROM eps_join('d_q2', 'd_st', '{x,y}', 0.4)" 2>/dev/null | tail -1)
[ -n "$n" ] && [ "$n" -gt 0 ] 2>/dev/null && check "the next join after a worker was lost" ok ||
	check "the next join after a worker was lost" "${n:-error}"

# No intermediate table is left on any node: after success, cancel, a lost worker
left=0
for p in $PGPORT $GJ_WORKER_PORTS; do
	n=$(psql -X -q -At -p "$p" -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'gpujoin\_%' AND relkind IN ('r', 'p')")
	left=$((left + ${n:-1}))
done
[ "$left" = 0 ] && check "no intermediate table left on any node" ok || check "no intermediate table left on any node" "$left tables"

echo "citus: $passed passed, $failed failed"
