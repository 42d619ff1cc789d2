// DOM helpers and the pieces every view draws: tables, histograms, damage lists, example
// cards. No framework: elements are built with RP.el.
"use strict";
(function (RP) {
  const SVG = "http://www.w3.org/2000/svg";

  RP.el = function (tag, attrs, ...children) {
    const node = tag.startsWith("svg:")
      ? document.createElementNS(SVG, tag.slice(4))
      : document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "onclick" || key === "onchange" || key === "onsubmit") node[key] = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  };
  const el = RP.el;

  RP.fmt = (n) => (n === null || n === undefined ? "-" : Number(n).toLocaleString("en-US"));

  // Categorical colours (Tableau 10), one per shard, cycling.
  const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
  RP.colour = (k) => PALETTE[((k % PALETTE.length) + PALETTE.length) % PALETTE.length];

  RP.table = function (head, rows, attrs) {
    return el(
      "table",
      attrs || {},
      el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
      el("tbody", {}, rows.map((row) => el("tr", {}, row.map((cell) => el("td", {}, cell))))),
    );
  };

  RP.stats = function (lengths) {
    if (!lengths.length) return null;
    const sorted = Float64Array.from(lengths).sort();
    const n = sorted.length;
    const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    let total = 0;
    for (const v of sorted) total += v;
    return { total: total, min: sorted[0], median: median, max: sorted[n - 1] };
  };

  // A histogram of record sizes: 24 equal bins between min and max, as an SVG.
  RP.histogram = function (lengths) {
    const stats = RP.stats(lengths);
    const svg = el("svg:svg", { class: "histogram", viewBox: "0 0 480 120", role: "img" });
    if (!stats) return svg;
    const bins = new Array(24).fill(0);
    const span = stats.max - stats.min || 1;
    for (const v of lengths) bins[Math.min(23, Math.floor(((v - stats.min) / span) * 24))] += 1;
    const top = Math.max(...bins);
    bins.forEach((count, k) => {
      const h = (count / top) * 100;
      const bar = el("svg:rect", { x: k * 20 + 1, y: 104 - h, width: 18, height: h, class: "bar" });
      const lo = Math.round(stats.min + (span * k) / 24);
      bar.append(el("svg:title", {}, count + " records of " + lo + "+ bytes"));
      svg.append(bar);
    });
    svg.append(el("svg:text", { x: 0, y: 118, class: "axis" }, RP.fmt(stats.min) + " B"));
    svg.append(el("svg:text", { x: 480, y: 118, class: "axis", "text-anchor": "end" }, RP.fmt(stats.max) + " B"));
    return svg;
  };

  RP.damageTable = function (damage) {
    if (!damage.length) return el("p", { class: "sound", "data-damage": 0 }, "damage: none");
    return el(
      "div",
      { "data-damage": damage.length },
      el("p", { class: "damaged" }, "damage: " + damage.length + " region(s)"),
      RP.table(
        ["kind", "offset", "record", "resumes at", "bytes skipped"],
        damage.map((e) => [
          el("code", { class: "kind" }, e.kind),
          RP.fmt(e.offset),
          RP.fmt(e.record_index),
          RP.fmt(e.resume_offset),
          RP.fmt(e.bytes_skipped),
        ]),
        { class: "damage" },
      ),
    );
  };

  RP.featureTable = function (summary) {
    if (!summary.features) return el("p", {}, "features: none (" + summary.features_note + ")");
    const values = (e) =>
      e.min_values === e.max_values ? String(e.min_values) : e.min_values + "-" + e.max_values;
    return el(
      "div",
      {},
      el("h4", {}, "features (" + summary.features_note + ")"),
      RP.table(
        ["feature", "kind", "in examples", "values"],
        Object.entries(summary.features).map(([k, e]) => [el("code", {}, k), e.kind, e.examples, values(e)]),
        { class: "features" },
      ),
    );
  };

  function preview(value) {
    if (value.kind === "bytes") {
      return value.values.slice(0, 3).map((v) => {
        const type = RP.imageType(v);
        if (type) {
          const url = URL.createObjectURL(new Blob([v], { type: type }));
          return el("img", { src: url, class: "thumb", alt: type });
        }
        const text = RP.text(v);
        return el("code", {}, text !== null ? JSON.stringify(text.slice(0, 80)) : v.length + " bytes");
      });
    }
    const shown = value.values.slice(0, 8).map((v) => (typeof v === "bigint" ? v.toString() : +v.toPrecision(6)));
    return el("code", {}, "[" + shown.join(", ") + (value.values.length > 8 ? ", …" : "") + "]");
  }

  // The first records as parsed Examples: key, kind, length, and a preview of the values.
  RP.headExamples = function (head, count) {
    const cards = [];
    for (let i = 0; i < Math.min(count, head.length); i++) {
      let parsed;
      try {
        parsed = RP.parseExample(head[i]);
      } catch (err) {
        cards.push(el("div", { class: "card" }, "record " + i + ": not a tf.train.Example"));
        continue;
      }
      const rows = Object.entries(parsed).map(([k, v]) => [el("code", {}, k), v.kind || "-", v.values.length, el("span", {}, preview(v))]);
      cards.push(el("div", { class: "card example", "data-record": i }, el("h4", {}, "record " + i), RP.table(["key", "kind", "length", "values"], rows)));
    }
    return el("div", { class: "cards" }, cards);
  };

  RP.progressBar = function () {
    const bar = el("progress", { max: 1, value: 0 });
    return bar;
  };

  RP.errorBox = (message) => el("p", { class: "error", role: "alert" }, message);
})((window.RP = window.RP || {}));
