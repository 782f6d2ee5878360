#!/usr/bin/env bash
# Everything that needs the GPU host, in one call (docs/contributing.md):
#   1. regress/gpu/gpu_check: GPU vs CPU engine on hundreds of cases
#   2. compute-sanitizer (memcheck) on a quick gpu_check
#   3. regress/bench/bench_gpu: the GPU benchmark table; regress/gpu/gpu_tiles:
#      the tile join for many dimensions against the CPU's, under
#      compute-sanitizer, and its benchmark (Syn16/32/64D2M, embeddings)
#   4. PostgreSQL: the pg_regress suite with gpujoin.device = gpu, the SQL
#      GPU checks (regress/gpu/host/checks.sql), concurrent backends, the SQL
#      benchmark (regress/gpu/host/bench.sql) and GPU cancel cases
#      (regress/gpu/host/cancel.sql); the spread of the cells nearest a bar
#      within one run (regress/gpu/host/spread.sql); the backend's rate by
#      result-buffer size (regress/gpu/host/emit.sql)
#      many dimensions in SQL (regress/gpu/host/highdim.sql, and the 1M x 128
#      kNN join: regress/gpu/host/knnsql.sql, then with and without the
#      read's segment in the main shared memory: regress/gpu/host/dsm.sh);
#      eps_neighbors
#      against its arrays read from a table (regress/gpu/host/lists.sql);
#      joins between two tables (regress/gpu/host/join.sql); plain SQL's
#      <-> / <=> joins against the function calls (regress/gpu/host/plain_join.sql,
#      step plainjoin); keys of any type against integer ids
#      (regress/bench/bench_keys.sql, step keys); auto against
#      each forced eps method (regress/gpu/host/auto.sql, step auto)
#   5. exit: backends leaving with and without the CUDA teardown
#      (regress/gpu/host/exitcheck.sh), and the exit stress run: hundreds of
#      sessions joining, cancelling and leaving (regress/gpu/host/exitstress.sh)
#   6. step citus (not by default): regress/citus_check.sh and
#      regress/bench/bench_citus.sh on a coordinator and two workers of the
#      staged server, where Citus is staged too
#   7. steps team and teamsql: one join on several GPUs (gpujoin.gpus) against
#      one GPU, the engines (regress/gpu/gpu_team check and bench) and SQL
#      (regress/gpu/host/team.sql); on a host of one GPU the team is GPU 0 twice
#   8. step ab (not by default): another build ($GJ_AB_BASE) against this one
#      on a query of each engine family: the same answers, times side by side
#      in $GJ_AB_ROUNDS rounds (default 2)
# Built beforehand where nvcc and PostgreSQL's headers are (make, make
# regress/gpu/gpu_check ...), the server and the extension staged in .gpuhost/
# (the host's own staging, outside the repository); logs go to $OUT; a summary
# table prints last.
set -uo pipefail
OUT=${OUT:-/tmp/gj_out}
mkdir -p "$OUT"
STEPS=${GJ_STEPS:-check,sanitize,bench,tilescheck,tilessanitize,slicesanitize,tilesbench,knncheck,knnsanitize,knnbench,knnbenchhd,team,densitycheck,densitysanitize,densitybench,densitydense,pg,sqlbench,read,spread,emit,densitysql,lists,join,keys,plainjoin,highdimsql,knnsql,teamsql,cancel,exit,exitstress}
summary=()
has() { case ",$STEPS," in *",$1,"*) return 0 ;; esac; return 1; }
# one SQL script against the staged server's gj_regress: output to $OUT/$2,
# its last $3 lines shown (the read step runs on the benchmark's tables)
# the staged server up, and its gj_regress database
pg_db() {
	. regress/gpu/host/pg_up.sh
	psql -qc "CREATE DATABASE gj_regress" postgres 2>/dev/null
}
sql_step() {
	pg_db
	psql -X -v ON_ERROR_STOP=1 -f "$1" gj_regress > "$OUT/$2" 2>&1
	tail -"$3" "$OUT/$2"
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"

if has check; then
	GJ_VERBOSE=1 timeout ${GJ_CHECK_TIMEOUT:-240} ./regress/gpu/gpu_check > "$OUT/gpu_check.log" 2>&1
	echo "gpu_check exit $?" >> "$OUT/gpu_check.log"
	summary+=("gpu_check: $(tail -1 "$OUT/gpu_check.log")")
	grep -E '^FAIL' "$OUT/gpu_check.log" | head -5
fi
if has sanitize; then
	timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
		env GJ_GPU_CHECK_QUICK=1 ./regress/gpu/gpu_check > "$OUT/sanitizer.log" 2>&1
	rc=$?
	summary+=("compute-sanitizer memcheck: exit $rc, $(grep -c 'Invalid\|Leaked' "$OUT/sanitizer.log") findings; $(grep 'ERROR SUMMARY' "$OUT/sanitizer.log" | tail -1)")
fi
if has bench; then
	timeout ${GJ_BENCH_TIMEOUT:-240} ./regress/bench/bench_gpu ${GJ_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench_gpu.txt"
fi
if has tilescheck; then
	timeout ${GJ_CHECK_TIMEOUT:-300} ./regress/gpu/gpu_tiles check > "$OUT/gpu_tiles.log" 2>&1
	echo "gpu_tiles exit $?" >> "$OUT/gpu_tiles.log"
	summary+=("gpu_tiles check: $(grep 'passed' "$OUT/gpu_tiles.log" | tail -1)")
	grep -E '^(FAIL|gram|cancel)' "$OUT/gpu_tiles.log" | head -12
fi
if has tilessanitize; then
	# 440 s on the H100 (2026-11-24): past the 300 s the other sanitizer steps get
	timeout 560 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
		env GJ_GPU_CHECK_QUICK=1 ./regress/gpu/gpu_tiles check > "$OUT/tiles_sanitizer.log" 2>&1
	rc=$?
	summary+=("compute-sanitizer gpu_tiles: exit $rc; $(grep 'ERROR SUMMARY' "$OUT/tiles_sanitizer.log" | tail -1)")
fi
if has slicesanitize; then
	# the tile join in slices (windows loaded by the batch driver) under memcheck
	# (~100 s on the H100; racecheck of the same did not finish in one call)
	timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
		./regress/gpu/gpu_tiles slicecheck > "$OUT/slices_memcheck.log" 2>&1
	rc=$?
	summary+=("memcheck gpu_tiles slicecheck: exit $rc; $(grep -h 'slicecheck:' "$OUT/slices_memcheck.log"); $(tail -1 "$OUT/slices_memcheck.log")")
fi
if has tilesbench; then
	timeout ${GJ_BENCH_TIMEOUT:-400} ./regress/gpu/gpu_tiles bench ${GJ_TILES_BENCH:-all} 2>&1 | tee "$OUT/tiles_bench.md"
fi
if has knncheck; then
	GJ_VERBOSE=1 timeout ${GJ_CHECK_TIMEOUT:-240} ./regress/gpu/gpu_knn check > "$OUT/gpu_knn.log" 2>&1
	summary+=("gpu_knn check: $(tail -1 "$OUT/gpu_knn.log")")
	grep -E '^FAIL' "$OUT/gpu_knn.log" | head -5
fi
if has knnsanitize; then
	# the small cases (GJ_CHECK_SMALL): the whole check under memcheck outlasts any step limit
	GJ_CHECK_SMALL=1 timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
		./regress/gpu/gpu_knn check > "$OUT/knn_sanitizer.log" 2>&1
	rc=$?
	summary+=("compute-sanitizer on gpu_knn: exit $rc; $(grep 'ERROR SUMMARY' "$OUT/knn_sanitizer.log" | tail -1)")
fi
if has knnbench; then
	timeout ${GJ_BENCH_TIMEOUT:-300} ./regress/gpu/gpu_knn bench 2>&1 | tee "$OUT/knn_bench.txt"
fi
if has knnbenchhd; then
	timeout ${GJ_BENCH_TIMEOUT:-300} ./regress/gpu/gpu_knn benchhd 2>&1 | tee "$OUT/knn_bench_hd.md"
fi
if has team; then
	GJ_VERBOSE=1 timeout ${GJ_CHECK_TIMEOUT:-300} ./regress/gpu/gpu_team check > "$OUT/gpu_team.log" 2>&1
	echo "gpu_team exit $?" >> "$OUT/gpu_team.log"
	summary+=("gpu_team check: $(grep 'passed' "$OUT/gpu_team.log" | tail -1)")
	grep -E '^FAIL' "$OUT/gpu_team.log" | head -8
	timeout ${GJ_BENCH_TIMEOUT:-400} ./regress/gpu/gpu_team bench 2>&1 | tee "$OUT/team_bench.md"
	summary+=("gpu_team bench: $(grep -c '| same |' "$OUT/team_bench.md") cases with equal rows; speed-ups $(grep -o '\*\*[0-9.]*x\*\*' "$OUT/team_bench.md" | tr -d '*' | tr '\n' ' ')")
fi
if has pg; then
	. regress/gpu/host/pg_up.sh
	psql -qc "DROP DATABASE IF EXISTS gj_regress" -c "CREATE DATABASE gj_regress" postgres
	tests=$(awk '/^REGRESS = /{f=1} f{print; if ($0 !~ /\\$/) exit}' Makefile | sed 's/^REGRESS = //; s/\\//g' | tr -s ' \t\n' ' ')
	# PostGIS is not staged on the GPU host: its comparison runs on CI only
	[ -f "$GJ_PGBIN/../lib/postgis-3.so" ] || { tests=${tests/clustering_postgis/}; tests=${tests/postgis_input/}; tests=${tests/geography/}; tests=${tests/plain_join/}; echo "pg_regress: clustering_postgis, postgis_input, geography, plain_join left out (no PostGIS here; CI runs them)"; }
	# pgvector, when staged (../shared/deps/install-pgvector.sh .gpuhost/stage)
	[ -f /opt/pgx/usr/share/postgresql/15/extension/vector.control ] && tests="$tests pgvector plain_join_pgvector"
	rdir=/tmp/gj_regress_out
	rm -rf "$rdir" && mkdir -p "$rdir" && chmod 777 "$rdir"
	PGOPTIONS='-c gpujoin.device=gpu' $GJ_PGREGRESS --bindir="$GJ_PGBIN" --inputdir=. \
		--outputdir="$rdir" --use-existing --dbname=gj_regress $tests > "$OUT/pg_regress.log" 2>&1
	[ -f "$rdir/regression.diffs" ] && cp "$rdir/regression.diffs" "$OUT/" && head -120 "$rdir/regression.diffs"
	summary+=("pg_regress (device=gpu): $(grep -cE '\.\.\. ok' "$OUT/pg_regress.log") ok, $(grep -cE 'FAILED' "$OUT/pg_regress.log") failed")
	psql -X -f regress/gpu/host/checks.sql gj_regress > "$OUT/gpuhost_sql.log" 2>&1
	summary+=("gpuhost.sql: $(grep -c '^ok' "$OUT/gpuhost_sql.log") ok, $(grep -c '^FAIL\|ERROR' "$OUT/gpuhost_sql.log") failed")
	grep -E '^(FAIL|ok)|NOTICE|ERROR' "$OUT/gpuhost_sql.log" | head -20
	# concurrent backends on one GPU: 6 joins at once, all must agree
	for k in 1 2 3 4 5 6; do
		psql -XAtc "SET gpujoin.device = gpu; SELECT count(*) FROM eps_selfjoin('gh2', '{x,y}', 0.$k, 'id')" gj_regress > "/tmp/conc_$k.txt" 2>&1 &
	done
	wait
	bad=0
	for k in 1 2 3 4 5 6; do
		want=$(psql -XAtc "SET gpujoin.device = cpu; SELECT count(*) FROM eps_selfjoin('gh2', '{x,y}', 0.$k, 'id')" gj_regress)
		[ "$(cat "/tmp/conc_$k.txt")" = "$want" ] || { bad=$((bad + 1)); echo "concurrent $k: $(cat "/tmp/conc_$k.txt") != $want"; }
	done
	summary+=("concurrent backends: $((6 - bad)) of 6 agree with the CPU engine")
	# gpujoin_progress from a second session, the joins on the GPU (300K rows: auto takes it)
	timeout 120 regress/progress_check.sh > "$OUT/progress.log" 2>&1
	summary+=("$(grep '^progress:' "$OUT/progress.log" | tail -1 || echo 'progress: no summary')")
	grep -E '^FAIL' "$OUT/progress.log" | head -5
fi
if has densitycheck; then
	timeout 300 ./regress/gpu/gpu_density check > "$OUT/gpu_density.log" 2>&1
	echo "gpu_density exit $?" >> "$OUT/gpu_density.log"
	summary+=("gpu_density: $(grep 'passed' "$OUT/gpu_density.log" | tail -1)")
	grep -E '^(FAIL|cancel)' "$OUT/gpu_density.log" | head -8
fi
if has densitysanitize; then
	# every 4th case, nothing large: memcheck is slow
	timeout 420 compute-sanitizer --tool memcheck --error-exitcode 9 \
		env GJ_GPU_CHECK_QUICK=1 ./regress/gpu/gpu_density check > "$OUT/density_sanitizer.log" 2>&1
	rc=$?
	summary+=("compute-sanitizer gpu_density: exit $rc; $(grep 'ERROR SUMMARY' "$OUT/density_sanitizer.log" | tail -1)")
fi
if has densitybench; then
	timeout 400 ./regress/gpu/gpu_density bench > "$OUT/density_bench.md" 2>&1
	cat "$OUT/density_bench.md"
fi
if has densityslabs; then
	# issue 19: counts and DBSCAN in slabs, the rows pageable and pinned
	timeout 300 ./regress/gpu/gpu_density slabs > "$OUT/density_slabs.md" 2>&1
	cat "$OUT/density_slabs.md"
fi
if has slabsab; then
	# counts and DBSCAN of 10M rows in slabs (650 MB) in SQL: the build in
	# $GJ_AB_BASE against this one (and $GJ_AB_C), alternating (gpuhost_ab.sh)
	pg_db
	psql -X -q -v ON_ERROR_STOP=1 gj_regress > "$OUT/slabs_ab_setup.txt" 2>&1 <<-'SQL'
		CREATE EXTENSION IF NOT EXISTS gpujoin;
		SELECT setseed(0.19);
		CREATE TABLE IF NOT EXISTS ab10m AS SELECT i AS id, random() * 100 AS x, random() * 100 AS y FROM generate_series(1, 10000000) i;
		VACUUM ANALYZE ab10m;
	SQL
	cur=/opt/pgx/usr/lib/postgresql/15/lib/gpujoin.so
	cp "$cur" /tmp/gj_this.so
	for q in "SELECT count(*), sum(n), sum(n::bigint * id) FROM eps_neighbor_counts('ab10m', '{x,y}', 0.0977, 'id')" \
		"SELECT max(cluster), sum(cluster::bigint * id), count(*) FILTER (WHERE is_core) FROM dbscan('ab10m', '{x,y}', 0.0309, 3, 'id')"; do
		for lim in 0 650; do
			echo "== limit $lim MB: $q" | tee -a "$OUT/slabs_ab.txt"
			timeout 250 bash regress/gpu/host/ab.sh "${GJ_AB_BASE:-/tmp/gj_this.so}" /tmp/gj_this.so gj_regress \
				"SET gpujoin.gpu_memory_limit = $lim; $q" 2 ${GJ_AB_C:-} 2>&1 | grep -E '^[A-C] \(' | tee -a "$OUT/slabs_ab.txt"
		done
		# the answers: whole (CPU engine) and in slabs (GPU) must be the same
		a=$(psql -XAtq -c "SET gpujoin.device = cpu" -c "$q" gj_regress)
		b=$(psql -XAtq -c "SET gpujoin.device = gpu" -c "SET gpujoin.gpu_memory_limit = 650" -c "$q" gj_regress)
		echo "answers cpu whole: $a; gpu slabs: $b; same: $([ "$a" = "$b" ] && echo yes || echo NO)" | tee -a "$OUT/slabs_ab.txt"
		summary+=("slabs in SQL, same answers as the CPU: $([ "$a" = "$b" ] && echo yes || echo NO)")
	done
	rm -f "$cur" && cp /tmp/gj_this.so "$cur"
	summary+=("slabs A/B (A: base, B: this build): $(grep -E '^[A-C] ' "$OUT/slabs_ab.txt" | sed 's/ ([^)]*)//' | tr '\n' ';')")
fi
if has blocksab; then
	# issue 17: the blocks' key dimensions by the sampled model (block_index.c)
	# against every dimension keyed (the base build, GJ_AB_BASE), in SQL:
	# Syn16D2M and 2M clustered rows in 16-D, auto and each method forced
	pg_db
	psql -X -q -v ON_ERROR_STOP=1 gj_regress > "$OUT/blocks_ab_setup.txt" 2>&1 <<-'SQL'
		CREATE EXTENSION IF NOT EXISTS gpujoin;
		SELECT setseed(0.16);
		DROP TABLE IF EXISTS syn16, clus16;
		CREATE TABLE syn16 AS SELECT i AS id,
		    -ln(1 - random()) / 40 AS x1, -ln(1 - random()) / 40 AS x2, -ln(1 - random()) / 40 AS x3,
		    -ln(1 - random()) / 40 AS x4, -ln(1 - random()) / 40 AS x5, -ln(1 - random()) / 40 AS x6,
		    -ln(1 - random()) / 40 AS x7, -ln(1 - random()) / 40 AS x8, -ln(1 - random()) / 40 AS x9,
		    -ln(1 - random()) / 40 AS x10, -ln(1 - random()) / 40 AS x11, -ln(1 - random()) / 40 AS x12,
		    -ln(1 - random()) / 40 AS x13, -ln(1 - random()) / 40 AS x14, -ln(1 - random()) / 40 AS x15,
		    -ln(1 - random()) / 40 AS x16
		FROM generate_series(1, 2000000) i;
		CREATE TEMP TABLE c AS SELECT c, array_agg(random()) AS m FROM generate_series(0, 19) c,
		    generate_series(1, 16) k GROUP BY c;
		CREATE TABLE clus16 AS SELECT i AS id, (SELECT array_agg(c.m[k] + 0.02 *
		    sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) ORDER BY k) FROM generate_series(1, 16) k
		    WHERE i > 0) AS v FROM generate_series(1, 2000000) i JOIN c ON c.c = i % 20;
		ALTER TABLE syn16 ADD PRIMARY KEY (id);
		ALTER TABLE clus16 ADD PRIMARY KEY (id);
		VACUUM ANALYZE syn16, clus16;
	SQL
	cur=/opt/pgx/usr/lib/postgresql/15/lib/gpujoin.so
	cp "$cur" /tmp/gj_this.so
	c16="'{x1,x2,x3,x4,x5,x6,x7,x8,x9,x10,x11,x12,x13,x14,x15,x16}'"
	while IFS='|' read -r name q; do
		echo "== $name: $q" | tee -a "$OUT/blocks_ab.txt"
		timeout 200 bash regress/gpu/host/ab.sh "${GJ_AB_BASE:-/tmp/gj_this.so}" /tmp/gj_this.so gj_regress \
			"$q" 2 2>&1 | grep -E '^[A-C] \(' | sed 's/ ([^)]*)//' | tee -a "$OUT/blocks_ab.txt"
	done <<-CASES
		syn16 0.03 count auto|SELECT count(*) FROM eps_selfjoin('syn16', $c16, 0.03)
		syn16 0.03 count blocks|SET gpujoin.eps_method = blocks; SELECT count(*) FROM eps_selfjoin('syn16', $c16, 0.03)
		syn16 0.03 count brute|SET gpujoin.eps_method = brute; SELECT count(*) FROM eps_selfjoin('syn16', $c16, 0.03)
		syn16 0.03 counts auto|SELECT sum(n) FROM eps_neighbor_counts('syn16', $c16, 0.03)
		syn16 0.04 count auto|SELECT count(*) FROM eps_selfjoin('syn16', $c16, 0.04)
		syn16 0.04 count blocks|SET gpujoin.eps_method = blocks; SELECT count(*) FROM eps_selfjoin('syn16', $c16, 0.04)
		clus16 0.06 count auto|SELECT count(*) FROM eps_selfjoin('clus16', '{v}', 0.06)
		clus16 0.06 count brute|SET gpujoin.eps_method = brute; SELECT count(*) FROM eps_selfjoin('clus16', '{v}', 0.06)
	CASES
	# the answers: auto, blocks and brute force the same, this build
	for q in "SELECT count(*) FROM eps_selfjoin('syn16', $c16, 0.03)" "SELECT count(*) FROM eps_selfjoin('syn16', $c16, 0.04)" \
		"SELECT sum(n) FROM eps_neighbor_counts('syn16', $c16, 0.03)" "SELECT count(*) FROM eps_selfjoin('clus16', '{v}', 0.06)"; do
		r=""
		for m in auto blocks brute; do
			r="$r $(psql -XAtq -c "SET gpujoin.device = gpu" -c "SET gpujoin.eps_method = $m" -c "$q" gj_regress)"
		done
		echo "answers (auto blocks brute):$r <- $q" | tee -a "$OUT/blocks_ab.txt"
		set -- $r
		summary+=("blocks: auto, blocks and brute agree: $([ "$1" = "$2" ] && [ "$2" = "$3" ] && echo "yes ($1)" || echo "NO ($r)")")
	done
	psql -X -c "SET gpujoin.device = gpu" -c "SET client_min_messages = debug1" \
		-c "EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM eps_selfjoin('syn16', $c16, 0.03)" gj_regress >> "$OUT/blocks_ab.txt" 2>&1
	rm -f "$cur" && cp /tmp/gj_this.so "$cur"
	summary+=("blocks A/B (A: base, B: this build): $(grep -E '^(==|[A-C] )' "$OUT/blocks_ab.txt" | sed 's/: SELECT.*//; s/: SET.*//' | tr '\n' ';')")
fi
if has teamsql; then
	sql_step regress/gpu/host/team.sql team_sql.txt 12
	summary+=("team.sql: $(grep -c 'WARNING:  ok' "$OUT/team_sql.txt") ok, $(grep -c 'FAIL\|ERROR' "$OUT/team_sql.txt") failed")
	grep -E 'FAIL|ERROR' "$OUT/team_sql.txt" | head -8
fi
if has ab; then
	# any build ($GJ_AB_BASE, say the previous commit's gpujoin.so) against
	# this one on one query of each engine family, GPU engine: the answers
	# must be the same, and the times side by side, alternating (ab.sh)
	pg_db
	psql -X -q -v ON_ERROR_STOP=1 -f regress/bench/bench_tables.sql gj_regress > "$OUT/ab_setup.txt" 2>&1
	psql -X -q -v ON_ERROR_STOP=1 gj_regress >> "$OUT/ab_setup.txt" 2>&1 <<-'SQL'
		CREATE EXTENSION IF NOT EXISTS gpujoin;
		SELECT setseed(0.16);
		DROP TABLE IF EXISTS syn16;
		CREATE TABLE syn16 AS SELECT i AS id, ARRAY(SELECT -ln(1 - random()) / 40 + 0 * i
		    FROM generate_series(1, 16)) AS v FROM generate_series(1, 1000000) i;
		VACUUM ANALYZE syn16;
	SQL
	cur=/opt/pgx/usr/lib/postgresql/15/lib/gpujoin.so
	cp "$cur" /tmp/gj_this.so
	base=${GJ_AB_BASE:-/tmp/gj_this.so}
	same=0 differ=0
	while IFS='|' read -r name q; do
		echo "== $name: $q" | tee -a "$OUT/ab.txt"
		for lib in "$base" /tmp/gj_this.so; do
			rm -f "$cur" && cp "$lib" "$cur"
			psql -XAtq -c "SET gpujoin.device = gpu" -c "$q" gj_regress > "/tmp/ab_answer_$(basename "$lib")" 2>&1
		done
		if cmp -s "/tmp/ab_answer_$(basename "$base")" /tmp/ab_answer_gj_this.so; then
			same=$((same + 1))
		else
			differ=$((differ + 1))
			echo "answers differ: $(cat "/tmp/ab_answer_$(basename "$base")") | $(cat /tmp/ab_answer_gj_this.so)" | tee -a "$OUT/ab.txt"
		fi
		echo "answer: $(tr '\n' ' ' < /tmp/ab_answer_gj_this.so)" >> "$OUT/ab.txt"
		timeout 300 bash regress/gpu/host/ab.sh "$base" /tmp/gj_this.so gj_regress "$q" "${GJ_AB_ROUNDS:-2}" 2>&1 |
			grep -E '^[A-C] \(' | sed 's/ ([^)]*)//' | tee -a "$OUT/ab.txt"
	done <<-CASES
		self-join 2-D, 6.3M pairs|SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.1)
		kNN 100K x 1M, k 20|SELECT count(*), sum(rank) FROM knn_join('kq', 'kc', '{x,y,z}', 20)
		eps_join 100K x 1M|SELECT count(*) FROM eps_join('kq', 'kc', '{x,y,z}', 0.5)
		counts 2M|SELECT count(*), sum(n) FROM eps_neighbor_counts('sb2', '{x,y}', 0.1)
		dbscan 2M|SELECT count(*) FILTER (WHERE is_core), count(DISTINCT cluster) FROM dbscan('sb2', '{x,y}', 0.1, 5)
		lists 2M|SELECT count(*), sum(cardinality(neighbors)) FROM eps_neighbors('sb2', '{x,y}', 0.1)
		tiles 16-D 1M|SELECT count(*) FROM eps_selfjoin('syn16', '{v}', 0.03, 'id')
		slabs 2M, 200 MB|SET gpujoin.gpu_memory_limit = 200; SELECT count(*) FROM eps_selfjoin('sb2', '{x,y}', 0.1)
	CASES
	rm -f "$cur" && cp /tmp/gj_this.so "$cur"
	summary+=("A/B answers (A: $base, B: this build): $same of $((same + differ)) queries the same")
	summary+=("A/B times: $(grep -E '^(==|[A-C] )' "$OUT/ab.txt" | sed 's/: SELECT.*//; s/: SET.*//' | tr '\n' ';')")
