#!/usr/bin/env bash
# Runs the issue's CPU benchmark side by side in one go: core vs brute force,
# core vs scikit-learn's KD-tree, and in SQL gpujoin vs PostGIS / cube vs the
# executor ceiling.  Data sets go to ${GJ_BENCH_DATA:-/tmp/gj_bench}.
# usage: regress/bench/bench_all.sh [--quick]   (--quick: 1/10 sizes, no PostGIS)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${GJ_BENCH_DATA:-/tmp/gj_bench}
QUICK=${1:-}
make -s regress/bench/bench_core
echo "== core vs brute force"
./regress/bench/bench_core --data "$DATA" $QUICK
echo "== core (above) vs scikit-learn KD-tree, 1 thread, counting only"
if /usr/bin/python3 -c 'import sklearn' 2>/dev/null; then
	/usr/bin/python3 regress/bench/bench_sklearn.py "$DATA" unif2d_eps0.1:0.1 unif2d_eps0.3:0.3 unif2d_eps1.0:1.0
else
	echo "(python3-sklearn not installed: skipped)"
fi
echo "== SQL"
if [ "$QUICK" = "--quick" ]; then
	regress/bench/bench_sql.sh "$DATA" --no-postgis
else
	regress/bench/bench_sql.sh "$DATA"
fi
