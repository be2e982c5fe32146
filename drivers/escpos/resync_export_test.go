package escpos

// DisableResync turns off d's resync preamble, so a test can show what the
// preamble prevents: the next job's first bytes eaten as the arguments of a
// command cut off by a dropped connection.
func DisableResync(d *Device) {
	d.mu.Lock()
	d.noResync = true
	d.mu.Unlock()
}
