package spool

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Accept validates t and stores it as a new task in state ACCEPTED, with its
// queue entry, first timeline entry and first outbox event, in one
// transaction. It returns only after that transaction is fsync'd.
//
// A task_no already known, in any state and for the whole dedupe window,
// returns the stored task with duplicate=true and writes nothing. Validation
// failures wrap ErrInvalid (or ErrTooLarge); a spool out of room returns
// ErrFull.
func (s *Spool) Accept(t NewTask) (task *Task, duplicate bool, err error) {
	rec, err := s.newRecord(t)
	if err != nil {
		return nil, false, err
	}
	o, result := s.acceptOp(rec)
	o.queued = t.Queued
	if t.Command != "" && len(t.Command) <= maxCommandResultBytes/4 {
		apply := o.apply
		o.apply = func(tx *bolt.Tx) error {
			if err := apply(tx); err != nil {
				return err
			}
			return putCommandResult(tx, t.Command, acceptedResult(rec.TaskNo))
		}
	}
	if err := s.submit(o); err != nil {
		return nil, false, err
	}
	task, duplicate = result()
	return task, duplicate, nil
}

// acceptOp builds the commit-loop op that stores rec, and a function that
// reads its outcome once the op has committed.
func (s *Spool) acceptOp(rec *Task) (*op, func() (*Task, bool)) {
	var out *Task
	var duplicate bool
	o := &op{accept: true, origin: rec.Origin, charge: Charge(rec.Size)}
	o.prepare = func(tx *bolt.Tx) error {
		out, duplicate = nil, false
		if raw := tx.Bucket(bucketTasks).Get([]byte(rec.TaskNo)); raw != nil {
			existing, err := decodeTask(raw)
			if err != nil {
				return fmt.Errorf("accept %s: %w", rec.TaskNo, err)
			}
			out, duplicate = existing, true
			return errSkip
		}
		return nil
	}
	o.apply = func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		seq := getU64(meta, keySeq) + 1
		if err := meta.Put(keySeq, u64(seq)); err != nil {
			return err
		}
		nt := *rec
		nt.Seq = seq
		nt.Timeline = []TimelineEntry{{State: StateAccepted, At: nt.AcceptedAt, Printer: nt.Printer}}
		if nt.Truncated {
			nt.Timeline[0].Reason = ReasonTruncated
		}
		// A task_no accepted again once its dedupe window is over
		// counts its events past those of its old life still owed to
		// the cloud, so no outbox key is reused.
		nt.Events = lastOutboxN(tx, nt.TaskNo)
		ev := eventFor(&nt, StateAccepted, "")
		if nt.Origin != OriginCloud || nt.ReprintOf != "" {
			// The cloud did not send a reprint's job: it hears of it here.
			ev.Job = &JobInfo{Printer: nt.Printer, Priority: nt.Priority, Origin: nt.Origin, Size: nt.Size, SHA256: nt.SHA256}
		}
		nt.Events++
		if err := putTask(tx, &nt); err != nil {
			return err
		}
		if err := tx.Bucket(bucketSeq).Put(u64(seq), []byte(nt.TaskNo)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketQueue).Put(queueKey(nt.Lane(), nt.Priority, seq), []byte(nt.TaskNo)); err != nil {
			return err
		}
		if err := s.putEvent(tx, ev); err != nil {
			return err
		}
		if err := addCount(meta, StateAccepted, 1); err != nil {
			return err
		}
		if err := addOrigin(meta, nt.Origin, Charge(nt.Size)); err != nil {
			return err
		}
		out = &nt
		return nil
	}
	return o, func() (*Task, bool) { return out, duplicate }
}

