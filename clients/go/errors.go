package aophub

import (
	"errors"
	"fmt"

	"github.com/aophub/aophub/gen/go/aop"
)

// Codes of the errors the hub gives, as they go on the wire (docs/protocol.md).
// A request the hub understood and refused carries a rejection code; an
// envelope it could not decode, route or execute carries a protocol error code.
const (
	// Rejections (aop.Rejection.code).
	CodeInvalidArgument    = "INVALID_ARGUMENT"
	CodeNotFound           = "NOT_FOUND"
	CodeAlreadyExists      = "ALREADY_EXISTS"
	CodeFailedPrecondition = "FAILED_PRECONDITION"
	CodeUnavailable        = "UNAVAILABLE"
	CodeResourceExhausted  = "RESOURCE_EXHAUSTED"
	// Protocol errors (aop.ProtocolError.code).
	CodeInvalidPayload       = "INVALID_PAYLOAD"
	CodeUnsupportedNamespace = "UNSUPPORTED_NAMESPACE"
	CodeUnsupportedMessage   = "UNSUPPORTED_MESSAGE"
	CodeWrongEndpoint        = "WRONG_ENDPOINT"
	CodeInternal             = "INTERNAL"
	// The WebSocket upgrade was refused (HTTP 401 / 403).
	CodeUnauthenticated  = "UNAUTHENTICATED"
	CodePermissionDenied = "PERMISSION_DENIED"
)

// ErrClosed is returned by requests and watches of a Client that was closed.
var ErrClosed = errors.New("aophub: client closed")

// Error is a refusal or protocol error from the hub, or a failure of the
// client that has the same meaning (a frame over the limit, a refused
// upgrade). Test it with errors.As and compare Code with the Code constants.
type Error struct {
	// Code is one of the Code constants (or a code a newer hub added).
	Code string
	// Message is the hub's explanation, meant for people.
	Message string
	// Retryable tells whether the same request may succeed later.
	Retryable bool
	cause     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("aophub: %s: %s", e.Code, e.Message)
}

// Unwrap returns the underlying failure (a network error), if any.
func (e *Error) Unwrap() error { return e.cause }

// ErrorCode returns the Code of err if it is (or wraps) an *Error, else "".
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func rejection(r *aop.Rejection) *Error {
	return &Error{Code: r.GetCode(), Message: r.GetMessage(), Retryable: r.GetRetryable()}
}

func protocolError(p *aop.ProtocolError) *Error {
	return &Error{Code: p.GetCode(), Message: p.GetMessage(), Retryable: p.GetRetryable()}
}
