/* optimus-calc answer page: sort tables by a header click, fold/unfold the equations, copy a
   code block, and open every fold for printing. No dependency, no network. */
(function () {
  "use strict";
  function key(cell) {
    var raw = cell.getAttribute("data-sort");
    if (raw !== null && raw !== "") { return {num: true, v: parseFloat(raw)}; }
    return {num: false, v: cell.textContent.trim().toLowerCase()};
  }
  function sortBy(table, col, th) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    var sign = dir === "ascending" ? 1 : -1;
    rows.sort(function (a, b) {
      var x = key(a.cells[col]), y = key(b.cells[col]);
      if (x.num && y.num) { return sign * (x.v - y.v); }
      if (x.num !== y.num) { return x.num ? -1 : 1; }
      return sign * (x.v < y.v ? -1 : x.v > y.v ? 1 : 0);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.setAttribute("aria-sort", "none");
    });
    th.setAttribute("aria-sort", dir);
  }
  document.querySelectorAll("table.sortable button.sort").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var th = btn.closest("th");
      sortBy(btn.closest("table"), parseInt(btn.getAttribute("data-col"), 10), th);
    });
  });
  document.querySelectorAll("button[data-fold]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var open = btn.getAttribute("data-fold") === "open";
      document.querySelectorAll("#equations details").forEach(function (d) { d.open = open; });
    });
  });
  document.querySelectorAll("button.copy").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var pre = document.getElementById(btn.getAttribute("data-target"));
      var range = document.createRange();
      range.selectNodeContents(pre);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      var done = function () { btn.textContent = "copied"; };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(pre.textContent).then(done, function () {
          btn.textContent = "selected: press Ctrl+C";
        });
      } else {
        btn.textContent = "selected: press Ctrl+C";
      }
    });
  });
  var opened = [];
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details:not([open])").forEach(function (d) {
      d.open = true;
      opened.push(d);
    });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (d) { d.open = false; });
    opened = [];
  });
})();
