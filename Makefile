# marketd — the two commands of the quick start are `make run` and `make test`.
GO        ?= go
BIN       := bin/marketd
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null)
PKGS      := ./...
# The benchmark, soak and reliability harnesses are a module of their own, so
# that `go list ./...` here lists only what ships; test and vet cover both.
HARNESS   := scripts
TESTFLAGS ?= -race -count=1 -timeout 30m

.PHONY: run test build bench soak reliability vet check-imports fuzz clean e2e

## run: the whole system in one process (embedded NATS, simulator, ingest, projector, API) with demo data
run: build
	./$(BIN) all --log-format console --http-addr 127.0.0.1:8080

## build: the one binary
build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/marketd

## test: package arrows, vet, then every test (the product's and the harnesses') with the race detector
test: check-imports vet
	$(GO) test $(TESTFLAGS) $(PKGS)
	$(GO) -C $(HARNESS) test $(TESTFLAGS) ./...

## e2e: marketd behind nginx, a real browser, a generated TypeScript client (installs nginx, chromium, npm tools)
e2e:
	./scripts/e2e

check-imports:
	./scripts/check-imports

vet:
	$(GO) vet $(PKGS)
	$(GO) -C $(HARNESS) vet ./...

## bench: the performance harness (about 30 minutes; BENCH_MEDIUM=1 about 12; report under bench-results/)
bench:
	./scripts/bench

## soak: SOAK_DURATION (10m) of mixed traffic with ticks; fails on non-2xx, growing RSS or a digest unlike a replay (not in test)
SOAK_DURATION ?= 10m
soak:
	./scripts/soak $(SOAK_DURATION)

## reliability: the automatable worst-day cases (view-store damage, limiter flood, NATS outage, regions cut off, soak); not in test
reliability:
	./scripts/reliability

## fuzz: a short run of every fuzz target (FUZZTIME each)
FUZZTIME ?= 20s
fuzz:
	./scripts/fuzz $(FUZZTIME)

clean:
	rm -rf bin data bench-results soak-results reliability-results e2e-results
