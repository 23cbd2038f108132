# corral's container image: the static binary alone in a scratch image.
#
# Build it with `make image` (tag corral:dev, or IMAGE=...). The binary is
# built on the host first (CGO_ENABLED=0, so it needs no libc) and copied
# in, as etcd's release image does: a multi-stage build would need a Go
# base image pulled from a registry, and release builds want the very
# binary that was tested.
FROM scratch

# The binary to ship; `make image` builds bin/corral-linux-amd64.
ARG BINARY=bin/corral-linux-amd64

# scratch has no user database. With these, os/user resolves the corral
# user (65532) by name, so logs and task users read "corral", not a bare uid.
COPY deploy/image/passwd deploy/image/group /etc/

# scratch has no mkdir either: /data comes from an empty directory in the
# build context, owned by the corral user, so a fresh volume mounted there
# inherits that owner and a non-root node can write its raft log into it.
COPY --chown=65532:65532 bin/image-data/ /data/

COPY ${BINARY} /corral

# Never root: a controller needs no privilege, and a worker that is not
# root runs its tasks as its own user (--task-user only applies to root
# workers, which need a user database and capabilities this image lacks).
USER 65532:65532
ENV HOME=/data
WORKDIR /data
VOLUME /data

# The ports the documentation and deploy/compose use (corral has no
# built-in defaults): the HTTP API (8080), the controllers' cluster link
# (QUIC, so UDP, 7001), their liveness link on the same port over TCP, and
# a worker's /healthz, /readyz and /metrics (9100).
EXPOSE 8080/tcp 7001/udp 7001/tcp 9100/tcp

ENTRYPOINT ["/corral"]
CMD ["--help"]
