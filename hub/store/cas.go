package store

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// casTries bounds casJSON's attempts: each lost one means another write
// of the same key came first, so running out means a key fought over far
// beyond what one job, command, pairing, device or store sees.
const casTries = 16

// errContended is casJSON's error when every attempt lost to another write.
var errContended = errors.New("too many concurrent changes")

// casJSON is the read-modify-write of one JSON record: it reads key of kv
// into a zero T, lets change edit it, and writes it back by compare-and-set
// on the revision read (Create for a key with no record: found false),
// reading again when another write came first. change says whether there
// is anything to write (false: nothing is written and casJSON returns 0,
// nil); its error stops casJSON and is returned as it is. It returns the
// revision written. A read that fails otherwise than ErrNotFound is
// returned as it is.
func casJSON[T any](ctx context.Context, kv jetstream.KeyValue, key string, change func(v *T, found bool) (bool, error)) (uint64, error) {
	for range casTries {
		var v T
		rev, err := getJSON(ctx, kv, key, &v)
		found := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return 0, err
		}
		write, err := change(&v, found)
		if err != nil || !write {
			return 0, err
		}
		if found {
			rev, err = kv.Update(ctx, key, mustJSON(v), rev)
		} else {
			rev, err = kv.Create(ctx, key, mustJSON(v))
		}
		if err == nil {
			return rev, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return 0, kvErr(err)
		}
	}
	return 0, errContended
}
