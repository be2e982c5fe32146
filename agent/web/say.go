package web

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"printgate/agent/api"
	"printgate/spool"
)

// The page speaks to a manager: one sentence per task state, reason and
// printer state, with what to do. The codes (PAPER_OUT, TIMED_OUT...) and
// the printer's own error text stay behind the page's details toggle.

// waitingSay says why printer pr does not print and what to do about it,
// or "" while it is ready: "Bar is out of paper. Load paper: 1 waiting
// ticket prints by itself."
func waitingSay(l lang, pr api.PrinterDetail) string {
	if pr.State == "READY" && pr.FailoverTo != "" {
		// Failback pending: what the manager sends it now still goes to
		// the backup (docs/DESIGN.md, "Dispatch": failover).
		return l.T("wait.failback", pr.Name, pr.FailoverTo)
	}
	if pr.State == "" || pr.State == "READY" {
		return ""
	}
	state := pr.State
	if _, ok := catalog["wait."+state]; !ok {
		state = "ERROR"
	}
	sp := " " // between two sentences; Chinese needs none
	if l == langZH {
		sp = ""
	}
	what, todo := "wait."+state, "do."+state
	s := l.T(what, pr.Name) + sp + l.T(todo)
	switch {
	case pr.FailoverTo != "":
		s += l.T("wait.end") + sp + l.T("wait.failedover", pr.FailoverTo)
	case pr.Queue == 1:
		s += l.T("wait.more") + l.T("wait.tickets.1")
	case pr.Queue > 1:
		s += l.T("wait.more") + l.T("wait.tickets.n", pr.Queue)
	default:
		s += l.T("wait.end")
	}
	if pr.Backup != "" && pr.FailoverTo == "" && pr.Queue > 0 {
		s += sp + l.T("wait.backup", pr.Backup)
	}
	return s
}

// whyNot says why a task that ended without paper did not print, as a
// phrase for say.timed_out / say.failed ("printer bar was out of paper
// until the deadline").
func whyNot(l lang, t *spool.Task) string {
	id := "why." + t.Reason
	if _, ok := catalog[id]; !ok {
		if t.State == spool.StateTimedOut {
			id = "why.TIMED_OUT"
		} else {
			id = "why.FAILED"
		}
	}
	return l.T(id, t.Lane())
}

// taskSay is the task page's headline: what happened to t and what to do,
// with the printer it is on (pr, nil when not configured now). bad marks
// a ticket that did not print.
func taskSay(l lang, t *spool.Task, pr *api.PrinterDetail) (say string, bad bool) {
	lane := t.Lane()
	waiting := func(def string) string {
		if pr != nil {
			if s := waitingSay(l, *pr); s != "" {
				return s
			}
		}
		return def
	}
	switch t.State {
	case spool.StateAccepted, spool.StateQueued:
		return waiting(l.T("say.queued", lane)), false
	case spool.StateParked:
		return waiting(l.T("say.parked", lane)), false
	case spool.StateRetryWait:
		when := ""
		if !t.NextDue.IsZero() {
			when = t.NextDue.Local().Format("15:04:05")
		}
		return waiting(l.T("say.retry_wait", lane, when)), false
	case spool.StateSending:
		return l.T("say.sending", lane), false
	case spool.StateUnknown:
		return l.T("say.unknown", lane), false
	case spool.StateHeld:
		if t.Reason == reasonPrinterRemoved {
			return l.T("say.held.removed", lane), true
		}
		return l.T("say.held", lane), true
	case spool.StatePrinted:
		if t.Target != "" && t.Target != t.Printer {
			return l.T("say.printed.backup", t.Target, t.Printer), false
		}
		return l.T("say.printed", lane), false
	case spool.StateCanceled:
		return l.T("say.canceled"), false
	case spool.StateTimedOut:
		return l.T("say.timed_out", whyNot(l, t)), true
	case spool.StateFailed:
		return l.T("say.failed", whyNot(l, t)), true
	}
	return l.State(t.State), false
}

// reasonPrinterRemoved is agent.ReasonPrinterRemoved (the page does not
// import the agent).
const reasonPrinterRemoved = "PRINTER_REMOVED"

