package web

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/spool"
)

var (
	hanChar     = regexp.MustCompile(`\p{Han}`)
	englishWord = regexp.MustCompile(`[A-Za-z_]{3,}`)
	// agentReason finds the reasons the agent writes: Reason: "literal"
	// and the Reason... = "CODE" constants.
	agentReason = regexp.MustCompile(`Reason:\s*"([^"]+)"\s*[,}]|[Rr]eason[A-Za-z]*\s*:?=\s*"([^"]+)"\s*\n`)
)

// zhOnly reports what English is left in s, a Chinese sentence, besides
// the printer names and config keys the sentences carry.
func zhOnly(s string) []string {
	var out []string
	for _, w := range englishWord.FindAllString(s, -1) {
		switch w {
		case "kitchen", "bar", "front", "failback_after":
			continue
		}
		out = append(out, w)
	}
	return out
}

// TestEveryAgentReasonTranslated ensures every reason the agent and the
// spool write on a timeline (read from their sources, so a new one fails
// here until it is translated), the printer states a requeue records and
// the reasons with printer names in them read as Chinese on a Chinese page.
func TestEveryAgentReasonTranslated(t *testing.T) {
	reasons := []string{"BUSY", "PAPER_OUT", "COVER_OPEN", "ERROR", "OFFLINE",
		"failover kitchen → bar", "failover kitchen → bar: kitchen was removed from the config",
		"back to kitchen: bar was removed from the config", "retried by a manager on bar"}
	files, _ := filepath.Glob("../*.go")
	files = append(files, "../../spool/task.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range agentReason.FindAllStringSubmatch(string(b), -1) {
			reasons = append(reasons, m[1]+m[2])
		}
	}
	if len(reasons) < 25 {
		t.Fatalf("found only %d reasons in the agent's sources: %q", len(reasons), reasons)
	}
	for _, r := range reasons {
		zh := lang(langZH).Reason(r)
		if !hanChar.MatchString(zh) || len(zhOnly(zh)) > 0 {
			t.Errorf("reason %q reads %q in Chinese", r, zh)
		}
		if en := lang(langEN).Reason(r); strings.Contains(en, "_") || en == strings.ToUpper(en) {
			t.Errorf("reason %q reads %q in English: a code, not words", r, en)
		}
	}
}

// TestTaskSayEveryState ensures every task state has a sentence in both
// languages, with no code in it, and that a ticket that ended without
// paper says NOT printed with what to do.
func TestTaskSayEveryState(t *testing.T) {
	pr := &api.PrinterDetail{PrinterInfo: api.PrinterInfo{Name: "bar", State: "READY"}}
	for _, st := range spool.AllStates {
		for _, reason := range []string{"", spool.ReasonDeviceOffline, spool.ReasonPaperOut, spool.ReasonNoAck, spool.ReasonBusy, spool.ReasonInvalid, spool.ReasonRender, spool.ReasonMaxAttempts, reasonPrinterRemoved} {
			task := &spool.Task{TaskNo: "T1", Printer: "bar", State: st, Reason: reason, NextDue: time.Now()}
			en, bad := taskSay(langEN, task, pr)
			zh, _ := taskSay(langZH, task, pr)
			if en == "" || strings.Contains(en, string(st)) || strings.Contains(en, "%!") {
				t.Errorf("%s/%s: %q", st, reason, en)
			}
			if !hanChar.MatchString(zh) || len(zhOnly(zh)) > 0 || strings.Contains(zh, "%!") {
				t.Errorf("%s/%s in Chinese: %q", st, reason, zh)
			}
			if (st == spool.StateTimedOut || st == spool.StateFailed) && (!bad || !strings.HasPrefix(en, "NOT printed: ") || !strings.Contains(en, "tell the kitchen")) {
				t.Errorf("%s/%s does not say it did not print and what to do: %q", st, reason, en)
			}
		}
	}
	pr.State, pr.Queue = "PAPER_OUT", 1
	got, _ := taskSay(langEN, &spool.Task{TaskNo: "T1", Printer: "bar", State: spool.StateQueued, Reason: "PAPER_OUT"}, pr)
	if got != "Printer bar is out of paper. Load paper: 1 waiting ticket prints by itself." {
		t.Errorf("paper out: %q", got)
	}
	got, _ = taskSay(langEN, &spool.Task{TaskNo: "T1", Printer: "kitchen", Target: "bar", State: spool.StatePrinted}, pr)
	if got != "Printed on bar, the backup of kitchen." {
		t.Errorf("printed on the backup: %q", got)
	}
}

