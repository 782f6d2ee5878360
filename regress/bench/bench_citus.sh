#!/usr/bin/env bash
# The distributed joins (dist/) against the same calls with every row read
# on the coordinator (gpujoin.distributed = off) and against one node's
# plain tables, side by side in one run (numeric columns, and where
# pgvector and PostGIS are installed, vector(2) and geography columns), with where the distributed time
# goes (EXPLAIN ANALYZE: plan, repartition, workers' join and rows back)
# and how much the coordinator's backend grows.  Not a test.
#   regress/citus_cluster.sh regress/bench/bench_citus.sh [rows]
# GJ_BENCH_ONLY=lateral: only the LATERAL kNN rows (at the end).
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
# the same points as vector(2) and, over a 10 x 10 degree box, as geography
# (eps in metres for about 2 neighbours a row too), where the extensions are
kinds="numeric"
if q "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null 2>&1; then
	q "SET citus.shard_count = 32;
	   CREATE TABLE vr (id bigint PRIMARY KEY, v vector(2));
	   CREATE TABLE vs (id bigint PRIMARY KEY, v vector(2));
	   SELECT create_distributed_table('vr', 'id');
	   SELECT create_distributed_table('vs', 'id');
	   INSERT INTO vr SELECT id, ARRAY[x, y]::vector FROM r;
	   INSERT INTO vs SELECT id, ARRAY[x, y]::vector FROM s;
	   CREATE TABLE lvr AS SELECT * FROM vr;
	   CREATE TABLE lvs AS SELECT * FROM vs;
	   ALTER TABLE lvr ADD PRIMARY KEY (id);
	   ALTER TABLE lvs ADD PRIMARY KEY (id);" >/dev/null && kinds="$kinds vector"
fi
if q "CREATE EXTENSION IF NOT EXISTS postgis" >/dev/null 2>&1; then
	q "SET citus.shard_count = 32;
	   CREATE TABLE gr (id bigint PRIMARY KEY, g geography(Point, 4326));
	   CREATE TABLE gs (id bigint PRIMARY KEY, g geography(Point, 4326));
	   SELECT create_distributed_table('gr', 'id');
	   SELECT create_distributed_table('gs', 'id');
	   INSERT INTO gr SELECT id, ST_MakePoint(x * 10, y * 10)::geography FROM r;
	   INSERT INTO gs SELECT id, ST_MakePoint(x * 10, y * 10)::geography FROM s;
	   CREATE TABLE lgr AS SELECT * FROM gr;
	   CREATE TABLE lgs AS SELECT * FROM gs;
	   ALTER TABLE lgr ADD PRIMARY KEY (id);
	   ALTER TABLE lgs ADD PRIMARY KEY (id);" >/dev/null && kinds="$kinds geography"
fi
# the points as geometry(Point, 4326) too, for plain ST_DWithin joins (a GiST
# index on one node's copy, PostGIS's own plan)
q "SET citus.shard_count = 32;
   CREATE TABLE pr (id bigint PRIMARY KEY, g geometry(Point, 4326));
   CREATE TABLE ps (id bigint PRIMARY KEY, g geometry(Point, 4326));
   SELECT create_distributed_table('pr', 'id');
   SELECT create_distributed_table('ps', 'id');
   INSERT INTO pr SELECT id, ST_SetSRID(ST_MakePoint(x, y), 4326) FROM r;
   INSERT INTO ps SELECT id, ST_SetSRID(ST_MakePoint(x, y), 4326) FROM s;
   CREATE TABLE lpr AS SELECT * FROM pr;
   CREATE TABLE lps AS SELECT * FROM ps;
   CREATE INDEX ON lps USING gist (g);
   ANALYZE lpr; ANALYZE lps;" >/dev/null 2>&1 && kinds="$kinds geometry"
