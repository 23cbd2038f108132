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
	cd deploy/kubernetes && $(GO) test ./...
	cd scripts/compare && $(GO) vet ./... && $(GO) test ./...

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

# Container image (Dockerfile): a static binary in a scratch image, tagged
# $(IMAGE). The binary is built here rather than in a build stage, which
# would need a Go base image pulled from a registry. bin/image-data is the
# image's empty /data. Without buildx, the classic builder does the job.
IMAGE ?= corral:dev
.PHONY: image
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags='-s -w' -o bin/corral-linux-amd64 .
	mkdir -p bin/image-data
	if docker buildx version >/dev/null 2>&1; then docker build -t $(IMAGE) .; \
	else DOCKER_BUILDKIT=0 docker build -t $(IMAGE) .; fi
