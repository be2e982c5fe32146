package fleet

import (
	"fmt"
	"net/http"
	"strings"
)

// Languages the page speaks (BCP 47 tags, for <html lang> and /lang?to=).
const (
	langEN = "en"
	langZH = "zh-CN"
)

// langCookie remembers the language a person picked with the switch.
const langCookie = "printgate_lang"

// msg is one catalog entry in every language the page speaks.
type msg struct{ en, zh string }

// lang is the language a response is rendered in; templates call its
// methods ({{$.L.T "fleet.title"}}), so every string goes through catalog.
type lang string

// T returns message id in l, formatted with args when there are any. A
// missing id comes back as itself (a test keeps the catalog complete).
func (l lang) T(id string, args ...any) string {
	m, ok := catalog[id]
	if !ok {
		return id
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

// State translates a job or printer state code; unknown codes are shown
// as they are.
func (l lang) State(code any) string {
	s := fmt.Sprint(code)
	if _, ok := catalog["state."+s]; ok && s != "" {
		return l.T("state." + s)
	}
	return s
}

// Printer translates a printer state code (wire.PrinterStates).
func (l lang) Printer(code string) string {
	if _, ok := catalog["printer."+code]; ok {
		return l.T("printer." + code)
	}
	return code
}

// Level translates a log level (wire.LogLevels) as the least severe
// shown.
func (l lang) Level(code string) string {
	if _, ok := catalog["level."+code]; ok {
		return l.T("level." + code)
	}
	return code
}

// Code is the BCP 47 tag.
func (l lang) Code() string { return string(l) }

// pickLang chooses the language: the switch's cookie, else the browser's
// Accept-Language (a zh before any en → Chinese), else English.
func pickLang(r *http.Request) lang {
	if c, err := r.Cookie(langCookie); err == nil && (c.Value == langEN || c.Value == langZH) {
		return lang(c.Value)
	}
	for part := range strings.SplitSeq(r.Header.Get("Accept-Language"), ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		tag = strings.ToLower(strings.TrimSpace(tag))
		if strings.Contains(strings.ReplaceAll(params, " ", ""), "q=0") && !strings.Contains(params, "q=0.") {
			continue
		}
		switch {
		case tag == "zh" || strings.HasPrefix(tag, "zh-"):
			return langZH
		case tag == "en" || strings.HasPrefix(tag, "en-"):
			return langEN
		}
	}
	return langEN
}

// setLang remembers the chosen language and goes back to the page.
func (p *Page) setLang(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("to")
	if to == langEN || to == langZH {
		http.SetCookie(w, &http.Cookie{Name: langCookie, Value: to, Path: Prefix + "/", MaxAge: 365 * 24 * 3600,
			HttpOnly: true, Secure: p.opts.TLS, SameSite: http.SameSiteLaxMode})
	}
	http.Redirect(w, r, localPath(r.URL.Query().Get("back")), http.StatusSeeOther)
}

// catalog holds every string the page shows, in English and Chinese.
var catalog = map[string]msg{
	"nav.fleet":      {"Fleet", "门店总览"},
	"nav.pair":       {"Pair an agent", "配对门店电脑"},
	"nav.logout":     {"Sign out", "退出"},
	"nav.language":   {"Language", "语言"},
	"footer":         {"printgate-hub · signed in as %s of %s", "printgate-hub · 已登录：%s（%s）"},
	"login.title":    {"Sign in", "登录"},
	"login.tenant":   {"Company (tenant id)", "公司（租户 ID）"},
	"login.name":     {"User name", "用户名"},
	"login.password": {"Password", "密码"},
	"login.submit":   {"Sign in", "登录"},
	"login.wrong":    {"Wrong company, user name or password. Check them and try again; your administrator can set a new password with printgate-hub user add.", "公司、用户名或密码错误。请检查后重试；管理员可以用 printgate-hub user add 重新设置密码。"},
	"login.locked":   {"Too many wrong passwords. Wait %d seconds, then try again.", "密码错误次数过多。请等待 %d 秒后再试。"},
	"csrf.refused":   {"This form was too old or came from another page, so nothing was done. Open the page again and repeat what you did.", "表单已过期或来自其他页面，未执行任何操作。请重新打开页面再操作一次。"},
	"notfound.title": {"Not found", "未找到"},
	"notfound.body":  {"There is no such page, store or job here. It may belong to another company, or the job is older than the hub keeps.", "这里没有这个页面、门店或任务。它可能属于其他公司，或任务已超过保留期限。"},
	"error.title":    {"Something went wrong", "出错了"},
	"error.body":     {"The hub failed to %s. Try again in a minute; if it keeps failing, the hub's log says why.", "系统未能%s。请一分钟后再试；如果仍然失败，请查看 hub 的日志。"},
	"what.signin":    {"check the password", "核对密码"},
	"what.fleet":     {"read the stores", "读取门店"},
	"what.job":       {"read the job", "读取任务"},
	"what.command":   {"send the command", "发送指令"},
	"what.pair":      {"decide the pairing", "处理配对"},

	"fleet.title":       {"Fleet", "门店总览"},
	"fleet.summary":     {"%d of %d stores online", "%d / %d 家门店在线"},
	"fleet.none":        {"Your company has no stores yet. An administrator adds them with printgate-hub store add.", "您的公司还没有门店。管理员可以用 printgate-hub store add 添加。"},
	"fleet.refresh":     {"Updates every %d seconds.", "每 %d 秒自动刷新。"},
	"fleet.stale":       {"The page could not reach the hub; it shows what it knew before and keeps trying.", "页面暂时连不上 hub，显示的是之前的数据，正在重试。"},
	"store.online":      {"Online", "在线"},
	"store.offline":     {"Offline", "离线"},
	"store.never":       {"Never connected since the hub started", "hub 启动后尚未连接"},
	"store.since":       {"Online since", "在线开始于"},
	"store.lastseen":    {"Last seen", "最后在线"},
	"store.version":     {"Agent", "门店程序版本"},
	"store.backlog":     {"Waiting for the agent", "等待门店接收"},
	"store.printers":    {"Printers", "打印机"},
	"store.noprinters":  {"The agent reported no printers.", "门店程序未报告打印机。"},
	"store.attention":   {"Jobs that need someone", "需要处理的任务"},
	"store.allgood":     {"No job needs anyone.", "没有需要处理的任务。"},
	"store.offline.fix": {"The store's agent is not connected: check that the store PC is on and has internet. Jobs wait in the hub and print when it returns.", "门店程序未连接：请检查门店电脑是否开机、能否上网。任务会在 hub 中等待，恢复连接后自动打印。"},

	"job.state":        {"State", "状态"},
	"job.reason":       {"Reason", "原因"},
	"job.printer":      {"Printer", "打印机"},
	"job.target":       {"Printed on", "实际打印机"},
	"job.attempts":     {"Attempts", "尝试次数"},
	"job.dup":          {"May have printed twice: check the paper", "可能重复打印：请核对纸质小票"},
	"job.error":        {"Error", "错误"},
	"job.updated":      {"Updated", "更新时间"},
	"job.timeline":     {"Timeline", "时间线"},
	"job.at":           {"Time", "时间"},
	"job.store":        {"Store", "门店"},
	"job.open":         {"Open", "查看"},
	"job.actions":      {"Actions", "操作"},
	"job.offline":      {"The store's agent is offline: reprint and cancel reach it only while it is online.", "门店程序离线：补打和取消只能在在线时送达。"},
	"job.failedover":   {"failed over", "已转到备用打印机"},
	"action.reprint":   {"Reprint", "补打"},
	"action.cancel":    {"Cancel", "取消"},
	"command.sent":     {"%s sent to the store's agent. Its result shows in the timeline.", "%s指令已发送到门店程序，结果会显示在时间线中。"},
	"command.answered": {"%s was already done: the agent answered it before.", "%s已执行过：门店程序之前已经回复。"},
	"command.failed":   {"%s was refused by the agent: %s", "门店程序拒绝了%s：%s"},
	"command.offline":  {"%s was not sent: the store's agent is offline. Press it again when the store is online.", "%s未发送：门店程序离线。门店恢复在线后请再按一次。"},
	"command.conflict": {"That button was already used for another command. Open the job again and retry.", "该按钮已用于其他指令。请重新打开任务后再试。"},

	"logs.open":       {"Log", "运行日志"},
	"logs.title":      {"Log of %s", "%s 的运行日志"},
	"logs.back":       {"Back to the fleet", "返回门店总览"},
	"logs.level":      {"Show", "显示"},
	"logs.level.all":  {"Every line the agent keeps", "门店程序保留的全部日志"},
	"logs.apply":      {"Apply", "应用"},
	"logs.connecting": {"Opening the agent's log…", "正在打开门店程序的日志…"},
	"logs.live":       {"Live: new lines appear as the agent writes them.", "实时：门店程序写入的新日志会自动出现。"},
	"logs.offline":    {"The store's agent is offline, so its log cannot be shown. Check that the store PC is on and has internet, then open the log again.", "门店程序离线，无法显示日志。请检查门店电脑是否开机、能否上网，然后重新打开日志。"},
	"logs.refused":    {"The store's agent refused to send its log (%s). Update printgate on the store PC if it is old.", "门店程序拒绝发送日志（%s）。如果门店电脑上的 printgate 版本较旧，请更新。"},
	"logs.timelimit":  {"The log stopped: one view streams for at most %d minutes. Open it again to go on.", "日志已停止：每次查看最多持续 %d 分钟。请重新打开继续查看。"},
	"logs.toomany":    {"Too many people are reading this store's log, or your company's logs, right now. Close another log view, wait a moment and open this one again.", "当前查看该门店或贵公司日志的人数过多。请关闭其他日志页面，稍等片刻后重新打开。"},
	"logs.lost":       {"The connection to the hub was lost, or your sign-in ended. Open the log again.", "与 hub 的连接已断开，或登录已失效。请重新打开日志。"},
	"logs.dropped":    {"%d lines were left out: the agent wrote more than the hub passes on (50 lines a second).", "有 %d 行未显示：门店程序写日志的速度超过 hub 的转发上限（每秒 50 行）。"},
	"logs.empty":      {"No lines yet: the agent has written nothing at this level.", "暂无日志：门店程序在此级别下还没有写入内容。"},
	"logs.reopen":     {"Open the log again", "重新打开日志"},
	"logs.nojs":       {"The live log needs JavaScript; turn it on for this page.", "实时日志需要 JavaScript，请为此页面启用。"},
	"level.debug":     {"Debug and above", "调试及以上"},
	"level.info":      {"Info and above", "信息及以上"},
	"level.warn":      {"Warnings and errors", "警告和错误"},
	"level.error":     {"Errors only", "仅错误"},

	"pair.title":    {"Pair a store's agent", "配对门店电脑"},
	"pair.lead":     {"The store PC shows this code. Check that it is the same, choose the store it is in, and approve.", "门店电脑上显示了这个配对码。请核对一致，选择它所在的门店，然后批准。"},
	"pair.code":     {"Code", "配对码"},
	"pair.store":    {"Store", "门店"},
	"pair.approve":  {"Approve", "批准"},
	"pair.deny":     {"Refuse", "拒绝"},
	"pair.nostores": {"Your company has no stores to pair with. An administrator adds one with printgate-hub store add.", "您的公司还没有可配对的门店。管理员可以用 printgate-hub store add 添加。"},
	"pair.badcode":  {"Type the 8 letters the store PC shows (like BCDF-GHJK), or scan its QR code again.", "请输入门店电脑上显示的 8 位配对码（例如 BCDF-GHJK），或重新扫描二维码。"},
	"pair.nostore":  {"Choose one of your company's stores.", "请选择您公司的一家门店。"},
	"pair.approved": {"Code %s approved for %s: the store PC finishes pairing within a few seconds.", "配对码 %s 已批准给 %s：门店电脑几秒内完成配对。"},
	"pair.denied":   {"Code %s refused: that PC is not paired.", "配对码 %s 已拒绝：该电脑不会被配对。"},
	"pair.unknown":  {"There is no code %s. Check the code on the store PC, or run printgate pair there again.", "没有配对码 %s。请核对门店电脑上的配对码，或在门店电脑上重新运行 printgate pair。"},
	"pair.decided":  {"Code %s was already approved, refused or used. Run printgate pair on the store PC for a new code.", "配对码 %s 已被批准、拒绝或使用。请在门店电脑上重新运行 printgate pair 获取新码。"},
	"pair.expired":  {"Code %s expired. Run printgate pair on the store PC for a new code.", "配对码 %s 已过期。请在门店电脑上重新运行 printgate pair 获取新码。"},
	"pair.toomany":  {"Too many wrong codes from your company. Wait a minute, check the code on the store PC, and try again.", "您公司输入错误配对码的次数过多。请等待一分钟，核对门店电脑上的配对码后再试。"},

	"state.STORED":       {"Stored, waiting for the agent", "已保存，等待门店接收"},
	"state.REJECTED":     {"Rejected by the agent", "门店程序拒收"},
	"state.EXPIRED":      {"Expired before the agent took it", "门店未接收，已过期"},
	"state.ACCEPTED":     {"Accepted", "已接收"},
	"state.QUEUED":       {"Queued", "排队中"},
	"state.SENDING":      {"Printing", "打印中"},
	"state.PRINTED":      {"Printed", "已打印"},
	"state.RETRY_WAIT":   {"Will retry", "等待重试"},
	"state.UNKNOWN":      {"Unknown whether it printed", "不确定是否已打印"},
	"state.HELD":         {"Held: check the paper", "已暂停：请核对纸质小票"},
	"state.PARKED":       {"Waiting for the printer", "等待打印机"},
	"state.TIMED_OUT":    {"Timed out: not printed", "已超时：未打印"},
	"state.FAILED":       {"Failed", "失败"},
	"state.CANCELED":     {"Canceled", "已取消"},
	"printer.READY":      {"Ready", "就绪"},
	"printer.OFFLINE":    {"Offline", "离线"},
	"printer.PAPER_OUT":  {"Out of paper", "缺纸"},
	"printer.COVER_OPEN": {"Cover open", "上盖打开"},
	"printer.BUSY":       {"Busy", "忙碌"},
	"printer.UNKNOWN":    {"State unknown", "状态未知"},
	"printer.ERROR":      {"Error", "故障"},
}
