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
