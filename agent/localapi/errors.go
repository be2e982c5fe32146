package localapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"printgate/agent/api"
	"printgate/spool"
)

// apiError is an answer that is not a success: the HTTP status, the code,
// a message the integrator can act on, and the underlying cause, which is
// logged and never sent.
type apiError struct {
	status  int
	code    string
	message string
	cause   error
	// retryAfter, when set, is the Retry-After in seconds.
	retryAfter int64
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON shape of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeError answers with e. Statuses that invite a retry say when.
func writeError(w http.ResponseWriter, e *apiError) {
	switch {
	case e.retryAfter > 0:
		w.Header().Set("Retry-After", strconv.FormatInt(e.retryAfter, 10))
	case e.status == http.StatusInsufficientStorage, e.status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "30")
	}
	writeJSON(w, e.status, errorBody{Error: errorDetail{Code: e.code, Message: e.message}})
}

// fromBackend classifies an error from the Backend. taskNo and printer,
// when known, make the message specific. Validation errors (ErrInvalid,
// ErrTooLarge) are shown as they are: the spool writes them for the
// submitter, naming the field and the rule. Everything unclassified is a 500
// whose message reveals nothing of the cause.
func fromBackend(err error, taskNo, printer string) *apiError {
	e := classify(err, taskNo, printer)
	e.cause = err
	return e
}

func classify(err error, taskNo, printer string) *apiError {
	switch {
	case errors.Is(err, api.ErrUnknownPrinter):
		if printer != "" {
			return newError(http.StatusNotFound, api.CodeUnknownPrinter, "printer %q is not configured on this agent; use a name from GET /api/v1/printers", printer)
		}
		return newError(http.StatusNotFound, api.CodeUnknownPrinter, "the task's printer is not configured on this agent any more; use a name from GET /api/v1/printers")
	case errors.Is(err, spool.ErrTooLarge):
		return newError(http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge, "%s; send a smaller payload or document", err)
	case errors.Is(err, spool.ErrInvalid):
		return newError(http.StatusBadRequest, api.CodeInvalidTask, "%s", err)
	case errors.As(err, new(*spool.QuotaError)):
		return newError(http.StatusInsufficientStorage, api.CodeStorageFull, "the agent's spool holds as many tasks from this door as its share allows and takes no new ones from it for now; tasks already accepted are safe and will print. Retry later. %s", quotaDetail(err))
	case errors.Is(err, spool.ErrFull):
		return newError(http.StatusInsufficientStorage, api.CodeStorageFull, "the agent's spool is full and takes no new tasks; tasks already accepted are safe and will print. Retry later; the store should free disk space on the agent's PC")
	case errors.Is(err, spool.ErrReclaimed):
		return newError(http.StatusGone, api.CodePruned, "task %q lost its ticket before its retention window ended: it had finished and the spool needed the room for new tickets (it was full); submit the ticket again under a new task_no, and raise [spool] max_size or the door's quota to keep tickets longer", taskNo)
	case errors.Is(err, spool.ErrPruned):
		return newError(http.StatusGone, api.CodePruned, "task %q finished longer ago than the retention window and its ticket was deleted; submit the ticket again under a new task_no", taskNo)
	case errors.Is(err, spool.ErrNotFound):
		return newError(http.StatusNotFound, api.CodeNotFound, "no task %q is known to this agent", taskNo)
	case errors.Is(err, api.ErrTaskNoTaken):
		code := api.CodeTaskNoOtherContent
		if tt := (*api.TaskNoTaken)(nil); errors.As(err, &tt) {
			code = tt.Code()
		}
		return newError(http.StatusConflict, code, "%s", err)
	case errors.Is(err, api.ErrConflict), errors.Is(err, spool.ErrIllegalTransition):
		return newError(http.StatusConflict, api.CodeConflict, "task %q is in a state that does not allow this", taskNo)
	case errors.Is(err, api.ErrBadDocument):
		return newError(http.StatusBadRequest, api.CodeBadDocument, "%s", strings.TrimPrefix(err.Error(), api.ErrBadDocument.Error()+": "))
	case errors.Is(err, api.ErrStoredNotPrinting):
		if sn := (*api.StoredNotPrinting)(nil); errors.As(err, &sn) {
			taskNo = sn.TaskNo
		}
		return newError(http.StatusServiceUnavailable, api.CodeStoredNotPrinting, "task %q IS stored on the agent, but the agent's core stopped before printing it; it prints after the agent restarts (its service manager restarts it within seconds). Resend the SAME task_no later: it is answered as its duplicate and never prints twice. Never resubmit this order under a new task_no: it would print twice", taskNo)
	case errors.Is(err, api.ErrBadPayload):
		return newError(http.StatusBadRequest, api.CodeBadPayload, "%s", strings.TrimPrefix(err.Error(), api.ErrBadPayload.Error()+": "))
	case errors.Is(err, api.ErrRateLimited):
		e := newError(http.StatusTooManyRequests, api.CodeTooManyRequests, "%s. Nothing was taken; resubmitting the same task_no never prints twice", rateDetail(err))
		if rl := (*api.RateLimited)(nil); errors.As(err, &rl) {
			e.retryAfter = max(1, int64((rl.RetryAfter+time.Second-1)/time.Second))
		}
		return e
	case errors.Is(err, api.ErrUnavailable):
		return newError(http.StatusServiceUnavailable, api.CodeUnavailable, "the agent cannot print right now and took nothing: %s. Retry later (resubmitting the same task_no never prints twice)", unwrapUnavailable(err))
	case errors.Is(err, spool.ErrClosed):
		return newError(http.StatusServiceUnavailable, api.CodeUnavailable, "the agent is shutting down; retry in a few seconds")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return newError(http.StatusServiceUnavailable, api.CodeUnavailable, "the request was cut short before the agent finished; retry it (resubmitting the same task_no never prints twice)")
	}
	return newError(http.StatusInternalServerError, api.CodeInternal, "the agent failed to handle the request and logged why; retry (resubmitting the same task_no never prints twice) and check the agent's log if it persists")
}

// quotaDetail is the part of a quota refusal that names the door, its use
// and the key: what follows "spool full: ".
func quotaDetail(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, spool.ErrFull.Error()+": "); i >= 0 {
		msg = msg[i+len(spool.ErrFull.Error())+2:]
	}
	return msg
}

// rateDetail is the rate refusal's own sentence, without the task prefix.
func rateDetail(err error) string {
	if rl := (*api.RateLimited)(nil); errors.As(err, &rl) {
		return rl.Error()
	}
	return err.Error()
}

// unwrapUnavailable is the reason part of an ErrUnavailable error, for the
// answer: what follows "agent unavailable: ".
func unwrapUnavailable(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, api.ErrUnavailable.Error()+": "); i >= 0 {
		return msg[i+len(api.ErrUnavailable.Error())+2:]
	}
	return msg
}
