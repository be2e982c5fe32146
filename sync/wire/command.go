package wire

import "fmt"

// Reprint asks the agent to reprint a task (as POST .../reprint of §3
// does). Requires id, which the command_result echoes, and task_no.
type Reprint struct {
	ID     string `json:"id"`
	TaskNo string `json:"task_no"`
}

// Cancel asks the agent to cancel a task that has not started sending (as
// POST .../cancel of §3 does). Requires id and task_no.
type Cancel struct {
	ID     string `json:"id"`
	TaskNo string `json:"task_no"`
}

// CommandResult answers a reprint or a cancel. Requires id. OK without
// Error, or not OK with an Error (code as in §3: not_found, conflict,
// pruned, ...). TaskNo is the task the command made (a reprint's new task)
// or acted on (the canceled task); required when OK.
type CommandResult struct {
	ID     string   `json:"id"`
	OK     bool     `json:"ok"`
	Error  *Problem `json:"error,omitempty"`
	TaskNo string   `json:"task_no,omitempty"`
}

// Type is "reprint".
func (*Reprint) Type() string { return TypeReprint }

// Type is "cancel".
func (*Cancel) Type() string { return TypeCancel }

// Type is "command_result".
func (*CommandResult) Type() string { return TypeCommandResult }

func (m *Reprint) frame() any {
	return &struct {
		Type string `json:"type"`
		*Reprint
	}{TypeReprint, m}
}

func (m *Cancel) frame() any {
	return &struct {
		Type string `json:"type"`
		*Cancel
	}{TypeCancel, m}
}

func (m *CommandResult) frame() any {
	return &struct {
		Type string `json:"type"`
		*CommandResult
	}{TypeCommandResult, m}
}

func (m *Reprint) check() *FrameError { return checkCommand(m.ID, m.TaskNo) }

func (m *Cancel) check() *FrameError { return checkCommand(m.ID, m.TaskNo) }

func checkCommand(id, taskNo string) *FrameError {
	if e := required("id", id); e != nil {
		return e
	}
	return required("task_no", taskNo)
}

func (m *CommandResult) check() *FrameError {
	if e := required("id", m.ID); e != nil {
		return e
	}
	if m.OK {
		if m.Error != nil {
			return invalid("error", "must be left out when ok is true")
		}
		if m.TaskNo == "" {
			return invalid("task_no", "is required when ok is true: the task the command made or acted on")
		}
		return nil
	}
	if m.Error == nil {
		return invalid("error", fmt.Sprintf("is required when ok is false: say why command %s failed", quote(m.ID)))
	}
	return m.Error.check("error")
}
