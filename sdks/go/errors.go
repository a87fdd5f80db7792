// The one error type of the package: what the server refused (its status, stable code and
// message), or that no reply came at all.

package clarify

import (
	"fmt"
	"time"
)

// Codes the client gives an *Error of its own, beside the server's stable codes (`not_found`,
// `already_resolved`, `invalid_answer`, `rate_limited`, ...).
const (
	// CodeUnreachable: no reply came (nothing listens, or the connection broke); Status is 0.
	CodeUnreachable = "unreachable"
	// CodeProtocol: the reply was not clarify's JSON (a proxy's page, say).
	CodeProtocol = "protocol"
)

// Error is every failure the client returns for a call that reached no answer it could use:
// a refusal from the server (Status and its stable Code and Message), or CodeUnreachable when no
// reply came. Compare with errors.As:
//
//	var e *clarify.Error
//	if errors.As(err, &e) && e.Code == "already_resolved" { ... }
type Error struct {
	// Status is the HTTP status; 0 when no reply came.
	Status int
	// Code is the server's stable snake_case code, or CodeUnreachable / CodeProtocol.
	Code string
	// Message says what went wrong, for a person.
	Message string
	// Field names the place in the body at fault, when the server gave one (`answers.q1.values.budget`).
	Field string
	// Record is, on `409 already_resolved`, the request as whoever came first resolved it.
	Record *Record
	// RetryAfter is the server's Retry-After (429, 503), zero when it gave none.
	RetryAfter time.Duration
	// Sent is, when no reply came, whether the call may have reached the server (false when no
	// connection was made, so nothing can have happened there). True for every reply.
	Sent bool
	// Err is the transport's error behind CodeUnreachable.
	Err error
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return "clarify: " + e.Message
	}
	return fmt.Sprintf("clarify: %s (HTTP %d %s)", e.Message, e.Status, e.Code)
}

// Unwrap gives the transport's error of an unreachable server.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether trying again later may succeed: no reply, a gateway in between, too
// many calls or waiters for now, or a store out of reach.
func (e *Error) Temporary() bool {
	switch {
	case e.Status == 0:
		return e.Code == CodeUnreachable
	case e.Status == 429:
		return true
	default:
		return e.Status >= 500
	}
}