geps=$(awk -v n="$n" 'BEGIN { a = 1.11e6 * 1.11e6 * 0.992; printf "%.6g", sqrt(2 * a / (3.14159 * n)) }')
hwm="SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmHWM:\s+(\d+)'))[1]"
# $1 setting, $2 call: "seconds rows peak-kB", the call run twice (the second timed)
timed() {
	psql -X -q -At -c "$1" -c "SELECT count(*) FROM ($2) j" -c "$hwm" -c '\timing on' \
		-c "SELECT count(*) FROM ($2) j" -c '\timing off' -c "$hwm" 2>/dev/null |
		awk '/^Time:/ { t = $2 / 1000 } /^[0-9]+$/ { v[++k] = $1 } END { printf "%.2f %d %d", t, v[3], v[4] - v[2] }'
}
printf "%-14s %10s %9s %9s %9s %11s %11s\n" function rows workers coord one-node "grow-wk kB" "grow-co kB"
calls=("eps_join:SELECT * FROM eps_join('{R}', '{S}', '{x,y}', $eps)"
	"eps_selfjoin:SELECT * FROM eps_selfjoin('{R}', '{x,y}', $eps)"
	"neighbor_cnt:SELECT * FROM eps_neighbor_counts('{R}', '{x,y}', $eps)"
	"knn_join_k5:SELECT * FROM knn_join('{R}', '{S}', '{x,y}', 5)"
	"knn_self_k5:SELECT * FROM knn_selfjoin('{R}', '{x,y}', 5)"
	"dbscan_m3:SELECT * FROM dbscan('{R}', '{x,y}', $eps, 3)")
case " $kinds " in *" vector "*) calls+=(
	"vec_eps_join:SELECT * FROM eps_join('{VR}', '{VS}', '{v}', $eps)"
	"vec_knn_self5:SELECT * FROM knn_selfjoin('{VR}', '{v}', 5)"
	"vec_cos_knn5:SELECT * FROM knn_selfjoin('{VR}', '{v}', 5, metric => 'cosine')") ;; esac
case " $kinds " in *" geography "*) calls+=(
	"geo_eps_join:SELECT * FROM eps_join('{GR}', '{GS}', '{g}', $geps)"
	"geo_knn_self5:SELECT * FROM knn_selfjoin('{GR}', '{g}', 5)") ;; esac
