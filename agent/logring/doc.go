// Package logring keeps the agent's most recent log lines in memory, with
// secrets already redacted, and serves them to remote and local log tails.
//
// A [Ring] is one branch of the agent's slog fanout (its [Ring.Handler]). Every
// record is rendered once, as the same "time=… level=… msg=… k=v" text the
// console shows, after [ReplaceAttr] has replaced secret attributes and
// scrubbed tokens out of free text, so nothing stored can leak a credential.
// The ring is bounded by line count and by bytes; the oldest lines go first.
//
// [Ring.Tail] serves the cloud's logs_tail (docs/PROTOCOL.md §5): the recent
// matching lines, then, when following, new ones as they come, rate limited,
// until the caller's context ends (logs_stop, dropped link) or a maximum
// duration passes. Logging never waits for a tail: a follower that falls
// behind loses lines, and is told how many.
package logring