fi
if has densitydense; then
	# issue 18's bar: DBSCAN and counts of 1M rows 2 eps across against 1M uniform rows
	timeout 300 ./regress/gpu/gpu_density dense > "$OUT/density_dense.md" 2>&1
	cat "$OUT/density_dense.md"
fi
has sqlbench && sql_step regress/gpu/host/bench.sql sql_bench.txt 14
has read && sql_step regress/gpu/host/read.sql read.txt 14
has spread && sql_step regress/gpu/host/spread.sql spread.txt 24
has emit && sql_step regress/gpu/host/emit.sql emit.txt 10
has densitysql && sql_step regress/gpu/host/density.sql density_sql.txt 30
has lists && sql_step regress/gpu/host/lists.sql lists.txt 8
has join && sql_step regress/gpu/host/join.sql join.txt 18
has highdimsql && sql_step regress/gpu/host/highdim.sql highdim_sql.txt 16
# issue 19: eps_join in 16-D by tiles against the grid it ran on before
has joinhd && sql_step regress/gpu/host/join_hd.sql join_hd.txt 40
if has auto; then
	# issue 17: auto against each forced eps method, alternated
	sql_step regress/gpu/host/auto.sql auto.txt 0
	sed -n '/auto_over_best/,/rows)/p' "$OUT/auto.txt"
	summary+=("auto / best forced method: $(sed -n '/auto_over_best/,/rows)/p' "$OUT/auto.txt" | grep '|' | tail -n +2 | tr -s ' ' | tr '\n' ';')")
