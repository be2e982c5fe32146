package localapi

// IdleConns is how many served connections net/http has reported idle:
// tests wait for the server's side of a finished request before they
// count on which connection has been idle longest.
func (l *ConnLimiter) IdleConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.addrs {
		for c := range a.served {
			if !c.idleSince.IsZero() {
				n++
			}
		}
	}
	return n
}
