# ncclscope — build, test, demo. `make` builds everything; `make test` runs the suite and ends
# with "N passed, N failed"; `make demo` traces the bundled example job and prints the report.
# Every source file in a folder is picked up by wildcard: adding a module needs no edit here.
BUILD ?= build
CC ?= cc
OPT ?= -O2
SAN ?=
CFLAGS_COMMON = -std=c11 $(OPT) -g -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE -Iinclude $(SAN)
CUDA_HOME ?= /usr/local/cuda

SHIM_SRC := $(sort $(wildcard shim/*.c))
DEC_ROOMS := base io model analysis render cmd
DEC_SRC := $(sort $(filter-out decoder/cmd/main.c,$(foreach r,$(DEC_ROOMS),$(wildcard decoder/$(r)/*.c))))
DEC_HDR := $(wildcard decoder/*.h) $(foreach r,$(DEC_ROOMS),$(wildcard decoder/$(r)/*.h))
NCCLD_SRC := $(sort $(wildcard tests/doubles/nccl/*.c))
CUDAD_SRC := $(sort $(wildcard tests/doubles/cuda/*.c))
NVMLD_SRC := $(sort $(wildcard tests/doubles/nvml/*.c))
CUPTID_SRC := $(sort $(wildcard tests/doubles/cupti/*.c))
CUDRVD_SRC := $(sort $(wildcard tests/doubles/cudadrv/*.c))
JOB_SRC := $(sort $(wildcard tests/jobs/*.c))
UNIT_SRC := $(sort $(wildcard tests/test_*.c))

SHIM_OBJ := $(SHIM_SRC:%.c=$(BUILD)/obj/%.o)
DEC_OBJ := $(DEC_SRC:%.c=$(BUILD)/obj/%.o)

SHIM := $(BUILD)/libncclscope.so
DECODER := $(BUILD)/ncclscope
DECLIB := $(BUILD)/libncsdecoder.a
DOUBLES := $(if $(NCCLD_SRC),$(BUILD)/doubles/libnccl.so.2 $(BUILD)/doubles-old/libnccl.so.2 $(BUILD)/doubles/libnccl_static.a) \
           $(if $(CUDAD_SRC),$(BUILD)/doubles/libcudart.so.13) \
           $(if $(NVMLD_SRC),$(BUILD)/doubles/libnvidia-ml.so.1) \
           $(if $(CUPTID_SRC),$(BUILD)/doubles/libcupti.so.13) \
           $(if $(CUDRVD_SRC),$(BUILD)/doubles/libcuda.so.1)
JOBS := $(JOB_SRC:tests/jobs/%.c=$(BUILD)/tests/%) $(if $(NCCLD_SRC),$(BUILD)/tests/static_ddp_job)
UNITS := $(UNIT_SRC:tests/%.c=$(BUILD)/tests/%)
CHECKERS := $(BUILD)/tests/results_metrics_check

# zstd is linked statically with its symbols hidden; only nccl* leave the shim (exports.map).
SHIM_LIBS = -Wl,--exclude-libs,ALL -l:libzstd.a -ldl -lpthread
SHIM_LDFLAGS = -shared -Wl,--version-script=shim/exports.map -Wl,-z,now -Wl,-z,nodelete

.PHONY: all shim decoder doubles jobs units test demo clean asan tsan bench fuzz deps install uninstall deb soak
all: shim decoder doubles jobs units

shim: $(SHIM)
decoder: $(DECODER)
doubles: $(DOUBLES)
jobs: $(JOBS)
units: $(UNITS) $(CHECKERS)

$(BUILD)/obj/shim/%.o: shim/%.c $(wildcard shim/*.h) $(wildcard include/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -c $< -o $@

$(BUILD)/obj/decoder/%.o: decoder/%.c $(DEC_HDR) $(wildcard include/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Idecoder -c $< -o $@

# The trace reader: the column and record decoders (columns.h, encode.h) are inlined into it as
# short loops run once per value; unrolled, they take about a sixth fewer instructions a record
# (docs/BENCHMARKS-HISTORY.md, "The trace reader").
$(BUILD)/obj/decoder/io/trace.o: CFLAGS_COMMON += -funroll-loops
# metrics' run loop (p2_calls) keeps its state in locals; GCC's SLP vectoriser packs them in pairs
# into vector registers and shuffles them on every call, a fifth more instructions a record.
$(BUILD)/obj/decoder/analysis/metrics.o: CFLAGS_COMMON += -fno-tree-slp-vectorize

$(SHIM): $(SHIM_OBJ) shim/exports.map
	$(CC) $(SAN) $(SHIM_LDFLAGS) -o $@ $(SHIM_OBJ) $(SHIM_LIBS)

$(DECLIB): $(DEC_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(DEC_OBJ)

$(DECODER): $(BUILD)/obj/decoder/cmd/main.o $(DECLIB)
	$(CC) $(SAN) -o $@ $^ -lzstd -lz -lm -lpthread

# CPU test doubles of libnccl.so.2, libcudart.so.13, libnvidia-ml.so.1 and libcupti.so.13
# The CUDA double reads the NVML double's topology file (its devices' names and bus ids) and
# exports its symbols under the real runtime's version node (libcudart.map).
$(BUILD)/doubles/libcudart.so.13: $(CUDAD_SRC) $(wildcard tests/doubles/cuda/*.h) tests/doubles/include/cuda_double.h \
  tests/doubles/nvml/topo_text.c tests/doubles/nvml/topo_text.h tests/doubles/cuda/libcudart.map
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Itests/doubles -fPIC -shared -Wl,-soname,libcudart.so.13 \
	  -Wl,--version-script=tests/doubles/cuda/libcudart.map -o $@ $(CUDAD_SRC) tests/doubles/nvml/topo_text.c -lpthread -lrt

$(BUILD)/doubles/libnccl.so.2: $(NCCLD_SRC) $(wildcard tests/doubles/nccl/*.h) $(wildcard include/nccl_profiler/*.h) $(BUILD)/doubles/libcudart.so.13
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Itests/doubles -fPIC -shared -Wl,-soname,libnccl.so.2 -o $@ $(NCCLD_SRC) \
	  -L$(BUILD)/doubles -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN' -lpthread -lrt

# The same NCCL double as a static archive (NCCL's libnccl_static.a): a job linked against it
# carries NCCL inside its executable, where no interposer reaches (tests/test_static_nccl.sh).
NCCLD_OBJ := $(NCCLD_SRC:%.c=$(BUILD)/obj/static/%.o)
$(BUILD)/obj/static/%.o: %.c $(wildcard tests/doubles/nccl/*.h) $(wildcard include/nccl_profiler/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Itests/doubles -c $< -o $@
$(BUILD)/doubles/libnccl_static.a: $(NCCLD_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(NCCLD_OBJ)

# The same NCCL double exported as an older NCCL (no 2.23-2.28 entry points): what a job on an
# older library sees through dlsym (tests/test_shim_dlsym_absent.sh).
$(BUILD)/doubles-old/libnccl.so.2: $(NCCLD_SRC) $(wildcard tests/doubles/nccl/*.h) tests/doubles/nccl-old/older-nccl.map $(BUILD)/doubles/libcudart.so.13
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Itests/doubles -fPIC -shared -Wl,-soname,libnccl.so.2 -Wl,--version-script=tests/doubles/nccl-old/older-nccl.map \
	  -o $@ $(NCCLD_SRC) -L$(BUILD)/doubles -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN/../doubles' -lpthread -lrt

$(BUILD)/doubles/libcupti.so.13: $(CUPTID_SRC) include/ncclscope/cupti_abi.h $(BUILD)/doubles/libcudart.so.13
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Itests/doubles -fPIC -shared -Wl,-soname,libcupti.so.13 -o $@ $(CUPTID_SRC) \
	  -L$(BUILD)/doubles -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN' -lpthread

# the CUDA driver (libcuda.so.1), as far as tools beside ncclscope need it (the NCCL Inspector)
$(BUILD)/doubles/libcuda.so.1: $(CUDRVD_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $(CUDRVD_SRC)

$(BUILD)/doubles/libnvidia-ml.so.1: $(NVMLD_SRC) $(wildcard tests/doubles/nvml/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Itests/doubles -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $(NVMLD_SRC) -lpthread

# The headers test jobs include (tests/jobs/job_util.h, the doubles' and ncclscope's): a job is
# rebuilt when one changes.
JOB_HDRS := tests/jobs/job_util.h $(wildcard tests/doubles/include/*.h) $(wildcard include/ncclscope/*.h)

# Jobs that reach NCCL only through dlopen + dlsym (tests/jobs/dl_*.c) must not link it.
$(BUILD)/tests/dl_%: tests/jobs/dl_%.c $(DOUBLES) $(JOB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Itests/doubles -o $@ $< -L$(BUILD)/doubles -l:libcudart.so.13 \
	  -Wl,-rpath,'$$ORIGIN/../doubles' -ldl -lpthread -lm

# ddp_job with NCCL linked statically (the CUDA double stays a shared library, as in a JAX or
# TensorFlow build that links NCCL into its own library and loads CUDA's runtime).
$(BUILD)/tests/static_ddp_job: tests/jobs/ddp_job.c $(BUILD)/doubles/libnccl_static.a $(BUILD)/doubles/libcudart.so.13
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Itests/doubles -o $@ $< $(BUILD)/doubles/libnccl_static.a -L$(BUILD)/doubles -l:libcudart.so.13 \
	  -Wl,-rpath,'$$ORIGIN/../doubles' -ldl -lpthread -lrt -lm

# Test jobs link the doubles by soname, exactly as a real job links NCCL and CUDA.
$(BUILD)/tests/%: tests/jobs/%.c $(DOUBLES) $(JOB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Itests/doubles -o $@ $< -L$(BUILD)/doubles -l:libnccl.so.2 -l:libcudart.so.13 \
	  -Wl,-rpath,'$$ORIGIN/../doubles' -lpthread -lm

# Unit tests link the decoder's library. What each includes (headers, and a shim source that a
# test compiles into itself, as test_rowzip does) is listed by the compiler in BUILD/obj/tests/test_X.d: a test
# is rebuilt when any of it changes, not only when the library does.
$(BUILD)/tests/test_%: tests/test_%.c $(DECLIB) tests/check.h
	@mkdir -p $(dir $@) $(BUILD)/obj/tests
	$(CC) $(CFLAGS_COMMON) -MMD -MP -MF $(BUILD)/obj/tests/$(notdir $@).d -Itests -Idecoder -I$(CUDA_HOME)/include -DNCCLSCOPE_CUDA_HOME='"$(CUDA_HOME)"' \
	  -o $@ $< $(DECLIB) -lzstd -lz -lm -lpthread -ldl
-include $(UNITS:$(BUILD)/tests/%=$(BUILD)/obj/tests/%.d)

# Checkers that shell tests run on traces they made (not run alone by tests/run.sh).
$(BUILD)/tests/results_metrics_check: tests/results_metrics_check.c $(DECLIB) tests/check.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Itests -Idecoder -o $@ $< $(DECLIB) -lzstd -lz -lm -lpthread -ldl

# Installs missing Debian packages first (as root; otherwise says what to install).
deps:
	@bash scripts/deps.sh $(if $(filter test,$(MAKECMDGOALS)),--all)

test: deps
	@$(MAKE) --no-print-directory all
	@bash tests/run.sh $(BUILD)

demo: deps
	@echo "building (make all)..."; $(MAKE) -s --no-print-directory all
	@bash scripts/demo.sh $(BUILD)

bench: all
	@bash scripts/bench.sh $(BUILD)

# Long loops that do not fit the suite's time (DEVELOPERS.md "Test times"): the suite's repeated runs at
# their full counts (kill -9, fork, environment, hostile jobs, fuzzing, 4,096-rank pages), then
# vfork + exec right after init and exec of an image, 1,000 runs (scripts/exec-loop.sh;
# SOAK_RUNS to change). scripts/soak.sh lists the counts.
soak: all
	@bash scripts/soak.sh $(BUILD) $(or $(SOAK_RUNS),1000)

# Sanitizer runs of the whole suite (docs/RELIABILITY.md). Every ASan/TSan report of every
# process goes to BUILD/sanitizer-reports/ (log_path), also from programs whose stderr a test
# discards; the target fails when any report was written, whatever the tests said. UBSan
# ignores log_path next to ASan (gcc 12): its first report ends the process instead
# (halt_on_error), which the test sees. NCS_SANITIZER tells the tests which sanitizer runs
# (they skip or relax only what it cannot do, and say so).
# ASan: the ASan shim is preloaded into programs built without ASan: skip the link-order check.
SANREP = $(CURDIR)/$(BUILD_SAN)/sanitizer-reports
san_check = n=$$(grep -l -E 'runtime error|ERROR:|WARNING: ThreadSanitizer|fatal error' $(SANREP)/* 2>/dev/null | wc -l); \
  echo "sanitizer log files: $$(ls $(SANREP) | wc -l) (notices such as ASan's makecontext warning for path_job are not reports)"; \
  if [ $$n -gt 0 ]; then echo "FAIL: $$n sanitizer report(s) in $(SANREP):"; \
  grep -h -A8 -E 'runtime error|ERROR:|WARNING: ThreadSanitizer' $(SANREP)/* | head -120; rc=1; \
  else echo "sanitizer reports: none"; fi; exit $$rc
asan: BUILD_SAN = build-asan
asan:
	rm -rf $(SANREP) && mkdir -p $(SANREP)
	NCS_SANITIZER=asan ASAN_OPTIONS=verify_asan_link_order=0:log_path=$(SANREP)/asan \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer" test; rc=$$?; \
	  $(san_check)

# TSan: call sites off. gcc 12's TSan runtime crashes (SIGSEGV in its pthread_mutex_lock
# interceptor) when libunwind's per-thread cache destructor runs at thread exit, with or without
# the shim (docs/RELIABILITY.md); tests whose jobs call NCCL from their main thread only turn
# call sites back on (tests/lib.sh tsan_sites_on). tests/tsan.supp: two known thread leaks,
# env_job's on-purpose environ race and bash's signal handlers, each explained there.
tsan: BUILD_SAN = build-tsan
tsan:
	rm -rf $(SANREP) && mkdir -p $(SANREP)
	NCS_SANITIZER=tsan NCCLSCOPE_CALLSITE_DEPTH=0 \
	  TSAN_OPTIONS=log_path=$(SANREP)/tsan:suppressions=$(CURDIR)/tests/tsan.supp \
	  $(MAKE) BUILD=build-tsan OPT=-O1 SAN="-fsanitize=thread" test; rc=$$?; \
	  $(san_check)

# libFuzzer run of tests/fuzz/fuzz_*.c, FUZZ_SECONDS (default 60) per target (clang needed).
fuzz:
	bash scripts/fuzz.sh $(or $(FUZZ_SECONDS),60) $(BUILD)

# make install [PREFIX=/usr/local] [DESTDIR=]: the CLI, the shim (where `ncclscope run` finds it:
# PREFIX/lib/ncclscope/), the man page and bash completion. Only built files and docs/ are used.
PREFIX ?= /usr/local
INSTALL_FILES = $(DESTDIR)$(PREFIX)/bin/ncclscope $(DESTDIR)$(PREFIX)/lib/ncclscope/libncclscope.so \
  $(DESTDIR)$(PREFIX)/share/man/man1/ncclscope.1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ncclscope
install: $(SHIM) $(DECODER)
	install -D -m 0755 $(DECODER) $(DESTDIR)$(PREFIX)/bin/ncclscope
	install -D -m 0755 $(SHIM) $(DESTDIR)$(PREFIX)/lib/ncclscope/libncclscope.so
	install -D -m 0644 docs/man/ncclscope.1 $(DESTDIR)$(PREFIX)/share/man/man1/ncclscope.1
	install -D -m 0644 scripts/completion/ncclscope.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ncclscope

# make deb: BUILD/ncclscope_<version>_<arch>.deb (dpkg-deb; scripts/make-deb.sh says what it holds)
deb: $(SHIM) $(DECODER)
	@bash scripts/make-deb.sh $(BUILD)

uninstall:
	rm -f $(INSTALL_FILES)
	-rmdir $(DESTDIR)$(PREFIX)/lib/ncclscope 2>/dev/null

clean:
	rm -rf build build-asan build-tsan
