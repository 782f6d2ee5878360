# gpujoin: a PGXS extension with a pure-C core and optional CUDA kernels.
#
#   make             build (CUDA kernels too when nvcc is found)
#   make install     install into the PostgreSQL that pg_config names
#   make test        everything: core unit tests + pg_regress on a throwaway cluster
#   make demo        build, install and run a sample join on a throwaway cluster
#
# Three parts, each built once: the core (src/core, pure C) as a static
# library, the kernels (kernels/, CUDA behind kernels/gj_cuda.h), and the
# PostgreSQL glue (src/*) around them, linked into gpujoin.so.  The unit
# tests, GPU checks and benchmarks under regress/ link the same library.

EXTENSION = gpujoin
EXTVERSION = 0.14

MODULE_big = gpujoin

# The glue, by part (docs/contributing.md says what each file does).
GLUE_OBJS = src/module.o src/machine.o src/errors.o src/resources.o src/fault_trace.o src/progress.o \
	src/api/functions.o src/api/args.o src/api/entry_points.o src/api/custom_scan.o \
	src/api/support.o src/api/info.o \
	src/job/job.o src/job/plan.o src/job/settings.o src/job/run_common.o src/job/run_eps.o \
	src/job/run_tiles.o src/job/run_rows.o src/job/run_knn.o src/job/run_slabs.o \
	src/job/emit.o src/job/geo.o src/job/geo_postgis.o \
	src/read/spi_read.o src/read/relation.o src/read/rows.o src/read/sizes.o src/read/guard.o \
	src/read/parallel_read.o src/read/postgis.o src/read/pgvector.o src/read/keys.o src/read/row_keys.o \
	src/join/clause.o src/join/self.o src/join/path.o src/join/lateral.o src/join/node.o src/join/exec.o \
	src/join/pairs.o src/join/knn.o src/join/knn_key.o src/join/tid_read.o src/join/nulling.o \
	src/dist/citus.o src/dist/strips.o src/dist/strip_tables.o src/dist/dist_knn.o src/dist/shard_knn.o src/dist/match.o src/dist/dist_dbscan.o src/dist/dist_join.o \
	src/dist/plain_sql.o src/dist/plain_pairs.o src/dist/plain_knn.o src/dist/plain_query.o src/dist/lateral_strip.o src/dist/bound_filter.o

# The core: what the extension and every test program link.
CORE_OBJS = src/core/points.o src/core/clock.o src/core/threads.o src/core/grid.o \
	src/core/neighbours.o src/core/pair_queue.o src/core/engine.o src/core/sort.o \
	src/core/big_buffers.o src/core/normalize.o src/core/cpu_selfjoin.o src/core/cpu_probe.o \
	src/core/cpu_knn.o src/core/knn_contrast.o src/core/density.o src/core/density_boxes.o \
	src/core/lattice.o src/core/cpu_lists.o src/core/tile_distances.o src/core/tile_plan.o \
	src/core/cpu_tiles.o src/core/pair_rows.o src/core/block_index.o src/core/slabs.o \
	src/core/slab_density.o src/core/slab_cpu.o src/core/geodetic.o src/core/shared_rows.o \
	src/core/team.o
CORE_LIB = src/core/libgjcore.a

OBJS = $(GLUE_OBJS)

# The install script of this version, built from sql/gpujoin.sql; the
# upgrade chain; and the frozen 0.1 script, so that upgrades can be tested.
DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql
DATA = sql/$(EXTENSION)--0.1.sql sql/$(EXTENSION)--0.1--0.2.sql \
	sql/$(EXTENSION)--0.2--0.3.sql sql/$(EXTENSION)--0.3--0.4.sql \
	sql/$(EXTENSION)--0.4--0.5.sql sql/$(EXTENSION)--0.5--0.6.sql \
	sql/$(EXTENSION)--0.6--0.7.sql sql/$(EXTENSION)--0.7--0.8.sql \
	sql/$(EXTENSION)--0.8--0.9.sql sql/$(EXTENSION)--0.9--0.10.sql \
	sql/$(EXTENSION)--0.10--0.11.sql sql/$(EXTENSION)--0.11--0.12.sql \
	sql/$(EXTENSION)--0.12--0.13.sql sql/$(EXTENSION)--0.13--0.14.sql

REGRESS = basic errors nulls boundary arrays views sqlform crosscheck eps_join \
	privileges cancel knn knn_crosscheck streaming restrict estimates \
	readonly upgrade progress keys clustering clustering_postgis postgis_input geography parallel_read highdim \
	plain_join plain_join_cube
