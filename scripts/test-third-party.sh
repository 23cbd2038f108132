#!/usr/bin/env bash
# Run upstream quic-go's own tests of the packages CORRAL.patch touches
# (restored in third_party/quic-go, see its CORRAL.md) with the race detector.
# third_party/quic-go is its own module, so it is tested from inside it.
# `make test-third-party` and `make test` run this; extra arguments go to
# go test (e.g. -count=1, -run). On 2 cores it takes about 2.5 minutes with
# a cold build cache, under a minute with a warm one; the tests themselves
# run in about 10 seconds, so -short is not needed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../third_party/quic-go"

GO=${GO:-go}
# The packages whose files CORRAL.patch changes (root, internal/ackhandler,
# internal/handshake); keep in step with the "+ ...*_test.go" lines of
# CORRAL.files.
$GO test -race -timeout 10m "$@" . ./internal/ackhandler/ ./internal/handshake/
