package agent

import "printgate/sync/link"

// Link is the cloud link as the agent uses it; *link.Link implements it.
// The agent tells it of what changed, and /healthz and the page's link and
// pairing views read it.
type Link interface {
	// Notify says the outbox has new events to send (a task changed, a
	// printer failed over).
	Notify()
	// PrintersChanged says a printer's state changed.
	PrintersChanged()
	// CheckToken says the device token was saved or removed.
	CheckToken()
	// State is the link's state, for /healthz.
	State() string
	// Stats describes the link, for the page.
	Stats() link.Stats
	// OnStateChange registers f, called on each change of State.
	OnStateChange(f func(state string))
}

var _ Link = (*link.Link)(nil)

// linkRef boxes a Link for an atomic pointer.
type linkRef struct{ l Link }

// AttachLink gives the agent its cloud link once it is built: from then on
// the events Options.Observe hears reach it too, and /healthz, Link and
// Pairing read it. It is the one place the link is wired; the daemon calls
// it once. Calling it again replaces the link.
func (a *Agent) AttachLink(l Link) {
	a.link.Store(&linkRef{l})
	if l != nil {
		l.OnStateChange(func(state string) {
			a.observe(Event{Link: true, LinkState: state})
		})
	}
	a.observe(Event{Link: true})
}

// attached returns the cloud link, or nil before AttachLink.
func (a *Agent) attached() Link {
	if r := a.link.Load(); r != nil {
		return r.l
	}
	return nil
}

// observeWith is obs (Options.Observe, may be nil) followed by telling the
// attached link: every place the agent reports an event calls it.
func (a *Agent) observeWith(obs func(Event)) func(Event) {
	return func(e Event) {
		if obs != nil {
			obs(e)
		}
		l := a.attached()
		switch {
		case l == nil:
		case e.Task != nil || e.Switch:
			l.Notify()
		case e.State != "":
			l.PrintersChanged()
		}
	}
}

// linkState is the cloud link's state for /healthz: "disabled" without a
// [cloud] table, offline until the link is attached.
func (a *Agent) linkState() string {
	if a.cfg.Cloud == nil {
		return "disabled"
	}
	if l := a.attached(); l != nil {
		return l.State()
	}
	return link.StateOffline
}
