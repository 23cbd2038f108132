package jute

// CreateRequest is the body of create, create2 and createContainer (the
// op decides the response and whether Flags may say container).
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32 // a Flag constant
}

// Encode implements Record.
func (r *CreateRequest) Encode(e *Encoder) {
	e.UString(r.Path)
	e.Buffer(r.Data)
	encodeACLs(e, r.ACL)
	e.Int32(r.Flags)
}

// Decode implements Record.
func (r *CreateRequest) Decode(d *Decoder) error {
	r.Path = d.UString()
	r.Data = d.Buffer()
	r.ACL = decodeACLs(d)
	r.Flags = d.Int32()
	return d.Err()
}

// CreateTTLRequest is createTTL's body: a CreateRequest plus a TTL in
// milliseconds.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64
}

// Encode implements Record.
func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.UString(r.Path)
	e.Buffer(r.Data)
	encodeACLs(e, r.ACL)
	e.Int32(r.Flags)
	e.Int64(r.TTL)
}

// Decode implements Record.
func (r *CreateTTLRequest) Decode(d *Decoder) error {
	r.Path = d.UString()
	r.Data = d.Buffer()
	r.ACL = decodeACLs(d)
	r.Flags = d.Int32()
	r.TTL = d.Int64()
	return d.Err()
}

// PathVersionRequest is the body of delete (DeleteRequest) and check
// (CheckVersionRequest): a path and an expected version, -1 for any.
type PathVersionRequest struct {
	Path    string
	Version int32
}

// Encode implements Record.
func (r *PathVersionRequest) Encode(e *Encoder) {
	e.UString(r.Path)
	e.Int32(r.Version)
}

// Decode implements Record.
func (r *PathVersionRequest) Decode(d *Decoder) error {
	r.Path = d.UString()
	r.Version = d.Int32()
	return d.Err()
}

// PathWatchRequest is the body of exists, getData, getChildren and
// getChildren2 (ExistsRequest, GetDataRequest, GetChildrenRequest,
// GetChildren2Request share this shape): a path and whether to leave a
// watch.
type PathWatchRequest struct {
	Path  string
	Watch bool
}

// Encode implements Record.
func (r *PathWatchRequest) Encode(e *Encoder) {
	e.UString(r.Path)
	e.Bool(r.Watch)
}

// Decode implements Record.
func (r *PathWatchRequest) Decode(d *Decoder) error {
	r.Path = d.UString()
	r.Watch = d.Bool()
	return d.Err()
}

// PathRequest is the body of sync, getACL, getAllChildrenNumber and
// getEphemerals (whose path is a prefix).
type PathRequest struct {
	Path string
}

// Encode implements Record.
func (r *PathRequest) Encode(e *Encoder) { e.UString(r.Path) }

// Decode implements Record.
func (r *PathRequest) Decode(d *Decoder) error {
	r.Path = d.UString()
	return d.Err()
}

// SetDataRequest is setData's body.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// Encode implements Record.
func (r *SetDataRequest) Encode(e *Encoder) {
	e.UString(r.Path)
	e.Buffer(r.Data)
	e.Int32(r.Version)
}

// Decode implements Record.
func (r *SetDataRequest) Decode(d *Decoder) error {
	r.Path = d.UString()
	r.Data = d.Buffer()
	r.Version = d.Int32()
	return d.Err()
}

// SetACLRequest is setACL's body; Version is the expected aversion.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// Encode implements Record.
func (r *SetACLRequest) Encode(e *Encoder) {
	e.UString(r.Path)
	encodeACLs(e, r.ACL)
	e.Int32(r.Version)
}

// Decode implements Record.
func (r *SetACLRequest) Decode(d *Decoder) error {
	r.Path = d.UString()
	r.ACL = decodeACLs(d)
	r.Version = d.Int32()
	return d.Err()
}

// SetWatchesRequest is the body of setWatches and setWatches2, which a
// client sends (with XidSetWatches) after reconnecting to re-arm its
// watches: the server fires at once any whose node changed after
// RelativeZxid. The persistent lists exist only in setWatches2; Two says
// which one this is.
type SetWatchesRequest struct {
	Two                        bool
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Encode implements Record.
func (r *SetWatchesRequest) Encode(e *Encoder) {
	e.Int64(r.RelativeZxid)
	e.UStrings(r.DataWatches)
	e.UStrings(r.ExistWatches)
	e.UStrings(r.ChildWatches)
	if r.Two {
		e.UStrings(r.PersistentWatches)
		e.UStrings(r.PersistentRecursiveWatches)
	}
}

// Decode implements Record.
func (r *SetWatchesRequest) Decode(d *Decoder) error {
	r.RelativeZxid = d.Int64()
	r.DataWatches = d.UStrings()
	r.ExistWatches = d.UStrings()
	r.ChildWatches = d.UStrings()
	if r.Two {
		r.PersistentWatches = d.UStrings()
		r.PersistentRecursiveWatches = d.UStrings()
	}
	return d.Err()
}

// AddWatchRequest is addWatch's body; Mode is an AddWatch constant.
type AddWatchRequest struct {
	Path string
	Mode int32
}

// Encode implements Record.
func (r *AddWatchRequest) Encode(e *Encoder) {
	e.UString(r.Path)
	e.Int32(r.Mode)
}

// Decode implements Record.
func (r *AddWatchRequest) Decode(d *Decoder) error {
	r.Path = d.UString()
	r.Mode = d.Int32()
	return d.Err()
}

// WatchesRequest is the body of checkWatches and removeWatches
// (CheckWatchesRequest, RemoveWatchesRequest); Type is a Watcher constant.
type WatchesRequest struct {
	Path string
	Type int32
}

// Encode implements Record.
func (r *WatchesRequest) Encode(e *Encoder) {
	e.UString(r.Path)
	e.Int32(r.Type)
}

// Decode implements Record.
func (r *WatchesRequest) Decode(d *Decoder) error {
	r.Path = d.UString()
	r.Type = d.Int32()
	return d.Err()
}