REGRESS_OPTS = --inputdir=$(srcdir)
# pgvector's input test, where pgvector is installed (regress/run_tests.sh
# sets this when it finds the extension)
ifdef WITH_PGVECTOR
REGRESS += pgvector plain_join_pgvector
endif
# the tests that need PostGIS, left out where it is not installed
# (regress/run_tests.sh: PostgreSQL 18, which Debian has no PostGIS for)
REGRESS_POSTGIS = clustering_postgis postgis_input geography plain_join
ifdef WITHOUT_POSTGIS
REGRESS := $(filter-out $(REGRESS_POSTGIS),$(REGRESS))
endif

# No FMA contraction anywhere: distances must round identically everywhere.
PG_CFLAGS = -ffp-contract=off -pthread -Wno-declaration-after-statement
PG_CPPFLAGS = -I$(srcdir)/src -I$(srcdir)/src/core -I$(srcdir)/kernels
# Each C object's headers, written beside it (PGXS tracks none): a struct
# changed in a header rebuilds every object that uses it (an object left
# with the old layout overran a caller's stack).
PG_CPPFLAGS += -MMD -MP
SHLIB_LINK = $(CORE_LIB) -lm -lpthread

# CUDA: found on PATH or in /usr/local/cuda; the runtime is linked
# statically so the library loads where no driver is installed.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
KERNEL_OBJS = kernels/device.o kernels/grid.o kernels/selfjoin.o kernels/knn.o \
	kernels/density.o kernels/density_boxes.o kernels/pinned.o kernels/pair_driver.o \
	kernels/tiles.o kernels/knn_tiles.o kernels/order.o kernels/lists.o kernels/lattice.o \
	kernels/team.o
ifneq ($(strip $(NVCC)),)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCC_FLAGS = -O3 -std=c++17 -Xcompiler -fPIC -Xcompiler -fno-strict-aliasing \
	--fmad=false $(CUDA_ARCH) -I$(srcdir)/src/core -I$(srcdir)/kernels
OBJS += $(KERNEL_OBJS)
SHLIB_LINK += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
else
OBJS += kernels/nocuda.o
endif

# LLVM bitcode for JIT is of no use here and cannot be made from .cu files.
override with_llvm = no

# Test programs (regress/unit, regress/gpu, regress/bench).
UNIT_TESTS = regress/unit/test_core regress/unit/test_probe regress/unit/test_join \
	regress/unit/test_knn regress/unit/test_density regress/unit/test_tiles \
	regress/unit/test_geodetic regress/unit/test_team
GPU_PROGRAMS = regress/gpu/gpu_check regress/gpu/gpu_density regress/gpu/gpu_tiles regress/gpu/gpu_team \
	regress/gpu/gpu_knn regress/bench/bench_gpu
CPU_BENCHES = regress/bench/bench_core regress/bench/bench_knn regress/bench/bench_hostmem
TEST_SUPPORT = regress/common/datagen.o regress/common/pairset.o regress/common/knnset.o \
	regress/common/oracle.o
BENCH_KERNELS = regress/gpu/bruteforce.o regress/gpu/ceilings.o

