package web

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"printgate/internal/fileowner"
	"runtime"
)

// Problem is an error a person can act on: what went wrong and what to
// do, in the page's words (catalog ids, so both languages), kept apart
// from the cause, which goes to the agent's log only (it may name
// internals a manager cannot use).
type Problem struct {
	// What is the catalog id of the sentence saying what went wrong,
	// filled with Args; Fix the id of the sentence saying what to do,
	// filled with FixArgs.
	What, Fix     string
	Args, FixArgs []any
	// Command is a command that fixes it, shown as code ("" for none).
	Command string
	// Err is the cause, for the log.
	Err error
}

// Error is the cause with the English sentence, for logs and callers that
// print errors.
func (e *Problem) Error() string {
	s := lang(langEN).T(e.What, e.Args...)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Problem) Unwrap() error { return e.Err }

// fixer is an error from outside the page that knows its fix: one
// sentence (English) that says what to do. The page shows the error's
// text and that sentence.
type fixer interface {
	error
	Fix() string
}

// problemView is what error.html shows.
type problemView struct {
	What    string
	Fix     string
	Command string
}

// words turns err into what a person reads on the page in l. A *Problem
// gives its own sentences; an error that knows its fix gives its text and
// the fix; anything else gives only what the page was doing (whatID) and
// where the details are, never the raw error.
func words(l lang, whatID string, err error) problemView {
	var pr *Problem
	if errors.As(err, &pr) {
		return problemView{What: l.T(pr.What, pr.Args...), Fix: l.T(pr.Fix, pr.FixArgs...), Command: pr.Command}
	}
	var fx fixer
	if errors.As(err, &fx) {
		return problemView{What: fx.Error(), Fix: fx.Fix()}
	}
	if whatID == "" {
		whatID = "problem.internal"
	}
	return problemView{What: l.T(whatID), Fix: l.T("problem.internal.fix")}
}

// pinReadProblem words a PIN file the agent cannot read: a file set by
// another account (sudo printgate pin set as root) is the usual cause.
func pinReadProblem(dataDir string, err error) *Problem {
	path := PINPath(dataDir)
	if !errors.Is(err, fs.ErrPermission) {
		return &Problem{What: "problem.pin.read", Fix: "problem.pin.read.fix", Args: []any{path}, Command: pinCommand, Err: err}
	}
	acc := fileowner.Current()
	// The same command the CLI and doctor give (fileowner.ChownFix), so a
	// support engineer reads one fix wherever the problem shows.
	pr := &Problem{What: "problem.pin.denied", Fix: "problem.pin.denied.fix", Args: []any{path}, FixArgs: []any{acc.User}, Err: err}
	if runtime.GOOS != "windows" {
		pr.Command = fileowner.ChownFix(path, acc)
	}
	return pr
}

// showProblem answers status with the error page: err in words (whatID
// names what the page was doing when err has none of its own), the cause
// logged. It never shows the cause's text unless err chose its words.
func (p *Page) showProblem(w http.ResponseWriter, r *http.Request, status int, whatID string, err error) {
	// Anyone can reload a page that fails (an unreadable PIN file fails
	// every login).
	p.peerLines.Log(p.log, slog.LevelError, "manager page: "+lang(langEN).T(orDefault(whatID, "problem.internal")),
		slog.String("path", r.URL.Path), slog.Any("err", err))
	v := p.newView(r, p.sessions.get(r), "")
	v.Title = v.L.T("problem.title")
	v.Data = words(v.L, whatID, err)
	t, ok := p.tmpl["error.html"]
	if ok {
		var buf bytes.Buffer
		if t.ExecuteTemplate(&buf, "layout", v) == nil {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(status)
			_, _ = w.Write(buf.Bytes())
			return
		}
	}
	// The error page itself failed: plain words, still with the fix.
	http.Error(w, v.Data.(problemView).What+"\n"+v.Data.(problemView).Fix, status)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// problemCatalog holds the error page's sentences; init merges it into
// catalog.
var problemCatalog = map[string]msg{
	"problem.back":               {"Back to sign-in", "返回登录"},
	"problem.config.read":        {"The agent could not read its config file.", "代理无法读取其配置文件。"},
	"problem.internal":           {"The agent could not finish this page.", "代理无法完成此页面。"},
	"problem.internal.fix":       {"Reload the page. If it happens again, restart the printgate service and tell support what you clicked.", "请刷新页面。如果再次出现，请重启 printgate 服务，并告诉技术支持您点击了什么。"},
	"problem.log":                {"The technical details are in the agent's log: the Logs page, or printgate logs on the store PC.", "技术细节记录在代理日志中：见“日志”页面，或在门店电脑上运行 printgate logs。"},
	"problem.pin.denied":         {"Sign-in is not possible: the agent is not allowed to read the manager PIN file %s. It was probably set by another account (for example with sudo) and belongs to that account now.", "无法登录：代理无权读取管理员 PIN 文件 %s。该文件可能由其他账户（例如通过 sudo）设置，现在归该账户所有。"},
	"problem.pin.denied.fix":     {"On the store PC, give the file to the account the agent runs as (%s), for example with the command below, then sign in again. Or set the PIN again with printgate pin set.", "请在门店电脑上把该文件交给代理运行所用的账户（%s），例如运行下面的命令，然后重新登录；或用 printgate pin set 重新设置 PIN。"},
	"problem.pin.read":           {"Sign-in is not possible: the agent cannot read the manager PIN file %s.", "无法登录：代理无法读取管理员 PIN 文件 %s。"},
	"problem.pin.read.fix":       {"On the store PC, check that the file exists and is readable, or set the PIN again with the command below; then sign in again.", "请在门店电脑上检查该文件是否存在且可读，或用下面的命令重新设置 PIN，然后重新登录。"},
	"problem.pin.write":          {"The agent could not save the new PIN in its data dir.", "代理无法将新 PIN 保存到其数据目录。"},
	"problem.qr":                 {"The agent could not draw the pairing QR code.", "代理无法生成配对二维码。"},
	"problem.render":             {"The agent could not draw this page.", "代理无法显示此页面。"},
	"problem.setupcode.read":     {"The agent cannot read its first-run setup code %s.", "代理无法读取首次设置码文件 %s。"},
	"problem.setupcode.read.fix": {"Restart the printgate service for a new code, or set the PIN on the store PC with the command below.", "请重启 printgate 服务以获取新设置码，或在门店电脑上用下面的命令设置 PIN。"},
	"problem.task":               {"The agent could not read this task from its spool (the data dir).", "代理无法从其存储（数据目录）读取此任务。"},
	"problem.tasks":              {"The agent could not read its task list from its spool (the data dir).", "代理无法从其存储（数据目录）读取任务列表。"},
	"problem.title":              {"Something went wrong", "出现问题"},
	"problem.todo":               {"What to do:", "处理方法："},
}
