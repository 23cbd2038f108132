package jute

// PathResponse is the answer to create (CreateResponse) and sync
// (SyncResponse): the path, which for a sequential create has the
// sequence number appended.
type PathResponse struct {
	Path string
}

// Encode implements Record.
func (r *PathResponse) Encode(e *Encoder) { e.UString(r.Path) }

// Decode implements Record.
func (r *PathResponse) Decode(d *Decoder) error {
	r.Path = d.UString()
	return d.Err()
}

// Create2Response answers create2, createContainer and createTTL.
type Create2Response struct {
	Path string
	Stat Stat
}

// Encode implements Record.
func (r *Create2Response) Encode(e *Encoder) {
	e.UString(r.Path)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *Create2Response) Decode(d *Decoder) error {
	r.Path = d.UString()
	return r.Stat.Decode(d)
}

// StatResponse answers exists, setData, setACL and a lone check
// (ExistsResponse, SetDataResponse, SetACLResponse).
type StatResponse struct {
	Stat Stat
}

// Encode implements Record.
func (r *StatResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode implements Record.
func (r *StatResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetDataResponse answers getData.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Encode implements Record.
func (r *GetDataResponse) Encode(e *Encoder) {
	e.Buffer(r.Data)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *GetDataResponse) Decode(d *Decoder) error {
	r.Data = d.Buffer()
	return r.Stat.Decode(d)
}

// StringsResponse answers getChildren (GetChildrenResponse) and
// getEphemerals (GetEphemeralsResponse).
type StringsResponse struct {
	Strings []string
}

// Encode implements Record.
func (r *StringsResponse) Encode(e *Encoder) { e.UStrings(r.Strings) }

// Decode implements Record.
func (r *StringsResponse) Decode(d *Decoder) error {
	r.Strings = d.UStrings()
	return d.Err()
}

// GetChildren2Response answers getChildren2.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Encode implements Record.
func (r *GetChildren2Response) Encode(e *Encoder) {
	e.UStrings(r.Children)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *GetChildren2Response) Decode(d *Decoder) error {
	r.Children = d.UStrings()
	return r.Stat.Decode(d)
}

// Int32Response answers getAllChildrenNumber (GetAllChildrenNumberResponse,
// the total number of descendants) and addWatch (an ErrorResponse of 0),
// and is the body of a failed op in a multi response (ErrorResponse, the
// code).
type Int32Response struct {
	Value int32
}

// Encode implements Record.
func (r *Int32Response) Encode(e *Encoder) { e.Int32(r.Value) }

// Decode implements Record.
func (r *Int32Response) Decode(d *Decoder) error {
	r.Value = d.Int32()
	return d.Err()
}

// GetACLResponse answers getACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// Encode implements Record.
func (r *GetACLResponse) Encode(e *Encoder) {
	encodeACLs(e, r.ACL)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *GetACLResponse) Decode(d *Decoder) error {
	r.ACL = decodeACLs(d)
	return r.Stat.Decode(d)
}

// ClientInfo is one identity a session has authenticated as.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// WhoAmIResponse answers whoAmI.
type WhoAmIResponse struct {
	ClientInfo []ClientInfo
}

// Encode implements Record.
func (r *WhoAmIResponse) Encode(e *Encoder) {
	e.VectorLen(len(r.ClientInfo), r.ClientInfo == nil)
	for _, c := range r.ClientInfo {
		e.UString(c.AuthScheme)
		e.UString(c.User)
	}
}

// Decode implements Record.
func (r *WhoAmIResponse) Decode(d *Decoder) error {
	n, null := d.VectorLen(8)
	if null || d.Err() != nil {
		r.ClientInfo = nil
		return d.Err()
	}
	r.ClientInfo = make([]ClientInfo, n)
	for i := range r.ClientInfo {
		r.ClientInfo[i].AuthScheme = d.UString()
		r.ClientInfo[i].User = d.UString()
	}
	return d.Err()
}
