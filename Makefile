# rung: see README.md. Both targets install what they need (as root).
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
DATA ?= /var/lib/rung
ADDR ?= 127.0.0.1:7420

.PHONY: deps build run test test-short bench conformance

deps:
	@scripts/deps.sh

build:
	CGO_ENABLED=0 go build -o bin/rung ./cmd/rung

# Builds rung, starts the daemon with its embedded defaults and shows a
# sandbox being created and used. Stop it with Ctrl-C.
run: deps build
	@scripts/run.sh "$(ADDR)" "$(DATA)"

# The whole suite, as CI runs it: real btrfs, real bash, real runc.
test: deps
	@scripts/test.sh

bench: deps
	go test -run '^$$' -bench . -benchtime 2000x ./... 2>&1 | tee bench.out

conformance: deps build
	@scripts/conformance.sh
