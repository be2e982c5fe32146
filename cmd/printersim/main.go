// Command printersim runs emulated ESC/POS receipt printers on 127.0.0.1 for
// demos and manual testing: each prints its tickets to the terminal as they
// would look on paper, and a small HTTP API switches faults (paper out,
// cover open, offline, stall, drop, power cycle, slow).
//
//	printersim -model epson,clone,oneway -base-port 9100 -control 127.0.0.1:9180
//	curl -X POST '127.0.0.1:9180/printers/0/fault?kind=paper_out&on=true'
//	curl 127.0.0.1:9180/printers
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"printgate/drivers/escpos/decode"
	"printgate/drivers/printertest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// run is main without the process: it returns the exit code (0 ok, 1
// runtime error, 2 usage). ready, if not nil, receives the fleet once it
// listens (for tests).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- *printertest.Fleet) int {
	fs := flag.NewFlagSet("printersim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 0, "number of printers (default: one per -model entry; models repeat in turn)")
	models := fs.String("model", "epson,clone,oneway", "comma-separated models: epson, clone, status-only, oneway")
	basePort := fs.Int("base-port", 9100, "TCP port of the first printer on 127.0.0.1 (0: any free ports)")
	control := fs.String("control", "127.0.0.1:9180", "loopback address of the control API (empty: none)")
	cjk := fs.Bool("cjk-clones", true, "clone printers power on in Kanji (double-byte) mode, like real ones")
	dbcs := fs.String("dbcs", "GB18030", "the double-byte `set` of every printer's Kanji mode: GB18030, Big5 or Shift_JIS")
	quiet := fs.Bool("quiet", false, "do not draw tickets")
	chaosSeed := fs.Uint64("chaos-seed", 0, "run a random fault schedule with this seed (0: off)")
	chaosEvery := fs.Duration("chaos-every", 3*time.Second, "time between chaos schedule steps")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "printersim: unexpected arguments %q\n", fs.Args())
		return 2
	}
	set, err := decode.ParseDoubleByte(*dbcs)
	if err != nil {
		fmt.Fprintln(stderr, "printersim: -dbcs:", err)
		return 2
	}
	var list []printertest.Model
	for _, s := range strings.Split(*models, ",") {
		m, err := printertest.ParseModel(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintln(stderr, "printersim:", err)
			return 2
		}
		list = append(list, m)
	}
	if *n < 0 {
		fmt.Fprintln(stderr, "printersim: -n must not be negative")
		return 2
	}
	if *n > 0 {
		cycled := make([]printertest.Model, *n)
		for i := range cycled {
			cycled[i] = list[i%len(list)]
		}
		list = cycled
	}
	opts := printertest.FleetOptions{Models: list, BasePort: *basePort, CJKClones: *cjk, DoubleByte: set}
	if !*quiet {
		opts.Out = stdout
	}
	fleet, err := printertest.StartFleet(opts)
	if err != nil {
		fmt.Fprintln(stderr, "printersim:", err)
		return 1
	}
	defer fleet.Close()
	for _, p := range fleet.Printers {
		fmt.Fprintf(stdout, "%s  %-11s tcp://%s\n", p.Name(), p.Model(), p.Addr())
	}
	if *chaosSeed != 0 {
		for i, p := range fleet.Printers {
			name := p.Name()
			stopChaos := p.StartChaos(printertest.ChaosOptions{Seed: *chaosSeed + uint64(i), Every: *chaosEvery},
				func(k printertest.FaultKind, on bool) { fmt.Fprintf(stdout, "%s: fault %s on=%v\n", name, k, on) })
			defer stopChaos()
		}
	}
	if *control != "" {
		ln, err := printertest.ListenLoopback(*control)
		if err != nil {
			fmt.Fprintln(stderr, "printersim:", err)
			return 1
		}
		srv := &http.Server{Handler: fleet.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintln(stderr, "printersim: control:", err)
			}
		}()
		defer srv.Close()
		fmt.Fprintf(stdout, "control  http://%s/printers\n", ln.Addr())
	}
	if ready != nil {
		ready <- fleet
	}
	<-ctx.Done()
	return 0
}
