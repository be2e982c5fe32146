package web

import (
	"encoding/base64"
	"html/template"
	"net/http"
	"printgate/agent/api"

	qrcode "github.com/skip2/go-qrcode"
)

// pairingData is the pairing page.
type pairingData struct {
	Info api.PairingInfo
	// QR is a PNG data URI of the verification address, "" without one.
	QR template.URL
}

// qrDataURI draws text as a QR code PNG data URI (img-src data: is allowed
// by the page's CSP; nothing is fetched from elsewhere).
func qrDataURI(text string) (template.URL, error) {
	png, err := qrcode.Encode(text, qrcode.Medium, 256)
	if err != nil {
		return "", err
	}
	// The URI is built here from PNG bytes only, so it is safe to mark.
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png)), nil
}

// pairingPage serves GET /pairing.
func (p *Page) pairingPage(w http.ResponseWriter, r *http.Request, sess *session) {
	v := p.newView(r, sess, "pairing")
	v.Title = v.L.T("pair.title")
	d := pairingData{Info: p.b.Pairing(r.Context())}
	if !d.Info.Paired {
		uri := d.Info.VerificationURIComplete
		if uri == "" {
			uri = d.Info.VerificationURI
		}
		if uri != "" {
			qr, err := qrDataURI(uri)
			if err != nil {
				p.serverError(w, r, "problem.qr", err)
				return
			}
			d.QR = qr
		}
	}
	v.Data = d
	p.render(w, r, http.StatusOK, "pairing.html", v)
}

// unpair serves POST /pairing/unpair: it needs the PIN again, so a
// browser left signed in cannot cut the store off by itself.
func (p *Page) unpair(w http.ResponseWriter, r *http.Request, sess *session) {
	l := pickLang(r)
	res, left, err := p.checkPIN(r, r.PostFormValue("pin"))
	switch res {
	case pinOK:
	case pinError:
		p.showProblem(w, r, http.StatusInternalServerError, "", err)
		return
	case pinLocked:
		p.flashTo(w, r, sess, "/pairing", &flash{Error: true, Text: p.lockedText(l, left)})
		return
	default:
		p.flashTo(w, r, sess, "/pairing", &flash{Error: true, Text: l.T("flash.wrongpin")})
		return
	}
	if err := p.b.Unpair(); err != nil {
		p.flashTo(w, r, sess, "/pairing", &flash{Error: true, Text: l.T("flash.failed", err.Error())})
		return
	}
	p.log.Info("manager page: unpaired from the cloud")
	p.flashTo(w, r, sess, "/pairing", &flash{Text: l.T("flash.unpaired")})
}
