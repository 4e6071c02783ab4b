# pagewatch: the two commands a newcomer needs are `make demo` and `make test`.
GO       ?= go
BIN      ?= bin
# Tests start real servers (clickhouse-server, nats-server, SMTP); two
# packages at a time suits the 2-core machines this runs on.
TESTFLAGS ?= -count=1 -p 2 -timeout 20m

.PHONY: all build test test-deps lint demo bench vet fmt clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# What the tests need beyond Go (ClickHouse, chDB, promtool, ...): installed
# when missing if run as root on Debian, else listed with how to install
# them; the tests that need a missing one skip (fail under CI=true). Fast
# when everything is there.
test-deps:
	GO="$(GO)" bash .ci/install-test-deps

# golangci-lint as .golangci.yml sets it, at the version that
# .ci/install-test-deps pins and installs into GOPATH/bin.
GOLANGCI_LINT ?= $(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin/golangci-lint

lint:
	GO="$(GO)" bash .ci/install-test-deps golangci-lint
	$(GOLANGCI_LINT) run ./...

# The linter's findings fail `make test`, as go vet's do: the tree is clean.
test: test-deps
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...
	$(GO) test $(TESTFLAGS) ./...

demo:
	bash deploy/demo/run.sh

# Go benchmarks of every package, and the multi-process ones in
# internal/e2e (tail -> JetStream -> ClickHouse for 60 s).
bench: test-deps
	PAGEWATCH_BENCH_SECONDS=60 $(GO) test -run '^$$' -bench . -benchtime 2s -timeout 60m ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) .demo

# The shipped spike rules (deploy/rules/spike-default.yaml) on the Numenta
# Anomaly Benchmark's real Twitter series, read in place from
# ../shared/data/nab-tweets through `sweeper backtest --counts`, scored as
# ../shared/data/README.md says: a table per series, then the total.
.PHONY: eval
eval:
	$(GO) build -o $(BIN)/ ./cmd/sweeper
	$(GO) run ./internal/nabeval/cmd/nabeval -sweeper $(BIN)/sweeper

# The same rules on generated pages of each class of traffic issue #23
# names, and three more (internal/syntheval): a check of the rule's reach
# beyond the tweets, not a target to tune to. A table per family.
.PHONY: eval-synthetic
eval-synthetic:
	$(GO) run ./internal/syntheval/cmd/syntheval