fi
if has knnsql; then
	sql_step regress/gpu/host/knnsql.sql knn_sql.txt 30
	summary+=("kNN 1M x 128 in SQL, best and worst of 3: $(grep 'c128' "$OUT/knn_sql.txt" | tail -1 | tr -s ' ')")
fi
# keys of any type against integer ids, on the GPU (regress/bench/bench_keys.sql)
if has keys; then
	pg_db
	PGOPTIONS="-c gpujoin.device=gpu" psql -X -v ON_ERROR_STOP=1 -v rows=2000000 \
		-f regress/bench/bench_keys.sql gj_regress > "$OUT/keys.txt" 2>&1
	tail -20 "$OUT/keys.txt" | grep -v DEBUG
	grep -E 'DEBUG: +eps_selfjoin: read [0-9]{6,} rows' "$OUT/keys.txt" | sed 's/.*DEBUG: *//'
	summary+=("keyed / integer ids, 2M rows on the GPU: $(grep -E '^ [a-z_]+ +\| (uuid|text|record)' "$OUT/keys.txt" | awk -F'|' '{gsub(/ /,"",$1); gsub(/^ +| +$/,"",$2); printf "%s %s %s;", $1, $2, $4}')")
fi
# plain SQL (<->, <=> joins, LATERAL kNN) against the function calls, pgvector staged
if has plainjoin; then
	sql_step regress/gpu/host/plain_join.sql plain_join.txt 8
	summary+=("plain SQL / function: $(grep -E '^ [0-9]' "$OUT/plain_join.txt" | awk -F'|' '{printf "%s %s;", $1, $5}')")