// TestCapabilitiesTranslated ensures every phrase the agent's probe
// writes (agent/page.go capabilityPhrases) reads as Chinese.
func TestCapabilitiesTranslated(t *testing.T) {
	for _, c := range []string{"80 mm, 48 columns", "58 mm, 32 columns", "512 dots, 42 columns", "cutter", "partial cutter", "no cutter", "real-time status", "transmit status", "print confirmation", "one-way (no status)"} {
		if zh := lang(langZH).Capability(c); !hanChar.MatchString(zh) || englishWord.MatchString(zh) {
			t.Errorf("capability %q reads %q in Chinese", c, zh)
		}
	}
	if got := lang(langZH).Capability("GB18030"); got != "GB18030" {
		t.Errorf("an encoding's name became %q", got)
	}
}

// TestReprintConfirmSaysWhere ensures the reprint's confirm page says
// where the ticket prints: on its printer, or, while that printer is
// failed over (failback pending included), on the backup, naming
// failback_after; and the retry's confirm page warns of the failover.
func TestReprintConfirmSaysWhere(t *testing.T) {
	h := newHarness(t)
	h.f.add("K1", spool.StatePrinted, time.Now(), `{"lines":[{"text":"x"}]}`)
	h.f.add("K2", spool.StateTimedOut, time.Now(), `{"lines":[{"text":"x"}]}`)
	c := h.session()
	wantBody(t, h.get(c, "/tasks/K1/reprint"), `id="where"`, "It prints on kitchen.")
	h.f.setPrinter("kitchen", "READY", "bar")
	w := h.get(c, "/tasks/K1/reprint")
	wantBody(t, w, "It prints on bar, marked FAILOVER, not on kitchen", "failback_after")
	c.lang = "zh-CN"
	wantBody(t, h.get(c, "/tasks/K1/reprint"), "将在 bar 上打印（标记为“故障转移”），而不是 kitchen")
	c.lang = ""
	wantBody(t, h.get(c, "/tasks/K2/retry"), `data-field="failover-note"`, "Printer kitchen&#39;s tickets print on its backup bar now")
	// The dashboard says it too, beside the ready printer.
	wantBody(t, h.get(c, "/"), "Printer kitchen is ready again. Its tickets still print on its backup bar")
}

// TestDashboardWords ensures the dashboard tells a backup configured from
// a failover active, hides an old link error once the link is up, and
// lists on the Agent card what needs attention, not a bare OK.
func TestDashboardWords(t *testing.T) {
	h := newHarness(t, func(_ *Options, f *fakeBackend) {
		f.link.LastError = "dial tcp: connection refused"
	})
	h.waitSubscribed()
	c := h.session()
	body := h.get(c, "/").Body.String()
	if strings.Contains(body, "connection refused") {
		t.Error("an old link error shows under Online")
	}
	if !strings.Contains(body, `data-field="backup" class="break">bar<`) || !strings.Contains(body, "not needed: it prints its own tickets") || strings.Contains(body, ">off<") {
		t.Errorf("kitchen's backup and failover:\n%s", body)
	}
	c.lang = "zh-CN"
	if body := h.get(c, "/").Body.String(); strings.Contains(body, "未启用") || !strings.Contains(body, "未触发：由本机打印") {
		t.Errorf("kitchen's failover in Chinese:\n%s", body)
	}
	c.lang = ""
	if !strings.Contains(body, "Nothing needs attention.") {
		t.Errorf("the Agent card with nothing to do:\n%s", body)
	}

	h.f.add("T5", spool.StateTimedOut, time.Now(), `{}`)
	h.f.tasks[0].Reason = spool.ReasonPaperOut
	h.f.tasks[0].Printer = "bar"
	h.emitAndWait(api.Change{Kind: "task", TaskNo: "T5", State: "TIMED_OUT", Printer: "bar"})
	body = h.get(c, "/").Body.String()
	for _, want := range []string{"Task T5 was NOT printed: printer bar was out of paper until the deadline. Reprint it, or tell the kitchen.",
		`<ul id="attention"`, "Task T5: NOT printed (Timed out)", ">Needs attention<"} {
		if !strings.Contains(body, want) {
			t.Errorf("the dashboard lacks %q:\n%s", want, body)
		}
	}
	h.f.link.State = "offline"
	if !strings.Contains(h.get(c, "/").Body.String(), "connection refused") {
		t.Error("the link error is hidden while the link is down")
	}
	if w := h.get(c, "/tasks/T5"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `id="details"`) {
		t.Errorf("the task page has no details toggle for the reason code:\n%s", w.Body.String())
	}
}
