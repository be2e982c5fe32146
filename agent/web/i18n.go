package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Languages the page speaks. The codes are BCP 47 tags, used as the
// <html lang> attribute and the /lang?to= value.
const (
	langEN = "en"
	langZH = "zh-CN"
)

// langCookie remembers the language a person picked with the switch.
const langCookie = "printgate_lang"

// msg is one catalog entry in every language the page speaks.
type msg struct{ en, zh string }

// lang is the language a response is rendered in. Templates call its
// methods ({{$.L.T "nav.tasks"}}), so every string goes through catalog.
type lang string

// T returns message id in l, formatted with args when there are any. A
// missing id comes back as itself (a test keeps the catalog complete).
// When the first argument is the number 1 and the catalog has id+".one",
// that singular form is used ("1 job taken", not "1 jobs taken").
func (l lang) T(id string, args ...any) string {
	m, ok := catalog[id]
	if !ok {
		return id
	}
	if len(args) > 0 && isOne(args[0]) {
		if one, ok := catalog[id+".one"]; ok {
			m = one
		}
	}
	s := m.en
	if l == langZH {
		s = m.zh
	}
	if len(args) > 0 {
		return fmt.Sprintf(s, args...)
	}
	return s
}

// isOne reports whether v is the number 1, of any integer type (the
// page's counts are int and uint64).
func isOne(v any) bool {
	switch n := v.(type) {
	case int:
		return n == 1
	case int64:
		return n == 1
	case uint64:
		return n == 1
	}
	return false
}

// State translates a printer state code (READY, PAPER_OUT...) or a task
// state code (QUEUED, TIMED_OUT...); unknown codes are shown as they are.
func (l lang) State(code any) string { return l.lookup("state.", code) }

// Origin translates a task origin (cloud, local, manager, raw).
func (l lang) Origin(o any) string { return l.lookup("origin.", o) }

// Confirmation explains a confirmation level (printed, consumed,
// delivered).
func (l lang) Confirmation(c any) string { return l.lookup("confirm.", c) }

// lookup translates prefix+code, or shows the code as it is.
func (l lang) lookup(prefix string, code any) string {
	s := fmt.Sprint(code)
	if _, ok := catalog[prefix+s]; ok && s != "" {
		return l.T(prefix + s)
	}
	return s
}

// Code is the BCP 47 tag, for <html lang>.
func (l lang) Code() string { return string(l) }

// pickLang chooses the response language: the switch's cookie, else the
// browser's Accept-Language (any zh → Simplified Chinese), else English.
func pickLang(r *http.Request) lang {
	if c, err := r.Cookie(langCookie); err == nil {
		switch c.Value {
		case langEN:
			return langEN
		case langZH:
			return langZH
		}
	}
	return fromAcceptLanguage(r.Header.Get("Accept-Language"))
}

// fromAcceptLanguage picks the first language we speak among the header's,
// by descending q (RFC 9110 §12.5.4); q=0 means "not this one".
func fromAcceptLanguage(h string) lang {
	type pref struct {
		tag string
		q   float64
	}
	var prefs []pref
	for part := range strings.SplitSeq(h, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		if tag = strings.ToLower(strings.TrimSpace(tag)); tag != "" && q > 0 {
			prefs = append(prefs, pref{tag, q})
		}
	}
	slices.SortStableFunc(prefs, func(a, b pref) int {
		switch {
		case a.q > b.q:
			return -1
		case a.q < b.q:
			return 1
		}
		return 0
	})
	for _, p := range prefs {
		switch {
		case p.tag == "zh" || strings.HasPrefix(p.tag, "zh-"):
			return langZH
		case p.tag == "en" || strings.HasPrefix(p.tag, "en-"):
			return langEN
		}
	}
	return langEN
}

// localPath returns back when it is a path on this server ("/tasks?x=1"),
// else "/": redirects must never send a person to another site.
func localPath(back string) string {
	if back == "" || back[0] != '/' || strings.HasPrefix(back, "//") || strings.HasPrefix(back, "/\\") {
		return "/"
	}
	u, err := url.Parse(back)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return back
}

