// parl-monitor page script: keeps the figures live by polling, draws the load chart (SVG), tails actor logs.
// Hand-written, no dependencies, so the monitor works without internet access.
(function () {
  "use strict";
  var refreshMs = parseInt(document.body.getAttribute("data-refresh-ms"), 10) || 2000;
  var updated = document.getElementById("updated");
  var banner = document.getElementById("banner");

  function showBanner(text) {
    if (!banner) { return; }
    banner.textContent = text;
    banner.hidden = !text;
  }

  function stamp(ok) {
    if (!updated) { return; }
    updated.textContent = (ok ? "updated " : "stale since ") + new Date().toLocaleTimeString();
    updated.classList.toggle("stale", !ok);
  }

  // 1. The live part of the page: re-render it on the server and swap it in.
  var live = document.getElementById("live");
  function refreshLive() {
    var query = new URLSearchParams(window.location.search);  // keeps the pages of the lists shown
    query.set("fragment", "1");
    var url = window.location.pathname + "?" + query.toString();
    fetch(url, {credentials: "same-origin", cache: "no-store"}).then(function (resp) {
      if (resp.status === 404) {
        showBanner("This item is no longer listed by the cluster (it ended and was dropped from the status).");
        stamp(false);
        return null;
      }
      if (!resp.ok) {
        return resp.text().then(function () {
          showBanner("The cluster did not answer (HTTP " + resp.status + "); showing the last figures.");
          stamp(false);
          return null;
        });
      }
      return resp.text();
    }).then(function (html) {
      if (html === null || html === undefined) { return; }
      live.innerHTML = html;
      showBanner("");
      stamp(true);
    }).catch(function (err) {
      showBanner("The monitor is unreachable: " + err);
      stamp(false);
    });
  }
  if (live) {
    stamp(true);
    window.setInterval(refreshLive, refreshMs);
  }

  // 2. The worker chart: an SVG line chart of the sampled history.
  var chart = document.getElementById("chart");
  var SVGNS = "http://www.w3.org/2000/svg";
  function el(name, attrs, text) {
    var node = document.createElementNS(SVGNS, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) { node.textContent = text; }
    return node;
  }
  function drawChart(samples) {
    var w = chart.clientWidth || 800, h = chart.clientHeight || 260;
    var left = 44, right = 48, top = 12, bottom = 28;
    var svg = el("svg", {viewBox: "0 0 " + w + " " + h, "data-samples": String(samples.length)});
    var series = [
      samples.map(function (s) { return s.load_1m; }),
      samples.map(function (s) { return s.cpus_used; }),
      samples.map(function (s) {
        return s.memory_total_mb ? 100 * s.memory_used_mb / s.memory_total_mb : null;
      })
    ];
    var leftMax = 1;
    [series[0], series[1]].forEach(function (vals) {
      vals.forEach(function (v) { if (v !== null && v > leftMax) { leftMax = v; } });
    });
    if (samples.length && samples[samples.length - 1].cpus_total > leftMax) {
      leftMax = samples[samples.length - 1].cpus_total;
    }
    leftMax = Math.ceil(leftMax);
    var t0 = samples.length ? samples[0].time : 0, t1 = samples.length ? samples[samples.length - 1].time : 1;
    var span = t1 > t0 ? t1 - t0 : 1;
    function x(t) { return left + (w - left - right) * (t - t0) / span; }
    function y(v, max) { return top + (h - top - bottom) * (1 - v / max); }
    svg.appendChild(el("line", {x1: left, y1: top, x2: left, y2: h - bottom, "class": "axis"}));
    svg.appendChild(el("line", {x1: left, y1: h - bottom, x2: w - right, y2: h - bottom, "class": "axis"}));
    for (var i = 0; i <= 4; i++) {
      var v = leftMax * i / 4;
      svg.appendChild(el("text", {x: 4, y: y(v, leftMax) + 4}, v.toFixed(1)));
      svg.appendChild(el("text", {x: w - right + 6, y: y(v, leftMax) + 4}, (25 * i) + "%"));
    }
    if (samples.length) {
      svg.appendChild(el("text", {x: left, y: h - 8}, new Date(t0 * 1000).toLocaleTimeString()));
      svg.appendChild(el("text", {x: w - right - 60, y: h - 8}, new Date(t1 * 1000).toLocaleTimeString()));
    } else {
      svg.appendChild(el("text", {x: left + 10, y: h / 2}, "no samples yet"));
    }
    series.forEach(function (vals, k) {
      var max = k === 2 ? 100 : leftMax, pts = [];
      vals.forEach(function (v, j) {
        if (v !== null && v !== undefined) { pts.push(x(samples[j].time).toFixed(1) + "," + y(v, max).toFixed(1)); }
      });
      if (pts.length === 1) { pts.push((parseFloat(pts[0]) + 2).toFixed(1) + pts[0].slice(pts[0].indexOf(","))); }
      svg.appendChild(el("polyline", {points: pts.join(" "), fill: "none", "stroke-width": 2, "class": "s" + k}));
    });
    chart.innerHTML = "";
    chart.appendChild(svg);
  }
  function refreshChart() {
    fetch(chart.getAttribute("data-history-url"), {credentials: "same-origin", cache: "no-store"})
      .then(function (resp) { return resp.ok ? resp.json() : null; })
      .then(function (body) { if (body) { drawChart(body.samples); } })
      .catch(function () { /* the banner of the live part reports failures */ });
  }
  if (chart) {
    refreshChart();
    window.setInterval(refreshChart, refreshMs);
  }

  // 3. The actor log: read from an offset until caught up, then poll for more (live tail).
  var log = document.getElementById("log");
  var MAX_SHOWN = 1 << 20;  // keep the last 1 MiB of text in the page
  if (log) {
    var offset = -MAX_SHOWN, busy = false;  // start with the last 1 MiB of the log (tail), then follow it
    var follow = document.getElementById("follow");
    var size = document.getElementById("log-size");
    var readMore = function () {
      if (busy) { return; }
      busy = true;
      fetch(log.getAttribute("data-log-url") + "?offset=" + offset, {credentials: "same-origin", cache: "no-store"})
        .then(function (resp) { return resp.ok ? resp.json() : null; })
        .then(function (body) {
          busy = false;
          if (!body) { return; }
          if (body.data) {
            var text = log.textContent + body.data;
            if (text.length > MAX_SHOWN) { text = text.slice(text.length - MAX_SHOWN); }
            log.textContent = text;
            size.textContent = String(body.next_offset);
            if (follow.checked) { log.scrollTop = log.scrollHeight; }
          }
          offset = body.next_offset;
          if (!body.eof && body.data) { readMore(); }
        })
        .catch(function () { busy = false; });
    };
    readMore();
    window.setInterval(function () { if (follow.checked) { readMore(); } }, refreshMs);
  }
})();
