# detour — make targets. `make test` runs every test (what CI runs).
GO       ?= go
FUZZTIME ?= 10s

.PHONY: test deps unit race stack fuzz vet bench bench-gateway bench-baseline bench-report soak demo build build-pprof

## test: vet, every test with the race detector, the tests that need a build
## without it (stack sizes), then a short run of each fuzz target
test: deps vet race stack fuzz

## deps: what the tests need beyond Go, installed when missing: redis-server
## (Debian's package; the shared-health tests start their own on loopback),
## chromium (Debian's package; the HTML report's browser test drives it headless)
## and node (Debian's nodejs; eval's checker-program grader runs JavaScript)
deps:
	@command -v redis-server >/dev/null 2>&1 || { \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  command -v apt-get >/dev/null 2>&1 || { echo "redis-server is missing and there is no apt-get: install redis-server, then run make test again"; exit 1; }; \
	  echo "installing redis-server (apt-get)"; \
	  $$sudo apt-get install -y -q redis-server >/dev/null 2>&1 || \
	  { $$sudo apt-get update -q >/dev/null && $$sudo apt-get install -y -q redis-server >/dev/null; }; }
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  command -v apt-get >/dev/null 2>&1 || { echo "chromium is missing and there is no apt-get: install chromium (or chromium-browser), then run make test again"; exit 1; }; \
	  echo "installing chromium (apt-get)"; \
	  $$sudo apt-get install -y -q chromium >/dev/null 2>&1 || \
	  { $$sudo apt-get update -q >/dev/null && $$sudo apt-get install -y -q chromium >/dev/null; }; }
	@command -v node >/dev/null 2>&1 || { \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  command -v apt-get >/dev/null 2>&1 || { echo "node is missing and there is no apt-get: install Node.js, then run make test again"; exit 1; }; \
	  echo "installing nodejs (apt-get)"; \
	  $$sudo apt-get install -y -q nodejs >/dev/null 2>&1 || \
	  { $$sudo apt-get update -q >/dev/null && $$sudo apt-get install -y -q nodejs >/dev/null; }; }

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags pprof ./cli/

race: deps
	DETOUR_REQUIRE_REDIS=1 DETOUR_REQUIRE_CHROMIUM=1 DETOUR_REQUIRE_NODE=1 $(GO) test -race -count=1 ./...

## stack: tests that measure goroutine stacks, which the race detector's
## instrumentation deepens (they are built only without it)
stack:
	$(GO) test -count=1 -run 'StackStaysSmall' ./gateway/

unit:
	$(GO) test -count=1 ./...

## fuzz: each native fuzz target for FUZZTIME (seed corpora also run in `race`)
fuzz:
	@./scripts/fuzz.sh $(FUZZTIME)

## bench: the router's own overhead per request, with allocations
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./router/ ./ledger/

demo:
	$(GO) run ./cmd/detour demo

## build: a static detour in bin/ (no libc: runs on any Linux, in a scratch container)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/detour ./cmd/detour

## build-pprof: a detour whose `serve --pprof ADDR` serves Go's profiles
build-pprof:
	CGO_ENABLED=0 $(GO) build -trimpath -tags pprof -o bin/detour ./cmd/detour

## bench-gateway: `detour serve` against the upstream direct and a plain
## reverse proxy under load, plus the failover, slow-stream and faults scenarios (about 8 minutes;
## the markdown report goes to stdout; BENCH_ARGS passes flags, e.g.
## BENCH_ARGS="-duration 2s -rounds 1 -perf -out /tmp/bench.md")
bench-gateway:
	$(GO) run ./bench/gateway $(BENCH_ARGS)

## bench-report: `detour report` on a 100 MB ledger of 200,000 targets
## (bench/ledgergen), each output format run as a process under
## /usr/bin/time -v: wall time and max RSS as a markdown table (about a
## minute; BENCH_ARGS passes flags, e.g. BENCH_ARGS="-bin OLD/detour -mb 20")
bench-report:
	$(GO) run ./bench/report $(BENCH_ARGS)

## bench-baseline: this checkout's detour beside REV's (default HEAD~1) in the
## same benchmark run, detour / baseline ratios in the report (about 4 minutes;
## BENCH_ARGS replaces the default cells, see scripts/bench-baseline.sh)
REV ?= HEAD~1
bench-baseline:
	./scripts/bench-baseline.sh $(REV) $(BENCH_ARGS)

## soak: `detour serve` under SOAK (10 minutes) of mixed traffic at small
## ceilings (distinct Idempotency-Keys, cached answers, buffered streams),
## its VmRSS sampled; fails on any failed request or on VmRSS growing more
## than 256 KiB/min after the warm-up (see bench/gateway/soak.go; SOAK=2m for
## a shorter run, BENCH_ARGS for its -soak-* flags)
SOAK ?= 10m
soak:
	$(GO) run ./bench/gateway -soak $(SOAK) $(BENCH_ARGS)