// setLang handles GET /lang?to=en|zh-CN&back=/path: it stores the choice
// in a cookie and goes back. It needs no session (the login page has the
// switch too) and changes nothing but the caller's own cookie.
func (p *Page) setLang(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("to")
	if to != langEN && to != langZH {
		http.Error(w, "unknown language", http.StatusBadRequest)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     langCookie,
		Value:    to,
		Path:     "/",
		MaxAge:   int((365 * 24 * time.Hour) / time.Second),
		HttpOnly: true,
		Secure:   p.opts.TLS,
		SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, localPath(r.URL.Query().Get("back")), http.StatusSeeOther)
}

// catalog holds every string the page shows, in English and Simplified
// Chinese, keyed by message id. Ids used by templates and Go code are
// checked against it by TestCatalogComplete.
var catalog = map[string]msg{
	// Chrome.
	"app.name":       {"printgate", "printgate"},
	"nav.dashboard":  {"Dashboard", "总览"},
	"nav.tasks":      {"Tasks", "任务"},
	"nav.printers":   {"Printers", "打印机"},
	"nav.pairing":    {"Pairing", "云端配对"},
	"nav.logs":       {"Logs", "日志"},
	"nav.logout":     {"Log out", "退出"},
	"nav.language":   {"Language", "语言"},
	"nav.menu":       {"Main menu", "主菜单"},
	"common.none":    {"—", "—"},
	"common.never":   {"never", "从未"},
	"common.back":    {"Back", "返回"},
	"common.confirm": {"Confirm", "确认"},
	"common.cancel":  {"Go back", "返回"},
	"common.filter":  {"Filter", "筛选"},
	"common.error":   {"Error", "错误"},
	"common.yes":     {"yes", "是"},
	"common.no":      {"no", "否"},
	"footer.version": {"printgate %s", "printgate %s"},

	// Login and setup.
	"login.title":         {"Sign in", "登录"},
	"login.pin":           {"Manager PIN", "管理员 PIN"},
	"login.submit":        {"Sign in", "登录"},
	"login.wrong":         {"That PIN is not right.", "PIN 不正确。"},
	"login.locked":        {"Too many wrong PINs from this device. Try again in %d seconds.", "此设备输错 PIN 次数过多，请 %d 秒后再试。"},
	"login.paused":        {"Too many wrong PINs were tried from this network, so PIN sign-in is paused for everyone. Try again in %s, or sign in from a browser that has signed in here before: it is not paused.", "本网络上有人多次输错 PIN，PIN 登录已对所有人暂停。请 %s 后再试，或使用曾在此登录过的浏览器登录（不受暂停限制）。"},
	"login.nopin.title":   {"No manager PIN yet", "尚未设置管理员 PIN"},
	"login.nopin.body":    {"This agent has no manager PIN yet. Set one from a browser on the store PC itself (http://127.0.0.1…), or run this on the PC:", "此代理尚未设置管理员 PIN。请在门店电脑本机的浏览器中设置（http://127.0.0.1…），或在电脑上运行："},
	"setup.title":         {"Set the manager PIN", "设置管理员 PIN"},
	"setup.intro":         {"Choose the PIN managers will use to open this page. It must have %d to %d characters.", "设置管理员打开本页面所用的 PIN，长度为 %d 到 %d 个字符。"},
	"setup.code":          {"Setup code", "设置码"},
	"setup.code.hint":     {"The one-time code printgate showed when it started on this PC: in its terminal and its log (\"first-run setup code: 1234-5678\"), and in the output of printgate status.", "printgate 在本机启动时显示的一次性设置码：见其终端窗口和日志（“first-run setup code: 1234-5678”），或运行 printgate status 查看。"},
	"setup.code.wrong":    {"That setup code is not right. Copy it from printgate's terminal or log, or from printgate status (after 10 wrong codes a new one replaces it: copy it again).", "设置码不正确。请从 printgate 的终端窗口或日志中复制，或运行 printgate status 查看（输错 10 次后会换成新的设置码，请重新复制）。"},
	"setup.code.missing":  {"No setup code is waiting: it was already used, or none could be made. Restart printgate for a new one, or set the PIN by running printgate pin set on this PC.", "当前没有可用的设置码：可能已被使用，或未能生成。请重启 printgate 以获取新的设置码，或在本机运行 printgate pin set 设置 PIN。"},
	"setup.locked":        {"Too many wrong setup codes or PINs from this device. Try again in %d seconds.", "此设备输错设置码或 PIN 次数过多，请 %d 秒后再试。"},
	"setup.pin":           {"New PIN", "新 PIN"},
	"setup.pin2":          {"The same PIN again", "再次输入 PIN"},
	"setup.submit":        {"Set PIN", "设置 PIN"},
	"setup.mismatch":      {"The two PINs differ.", "两次输入的 PIN 不一致。"},
	"setup.badformat":     {"The PIN must have %d to %d characters and no spaces at either end.", "PIN 必须为 %d 到 %d 个字符，且首尾不能有空格。"},
	"setup.refused":       {"PIN setup is not available here", "此处无法设置 PIN"},
	"setup.refused.set":   {"A manager PIN is already set. To change it, run this on the store PC:", "管理员 PIN 已设置。如需更改，请在门店电脑上运行："},
	"setup.refused.away":  {"The first PIN can only be set from the store PC itself (open the page there at http://127.0.0.1…), or by running this on the PC:", "首次设置 PIN 只能在门店电脑本机进行（在该电脑上打开 http://127.0.0.1…），或在电脑上运行："},
	"csrf.refused":        {"This form has expired or did not come from this page. Go back, reload and try again.", "此表单已过期或不是来自本页面。请返回、刷新后重试。"},
	"error.notfound":      {"Not found", "未找到"},
	"error.notfound.body": {"There is nothing at this address.", "此地址没有内容。"},
	"error.busy":          {"Too many live views are open; close some tabs and reload.", "打开的实时页面过多，请关闭部分标签页后刷新。"},

	// Printer states (the API's codes).
	"state.READY":      {"Ready", "就绪"},
	"state.BUSY":       {"Busy", "忙碌"},
	"state.PAPER_OUT":  {"Paper out", "缺纸"},
	"state.COVER_OPEN": {"Cover open", "机盖打开"},
	"state.OFFLINE":    {"Offline", "离线"},
	"state.ERROR":      {"Not answering", "无响应"},
	// Task states.
	"state.ACCEPTED":   {"Accepted", "已接收"},
	"state.QUEUED":     {"Queued", "排队中"},
	"state.SENDING":    {"Sending", "发送中"},
	"state.PRINTED":    {"Printed", "已打印"},
	"state.RETRY_WAIT": {"Waiting to retry", "等待重试"},
	"state.UNKNOWN":    {"Unknown (checking)", "未知（确认中）"},
	"state.HELD":       {"Held", "已暂停"},
	"state.PARKED":     {"Parked", "已搁置"},
	"state.TIMED_OUT":  {"Timed out", "已超时"},
	"state.FAILED":     {"Failed", "失败"},
	"state.CANCELED":   {"Canceled", "已取消"},
	// Link states.
	"state.online":   {"Online", "在线"},
	"state.offline":  {"Offline", "离线"},
	"state.unpaired": {"Not paired", "未配对"},
	"state.disabled": {"No cloud configured", "未配置云端"},
	// Health states.
	"state.ok":       {"OK", "正常"},
	"state.degraded": {"Degraded", "降级"},
	"state.failed":   {"Stopped", "已停止"},

	// Dashboard.
	"dash.title":         {"Dashboard", "总览"},
	"dash.printers":      {"Printers", "打印机"},
	"dash.noprinters":    {"No printers are configured.", "未配置打印机。"},
	"dash.queue":         {"Queue", "队列"},
	"dash.failover":      {"Failover", "故障转移"},
	"dash.failover.to":   {"active: its tickets print on %s", "已启用：小票改由 %s 打印"},
	"dash.failover.none": {"not needed: it prints its own tickets", "未触发：由本机打印"},
	"dash.last":          {"Last ticket", "最近小票"},
	"dash.link":          {"Cloud link", "云端连接"},
	"dash.outbox":        {"Events waiting", "待上传事件"},
	"dash.lastsync":      {"Last sync", "上次同步"},
	"dash.lasterror":     {"Last error", "最近错误"},
	"dash.store":         {"Store", "门店"},
	"dash.health":        {"Agent", "代理状态"},
	"dash.alerts":        {"Alerts", "警报"},
	"dash.noalerts":      {"No alerts.", "没有警报。"},
	"dash.live":          {"Live", "实时"},
	"dash.dropped":       {"Events dropped by the cap", "因上限丢弃的事件"},

	// Alerts.
	"alert.ack":                  {"Acknowledge", "确认"},
	"alert.dismiss":              {"Dismiss", "移除"},
	"alert.since":                {"since %s", "自 %s 起"},
	"alert.resolved":             {"resolved", "已恢复"},
	"alert.printer_down":         {"Printer %s: %s", "打印机 %s：%s"},
	"alert.failover":             {"Printer %s: its tickets are printing on its backup %s. They go back to it by themselves once it has stayed ready for a while (a minute unless the setup says otherwise); nothing to do unless it stays down.", "打印机 %s：小票改由备用打印机 %s 打印。它恢复就绪并持续一段时间（默认一分钟）后，小票会自动转回；除非它一直无法恢复，否则无需处理。"},
	"alert.task":                 {"Task %s: %s", "任务 %s：%s"},
	"alert.spool":                {"Agent %s: %s", "代理%s：%s"},
	"alert.spool.refusing":       {"The spool is full: new tickets are refused, and the POS or cloud that sent them was told so. Tickets already taken are safe and will print. Raise [spool] max_size or free disk space on this PC. (%s)", "小票存储已满：新小票被拒收，发送方（收银机或云端）已收到拒绝。已接收的小票安全，仍会打印。请调大 [spool] max_size，或清理这台电脑的磁盘空间。（%s）"},
	"alert.spool.write_failing":  {"The spool cannot record the progress of tickets already taken: they wait until it can. Free disk space on this PC now, or raise [spool] max_size. (%s)", "小票存储无法记录已接收小票的进度：这些小票将等待，直到可以记录。请立即清理这台电脑的磁盘空间，或调大 [spool] max_size。（%s）"},
	"alert.spool.compact_failed": {"The spool could not be compacted, so its file stays large and may refuse new tickets sooner; it tries again later. Free disk space on this PC. (%s)", "小票存储无法压缩，文件保持较大，可能更早拒收新小票；稍后会自动重试。请清理这台电脑的磁盘空间。（%s）"},
	"alert.spool.salvage_failed": {"The spool file was damaged and its tickets could not be recovered: orders in it did not print. Call support before deleting anything. (%s)", "小票存储文件已损坏，其中的小票无法恢复：这些订单未打印。删除任何文件前请联系技术支持。（%s）"},
	"alert.raw_refused":          {"Printer %s: a job the POS sent to its printer port was refused and did not print (%s); print it again from the POS", "打印机 %s：收银机发到打印端口的一单被拒收，未打印（%s）；请在收银机上重新打印"},
	"alert.raw_waiting":          {"Printer %s: its printer port takes no new job from the POS for now (%s). POS tickets wait in the network queue and print once there is room; a POS that waits too long shows a printer error. Free disk space, or raise the spool's size or quota_raw", "打印机 %s：打印端口暂时不再接收收银机的新单（%s）。收银机的小票在网络队列中等待，有空间后即打印；等待过久的收银机会显示打印机错误。请释放磁盘空间，或调大缓存大小或 quota_raw"},
	"alert.pin_paused":           {"Someone tried many wrong PINs from %d addresses; PIN sign-in is paused for %s. If it was not you, check who is on the store's network.", "有人从 %d 个地址多次输错 PIN；PIN 登录已暂停 %s。如果不是您，请检查门店网络上有哪些设备。"},
	"dur.minute":                 {"1 minute", "1 分钟"},
	"dur.minutes":                {"%d minutes", "%d 分钟"},
	"dur.hour":                   {"1 hour", "1 小时"},
	"dur.hours":                  {"%d hours", "%d 小时"},
	"alert.link_unpaired":        {"The agent is not paired with the cloud: cloud orders will not print.", "代理未与云端配对：云端订单将不会打印。"},

	// Tasks list.
	"tasks.title":      {"Tasks", "任务"},
	"tasks.state":      {"State", "状态"},
	"tasks.anystate":   {"Any state", "全部状态"},
	"tasks.printer":    {"Printer", "打印机"},
	"tasks.anyprinter": {"Any printer", "全部打印机"},
	"tasks.q":          {"Task number or order number", "任务号或订单号"},
	"tasks.from":       {"From", "从"},
	"tasks.to":         {"To", "到"},
	"tasks.task":       {"Task", "任务"},
	"tasks.origin":     {"Origin", "来源"},
	"tasks.accepted":   {"Accepted", "接收时间"},
	"tasks.attempts":   {"Tries", "尝试次数"},
	"tasks.flags":      {"Flags", "标记"},
	"tasks.none":       {"No tasks match.", "没有匹配的任务。"},
	"tasks.more":       {"Older tasks", "更早的任务"},
	"tasks.first":      {"Newest", "最新"},
	"tasks.scanlimit":  {"Searched the %d most recent tasks in this range without finishing; continue to search older ones.", "已在此范围内搜索最近 %d 个任务，尚未搜索完；可继续搜索更早的任务。"},
	"tasks.badtime":    {"The time filter is not a date and time such as 2026-12-03 14:30; it was ignored.", "时间筛选不是有效的日期时间（例如 2026-12-03 14:30），已忽略。"},
	"flag.duplicate":   {"POSSIBLE DUPLICATE", "可能重复"},
	"flag.reprint":     {"REPRINT of %s", "%s 的重印"},
	"flag.truncated":   {"INCOMPLETE JOB", "接收不完整"},
	"flag.truncated.why": {"The POS's connection to the printer port ended mid-job: what arrived printed between INCOMPLETE JOB and an end line. Print the order again from the POS.",
		"收银机与打印端口的连接在传输中断开：已收到的部分在“接收不完整”标记之间打印。请在收银机上重新打印该单。"},
	"origin.cloud":   {"cloud", "云端"},
	"origin.local":   {"local API (a POS, or printgate on this PC)", "本地接口（收银机，或本机的 printgate 命令）"},
	"origin.manager": {"manager", "管理员"},
	"origin.raw":     {"POS (printer port)", "收银机（打印端口）"},

	// Task page.
	"task.title":         {"Task %s", "任务 %s"},
	"task.printer":       {"Printer", "打印机"},
	"task.target":        {"Prints on", "改由此打印机打印"},
	"task.confirmation":  {"Confirmed by", "确认方式"},
	"task.message":       {"Message", "消息"},
	"task.deadline":      {"Deadline", "截止时间"},
	"task.size":          {"Size", "大小"},
	"task.bytes":         {"%d bytes", "%d 字节"},
	"task.timeline":      {"Timeline", "时间线"},
	"task.preview":       {"On paper", "纸面预览"},
	"task.nopreview":     {"No preview: %s", "无法预览：%s"},
	"task.pruned":        {"This task is older than the retention period; only its number and final state are kept.", "此任务已超过保留期限，仅保留任务号和最终状态。"},
	"task.actions":       {"Actions", "操作"},
	"task.reprint":       {"Reprint", "重印"},
	"task.retry":         {"Retry", "重试"},
	"task.cancel":        {"Cancel task", "取消任务"},
	"task.reason":        {"reason: %s", "原因：%s"},
	"task.on":            {"on %s", "于 %s"},
	"task.attempt":       {"try %d", "第 %d 次尝试"},
	"task.notfound":      {"There is no task %s.", "没有任务 %s。"},
	"confirm.printed":    {"printer status after the cut (strongest)", "切纸后的打印机状态（最可靠）"},
	"confirm.consumed":   {"printer read the whole ticket", "打印机已读取整张小票"},
	"confirm.delivered":  {"bytes delivered to the printer or spooler", "数据已送达打印机或打印队列"},
	"confirm.reprint":    {"Print task %s again? A new version with a REPRINT banner will be printed.", "再次打印任务 %s？将打印一张带有“重印”横幅的新版本。"},
	"confirm.retry":      {"Print task %s again on the printer chosen below?", "在下方选择的打印机上重新打印任务 %s？"},
	"confirm.retry.held": {"This task is held: it may already have printed, so the new copy is marked POSSIBLE DUPLICATE.", "此任务已暂停：可能已经打印过，因此新副本会标记为“可能重复”。"},
	"confirm.cancel":     {"Cancel task %s? It will not print.", "取消任务 %s？它将不会被打印。"},
	"confirm.printer":    {"Printer", "打印机"},
	"flash.reprinted":    {"Reprint queued as task %s.", "重印已排队，任务号 %s。"},
	"flash.retried":      {"Retry queued as task %s.", "重试已排队，任务号 %s。"},
	"flash.retryexists":  {"Not retried: task %s already has version %s (%s), shown here. Retry this one if it fails.", "未重试：任务 %s 已有版本 %s（%s），即本页所示。若它失败，请重试它。"},
	"flash.canceled":     {"Task %s was canceled.", "任务 %s 已取消。"},
	"flash.failed":       {"That did not work: %s", "操作失败：%s"},
	"flash.badprinter":   {"There is no printer %s in the config.", "配置中没有打印机 %s。"},
	"flash.notallowed":   {"This action does not fit the task's state (%s).", "此操作不适用于任务当前状态（%s）。"},
	"flash.testqueued":   {"Test ticket queued on %s.", "测试小票已在 %s 排队。"},
	"flash.scanrunning":  {"A scan is already running.", "已有扫描正在进行。"},
	"flash.unpaired":     {"The agent is no longer paired.", "代理已取消配对。"},
	"flash.wrongpin":     {"That PIN is not right; nothing was changed.", "PIN 不正确，未作任何更改。"},
	"flash.view":         {"Open task", "打开任务"},

	// Printers page.
	"printers.title":           {"Printers", "打印机"},
	"printers.configured":      {"Configured printers", "已配置的打印机"},
	"printers.url":             {"Address", "地址"},
	"printers.profile":         {"Profile", "型号配置"},
	"printers.rawport":         {"POS printer port", "收银机打印端口"},
	"printers.rawjobs":         {"%d jobs taken, %d refused", "已接收 %d 单，拒收 %d 单"},
	"printers.rawjobs.one":     {"%d job taken, %d refused", "已接收 %d 单，拒收 %d 单"},
	"printers.model":           {"Model", "型号"},
	"printers.backup":          {"Backup", "备用打印机"},
	"printers.caps":            {"Capabilities", "功能"},
	"printers.notprobed":       {"not probed yet", "尚未探测"},
	"printers.since":           {"State since", "状态开始于"},
	"printers.test":            {"Print a test ticket", "打印测试小票"},
	"printers.discovered":      {"Attached to this PC", "连接到本电脑的设备"},
	"printers.nodiscovered":    {"No serial ports or USB printers found.", "未发现串口或 USB 打印机。"},
	"printers.discovererr":     {"Could not list local devices: %s", "无法列出本地设备：%s"},
	"printers.addhint":         {"To add it, press Add to config below; or put these lines in the agent's config yourself and press Reload config at the top (no restart needed):", "如需添加，请点击下方“添加到配置”；或自行将以下内容加入代理配置，再点击页面顶部的“重新加载配置”（无需重启）："},
	"printers.scan":            {"Network scan", "网络扫描"},
	"printers.scan.intro":      {"Look for network printers (port 9100) on this PC's private networks only (%s): the /24 around each of its private addresses.", "仅在本电脑所在的私有网络（%s）中查找网络打印机（9100 端口）：即其各个私有地址所在的 /24 网段。"},
	"printers.scan.start":      {"Scan the network", "扫描网络"},
	"printers.scan.running":    {"Scanning…", "扫描中…"},
	"printers.scan.done":       {"Scan finished: %d found.", "扫描完成：发现 %d 台。"},
	"printers.scan.runningon":  {"Scanning %s…", "正在扫描 %s…"},
	"printers.scan.doneon":     {"Scanned %s: %d found.", "已扫描 %s：发现 %d 台。"},
	"printers.scan.noprivate":  {"Nothing scanned: this PC has no address on a private network (%s), and printgate scans no other. Add the printer by its address below.", "未扫描：本电脑没有私有网络（%s）中的地址，printgate 不扫描其他网络。请在下方按地址添加打印机。"},
	"printers.byaddr":          {"Add a printer by address", "按地址添加打印机"},
	"printers.byaddr.intro":    {"Type a network printer's IP address (its self-test page shows it), with :port when the port is not 9100. The agent tests the printer before anything is saved.", "输入网络打印机的网络地址（打印机自检页上有），端口不是 9100 时加上“:端口”。保存之前，代理会先测试这台打印机。"},
	"printers.byaddr.addr":     {"Printer address", "打印机地址"},
	"printers.byaddr.test":     {"Test and add", "测试并添加"},
	"printers.scan.error":      {"Scan failed: %s", "扫描失败：%s"},
	"printers.reload":          {"Reload config", "重新加载配置"},
	"printers.reload.intro":    {"Read the config file again and apply its printers without a restart.", "重新读取配置文件，无需重启即可应用其中的打印机。"},
	"printers.add":             {"Add to config", "添加到配置"},
	"reload.title":             {"Reload the config", "重新加载配置"},
	"reload.thefile":           {"the config file", "配置文件"},
	"reload.confirm":           {"Read %s again and apply its printers? Printers removed from it stop; settings such as listen or TLS take effect only after a restart. A file with errors is refused and the running config is kept.", "重新读取 %s 并应用其中的打印机？已删除的打印机将停止；listen、TLS 等设置需重启后生效。有错误的文件会被拒绝，并保留当前运行的配置。"},
	"add.title":                {"Add a printer to the config", "将打印机添加到配置"},
	"add.intro":                {"These lines will be appended to %s, after everything already in it (nothing else in the file changes); then the config is reloaded so the printer starts.", "以下内容将追加到 %s 的末尾（文件其余内容不变）；随后重新加载配置，打印机即可启用。"},
	"add.name":                 {"Name", "名称"},
	"add.namehint":             {"1–64 letters, digits, '.', '_' or '-'. The lines below show the suggested name; the name you enter is used.", "1–64 个字母、数字、“.”、“_”或“-”。下方内容显示的是建议名称，实际使用您输入的名称。"},
	"add.lines":                {"Lines to append:", "将追加的内容："},
	"add.unavailable":          {"Adding printers from this page is unavailable: the agent did not say which config file it runs from. Put the lines in the config by hand and reload.", "无法在此页面添加打印机：代理未提供其运行所用的配置文件。请手动将内容加入配置后重新加载。"},
	"add.nourl":                {"No printer address was given.", "未提供打印机地址。"},
	"task.dupof":               {"Marked POSSIBLE DUPLICATE because the POS sent exactly the same bytes to this printer's raw port %s earlier, as a POS resending a ticket does:", "标记为“可能重复”，因为 POS 在 %s 前向此打印机的原始端口发送过完全相同的内容，POS 重发单据时就是这样："},
	"task.dupof.off":           {"If the POS prints copies on purpose, ask whoever set up printgate to turn this check off for the printer (raw_duplicate_window = \"0s\" in its config).", "如果 POS 是有意打印多份，请让负责安装 printgate 的人为此打印机关闭该检查（在配置中设置 raw_duplicate_window = \"0s\"）。"},
	"add.badaddr":              {"“%s” is not a printer address: type its IP address, such as 192.168.1.50, or 192.168.1.50:9100.", "“%s”不是打印机地址：请输入其网络地址，例如 192.168.1.50 或 192.168.1.50:9100。"},
	"add.notprivate":           {"%s is not on a private network (%s): printgate connects to printers there only.", "%s 不在私有网络（%s）中：printgate 只连接其中的打印机。"},
	"add.noanswer":             {"Nothing answers at %s, so it was not added: check that the printer is on and connected, its address (print its self-test page) and the port.", "%s 无应答，未添加：请检查打印机已开机并联网，核对其地址（打印自检页查看）和端口。"},
	"add.notest":               {"This agent cannot test a printer's address; add it in the config and reload.", "此代理无法测试打印机地址；请在配置中添加后重新加载。"},
	"add.tested":               {"Tested: %s answers as a receipt printer (ESC/POS status).", "已测试：%s 作为小票打印机应答（ESC/POS 状态）。"},
	"add.tested.silent":        {"Tested: %s accepts connections but did not answer the printer status query: it may be busy, or not a receipt printer.", "已测试：%s 接受连接，但未应答打印机状态查询：可能正忙，或不是小票打印机。"},
	"flash.reloaded":           {"Config reloaded.", "配置已重新加载。"},
	"flash.reload.nothing":     {"Config reloaded; no printer changed.", "配置已重新加载；打印机无变化。"},
	"flash.reload.added":       {"Added: %s", "新增：%s"},
	"flash.reload.changed":     {"Changed: %s", "已更改：%s"},
	"flash.reload.removed":     {"Removed: %s", "已移除：%s"},
	"flash.reload.restart":     {"Need a restart to take effect: %s", "需重启后生效：%s"},
	"flash.reload.refused":     {"The config has errors; it was not applied and the running config is kept:", "配置有错误，未被应用，保留当前运行的配置："},
	"flash.reload.unsupported": {"This agent cannot reload its config; restart the service instead.", "此代理无法重新加载配置，请改为重启服务。"},
	"flash.add.changed":        {"The config changed meanwhile; nothing was written. Look again.", "配置文件在此期间已被修改，未写入任何内容。请重新查看。"},
	"flash.add.badname":        {"Printer name %q: use 1–64 letters, digits, '.', '_' or '-'.", "打印机名称 %q：请使用 1–64 个字母、数字、“.”、“_”或“-”。"},
	"flash.add.refused":        {"Printer %s was not added:", "未添加打印机 %s："},
	"flash.add.done":           {"Printer %s was added to the config and is printing.", "打印机 %s 已添加到配置并开始打印。"},
	"flash.add.notloaded":      {"Printer %s was added to the config, but the reload was refused; the running config is kept:", "打印机 %s 已添加到配置，但重新加载被拒绝，保留当前运行的配置："},
	"flash.add.restart":        {"Printer %s was added to the config; restart the agent to use it.", "打印机 %s 已添加到配置；重启代理后即可使用。"},
	"printers.answers":         {"answers ESC/POS status", "响应 ESC/POS 状态查询"},

	// Pairing page.
	"pair.title":         {"Cloud pairing", "云端配对"},
	"pair.notconfigured": {"This agent has no cloud configured. To connect it, add a [cloud] table with url and auth_url to the agent's config and restart the service.", "此代理未配置云端。如需连接，请在代理配置中添加包含 url 和 auth_url 的 [cloud] 段并重启服务。"},
	"pair.scan":          {"Scan this code with a phone signed in to the cloud console, or open the address below and enter the code.", "请用已登录云端控制台的手机扫描此二维码，或打开下方地址并输入代码。"},
	"pair.code":          {"Code", "代码"},
	"pair.expires":       {"The code works until %s; this page refreshes by itself.", "代码有效期至 %s；本页面会自动刷新。"},
	"pair.waiting":       {"Waiting for a code from the cloud…", "正在等待云端发放代码…"},
	"pair.error":         {"No code: %s", "无法获取代码：%s"},
	"pair.paired":        {"Paired to store", "已配对门店"},
	"pair.unknownstore":  {"(store name not known yet)", "（门店名称暂未知）"},
	"pair.unpair":        {"Unpair", "取消配对"},
	"pair.unpair.intro":  {"Unpairing stops cloud orders from printing here until the agent is paired again. Enter the manager PIN to confirm.", "取消配对后，云端订单将不再在此打印，直到重新配对。请输入管理员 PIN 确认。"},
	"pair.alt":           {"QR code for pairing", "配对二维码"},

	// Logs page.
	"logs.title": {"Logs", "日志"},
	"logs.level": {"Level", "级别"},
	"logs.q":     {"Contains", "包含"},
	"logs.debug": {"Debug", "调试"},
	"logs.info":  {"Info", "信息"},
	"logs.warn":  {"Warnings", "警告"},
	"logs.error": {"Errors", "错误"},
	"logs.hint":  {"The latest lines, then new ones as they are logged. Secrets are removed.", "先显示最近的日志，然后实时显示新日志。敏感信息已移除。"},
	"logs.ended": {"The live tail ended; reload to follow again.", "实时日志已结束；刷新页面可继续查看。"},
}
