#!/usr/bin/env bash
# Runs every test suite of gpujoin and ends with one line: "N passed, N failed".
#   1. the source tree's house rules (regress/unit/layout.sh)
#   2. core unit tests (regress/unit/test_*): the CPU engines against
#      brute-force oracles, no PostgreSQL involved
#   3. pg_regress on a throwaway cluster (pg_virtualenv -t: a temporary
#      directory, so it runs beside any other cluster), once with
#      gpujoin.device = cpu and once with the default (auto); then
#      gpujoin_progress watched from a second session
#      (regress/progress_check.sh)
#      and, where regress/install-deps.sh built Citus, every function on
#      Citus-distributed tables against plain ones (regress/citus_check.sh)
#   4. where regress/install-deps.sh built PostgreSQL 18 (from
#      ../shared/deps): the extension built against it, pg_regress (the
#      PostGIS tests left out: no PostGIS for 18 here) and the progress
#      check on a throwaway cluster of it (regress/pg_cluster.sh)
# Installs missing build dependencies and the extension (root or sudo).
set -uo pipefail
cd "$(dirname "$0")/.."
PGVER=${PGVER:-15}
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
UNIT="core probe join knn density tiles geodetic team"

regress/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PGVER/bin/pg_config}
t0=$(date +%s)
make -s -j2 all $(for t in $UNIT; do echo regress/unit/test_$t; done) >/dev/null ||
	{ echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
echo "built in $(($(date +%s) - t0)) s"
# The extension the suites run against: the Debian package built from this
# tree (make deb, pg_buildext), installed with dpkg, where Debian's tools
# are; else make install
t0=$(date +%s)
debdir=$(mktemp -d)
if command -v dpkg-buildpackage >/dev/null && command -v pg_buildext >/dev/null &&
	dpkg -s debhelper >/dev/null 2>&1 && [ -f /usr/share/perl5/Debian/Debhelper/Sequence/pgxs_loop.pm ]; then
	deb=
	if make -s deb DEB_DIR="$debdir" DEB_BUILD_FLAGS=-nc >"$debdir/build.txt" 2>&1; then
		deb=$(ls "$debdir"/postgresql-"$PGVER"-gpujoin_*.deb 2>/dev/null | head -1)
	fi
	if [ -z "$deb" ] || ! $SUDO dpkg -i "$deb" >"$debdir/install.txt" 2>&1; then
		echo "the Debian package did not build or install:"; tail -30 "$debdir/build.txt" "$debdir/install.txt" 2>/dev/null
		echo "0 passed, 1 failed"
		exit 1
	fi
	echo "installed $(basename "$deb") (dpkg -i), built by make deb in $(($(date +%s) - t0)) s"
else
	$SUDO make -s install PG_CONFIG="$PG_CONFIG" >/dev/null || { echo "install failed"; echo "0 passed, 1 failed"; exit 1; }
	echo "installed by make install (no Debian packaging tools here) in $(($(date +%s) - t0)) s"
fi
rm -rf "$debdir"

passed=0
failed=0
log=$(mktemp -d)

# Adds a suite's "name: N passed, N failed" line from file $2 to the totals.
count() {
	local line
	line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed" "$2" | tail -1)
	if [ -n "$line" ]; then
		passed=$((passed + $(echo "$line" | awk '{print $2}')))
		failed=$((failed + $(echo "$line" | awk '{print $4}')))
	else
		echo "$1: no summary (crashed?)"
		failed=$((failed + 1))
	fi
}

# 1. the house rules
regress/unit/layout.sh > "$log/layout.txt" 2>&1
grep -E "^(FAIL|  |layout:)" "$log/layout.txt"
count layout "$log/layout.txt"

# 2. core unit tests: each program ends with "<name>: N passed, N failed"
#    test_core  grid CPU self-join vs the brute-force oracle
#    test_probe restricted self-join, size estimates, interrupt hook
#    test_join  joins of two sets (pairs, counts) vs the brute-force oracle
#    test_knn   CPU kNN engine vs the sorting oracle
#    test_density neighbour counts, lists, DBSCAN vs brute-force oracles
#    test_tiles many dimensions: tile join, shapes from pairs, tiled kNN, cosine
#    test_geodetic geography: earth-centred points, chord bounds, pair lookup
#    test_team  a team of engines (several GPUs): members, failures, cancel
#    test_tiles runs on a core of its own meanwhile: it is the longest (two
#    minutes on 2 cores) and mostly single-threaded
t0=$(date +%s)
./regress/unit/test_tiles > "$log/tiles.txt" 2>&1 &
tiles=$!
for t in $UNIT; do
	[ "$t" = tiles ] || "./regress/unit/test_$t" > "$log/$t.txt" 2>&1
done
wait $tiles
for t in $UNIT; do
	grep -E "^(FAIL|$t:)" "$log/$t.txt"
	count "$t" "$log/$t.txt"
done
echo "unit tests in $(($(date +%s) - t0)) s"

# pg_regress's results in log $2 (what ran, $1; started at $3; output
# directory $4) added to the totals, the diffs shown on a failure.
regress_result() {
	local ok bad
	ok=$(grep -cE '^(ok|test) .* \.\.\. ok|^ok [0-9]+ ' "$2" || true)
	bad=$(grep -cE '\.\.\. FAILED|^not ok [0-9]+ ' "$2" || true)
	echo "pg_regress ($1): $ok passed, $bad failed in $(($(date +%s) - $3)) s"
	if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then
		echo "pg_regress did not run:"; tail -20 "$2"
		bad=1
	fi
	[ "$bad" -eq 0 ] || [ ! -f "$4/regression.diffs" ] || head -150 "$4/regression.diffs"
	passed=$((passed + ok))
	failed=$((failed + bad))
}

# 3. pg_regress, per device setting; the pgvector test where pgvector is installed
chmod 777 "$log"
with_pgvector=
if [ -f "$("$PG_CONFIG" --sharedir)/extension/vector.control" ]; then
	with_pgvector="WITH_PGVECTOR=1"
else
	echo "pgvector is not installed for $("$PG_CONFIG" --version): sql/pgvector.sql did not run" \
		"(install pgvector 0.5 or later for this PostgreSQL, or point GJ_PGVECTOR_SCRIPT at a script that does)"
fi
if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/postgis.control" ]; then
	echo "PostGIS is not installed for $("$PG_CONFIG" --version): sql/clustering_postgis.sql," \
		"postgis_input.sql and geography.sql will fail (Debian and Ubuntu: apt-get install postgresql-$PGVER-postgis-3)"
fi
for device in cpu auto; do
	t0=$(date +%s)
	outdir="$log/regress-$device"
	mkdir -p "$outdir" && chmod 777 "$outdir"
	pg_virtualenv -t -v "$PGVER" -o "max_worker_processes=8" sh -c \
		"PGOPTIONS='-c gpujoin.device=$device' make -s installcheck $with_pgvector PG_CONFIG='$PG_CONFIG' \
		 EXTRA_REGRESS_OPTS='--outputdir=$outdir'" >"$log/pg-$device.txt" 2>&1
	regress_result "gpujoin.device=$device" "$log/pg-$device.txt" "$t0" "$outdir"
done

# gpujoin_progress from a second session, on a cluster of its own
t0=$(date +%s)
pg_virtualenv -t -v "$PGVER" regress/progress_check.sh > "$log/progress-$PGVER.txt" 2>&1
grep -E "^FAIL" "$log/progress-$PGVER.txt"
count progress "$log/progress-$PGVER.txt"
echo "progress check (PostgreSQL $PGVER) in $(($(date +%s) - t0)) s"

# gpujoin on Citus-distributed tables: a coordinator and two workers
# (regress/citus_cluster.sh), where regress/install-deps.sh built Citus
if [ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ]; then
	t0=$(date +%s)
	PG_CONFIG="$PG_CONFIG" regress/citus_cluster.sh regress/citus_check.sh > "$log/citus.txt" 2>&1
	grep -E "^FAIL|^citus: measure" "$log/citus.txt"
	grep -qE "^citus: [0-9]+ passed" "$log/citus.txt" || tail -8 "$log/citus.txt"
	count citus "$log/citus.txt"
	echo "Citus check (coordinator and two workers) in $(($(date +%s) - t0)) s"
elif [ "${CI:-}" = true ]; then
	echo "Citus is not installed (regress/install-deps.sh builds it from ../shared/deps): its check did not run"
	failed=$((failed + 1))
else
	echo "Citus is not installed: its check did not run (regress/install-deps.sh builds it from ../shared/deps)"
fi

# 4. PostgreSQL 18: the tree copied (the pure-C core and the kernels are
#    version-independent and kept; the glue is rebuilt against 18's headers)
pg18_config=${GJ_PG18_PREFIX:-/opt/pg18}/bin/pg_config
if [ -x "$pg18_config" ]; then
	t0=$(date +%s)
	b18=$(mktemp -d)
	tar --exclude=./.git -cf - . | tar -C "$b18" -xf -
	chmod -R a+rwX "$b18"
	find "$b18/src" -name '*.o' ! -path "$b18/src/core/*" -delete
	rm -f "$b18/gpujoin.so"
	if (cd "$b18" && make -s -j2 PG_CONFIG="$pg18_config" >/dev/null 2>"$log/build18.txt" &&
		$SUDO make -s install PG_CONFIG="$pg18_config" >/dev/null 2>>"$log/build18.txt"); then
		echo "built and installed for $("$pg18_config" --version) in $(($(date +%s) - t0)) s"
		w18=
		[ -f "$("$pg18_config" --sharedir)/extension/vector.control" ] && w18="WITH_PGVECTOR=1"
		outdir="$log/regress-18"
		mkdir -p "$outdir" && chmod 777 "$outdir"
		t0=$(date +%s)
		(cd "$b18" && PG_CONFIG="$pg18_config" regress/pg_cluster.sh -o max_worker_processes=8 sh -c \
			"PGOPTIONS='-c gpujoin.device=cpu' make -s installcheck $w18 WITHOUT_POSTGIS=1 \
			 PG_CONFIG='$pg18_config' EXTRA_REGRESS_OPTS='--outputdir=$outdir'") >"$log/pg-18.txt" 2>&1
		regress_result "PostgreSQL 18, gpujoin.device=cpu, without the PostGIS tests" "$log/pg-18.txt" "$t0" "$outdir"
		t0=$(date +%s)
		PG_CONFIG="$pg18_config" regress/pg_cluster.sh regress/progress_check.sh > "$log/progress-18.txt" 2>&1
		grep -E "^FAIL" "$log/progress-18.txt"
		count progress "$log/progress-18.txt"
		echo "progress check (PostgreSQL 18) in $(($(date +%s) - t0)) s"
	else
		echo "building for PostgreSQL 18 failed:"; tail -30 "$log/build18.txt"
		failed=$((failed + 1))
	fi
	rm -rf "$b18"
elif [ "${CI:-}" = true ]; then
	echo "PostgreSQL 18 is not installed (regress/install-deps.sh builds it from ../shared/deps): its suite did not run"
	failed=$((failed + 1))
else
	echo "PostgreSQL 18 is not installed: its suite did not run (regress/install-deps.sh builds it from ../shared/deps)"
fi

rm -rf "$log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
