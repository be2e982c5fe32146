// printgate manager page: live updates over server-sent events. No
// framework, no build step; every text from the server is set with
// textContent, never parsed as markup, except the dashboard fragment the
// server rendered with html/template.
(function () {
  'use strict';

  function debounce(fn, ms) {
    var t = null;
    return function () {
      clearTimeout(t);
      t = setTimeout(fn, ms);
    };
  }

  // Dashboard: re-fetch the live fragment on each change.
  var live = document.getElementById('live');
  if (live) {
    var status = document.getElementById('live-status');
    var refresh = debounce(function () {
      fetch(live.getAttribute('data-live'), { credentials: 'same-origin', cache: 'no-store' })
        .then(function (res) {
          if (res.status === 401) { location.reload(); return null; }
          return res.ok ? res.text() : null;
        })
        .then(function (html) { if (typeof html === 'string') { live.innerHTML = html; } })
        .catch(function () {});
    }, 200);
    var es = new EventSource('/events');
    es.addEventListener('change', refresh);
    es.addEventListener('open', function () {
      if (status) { status.classList.add('on'); }
      refresh(); // catch up on anything missed while disconnected
    });
    es.addEventListener('error', function () {
      if (status) { status.classList.remove('on'); }
    });
  }

  // Pairing: reload when the link changes, and now and then for a new code.
  var pairing = document.getElementById('pairing');
  if (pairing && pairing.getAttribute('data-refresh')) {
    var pes = new EventSource('/events');
    pes.addEventListener('change', function (e) {
      try {
        if (JSON.parse(e.data).kind === 'link') { location.reload(); }
      } catch (err) { /* ignore a malformed event */ }
    });
    setTimeout(function () { location.reload(); }, 30000);
  }

  // Printers: follow a running LAN scan.
  var prog = document.getElementById('scan-progress');
  if (prog && prog.getAttribute('data-running')) {
    var bar = prog.querySelector('progress');
    var count = prog.querySelector('.scan-count');
    var text = prog.querySelector('.scan-text');
    var results = document.getElementById('scan-results');
    var ses = new EventSource('/printers/scan');
    ses.addEventListener('progress', function (e) {
      var d = JSON.parse(e.data);
      bar.max = Math.max(d.total, 1);
      bar.value = d.done;
      count.textContent = d.done + '/' + d.total;
    });
    ses.addEventListener('result', function (e) {
      ses.close();
      var d = JSON.parse(e.data);
      text.textContent = d.text;
      bar.value = bar.max;
      results.textContent = '';
      d.found.forEach(function (f) {
        var box = document.createElement('div');
        box.className = 'found';
        var p = document.createElement('p');
        var name = document.createElement('strong');
        name.className = 'break';
        name.textContent = f.name;
        p.appendChild(name);
        if (f.model) { p.appendChild(document.createTextNode(' ' + f.model)); }
        box.appendChild(p);
        var hint = document.createElement('p');
        hint.className = 'muted';
        hint.textContent = results.getAttribute('data-hint');
        box.appendChild(hint);
        var pre = document.createElement('pre');
        pre.textContent = f.config;
        box.appendChild(pre);
        var addP = document.createElement('p');
        var add = document.createElement('a');
        add.className = 'add-printer button';
        add.href = '/printers/add?url=' + encodeURIComponent(f.url) +
          '&name=' + encodeURIComponent(f.suggested || '');
        add.textContent = results.getAttribute('data-add');
        addP.appendChild(add);
        box.appendChild(addP);
        results.appendChild(box);
      });
      var btn = document.querySelector('#scan button');
      if (btn) { btn.disabled = false; }
    });
    ses.addEventListener('error', function () { ses.close(); });
  }

  // Ticket preview: zoom the paper sheet down to the width there is, so a
  // phone shows the whole ticket (right-aligned quantities, banners)
  // instead of clipping it. zoom, unlike a transform, shrinks the layout
  // box too.
  var preview = document.getElementById('preview');
  if (preview) {
    var fit = function () {
      preview.querySelectorAll('.paper').forEach(function (sheet) {
        sheet.style.zoom = '';
        var room = preview.clientWidth - 8;
        var need = sheet.offsetWidth;
        if (need > room && room > 0) {
          sheet.style.zoom = String(Math.floor(room / need * 1000) / 1000);
          sheet.classList.add('fitted');
        }
      });
      preview.setAttribute('data-fitted', '1');
    };
    fit();
    window.addEventListener('resize', debounce(fit, 100));
  }

  // Logs: a live tail; changing a filter reconnects.
  var logBox = document.getElementById('log-lines');
  if (logBox) {
    var form = document.getElementById('log-filter');
    var ended = document.getElementById('log-ended');
    var les = null;
    var connect = function () {
      if (les) { les.close(); }
      logBox.textContent = '';
      if (ended) { ended.hidden = true; }
      var params = new URLSearchParams();
      params.set('level', form.elements.level.value);
      params.set('q', form.elements.q.value);
      history.replaceState(null, '', '/logs?' + params.toString());
      les = new EventSource(logBox.getAttribute('data-stream') + '?' + params.toString());
      les.addEventListener('line', function (e) {
        var atEnd = logBox.scrollTop + logBox.clientHeight >= logBox.scrollHeight - 4;
        var div = document.createElement('div');
        div.className = 'line';
        div.textContent = e.data;
        logBox.appendChild(div);
        while (logBox.childElementCount > 2000) { logBox.removeChild(logBox.firstElementChild); }
        if (atEnd) { logBox.scrollTop = logBox.scrollHeight; }
      });
      les.addEventListener('end', function () {
        les.close();
        if (ended) { ended.hidden = false; }
      });
    };
    form.elements.level.addEventListener('change', connect);
    form.elements.q.addEventListener('input', debounce(connect, 400));
    form.addEventListener('submit', function (e) { e.preventDefault(); connect(); });
    connect();
  }
}());
