package agentlink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"printgate/hub/store"
	"printgate/internal/clock"
	"printgate/sync/wire"
)

// readType reads frames until one of type typ (the hub also pings and
// may send jobs), failing after ten others.
func readType(t *testing.T, ws interface {
	ReadMessage() (int, []byte, error)
}, typ string) wire.Message {
	t.Helper()
	for range 10 {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		m, err := wire.Decode(data)
		if err != nil {
			t.Fatalf("decode %s: %v", data, err)
		}
		if m.Type() == typ {
			return m
		}
	}
	t.Fatalf("no %s frame in ten", typ)
	return nil
}

// drain reads what a tail passed on so far.
func drain(tl *Tail) []string {
	var out []string
	for {
		select {
		case l := <-tl.Lines():
			out = append(out, l)
		case <-time.After(200 * time.Millisecond):
			return out
		}
	}
}

// TestTailBounds holds a log tail to its bounds against an agent (a raw
// websocket, so it can flood): none without a connection; the logs_tail
// frame asks to follow with the recent lines wanted; lines past the
// recent ones and TailLinesPerSecond are dropped and counted, and the
// rate refills with the clock; MaxTailsPerStore at once; the agent's
// refusal ends a tail with its code and is not recorded as a command;
// Close sends logs_stop; the connection's end ends the rest.
func TestTailBounds(t *testing.T) {
	fc := clock.NewFakeClock(time.Unix(1_800_000_000, 0))
	r := newRigWith(t, Options{Clock: fc, PingInterval: time.Hour})
	if _, err := r.srv.Tail("s1", TailOptions{}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Tail with no agent: %v; want ErrNotConnected", err)
	}
	ws := r.dial(t, r.token, "pg-a")
	hello(t, ws, "pg-a")

	t1, err := r.srv.Tail("s1", TailOptions{Lines: 5, Level: "info"})
	if err != nil {
		t.Fatal(err)
	}
	lt, _ := readType(t, ws, wire.TypeLogsTail).(*wire.LogsTail)
	if lt == nil || !lt.Follow || lt.Lines != 5 || lt.Level != "info" || !strings.HasPrefix(lt.ID, "hubtail-") {
		t.Fatalf("logs_tail frame %#v; want follow, 5 lines, level info", lt)
	}
	var flood []string
	for i := range 155 {
		flood = append(flood, fmt.Sprintf("line %d", i))
	}
	send(t, ws, &wire.LogLines{ID: lt.ID, Lines: flood})
	got := drain(t1)
	if len(got) != 55 || got[0] != "line 0" || got[54] != "line 54" {
		t.Fatalf("passed on %d lines (%v…); want the 5 recent and 50 a second", len(got), got[:min(3, len(got))])
	}
	if d := t1.Dropped(); d != 100 {
		t.Errorf("dropped %d; want 100", d)
	}
	fc.Advance(time.Second)
	send(t, ws, &wire.LogLines{ID: lt.ID, Lines: flood[:70]})
	if got := drain(t1); len(got) != 50 {
		t.Errorf("a second later: %d lines passed on; want 50", len(got))
	}

	t2, err := r.srv.Tail("s1", TailOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lt2, _ := readType(t, ws, wire.TypeLogsTail).(*wire.LogsTail)
	if _, err := r.srv.Tail("s1", TailOptions{}); !errors.Is(err, ErrTooManyTails) {
		t.Fatalf("a third tail: %v; want ErrTooManyTails", err)
	}
	send(t, ws, &wire.CommandResult{ID: lt2.ID, Error: &wire.Problem{Code: "too_many_tails", Message: "stop one"}})
	select {
	case <-t2.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the agent's refusal did not end the tail")
	}
	var ae *AgentError
	if !errors.As(t2.Err(), &ae) || ae.Problem.Code != "too_many_tails" {
		t.Errorf("refused tail's Err %v; want the agent's too_many_tails", t2.Err())
	}
	if _, err := r.st.CommandOf(context.Background(), "s1", lt2.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the tail's command_result was recorded as a command: %v", err)
	}

	t1.Close()
	if stop, _ := readType(t, ws, wire.TypeLogsStop).(*wire.LogsStop); stop == nil || stop.ID != lt.ID {
		t.Fatalf("after Close: %#v; want logs_stop %s", stop, lt.ID)
	}
	if t1.Err() != nil {
		t.Errorf("closed tail's Err %v; want nil", t1.Err())
	}
	t3, err := r.srv.Tail("s1", TailOptions{})
	if err != nil {
		t.Fatalf("a tail after two ended: %v", err)
	}
	ws.Close()
	select {
	case <-t3.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the connection's end did not end the tail")
	}
	if !errors.Is(t3.Err(), ErrNotConnected) {
		t.Errorf("Err %v; want ErrNotConnected", t3.Err())
	}
}
