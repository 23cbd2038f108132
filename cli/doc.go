// Package cli is corral's command line. Each command is built here and runs in-process, so that main only picks
// the exit code. The commands, as App lists them:
//
//   - corral run: run a node: --role=controller (a voter of the metadata quorum, serving the HTTP API), worker or
//     combined (both in one process).
//   - corral dev: a throwaway cluster on this machine for trying corral out: a controller and --workers workers.
//   - corral kv put, get, del, ls: read and write keys in the metadata store (put --prev-revision is
//     compare-and-set, --lease makes a key ephemeral).
//   - corral status: the cluster id, the leader and each controller's replication progress.
//   - corral certs ca, issue, create, revoke, revoked: the cluster CA; one certificate per node naming its role and
//     id; the development shortcut that puts a CA and a node certificate in one directory; and the replicated
//     deny-list of certificates.
//   - corral token create, list, revoke: join tokens, which a new worker trades (corral run --join-token) for a
//     certificate signed by a controller started with --ca-dir.
//   - corral acl bootstrap, policy, token: API tokens scoped by policies (resource, name prefix, read or
//     write); acl policy create, list, delete; acl token create, list, delete, self.
//   - corral bench kv, lock, watch, lease, workers, schedule: measure a running cluster (package cli/bench).
//   - corral controller list, add, remove, transfer-leader, recover: manage the controller quorum; recover is
//     disaster recovery of a stopped controller.
//   - corral snapshot save, restore: back up the cluster's state, or build a new cluster's data dirs from a backup.
//   - corral supervise: hidden; runs one task under its worker's supervision (the worker starts it).
//   - corral lock: run a command while holding a distributed lock, with a fencing token in its environment.
//   - corral elect: run a command while this instance leads an election.
//   - corral lease grant, ls, show, keepalive, revoke: leases, the sessions of ephemeral keys and locks.
//   - corral watch: print the changes under a key prefix as JSON lines.
//   - corral worker list, drain: inspect the workers and move work off one.
//   - corral job run, list, status, stop: submit (JSON or YAML), inspect and stop jobs.
//   - corral alloc list, status, logs, restart: the allocations (job instances placed on workers) and their output.
//   - corral service register, deregister, ls: the service registry (corral-worker lists the alive workers).
//   - corral zk import: copy a live ZooKeeper tree (data, ACLs, node types) into a ZooKeeper-protocol endpoint,
//     corral's --zk-addr, to move off ZooKeeper (docs/ZOOKEEPER.md).
//   - corral version: the version, commit and Go version of this binary (also corral --version).
//   - corral completion bash, zsh, fish: shell completion scripts.
//
// Every flag can also be set through an environment variable CORRAL_<FLAG> (e.g. --data-dir and CORRAL_DATA_DIR);
// the command line wins. Commands return errors instead of exiting so that main decides the exit code (1) and tests
// can run the App in-process.
//
// The HTTP API's answers are decoded into the client package's types or cli's own view types (specview.go), never
// into the state machine's metadata types, so that the state machine can change without changing what the CLI shows.
package cli
