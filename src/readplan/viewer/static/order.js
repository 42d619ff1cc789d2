// The read order: for a split and a read configuration (TFDS's names), the shard each
// position of an epoch reads, and the examples of step S at batch size B.
"use strict";
(function (RP) {
  const el = RP.el;
  const FIELDS = [
    ["split", "split", 14],
    ["epoch", "epoch", 4],
    ["shuffle_seed", "shuffle_seed", 6],
    ["interleave_cycle_length", "cycle_length", 4],
    ["interleave_block_length", "block_length", 4],
    ["input_context", "input_context ID/N", 5],
    ["global_seed", "global_seed", 6],
    ["example_shuffle_buffer", "example shuffle buffer", 6],
    ["example_shuffle_seed", "example shuffle seed", 6],
    ["batch_size", "batch size B", 4],
    ["step", "step S", 4],
  ];

  function picture(d) {
    const w = 900;
    const h = 260;
    const canvas = el("canvas", { width: w, height: h, class: "order-picture", id: "order-picture" });
    const ctx = canvas.getContext("2d");
    ctx.font = "10px sans-serif";
    const n = Math.max(1, d.num_examples);
    const files = Math.max(1, d.num_files);
    const y = (f) => h - 12 - ((h - 24) * (f + 0.5)) / files;
    ctx.fillStyle = "rgba(47,109,181,0.12)";
    const [s0, s1] = d.step_positions;
    ctx.fillRect((s0 / n) * w, 0, Math.max(2, ((s1 - s0) / n) * w), h);
    // Dots grow for small epochs (up to 8 px) so that a few dozen positions stay visible.
    const dot = Math.max(3, Math.min(8, Math.floor(w / d.picture.positions.length) - 1));
    d.picture.positions.forEach((p, i) => {
      const f = d.picture.files[i];
      ctx.fillStyle = RP.colour(f);
      ctx.fillRect((p / n) * w - dot / 2, y(f) - dot / 2, dot, dot);
    });
    for (let f = 0; f < Math.min(files, 40); f += Math.max(1, Math.ceil(files / 10))) {
      ctx.fillStyle = "#5b6673";
      ctx.fillText("shard " + f, 2, y(f) + 3);
    }
    ctx.fillStyle = "#5b6673";
    ctx.font = "10px sans-serif";
    ctx.fillText("position 0", 40, h - 1);
    ctx.fillText(RP.fmt(n), w - 40, h - 1);
    return canvas;
  }

  RP.orderView = async function (main) {
    const q = RP.query();
    const params = { ...q, batch_size: q.batch_size || 8, step: q.step || 0, epoch: q.epoch || 0 };
    const d = await RP.api("order", params);
    const form = el("form", { class: "controls", method: "get", action: "/order" });
    for (const k of ["root", "path"]) if (q[k] !== undefined) form.append(el("input", { type: "hidden", name: k, value: q[k] }));
    for (const [name, label, size] of FIELDS) form.append(el("label", {}, label, el("input", { name: name, value: params[name] ?? "", size: size })));
    form.append(el("label", {}, "shuffle_files", el("select", { name: "shuffle_files" }, el("option", { value: "0" }, "False"), el("option", { value: "1", selected: q.shuffle_files === "1" }, "True"))));
    const reshuffle = q.shuffle_reshuffle_each_iteration;
    form.append(el("label", {}, "reshuffle_each_iteration", el("select", { name: "shuffle_reshuffle_each_iteration" }, el("option", { value: "" }, "default"), el("option", { value: "1", selected: reshuffle === "1" }, "True"), el("option", { value: "0", selected: reshuffle === "0" }, "False"))));
    form.append(el("button", { type: "submit" }, "show"));
    const go = (changes) => RP.href("/order", { ...params, ...changes });
    const ids = el("ol", { start: d.step_positions[0], id: "step-ids" }, d.step_ids.map((id, i) => el("li", { "data-global-id": d.step_global_ids[i] }, el("code", {}, id))));
    main.append(
      el("h2", {}, "Read order: " + d.split + ", epoch " + d.epoch),
      form,
      el("p", {}, el("a", { href: go({ epoch: Math.max(0, d.epoch - 1) }) }, "« epoch " + Math.max(0, d.epoch - 1)), " ",
        el("a", { href: go({ epoch: d.epoch + 1 }), id: "next-epoch" }, "epoch " + (d.epoch + 1) + " »"), " · ",
        el("span", { id: "num-examples", "data-num-examples": d.num_examples }, RP.fmt(d.num_examples) + " positions, " + d.num_files + " files" + (d.picture.stride > 1 ? ", every " + d.picture.stride + "th drawn" : ""))),
      el("h3", {}, "Shard (file index) against position"),
      picture(d),
      el("p", { class: "note" }, "File order of this epoch: " + d.file_order.slice(0, 64).join(", ") + (d.file_order.length > 64 ? ", …" : "")),
      el("h3", { id: "step-title" }, "Step " + d.step + " of " + d.steps + " at batch size " + d.batch_size + ": positions " + d.step_positions[0] + ".." + (d.step_positions[1] - 1)),
      el("p", {}, el("a", { href: go({ step: Math.max(0, d.step - 1) }) }, "« step " + Math.max(0, d.step - 1)), " ", el("a", { href: go({ step: Math.min(d.steps - 1, d.step + 1) }), id: "next-step" }, "step " + Math.min(d.steps - 1, d.step + 1) + " »")),
      ids,
      RP.tiles(d.examples),
    );
    RP.order = d;
  };
})((window.RP = window.RP || {}));
