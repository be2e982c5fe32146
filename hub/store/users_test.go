package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestUsers ensures a user signs in with their password only, stays across
// a restart, is kept per tenant (the same name in another tenant is
// another user, and a tenant's list shows only its own), never shows its
// hash, and once removed signs in no more.
func TestUsers(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	ctx := context.Background()
	if _, err := s.CheckUser(ctx, "acme", "ana", "correct horse"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before any user: %v", err)
	}
	for _, tn := range []string{"acme", "other"} {
		if _, err := s.AddTenant(ctx, tn, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AddUser(ctx, "nope", "ana", "correct horse"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tenant: %v", err)
	}
	if _, err := s.AddUser(ctx, "acme", "ana", "short"); err == nil || !strings.Contains(err.Error(), "10 to 128") {
		t.Fatalf("short password: %v", err)
	}
	if _, err := s.AddUser(ctx, "acme", "Ana!", "correct horse"); err == nil {
		t.Fatal("a name outside the id alphabet was taken")
	}
	u, err := s.AddUser(ctx, "acme", "ana", "correct horse")
	if err != nil || strings.Contains(u.Hash, "correct") || !strings.HasPrefix(u.Hash, "$argon2id$") {
		t.Fatalf("add: %+v %v", u, err)
	}
	if _, err := s.AddUser(ctx, "acme", "ana", "another one!"); !errors.Is(err, ErrExists) {
		t.Fatalf("again: %v", err)
	}
	if _, err := s.AddUser(ctx, "other", "ana", "other tenant pw"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir)
	if got, err := s.CheckUser(ctx, "acme", "ana", "correct horse"); err != nil || got.Tenant != "acme" || got.Hash != "" {
		t.Fatalf("check after restart: %+v %v", got, err)
	}
	for _, bad := range [][3]string{{"acme", "ana", "Correct horse"}, {"other", "ana", "correct horse"}, {"acme", "bob", "correct horse"}, {"acme", "ana", ""}} {
		if _, err := s.CheckUser(ctx, bad[0], bad[1], bad[2]); !errors.Is(err, ErrNotFound) {
			t.Errorf("check %v: %v, want ErrNotFound", bad, err)
		}
	}
	list, err := s.Users(ctx, "acme")
	if err != nil || len(list) != 1 || list[0].Name != "ana" || list[0].Tenant != "acme" || list[0].Hash != "" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := s.RemoveUser(ctx, "acme", "ana"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveUser(ctx, "acme", "ana"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("remove again: %v", err)
	}
	if _, err := s.CheckUser(ctx, "acme", "ana", "correct horse"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removed user signs in: %v", err)
	}
	if _, err := s.CheckUser(ctx, "other", "ana", "other tenant pw"); err != nil {
		t.Fatalf("the other tenant's ana: %v", err)
	}
}

// TestWatchTasks ensures the watch names every job record written after
// it began (a submit and an agent's event), with the task_no's escaped
// characters restored, and nothing after stop.
func TestWatchTasks(t *testing.T) {
	s := open(t, t.TempDir())
	info := seed(t, s)
	ctx := context.Background()
	got := make(chan string, 16)
	stop, err := s.WatchTasks(func(store, taskNo string) { got <- store + "/" + taskNo })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, info, job("A.1:x"), "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if w := <-got; w != "s1/A.1:x" {
		t.Fatalf("watch said %q, want s1/A.1:x", w)
	}
	stop()
	if _, err := s.Submit(ctx, info, job("B-2"), "", time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-got:
		t.Fatalf("after stop the watch said %q", w)
	default:
	}
}
