package spool

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The results of the cloud's commands, by command id, so that a command
// resent after the agent restarted (its answer lost with the connection)
// is answered with its first result instead of running again: a reprint
// resent under the same id prints once across restarts too. The buckets
// are made by the first write, so a spool written before them opens as it
// is.
var (
	bucketCommands     = []byte("commands")       // id → result
	bucketCommandOrder = []byte("commands-order") // u64 counter → id, oldest first
)

// MaxCommandResults bounds the results kept: the oldest go first. A resend
// comes within minutes of its first copy; a thousand ids are far more
// than a cloud sends in that time, and a cloud that sends more costs at
// most this many small records.
const MaxCommandResults = 1024

// maxCommandResultBytes bounds one stored result (a command_result frame
// is a few hundred bytes): a peer's long id or message costs no more.
const maxCommandResultBytes = 4 << 10

// CommandResult returns the result stored for the command id, and whether
// there is one.
func (s *Spool) CommandResult(id string) ([]byte, bool, error) {
	var out []byte
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCommands)
		if b == nil {
			return nil
		}
		if v := b.Get([]byte(id)); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("read command %q: %w", id, err)
	}
	return out, out != nil, nil
}

// SaveCommandResult stores result as the command id's, fsync'd before it
// returns, and drops the oldest results past MaxCommandResults. A result
// stored already for id is kept: the first answer is the one every resend
// gets.
func (s *Spool) SaveCommandResult(id string, result []byte) error {
	if id == "" || len(id)+len(result) > maxCommandResultBytes {
		return fmt.Errorf("save command %.64q: %d bytes: %w", id, len(id)+len(result), ErrInvalid)
	}
	o := &op{prepare: func(*bolt.Tx) error { return nil }, apply: func(tx *bolt.Tx) error {
		return putCommandResult(tx, id, result)
	}}
	if err := s.submit(o); err != nil {
		return fmt.Errorf("save command %.64q: %w", id, err)
	}
	return nil
}

// putCommandResult stores result as the command id's in tx, unless one is
// stored already, and drops the oldest past MaxCommandResults.
func putCommandResult(tx *bolt.Tx, id string, result []byte) error {
	b, err := tx.CreateBucketIfNotExists(bucketCommands)
	if err != nil {
		return err
	}
	order, err := tx.CreateBucketIfNotExists(bucketCommandOrder)
	if err != nil {
		return err
	}
	if b.Get([]byte(id)) != nil {
		return nil
	}
	if err := b.Put([]byte(id), result); err != nil {
		return err
	}
	n, err := order.NextSequence()
	if err != nil {
		return err
	}
	if err := order.Put(u64(n), []byte(id)); err != nil {
		return err
	}
	// Results leave from the front, so the counters kept run
	// unbroken from the first key to n.
	for {
		k, v := order.Cursor().First()
		if k == nil || n-binary.BigEndian.Uint64(k) < MaxCommandResults {
			break
		}
		if err := b.Delete(v); err != nil {
			return err
		}
		if err := order.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// acceptedResult is the result a task accepted for a cloud command stores
// for it (NewTask.Command), in the form the link answers: the command
// succeeded with that task.
func acceptedResult(taskNo string) []byte {
	b, _ := json.Marshal(struct {
		OK     bool   `json:"ok"`
		TaskNo string `json:"task_no"`
	}{true, taskNo})
	return b
}

type commandKey struct{}

// WithCommand returns ctx carrying the id of the cloud command being run,
// so that the task it accepts (a reprint's new version) stores the
// command's result in its own transaction: NewTask.Command.
func WithCommand(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, commandKey{}, id)
}

// CommandFrom returns the command id WithCommand put in ctx, or "".
func CommandFrom(ctx context.Context) string {
	id, _ := ctx.Value(commandKey{}).(string)
	return id
}
