// Talking to the viewer's server: JSON from /api/ (the token travels in the cookie the
// first page load set), and links between the views, each a URL of its own.
"use strict";
(function (RP) {
  RP.api = async function (name, params, body) {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== "") query.set(k, v);
    const init = body === undefined ? {} : { method: "POST", body: body, headers: { "Content-Type": "application/json" } };
    const response = await fetch("/api/" + name + "?" + query.toString(), init);
    const document = await response.json();
    if (!response.ok) throw new Error(document.error || response.statusText);
    return document;
  };
  RP.href = function (page, params) {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== "") query.set(k, v);
    const text = query.toString();
    return page + (text ? "?" + text : "");
  };
  // The page's parameters; the token (in the printed URL only) is left out of every link.
  RP.query = function () {
    const params = new URLSearchParams(location.search);
    if (params.has("token")) {
      params.delete("token");
      const rest = params.toString();
      history.replaceState(null, "", location.pathname + (rest ? "?" + rest : ""));
    }
    return Object.fromEntries(params.entries());
  };
  // Polls a background job (file scans) until it is done, showing its progress.
  RP.poll = async function (name, params, bar) {
    for (;;) {
      const job = await RP.api(name, params);
      bar.max = job.total || 1;
      bar.value = job.done || 0;
      if (job.status === "done") return job;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
})((window.RP = window.RP || {}));
