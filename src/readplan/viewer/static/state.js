// A saved state (a reader's state or a checkpoint), opened from disk in the page and sent
// to the server to be checked against its plan (the server never writes it anywhere):
// epoch, position, the interleave's slots and per-file progress, and what comes next.
"use strict";
(function (RP) {
  const el = RP.el;

  function progressRow(f) {
    const total = f.consumed + f.remaining || 1;
    return el("div", { class: "fileprogress", "data-file": f.file },
      el("span", { class: "track" }, el("span", { class: "done", style: "width:" + (100 * f.consumed) / total + "%;background:" + RP.colour(f.file) })),
      el("code", {}, f.name), " " + f.consumed + " read, " + f.remaining + " left");
  }

  function show(box, s) {
    box.replaceChildren(
      el("h3", {}, s.dataset + " " + s.split),
      RP.table(["", ""], [
        ["epoch", el("b", { id: "state-epoch", "data-epoch": s.epoch }, s.epoch)],
        ["position", el("b", { id: "state-position", "data-position": s.position }, RP.fmt(s.position) + " of " + RP.fmt(s.num_examples))],
        ["rank", s.rank + " of " + s.world_size],
        ["interleave position", RP.fmt(s.interleave_position)],
        ["configuration", el("code", {}, JSON.stringify(s.config))],
      ], { class: "facts" }),
      el("h4", {}, "Interleave slots"),
      el("div", { class: "slots" }, s.slots.map((slot, i) => slot === null ? el("div", {}, "slot " + i + ": empty") : el("div", {}, "slot " + i + ": file " + slot.file + ", next record " + slot.next))),
      el("h4", {}, "Per-file progress (this epoch's input order)"),
      el("div", { class: "slots" }, s.files.map(progressRow)),
      el("h4", {}, "Next records"),
      el("ol", { start: s.position, id: "next-ids" }, s.next_ids.map((id) => el("li", {}, el("code", {}, id)))),
      RP.tiles(s.examples),
    );
    RP.state = s;
  }

  RP.stateView = async function (main) {
    const q = RP.query();
    const box = el("div", { id: "state" });
    main.append(el("h2", {}, "Saved state"));
    if (q.root !== undefined && !q.path && (await RP.api("roots")).roots[q.root].kind === "state") {
      main.append(box);
      show(box, await RP.api("state", { root: q.root }));
      return;
    }
    const input = el("input", { type: "file", id: "state-file", accept: ".json,application/json" });
    input.onchange = async () => {
      box.replaceChildren("checking…");
      try {
        const text = await input.files[0].text();
        show(box, await RP.api("state", { dataset_root: q.root, dataset_path: q.path }, text));
      } catch (err) {
        box.replaceChildren(RP.errorBox(err.message));
      }
    };
    main.append(el("p", {}, "Open a state saved by Reader.save or Checkpoint.save: ", input), box);
  };
})((window.RP = window.RP || {}));
