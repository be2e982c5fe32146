package pair

import "errors"

// Errors that end Wait because of what the cloud answered; callers tell them
// apart with errors.Is. Their text is written for the person at the till.
var (
	// ErrExpired means the code ran out before a manager approved it (the
	// cloud answered expired_token, or its expires_in passed). Nothing is
	// stored; pairing must start again with a new code.
	ErrExpired = errors.New("the code expired: run printgate pair again")
	// ErrDenied means a manager refused the pairing in the cloud (the cloud
	// answered access_denied).
	ErrDenied = errors.New("the pairing was refused in the cloud")
)
