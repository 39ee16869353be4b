package readmodel

import (
	"errors"
	"fmt"
)

// Code is one of SPEC §7's four error codes: the complete set.
type Code string

const (
	BadRequest    Code = "bad_request"    // 400
	NotFound      Code = "not_found"      // 404
	RateLimited   Code = "rate_limited"   // 429
	UpstreamError Code = "upstream_error" // 502
	// Internal is never sent as a code: the HTTP error handler answers it as
	// upstream_error without passing the message through. It marks a
	// failure of marketd itself (a Badger read error, say).
	Internal Code = "internal"
)

// Error is marketd's application error. Adapters translate foreign errors
// (Badger, NATS, HTTP clients) into it at their boundary; httpapi maps it to
// HTTP in exactly one place.
type Error struct {
	Code    Code
	Message string
	Err     error // optional cause, never shown to clients
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with the given code and message around cause.
func Wrap(code Code, cause error, message string) *Error {
	return &Error{Code: code, Message: message, Err: cause}
}

// ErrorCode returns the code of the first *Error in err's chain, Internal for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// ErrorMessage returns the client-facing message of err: the *Error's
// message, or a generic text for anything else (foreign error text is never
// passed through).
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != Internal {
		return e.Message
	}
	return "a data source is unavailable"
}