// Reason patterns the agent writes with printer names in them.
var (
	reasonFailover      = regexp.MustCompile(`^failover (\S+) → (\S+)$`)
	reasonFailoverGone  = regexp.MustCompile(`^failover (\S+) → (\S+): \S+ was removed from the config$`)
	reasonBackGone      = regexp.MustCompile(`^back to (\S+): (\S+) was removed from the config$`)
	reasonRetriedOn     = regexp.MustCompile(`^retried by a manager on (\S+)$`)
	capabilityPaper     = regexp.MustCompile(`^(\d+) mm, (\d+) columns$`)
	capabilityPaperDots = regexp.MustCompile(`^(\d+) dots, (\d+) columns$`)
)

// Reason translates a timeline reason: a code (PAPER_OUT), a printer
// state, or one of the phrases the agent writes; anything else is shown
// as it is.
func (l lang) Reason(r string) string {
	if r == "" {
		return ""
	}
	if id := "reason." + r; catalog[id].en != "" {
		return l.T(id)
	}
	if _, ok := catalog["state."+r]; ok {
		return l.State(r)
	}
	if m := reasonFailoverGone.FindStringSubmatch(r); m != nil {
		return l.T("reason.failover.gone", m[2], m[1])
	}
	if m := reasonFailover.FindStringSubmatch(r); m != nil {
		return l.T("reason.failover", m[2], m[1])
	}
	if m := reasonBackGone.FindStringSubmatch(r); m != nil {
		return l.T("reason.back.gone", m[1], m[2])
	}
	if m := reasonRetriedOn.FindStringSubmatch(r); m != nil {
		return l.T("reason.retried.on", m[1])
	}
	return r
}

// Capability translates one phrase of a printer's probed capabilities
// ("80 mm, 48 columns", "cutter"); names such as an encoding stay.
func (l lang) Capability(c string) string {
	if m := capabilityPaper.FindStringSubmatch(c); m != nil {
		mm, _ := strconv.Atoi(m[1])
		cols, _ := strconv.Atoi(m[2])
		return l.T("cap.paper", mm, cols)
	}
	if m := capabilityPaperDots.FindStringSubmatch(c); m != nil {
		dots, _ := strconv.Atoi(m[1])
		cols, _ := strconv.Atoi(m[2])
		return l.T("cap.dots", dots, cols)
	}
	if id := "cap." + c; catalog[id].en != "" {
		return l.T(id)
	}
	return c
}

// Capabilities is every capability phrase translated, joined.
func (l lang) Capabilities(cs []string) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = l.Capability(c)
	}
	return strings.Join(out, l.T("common.listsep"))
}

// Count is n with the singular or plural catalog entry id+".1" / id+".n".
func (l lang) Count(id string, n int) string {
	if n == 1 {
		return l.T(id + ".1")
	}
	return l.T(id+".n", n)
}

// tries counts the times a task was sent to a printer (its SENDING
// entries): what the page calls attempts. The spool's Attempts counts
// only the failures that count toward the limit (a printer out of paper
// or busy gives the attempt back), so it can be lower.
func tries(t *spool.Task) int {
	n := 0
	for _, e := range t.Timeline {
		if e.State == spool.StateSending {
			n++
		}
	}
	return n
}

// timelineEntry is one timeline line as the page shows it.
type timelineEntry struct {
	spool.TimelineEntry
	// Try numbers a SENDING entry (1 for the first send), 0 otherwise.
	Try int
}

func timeline(t *spool.Task) []timelineEntry {
	out := make([]timelineEntry, len(t.Timeline))
	n := 0
	for i, e := range t.Timeline {
		out[i].TimelineEntry = e
		if e.State == spool.StateSending {
			n++
			out[i].Try = n
		}
	}
	return out
}

// targetLabel is the label of the printer a task moved to, by its state:
// a printed task was printed there, a waiting one prints there.
func targetLabel(l lang, s spool.State) string {
	switch {
	case s == spool.StatePrinted:
		return l.T("task.target.printed")
	case s.Terminal():
		return l.T("task.target.was")
	}
	return l.T("task.target")
}

