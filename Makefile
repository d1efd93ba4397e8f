# Custody: `make run` and `make test` work from a fresh clone on Debian 12.
# Both first install the system packages the build links (libsodium, OpenSSL's libcrypto,
# SQLite) when missing.

SWIFT ?= swift
DEB_PACKAGES := libsodium-dev libssl-dev libsqlite3-dev pkg-config python3-cryptography \
	chromium chromium-driver python3-selenium systemd
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CUSTODY := .build/debug/custody
STAGE := scripts/ci/stage.sh
## Swift Testing starts every test case of the run at once unless told otherwise. On 2 cores
## that queues hundreds of jobs on Swift's cooperative pool (one thread per core), and a test
## whose call awaits the state resumes behind all of them: 20 s late at the start of a run,
## measured, which failed the tests that time an outage. Eight at once: the suite takes as
## long, and an await resumes within milliseconds. Every `swift test` below runs with it.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH ?= 8
EXAMPLE_CONTEXT := --platform ios --app com.microsoft.office.outlook

.PHONY: deb deb-test deb-check deps build release run serve lint format docs test test-run test-suite test-tools check bench bench-build bench-gate fuzz fuzz-build fuzz-smoke clean

## Install the Debian packages the build needs, if any is missing.
deps:
	@missing=""; \
	for package in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

## The release `custody` binary, .build/release/custody, with the Swift runtime and Foundation
## linked in: on the machine it runs on it needs Debian's libsodium, libcrypto, libsqlite3 and
## zlib beside the C and C++ runtimes (libc, libstdc++, libgcc_s). What the benchmark scripts
## measure. Linked by the toolchain's lld (Benchmarks/README.md, target 5):
## - with packed relative relocations (DT_RELR, glibc 2.36 and later): the loader's relocation
##   table shrinks from 3.8 MiB, read at every start, to 32 KiB;
## - exporting no symbols (nothing loads custody as a library): the dynamic symbol table the
##   loader searches for every symbol of every library goes from 63,000 names to 650;
## - with the functions that commands run at start-up placed first and together, in the order
##   scripts/release.order lists them (measured by scripts/release-order.sh; a stale list only
##   places code less well).
RELEASE_ORDER := $(CURDIR)/scripts/release.order
RELEASE_LINK := -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
	-Xlinker --no-export-dynamic \
	$(if $(wildcard $(RELEASE_ORDER)),-Xlinker --symbol-ordering-file=$(RELEASE_ORDER) -Xlinker --no-warn-symbol-ordering)
release: deps
	$(SWIFT) build -c release --product custody --static-swift-stdlib $(RELEASE_LINK)

## The Debian package, custody_<version>_<arch>.deb in this folder, from the release binary
## (scripts/deb/build.sh: dpkg-deb and dpkg-shlibdeps; docs/operations.md says how to install
## it), then checked: lintian when it is installed, and scripts/deb/test.sh, which installs it
## into a throwaway root and runs the packaged service there as systemd would start it.
deb: release
	@command -v strip >/dev/null || $(SUDO) apt-get install -y -qq binutils
	scripts/deb/build.sh .build/release/custody

## The package's checks alone, on the package `make deb` built; installs lintian when missing.
deb-test:
	@command -v lintian >/dev/null || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq lintian >/dev/null
	scripts/deb/test.sh custody_$$(.build/release/custody --version)_$$(dpkg --print-architecture).deb

## What `make check` runs as its `deb` stage: the same package built from the debug build's
## binary (the one `make test` built), in .build/deb-check, and checked as deb-test checks
## `make deb`'s. What it checks (the contents, the units, socket activation, reload, stop,
## lintian) does not depend on how the binary was optimised, and a release build from nothing
## takes about 17 minutes on 2 cores. One difference is let through: the debug binary finds the
## toolchain's Swift runtime by a RUNPATH (lintian's custom-library-search-path), where the
## release binary has it linked in; Depends is checked for the libraries both need.
deb-check: build
	@command -v strip >/dev/null || $(SUDO) apt-get install -y -qq binutils
	@command -v lintian >/dev/null || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq lintian >/dev/null
	DEB_OUT=.build/deb-check scripts/deb/build.sh $(CUSTODY)
	DEB_TEST_LINTIAN_ALLOW=custom-library-search-path \
		scripts/deb/test.sh .build/deb-check/custody_$$($(CUSTODY) --version)_$$(dpkg --print-architecture).deb

EXAMPLE_STATE := .build/example-state
STATE := --state $(EXAMPLE_STATE)

