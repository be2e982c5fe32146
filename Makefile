# printgate build, test and benchmark entry points. Every target works on a
# fresh machine after `go mod download` (run by .ci/run and by `make deps`).

GO      ?= go
PKGS    ?= ./...
BIN     ?= bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X printgate/cmd/printgate/internal/version.Version=$(VERSION)
# FUZZTIME bounds each fuzz target in `make fuzz`.
FUZZTIME ?= 60s
# BENCHTIME and BENCHCOUNT shape `make bench`; raise them for figures you record.
BENCHTIME  ?= 1s
BENCHCOUNT ?= 1

.PHONY: all deps build test staticcheck test-windows test-usb bench-slowpc test-browser vet fmt-check race-check bench bench-cups bench-cups-raw demo fuzz soak package clean chaos

all: build

deps:
	$(GO) mod download

build:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/linux-amd64/ ./cmd/...
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/windows-amd64/ ./cmd/...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	GOOS=windows $(GO) vet $(PKGS)

# The race detector allocates on its own, so allocation tests (named
# *Allocs*) skip under -race and run again here without it.
# staticcheck runs honnef.co/go/tools' staticcheck (pinned) over every
# package as built for linux and for windows; .ci/run calls it after
# `make test`. The tool is built into bin/tools from the Go module proxy.
STATICCHECK_VERSION ?= v0.8.2
staticcheck:
	GOBIN=$(CURDIR)/$(BIN)/tools $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(BIN)/tools/staticcheck $(PKGS)
	GOOS=windows $(BIN)/tools/staticcheck $(PKGS)

test: fmt-check vet race-check
	$(GO) test -race -timeout 30m $(PKGS)
	$(GO) test -count=1 -run 'Allocs' $(PKGS)

# race-check: go test -race needs cgo, and cgo a C compiler; without one Go
# turns cgo off and -race fails every package. Say so once, with the fix.
race-check:
	@cc=$$($(GO) env CC); if ! command -v "$${cc%% *}" >/dev/null 2>&1 || [ "$$($(GO) env CGO_ENABLED)" != 1 ]; then \
		echo "make test: go test -race needs a C compiler (cgo; CC=$$cc, CGO_ENABLED=$$($(GO) env CGO_ENABLED))" >&2; \
		echo "fix: install one (Debian/Ubuntu: apt-get install gcc; .ci/run does), or run go test ./... without -race" >&2; \
		exit 1; \
	fi

# test-windows runs the Windows build under Wine (see README,
# "How Windows is tested"): it installs wine, wine64 and
# gcc-mingw-w64-x86-64 when missing (apt-get; root or sudo), makes a
# temporary Wine prefix with the ProcessPrng shim built from
# scripts/wine/bcryptprimitives.c, cross-compiles, and runs the unit tests
# of the packages with Windows code and the end-to-end checks of
# scripts/wine/e2e, one PASS/FAIL line each, then a summary with the time.
test-windows:
	GO=$(GO) ./scripts/wine/test-windows.sh

# test-usb runs printgate against the real Linux USB stack in a qemu VM
# (see README, "USB, tested in a VM"): scripts/usbvm/test-usb.sh
# installs qemu-system-x86, busybox-static, cpio and kmod when missing
# (apt-get; root or sudo), fetches Debian's kernel with apt-get download
# (unpacked into .usbvm/, not installed), builds an initramfs with the USB
# modules, a static printgate and the checks of scripts/usbvm/vmtest, boots
# it (KVM when it works, else TCG) and prints one PASS/FAIL line per check
# from the serial console. USBVM_TIMEOUT bounds the VM (default 300 s).
test-usb:
	GO=$(GO) ./scripts/usbvm/test-usb.sh

# bench-slowpc measures printgate on a slow store PC (see
# docs/BENCHMARKS.md, "Slow store PC"): the VM of test-usb with 1 vCPU,
# 512 MiB and the spool on an ext4 disk qemu throttles like an HDD, then the
# same VM unthrottled (2 vCPUs, 2 GiB), BENCH_RUNS times each (default 2).
# Not part of `make test`: about an hour under TCG (a slow boot ~20 min).
bench-slowpc:
	GO=$(GO) ./scripts/usbvm/bench-slowpc.sh

