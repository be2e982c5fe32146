package spool

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestCommandResultsSurviveReopen ensures a command's result is kept across
// a close and open (the agent's restart), the first result stored for an
// id stays, and only the last MaxCommandResults are kept.
func TestCommandResultsSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	clk := newFakeClock()
	s, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.CommandResult("r-1"); ok || err != nil {
		t.Fatalf("unknown id: ok=%v err=%v", ok, err)
	}
	if err := s.SaveCommandResult("r-1", []byte(`{"ok":true,"task_no":"A_v2"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveCommandResult("r-1", []byte(`{"ok":true,"task_no":"A_v3"}`)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path, Options{Now: clk.Now}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, ok, err := s.CommandResult("r-1"); !ok || err != nil || string(v) != `{"ok":true,"task_no":"A_v2"}` {
		t.Fatalf("after reopen: %q ok=%v err=%v, want the first result", v, ok, err)
	}
	for i := range MaxCommandResults {
		if err := s.SaveCommandResult(fmt.Sprintf("c-%d", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := s.CommandResult("r-1"); ok {
		t.Error("the oldest result is still kept past MaxCommandResults")
	}
	if _, ok, _ := s.CommandResult(fmt.Sprintf("c-%d", MaxCommandResults-1)); !ok {
		t.Error("the newest result is gone")
	}
	if _, ok, _ := s.CommandResult("c-0"); !ok {
		t.Error("c-0, within the last MaxCommandResults, is gone")
	}
}

// TestAcceptStoresItsCommandResult ensures a task accepted for a cloud
// command (a reprint) stores the command's result in its own transaction:
// no crash between the two can leave the task printed and the command
// unanswered, to be run again on its resend.
func TestAcceptStoresItsCommandResult(t *testing.T) {
	s, _ := openTest(t, Options{})
	nt := task("A_v2", "k")
	nt.Command = "r-9"
	mustAccept(t, s, nt)
	if v, ok, err := s.CommandResult("r-9"); !ok || err != nil || string(v) != `{"ok":true,"task_no":"A_v2"}` {
		t.Fatalf("result %q ok=%v err=%v", v, ok, err)
	}
	if ctx := WithCommand(context.Background(), "r-9"); CommandFrom(ctx) != "r-9" || CommandFrom(context.Background()) != "" {
		t.Fatal("WithCommand does not round-trip")
	}
}
