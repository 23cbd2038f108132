// Package zk is corral's ZooKeeper port (issue 20): a server that speaks
// the ZooKeeper client protocol (package jute) over TCP, or TLS, and
// keeps its znodes in the replicated state through a Backend.
//
// # Connections
//
// One connection is served by one reader goroutine, which runs the
// connection's requests one after the other, and one writer goroutine
// draining a bounded queue of frames. Watch events are queued into the
// same queue from Applied, which the controller's raft loop calls and
// which must never block: a connection whose queue is full is closed, and
// its client reconnects and re-arms its watches with setWatches.
//
// # Sessions
//
// A session is a lease (metadata/coord.go): the session id is the lease
// id, the negotiated timeout its TTL, and the SHA-256 of the random
// password its SecretHash, so any controller can resume it. Every request
// marks its session active; a batcher refreshes the active sessions with
// one Backend.KeepAlive call per interval, and closes the connections of
// those the leader reports expired. The leader decides expiry, and
// revoking the lease deletes the session's ephemeral nodes.
//
// # Guarantees
//
//   - Writes are linearizable: each is one raft entry, answered only once
//     committed and applied here. A write whose outcome is unknown
//     (timeout, lost leader) is never answered: the connection closes and
//     the client sees ConnectionLoss, as with ZooKeeper.
//   - FIFO per session: requests run in order, so a read after a write on
//     the same session sees it.
//   - Reads come from this controller's applied state and may lag the
//     leader, as ZooKeeper's follower reads do; sync makes them current.
//   - A client sees a watch event before any reply showing the change
//     that fired it (Server.waitFired).
//   - The zxid of every reply header never decreases (raft indexes), and
//     a client that saw a newer zxid than this controller applied is
//     refused at connect, as ZooKeeper does.
//
// # Differences from ZooKeeper
//
//   - ACLs of writes are checked against this controller's state, a
//     moment behind the leader's: a write racing an ACL change may pass
//     under the old ACL.
//   - /zookeeper, /zookeeper/quota and /zookeeper/config are virtual and
//     empty (virtual.go); quotas and reconfig are not supported.
//   - Watch events on a node the session cannot read are not sent (except
//     deletions and NodeChildrenChanged), for every kind of watch, not
//     only recursive ones as in ZooKeeper 3.9.2.
//   - A connection over MaxWatchesPerConn watches is closed.
//   - Schemes: world, digest, ip; "auth" in an ACL becomes the session's
//     digest identities. No SASL, no super digest.
package zk
