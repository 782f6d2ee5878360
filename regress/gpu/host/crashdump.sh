#!/usr/bin/env bash
# Diagnostic for the SIGBUS at backend exit (README, "Known issues"): runs the
# long GPU session of regress/gpu/host/bench.sql GJ_CRASH_RUNS times (default
# 2) on a server started with GJ_FAULT_TRACE=1 (src/fault_trace.c: the
# stages of exit with wall-clock times; for a fault the thread, the address,
# its mapping and a backtrace, all in the server log) and log_disconnections
# on.  With GJ_CRASH_CORE=1 the server may dump core, whose stacks cuda-gdb
# then prints (the GPU host has no gdb).  Extra server environment:
# GJ_CRASH_ENV (e.g. GJ_CUDA_TEARDOWN=1).
# Run from the project root on the GPU host (carry .gpuhost).
. regress/gpu/host/pg_up.sh >/dev/null
OUT=${OUT:-/tmp}
runs=${GJ_CRASH_RUNS:-2}
mkdir -p /tmp/cores && chmod 1777 /tmp/cores
echo '/tmp/cores/core.%e.%p' > /proc/sys/kernel/core_pattern 2>/dev/null || echo "cannot set core_pattern: $(cat /proc/sys/kernel/core_pattern)"
ulimit -c unlimited
core=; [ -n "${GJ_CRASH_CORE:-}" ] && core=-c
grep -q '^log_disconnections' /tmp/gj-pgdata/postgresql.conf || echo "log_disconnections = on" >> /tmp/gj-pgdata/postgresql.conf
su pgrun -c "ulimit -c unlimited; GJ_FAULT_TRACE=1 ${GJ_CRASH_ENV:-} LD_LIBRARY_PATH=$LD_LIBRARY_PATH $GJ_PGBIN/pg_ctl -D /tmp/gj-pgdata $core -l /tmp/gj-pg.log -t 300 -w restart" >/dev/null
for i in $(seq 60); do pg_isready -q && break; sleep 1; done
df -h /dev/shm | tail -1
psql -qc "CREATE DATABASE gj_regress" postgres 2>/dev/null
for r in $(seq "$runs"); do
	before=$(grep -c "terminated by signal" /tmp/gj-pg.log)
	psql -X -f regress/gpu/host/bench.sql gj_regress > "$OUT/crash_bench_$r.txt" 2>&1
	sleep 2
	for i in $(seq 120); do pg_isready -q && break; sleep 1; done
	echo "crash run $r: $(( $(grep -c "terminated by signal" /tmp/gj-pg.log) - before )) crashed backends, $(grep -c '^ [1-7] ' "$OUT/crash_bench_$r.txt") result rows"
done
grep -n "terminated by signal" /tmp/gj-pg.log | tee "$OUT/crash_lines.txt"
grep -n -A40 "gpujoin fault trace: pid [0-9]* thread" /tmp/gj-pg.log | head -80 | tee -a "$OUT/crash_lines.txt"
# the exit stages of the crashed backends
for pid in $(grep -o "PID [0-9]*) was terminated by signal" /tmp/gj-pg.log | awk '{print $2}' | tr -d ')'); do
	grep -E "pid $pid |\[$pid\]" /tmp/gj-pg.log | tail -12 | tee -a "$OUT/crash_lines.txt"
done
ls -la /tmp/cores
for c in /tmp/cores/core.*; do
	[ -f "$c" ] || continue
	cuda-gdb -batch -ex "info threads" -ex "thread apply all bt 30" -ex "info sharedlibrary" \
		"$GJ_PGBIN/postgres" "$c" > "$OUT/bt.$(basename "$c").txt" 2>&1
	head -150 "$OUT/bt.$(basename "$c").txt"
	break
done
cp /tmp/gj-pg.log "$OUT/crash_server.log"
