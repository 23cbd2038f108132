package watch

import "errors"

// Kind is the kind of a registered watch. The server maps each request
// that sets a watch (getData, exists, getChildren, addWatch) to one Kind.
type Kind uint8

// The kinds of watch. The numbering is ours (Kind 0 is invalid so a zero
// value is never a real watch); ZooKeeper's wire numbers are the Type*
// constants and the addWatch modes.
const (
	// Data is a getData watch (one-shot).
	Data Kind = 1
	// Exist is an exists watch (one-shot), on an existing or missing node:
	// ZooKeeper keeps both with the data watches, so it fires on data
	// changes too.
	Exist Kind = 2
	// Child is a getChildren watch (one-shot).
	Child Kind = 3
	// Persistent is addWatch mode PERSISTENT (0): it stays until removed.
	Persistent Kind = 4
	// PersistentRecursive is addWatch mode PERSISTENT_RECURSIVE (1): it
	// watches the node and all its descendants, and stays until removed.
	PersistentRecursive Kind = 5
)

// ZooKeeper's event types (Watcher.Event.EventType), the Type of a
// Delivery: the numbers on the wire in a WatcherEvent.
const (
	EventNodeCreated         = 1
	EventNodeDeleted         = 2
	EventNodeDataChanged     = 3
	EventNodeChildrenChanged = 4
)

// ZooKeeper's WatcherType, as removeWatches and checkWatches send it.
const (
	TypeChildren            = 1
	TypeData                = 2
	TypeAny                 = 3
	TypePersistent          = 4
	TypePersistentRecursive = 5
)

// ConnID identifies a client connection (the server numbers them). Watches
// belong to a connection, not a session: ZooKeeper clients re-arm them with
// setWatches after reconnecting.
type ConnID uint64

// Delivery is one event to send to one connection: a WatcherEvent with
// state SyncConnected, Type and Path.
type Delivery struct {
	Conn ConnID
	Type int32
	Path string
}

// ErrTooMany is returned by Add (and Rearm) when the connection holds its
// limit of watches: the limit keeps one client from exhausting the
// server's memory.
var ErrTooMany = errors.New("watch: too many watches on this connection")

// errKind is returned by Add for a Kind outside Data..PersistentRecursive:
// a server bug, not a client's.
var errKind = errors.New("watch: unknown watch kind")

// SetWatches is what a reconnecting client re-arms (the setWatches and
// setWatches2 requests), one path list per kind.
type SetWatches struct {
	Data, Exist, Child, Persistent, PersistentRecursive []string
}
