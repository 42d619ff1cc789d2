// The served page's router: each view has its own URL (shareable); the path picks it.
"use strict";
(function (RP) {
  const el = RP.el;
  const VIEWS = {
    "/": ["Served", (m) => RP.homeView(m)],
    "/dataset": ["Dataset", (m) => RP.datasetView(m)],
    "/gallery": ["Gallery", (m) => RP.galleryView(m)],
    "/order": ["Read order", (m) => RP.orderView(m)],
    "/state": ["Saved state", (m) => RP.stateView(m)],
    "/file": ["File", (m) => RP.fileView(m)],
    "/files": ["Local files", (m) => RP.filesView(m)],
  };
  RP.route = async function (main, nav) {
    const q = RP.query();
    const here = location.pathname;
    const keep = { root: q.root, path: q.path, split: q.split };
    for (const [path, [label]] of Object.entries(VIEWS)) {
      if (path === "/file") continue;
      const href = path === "/" || path === "/files" ? path : RP.href(path, keep);
      nav.append(el("a", { href: href, class: path === here ? "here" : null }, label));
    }
    const view = VIEWS[here] || VIEWS["/"];
    RP.loading = true;
    try {
      await view[1](main);
    } catch (err) {
      main.append(RP.errorBox(err.message));
      RP.failed = err.message;
    } finally {
      RP.loading = false;
      RP.loaded = true;
    }
  };
})((window.RP = window.RP || {}));
