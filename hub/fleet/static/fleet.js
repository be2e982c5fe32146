// printgate-hub fleet page: times in the reader's own zone, and the
// stores' part of the fleet page fetched again every few seconds.
"use strict";
(function () {
  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (!isNaN(d)) t.textContent = d.toLocaleString(document.documentElement.lang);
    });
  }
  localTimes(document);
  var stores = document.getElementById("stores");
  if (!stores) return;
  var every = (parseInt(stores.dataset.refresh, 10) || 5) * 1000;
  var stale = document.getElementById("stale");
  function refresh() {
    fetch("/fleet/fragment", { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      if (r.status === 401) { location.href = "/fleet/login?next=/fleet/"; return null; }
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (html) {
      if (html === null) return;
      stores.innerHTML = html;
      localTimes(stores);
      stale.hidden = true;
    }).catch(function () { stale.hidden = false; })
      .finally(function () { setTimeout(refresh, every); });
  }
  setTimeout(refresh, every);
})();
// The log tail page: the agent's lines as the hub streams them, until the
// stream ends (agent offline, refused, time limit) or breaks. A broken
// stream is not opened again by itself: every open costs the agent a tail.
(function () {
  var list = document.getElementById("loglines");
  if (!list || !list.dataset.stream) return;
  var msgs = document.getElementById("logmsgs").dataset;
  var state = document.getElementById("logstate");
  var dropped = document.getElementById("dropped");
  var reopen = document.getElementById("reopen");
  var level = document.getElementById("level");
  var max = parseInt(list.dataset.max, 10) || 1000;
  var ended = false;
  if (level) level.addEventListener("change", function () { level.form.submit(); });
  function say(kind, text, bad) {
    state.dataset.state = kind;
    state.textContent = text;
    state.className = bad ? "notice" : "muted";
  }
  function showDropped(n) {
    if (!(n > 0)) return;
    dropped.textContent = msgs.dropped.replace("%d", n);
    dropped.hidden = false;
  }
  var es = new EventSource(list.dataset.stream);
  function stop(kind, text) {
    ended = true;
    es.close();
    say(kind, text, true);
    reopen.hidden = false;
  }
  es.addEventListener("open", function () { if (!ended) say("live", msgs.live, false); });
  es.addEventListener("line", function (e) {
    var li = document.createElement("li");
    li.textContent = e.data;
    var m = /\blevel=(\w+)|"level":\s*"(\w+)"/i.exec(e.data);
    if (m) li.className = "lvl-" + (m[1] || m[2]).toLowerCase();
    var atEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    list.appendChild(li);
    while (list.childElementCount > max) list.removeChild(list.firstChild);
    if (atEnd) li.scrollIntoView({ block: "end" });
  });
  es.addEventListener("dropped", function (e) {
    try { showDropped(JSON.parse(e.data).dropped); } catch (_) { /* a malformed count is not shown */ }
  });
  es.addEventListener("end", function (e) {
    var d = {};
    try { d = JSON.parse(e.data); } catch (_) { /* the reason stays unknown */ }
    showDropped(d.dropped);
    var text = {
      agent_offline: msgs.offline, time_limit: msgs.timelimit, too_many_tails: msgs.toomany,
      // The hub's message names the agent's code and words in brackets.
      agent_refused: msgs.refused.replace("%s", (/\((.*)\)$/.exec(d.message || "") || [, d.message || ""])[1])
    }[d.reason] || msgs.lost;
    stop(d.reason || "lost", text);
  });
  es.addEventListener("error", function () { if (!ended) stop("lost", msgs.lost); });
})();