## Validate the example bundle and make it the policy in force of an embedded SQLite state
## (.build/example-state/state.sqlite); answer its example queries, run its matrices
## (policies/matrices); protect a file for alice under her policy, keys kept in that state;
## check the bundle's app configuration against the example app's spec and resolve one key.
run: build
	$(CUSTODY) policy validate policies
	@mkdir -p $(EXAMPLE_STATE)
	$(CUSTODY) apply $(STATE) --bundle policies $(EXAMPLE_CONTEXT)
	$(CUSTODY) decide $(STATE) $(EXAMPLE_CONTEXT) --format text < policies/examples.jsonl
	$(CUSTODY) matrix run policies/
	CUSTODY_MASTER_KEY_FILE=$(EXAMPLE_STATE)/master.key $(CUSTODY) protect $(STATE) $(EXAMPLE_CONTEXT) \
		--owner alice@contoso.com policies/examples.jsonl $(EXAMPLE_STATE)/examples.jsonl.cst
	$(CUSTODY) info $(EXAMPLE_STATE)/examples.jsonl.cst
	$(CUSTODY) checkin $(STATE) --account alice@contoso.com
	$(CUSTODY) config validate $(STATE) --spec specs/com.microsoft.office.outlook.spec.json --platform ios
	$(CUSTODY) config show $(STATE) $(EXAMPLE_CONTEXT) --account alice@contoso.com \
		--key com.contoso.outlook.SignatureLines --type integer --query max

SERVE_STATE := .build/serve-state

## The decision service on the example bundle with an embedded SQLite state
## (.build/serve-state), on 127.0.0.1:8080. An admin token is created once, kept in
## .build/serve-state/token (mode 0600) and printed for curl. Stop it with Ctrl-C.
serve: build
	@mkdir -p $(SERVE_STATE)
	@[ -s $(SERVE_STATE)/token ] || (umask 077 && $(CUSTODY) tokens create --state $(SERVE_STATE) --scope admin --name "make serve" > $(SERVE_STATE)/token)
	@echo "admin token (also in $(SERVE_STATE)/token): $$(cat $(SERVE_STATE)/token)"
	@echo "the admin console: http://127.0.0.1:8080/console (sign in with that token)"
	CUSTODY_MASTER_KEY_FILE=$(SERVE_STATE)/master.key $(CUSTODY) serve --state $(SERVE_STATE) --bundle policies --platform ios

## Every Swift file formatted as .swift-format says (the toolchain's swift format; 120 columns),
## the README's examples in Snippets/ included:
## `make lint` fails naming each line that is not, `make format` rewrites them.
## It also fails when a front end (the server, the command line, the Graph connector) reaches
## past the engine into its runtime (`.manager`): they ask the engine (docs/architecture.md).
lint:
	$(SWIFT) format lint --strict --recursive --parallel Sources Tests Snippets Package.swift
	@! grep -rnE '\.manager\b' Sources/CustodyServer Sources/custody Sources/CustodyGraph \
		|| { echo "lint: a front end reaches past the engine (above); add the operation to CustodyEngine"; exit 1; }

format:
	$(SWIFT) format format --in-place --recursive --parallel Sources Tests Snippets Package.swift

## What a contributor runs (the README's test command), building once: formatting (make lint),
## the debug build with its tests, then two lines of stages side by side, since neither keeps both
## cores busy on its own (Swift Testing's suite waits on processes, sockets and PostgreSQL; the
## tools wait on the service):
## - the Swift test suite but its timed tests (test-suite; its log in .build/swift-test.log);
## - the checks by tools no one here wrote (test-tools): the bundle signature vectors checked
##   outside Swift (scripts/verify-bundle-signature.py, Python's cryptography), every fixture
##   matrix through `custody matrix run` (JUnit report in .build/matrix-junit.xml), the admin
##   console in headless Chromium (scripts/console/browser_test.py, Selenium), and the service's
##   contract (scripts/contract/run.sh: schemathesis against a live service, and a client
##   generated from the OpenAPI document running the README's examples; both from PyPI, in
##   .build/contract-venv);
## then the timed tests alone (timed-tests, below; their log follows the suite's).
## Each stage's output, its name first, is printed whole when it ends (make's
## --output-sync=line), with its wall and CPU time (scripts/ci/stage.sh; a stage that runs over
## 30 minutes is stopped); the end tabulates them with the 20 slowest tests
## (scripts/ci/summary.sh), also when lint or the build fails. A stage that fails fails
## `make test`; every other stage still runs, so one run shows every failure.
## The store and fleet tests run against PostgreSQL too: a throwaway cluster
## (scripts/test-postgres.sh: Debian's postgresql, installed when missing) is started in a
## temporary directory on a free loopback port for the run, and stopped and deleted after it,
## whatever the outcome (scripts/ci/with-postgres.sh).
test: deps
	@mkdir -p .build && rm -f .build/stage-times.tsv .build/swift-test.log
	@date +%s.%N >.build/test-started
	@$(STAGE) lint $(MAKE) -s lint || { scripts/ci/summary.sh .build/test-started; exit 1; }
	@$(STAGE) build $(SWIFT) build --build-tests || { scripts/ci/summary.sh .build/test-started; exit 1; }
	@echo "==> the test suite and the tool checks, side by side: each stage's output follows when it ends"
	@scripts/ci/with-postgres.sh $(MAKE) -s test-run; \
		status=$$?; scripts/ci/summary.sh .build/test-started; exit $$status

