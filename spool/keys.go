package spool

import (
	"encoding/binary"
	"time"
)

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// queueKey orders a lane's tasks by (priority, seq): lane 0x00 rank seq.
// Printer names never contain 0x00, so one lane's keys are contiguous.
func queueKey(lane string, p Priority, seq uint64) []byte {
	k := make([]byte, 0, len(lane)+10)
	k = append(k, lane...)
	k = append(k, 0, priorityRank(p))
	return binary.BigEndian.AppendUint64(k, seq)
}

func lanePrefix(lane string) []byte {
	k := make([]byte, 0, len(lane)+1)
	k = append(k, lane...)
	return append(k, 0)
}

// outboxKey orders events by task_no, then event number: task_no 0x00 n.
// 0x00 sorts below every task_no character, so "A1" < "A1x" holds for keys too.
func outboxKey(taskNo string, n int) []byte {
	k := make([]byte, 0, len(taskNo)+5)
	k = append(k, taskNo...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, uint32(n))
}

// timeKey orders terminal tasks by the time they ended: unix nanos, task_no.
func timeKey(at time.Time, taskNo string) []byte {
	k := make([]byte, 0, len(taskNo)+8)
	k = binary.BigEndian.AppendUint64(k, uint64(at.UnixNano()))
	return append(k, taskNo...)
}

// timeKeyTime is the time a timeKey holds.
func timeKeyTime(k []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])))
}
