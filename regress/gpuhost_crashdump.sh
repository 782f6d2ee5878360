#!/usr/bin/env bash
# Diagnostic for the SIGBUS at backend exit (README, "Known issues"): runs the
# long GPU session of regress/gpuhost_bench.sql on a server started with
# GJ_FAULT_TRACE=1 (src/fault_trace.c: the faulting address, its mapping and
# a backtrace go to the server log) and, with GJ_CRASH_CORE=1, allowed to
# dump core, whose stacks cuda-gdb then prints (the GPU host has no gdb).
# Run from the project root on the GPU host (carry .gpuhost).
. .gpuhost/pg-up.sh >/dev/null
OUT=${OUT:-/tmp}
mkdir -p /tmp/cores && chmod 1777 /tmp/cores
echo '/tmp/cores/core.%e.%p' > /proc/sys/kernel/core_pattern 2>/dev/null || echo "cannot set core_pattern: $(cat /proc/sys/kernel/core_pattern)"
ulimit -c unlimited
core=; [ -n "${GJ_CRASH_CORE:-}" ] && core=-c
su pgrun -c "ulimit -c unlimited; GJ_FAULT_TRACE=1 LD_LIBRARY_PATH=$LD_LIBRARY_PATH $GJ_PGBIN/pg_ctl -D /tmp/gj-pgdata $core -l /tmp/gj-pg.log -w restart" >/dev/null
df -h /dev/shm | tail -1
# GJ_CRASH_PRE=pg: the pg_regress step first, as in the runs that crashed
[ -n "${GJ_CRASH_PRE:-}" ] && GJ_STEPS=$GJ_CRASH_PRE bash regress/gpuhost_run.sh > "$OUT/crash_pre.txt" 2>&1
psql -qc "CREATE DATABASE gj_regress" postgres 2>/dev/null
psql -X -f regress/gpuhost_bench.sql gj_regress > "$OUT/crash_bench.txt" 2>&1
sleep 2
df -h /dev/shm | tail -1
grep -n "terminated by signal" /tmp/gj-pg.log | tee "$OUT/crash_lines.txt"
grep -n -A40 "gpujoin fault trace: pid [0-9]* signal" /tmp/gj-pg.log | head -80 | tee -a "$OUT/crash_lines.txt"
grep -c "gpujoin fault trace: pid [0-9]* atexit" /tmp/gj-pg.log | sed 's/^/backends that reached atexit: /'
ls -la /tmp/cores
for c in /tmp/cores/core.*; do
	[ -f "$c" ] || continue
	cuda-gdb -batch -ex "info threads" -ex "thread apply all bt 30" -ex "info sharedlibrary" \
		"$GJ_PGBIN/postgres" "$c" > "$OUT/bt.$(basename "$c").txt" 2>&1
	head -150 "$OUT/bt.$(basename "$c").txt"
	break
done
cp /tmp/gj-pg.log "$OUT/crash_server.log"
