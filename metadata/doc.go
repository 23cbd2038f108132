// Package metadata is corral's replicated metadata state machine: a
// deterministic, in-memory key/value store with etcd-style revisions that is
// driven by committed raft log entries.
//
// The package is pure: it performs no I/O and never consults the clock or a
// random source, and nothing in Apply or Snapshot depends on map iteration
// order. Every replica that applies the same sequence of log entries
// therefore reaches a byte-identical state, which the tests check by
// comparing Snapshot output.
//
// Growth model (modelled on Nomad's fsm.go): every log entry is a versioned
// Command envelope carrying an Op. Apply decodes the envelope and dispatches
// on the Op to one applyXxx function per op. New features (worker registry,
// leases, locks, jobs) add new Op values with their own payload codec and
// apply function. An Op may carry IgnoreUnknownTypeFlag, which tells replicas
// that do not know the op that skipping it is safe; without the flag an
// unknown op is an error that the controller must treat as "this binary is
// too old for the log" (see ErrUnknownOp). The byte layouts are documented in
// docs/ENCODING.md.
package metadata
