package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"printgate/hub/store"
	"printgate/hub/webhook"
)

// Codes of the webhook routes.
const (
	// CodeBadWebhookURL: the endpoint's URL is not https (http only to a
	// loopback host), or not a URL.
	CodeBadWebhookURL = "bad_webhook_url"
	// CodeTooManyWebhooks: the tenant has store.MaxWebhooksPerTenant
	// endpoints already.
	CodeTooManyWebhooks = "too_many_webhooks"
)

// maxDeadList bounds the dead letters one GET returns.
const maxDeadList = 1000

// webhookView is an endpoint as the API shows it: the secret only in the
// answer that created it.
type webhookView struct {
	ID      string    `json:"id"`
	URL     string    `json:"url"`
	Secret  string    `json:"secret,omitempty"`
	Created time.Time `json:"created"`
}

// deadView is a dead letter as the API shows it.
type deadView struct {
	ID        string          `json:"id"`
	Created   time.Time       `json:"created"`
	Dead      time.Time       `json:"dead"`
	Attempts  int             `json:"attempts"`
	LastError string          `json:"last_error,omitempty"`
	Body      json.RawMessage `json:"body"`
}

// keyed runs next with the caller's tenant once its API key is checked.
func (a *API) keyed(next func(w http.ResponseWriter, r *http.Request, tenant string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		key, ok := a.checkKey(w, r)
		if !ok {
			return
		}
		next(w, r, key.Tenant)
	}
}

// addWebhook adds an endpoint: 201 with its id and its secret, shown this
// once.
func (a *API) addWebhook(w http.ResponseWriter, r *http.Request, tenant string) {
	var b struct {
		URL string `json:"url"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			writeError(w, http.StatusBadRequest, CodeUnknownField, "unknown field "+f+`; the body is {"url": "https://…"}`)
			return
		}
		writeError(w, http.StatusBadRequest, CodeBadJSON, `the body is not {"url": "https://…"}: `+err.Error())
		return
	}
	if err := webhook.CheckURL(b.URL); err != nil {
		writeError(w, http.StatusBadRequest, CodeBadWebhookURL, err.Error())
		return
	}
	id, err := webhook.NewID()
	if err != nil {
		a.internal(w, "make a webhook id", err)
		return
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		a.internal(w, "make a webhook secret", err)
		return
	}
	ep := store.Webhook{ID: id, Tenant: tenant, URL: b.URL, Secret: secret, Created: a.opts.Clock.Now().UTC()}
	if err := a.st.AddWebhook(r.Context(), ep); err != nil {
		if errors.Is(err, store.ErrFull) {
			writeError(w, http.StatusConflict, CodeTooManyWebhooks, fmt.Sprintf("your tenant has %d webhook endpoints, the most it may have; delete one with DELETE /v1/webhooks/{id}", store.MaxWebhooksPerTenant))
			return
		}
		a.internal(w, "add a webhook", err)
		return
	}
	writeJSON(w, http.StatusCreated, webhookView{ID: ep.ID, URL: ep.URL, Secret: ep.Secret, Created: ep.Created})
}

// listWebhooks lists the tenant's endpoints, without their secrets.
func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request, tenant string) {
	eps, err := a.st.Webhooks(r.Context(), tenant)
	if err != nil {
		a.internal(w, "list webhooks", err)
		return
	}
	out := []webhookView{}
	for _, ep := range eps {
		out = append(out, webhookView{ID: ep.ID, URL: ep.URL, Created: ep.Created})
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": out})
}

func webhookNotFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("your tenant has no webhook %q; GET /v1/webhooks lists them", id))
}

// deleteWebhook removes an endpoint: its queued messages are dropped, its
// dead letters purged.
func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request, tenant string) {
	id := r.PathValue("id")
	err := a.st.DeleteWebhook(r.Context(), tenant, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		webhookNotFound(w, id)
	case err != nil:
		a.internal(w, "delete a webhook", err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
	}
}

// listDead lists an endpoint's dead letters, oldest first.
func (a *API) listDead(w http.ResponseWriter, r *http.Request, tenant string) {
	id := r.PathValue("id")
	if _, err := a.st.WebhookByID(r.Context(), tenant, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			webhookNotFound(w, id)
			return
		}
		a.internal(w, "read a webhook", err)
		return
	}
	dead, err := a.st.DeadLetters(r.Context(), id, maxDeadList)
	if err != nil {
		a.internal(w, "list dead letters", err)
		return
	}
	out := []deadView{}
	for _, d := range dead {
		out = append(out, deadView{ID: d.ID, Created: d.Created, Dead: d.Dead, Attempts: d.Attempts, LastError: d.LastError, Body: d.Body})
	}
	writeJSON(w, http.StatusOK, map[string]any{"dead": out})
}

// replayDead queues an endpoint's dead letters again, each retried for
// another day.
func (a *API) replayDead(w http.ResponseWriter, r *http.Request, tenant string) {
	id := r.PathValue("id")
	if _, err := a.st.WebhookByID(r.Context(), tenant, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			webhookNotFound(w, id)
			return
		}
		a.internal(w, "read a webhook", err)
		return
	}
	n, err := a.st.Replay(r.Context(), id, a.opts.Clock.Now().UTC())
	if err != nil {
		a.internal(w, "replay dead letters", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "replayed": n})
}
