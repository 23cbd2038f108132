package jute

// ProtocolVersion is the only protocolVersion ZooKeeper clients send and
// servers answer.
const ProtocolVersion = 0

// PasswordLen is the length of the session password ZooKeeper servers
// issue; clients echo it back on reconnect.
const PasswordLen = 16

// ConnectRequest is the first frame a client sends (without a
// RequestHeader). ReadOnly is a trailing field 3.4+ clients send and older
// ones (and go-zookeeper) omit; HasReadOnly says whether it was there, and
// the server must mirror that in its ConnectResponse, since a client that
// did not send it will not expect it back.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32 // requested session timeout, milliseconds
	SessionID       int64 // 0 for a new session
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// Encode implements Record.
func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int32(r.ProtocolVersion)
	e.Int64(r.LastZxidSeen)
	e.Int32(r.TimeOut)
	e.Int64(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode implements Record.
func (r *ConnectRequest) Decode(d *Decoder) error {
	r.ProtocolVersion = d.Int32()
	r.LastZxidSeen = d.Int64()
	r.TimeOut = d.Int32()
	r.SessionID = d.Int64()
	r.Passwd = d.Buffer()
	// As ZooKeeper's ProtocolManager does: the flag is there if a byte is.
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	r.ReadOnly = r.HasReadOnly && d.Bool()
	return d.Err()
}

// ConnectResponse answers a ConnectRequest. A SessionID of 0 tells the
// client its session expired. HasReadOnly should copy the request's.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32 // negotiated session timeout, milliseconds
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// Encode implements Record.
func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int32(r.ProtocolVersion)
	e.Int32(r.TimeOut)
	e.Int64(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode implements Record.
func (r *ConnectResponse) Decode(d *Decoder) error {
	r.ProtocolVersion = d.Int32()
	r.TimeOut = d.Int32()
	r.SessionID = d.Int64()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	r.ReadOnly = r.HasReadOnly && d.Bool()
	return d.Err()
}

// RequestHeader starts every frame after the connect request.
type RequestHeader struct {
	Xid  int32 // client-chosen; see the Xid constants for the special ones
	Type Op
}

// Encode implements Record.
func (r *RequestHeader) Encode(e *Encoder) {
	e.Int32(r.Xid)
	e.Int32(int32(r.Type))
}

// Decode implements Record.
func (r *RequestHeader) Decode(d *Decoder) error {
	r.Xid = d.Int32()
	r.Type = Op(d.Int32())
	return d.Err()
}

// ReplyHeader starts every server frame after the connect response. When
// Err is not CodeOK no body follows.
type ReplyHeader struct {
	Xid  int32
	Zxid int64 // the server's last zxid; clients expect it never to decrease
	Err  Code
}

// Encode implements Record.
func (r *ReplyHeader) Encode(e *Encoder) {
	e.Int32(r.Xid)
	e.Int64(r.Zxid)
	e.Int32(int32(r.Err))
}

// Decode implements Record.
func (r *ReplyHeader) Decode(d *Decoder) error {
	r.Xid = d.Int32()
	r.Zxid = d.Int64()
	r.Err = Code(d.Int32())
	return d.Err()
}

// Stat is a znode's metadata as clients see it.
type Stat struct {
	Czxid          int64 // zxid of the create
	Mzxid          int64 // zxid of the last data change
	Ctime          int64 // milliseconds since the epoch
	Mtime          int64
	Version        int32 // data version
	Cversion       int32 // children version
	Aversion       int32 // ACL version
	EphemeralOwner int64 // owning session, 0 if persistent
	DataLength     int32
	NumChildren    int32
	Pzxid          int64 // zxid of the last change to the children
}

// statLen is a Stat's encoded size.
const statLen = 8*4 + 4*3 + 8 + 4*2 + 8

// Encode implements Record.
func (r *Stat) Encode(e *Encoder) {
	e.Int64(r.Czxid)
	e.Int64(r.Mzxid)
	e.Int64(r.Ctime)
	e.Int64(r.Mtime)
	e.Int32(r.Version)
	e.Int32(r.Cversion)
	e.Int32(r.Aversion)
	e.Int64(r.EphemeralOwner)
	e.Int32(r.DataLength)
	e.Int32(r.NumChildren)
	e.Int64(r.Pzxid)
}

// Decode implements Record.
func (r *Stat) Decode(d *Decoder) error {
	r.Czxid = d.Int64()
	r.Mzxid = d.Int64()
	r.Ctime = d.Int64()
	r.Mtime = d.Int64()
	r.Version = d.Int32()
	r.Cversion = d.Int32()
	r.Aversion = d.Int32()
	r.EphemeralOwner = d.Int64()
	r.DataLength = d.Int32()
	r.NumChildren = d.Int32()
	r.Pzxid = d.Int64()
	return d.Err()
}

// ID is an ACL identity: a scheme ("world", "digest", "ip", "auth", ...)
// and the id within it ("anyone", "user:base64(sha1)", ...).
type ID struct {
	Scheme string
	ID     string
}

// ACL grants Perms (a mask of the Perm constants) to an ID. On the wire
// the perms come first.
type ACL struct {
	Perms int32
	ID    ID
}

// aclMinLen is the fewest bytes an ACL takes (perms and two empty strings).
const aclMinLen = 4 + 4 + 4

// Encode implements Record.
func (r *ACL) Encode(e *Encoder) {
	e.Int32(r.Perms)
	e.UString(r.ID.Scheme)
	e.UString(r.ID.ID)
}

// Decode implements Record.
func (r *ACL) Decode(d *Decoder) error {
	r.Perms = d.Int32()
	r.ID.Scheme = d.UString()
	r.ID.ID = d.UString()
	return d.Err()
}

func encodeACLs(e *Encoder, acls []ACL) {
	e.VectorLen(len(acls), acls == nil)
	for i := range acls {
		acls[i].Encode(e)
	}
}

func decodeACLs(d *Decoder) []ACL {
	n, null := d.VectorLen(aclMinLen)
	if null || d.Err() != nil {
		return nil
	}
	out := make([]ACL, n)
	for i := range out {
		if out[i].Decode(d) != nil {
			return nil
		}
	}
	return out
}

// WatcherEvent is a watch notification, sent with ReplyHeader.Xid ==
// XidNotification.
type WatcherEvent struct {
	Type  EventType
	State State
	Path  string
}

// Encode implements Record.
func (r *WatcherEvent) Encode(e *Encoder) {
	e.Int32(int32(r.Type))
	e.Int32(int32(r.State))
	e.UString(r.Path)
}

// Decode implements Record.
func (r *WatcherEvent) Decode(d *Decoder) error {
	r.Type = EventType(d.Int32())
	r.State = State(d.Int32())
	r.Path = d.UString()
	return d.Err()
}

// AuthPacket is setAuth's body (sent with XidAuth). Type is unused by
// ZooKeeper and sent as 0.
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// Encode implements Record.
func (r *AuthPacket) Encode(e *Encoder) {
	e.Int32(r.Type)
	e.UString(r.Scheme)
	e.Buffer(r.Auth)
}

// Decode implements Record.
func (r *AuthPacket) Decode(d *Decoder) error {
	r.Type = d.Int32()
	r.Scheme = d.UString()
	r.Auth = d.Buffer()
	return d.Err()
}

// Empty is the body of requests and responses that have none (ping,
// closeSession, whoAmI's request, delete's response, ...).
type Empty struct{}

// Encode implements Record.
func (*Empty) Encode(*Encoder) {}

// Decode implements Record.
func (*Empty) Decode(d *Decoder) error { return d.Err() }
