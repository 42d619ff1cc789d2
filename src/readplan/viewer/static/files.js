// The files view: pick or drop TFRecord (none/GZIP/ZLIB) or TBL v2 files; each is walked
// here, in the browser, and summarised as `readplan inspect` summarises it. Nothing is sent
// anywhere (the static page's Content-Security-Policy forbids any connection).
"use strict";
(function (RP) {
  const el = RP.el;
  RP.results = {};

  function summary(result) {
    const out = {
      name: result.name,
      container: result.container,
      compression: result.compression,
      file_bytes: result.file_bytes,
      records: result.records,
      record_bytes: RP.stats(result.lengths.array()),
      damage: result.damage,
    };
    return Object.assign(out, RP.featureSummary(result.head));
  }

  function tblFacts(result) {
    if (result.container !== "tbl") return [];
    const formats = Object.entries(result.formats).map(([k, v]) => k + " " + v).join(", ");
    return [
      ["compressed samples", RP.fmt(result.compressed_samples)],
      ["samples with metadata", RP.fmt(result.samples_with_metadata)],
      ["stored bytes", RP.fmt(result.stored_bytes)],
      ["formats", formats || "-"],
    ];
  }

  function tblImages(result) {
    const pictures = [];
    result.tbl_entries.forEach((e, i) => {
      const data = result.head[i];
      const format = RP.TBL_FORMATS[e.format];
      if (format === "raw_u8" && e.width * e.height * 3 === data.length && e.width && e.height) {
        const canvas = el("canvas", { width: e.width, height: e.height, class: "thumb" });
        const pixels = new ImageData(e.width, e.height);
        for (let p = 0; p < e.width * e.height; p++) {
          pixels.data.set(data.subarray(3 * p, 3 * p + 3), 4 * p);
          pixels.data[4 * p + 3] = 255;
        }
        canvas.getContext("2d").putImageData(pixels, 0, 0);
        pictures.push(canvas);
      } else if (RP.imageType(data)) {
        const url = URL.createObjectURL(new Blob([data], { type: RP.imageType(data) }));
        pictures.push(el("img", { src: url, class: "thumb", alt: format }));
      }
    });
    return pictures.length ? el("div", { class: "cards" }, pictures) : null;
  }

  function card(result, seconds) {
    const s = summary(result);
    s.seconds = seconds;
    RP.results[result.name] = s;
    const sizes = s.record_bytes;
    const facts = [
      ["container", result.container],
      ["compression", s.compression || "none"],
      ["file size", RP.fmt(s.file_bytes) + " bytes"],
      ["records", el("b", { class: "records", "data-records": s.records }, RP.fmt(s.records))],
      ["record size", sizes ? "total " + RP.fmt(sizes.total) + " / min " + RP.fmt(sizes.min) + " / median " + RP.fmt(sizes.median) + " / max " + RP.fmt(sizes.max) + " bytes" : "-"],
      ...tblFacts(result),
      ["walked in", seconds.toFixed(2) + " s"],
    ];
    return el(
      "section",
      { class: "file", "data-name": result.name },
      el("h3", {}, result.name),
      RP.table(["", ""], facts, { class: "facts" }),
      RP.histogram(result.lengths.array()),
      RP.damageTable(s.damage),
      RP.featureTable(s),
      result.container === "tbl" ? tblImages(result) : null,
      RP.headExamples(result.head, 4),
    );
  }

  async function walkOne(file, list) {
    const progress = {};
    const bar = RP.progressBar();
    const holder = el("section", { class: "file pending" }, el("h3", {}, file.name), bar);
    list.append(holder);
    const timer = setInterval(() => (bar.value = (progress.compressed || progress.offset || 0) / (file.size || 1)), 100);
    const started = performance.now();
    try {
      const result = await RP.walk(file, { progress: progress });
      holder.replaceWith(card(result, (performance.now() - started) / 1000));
    } catch (err) {
      holder.append(RP.errorBox(file.name + ": " + err.message));
      RP.results[file.name] = { name: file.name, error: String(err.message) };
    } finally {
      clearInterval(timer);
    }
  }

  RP.walkFiles = async function (files, list) {
    RP.busy = (RP.busy || 0) + 1;
    try {
      for (const file of files) await walkOne(file, list);
    } finally {
      RP.busy -= 1;
    }
  };

  RP.filesView = function (main) {
    const list = el("div", { id: "results" });
    const input = el("input", { type: "file", multiple: true, id: "pick" });
    input.onchange = () => RP.walkFiles(Array.from(input.files), list);
    const zone = el(
      "div",
      { class: "drop", id: "drop" },
      el("p", {}, "Drop TFRecord (none, GZIP, ZLIB) or TBL v2 files here, or pick them: "),
      input,
      el("p", { class: "note" }, "Files are read here in slices and checked (both CRC32Cs); nothing leaves this machine."),
    );
    zone.addEventListener("dragover", (e) => {
      e.preventDefault();
      zone.classList.add("over");
    });
    zone.addEventListener("dragleave", () => zone.classList.remove("over"));
    zone.addEventListener("drop", (e) => {
      e.preventDefault();
      zone.classList.remove("over");
      RP.walkFiles(Array.from(e.dataTransfer.files), list);
    });
    main.append(el("h2", {}, "Files"), zone, list);
  };
})((window.RP = window.RP || {}));
