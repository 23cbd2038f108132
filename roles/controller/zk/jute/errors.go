package jute

import (
	"errors"
	"fmt"
)

// Decoding errors. A decode error means the peer sent something that is not
// the record it claimed, so the server's only sane answer is to close that
// connection; they are sentinels so it can tell them from I/O errors.
var (
	// ErrTruncated: the input ended inside a field.
	ErrTruncated = errors.New("jute: truncated input")
	// ErrBadLength: a buffer, string or vector length is negative (other
	// than -1, null) or larger than the bytes that remain could hold.
	ErrBadLength = errors.New("jute: invalid length")
)

// FrameTooLargeError is returned by FrameReader when a frame's length
// prefix is negative or exceeds the reader's maximum (ZooKeeper's
// jute.maxbuffer). The reader has not allocated anything for it.
type FrameTooLargeError struct {
	Length int32 // the length the peer claimed
	Max    int   // the reader's limit
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("jute: frame length %d is negative or exceeds the maximum %d (jute.maxbuffer)", e.Length, e.Max)
}

// UnknownOpError is returned when a request or response names an opcode
// this package has no record for. ZooKeeper answers such requests with
// Unimplemented; the caller decides.
type UnknownOpError struct {
	Op Op
}

func (e *UnknownOpError) Error() string {
	return fmt.Sprintf("jute: unknown opcode %d", int32(e.Op))
}

// Code is a ZooKeeper error code (KeeperException.Code), the err field of a
// ReplyHeader and of a failed multi op. It implements error so the server
// can return one from deep inside and match it with errors.As.
type Code int32

// ZooKeeper's error codes.
const (
	CodeOK                           Code = 0
	CodeSystemError                  Code = -1
	CodeRuntimeInconsistency         Code = -2
	CodeDataInconsistency            Code = -3
	CodeConnectionLoss               Code = -4
	CodeMarshallingError             Code = -5
	CodeUnimplemented                Code = -6
	CodeOperationTimeout             Code = -7
	CodeBadArguments                 Code = -8
	CodeUnknownSession               Code = -12
	CodeNewConfigNoQuorum            Code = -13
	CodeReconfigInProgress           Code = -14
	CodeAPIError                     Code = -100
	CodeNoNode                       Code = -101
	CodeNoAuth                       Code = -102
	CodeBadVersion                   Code = -103
	CodeNoChildrenForEphemerals      Code = -108
	CodeNodeExists                   Code = -110
	CodeNotEmpty                     Code = -111
	CodeSessionExpired               Code = -112
	CodeInvalidCallback              Code = -113
	CodeInvalidACL                   Code = -114
	CodeAuthFailed                   Code = -115
	CodeSessionMoved                 Code = -118
	CodeNotReadOnly                  Code = -119
	CodeEphemeralOnLocalSession      Code = -120
	CodeNoWatcher                    Code = -121
	CodeRequestTimeout               Code = -122
	CodeReconfigDisabled             Code = -123
	CodeSessionClosedRequireSaslAuth Code = -124
	CodeQuotaExceeded                Code = -125
	CodeThrottled                    Code = -127
)

var codeNames = map[Code]string{
	CodeOK:                           "OK",
	CodeSystemError:                  "SystemError",
	CodeRuntimeInconsistency:         "RuntimeInconsistency",
	CodeDataInconsistency:            "DataInconsistency",
	CodeConnectionLoss:               "ConnectionLoss",
	CodeMarshallingError:             "MarshallingError",
	CodeUnimplemented:                "Unimplemented",
	CodeOperationTimeout:             "OperationTimeout",
	CodeBadArguments:                 "BadArguments",
	CodeUnknownSession:               "UnknownSession",
	CodeNewConfigNoQuorum:            "NewConfigNoQuorum",
	CodeReconfigInProgress:           "ReconfigInProgress",
	CodeAPIError:                     "APIError",
	CodeNoNode:                       "NoNode",
	CodeNoAuth:                       "NoAuth",
	CodeBadVersion:                   "BadVersion",
	CodeNoChildrenForEphemerals:      "NoChildrenForEphemerals",
	CodeNodeExists:                   "NodeExists",
	CodeNotEmpty:                     "NotEmpty",
	CodeSessionExpired:               "SessionExpired",
	CodeInvalidCallback:              "InvalidCallback",
	CodeInvalidACL:                   "InvalidACL",
	CodeAuthFailed:                   "AuthFailed",
	CodeSessionMoved:                 "SessionMoved",
	CodeNotReadOnly:                  "NotReadOnly",
	CodeEphemeralOnLocalSession:      "EphemeralOnLocalSession",
	CodeNoWatcher:                    "NoWatcher",
	CodeRequestTimeout:               "RequestTimeout",
	CodeReconfigDisabled:             "ReconfigDisabled",
	CodeSessionClosedRequireSaslAuth: "SessionClosedRequireSaslAuth",
	CodeQuotaExceeded:                "QuotaExceeded",
	CodeThrottled:                    "Throttled",
}

// String returns ZooKeeper's name for the code, or "Code(n)".
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("Code(%d)", int32(c))
}

// Error makes a Code an error ("zookeeper: NoNode").
func (c Code) Error() string { return "zookeeper: " + c.String() }
