package jute

import "fmt"

// MultiHeader precedes each op of a multi request or response; a header
// with Done set (and Type -1, Err -1) ends the sequence.
type MultiHeader struct {
	Type Op
	Done bool
	Err  Code
}

// multiHeaderLen is a MultiHeader's encoded size.
const multiHeaderLen = 4 + 1 + 4

// Encode implements Record.
func (r *MultiHeader) Encode(e *Encoder) {
	e.Int32(int32(r.Type))
	e.Bool(r.Done)
	e.Int32(int32(r.Err))
}

// Decode implements Record.
func (r *MultiHeader) Decode(d *Decoder) error {
	r.Type = Op(d.Int32())
	r.Done = d.Bool()
	r.Err = Code(d.Int32())
	return d.Err()
}

// multiEnd is the header that ends a multi request or response.
var multiEnd = MultiHeader{Type: -1, Done: true, Err: -1}

// MultiOp is one op of a multi or multiRead request.
type MultiOp struct {
	Type Op
	Req  Record // as NewMultiOpRequest(Type) returns
}

// MultiRequest is the body of multi and multiRead: ops until a header with
// Done. The codec accepts the union of both ops' kinds, as ZooKeeper's
// deserializer does; refusing a read in a multi (or a write in a
// multiRead) is the server's job.
type MultiRequest struct {
	Ops []MultiOp
}

// NewMultiOpRequest returns an empty request record for an op that may
// appear inside a multi or multiRead.
func NewMultiOpRequest(op Op) (Record, error) {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}, nil
	case OpCreateTTL:
		return &CreateTTLRequest{}, nil
	case OpDelete, OpCheck:
		return &PathVersionRequest{}, nil
	case OpSetData:
		return &SetDataRequest{}, nil
	case OpGetChildren, OpGetData:
		return &PathWatchRequest{}, nil
	}
	return nil, &UnknownOpError{Op: op}
}

// Encode implements Record.
func (r *MultiRequest) Encode(e *Encoder) {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Type, Err: -1}
		h.Encode(e)
		if op.Req != nil {
			op.Req.Encode(e)
		}
	}
	multiEnd.Encode(e)
}

// Decode implements Record. A missing end header is ErrTruncated.
func (r *MultiRequest) Decode(d *Decoder) error {
	r.Ops = r.Ops[:0]
	for {
		var h MultiHeader
		if err := h.Decode(d); err != nil {
			return fmt.Errorf("multi op %d header: %w", len(r.Ops), err)
		}
		if h.Done {
			return nil
		}
		req, err := NewMultiOpRequest(h.Type)
		if err != nil {
			return fmt.Errorf("multi op %d: %w", len(r.Ops), err)
		}
		if err := req.Decode(d); err != nil {
			return fmt.Errorf("multi op %d (%v): %w", len(r.Ops), h.Type, err)
		}
		// Each op consumed at least a header, so the loop ends with the
		// input: there is no count to lie about.
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Req: req})
	}
}

// MultiResult is one op's result in a multi response. Type is the op's
// type, or OpError with Err set (ZooKeeper then sends Err again as the
// body); Resp is the op's response record, as NewMultiOpResponse(Type)
// returns, nil for delete, check and error.
type MultiResult struct {
	Type Op
	Err  Code
	Resp Record
}

// MultiResponse answers multi and multiRead. When one op of a multi fails,
// ZooKeeper reports every op as OpError: the failing one with its code,
// the others with CodeOK (before it) or CodeRuntimeInconsistency (after).
type MultiResponse struct {
	Results []MultiResult
}

// NewMultiOpResponse returns an empty response record for a result of
// type op in a multi response, nil for ops whose result has no body.
func NewMultiOpResponse(op Op) (Record, error) {
	switch op {
	case OpCreate:
		return &PathResponse{}, nil
	case OpCreate2:
		return &Create2Response{}, nil
	case OpSetData:
		return &StatResponse{}, nil
	case OpGetChildren:
		return &StringsResponse{}, nil
	case OpGetData:
		return &GetDataResponse{}, nil
	case OpDelete, OpCheck, OpError:
		return nil, nil
	}
	return nil, &UnknownOpError{Op: op}
}

// Encode implements Record.
func (r *MultiResponse) Encode(e *Encoder) {
	for _, res := range r.Results {
		h := MultiHeader{Type: res.Type, Err: res.Err}
		h.Encode(e)
		if res.Type == OpError {
			e.Int32(int32(res.Err))
		} else if res.Resp != nil {
			res.Resp.Encode(e)
		}
	}
	multiEnd.Encode(e)
}

// Decode implements Record.
func (r *MultiResponse) Decode(d *Decoder) error {
	r.Results = r.Results[:0]
	for {
		var h MultiHeader
		if err := h.Decode(d); err != nil {
			return fmt.Errorf("multi result %d header: %w", len(r.Results), err)
		}
		if h.Done {
			return nil
		}
		res := MultiResult{Type: h.Type, Err: h.Err}
		resp, err := NewMultiOpResponse(h.Type)
		if err != nil {
			return fmt.Errorf("multi result %d: %w", len(r.Results), err)
		}
		switch {
		case h.Type == OpError:
			// Like ZooKeeper's client, trust the body's code.
			res.Err = Code(d.Int32())
		case resp != nil:
			resp.Decode(d)
			res.Resp = resp
		}
		if d.Err() != nil {
			return fmt.Errorf("multi result %d (%v): %w", len(r.Results), h.Type, d.Err())
		}
		r.Results = append(r.Results, res)
	}
}
