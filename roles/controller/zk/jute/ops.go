package jute

import "fmt"

// NewRequest returns an empty record for the body of a request of type op,
// ready to Decode. Requests without a body (ping, closeSession, whoAmI)
// get *Empty. Ops a client never sends or this package does not speak
// (reconfig, sasl, createSession, deleteContainer) are an
// *UnknownOpError, which a server answers with CodeUnimplemented.
func NewRequest(op Op) (Record, error) {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}, nil
	case OpCreateTTL:
		return &CreateTTLRequest{}, nil
	case OpDelete, OpCheck:
		return &PathVersionRequest{}, nil
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		return &PathWatchRequest{}, nil
	case OpSetData:
		return &SetDataRequest{}, nil
	case OpGetACL, OpSync, OpGetAllChildrenNumber, OpGetEphemerals:
		return &PathRequest{}, nil
	case OpSetACL:
		return &SetACLRequest{}, nil
	case OpMulti, OpMultiRead:
		return &MultiRequest{}, nil
	case OpAuth:
		return &AuthPacket{}, nil
	case OpSetWatches:
		return &SetWatchesRequest{}, nil
	case OpSetWatches2:
		return &SetWatchesRequest{Two: true}, nil
	case OpAddWatch:
		return &AddWatchRequest{}, nil
	case OpCheckWatches, OpRemoveWatches:
		return &WatchesRequest{}, nil
	case OpPing, OpCloseSession, OpWhoAmI:
		return &Empty{}, nil
	}
	return nil, &UnknownOpError{Op: op}
}

// NewResponse returns an empty record for the body of a successful reply
// to a request of type op (a failed reply has no body).
func NewResponse(op Op) (Record, error) {
	switch op {
	case OpCreate, OpSync:
		return &PathResponse{}, nil
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		return &Create2Response{}, nil
	case OpExists, OpSetData, OpSetACL, OpCheck:
		// A lone check (outside multi) is answered like setData, with the
		// node's Stat, by current ZooKeeper (FinalRequestProcessor); 3.8.0
		// never answers one at all.
		return &StatResponse{}, nil
	case OpGetData:
		return &GetDataResponse{}, nil
	case OpGetChildren, OpGetEphemerals:
		return &StringsResponse{}, nil
	case OpGetChildren2:
		return &GetChildren2Response{}, nil
	case OpGetAllChildrenNumber:
		return &Int32Response{}, nil
	case OpAddWatch:
		// ZooKeeper answers addWatch with an ErrorResponse holding 0, not
		// an empty body; clients read the four bytes.
		return &Int32Response{}, nil
	case OpGetACL:
		return &GetACLResponse{}, nil
	case OpMulti, OpMultiRead:
		return &MultiResponse{}, nil
	case OpWhoAmI:
		return &WhoAmIResponse{}, nil
	case OpDelete, OpPing, OpCloseSession, OpAuth, OpSetWatches,
		OpSetWatches2, OpCheckWatches, OpRemoveWatches:
		return &Empty{}, nil
	}
	return nil, &UnknownOpError{Op: op}
}

// Request is a decoded client frame: its header and its body.
type Request struct {
	Header RequestHeader
	Body   Record // as NewRequest(Header.Type) returns
}

// DecodeRequest decodes a client frame after the connect request: a
// RequestHeader, then the body its type names. An unknown type returns the
// header too, with an *UnknownOpError, so the server can answer that xid
// with CodeUnimplemented rather than drop the connection.
func DecodeRequest(frame []byte) (Request, error) {
	d := NewDecoder(frame)
	var req Request
	if err := req.Header.Decode(d); err != nil {
		return req, fmt.Errorf("request header: %w", err)
	}
	body, err := NewRequest(req.Header.Type)
	if err != nil {
		return req, err
	}
	if err := body.Decode(d); err != nil {
		return req, fmt.Errorf("%v request (xid %d): %w", req.Header.Type, req.Header.Xid, err)
	}
	req.Body = body
	return req, nil
}
