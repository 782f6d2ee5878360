# gpujoin: a PGXS extension with a pure-C core and optional CUDA kernels.
#
#   make             build (CUDA kernels too when nvcc is found)
#   make install     install into the PostgreSQL that pg_config names
#   make test        everything: core unit tests + pg_regress on a throwaway cluster
#   make demo        build, install and run a sample join on a throwaway cluster

EXTENSION = gpujoin
EXTVERSION = 0.6

MODULE_big = gpujoin
CORE_OBJS = src/core/points.o src/core/clock.o src/core/grid.o \
	src/core/neighbours.o src/core/pair_queue.o src/core/cpu_selfjoin.o \
	src/core/cpu_probe.o src/core/cpu_knn.o src/core/oracle.o \
	src/core/density.o src/core/density_boxes.o src/core/lattice.o src/core/cpu_lists.o src/core/sort.o src/core/engine.o \
	src/core/normalize.o src/core/tile_distances.o src/core/tile_plan.o src/core/cpu_tiles.o \
	src/core/pair_rows.o src/core/block_index.o src/core/big_buffers.o \
	src/core/knn_contrast.o src/core/slabs.o src/core/slab_density.o src/core/slab_cpu.o \
	src/core/geodetic.o src/core/shared_rows.o
OBJS = src/gpujoin.o src/input.o src/input_parallel.o src/resources.o src/fault_trace.o src/job.o src/functions.o \
	src/custom_scan.o src/support.o src/pgvector.o src/postgis.o src/geography.o $(CORE_OBJS)

# The install script of this version, built from sql/gpujoin.sql; the
# upgrade chain; and the frozen 0.1 script, so that upgrades can be tested.
DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql
DATA = sql/$(EXTENSION)--0.1.sql sql/$(EXTENSION)--0.1--0.2.sql \
	sql/$(EXTENSION)--0.2--0.3.sql sql/$(EXTENSION)--0.3--0.4.sql \
	sql/$(EXTENSION)--0.4--0.5.sql sql/$(EXTENSION)--0.5--0.6.sql
EXTRA_CLEAN = kernels/ceilings.o regress/test_core regress/test_join regress/test_geodetic regress/test_tiles regress/gpu_tiles regress/test_probe regress/test_density regress/gpu_density regress/test_knn regress/bench_knn regress/gpu_knn regress/gpu_knn_prof regress/bench_core regress/bench_hostmem regress/bench_shm regress/gpu_check regress/bench_gpu

REGRESS = basic errors nulls boundary arrays views sqlform crosscheck eps_join \
	privileges cancel knn knn_crosscheck streaming restrict estimates \
	readonly upgrade clustering clustering_postgis postgis_input geography parallel_read highdim
REGRESS_OPTS = --inputdir=$(srcdir)
# pgvector's input test, where pgvector is installed (regress/run_tests.sh
# sets this when it finds the extension)
ifdef WITH_PGVECTOR
REGRESS += pgvector
endif

# No FMA contraction anywhere: distances must round identically everywhere.
PG_CFLAGS = -ffp-contract=off -pthread -Wno-declaration-after-statement
PG_CPPFLAGS = -I$(srcdir)/src
SHLIB_LINK = -lm -lpthread

# CUDA: found on PATH or in /usr/local/cuda; the runtime is linked
# statically so the library loads where no driver is installed.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifneq ($(strip $(NVCC)),)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCC_FLAGS = -O3 -std=c++17 -Xcompiler -fPIC -Xcompiler -fno-strict-aliasing \
	--fmad=false $(CUDA_ARCH)
OBJS += kernels/device.o kernels/grid.o kernels/selfjoin.o kernels/bruteforce.o kernels/knn.o \
	kernels/density.o kernels/density_boxes.o kernels/pinned.o kernels/pair_driver.o \
	kernels/tiles.o kernels/knn_tiles.o kernels/order.o kernels/lists.o kernels/lattice.o
SHLIB_LINK += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
else
OBJS += kernels/nocuda.o
endif

# LLVM bitcode for JIT is of no use here and cannot be made from .cu files.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