## The tests that claim how long something takes (an answer at its deadline, a decision that
## does not wait for the state, a stale replica found in time) run after the others, alone:
## side by side with the contract stage and 700 other tests on 2 cores, a request waited
## seconds for a thread (a fresh-clone run measured a protect at 5.8 s against its 1 s
## deadline), which says nothing of the product and failed the run. A test added with a
## wall-clock bound of a few seconds belongs here. (A regular expression over test ids, as
## `swift test --filter` takes them: `swift test list` prints them.)
TIMED_TESTS := CustodyServerTests\.OutageTests/|CustodyStoreTests\.PostgresOutageTests/|CustodyServerTests\.EventStreamTests/revokedTokenEndsStream\(|CustodyTests\.FleetTests/(partitioned|serverRestarted|unreachable|cutOffMidTransaction|queuedWritesKeepTheirDeadline)\(

## What `make test` runs after its build, under scripts/ci/with-postgres.sh (not meant to be
## run alone: the suites need CUSTODY_TEST_POSTGRES_URL, which it sets): the test suite and
## the tool stages side by side, then the timed tests alone; each stage runs whatever the
## others did, so one run shows every failure.
test-run:
	@$(MAKE) -s -k -j2 --output-sync=line test-suite test-tools; status=$$?; \
		$(STAGE) timed-tests bash -c "set -o pipefail; $(SWIFT) test --skip-build --filter '$(TIMED_TESTS)' 2>&1 | tee -a .build/swift-test.log" \
		|| status=1; exit $$status

test-suite:
	@$(STAGE) swift-test bash -c "set -o pipefail; $(SWIFT) test --skip-build --skip '$(TIMED_TESTS)' 2>&1 | tee -a .build/swift-test.log"

## Every tool stage runs even when one before it failed (`-`), so that one run shows every
## failure; the last line fails the target when any of them did.
TOOL_STAGES := signature-vectors matrices browser contract
test-tools:
	-@$(STAGE) signature-vectors /usr/bin/python3 scripts/verify-bundle-signature.py fixtures/vectors/bundle-signatures.json
	-@$(STAGE) matrices $(CUSTODY) matrix run --junit .build/matrix-junit.xml fixtures/
	-@$(STAGE) browser /usr/bin/python3 scripts/console/browser_test.py $(CUSTODY)
	-@$(STAGE) contract scripts/contract/run.sh $(CUSTODY)
	@awk -F'\t' -v stages="$(TOOL_STAGES)" 'BEGIN { n = split(stages, s, " "); for (i = 1; i <= n; i++) want[s[i]] = 1 } \
		($$1 in want) { ran[$$1] = 1; if ($$3 != 0) failed = 1 } \
		END { for (name in want) if (!(name in ran)) failed = 1; exit failed }' .build/stage-times.tsv

## What needs builds of its own, each in its own folder so the debug build stays warm: the
## concurrency test under ThreadSanitizer, the protection and store tests under
## AddressSanitizer with LeakSanitizer (against PostgreSQL too; the timed tests among them run
## after the others, alone, as in make test: a CI run found a held-back reply at 9 s against 5
## beside the rest under the sanitizer), each building the tests'
## product alone (not the fuzzing harness and the snippets, which no test there runs) with only
## the test targets it runs (CUSTODY_TEST_TARGETS, Package.swift: the service, the Graph
## connector and the executable are not compiled under a sanitizer for tests that never use them) and
## without the package's default trait (`custody` without its OpenTelemetry exporter, which
## none of those tests runs and which does not compile under -sanitize=thread: Package.swift), a short run of every fuzzing
## harness (fuzz-smoke), and the performance regression gate (bench-gate: the Benchmarks
## package built in release, two figures against their thresholds); then the
## documentation (make docs, on the debug build), so that a broken symbol link or snippet
## fails CI; then the Debian package built from the debug binary and checked (make deb-check,
## lintian installed for it). CI runs `make test`, then this (.ci/run).
SANITIZED := --disable-default-traits
check: deps
	@CUSTODY_TEST_TARGETS=CustodyTests $(STAGE) tsan sh -c '$(SWIFT) build --product CustodyPackageTests $(SANITIZED) --sanitize=thread --scratch-path .build-tsan \
		&& $(SWIFT) test --skip-build $(SANITIZED) --sanitize=thread --scratch-path .build-tsan --filter Concurrency'
	@CUSTODY_TEST_TARGETS=CustodyProtectionTests,CustodyStoreTests scripts/ci/with-postgres.sh \
		$(STAGE) asan sh -c '$(SWIFT) build --product CustodyPackageTests $(SANITIZED) --sanitize=address --scratch-path .build-asan \
		&& LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan-suppressions.txt:print_suppressions=0 \
		$(SWIFT) test --skip-build $(SANITIZED) --sanitize=address --scratch-path .build-asan --skip "$(TIMED_TESTS)" \
		&& LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan-suppressions.txt:print_suppressions=0 \
		$(SWIFT) test --skip-build $(SANITIZED) --sanitize=address --scratch-path .build-asan --filter "$(TIMED_TESTS)"'
	@$(STAGE) fuzz-smoke $(MAKE) -s fuzz-smoke
	@STAGE_TIMEOUT=2700 $(STAGE) bench-gate $(MAKE) -s bench-gate
	@$(STAGE) docs $(DOCS)
	@$(STAGE) deb $(MAKE) -s deb-check

## The DocC documentation of the libraries an app or service embeds, one archive each in
## .build/docs (<target>.doccarchive): each library's catalog (Sources/<target>/<target>.docc:
## an overview, the types by topic, articles) and its symbols, with the README's library
## examples, which are compiled as snippets (Snippets/, built by every `swift build`).
## Warnings are errors: a symbol link that does not resolve, or a snippet that is not there,
## fails it. DocC's check that a comment naming some of a function's parameters names them all
## is off: 42 comments in these libraries describe only the parameters that need a word.
## `make check` runs it as its `docs` stage (about 35 s on 2 cores after the debug build).
DOCS_TARGETS := CustodyPolicy CustodyProtection Custody
DOCS := $(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation \
	$(addprefix --target ,$(DOCS_TARGETS)) --output-path .build/docs --warnings-as-errors \
	--disable-parameters-and-returns-validation
docs: deps
	$(DOCS)

FUZZ_HARNESSES := json query bundle envelope matrix configuration spec
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 15

## The libFuzzer build of Fuzz/Harnesses (AddressSanitizer on), in .build-fuzz.
fuzz-build: deps
	$(SWIFT) build --scratch-path .build-fuzz --product CustodyFuzz \
		-Xswiftc -sanitize=fuzzer,address -Xswiftc -DCUSTODY_FUZZING -Xswiftc -parse-as-library

## Every fuzzing harness for FUZZ_SECONDS each (default 600; see Fuzz/README.md). Stops at
## the first finding, which is saved in .build-fuzz/artifacts/HARNESS/.
fuzz: fuzz-build
	@for harness in $(FUZZ_HARNESSES); do scripts/fuzz.sh $$harness $(FUZZ_SECONDS) || exit 1; done

## A short run of every harness (FUZZ_SMOKE_SECONDS each): what `make check` runs.
fuzz-smoke: fuzz-build
	@for harness in $(FUZZ_HARNESSES); do scripts/fuzz.sh $$harness $(FUZZ_SMOKE_SECONDS) || exit 1; done

## Benchmarks (release builds; see Benchmarks/README.md).
bench: deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark

## Every target of the Benchmarks package compiled (debug, in Benchmarks/.build), nothing run:
## `make check` does this so that a benchmark that no longer compiles fails CI.
bench-build: deps
	cd Benchmarks && $(SWIFT) build

## The performance regression gate (scripts/bench-gate.sh): every target of the Benchmarks
## package built in release, then the in-process saveTo micro-benchmark and `custody decide` on
## 100,000 queries compared with the thresholds kept in Benchmarks/Thresholds/; fails only on
## a 2x regression. `make check` runs it as its bench-gate stage (it compiles every benchmark,
## as bench-build does). `scripts/bench-gate.sh --update` measures and writes the thresholds.
bench-gate: deps
	SWIFT=$(SWIFT) scripts/bench-gate.sh

clean:
	$(SWIFT) package clean