EXTRA_CLEAN = kernels/.flavour $(CORE_LIB) $(UNIT_TESTS) $(GPU_PROGRAMS) $(CPU_BENCHES) regress/gpu/gpu_knn_prof \
	regress/bench/bench_shm $(TEST_SUPPORT) $(BENCH_KERNELS) kernels/knn_tiles_prof.o \
	$(CORE_OBJS) kernels/*.o $(GLUE_OBJS:.o=.d) $(CORE_OBJS:.o=.d)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
-include $(wildcard $(GLUE_OBJS:.o=.d) $(CORE_OBJS:.o=.d))

# --- the core library -----------------------------------------------------

CORE_HDRS = $(wildcard $(srcdir)/src/core/*.h)
$(CORE_OBJS): $(CORE_HDRS)
$(CORE_LIB): $(CORE_OBJS)
	rm -f $@
	$(AR) crs $@ $^
$(shlib): $(CORE_LIB)

# --- the glue and the kernels ----------------------------------------------

GLUE_HDRS = $(wildcard $(srcdir)/src/*.h $(srcdir)/src/api/*.h $(srcdir)/src/job/*.h \
	$(srcdir)/src/read/*.h $(srcdir)/src/join/*.h) $(srcdir)/src/core/gj_core.h \
	$(srcdir)/src/core/shared_rows.h $(srcdir)/kernels/gj_cuda.h
$(GLUE_OBJS): $(GLUE_HDRS)

# gpujoin.so links the kernels or kernels/nocuda.o: relink it when that
# choice changes (a build without nvcc, then one with it, in one tree).
KERNELS_FLAVOUR = $(if $(strip $(NVCC)),cuda $(NVCC),none)
kernels/.flavour: FORCE
	@echo '$(KERNELS_FLAVOUR)' | cmp -s - $@ || echo '$(KERNELS_FLAVOUR)' > $@
$(shlib): kernels/.flavour
.PHONY: FORCE

KERNEL_HDRS = $(wildcard $(srcdir)/kernels/*.h $(srcdir)/kernels/*.cuh) $(CORE_HDRS)
kernels/%.o: kernels/%.cu $(KERNEL_HDRS)
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@
kernels/nocuda.o: $(srcdir)/kernels/gj_cuda.h $(srcdir)/src/core/gj_core.h

sql/$(EXTENSION)--$(EXTVERSION).sql: sql/$(EXTENSION).sql
	cp $< $@

# --- tests and benchmarks ---------------------------------------------------

TEST_CFLAGS = -std=gnu99 -O2 -g -Wall -Wextra -ffp-contract=off -pthread \
	-I$(srcdir)/src/core -I$(srcdir)/kernels -I$(srcdir)/regress/common -I$(srcdir)/regress/gpu
TEST_HDRS = $(wildcard $(srcdir)/regress/common/*.h) $(CORE_HDRS)

regress/common/%.o: regress/common/%.c $(TEST_HDRS)
	$(CC) $(TEST_CFLAGS) -c -o $@ $<

# Core unit tests: no PostgreSQL involved; each ends with "<name>: N passed, N failed".
$(UNIT_TESTS): regress/unit/%: regress/unit/%.c $(TEST_SUPPORT) $(CORE_LIB) $(TEST_HDRS)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(TEST_SUPPORT) $(CORE_LIB) -lm

# CPU benchmarks (numbers for docs/performance.md).
$(CPU_BENCHES): regress/bench/%: regress/bench/%.c $(TEST_SUPPORT) $(CORE_LIB) $(TEST_HDRS)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(TEST_SUPPORT) $(CORE_LIB) -lm
regress/bench/bench_shm: regress/bench/bench_shm.c
	$(CC) -std=gnu99 -O2 -g -Wall -Wextra -pthread -o $@ $<

# GPU checks and benchmarks (need nvcc to build, a GPU to run): the
# engine's kernels, the benchmark-only kernels, the core.
GPU_LIBS = -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lm -lstdc++
regress/gpu/%.o: regress/gpu/%.cu $(KERNEL_HDRS) $(srcdir)/regress/gpu/gpu_bench.h
	$(NVCC) $(NVCC_FLAGS) -I$(srcdir)/regress/gpu -c $< -o $@
$(GPU_PROGRAMS): %: %.c $(TEST_SUPPORT) $(KERNEL_OBJS) $(BENCH_KERNELS) $(CORE_LIB) $(TEST_HDRS)
	$(CC) $(filter-out -Wextra,$(TEST_CFLAGS)) -o $@ $< $(TEST_SUPPORT) $(KERNEL_OBJS) $(BENCH_KERNELS) \
		$(CORE_LIB) $(GPU_LIBS)

# gpu_knn with the kNN tile kernel's cycle counters (KT_PROFILE): where its time goes.
regress/gpu/gpu_knn_prof: regress/gpu/gpu_knn.c $(TEST_SUPPORT) $(KERNEL_OBJS) $(BENCH_KERNELS) $(CORE_LIB)
	$(NVCC) $(NVCC_FLAGS) -DKT_PROFILE -c kernels/knn_tiles.cu -o kernels/knn_tiles_prof.o
	$(CC) $(filter-out -Wextra,$(TEST_CFLAGS)) -DKT_PROFILE -o $@ $< $(TEST_SUPPORT) \
		$(filter-out kernels/knn_tiles.o,$(KERNEL_OBJS)) kernels/knn_tiles_prof.o \
		$(BENCH_KERNELS) $(CORE_LIB) $(GPU_LIBS)

.PHONY: test demo unittest deb
unittest: regress/unit/test_core
	./regress/unit/test_core

test:
	./regress/run_tests.sh

demo:
	./regress/demo.sh

# Debian packages: postgresql-NN-gpujoin for each installed server version
# that debian/pgversions allows, built by pg_buildext in a copy of the tree
# (needs debhelper and postgresql-server-dev-all), into DEB_DIR.
# DEB_BUILD_FLAGS=-nc keeps what this tree built already (its objects,
# built against the same server's headers) instead of cleaning first.
DEB_DIR ?= $(CURDIR)/deb
DEB_BUILD_FLAGS ?=
deb:
	rm -rf $(DEB_DIR)/build && mkdir -p $(DEB_DIR)/build/gpujoin
	tar --exclude=./.git --exclude=./deb --exclude=./results -cf - . | tar -C $(DEB_DIR)/build/gpujoin -xf -
	cd $(DEB_DIR)/build/gpujoin && DEB_BUILD_OPTIONS="parallel=$$(nproc) $$DEB_BUILD_OPTIONS" \
		dpkg-buildpackage -us -uc -b $(DEB_BUILD_FLAGS)
	mv $(DEB_DIR)/build/*.deb $(DEB_DIR)/ && rm -rf $(DEB_DIR)/build
	ls $(DEB_DIR)/*.deb
