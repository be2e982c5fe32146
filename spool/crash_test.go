package spool

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const crashChildEnv = "PRINTGATE_SPOOL_CRASH_CHILD"

// chain is the path every crash-test task walks.
var chain = []State{StateAccepted, StateQueued, StateSending, StatePrinted}

func chainIndex(s State) int {
	for i, c := range chain {
		if c == s {
			return i
		}
	}
	return -1
}

// TestCrashChild is the subprocess of TestCrashLosesNothing: it accepts and
// transitions tasks from several goroutines as fast as it can and prints a
// line after each call returns, which is the acknowledgement the parent holds
// the spool to. It does nothing in a normal test run.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("subprocess of TestCrashLosesNothing")
	}
	round := os.Getenv(crashChildEnv + "_ROUND")
	s, err := Open(path, Options{})
	if err != nil {
		fmt.Printf("ERR open %v\n", err)
		os.Exit(3)
	}
	if s.Recovered() != nil {
		fmt.Printf("ERR recovered %v\n", s.Recovered())
		os.Exit(3)
	}
	var mu sync.Mutex
	say := func(format string, a ...any) {
		mu.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", a...)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				no := fmt.Sprintf("R%s-G%d-%06d_K_v1", round, g, i)
				nt := task(no, fmt.Sprintf("p%d", g%3))
				nt.Payload = make([]byte, 100+i%900)
				if _, dup, err := s.Accept(nt); err != nil || dup {
					say("ERR accept %s dup=%v %v", no, dup, err)
					os.Exit(3)
				}
				say("A %s", no)
				for j, st := range chain[1:] {
					if _, err := s.Transition(no, chain[j], st, Change{Confirmation: ConfirmPrinted}); err != nil {
						say("ERR transition %s %s %v", no, st, err)
						os.Exit(3)
					}
					say("T %s %s", no, st)
				}
			}
		}()
	}
	wg.Wait()
}

// TestCrashLosesNothing kills a real subprocess with SIGKILL at random moments
// while it accepts and transitions tasks, then reopens the file and checks
// that every acknowledged task is there in its last acknowledged state (or the
// next one, committed but not yet acknowledged when the kill came), that the
// outbox holds all of its events, and that bbolt's consistency check passes.
func TestCrashLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs a subprocess 25 times")
	}
	path := filepath.Join(t.TempDir(), "spool.db")
	acked := map[string]State{}
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 42))
	const rounds = 25
	for round := 0; round < rounds; round++ {
		killAfter := 20 + rng.IntN(600)
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path, fmt.Sprintf("%s_ROUND=%d", crashChildEnv, round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		lines, killed := 0, false
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "ERR") {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: child: %s", round, line)
			}
			f := strings.Fields(line)
			switch {
			case len(f) == 2 && f[0] == "A":
				acked[f[1]] = StateAccepted
			case len(f) == 3 && f[0] == "T":
				acked[f[1]] = State(f[2])
			default:
				continue
			}
			lines++
			if lines == killAfter && !killed {
				// Lines already in the pipe after the kill were printed
				// after their calls returned: they count as acknowledged.
				cmd.Process.Kill() // SIGKILL; TerminateProcess on Windows
				killed = true
			}
		}
		err = cmd.Wait()
		if !killed || !endedByKill(cmd.ProcessState) {
			t.Fatalf("round %d: child ended with %v, not by the kill", round, err)
		}
		verifyAfterCrash(t, round, path, acked)
	}
	t.Logf("%d rounds, %d acknowledged tasks verified", rounds, len(acked))
}

func verifyAfterCrash(t *testing.T, round int, path string, acked map[string]State) {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("round %d: reopen: %v", round, err)
	}
	defer s.Close()
	if s.Recovered() != nil {
		t.Fatalf("round %d: file corrupt after SIGKILL: %v", round, s.Recovered())
	}
	if err := s.Check(); err != nil {
		t.Fatalf("round %d: %v", round, err)
	}
	events := map[string][]int{}
	evs, err := s.ReadOutbox(1 << 30)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		events[e.TaskNo] = append(events[e.TaskNo], e.N)
	}
	for no, want := range acked {
		got, err := s.Get(no)
		if err != nil {
			t.Fatalf("round %d: acknowledged task %s lost: %v", round, no, err)
		}
		gi, wi := chainIndex(got.State), chainIndex(want)
		if gi != wi && gi != wi+1 {
			t.Fatalf("round %d: task %s is %s, last acknowledged %s", round, no, got.State, want)
		}
		if len(got.Timeline) != gi+1 || got.Events != gi+1 {
			t.Fatalf("round %d: task %s in %s has %d timeline entries and %d events", round, no, got.State, len(got.Timeline), got.Events)
		}
		ns := events[no]
		if len(ns) != gi+1 {
			t.Fatalf("round %d: task %s has outbox events %v, want 1..%d", round, no, ns, gi+1)
		}
		for i, n := range ns {
			if n != i+1 {
				t.Fatalf("round %d: task %s outbox events %v out of order", round, no, ns)
			}
		}
	}
}