fi
if has knnsql && [ "${GJ_KNN_DSM:-1}" = 1 ]; then	# GJ_KNN_DSM=0: not this comparison
	# the read's rows in a file or a segment, with and without the main region, side by side
	timeout 300 bash regress/gpu/host/dsm.sh gj_regress > "$OUT/knn_dsm.txt" 2>&1
	tail -4 "$OUT/knn_dsm.txt"
	summary+=("kNN 1M x 128 in SQL: $(tail -4 "$OUT/knn_dsm.txt" | tr '\n' ';')")
	# what a 1 GB segment's pages cost on this host, phase by phase
	[ -x regress/bench/bench_shm ] && regress/bench/bench_shm 1024 8 > "$OUT/shm.txt" 2>&1
fi
if has cancel; then
	sql_step regress/gpu/host/cancel.sql cancel.txt 20
	# the phases each cancel waited on: engine start and stop, the error, in time order
	grep -E 'gpujoin cancel case|engine st|canceling statement|: read [0-9]+ rows' /tmp/gj-pg.log \
		| tail -200 > "$OUT/cancel_server.log"
	summary+=("gpu cancel: $(grep -c '| t .*canceling' "$OUT/cancel.txt") of $(grep -cE '^ (knn|eps|dbscan)' "$OUT/cancel.txt") canceled within 1 s of the timeout, $(grep -c '| finished' "$OUT/cancel.txt") finished before it")
