package agent

// Which lane owns which task, for the agent to route messages about a task
// (cancel, retry, deadline) to the lane holding it.

import ()

func (a *Agent) setOwner(taskNo, lane string) {
	a.ownerMu.Lock()
	a.owner[taskNo] = lane
	a.ownerMu.Unlock()
}

func (a *Agent) dropOwner(taskNo string) {
	a.ownerMu.Lock()
	delete(a.owner, taskNo)
	a.ownerMu.Unlock()
}

// taskEnded forgets a task that reached a terminal state: no lane owns it
// and its deadline is off.
func (a *Agent) taskEnded(taskNo string) {
	a.dropOwner(taskNo)
	a.deadlines.Cancel(taskNo)
}

// toOwner posts msg to the lane holding taskNo, if any lane does; for a
// task whose printer a reload removed, laneless handles it.
func (a *Agent) toOwner(taskNo string, msg laneMsg) bool {
	a.ownerMu.Lock()
	name, ok := a.owner[taskNo]
	a.ownerMu.Unlock()
	if !ok {
		return false
	}
	if l := a.lane(name); l != nil {
		l.post(msg)
		return true
	}
	// Its printer was removed by a reload: the agent answers for it.
	return a.laneless(taskNo, name, msg)
}
