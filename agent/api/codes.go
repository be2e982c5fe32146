package api

// Error codes: stable strings a POS integration can branch on. Messages
// change; codes do not.
const (
	CodeBadJSON          = "bad_json"           // 400: body is not one JSON object of the right shape
	CodeUnknownField     = "unknown_field"      // 400: body has a field the API does not know (a typo?)
	CodeInvalidTask      = "invalid_task"       // 400: task_no, printer, priority or payload/document choice is wrong
	CodeBadPayload       = "bad_payload"        // 400: payload is not base64, or ends inside a command
	CodeBadDocument      = "bad_document"       // 400: document is not a ticket document
	CodeBadTimeout       = "bad_timeout"        // 400: timeout is not a Go duration from 1s to 24h
	CodeBadQuery         = "bad_query"          // 400: a list query parameter is wrong
	CodeUnauthorized     = "unauthorized"       // 401: bearer token missing or wrong
	CodeNotFound         = "not_found"          // 404: no such task (or route)
	CodeUnknownPrinter   = "unknown_printer"    // 404: printer not configured
	CodeMethodNotAllowed = "method_not_allowed" // 405
	CodeConflict         = "conflict"           // 409: action does not fit the task's state
	CodePruned           = "pruned"             // 410: task body deleted by retention
	CodePayloadTooLarge  = "payload_too_large"  // 413
	CodeTooManyRequests  = "too_many_requests"  // 429: too many wrong tokens from this address and Host, and this request lacks the right one; see Retry-After
	CodeUnavailable      = "unavailable"        // 503: shutting down or request cut short
	// 503: the task IS stored, but the core that prints it stopped; it
	// prints after the restart: resend the same task_no, never a new one.
	CodeStoredNotPrinting = "stored_not_printing"
	CodeStorageFull       = "storage_full" // 507
	CodeInternal          = "internal"     // 500
)

// Codes of a task_no already known for another ticket (409): the stored
// task is for another printer, or has other content (its sha256). It is no
// duplicate, so it is not answered as one (docs/DESIGN.md, invariant 12): send
// the new ticket under a new task_no.
const (
	CodeTaskNoOtherPrinter = "task_no_other_printer"
	CodeTaskNoOtherContent = "task_no_other_content"
)

// Codes of the checks in front of every handler of the listener
// (agent/hostcheck, PROTOCOL.md §3 Host check and cross-origin requests).
const (
	CodeCrossOrigin = "cross_origin"        // 403: a page of another site sent this POST through a browser
	CodeMisdirected = "misdirected_request" // 421: the Host is not a name this agent answers for (allowed_hosts)
)

// CodeConfigInvalid is the code of a reload refused because the config file
// has errors (422); the running config stays.
const CodeConfigInvalid = "config_invalid"