# test-browser runs only the manager page's browser tests (chromium; see
# README), verbosely, so the log names the screenshots' folder. `make test`
# runs them too.
test-browser:
	$(GO) test -race -count=1 -v -run 'TestBrowser' ./cmd/printgate

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) $(PKGS)

# bench-cups compares printgate with CUPS on this machine: it
# installs CUPS when missing (apt-get; root or sudo), starts cupsd, creates a
# raw queue to an emulated printer, runs cmd/benchcups and removes the queue.
# Results: a table on stdout and bench-cups.json; see docs/BENCHMARKS.md.
# Pass flags with BENCH_CUPS_FLAGS, e.g. BENCH_CUPS_FLAGS='-n 200 -seed 42'.
bench-cups:
	GO=$(GO) ./scripts/bench-cups.sh $(BENCH_CUPS_FLAGS)

# bench-cups-raw measures printgate's raw port behind an unchanged CUPS raw
# queue: the same tickets with lp -o raw to a queue straight at an
# emulated printer and to one at printgate's raw port; latency, throughput,
# and every ticket once and in order on both. Results: a table on stdout and
# bench-cups-raw.json; see docs/BENCHMARKS.md.
bench-cups-raw:
	BENCH_MODE=raw GO=$(GO) ./scripts/bench-cups.sh $(BENCH_CUPS_FLAGS)

# demo runs the whole system on 127.0.0.1 (scripts/demo.sh): an emulated
# printer, the real hub (printgate-hub, one node), a webhook receiver and the
# agent paired to the hub; jobs through the hub's API and the agent's LAN API
# print and their webhooks arrive, a failover, the hub SIGKILLed and back.
# Until Ctrl-C (DEMO_DURATION=60s stops it by itself); see README.
demo:
	./scripts/demo.sh

# chaos runs seed 000's stress model against the real binary (cmd/chaos):
# 20,000 tickets at ~73/s with 300/s bursts, printer and WAN faults, 12
# SIGKILLs; ten minutes at most plus a two-minute drain. It prints the table,
# writes $(CHAOS_OUT)/result.json with the agent's logs, and fails on any
# violation. CHAOS_ARGS adds flags, e.g. CHAOS_ARGS='--seed 42'.
CHAOS_OUT ?= $(BIN)/chaos
CHAOS_ARGS ?=
chaos:
	$(GO) run ./cmd/chaos --duration 10m --tasks 20000 --out $(CHAOS_OUT) $(CHAOS_ARGS)

# fuzz runs every fuzz target for FUZZTIME each (go test allows one target per run).
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

# soak runs the real agent for 2 h at 10 tasks/s over 4 emulated printers with
# light faults, sampling RSS, goroutines, open fds and the spool size every
# minute into docs/benchmarks/soak.csv and soak.svg; it fails if one keeps
# growing or an accepted task never printed. Override with, e.g.,
# `make soak SOAK_FLAGS='--duration 40m --sample 30s'` (see cmd/soak).
soak:
	$(GO) run ./cmd/soak --duration 2h --rate 10 --sample 1m --out docs/benchmarks $(SOAK_FLAGS)

# package writes the release files to dist/: linux/amd64, linux/arm64 and
# windows/amd64 binaries, the .deb for each linux one (nfpm), the Windows zip
# and SHA256SUMS (scripts/package.sh), then the hub's beside them
# (package-hub).
package:
	VERSION=$(VERSION) GO=$(GO) ./scripts/package.sh
	VERSION=$(VERSION) GO=$(GO) ./installer/hub/package.sh

# package-hub writes the hub's release files to dist/ beside the agent's:
# linux/amd64 and linux/arm64 printgate-hub binaries, their .deb (nfpm;
# the printgate-hub service, /etc/printgate-hub/hub.toml, data in
# /var/lib/printgate-hub) and SHA256SUMS over both; `make package` runs it
# last, since the agent's script empties dist/. See installer/hub/package.sh.
# deb-check-hub checks that .deb as scripts/deb-check.sh checks the agent's:
# its contents always; as root with dpkg, an install, the first tenant, store
# and key, the hub serving them, remove and purge.
# demo-hub is the former name of demo, which now runs the hub.
.PHONY: package-hub deb-check-hub demo-hub
demo-hub: demo

package-hub:
	VERSION=$(VERSION) GO=$(GO) ./installer/hub/package.sh

deb-check-hub:
	GO=$(GO) ./installer/hub/deb-check.sh

clean:
	rm -rf $(BIN)
