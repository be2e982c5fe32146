package escpos

// evKind names what a byte sequence from the printer is.
type evKind uint8

const (
	evStatus   evKind = iota + 1 // DLE EOT answer, 0xx1xx10
	evTransmit                   // GS r answer, 0xx0xxxx
	evASB                        // automatic status back packet, 4 bytes
	evID                         // GS I answer, 5F … 00
	evBarrier                    // GS ( H fn48 answer, 37 22 d1..d4 00
)

// event is one answer cut from the byte stream.
type event struct {
	kind evKind
	b    byte    // evStatus, evTransmit
	id   [4]byte // evBarrier
	asb  [4]byte // evASB
	text string  // evID
}

// classifier cuts the printer's byte stream into answers by their fixed-bit
// patterns, so an unsolicited ASB packet, a stray status byte provoked by
// raster data, or a late GS r answer is recognised for what it is instead of
// being read as the answer to the current question. Bytes that fit no
// pattern are dropped.
type classifier struct {
	xonxoff bool
	kind    evKind // frame in progress (evASB, evID, evBarrier) or 0
	frame   []byte
}

// feed classifies p and appends the complete answers to out.
func (c *classifier) feed(p []byte, out []event) []event {
	for _, b := range p {
		if c.xonxoff && (b == 0x11 || b == 0x13) {
			continue
		}
		out = c.feedByte(b, out)
	}
	return out
}

func (c *classifier) feedByte(b byte, out []event) []event {
	if c.kind == 0 {
		switch {
		case b == 0x5F:
			c.start(evID, b)
		case b == 0x37:
			c.start(evBarrier, b)
		case IsStatusByte(b):
			out = append(out, event{kind: evStatus, b: b})
		case isASBHeader(b):
			c.start(evASB, b)
		case isTransmitStatus(b):
			out = append(out, event{kind: evTransmit, b: b})
		}
		return out
	}
	c.frame = append(c.frame, b)
	switch c.kind {
	case evASB:
		if b&0x90 != 0 {
			// Not an ASB body byte: the header was noise. Start over from b.
			c.kind, c.frame = 0, c.frame[:0]
			return c.feedByte(b, out)
		}
		if len(c.frame) == 4 {
			ev := event{kind: evASB}
			copy(ev.asb[:], c.frame)
			out = append(out, ev)
			c.kind = 0
		}
	case evID:
		if b == 0 {
			out = append(out, event{kind: evID, text: string(c.frame[1 : len(c.frame)-1])})
			c.kind = 0
		} else if len(c.frame) > maxIDLen+1 {
			c.kind = 0
		}
	case evBarrier:
		id, n, err := DecodeBarrier(c.frame)
		switch {
		case err == errIncomplete:
		case err != nil:
			c.kind = 0
			return c.feedByte(b, out)
		case n == len(c.frame):
			out = append(out, event{kind: evBarrier, id: id})
			c.kind = 0
		}
	}
	return out
}

func (c *classifier) start(k evKind, b byte) {
	c.kind = k
	c.frame = append(c.frame[:0], b)
}
