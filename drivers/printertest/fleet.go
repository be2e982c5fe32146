package printertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	"printgate/drivers/escpos/decode"
)

// FleetOptions describe a set of emulated printers on 127.0.0.1 (what
// cmd/printersim runs).
type FleetOptions struct {
	// Models gives each printer's model, one printer per entry.
	Models []Model
	// BasePort is the first TCP port; printer i listens on BasePort+i. Zero
	// picks free ports.
	BasePort int
	// Out, if set, receives every ticket drawn as it looks on paper.
	Out io.Writer
	// CJKClones starts clone printers in Kanji (double-byte) mode, as
	// real ones do.
	CJKClones bool
	// DoubleByte is the set every printer's Kanji mode reads: GB18030
	// (the default), Big5 or Shift JIS.
	DoubleByte decode.DoubleByte
}

// Fleet is a running set of emulated printers.
type Fleet struct {
	Printers []*Printer
	outMu    sync.Mutex
}

// StartFleet starts the printers and their TCP listeners.
func StartFleet(o FleetOptions) (*Fleet, error) {
	if len(o.Models) == 0 {
		return nil, errors.New("printertest: a fleet needs at least one printer")
	}
	f := &Fleet{}
	for i, m := range o.Models {
		opts := Options{Name: fmt.Sprintf("printer%d", i), Model: m, PowerOnCJK: o.CJKClones && m == ModelClone, DoubleByte: o.DoubleByte}
		if o.BasePort > 0 {
			opts.Addr = fmt.Sprintf("127.0.0.1:%d", o.BasePort+i)
		}
		if o.Out != nil {
			name := opts.Name
			opts.OnTicket = func(t Ticket) {
				f.outMu.Lock()
				defer f.outMu.Unlock()
				_ = Render(o.Out, name, t)
			}
		}
		p := New(opts)
		f.Printers = append(f.Printers, p)
		if err := p.ListenTCP(); err != nil {
			f.Close()
			return nil, fmt.Errorf("printertest: start %s: %w", opts.Name, err)
		}
	}
	return f, nil
}

// Close stops every printer.
func (f *Fleet) Close() error {
	for _, p := range f.Printers {
		p.Close()
	}
	return nil
}

// PrinterInfo is one printer in the control API's listing.
type PrinterInfo struct {
	Index    int    `json:"index"`
	Name     string `json:"name"`
	Model    Model  `json:"model"`
	Addr     string `json:"addr"`
	Faults   Faults `json:"faults"`
	Tickets  int    `json:"tickets"`
	Received int64  `json:"received"`
}

// Handler is the fleet's control API:
//
//	GET  /printers                                      list printers, faults and counts
//	GET  /printers/{i}/tickets                          the tickets printer i printed
//	POST /printers/{i}/fault?kind=paper_out&on=true     switch a fault (kinds: see FaultKind)
//	POST /printers/{i}/fault?kind=drop&after=100        arm a fault after N more bytes
//	POST /printers/{i}/fault?kind=slow&bps=200          print slowly (0: full speed)
func (f *Fleet) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /printers", func(w http.ResponseWriter, r *http.Request) {
		list := make([]PrinterInfo, 0, len(f.Printers))
		for i, p := range f.Printers {
			list = append(list, PrinterInfo{Index: i, Name: p.Name(), Model: p.Model(), Addr: p.Addr(),
				Faults: p.Faults(), Tickets: len(p.Tickets()), Received: p.Received()})
		}
		writeJSON(w, http.StatusOK, list)
	})
	mux.HandleFunc("GET /printers/{i}/tickets", func(w http.ResponseWriter, r *http.Request) {
		p, ok := f.printer(w, r)
		if ok {
			writeJSON(w, http.StatusOK, p.Tickets())
		}
	})
	mux.HandleFunc("POST /printers/{i}/fault", func(w http.ResponseWriter, r *http.Request) {
		p, ok := f.printer(w, r)
		if !ok {
			return
		}
		q := r.URL.Query()
		kind := q.Get("kind")
		var err error
		switch {
		case kind == "slow":
			var bps int
			if bps, err = strconv.Atoi(q.Get("bps")); err == nil {
				p.SetSlow(bps)
			}
		case q.Has("after"):
			var n int
			if n, err = strconv.Atoi(q.Get("after")); err == nil {
				err = p.FaultAfter(FaultKind(kind), n)
			}
		default:
			on := true
			if q.Has("on") {
				on, err = strconv.ParseBool(q.Get("on"))
			}
			if err == nil {
				err = p.SetFault(FaultKind(kind), on)
			}
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, p.Faults())
	})
	return mux
}

func (f *Fleet) printer(w http.ResponseWriter, r *http.Request) (*Printer, bool) {
	i, err := strconv.Atoi(r.PathValue("i"))
	if err != nil || i < 0 || i >= len(f.Printers) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no printer %q", r.PathValue("i"))})
		return nil, false
	}
	return f.Printers[i], true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ListenLoopback listens on addr, refusing anything but a loopback address:
// the emulator and its control API are test tools, never network services.
func ListenLoopback(addr string) (net.Listener, error) {
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("printertest: listen %s: %w", addr, err)
	}
	return ln, nil
}
