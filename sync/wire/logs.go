package wire

import "fmt"

// LogsTail asks the agent to send its log lines to support. Requires id,
// which every log_lines and the logs_stop echo. Level is the least severe
// level wanted (debug, info, warn or error; empty means every line kept);
// Contains keeps only lines holding that text; Lines is how many recent
// lines to send first (0 or more); Follow keeps sending new lines until a
// logs_stop with the same id or the link drops.
type LogsTail struct {
	ID       string `json:"id"`
	Level    string `json:"level,omitempty"`
	Contains string `json:"contains,omitempty"`
	Follow   bool   `json:"follow"`
	Lines    int    `json:"lines"`
}

// LogLevels are the values of LogsTail.Level, least severe first, as the
// config's log level (PROTOCOL.md §2).
var LogLevels = []string{"debug", "info", "warn", "error"}

// LogLines carries log lines for a logs_tail, oldest first. Requires id
// and at least one line. The sender splits lines over frames so that each
// stays under MaxFrameBytes.
type LogLines struct {
	ID    string   `json:"id"`
	Lines []string `json:"lines"`
}

// LogsStop ends the logs_tail with the same id. Requires id.
type LogsStop struct {
	ID string `json:"id"`
}

// Type is "logs_tail".
func (*LogsTail) Type() string { return TypeLogsTail }

// Type is "log_lines".
func (*LogLines) Type() string { return TypeLogLines }

// Type is "logs_stop".
func (*LogsStop) Type() string { return TypeLogsStop }

func (m *LogsTail) frame() any {
	return &struct {
		Type string `json:"type"`
		*LogsTail
	}{TypeLogsTail, m}
}

func (m *LogLines) frame() any {
	return &struct {
		Type string `json:"type"`
		*LogLines
	}{TypeLogLines, m}
}

func (m *LogsStop) frame() any {
	return &struct {
		Type string `json:"type"`
		*LogsStop
	}{TypeLogsStop, m}
}

func (m *LogsTail) check() *FrameError {
	if e := required("id", m.ID); e != nil {
		return e
	}
	if e := oneOf("level", m.Level, true, LogLevels...); e != nil {
		return e
	}
	if m.Lines < 0 {
		return invalid("lines", fmt.Sprintf("is %d; it counts recent lines to send first, 0 or more", m.Lines))
	}
	return nil
}

func (m *LogLines) check() *FrameError {
	if e := required("id", m.ID); e != nil {
		return e
	}
	if len(m.Lines) == 0 {
		return invalid("lines", "is required: a log_lines frame carries at least one line")
	}
	return nil
}

func (m *LogsStop) check() *FrameError { return required("id", m.ID) }
