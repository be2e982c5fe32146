package fleet

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"printgate/hub/api"
	"printgate/hub/store"
)

// pairData is the approval page's content.
type pairData struct {
	Code   string
	Stores []store.StoreInfo
	Error  string
}

// pairPage shows the code of the agent's QR (verification_uri_complete
// carries it as ?user_code=) and the tenant's stores to approve it for.
func (p *Page) pairPage(w http.ResponseWriter, r *http.Request, sess *session) {
	p.renderPair(w, r, sess, http.StatusOK, codeFrom(r.URL.Query().Get("user_code")), "")
}

// codeFrom is a user code as a person or a QR gives it, in the form the
// page shows (upper case, with the dash), or "" for anything that cannot
// be one.
func codeFrom(s string) string {
	c := store.NormalizeUserCode(s)
	if len(c) != 8 || strings.Trim(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		return ""
	}
	return c[:4] + "-" + c[4:]
}

func (p *Page) renderPair(w http.ResponseWriter, r *http.Request, sess *session, status int, code, errText string) {
	stores, err := p.st.Stores(r.Context(), sess.tenant)
	if err != nil {
		p.serverError(w, r, sess, "what.pair", err)
		return
	}
	v := p.newView(r, sess)
	v.Title = v.L.T("pair.title")
	v.Data = pairData{Code: code, Stores: stores, Error: errText}
	p.render(w, status, "pair.html", "layout", v)
}

// pairSubmit approves or refuses the code for the chosen store, through
// the order API's decision (its per-tenant bound on unknown codes too).
func (p *Page) pairSubmit(w http.ResponseWriter, r *http.Request, sess *session) {
	l := pickLang(r)
	code := codeFrom(r.PostFormValue("code"))
	approve := r.PostFormValue("decision") == "approve"
	if code == "" {
		p.renderPair(w, r, sess, http.StatusBadRequest, "", l.T("pair.badcode"))
		return
	}
	st, err := p.tenantStore(r.Context(), sess, r.PostFormValue("store"))
	if errors.Is(err, store.ErrNotFound) {
		p.renderPair(w, r, sess, http.StatusNotFound, code, l.T("pair.nostore"))
		return
	}
	if err != nil {
		p.serverError(w, r, sess, "what.pair", err)
		return
	}
	err = p.opts.Actions.DecidePairing(r.Context(), st, code, approve)
	var many *api.TooManyCodesError
	switch {
	case err == nil:
		p.log.Info("fleet page: pairing decided", "tenant", sess.tenant, "user", sess.user, "store", st.ID, "approved", approve)
		text := l.T("pair.approved", code, storeName(st))
		if !approve {
			text = l.T("pair.denied", code)
		}
		p.flashTo(w, r, sess, Prefix+"/", &flash{Text: text})
	case errors.As(err, &many):
		w.Header().Set("Retry-After", strconv.Itoa(int(many.Left.Seconds())+1))
		p.renderPair(w, r, sess, http.StatusTooManyRequests, code, l.T("pair.toomany"))
	case errors.Is(err, store.ErrNotFound):
		p.renderPair(w, r, sess, http.StatusNotFound, code, l.T("pair.unknown", code))
	case errors.Is(err, store.ErrDecided):
		p.renderPair(w, r, sess, http.StatusConflict, code, l.T("pair.decided", code))
	case errors.Is(err, store.ErrExpiredCode):
		p.renderPair(w, r, sess, http.StatusGone, code, l.T("pair.expired", code))
	default:
		p.serverError(w, r, sess, "what.pair", err)
	}
}

// storeName is how the page names a store: its name and id, or its id.
func storeName(st store.StoreInfo) string {
	if st.Name != "" {
		return st.Name + " (" + st.ID + ")"
	}
	return st.ID
}
