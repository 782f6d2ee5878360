#!/usr/bin/env bash
# The house rules of the source tree, checked on the built objects (run
# after make, from the repository root).  Each rule is one check; the last
# line is "layout: N passed, N failed".
#   1. no import circles: within the glue (src/ outside src/core), the core
#      (src/core) and the kernels (kernels/), no two files call each other,
#      directly or round a loop (file A needs a symbol of B when A's object
#      leaves it undefined and B's defines it)
#   2. gpujoin.so exports no test or benchmark code (the brute-force
#      oracles, the benchmark kernels)
#   3. no file under src/ has more than 1,200 lines
#   4. the core and the kernels include no PostgreSQL header: every quoted
#      include is a file of src/core, kernels or the includer's own folder
#   5. the user documentation (README.md, docs/) names no path outside the
#      repository
set -uo pipefail
cd "$(dirname "$0")/../.."
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }

# Files of "$@" (objects) that reach each other through symbols, one line a circle.
circles() {
	for f in "$@"; do
		nm -g --defined-only "$f" 2>/dev/null | awk -v f="$f" 'NF == 3 && $2 ~ /[TDBRCVW]/ {print f, $3, "D"}'
		nm -u "$f" 2>/dev/null | awk -v f="$f" '{print f, $NF, "U"}'
	done | awk '
	$3 == "D" { def[$2] = $1; files[$1] = 1; next }
	{ use[++nu] = $1 SUBSEP $2; files[$1] = 1 }
	END {
		for (k = 1; k <= nu; k++) {
			split(use[k], a, SUBSEP)
			if ((a[2] in def) && def[a[2]] != a[1]) edge[a[1], def[a[2]]] = 1
		}
		n = 0
		for (f in files) name[++n] = f
		for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) r[i, j] = ((name[i], name[j]) in edge)
		for (k = 1; k <= n; k++) for (i = 1; i <= n; i++) if (r[i, k]) for (j = 1; j <= n; j++) if (r[k, j]) r[i, j] = 1
		for (i = 1; i <= n; i++) {
			if (seen[i]) continue
			s = ""; m = 0
			for (j = 1; j <= n; j++)
				if (j == i || (r[i, j] && r[j, i])) { s = s " " name[j]; seen[j] = 1; m++ }
			if (m > 1) print m " files:" s
		}
	}'
}

check_circles() {
	local what=$1
	shift
	if [ $# -eq 0 ]; then
		fail "$what: no objects found (build first)"
		return
	fi
	local out
	out=$(circles "$@")
	if [ -z "$out" ]; then
		ok "$what: no import circles among $# files"
	else
		fail "$what: import circles"
		echo "$out" | sed 's/^/  /'
	fi
}

mapfile -t glue < <(find src -name '*.o' -not -path 'src/core/*' | sort)
mapfile -t core < <(find src/core -name '*.o' | sort)
mapfile -t kern < <(find kernels -name '*.o' -not -name '*_prof.o' -not -name nocuda.o | sort)
check_circles glue "${glue[@]}"
check_circles core "${core[@]}"
if [ ${#kern[@]} -gt 0 ]; then
	check_circles kernels "${kern[@]}"
else
	ok "kernels: built without CUDA (kernels/nocuda.c alone)"
fi

if [ -f gpujoin.so ]; then
	bad=$(nm -D --defined-only gpujoin.so | awk '{print $3}' |
		grep -E '^(gj_oracle_|gj_gpu_bruteforce|gj_gpu_measure_ceilings)' | tr '\n' ' ')
	if [ -z "$bad" ]; then
		ok "gpujoin.so exports no oracle or benchmark code"
	else
		fail "gpujoin.so exports test code: $bad"
	fi
else
	fail "gpujoin.so not built"
fi

big=$(find src -name '*.[ch]' -print0 | xargs -0 wc -l | awk '$2 != "total" && $1 > 1200 {print $2 " (" $1 " lines)"}')
if [ -z "$big" ]; then
	ok "no file under src/ has more than 1,200 lines"
else
	fail "files under src/ above 1,200 lines: $big"
fi

# quoted includes of the core and the kernels
pgh=""
for f in src/core/*.[ch] kernels/*.c kernels/*.h kernels/*.cu kernels/*.cuh; do
	[ -f "$f" ] || continue
	dir=$(dirname "$f")
	for inc in $(sed -n 's/^#include "\(.*\)".*/\1/p' "$f"); do
		b=$(basename "$inc")
		if [ ! -f "$dir/$inc" ] && [ ! -f "src/core/$b" ] && [ ! -f "kernels/$b" ]; then
			pgh="$pgh $f:$inc"
		fi
	done
	grep -qE '^#include <(postgres|fmgr|utils/|access/|catalog/|nodes/|executor/)' "$f" && pgh="$pgh $f"
done
if [ -z "$pgh" ]; then
	ok "the core and the kernels include no PostgreSQL header"
else
	fail "headers from outside the core and the kernels:$pgh"
fi

docs=$(ls README.md docs/*.md 2>/dev/null)
outside=$(grep -nE '\.\./shared|\.\./\.\./' $docs 2>/dev/null)
if [ -z "$outside" ]; then
	ok "the documentation names no path outside the repository"
else
	fail "the documentation names paths outside the repository"
	echo "$outside" | sed 's/^/  /'
fi

echo "layout: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
