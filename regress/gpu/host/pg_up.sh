# Source this on the GPU host instead of .gpuhost/pg-up.sh (from the project root).
# pg-up.sh copies the staged libraries over the installed ones with cp, which
# rewrites a file in place: a backend still running with gpujoin.so mapped then
# dies with SIGBUS on the next page it reads (seen 2026-11-25: a backend whose
# psql a timeout had killed, 160 ms after the next step's copy).  Unlinking the
# installed files first leaves running backends their old mapping, and the copy
# makes new files, as install(1) does.
rm -f /opt/pgx/usr/lib/postgresql/15/lib/gpujoin.so /opt/pgx/usr/lib/postgresql/15/lib/vector.so
. .gpuhost/pg-up.sh
