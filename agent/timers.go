package agent

import "time"

// timerKind says what a push-wheel timer is for; with the name it applies
// to it makes the timer's key.
type timerKind uint8

const (
	_ timerKind = iota
	timerWake
	timerRedo
	timerJobDone
	timerExpire
	timerFailover
	timerFailback
)

// pushKey names one timer on the push wheel: a later After under the same
// key replaces it, and Cancel under it disarms it. Keys are built only by
// the constructors below, so a key that is set and the key that cancels it
// cannot drift apart by a typo, as "redo:"+taskNo strings could.
type pushKey struct {
	kind timerKind
	name string // the lane or the task_no the timer is about
}

// wakeKey is lane's wake after a spool write failed.
func wakeKey(lane string) pushKey { return pushKey{timerWake, lane} }

// redoKey is the next try of a task held aside: a retry due, or a write
// that failed.
func redoKey(taskNo string) pushKey { return pushKey{timerRedo, taskNo} }

// jobDoneKey offers a finished job's outcome again after its write failed.
func jobDoneKey(taskNo string) pushKey { return pushKey{timerJobDone, taskNo} }

// expireKey is lane's wake for deadlines held until its first reading.
func expireKey(lane string) pushKey { return pushKey{timerExpire, lane} }

// failoverKey is lane's failover_after check.
func failoverKey(lane string) pushKey { return pushKey{timerFailover, lane} }

// failbackKey is lane's failback_after check.
func failbackKey(lane string) pushKey { return pushKey{timerFailback, lane} }

// pushItem is what the push wheel carries.
type pushItem struct {
	lane string
	msg  laneMsg
}

func (a *Agent) onPush(_ pushKey, it pushItem) {
	if l := a.lane(it.lane); l != nil {
		l.post(it.msg)
	}
}

// after schedules msg for lane after d on the push wheel under key.
func (a *Agent) after(key pushKey, d time.Duration, lane string, msg laneMsg) {
	a.push.After(key, d, pushItem{lane: lane, msg: msg})
}

// cancelTimer disarms the push-wheel timer under key, if one is armed.
func (a *Agent) cancelTimer(key pushKey) { a.push.Cancel(key) }
