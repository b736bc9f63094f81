// Postline console: local times, stacked tables' labels, confirmations of
// destructive forms, copy buttons, and the log page's live tail. New entries arrive over
// Server-Sent Events from /domains/{name}/log/tail and are inserted as
// text (never HTML). Pausing keeps the connection and buffers what
// arrives; resuming shows the buffer, so nothing is lost.
(function () {
  "use strict";
  // Times are written in UTC; show them in the reader's own time zone.
  function local(el) {
    var d = new Date(el.getAttribute("datetime"));
    if (!isNaN(d)) { el.textContent = d.toLocaleString(); el.title = el.getAttribute("datetime"); }
  }
  Array.prototype.forEach.call(document.querySelectorAll("time[datetime]"), local);

  // On phones table rows stack into their cells (console.css): each cell
  // without its own data-label gets its column's heading, shown before it.
  function label(table) {
    var heads = table.tHead ? table.tHead.rows[0] : null;
    if (!heads) { return; }
    var names = [];
    Array.prototype.forEach.call(heads.cells, function (th) {
      for (var i = 0; i < (th.colSpan || 1); i++) { names.push(th.textContent.trim()); }
    });
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (tr) {
        var col = 0;
        Array.prototype.forEach.call(tr.cells, function (td) {
          if (td.tagName === "TD" && !td.hasAttribute("data-label") && names[col] && td.colSpan < names.length) {
            td.setAttribute("data-label", names[col]);
          }
          col += td.colSpan || 1;
        });
      });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table"), label);

  // Destructive forms (data-confirm) ask first; cancelled, nothing is sent.
  Array.prototype.forEach.call(document.querySelectorAll("form[data-confirm]"), function (f) {
    f.addEventListener("submit", function (ev) {
      if (!window.confirm(f.getAttribute("data-confirm"))) { ev.preventDefault(); }
    });
  });

  // Copy buttons: the DNS records, a new key or signing secret.
  Array.prototype.forEach.call(document.querySelectorAll("button.copy[data-copy]"), function (b) {
    b.addEventListener("click", function () {
      if (!navigator.clipboard) { return; }
      navigator.clipboard.writeText(b.getAttribute("data-copy")).then(function () {
        b.textContent = "Copied";
        setTimeout(function () { b.textContent = "Copy"; }, 1500);
      });
    });
  });

  var box = document.getElementById("tail");
  if (!box) { return; }
  var button = document.getElementById("tail-toggle");
  var status = document.getElementById("tail-status");
  var table = document.getElementById("tail-table");
  var rows = document.getElementById("tail-rows");
  var after = box.getAttribute("data-after") || "0";
  var domain = box.getAttribute("data-domain");
  var source = null, paused = false, buffer = [];

  function cell(tr, text) { var td = document.createElement("td"); td.textContent = text; tr.appendChild(td); return td; }
  function show(e) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-id", String(e.id));
    var t = document.createElement("time");
    t.setAttribute("datetime", e.created_at);
    t.textContent = e.created_at;
    local(t);
    cell(tr, "").appendChild(t);
    cell(tr, e.type); cell(tr, e.recipient); cell(tr, e.subject); cell(tr, e.reply || "").className = "reply";
    var a = document.createElement("a");
    a.href = "/domains/" + encodeURIComponent(domain) + "/messages/" + encodeURIComponent(e.message_id);
    a.textContent = "chain";
    cell(tr, "").appendChild(a);
    rows.insertBefore(tr, rows.firstChild);
    label(table);
    after = String(e.id);
  }
  function flush() { buffer.forEach(show); buffer = []; status.textContent = "live"; }

  button.addEventListener("click", function () {
    if (!source) {
      table.hidden = false;
      source = new EventSource(box.getAttribute("data-url") + "?after=" + encodeURIComponent(after));
      source.addEventListener("entries", function (ev) {
        var list = JSON.parse(ev.data);
        if (paused) {
          buffer = buffer.concat(list);
          status.textContent = "paused, " + buffer.length + " new";
        } else {
          list.forEach(show);
        }
      });
      source.onerror = function () { status.textContent = paused ? status.textContent : "reconnecting…"; };
      source.onopen = function () { if (!paused) { status.textContent = "live"; } };
      button.textContent = "Pause";
      button.setAttribute("aria-pressed", "true");
      return;
    }
    paused = !paused;
    button.textContent = paused ? "Resume" : "Pause";
    button.setAttribute("aria-pressed", String(!paused));
    if (paused) { status.textContent = "paused"; } else { flush(); }
  });
}());