fi
if has exit; then
	bash regress/gpu/host/exitcheck.sh > "$OUT/exitcheck.txt" 2>&1
	tail -3 "$OUT/exitcheck.txt"
	summary+=("$(grep '^exit teardown' "$OUT/exitcheck.txt")" "$(grep '^exit skip' "$OUT/exitcheck.txt")")
fi
if has exitstress; then
	timeout 420 bash regress/gpu/host/exitstress.sh > "$OUT/exitstress.txt" 2>&1
	tail -3 "$OUT/exitstress.txt"
	summary+=("$(grep '^exit stress' "$OUT/exitstress.txt")")
fi
# Citus (staged by ../shared/deps/install-citus.sh .gpuhost/stage): the
# distributed joins' check, and their benchmark with the workers on this GPU
if has citus; then
	if [ -f "$GJ_PGBIN/../lib/citus.so" ]; then
		PG_CONFIG=$GJ_PGBIN/pg_config GJ_CLUSTER_OWNER=pgrun timeout "${GJ_CITUS_CHECK_S:-330}" regress/citus_cluster.sh \
			regress/citus_check.sh > "$OUT/citus_check.txt" 2>&1
		grep -E '^FAIL|^citus:' "$OUT/citus_check.txt"
		summary+=("$(grep -E '^citus: [0-9]+ passed' "$OUT/citus_check.txt" || echo 'citus check: no summary')")
		PG_CONFIG=$GJ_PGBIN/pg_config GJ_CLUSTER_OWNER=pgrun timeout "${GJ_CITUS_BENCH_S:-240}" regress/citus_cluster.sh \
			regress/bench/bench_citus.sh "${GJ_CITUS_ROWS:-2000000}" > "$OUT/citus_bench.txt" 2>&1
		cat "$OUT/citus_bench.txt"
		summary+=("citus bench: $(grep -E '^[a-z_]+ ' "$OUT/citus_bench.txt" | awk '{printf "%s %s w %s c %s 1 %s;", $1, $2, $3, $4, $5}')")
	else
		summary+=("citus: not staged")
	fi
fi
# the server log, and any crash in it, always come back
if [ -f /tmp/gj-pg.log ]; then
	cp /tmp/gj-pg.log "$OUT/server.log"
	crashes=$(grep -c 'terminated by signal\|exited with exit code [2-9]' /tmp/gj-pg.log)
	summary+=("server log: $crashes backend crashes")
	grep -B2 -A6 'terminated by signal\|exited with exit code [2-9]' /tmp/gj-pg.log | head -30
fi
echo "== summary"
printf '%s\n' "${summary[@]}"
