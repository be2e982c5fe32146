package localapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"printgate/agent/api"
)

// Reloader is implemented by a backend that can reload its config without
// a restart (the agent). Reload applies the config file's printers, or
// refuses a bad file with an error wrapping ErrConfigRefused and the
// result's Errors filled; reloads run one at a time.
type Reloader interface {
	Reload(ctx context.Context) (api.ReloadResult, error)
}

// reloadBody is the answer of a refused reload: the usual error plus the
// result with every problem.
type reloadBody struct {
	Error  errorDetail      `json:"error"`
	Result api.ReloadResult `json:"result"`
}

// reload serves POST /api/v1/reload: 200 with the result, 422 with the
// config's errors when it is refused.
func (s *server) reload(w http.ResponseWriter, r *http.Request) {
	rl, ok := s.b.(Reloader)
	if !ok {
		writeError(w, newError(http.StatusNotFound, api.CodeNotFound, "this agent cannot reload its config"))
		return
	}
	res, err := rl.Reload(r.Context())
	switch {
	case err == nil:
		s.peerLines.Log(s.log, slog.LevelInfo, "config reloaded through the API", "added", res.Added, "changed", res.Changed, "removed", res.Removed, "restart_needed", res.RestartNeeded)
		writeJSON(w, http.StatusOK, res)
	case errors.Is(err, api.ErrConfigRefused):
		if res.Errors == nil {
			res.Errors = []string{err.Error()}
		}
		writeJSON(w, http.StatusUnprocessableEntity, reloadBody{
			Error:  errorDetail{Code: api.CodeConfigInvalid, Message: err.Error()},
			Result: res,
		})
	default:
		s.fail(w, r, fromBackend(err, "", ""))
	}
}
