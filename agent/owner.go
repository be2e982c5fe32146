package agent

// Which lane owns which task, for the agent to route messages about a task
// (cancel, retry, deadline) to the lane holding it.
//
// Ownership is recorded twice on purpose. Agent.owner (task_no → lane
// name, under a mutex) is the router's: any goroutine reads it to pick an
// inbox, it is set before a task is posted to its lane (Submit, restore,
// handTo), so a cancel or deadline that follows goes to the same inbox
// behind the task, and it outlives a lane a reload removed (laneless).
// lane.held (task_no → entry) is the lane's own index of the entries it
// holds, read and written only by its goroutine without a lock. Folding
// either into the other would put a lock on the lane's hot path, or leave
// a gap during a hand-over in which a message finds no owner. The lane
// changes Agent.owner only through laneHost: handTo when a task moves,
// taskEnded when it ends.

// setOwner records lane as the owner of taskNo, before taskNo is posted
// to it.
func (a *Agent) setOwner(taskNo, lane string) {
	a.ownerMu.Lock()
	a.owner[taskNo] = lane
	a.ownerMu.Unlock()
}

// dropOwner forgets taskNo's owner; see taskEnded for a task that ended.
func (a *Agent) dropOwner(taskNo string) {
	a.ownerMu.Lock()
	delete(a.owner, taskNo)
	a.ownerMu.Unlock()
}

// ownerOf returns the lane that owns taskNo, which may be one a reload
// removed.
func (a *Agent) ownerOf(taskNo string) (string, bool) {
	a.ownerMu.Lock()
	defer a.ownerMu.Unlock()
	name, ok := a.owner[taskNo]
	return name, ok
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
	name, ok := a.ownerOf(taskNo)
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
