# Custody: `make run` and `make test` work from a fresh clone on Debian 12.
# Both first install the system packages the build links (libsodium, SQLite) when missing.

SWIFT ?= swift
DEB_PACKAGES := libsodium-dev libsqlite3-dev pkg-config
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CUSTODY := .build/debug/custody
EXAMPLE_CONTEXT := --platform ios --app com.microsoft.office.outlook

.PHONY: deps build run test bench clean

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

EXAMPLE_STATE := .build/example-state

## Validate the example bundle, answer its example queries, run its matrices (policies/matrices), then protect a file for alice with
## her policy, keys kept in an embedded SQLite state (.build/example-state/state.sqlite); check
## the bundle's app configuration against the example app's spec and resolve one key.
run: build
	$(CUSTODY) policy validate policies
	$(CUSTODY) decide --bundle policies $(EXAMPLE_CONTEXT) --format text < policies/examples.jsonl
	$(CUSTODY) matrix run policies/
	@mkdir -p $(EXAMPLE_STATE)
	CUSTODY_MASTER_KEY_FILE=$(EXAMPLE_STATE)/master.key $(CUSTODY) protect --bundle policies $(EXAMPLE_CONTEXT) \
		--state $(EXAMPLE_STATE) --owner alice@contoso.com policies/examples.jsonl $(EXAMPLE_STATE)/examples.jsonl.cst
	$(CUSTODY) info $(EXAMPLE_STATE)/examples.jsonl.cst
	$(CUSTODY) checkin --state $(EXAMPLE_STATE) --bundle policies --account alice@contoso.com
	$(CUSTODY) config validate --spec specs/com.microsoft.office.outlook.spec.json --bundle policies --platform ios
	$(CUSTODY) config show --bundle policies $(EXAMPLE_CONTEXT) --account alice@contoso.com \
		--key com.contoso.outlook.SignatureLines --type integer --query max

## The whole test suite, every fixture matrix through `custody matrix run` (JUnit report in
## .build/matrix-junit.xml), then the concurrency test again under ThreadSanitizer (its own
## build folder, so the debug build stays warm).
test: deps
	$(SWIFT) test
	$(CUSTODY) matrix run --junit .build/matrix-junit.xml fixtures/
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan --filter Concurrency

## Benchmarks (release builds; see Benchmarks/README.md).
bench: deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark

clean:
	$(SWIFT) package clean