// newRecord validates t and builds the stored record, minus what the
// transaction assigns (seq, timeline). The agent's intake has judged t
// already; this check stays because it guards what goes on disk for every
// caller, and it reads the same limits (limits.go).
func (s *Spool) newRecord(t NewTask) (*Task, error) {
	if t.Invalid != nil {
		return nil, fmt.Errorf("%w: task %s: %w", ErrInvalid, t.TaskNo, t.Invalid)
	}
	if err := ValidTaskNo(t.TaskNo); err != nil {
		return nil, err
	}
	if err := ValidPrinterName(t.Printer); err != nil {
		return nil, err
	}
	if (len(t.Payload) == 0) == (len(t.Document) == 0) {
		return nil, fmt.Errorf("%w: task %s needs exactly one of payload and document", ErrInvalid, t.TaskNo)
	}
	body := t.Payload
	if len(t.Document) > 0 {
		if !json.Valid(t.Document) {
			return nil, fmt.Errorf("%w: task %s: document is not valid JSON", ErrInvalid, t.TaskNo)
		}
		body = t.Document
	}
	if len(body) > s.opts.MaxTaskBytes {
		return nil, fmt.Errorf("task %s is %d bytes, over the %d byte limit: %w", t.TaskNo, len(body), s.opts.MaxTaskBytes, ErrTooLarge)
	}
	if !ValidPriority(t.Priority) {
		return nil, fmt.Errorf("%w: task %s: priority %q is neither urgent nor normal", ErrInvalid, t.TaskNo, t.Priority)
	}
	if t.Priority == "" {
		t.Priority = PriorityNormal
	}
	if t.Origin == "" {
		t.Origin = OriginLocal
	}
	if !slices.Contains(Origins(), t.Origin) {
		return nil, fmt.Errorf("%w: task %s: origin %q is not one of %v", ErrInvalid, t.TaskNo, t.Origin, Origins())
	}
	if t.Timeout < 0 {
		return nil, fmt.Errorf("%w: task %s: negative timeout %s", ErrInvalid, t.TaskNo, t.Timeout)
	}
	if t.ReprintOf != "" {
		if err := ValidTaskNo(t.ReprintOf); err != nil {
			return nil, fmt.Errorf("reprint_of: %w", err)
		}
	}
	timeout := t.Timeout
	if timeout == 0 {
		timeout = s.opts.DefaultTimeout
	}
	now := s.opts.Now()
	sum := sha256.Sum256(body)
	rec := &Task{
		TaskNo:            t.TaskNo,
		Printer:           t.Printer,
		Priority:          t.Priority,
		Origin:            t.Origin,
		Size:              len(body),
		SHA256:            hex.EncodeToString(sum[:]),
		State:             StateAccepted,
		Deadline:          now.Add(timeout).Round(0),
		ReprintOf:         t.ReprintOf,
		PossibleDuplicate: t.PossibleDuplicate,
		Truncated:         t.Truncated,
		AcceptedAt:        now.Round(0),
		UpdatedAt:         now.Round(0),
	}
	if len(t.Payload) > 0 {
		rec.Payload = append([]byte(nil), t.Payload...)
	} else {
		rec.Document = append(json.RawMessage(nil), t.Document...)
	}
	return rec, nil
}

// eventFor builds the outbox event for t entering state (numbered after the
// task's current count, which the caller then bumps).
func eventFor(t *Task, state State, reason string) *Event {
	return &Event{
		TaskNo:            t.TaskNo,
		N:                 t.Events + 1,
		State:             state,
		Reason:            reason,
		Printer:           t.Printer,
		Target:            t.Target,
		Confirmation:      t.Confirmation,
		Attempts:          t.Attempts,
		PossibleDuplicate: t.PossibleDuplicate,
		Origin:            t.Origin,
		At:                t.UpdatedAt,
		Seq:               t.Seq,
	}
}

// lastOutboxN is the highest n of taskNo's events in the outbox, or 0.
func lastOutboxN(tx *bolt.Tx, taskNo string) int {
	c := tx.Bucket(bucketOutbox).Cursor()
	next := outboxKey(taskNo, 0)
	next[len(taskNo)] = 1 // the first key past every (taskNo, n)
	k, _ := c.Seek(next[:len(taskNo)+1])
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if len(k) == len(taskNo)+5 && string(k[:len(taskNo)]) == taskNo && k[len(taskNo)] == 0 {
		return int(binary.BigEndian.Uint32(k[len(taskNo)+1:]))
	}
	return 0
}

func putTask(tx *bolt.Tx, t *Task) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode task %s: %w", t.TaskNo, err)
	}
	return tx.Bucket(bucketTasks).Put([]byte(t.TaskNo), raw)
}

func decodeTask(raw []byte) (*Task, error) {
	t := new(Task)
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, fmt.Errorf("decode task: %w", err)
	}
	return t, nil
}

func getU64(b *bolt.Bucket, k []byte) uint64 {
	if v := b.Get(k); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func countKey(s State) []byte { return []byte("count:" + string(s)) }

func addCount(meta *bolt.Bucket, s State, delta int64) error {
	k := countKey(s)
	v := int64(getU64(meta, k)) + delta
	if v < 0 {
		v = 0
	}
	return meta.Put(k, u64(uint64(v)))
}

// nowRounded strips the monotonic reading so stored times compare by wall
// clock after a round trip through JSON.
func nowRounded(now func() time.Time) time.Time { return now().Round(0) }
