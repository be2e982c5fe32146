package localapi

import (
	"context"
	"errors"
	"net/http"
)

// CodeConfigInvalid is the code of a reload refused because the config file
// has errors (422); the running config stays.
const CodeConfigInvalid = "config_invalid"

// ErrConfigRefused wraps the errors of a config a reload refused: the
// running config stays in force.
var ErrConfigRefused = errors.New("config refused; the running config is kept")

// ReloadResult is what one config reload did, or why it did nothing.
type ReloadResult struct {
	// Config is the file that was read.
	Config string `json:"config"`
	// Applied is true when the file was valid and its printers took effect.
	Applied bool `json:"applied"`
	// Added, Changed and Removed name the printers whose lanes started,
	// were replaced, and stopped.
	Added   []string `json:"added"`
	Changed []string `json:"changed"`
	Removed []string `json:"removed"`
	// RestartNeeded names the settings (listen, tls, data_dir, cloud,
	// api_token, ...) that differ from the running ones and take effect
	// only when the agent restarts: a reload does not apply them.
	RestartNeeded []string `json:"restart_needed"`
	// Notes say what became of removed printers' waiting tasks.
	Notes []string `json:"notes,omitempty"`
	// Errors are the config's problems when the reload was refused, one
	// "file:line: message" each.
	Errors []string `json:"errors,omitempty"`
}

// Reloader is implemented by a backend that can reload its config without
// a restart (the agent). Reload applies the config file's printers, or
// refuses a bad file with an error wrapping ErrConfigRefused and the
// result's Errors filled; reloads run one at a time.
type Reloader interface {
	Reload(ctx context.Context) (ReloadResult, error)
}

// reloadBody is the answer of a refused reload: the usual error plus the
// result with every problem.
type reloadBody struct {
	Error  errorDetail  `json:"error"`
	Result ReloadResult `json:"result"`
}

// reload serves POST /api/v1/reload: 200 with the result, 422 with the
// config's errors when it is refused.
func (s *server) reload(w http.ResponseWriter, r *http.Request) {
	rl, ok := s.b.(Reloader)
	if !ok {
		writeError(w, newError(http.StatusNotFound, CodeNotFound, "this agent cannot reload its config"))
		return
	}
	res, err := rl.Reload(r.Context())
	switch {
	case err == nil:
		s.log.Info("config reloaded through the API", "added", res.Added, "changed", res.Changed, "removed", res.Removed, "restart_needed", res.RestartNeeded)
		writeJSON(w, http.StatusOK, res)
	case errors.Is(err, ErrConfigRefused):
		if res.Errors == nil {
			res.Errors = []string{err.Error()}
		}
		writeJSON(w, http.StatusUnprocessableEntity, reloadBody{
			Error:  errorDetail{Code: CodeConfigInvalid, Message: err.Error()},
			Result: res,
		})
	default:
		s.fail(w, r, fromBackend(err, "", ""))
	}
}
