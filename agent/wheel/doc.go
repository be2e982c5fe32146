// Package wheel schedules many deadlines cheaply: the push wheel (retries,
// backoff, requeues, failover and failback checks) and the timeout wheel (one
// absolute deadline per task) of the printgate agent.
//
// A [Wheel] is a hierarchical timing wheel. It exists because the agent holds
// one deadline per task and per retry, and a runtime timer or goroutine per
// deadline costs more memory and scheduler work than a slot in a wheel. Its one
// hard rule: an entry never fires before its deadline, and fires at most one
// tick after it when the wheel is advanced on every tick it asks for.
//
// Time is injected through [clock.Clock] (printgate/internal/clock): the
// real clock in production, a fake one in tests, so no test sleeps to wait
// for a timer. Deadlines are compared on the monotonic clock, so a
// wall-clock jump (NTP step, a cashier changing the till's date) neither
// fires entries early nor strands them.
//
// [Wheel] is for one goroutine; [Scheduler] wraps it with a mutex and a driver
// loop for the common case of Add and Cancel arriving from many goroutines.
//
// The package imports nothing from the rest of printgate but its clock, so
// it can be reused and tested on its own. Retry delays to feed into either
// come from printgate/internal/backoff.
package wheel
