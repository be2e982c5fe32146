package spool

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// ReasonCorruptRecord is the FAILED reason of a task whose stored record
// could not be decoded.
const ReasonCorruptRecord = "CORRUPT_RECORD"

// Quarantine ends a task whose stored record cannot be decoded, as QueuePage
// reported it in item: the record is replaced by a FAILED task with reason
// CORRUPT_RECORD, carrying what the queue key still says (task_no, lane,
// priority, seq), a timeline entry and an outbox event, and the task leaves
// its queue. The task_no stays known, so a resend is answered as a duplicate
// rather than printed unmarked. One bad record therefore costs one task,
// reported, instead of the whole agent. The state counters cannot know the
// lost state and count the task as FAILED only.
func (s *Spool) Quarantine(lane string, item QueueItem, cause error) (*Task, error) {
	var out *Task
	o := &op{}
	o.prepare = func(tx *bolt.Tx) error {
		out = nil
		if raw := tx.Bucket(bucketTasks).Get([]byte(item.TaskNo)); raw != nil {
			if _, err := decodeTask(raw); err == nil {
				return fmt.Errorf("quarantine %s: %w: the record decodes", item.TaskNo, ErrIllegalTransition)
			}
		}
		return nil
	}
	o.apply = func(tx *bolt.Tx) error {
		now := nowRounded(s.opts.Now)
		msg := "the stored record of this task could not be read; it was not printed by this agent"
		if cause != nil {
			msg += ": " + cause.Error()
		}
		t := &Task{
			TaskNo:     item.TaskNo,
			Printer:    lane,
			Priority:   item.Priority,
			Origin:     OriginLocal,
			Seq:        item.Seq,
			State:      StateFailed,
			Reason:     ReasonCorruptRecord,
			Message:    msg,
			AcceptedAt: now,
			UpdatedAt:  now,
			Deadline:   now,
		}
		if t.Priority == "" {
			t.Priority = PriorityNormal
		}
		t.Timeline = []TimelineEntry{{State: StateFailed, At: now, Reason: ReasonCorruptRecord, Printer: lane}}
		// The record's own event count is lost with it: number this event
		// past anything the cloud may have been sent for the task.
		t.Events = 1 << 20
		ev := eventFor(t, StateFailed, ReasonCorruptRecord)
		t.Events++
		if err := tx.Bucket(bucketQueue).Delete(queueKey(lane, t.Priority, t.Seq)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketDone).Put(timeKey(s.retentionNow(), t.TaskNo), nil); err != nil {
			return err
		}
		if t.Seq != 0 {
			if err := tx.Bucket(bucketSeq).Put(u64(t.Seq), []byte(t.TaskNo)); err != nil {
				return err
			}
		}
		if err := putTask(tx, t); err != nil {
			return err
		}
		if err := s.putEvent(tx, ev); err != nil {
			return err
		}
		out = t
		return addCount(tx.Bucket(bucketMeta), StateFailed, 1)
	}
	if err := s.submit(o); err != nil {
		return nil, fmt.Errorf("quarantine %s: %w", item.TaskNo, err)
	}
	return out, nil
}