[ "${GJ_BENCH_ONLY:-}" = lateral ] && calls=()
for f in "${calls[@]}"; do
	name=${f%%:*}
	call=${f#*:}
	d=$call
	l=$call
	for t in R S VR VS GR GS; do
		lt=$(tr 'A-Z' 'a-z' <<<"$t")
		d=${d//\{$t\}/$lt}
		l=${l//\{$t\}/l$lt}
	done
	read -r tw rows gw <<<"$(timed "SET gpujoin.distributed = on" "$d")"
	read -r tc _ gc <<<"$(timed "SET gpujoin.distributed = off" "$d")"
	read -r tl _ _ <<<"$(timed "SELECT 1" "$l")"
	printf "%-14s %10s %8ss %8ss %8ss %11s %11s\n" "$name" "$rows" "$tw" "$tc" "$tl" "$gw" "$gc"
	psql -X -q -At -c "EXPLAIN (ANALYZE, COSTS OFF) $d" 2>/dev/null |
		grep -E "Distributed|Rows Moved|Plan Time|Repartition Time|Workers' Join Time" | sed 's/^ */    /'
done

# Plain SQL: an inner distance join of two distributed tables (on the
# workers: one eps_join of the rows whole), the same join as a LEFT JOIN
# whose WHERE makes it inner (read on the coordinator, a GpuJoin there),
# and one node's copies: a GpuJoin, and the extension alone (PostGIS: GiST
# index probes; pgvector: a nested loop, so only where the rows are few).
# $1 name, $2 the join with {A} {B} for the tables (pr ps, or vr vs), $3 the
# own plan too (1) or not (0)
plain() {
	local load="LOAD 'gpujoin'" j c l tp="-"
	j=${2//\{A\}/$4}
	j=${j//\{B\}/$5}
	l=${2//\{A\}/l$4}
	l=${l//\{B\}/l$5}
	c=${j/ JOIN / LEFT JOIN }
	read -r tw rows gw <<<"$(timed "$load" "$j")"
	read -r tc _ gc <<<"$(timed "$load" "$c WHERE b.id IS NOT NULL")"
	read -r tl _ _ <<<"$(timed "$load" "$l")"
	[ "$3" = 1 ] && read -r tp _ _ <<<"$(timed "SET gpujoin.enable_join = off" "$l")"
	printf "%-14s %10s %8ss %8ss %8ss %11s %11s   (the extension alone on one node: %ss)\n" "$1" "$rows" "$tw" "$tc" "$tl" "$gw" "$gc" "$tp"
	psql -X -q -At -c "$load" -c "EXPLAIN (ANALYZE, COSTS OFF) $j" 2>/dev/null |
		grep -E "Function Call|Distributed:|Rows Moved|Plan Time|Repartition Time|Workers' Join Time|Execution Time" | sed 's/^ */    /' | cut -c1-160
}
[ "${GJ_BENCH_ONLY:-}" = lateral ] || case " $kinds " in *" geometry "*)
	plain plain_dwithin "SELECT a.id, b.id FROM {A} a JOIN {B} b ON ST_DWithin(a.g, b.g, $eps)" 1 pr ps ;; esac
[ "${GJ_BENCH_ONLY:-}" = lateral ] || case " $kinds " in *" vector "*)
	plain plain_vec_l2 "SELECT a.id, b.id FROM {A} a JOIN {B} b ON a.v <-> b.v <= $eps" $([ "$n" -le 20000 ] && echo 1 || echo 0) vr vs ;; esac

# Plain SQL: a LATERAL kNN of two distributed tables (on the workers: one
# knn_join of the rows whole, and knn_lateral_fill), and of one table's
# other rows (WHERE b.id <> a.id: one knn_selfjoin), against the function's
# ids on the same tables, and one node's copies: a GpuJoin, and PostGIS
# alone (a GiST kNN probe a row).
# $1 name, $2 the query with {A} {B}, $3 the function's call
# $4 the table {B}, $5 {A} (pr), $6 the extension alone too (1, the default) or not.
# $way: a SET before the workers' runs (strips: gpujoin.distributed_broadcast_rows = 0)
way=""
lateral() {
	local j l a=${5:-pr} tp="-"
	j=${2//\{A\}/$a}
	j=${j//\{B\}/$4}
	l=${2//\{A\}/l$a}
	l=${l//\{B\}/l$4}
	read -r tw rows gw <<<"$(timed "LOAD 'gpujoin'; $way" "$j")"
	read -r tk _ gk <<<"$(timed "SELECT 1; $way" "$3")"
	read -r tl _ _ <<<"$(timed "LOAD 'gpujoin'" "$l")"
	[ "${6:-1}" = 1 ] && read -r tp _ _ <<<"$(timed "SET gpujoin.enable_join = off" "$l")"
	printf "%-14s %10s %8ss %8ss %8ss %11s %11s   (workers / the function's ids on the workers / one node GpuJoin; the extension alone on one node: %ss)\n" \
		"$1" "$rows" "$tw" "$tk" "$tl" "$gw" "$gk" "$tp"
	psql -X -q -At -c "LOAD 'gpujoin'; $way" -c "EXPLAIN (ANALYZE, COSTS OFF) $j" 2>/dev/null |
		grep -E "Function Call|Function Scan|Distributed:|Rows Moved|Plan Time|Repartition Time|Workers' Join Time|Execution Time" | sed 's/^ */    /' | cut -c1-160
}
case " $kinds " in *" geometry "*)
	q "CREATE INDEX ON lpr USING gist (g)" >/dev/null 2>&1
	lateral lateral_knn5 "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM {B} b ORDER BY b.g <-> a.g LIMIT 5) n" \
		"SELECT * FROM knn_join('pr', 'ps', '{g}', 5)" ps
	lateral lateral_self5 "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.g <-> a.g AS d FROM {B} b WHERE b.id <> a.id ORDER BY b.g <-> a.g LIMIT 5) n" \
		"SELECT * FROM knn_selfjoin('pr', '{g}', 5)" pr
	;; esac
# pgvector's <->: knn_lateral_join (each strip's LATERAL query on its
# worker, pgvector's float32 order); pgvector alone sorts every row for
# each row (quadratic), so only where the rows are few
case " $kinds " in *" vector "*)
	small=$([ "$n" -le 20000 ] && echo 1 || echo 0)
	lateral lateral_vec5 "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM {B} b ORDER BY b.v <-> a.v LIMIT 5) n" \
		"SELECT * FROM knn_join('vr', 'vs', '{v}', 5)" vs vr "$small"
	lateral lateral_vself5 "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM {B} b WHERE b.id <> a.id ORDER BY b.v <-> a.v LIMIT 5) n" \
		"SELECT * FROM knn_selfjoin('vr', '{v}', 5)" vr vr "$small"
	# a WHERE on the references alone (0.11): a fifth of them, read so on
	# the workers; the function column is the rewrite's call itself
	lateral lateral_vec5f "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM {B} b WHERE b.id % 5 = 2 ORDER BY b.v <-> a.v LIMIT 5) n" \
		"SELECT (q).id, (r).id, dist FROM knn_lateral_join('vr', 'vs', '{v}', 5, NULL::vr, NULL::vs, ref_filter => 'id % 5 = 2')" vs vr "$small"
	# one query row's neighbours (WHERE a.id = 42: the outer WHERE read
	# with the query rows, 0.11)
	lateral lateral_vec5one "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM {B} b ORDER BY b.v <-> a.v LIMIT 5) n WHERE a.id = 42" \
		"SELECT (q).id, (r).id, dist FROM knn_lateral_join('vr', 'vs', '{v}', 5, NULL::vr, NULL::vs, query_filter => 'id = 42')" vs vr 1
	# ... and one row's nearest others of its own table
	lateral lateral_vself5one "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM {B} b WHERE b.id <> a.id ORDER BY b.v <-> a.v LIMIT 5) n WHERE a.id = 42" \
		"SELECT (a).id, (b).id, dist FROM knn_lateral_selfjoin('vr', '{v}', 5, NULL::vr, query_filter => 'id = 42')" vr vr 1
	# a few query rows: sent to every shard of the references (by default up
	# to 1,000 of them), and the same in strips (_st: both tables repartitioned)
	for w in "" "SET gpujoin.distributed_broadcast_rows = 0"; do
		way=$w
		sfx=$([ -n "$w" ] && echo _st)
		lateral "lateral_v1$sfx" "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM {B} b ORDER BY b.v <-> a.v LIMIT 5) n WHERE a.id = 42" \
			"SELECT (q).id, (r).id, dist FROM knn_lateral_join('vr', 'vs', '{v}', 5, NULL::vr, NULL::vs, query_filter => 'id = 42')" vs vr 0
		for m in 100 1000; do
			lateral "lateral_v$m$sfx" "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM {B} b WHERE b.id <> a.id ORDER BY b.v <-> a.v LIMIT 5) n WHERE a.id <= $m" \
				"SELECT (a).id, (b).id, dist FROM knn_lateral_selfjoin('vr', '{v}', 5, NULL::vr, query_filter => 'id <= $m')" vr vr 0
		done
	done
	way=""
	# 32-D uniform rows (at most 50,000 a table): a k-th distance wider than
	# a strip, so each strip's halo holds nearly every reference
	m=$((n < 50000 ? n : 50000))
	q "SET citus.shard_count = 32;
	   CREATE TABLE wr (id bigint PRIMARY KEY, v vector(32));
	   CREATE TABLE ws (id bigint PRIMARY KEY, v vector(32));
	   SELECT create_distributed_table('wr', 'id');
	   SELECT create_distributed_table('ws', 'id');
	   INSERT INTO wr SELECT i, (SELECT array_agg(random()::float4) FROM generate_series(1, 32) WHERE i > 0)::vector FROM generate_series(1, $m) i;
	   INSERT INTO ws SELECT i, (SELECT array_agg(random()::float4) FROM generate_series(1, 32) WHERE i > 0)::vector FROM generate_series(1, $m) i;
	   CREATE TABLE lwr AS SELECT * FROM wr;
	   CREATE TABLE lws AS SELECT * FROM ws;
	   ANALYZE lwr; ANALYZE lws;" >/dev/null
	lateral lateral_v32_10 "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.v <-> a.v AS d FROM {B} b ORDER BY b.v <-> a.v LIMIT 10) n" \
		"SELECT * FROM knn_join('wr', 'ws', '{v}', 10)" ws wr "$([ "$m" -le 20000 ] && echo 1 || echo 0)"
	lateral lateral_v32cos "SELECT a.id, n.id, n.d FROM {A} a CROSS JOIN LATERAL (SELECT b.id, b.v <=> a.v AS d FROM {B} b ORDER BY b.v <=> a.v LIMIT 10) n" \
		"SELECT * FROM knn_join('wr', 'ws', '{v}', 10, metric => 'cosine')" ws wr "$([ "$m" -le 20000 ] && echo 1 || echo 0)"
	;; esac
