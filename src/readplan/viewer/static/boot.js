// Starts the page: the static file shows the files view; the served page routes by URL.
"use strict";
(function (RP) {
  document.addEventListener("DOMContentLoaded", function () {
    const main = document.getElementById("main");
    if (document.body.dataset.mode === "static") RP.filesView(main);
    else RP.route(main, document.getElementById("nav"));
  });
})((window.RP = window.RP || {}));
