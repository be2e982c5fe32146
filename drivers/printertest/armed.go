package printertest

// Armed returns how many faults armed with FaultAfter have not tripped yet.
// A fault harness that arms a drop only while none is pending (cmd/chaos)
// learns from it how many drops the printer really did: armed minus still
// pending. A power cycle disarms everything, so those are not counted.
func (p *Printer) Armed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.armed)
}
