#!/usr/bin/env bash
# Run upstream's own tests of the patched copies under third_party/ (see
# their CORRAL.md). Each copy is its own module, so it is tested from inside
# it. `make test-third-party` and `make test` run this; extra arguments go
# to every go test (e.g. -count=1, -run).
#
# quic-go: the packages CORRAL.patch touches, with the race detector. On 2
# cores about 2.5 minutes with a cold build cache, under a minute with a
# warm one; the tests themselves run in about 10 seconds.
#
# btree: all of upstream's tests and the loader's (the patch adds loader.go
# and changes no upstream line). Upstream's take about 90 seconds on 2
# cores, and ten times that under the race detector, so they run without
# it; the loader's own tests run with it too. LOADBENCH=1 runs the five
# upstream tests that otherwise skip themselves (TestContiguous*Load).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO=${GO:-go}

# The packages whose files quic-go's CORRAL.patch changes (root,
# internal/ackhandler, internal/handshake); keep in step with the
# "+ ...*_test.go" lines of its CORRAL.files.
(cd "$root/third_party/quic-go" &&
	$GO test -race -timeout 10m "$@" . ./internal/ackhandler/ ./internal/handshake/)

(cd "$root/third_party/btree" &&
	LOADBENCH=1 $GO test -timeout 10m "$@" . &&
	$GO test -race -timeout 5m -run 'Loader' "$@" .)

(cd "$root/third_party/raft" &&
	$GO test -race -timeout 5m "$@" ./...)