kernels/%.o: kernels/%.cu kernels/gj_cuda.h kernels/gpu_common.cuh kernels/tile_math.cuh kernels/density_boxes.cuh kernels/density_run.cuh src/core/gj_core.h src/core/knn_search.h src/core/block_bounds.h src/core/density_boxes.h src/core/lattice.h
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@

$(OBJS): src/core/gj_core.h src/core/knn_search.h src/core/block_bounds.h src/core/density_boxes.h src/core/lattice.h
# (reader.h embeds shared_rows.h's struct: every user must see its size change)
src/*.o: src/gpujoin.h src/reader.h kernels/gj_cuda.h src/core/shared_rows.h
src/core/shared_rows.o: src/core/shared_rows.h

sql/$(EXTENSION)--$(EXTVERSION).sql: sql/$(EXTENSION).sql
	cp $< $@

# Core unit tests: no PostgreSQL involved.
CORE_SRCS = $(CORE_OBJS:.o=.c)
CORE_HDRS = $(wildcard src/core/*.h)
regress/test_core: regress/test_core.c regress/datagen.c regress/datagen.h regress/pairset.c regress/pairset.h $(CORE_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu99 -O2 -g -Wall -Wextra -ffp-contract=off -pthread -o $@ \
		regress/test_core.c regress/datagen.c regress/pairset.c $(CORE_SRCS) -lm

# Restricted joins, estimates, the interrupt hook.
regress/test_probe: regress/test_probe.c regress/datagen.c regress/datagen.h regress/pairset.c regress/pairset.h $(CORE_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu99 -O2 -g -Wall -Wextra -ffp-contract=off -pthread -o $@ \
		regress/test_probe.c regress/datagen.c regress/pairset.c $(CORE_SRCS) -lm

# Many dimensions: the tile join, the shapes built from its pairs, cosine.
regress/test_tiles: regress/test_tiles.c regress/datagen.c regress/datagen.h regress/pairset.c regress/pairset.h regress/knnset.c regress/knnset.h $(CORE_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu99 -O2 -g -Wall -Wextra -ffp-contract=off -pthread -o $@ \
		regress/test_tiles.c regress/datagen.c regress/pairset.c regress/knnset.c $(CORE_SRCS) -lm

# Joins of two sets: pairs and counts.
regress/test_join: regress/test_join.c regress/datagen.c regress/datagen.h regress/pairset.c regress/pairset.h $(CORE_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu99 -O2 -g -Wall -Wextra -ffp-contract=off -pthread -o $@ \
		regress/test_join.c regress/datagen.c regress/pairset.c $(CORE_SRCS) -lm

# Geography: earth-centred points and the chord bounds.
regress/test_geodetic: regress/test_geodetic.c $(CORE_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu99 -O2 -g -Wall -Wextra -ffp-contract=off -pthread -o $@ \
		regress/test_geodetic.c $(CORE_SRCS) -lm

# Neighbour counts, neighbour lists, DBSCAN.
regress/test_density: regress/test_density.c regress/datagen.c regress/datagen.h $(CORE_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu99 -O2 -g -Wall -Wextra -ffp-contract=off -pthread -o $@ \
		regress/test_density.c regress/datagen.c $(CORE_SRCS) -lm

.PHONY: test demo unittest
unittest: regress/test_core
	./regress/test_core

test:
	./regress/run_tests.sh

demo:
	./regress/demo.sh

# Benchmarks (numbers for the README and the issue notes).
regress/bench_hostmem: regress/bench_hostmem.c regress/datagen.c regress/datagen.h $(CORE_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu99 -O2 -g -Wall -Wextra -ffp-contract=off -pthread -o $@ \
		regress/bench_hostmem.c regress/datagen.c $(CORE_SRCS) -lm
regress/bench_shm: regress/bench_shm.c
	$(CC) -std=gnu99 -O2 -g -Wall -Wextra -pthread -o $@ regress/bench_shm.c
regress/bench_core: regress/bench_core.c regress/datagen.c regress/datagen.h $(CORE_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu99 -O2 -g -Wall -ffp-contract=off -pthread -o $@ \
		regress/bench_core.c regress/datagen.c $(CORE_SRCS) -lm

# GPU check and GPU benchmark (need nvcc to build, a GPU to run).
KERNEL_OBJS = kernels/device.o kernels/grid.o kernels/selfjoin.o kernels/bruteforce.o kernels/knn.o kernels/density.o \
	kernels/density_boxes.o kernels/pinned.o kernels/pair_driver.o kernels/tiles.o kernels/knn_tiles.o kernels/ceilings.o \
	kernels/order.o kernels/lists.o kernels/lattice.o
GPU_LIBS = -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lm -lstdc++
regress/gpu_check: regress/gpu_check.c regress/datagen.c regress/pairset.c $(CORE_SRCS) $(CORE_HDRS) $(KERNEL_OBJS)
	$(CC) -std=gnu99 -O2 -g -Wall -ffp-contract=off -pthread -o $@ \
		regress/gpu_check.c regress/datagen.c regress/pairset.c $(CORE_SRCS) $(KERNEL_OBJS) $(GPU_LIBS)
regress/bench_gpu: regress/bench_gpu.c regress/datagen.c $(CORE_SRCS) $(CORE_HDRS) $(KERNEL_OBJS)
	$(CC) -std=gnu99 -O2 -g -Wall -ffp-contract=off -pthread -o $@ \
		regress/bench_gpu.c regress/datagen.c $(CORE_SRCS) $(KERNEL_OBJS) $(GPU_LIBS)

regress/gpu_density: regress/gpu_density.c regress/datagen.c $(CORE_SRCS) $(CORE_HDRS) $(KERNEL_OBJS)
	$(CC) -std=gnu99 -O2 -g -Wall -ffp-contract=off -pthread -o $@ \
		regress/gpu_density.c regress/datagen.c $(CORE_SRCS) $(KERNEL_OBJS) $(GPU_LIBS)

regress/gpu_tiles: regress/gpu_tiles.c regress/datagen.c regress/pairset.c $(CORE_SRCS) $(CORE_HDRS) $(KERNEL_OBJS)
	$(CC) -std=gnu99 -O2 -g -Wall -ffp-contract=off -pthread -o $@ \
		regress/gpu_tiles.c regress/datagen.c regress/pairset.c $(CORE_SRCS) $(KERNEL_OBJS) $(GPU_LIBS)

# kNN unit tests (CPU engine vs the sorting oracle).
regress/test_knn: regress/test_knn.c regress/knnset.c regress/knnset.h regress/datagen.c regress/datagen.h $(CORE_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu99 -O2 -g -Wall -Wextra -ffp-contract=off -pthread -o $@ \
		regress/test_knn.c regress/knnset.c regress/datagen.c $(CORE_SRCS) -lm
regress/bench_knn: regress/bench_knn.c regress/knnset.c regress/datagen.c $(CORE_SRCS) $(CORE_HDRS)
	$(CC) -std=gnu99 -O2 -g -Wall -ffp-contract=off -pthread -o $@ \
		regress/bench_knn.c regress/knnset.c regress/datagen.c $(CORE_SRCS) -lm
regress/gpu_knn: regress/gpu_knn.c regress/knnset.c regress/datagen.c $(CORE_SRCS) $(CORE_HDRS) $(KERNEL_OBJS)
	$(CC) -std=gnu99 -O2 -g -Wall -ffp-contract=off -pthread -o $@ \
		regress/gpu_knn.c regress/knnset.c regress/datagen.c $(CORE_SRCS) $(KERNEL_OBJS) $(GPU_LIBS)

# The same with the kNN tile kernel's cycle counters (KT_PROFILE): where its time goes.
regress/gpu_knn_prof: regress/gpu_knn.c regress/knnset.c regress/datagen.c $(CORE_SRCS) $(CORE_HDRS) $(KERNEL_OBJS)
	$(NVCC) $(NVCC_FLAGS) -DKT_PROFILE -c kernels/knn_tiles.cu -o kernels/knn_tiles_prof.o
	$(CC) -std=gnu99 -O2 -g -Wall -ffp-contract=off -pthread -DKT_PROFILE -o $@ \
		regress/gpu_knn.c regress/knnset.c regress/datagen.c $(CORE_SRCS) \
		$(filter-out kernels/knn_tiles.o,$(KERNEL_OBJS)) kernels/knn_tiles_prof.o $(GPU_LIBS)
