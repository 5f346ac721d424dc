# Top-level entry points. `make` builds; `make run` and `make test` first install
# dependencies (scripts/install-deps, idempotent), so a fresh Debian 12 machine needs
# nothing else.

GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")
JOBS      ?= $(shell nproc)
CTEST_ARGS ?= --output-on-failure -j $(JOBS)

.PHONY: all build build-asan deps run test test-normal test-asan bench clean install uninstall

all: build

deps:
	scripts/install-deps

build:
	cmake -S . -B build -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j $(JOBS)

build-asan:
	cmake -S . -B build-asan -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Debug -DJNFS_SANITIZE=ON >/dev/null
	cmake --build build-asan -j $(JOBS)

run: deps build
	./build/jnfsd

test: deps
	$(MAKE) test-normal
	$(MAKE) test-fuzz
	$(MAKE) test-asan
	$(MAKE) test-tsan

test-normal: build
	cd build && ctest $(CTEST_ARGS)

test-asan: build-asan
	cd build-asan && ctest $(CTEST_ARGS)

clean:
	rm -rf build build-asan build-tsan

# Every benchmark of bench/ against its anchor (kernel XFS, NFS-Ganesha) and
# a dated report folder under bench-reports/ with plots (bench/run-all.sh).
# Root; installs its dependencies. About 35-40 minutes on 2 cores;
# BENCH_QUICK=1 for about 9. BASELINE_JNFSD=/path/to/an/older/jnfsd (and
# BASELINE_JNFS) measures that one too, beside this build's.
bench:
	BENCH_QUICK="$(BENCH_QUICK)" BASELINE_JNFSD="$(BASELINE_JNFSD)" \
		BASELINE_JNFS="$(BASELINE_JNFS)" sh bench/run-all.sh

# Installation: jnfsd and jnfs in PREFIX/sbin, the manual pages, the systemd
# unit and its /etc/default/jnfsd, an example exports file (dist/CMakeLists.txt
# says where each goes). DESTDIR is honoured. BUILD names the build folder to
# install from (configured as `make build` does if it is not yet). CMake lists
# what it installed in BUILD/install_manifest.txt; BUILD/installed-files.txt
# is the same list with DESTDIR in front, which `make uninstall` removes.
PREFIX ?= /usr/local
BUILD  ?= build
install:
	@test -f $(BUILD)/CMakeCache.txt || \
		cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target jnfsd jnfs man
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"
	sed 's|^|$(DESTDIR)|' $(BUILD)/install_manifest.txt >$(BUILD)/installed-files.txt

uninstall:
	@test -f $(BUILD)/installed-files.txt || \
		{ echo "no $(BUILD)/installed-files.txt: nothing was installed from $(BUILD)" >&2; exit 1; }
	@while IFS= read -r f || [ -n "$$f" ]; do \
		if [ -f "$$f" ] || [ -L "$$f" ]; then echo "rm $$f"; rm -f "$$f"; fi; \
	done <$(BUILD)/installed-files.txt
	@rm -f $(BUILD)/installed-files.txt

# Fuzzing (clang, libFuzzer): each target runs FUZZ_SECONDS from the
# in-tree corpus; the corpora are also replayed by CTest in both builds.
FUZZ_SECONDS ?= 25
.PHONY: build-fuzz test-fuzz
build-fuzz:
	cmake -S . -B build-fuzz -G "$(GENERATOR)" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJNFS_FUZZ=ON >/dev/null
	cmake --build build-fuzz -j $(JOBS) --target fuzz-record fuzz-call fuzz-xdr fuzz-nfs3 fuzz-image fuzz-xdrgen fuzz-nfs4c fuzz-nfs4

test-fuzz: build-fuzz
	scripts/fuzz-run build-fuzz $(FUZZ_SECONDS)

# ThreadSanitizer: only the concurrency tests (engine, journal, NFSv4 state) are
# built and run (a whole TSan suite would take too long on 2 cores); their
# TSAN_OPTIONS (any report fails, tests/tsan.supp) are set in
# tests/CMakeLists.txt.
TSAN_TESTS := test-iobuf test-dev test-log test-fs test-fs-sync-race test-fs-unwritten-race test-flush-share test-fs-stress test-fs-lookup-race \
              test-nfs4-brlock test-nfs4-share test-nfs4-state-mt test-nfs4c test-nfs4c-pnfs \
              test-fs-dirlock test-fs-readahead
.PHONY: build-tsan test-tsan
build-tsan:
	cmake -S . -B build-tsan -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJNFS_TSAN=ON >/dev/null
	cmake --build build-tsan -j $(JOBS) --target $(TSAN_TESTS)

test-tsan: build-tsan
	cd build-tsan && ctest $(CTEST_ARGS) -R '^($(subst $(eval) ,|,$(TSAN_TESTS)))$$'
