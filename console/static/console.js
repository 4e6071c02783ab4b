// The live view's updates: one EventSource per page, numbers and
// sparklines replaced in place. No innerHTML anywhere: paths and sites
// were written by strangers, and only ever become text.
"use strict";
(function () {
  var table = document.querySelector("[data-live-stream]");
  if (!table || !window.EventSource) {
    return;
  }
  var body = table.querySelector("tbody");
  var svgNS = "http://www.w3.org/2000/svg";
  var noKeys = table.dataset.noKeys || "";

  function rowsByPage() {
    var m = new Map();
    body.querySelectorAll("[data-testid=live-row]").forEach(function (tr) {
      m.set(tr.dataset.site + "\u0000" + tr.dataset.path, tr);
    });
    return m;
  }

  function cell(tr, testid, cls) {
    var td = document.createElement("td");
    td.dataset.testid = testid;
    if (cls) {
      td.className = cls;
    }
    tr.appendChild(td);
    return td;
  }

  function link(href, text) {
    var a = document.createElement("a");
    a.setAttribute("href", href);
    a.textContent = text;
    return a;
  }

  function newRow(p) {
    var tr = document.createElement("tr");
    tr.dataset.testid = "live-row";
    tr.dataset.site = p.site;
    tr.dataset.path = p.path;
    // As the server renders a row: the site links to its live view, the
    // path to its page view.
    cell(tr, "site").appendChild(link("/live?site=" + encodeURIComponent(p.site), p.site));
    var pathCell = cell(tr, "path", "path");
    pathCell.appendChild(link("/page?site=" + encodeURIComponent(p.site) + "&path=" + encodeURIComponent(p.path), p.path));
    var held = document.createElement("span");
    held.className = "held";
    held.dataset.testid = "held";
    held.hidden = true;
    pathCell.appendChild(held);
    cell(tr, "views-5m", "num");
    cell(tr, "visitors-5m", "num visitors");
    cell(tr, "views-1h", "num");
    cell(tr, "visitors-1h", "num visitors");
    cell(tr, "baseline", "num");
    cell(tr, "ratio", "num");
    var svg = document.createElementNS(svgNS, "svg");
    svg.setAttribute("class", "spark");
    svg.setAttribute("viewBox", "0 0 120 24");
    svg.setAttribute("width", "120");
    svg.setAttribute("height", "24");
    svg.setAttribute("data-testid", "sparkline");
    var pl = document.createElementNS(svgNS, "polyline");
    pl.setAttribute("class", "series");
    svg.appendChild(pl);
    cell(tr, "spark").appendChild(svg);
    return tr;
  }

  // count writes a number as the server does: "32,260".
  function count(n) {
    return String(n).replace(/\B(?=(\d{3})+$)/g, ",");
  }

  // As the server shows visitors (visitorsShown): "—" when there were
  // views but none with a client key.
  function visitors(td, v, views) {
    if (v === 0 && views > 0) {
      td.textContent = "\u2014";
      td.setAttribute("title", noKeys);
    } else {
      td.textContent = count(v);
      td.removeAttribute("title");
    }
  }

  // As the server shows a held surge (heldShort): its kind as a badge,
  // the whole reason as its tooltip.
  function heldShort(reason) {
    var kinds = ["mostly one client", "mostly unidentified clients"];
    for (var i = 0; i < kinds.length; i++) {
      if (reason.indexOf(kinds[i]) >= 0) {
        return kinds[i];
      }
    }
    return "client guard";
  }

  function update(tr, p) {
    var held = tr.querySelector("[data-testid=held]");
    if (held) {
      held.hidden = !p.held;
      held.textContent = p.held ? "held: " + heldShort(p.held) : "";
      held.setAttribute("title", p.held || "");
    }
    tr.querySelector("[data-testid=views-5m]").textContent = count(p.views_5m);
    tr.querySelector("[data-testid=views-1h]").textContent = count(p.views_1h);
    visitors(tr.querySelector("[data-testid=visitors-5m]"), p.visitors_5m || 0, p.views_5m);
    visitors(tr.querySelector("[data-testid=visitors-1h]"), p.visitors_1h || 0, p.views_1h);
    tr.querySelector("[data-testid=baseline]").textContent = p.baseline_shown;
    tr.querySelector("[data-testid=baseline]").title = p.normal_from || "";
    tr.querySelector("[data-testid=ratio]").textContent = p.ratio_shown;
    var pl = tr.querySelector("polyline.series");
    if (pl) {
      pl.setAttribute("points", p.spark);
    }
  }

  var es = new EventSource(table.dataset.liveStream);
  es.addEventListener("live", function (ev) {
    var snap = JSON.parse(ev.data);
    var have = rowsByPage();
    var order = [];
    snap.pages.forEach(function (p) {
      var k = p.site + "\u0000" + p.path;
      var tr = have.get(k) || newRow(p);
      have.delete(k);
      update(tr, p);
      order.push(tr);
    });
    have.forEach(function (tr) { tr.remove(); });
    order.forEach(function (tr) { body.appendChild(tr); });
    var at = document.querySelector("[data-testid=live-updated]");
    if (at) {
      at.textContent = snap.at_shown;
    }
    var empty = document.querySelector("[data-testid=live-empty]");
    if (empty) {
      empty.hidden = snap.pages.length > 0;
    }
  });
  // The session was logged out or expired: stop, and say so where the
  // update time was, rather than reconnect to be refused.
  es.addEventListener("ended", function () {
    es.close();
    var at = document.querySelector("[data-testid=live-updated]");
    if (at) {
      at.textContent = at.textContent + " (stopped: the session ended; log in again to go on)";
    }
  });
})();
