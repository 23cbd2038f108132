// Package watch is the ZooKeeper-protocol server's watch registry: which
// connection watches which znode, and which events an applied znode change
// (metadata.ZNodeEvent) must send to whom.
//
// It follows ZooKeeper 3.6+ (WatchManager and DataTree): one-shot data,
// exists and child watches are removed when they fire; persistent and
// persistent-recursive watches (addWatch) stay until removed or their
// connection closes; a connection gets one notification per (event type,
// path) per change however many of its watches match. A parent's
// NodeChildrenChanged is derived here from a child's created or deleted
// event, because the znode tree reports only the change itself.
//
// The package is pure: no I/O, goroutines or clock, so the server owns
// delivery and ordering and the rules can be tested as a table. It is kept
// apart from the server so those rules live in one small place. Every
// operation costs time in the size of its own answer (and the depth of a
// path), never in the number of watches held: a busy server holds many.
package watch