// printerDetail finds name among the configured printers.
func (p *Page) printerDetail(name string) *api.PrinterDetail {
	for _, pr := range p.b.PrinterDetails() {
		if pr.Name == name {
			return &pr
		}
	}
	return nil
}

// sayCatalog holds the manager's sentences; init merges it into catalog.
var sayCatalog = map[string]msg{
	// Labels and sentences of the task, confirm and dashboard pages.
	"alert.task.FAILED":      {"Task %s was NOT printed: %s. Open it to retry it, or tell the kitchen.", "任务 %s 未打印：%s。请打开任务重试，或通知后厨。"},
	"alert.task.HELD":        {"Task %s is held: it may or may not have printed. Open it to retry or cancel it.", "任务 %s 已暂停：可能已打印，也可能没有。请打开任务重试或取消。"},
	"alert.task.TIMED_OUT":   {"Task %s was NOT printed: %s. Reprint it, or tell the kitchen.", "任务 %s 未打印：%s。请重印，或通知后厨。"},
	"attn.failover":          {"Printer %s: on its backup %s", "打印机 %s：由备用打印机 %s 打印"},
	"attn.held":              {"Task %s: held, may not have printed", "任务 %s：已暂停，可能未打印"},
	"attn.pin_paused":        {"PIN sign-in is paused for everyone", "所有人的 PIN 登录已暂停"},
	"attn.raw_refused":       {"Printer %s: a job from the POS was refused and did not print", "打印机 %s：收银机的一单被拒收，未打印"},
	"attn.raw_waiting":       {"Printer %s: its port takes no new POS job for now", "打印机 %s：打印端口暂不接收收银机新单"},
	"attn.task":              {"Task %s: NOT printed (%s)", "任务 %s：未打印（%s）"},
	"confirm.failover.note":  {"Printer %s's tickets print on its backup %s now: what is sent to %s prints there, marked FAILOVER, until it has been ready again for failback_after.", "打印机 %s 的小票目前由备用打印机 %s 打印：发往 %s 的小票会在备用打印机上打印（标记为“故障转移”），直到它恢复就绪并持续 failback_after。"},
	"confirm.where":          {"It prints on %s.", "将在 %s 上打印。"},
	"confirm.where.failover": {"It prints on %s, marked FAILOVER, not on %s: that printer's tickets print on its backup until it has been ready again for failback_after (60 s unless the config says otherwise). To have it on %s, wait until the dashboard shows the failover ended, then reprint.", "将在 %s 上打印（标记为“故障转移”），而不是 %s：该打印机恢复就绪并持续 failback_after（默认 60 秒）之前，其小票都由备用打印机打印。如需在 %s 上打印，请等总览显示故障转移结束后再重印。"},
	"dash.attention":         {"Needs attention:", "需要处理："},
	"dash.attention.badge":   {"Needs attention", "需要处理"},
	"dash.attention.none":    {"Nothing needs attention.", "没有需要处理的事项。"},
	"task.cancel.when":       {"It will not print: for an order that was called off.", "不再打印：用于已取消的订单。"},
	"task.counted":           {"Attempts counted", "计入限制的尝试"},
	"task.counted.n":         {"%d (a try that found the printer busy or out of paper does not count toward the limit)", "%d（遇到打印机忙或缺纸的尝试不计入限制）"},
	"task.details":           {"Technical details", "技术细节"},
	"task.reasoncode":        {"Reason code", "原因代码"},
	"task.reprint.when":      {"Print another copy, marked REPRINT: for a ticket that printed but got lost or spoiled.", "再打印一份，标记为“重印”：用于已打印但丢失或损坏的小票。"},
	"task.retry.when":        {"This ticket did not print (or may not have): print it now, on this or another printer.", "这张小票未打印（或可能未打印）：现在在本打印机或其他打印机上打印。"},
	"task.target.printed":    {"Printed on", "实际打印机"},
	"task.target.was":        {"Was to print on", "原定改由此打印机打印"},

	"common.listsep": {", ", "、"},

	// A printer that does not print, and what to do.
	"wait.PAPER_OUT":     {"Printer %s is out of paper.", "打印机 %s 缺纸。"},
	"wait.COVER_OPEN":    {"Printer %s has its cover open.", "打印机 %s 机盖打开。"},
	"wait.OFFLINE":       {"Printer %s does not answer.", "打印机 %s 无响应。"},
	"wait.ERROR":         {"Printer %s is connected but does not answer.", "打印机 %s 已连接但无响应。"},
	"wait.BUSY":          {"Printer %s is busy.", "打印机 %s 正忙。"},
	"do.PAPER_OUT":       {"Load paper", "请装纸"},
	"do.COVER_OPEN":      {"Close the cover", "请合上机盖"},
	"do.OFFLINE":         {"Check that it is switched on and its cable or network is plugged in", "请检查打印机电源以及数据线或网线是否连接好"},
	"do.ERROR":           {"Switch it off and on again", "请关闭后重新打开打印机"},
	"do.BUSY":            {"Wait a moment", "请稍候"},
	"wait.failback":      {"Printer %s is ready again. Its tickets still print on its backup %s until it has been ready for failback_after (60 s unless the config says otherwise).", "打印机 %s 已恢复就绪。在其持续就绪 failback_after（默认 60 秒）之前，小票仍由备用打印机 %s 打印。"},
	"wait.more":          {": ", "："},
	"wait.end":           {".", "。"},
	"wait.tickets.1":     {"1 waiting ticket prints by itself.", "1 张等待中的小票会自动打印。"},
	"wait.tickets.n":     {"%d waiting tickets print by themselves.", "%d 张等待中的小票会自动打印。"},
	"wait.failedover":    {"Its tickets print on its backup %s meanwhile.", "期间其小票改由备用打印机 %s 打印。"},
	"wait.backup":        {"If it stays so, they move to its backup %s.", "若一直如此，小票将转到备用打印机 %s 打印。"},
	"say.queued":         {"Waiting to print on %s.", "正在等待在 %s 上打印。"},
	"say.parked":         {"Waiting: %s is offline. It prints by itself when the printer is back.", "等待中：%s 离线。打印机恢复后会自动打印。"},
	"say.retry_wait":     {"Sending to %s failed; the agent tries again by itself (at %s).", "发送到 %s 失败；代理会自动重试（%s）。"},
	"say.sending":        {"Printing on %s now.", "正在 %s 上打印。"},
	"say.unknown":        {"The connection to %s broke while the ticket was sent: it may or may not have printed. The agent is finding out.", "发送小票时与 %s 的连接中断：可能已打印，也可能没有。代理正在确认。"},
	"say.held":           {"Held: it may or may not have printed on %s. Look at the printer: if the ticket is not there, press Retry (the copy is marked POSSIBLE DUPLICATE); if it is, cancel this task.", "已暂停：可能已在 %s 上打印，也可能没有。请查看打印机：若没有这张小票，请点“重试”（副本会标记为“可能重复”）；若已打印，请取消此任务。"},
	"say.held.removed":   {"Held: printer %s was removed from the config. Retry it on another printer, or cancel it.", "已暂停：打印机 %s 已从配置中删除。请在其他打印机上重试，或取消此任务。"},
	"say.printed":        {"Printed on %s.", "已在 %s 上打印。"},
	"say.printed.backup": {"Printed on %s, the backup of %s.", "已在 %s（%s 的备用打印机）上打印。"},
	"say.canceled":       {"Canceled by a manager: it will not print.", "已被管理员取消：不会打印。"},
	"say.timed_out":      {"NOT printed: %s. Reprint it, or tell the kitchen.", "未打印：%s。请重印，或通知后厨。"},
	"say.failed":         {"NOT printed: %s. Fix the cause and retry it, or tell the kitchen.", "未打印：%s。请排除原因后重试，或通知后厨。"},

	// Why a ticket did not print (after "NOT printed: ").
	"why.DEVICE_OFFLINE":  {"printer %s was offline until the deadline", "打印机 %s 直到截止时间仍离线"},
	"why.PAPER_OUT":       {"printer %s was out of paper until the deadline", "打印机 %s 直到截止时间仍缺纸"},
	"why.NO_ACK":          {"printer %s did not confirm the ticket in time", "打印机 %s 未能及时确认这张小票"},
	"why.BUSY":            {"printer %s stayed busy until the deadline", "打印机 %s 直到截止时间仍在忙"},
	"why.INVALID":         {"the ticket is not valid for printer %s", "这张小票不适用于打印机 %s"},
	"why.RENDER":          {"the ticket could not be drawn for printer %s", "无法为打印机 %s 生成这张小票"},
	"why.MAX_ATTEMPTS":    {"printer %s failed every attempt", "打印机 %s 每次尝试都失败"},
	"why.PRINTER_REMOVED": {"printer %s was removed from the config", "打印机 %s 已从配置中删除"},
	"why.TIMED_OUT":       {"it did not print on %s in time", "未能及时在 %s 上打印"},
	"why.FAILED":          {"printer %s could not print it", "打印机 %s 无法打印"},

	// Timeline reasons.
	"reason.DEVICE_OFFLINE":                      {"printer offline", "打印机离线"},
	"reason.NO_ACK":                              {"no confirmation from the printer", "打印机未确认"},
	"reason.INVALID":                             {"invalid ticket", "小票无效"},
	"reason.RENDER":                              {"could not be drawn", "无法生成"},
	"reason.MAX_ATTEMPTS":                        {"too many failed attempts", "失败次数过多"},
	"reason.TRUNCATED":                           {"incomplete job from the POS", "收银机发送的内容不完整"},
	"reason.PRINTER_REMOVED":                     {"printer removed from the config", "打印机已从配置中删除"},
	"reason.REPEATED_UNKNOWN":                    {"outcome unknown again and again: held for a manager", "多次无法确认结果：等待管理员处理"},
	"reason.canceled":                            {"canceled by a manager", "已被管理员取消"},
	"reason.send failed":                         {"sending failed", "发送失败"},
	"reason.retry due":                           {"trying again", "重新尝试"},
	"reason.retried by a manager":                {"retried by a manager", "管理员已重试"},
	"reason.outcome unknown: held for a manager": {"outcome unknown: held for a manager", "结果未知：等待管理员处理"},
	"reason.outcome unknown: reprinting marked POSSIBLE DUPLICATE":            {"outcome unknown: printing again, marked POSSIBLE DUPLICATE", "结果未知：重新打印，并标记为“可能重复”"},
	"reason.outcome unknown: the printer took the job and did not confirm it": {"outcome unknown: the printer took the ticket and did not confirm it", "结果未知：打印机已接收小票但未确认"},
	"reason.outcome unknown":               {"outcome unknown: it may or may not have printed", "结果未知：可能已打印，也可能没有"},
	"reason.agent restarted while sending": {"the agent restarted while sending", "发送时代理重启"},
	"reason.failover":                      {"moved to the backup %s (%s not ready)", "已转到备用打印机 %s（%s 未就绪）"},
	"reason.failover.gone":                 {"moved to the backup %s (%s removed from the config)", "已转到备用打印机 %s（%s 已从配置中删除）"},
	"reason.back.gone":                     {"back to %s (%s removed from the config)", "已转回 %s（%s 已从配置中删除）"},
	"reason.retried.on":                    {"retried by a manager on %s", "管理员已在 %s 上重试"},

	// Probed capabilities.
	"cap.paper":               {"%d mm, %d columns", "%d 毫米，%d 列"},
	"cap.dots":                {"%d dots, %d columns", "%d 点，%d 列"},
	"cap.cutter":              {"cutter", "切刀"},
	"cap.partial cutter":      {"partial cutter", "半切刀"},
	"cap.no cutter":           {"no cutter", "无切刀"},
	"cap.real-time status":    {"real-time status", "实时状态"},
	"cap.transmit status":     {"transmit status", "状态回传"},
	"cap.print confirmation":  {"print confirmation", "打印确认"},
	"cap.one-way (no status)": {"one-way (no status)", "单向（无状态）"},
}

func init() {
	for _, more := range []map[string]msg{sayCatalog, problemCatalog} {
		for id, m := range more {
			if _, dup := catalog[id]; dup {
				panic(fmt.Sprintf("catalog id %s twice", id))
			}
			catalog[id] = m
		}
	}
}
