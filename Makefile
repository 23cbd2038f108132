# corral build entry points. CI runs `make lint test` through .ci/run.
GO ?= go

.PHONY: build test test-third-party run lint

build:
	$(GO) build -o bin/corral .

# Unit packages run in parallel; the multi-process integration tests run
# after them, alone, because they measure failover on a 2-core machine.
test:
	GO="$(GO)" ./scripts/test-third-party.sh
	$(GO) test -race -timeout 25m $$($(GO) list ./... | grep -v /integration)
	$(GO) test -race -count=1 -timeout 25m ./integration/

# upstream quic-go's tests of the packages corral patches (third_party/quic-go).
test-third-party:
	GO="$(GO)" ./scripts/test-third-party.sh

# corral dev: a controller and one worker; e.g. make run ARGS="--workers 3 --data-dir /tmp/corral-dev"
run:
	$(GO) run . dev $(ARGS)

# gofmt -l prints files that need formatting; any output fails the target.
lint:
	@out="$$(gofmt -l .)"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; echo "fix with: gofmt -w ."; exit 1; fi
	$(GO) vet ./...
	$(GO) run ./scripts/checkimports
	GO="$(GO)" ./scripts/check-third-party.sh
