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

## Validate the example bundle, then answer its example queries.
run: build
	$(CUSTODY) policy validate policies
	$(CUSTODY) decide --bundle policies $(EXAMPLE_CONTEXT) --format text < policies/examples.jsonl

## The whole test suite.
test: deps
	$(SWIFT) test

## Benchmarks (release builds; see Benchmarks/README.md).
bench: deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark

clean:
	$(SWIFT) package clean
