// The served views: the start page (what is served), a dataset at a glance, the gallery,
// and a file's inspect numbers and damage.
"use strict";
(function (RP) {
  const el = RP.el;
  const dsParams = (q) => ({ root: q.root, path: q.path });

  RP.homeView = async function (main) {
    const { roots } = await RP.api("roots");
    const rows = [];
    for (const r of roots) {
      const base = { root: r.root };
      let links;
      if (r.kind === "dataset") links = [el("a", { href: RP.href("/dataset", base) }, "dataset")];
      else if (r.kind === "directory") links = r.datasets.map((d) => el("a", { href: RP.href("/dataset", { root: r.root, path: d }) }, d + " "));
      else if (r.kind === "state") links = [el("a", { href: RP.href("/state", base) }, "saved state")];
      else links = [el("a", { href: RP.href("/file", base) }, "inspect")];
      rows.push([String(r.root), r.kind, el("code", {}, r.path), el("span", {}, links)]);
    }
    main.append(el("h2", {}, "Served paths"), RP.table(["#", "kind", "path", "open"], rows, { class: "roots" }));
  };

  function treeNode(node) {
    const label = [el("code", {}, node.name || "features"), " ", el("span", { class: "type" }, node.type + (node.detail ? " " + node.detail.replace(/^\w+/, "") : ""))];
    if (node.names && node.names.length) label.push(el("span", { class: "type" }, " [" + node.names.slice(0, 12).join(", ") + (node.names.length > 12 ? ", …" : "") + "]"));
    return el("li", {}, label, node.children ? el("ul", {}, node.children.map(treeNode)) : null);
  }

  // One example as a tile: its images with boxes drawn, class names, text, values.
  RP.tile = function (ex) {
    const pictures = ex.images.map((image) => {
      if (!image.src) return el("p", { class: "error" }, image.key + ": " + image.error);
      const svg = el("svg:svg", { viewBox: "0 0 1 1", preserveAspectRatio: "none" });
      for (const box of ex.boxes) {
        const [y0, x0, y1, x1] = box.relative ? box.yxyx : [box.yxyx[0] / image.height, box.yxyx[1] / image.width, box.yxyx[2] / image.height, box.yxyx[3] / image.width];
        svg.append(el("svg:rect", { x: x0, y: y0, width: Math.max(0, x1 - x0), height: Math.max(0, y1 - y0), "data-label": box.label || "" }, el("svg:title", {}, (box.label || box.key))));
      }
      return el("div", { class: "picture", title: image.key }, el("img", { src: image.src, alt: image.key, "data-key": image.key }), ex.boxes.length && image === ex.images[0] ? svg : null);
    });
    const facts = [];
    for (const f of ex.fields) {
      if (f.image !== undefined) continue;
      let text;
      if (f.names) text = f.values.map((v, i) => v + (f.names[i] ? " (" + f.names[i] + ")" : "")).join(", ");
      else if (f.text) text = f.text.map((t) => JSON.stringify(t)).join(", ");
      else text = (f.shape.length ? "[" + f.shape.join("×") + "] " : "") + (f.values || []).join(", ");
      facts.push(el("dt", {}, f.key), el("dd", {}, text));
    }
    return el("div", { class: "card tile", "data-position": ex.position, "data-tfds-id": ex.tfds_id }, el("b", {}, "#" + ex.position), " ", el("code", {}, ex.tfds_id), el("div", {}, pictures), el("dl", {}, facts));
  };
  RP.tiles = (examples) => el("div", { class: "cards gallery" }, examples.map(RP.tile));

  RP.datasetView = async function (main) {
    const q = RP.query();
    const d = await RP.api("dataset", dsParams(q));
    const title = d.name + " " + d.version + (d.config ? " (" + d.config + ")" : "");
    const splitRows = d.splits.map((s) => [
      el("a", { href: RP.href("/gallery", { ...dsParams(q), split: s.name }) }, s.name),
      el("span", { class: "examples", "data-split": s.name, "data-examples": s.examples }, RP.fmt(s.examples)),
      RP.fmt(s.shards),
      RP.fmt(s.bytes),
      el("span", {}, el("a", { href: RP.href("/order", { ...dsParams(q), split: s.name }) }, "read order"), " ",
        el("details", {}, el("summary", {}, "shards"), RP.table(["file", "examples", ""], s.files.map((f) => [el("code", {}, f.name), RP.fmt(f.examples), el("a", { href: RP.href("/file", { root: q.root, path: (q.path ? q.path + "/" : "") + f.name }) }, "inspect")])), s.files_left_out ? el("p", { class: "note" }, "and " + RP.fmt(s.files_left_out) + " more") : null)),
    ]);
    main.append(
      el("h2", { id: "title" }, title),
      el("p", { class: "note" }, d.data_dir + " · " + d.file_format),
      el("h3", {}, "Splits"),
      RP.table(["split", "examples", "shards", "bytes", ""], splitRows, { class: "splits" }),
      el("p", {}, el("a", { href: RP.href("/state", dsParams(q)) }, "open a saved state…")),
      el("h3", {}, "Features"),
      d.features ? el("div", { class: "tree" }, el("ul", {}, treeNode(d.features))) : el("p", {}, "no features.json"),
      el("h3", {}, "First examples of " + (d.first_split || "-")),
      RP.tiles(d.first),
    );
  };

  RP.galleryView = async function (main) {
    const q = RP.query();
    const start = Number(q.start || 0);
    const count = Number(q.count || 24);
    const d = await RP.api("examples", { ...dsParams(q), split: q.split, start: start, count: count, shard: q.shard, label: q.label });
    const form = el("form", { class: "controls", method: "get", action: "/gallery" });
    for (const k of ["root", "path"]) if (q[k] !== undefined) form.append(el("input", { type: "hidden", name: k, value: q[k] }));
    const labelSelect = el("select", { name: "label" }, el("option", { value: "" }, "any class"));
    for (const l of d.labels) l.names.forEach((n, i) => labelSelect.append(el("option", { value: l.key + ":" + i, selected: q.label === l.key + ":" + i }, l.key + " = " + n)));
    form.append(
      el("label", {}, "split", el("input", { name: "split", value: q.split || "", size: 16 })),
      el("label", {}, "shard", el("input", { name: "shard", value: q.shard || "", size: 4 })),
      el("label", {}, "class", labelSelect),
      el("label", {}, "from position", el("input", { name: "start", value: start, size: 6 })),
      el("label", {}, "count", el("input", { name: "count", value: count, size: 3 })),
      el("button", { type: "submit" }, "show"),
    );
    const page = (s) => RP.href("/gallery", { ...q, start: Math.max(0, s) });
    main.append(
      el("h2", {}, "Gallery: " + d.split),
      form,
      el("p", {}, el("span", { id: "count", "data-num-examples": d.num_examples }, d.examples.length + " examples from position " + d.start + " of " + RP.fmt(d.num_examples) + (q.label ? " (" + d.scanned + " scanned)" : "")), " ",
        el("a", { href: page(start - count) }, "« previous"), " ", el("a", { href: page(d.next), id: "next" }, "next »")),
      RP.tiles(d.examples),
    );
  };

  RP.fileView = async function (main) {
    const q = RP.query();
    const bar = RP.progressBar();
    const title = el("h2", {}, "File: " + (q.path || "root " + q.root));
    main.append(title, bar);
    const job = await RP.poll("inspect", { root: q.root, path: q.path }, bar);
    bar.remove();
    const s = job.summary;
    title.textContent = "File: " + s.path.split("/").pop();
    if (s.error) {
      main.append(RP.errorBox(s.error));
      return;
    }
    const sizes = s.record_bytes;
    const facts = [
      ["container", s.container || "tfrecord"],
      ["compression", s.compression || "none"],
      ["file size", RP.fmt(s.file_bytes) + " bytes"],
      ["records", el("b", { class: "records", "data-records": s.records }, RP.fmt(s.records))],
      ["record size", sizes ? "total " + RP.fmt(sizes.total) + " / min " + RP.fmt(sizes.min) + " / median " + RP.fmt(sizes.median) + " / max " + RP.fmt(sizes.max) + " bytes" : "-"],
    ];
    main.append(el("section", { class: "file" }, RP.table(["", ""], facts, { class: "facts" }), RP.damageTable(s.damage), RP.featureTable(s)));
    RP.summary = s;
    await recordsGallery(main, q);
  };

  // The file's records, decoded plainly, or through a schema naming the image, a flat box
  // list (YOLO or TFDS box formats) and labels.
  async function recordsGallery(main, q) {
    const start = Number(q.start || 0);
    const count = Number(q.count || 12);
    const d = await RP.api("records", { root: q.root, path: q.path, start: start, count: count, image: q.image, boxes: q.boxes, box_format: q.box_format, labels: q.labels });
    const form = el("form", { class: "controls", method: "get", action: "/file" });
    for (const k of ["root", "path"]) if (q[k] !== undefined) form.append(el("input", { type: "hidden", name: k, value: q[k] }));
    const formats = el("select", { name: "box_format" }, ["YOLO", "REL_YXYX", "REL_XYXY", "REL_XYWH"].map((f) => el("option", { value: f, selected: q.box_format === f }, f)));
    form.append(
      el("label", {}, "image feature", el("input", { name: "image", value: q.image || "", size: 14 })),
      el("label", {}, "boxes (n×4)", el("input", { name: "boxes", value: q.boxes || "", size: 12 })),
      el("label", {}, "box format", formats),
      el("label", {}, "labels", el("input", { name: "labels", value: q.labels || "", size: 10 })),
      el("label", {}, "from record", el("input", { name: "start", value: start, size: 6 })),
      el("label", {}, "count", el("input", { name: "count", value: count, size: 3 })),
      el("button", { type: "submit" }, "show"),
    );
    const page = (s) => RP.href("/file", { ...q, start: Math.max(0, s) });
    main.append(
      el("h3", {}, "Records"),
      form,
      el("p", {}, d.examples.length + " of " + (d.damaged ? "the undamaged" : RP.fmt(d.records)) + " records from " + d.start + " ", el("a", { href: page(start - count) }, "« previous"), " ", el("a", { href: page(start + count) }, "next »")),
      RP.tiles(d.examples),
    );
    RP.records = d;
  }
})((window.RP = window.RP || {}));
