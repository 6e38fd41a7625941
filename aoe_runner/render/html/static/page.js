/* aoe-runner's own page code: draws the charts from #page-data, fills the table (as text, never markup),
   sorts it by a column header and filters it by the text box. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("page-data").textContent);
  var body = document.body;
  var narrow = window.matchMedia("(max-width: 600px)").matches;
  var config = { responsive: true, displaylogo: false, showLink: false, showSendToCloud: false, displayModeBar: !narrow && "hover" };

  function number(value) {
    if (value === null || value === undefined) return "";
    var abs = Math.abs(value);
    // as render/numbers.py's figure: no 300-digit figure, and nothing that is not zero shown as 0
    if (abs >= 1e15 || (abs > 0 && abs < 0.00005)) return exponent(value);
    if (Number.isInteger(value)) return value.toLocaleString("en-US");
    var digits = abs >= 1000 ? 1 : abs >= 1 ? 3 : 4;
    return value.toLocaleString("en-US", { maximumFractionDigits: digits });
  }

  function exponent(value) {  // as Python's f"{value:.3g}" writes it with an exponent: 1.5e+308, 1e-06
    var parts = value.toExponential(2).split("e");
    var digits = parts[1].slice(1);
    return parts[0].replace(/\.?0+$/, "") + "e" + parts[1][0] + (digits.length < 2 ? "0" + digits : digits);
  }

  function shellQuote(word) {  // as Python's shlex.quote: the line is for copying into a shell
    word = String(word);
    if (word && !/[^A-Za-z0-9_@%+=:,.\/-]/.test(word)) return word;
    return "'" + word.replace(/'/g, "'\"'\"'") + "'";
  }

  function pickRun(event) {
    var point = event.points && event.points[0];
    var box = document.getElementById("picked");
    if (!point || !box || point.customdata === undefined) return;
    box.hidden = false;
    box.textContent = "run " + point.customdata + ": aoe-runner runs show " + shellQuote(point.customdata);
  }

  // The charts come after the table, each on its own: a browser that cannot run plotly.js still gets the table.
  function drawCharts() {
    var drawn = 0;
    var failed = function (element, error) {
      element.classList.add("failed");
      element.textContent = "This chart could not be drawn in this browser (" + (error && error.message || error) +
        "); the table holds every entry.";
    };
    var drawing = data.charts.map(function (chart, index) {
      var element = document.getElementById("chart-" + index);
      try {
        if (narrow && chart.narrowHides) chart.layout[chart.narrowHides].showticklabels = false;  // names need the width
        return Plotly.newPlot(element, chart.traces, chart.layout, config).then(function () {
          if (chart.runLinks) {
            element.on("plotly_click", pickRun);
            element.on("plotly_hover", pickRun);
          }
          drawn += 1;
        }, function (error) { failed(element, error); });
      } catch (error) {
        failed(element, error);
        return null;
      }
    });
    Promise.all(drawing).then(function () { body.setAttribute("data-drawn", String(drawn)); });
  }

  var table = data.table;
  if (!table) {
    drawCharts();
    return;
  }
  var head = document.querySelector("#table thead");
  var tbody = document.querySelector("#table tbody");
  var filter = document.getElementById("filter");
  var count = document.getElementById("row-count");
  var rows = table.rows.map(function (values) {
    var tr = document.createElement("tr");
    values.forEach(function (value, column) {
      var td = document.createElement("td");
      if (table.columns[column][1] === "number") {
        td.className = "number";
        td.textContent = number(value);
      } else {
        if (table.columns[column][1] === "long") td.className = "long";
        td.textContent = value === null ? "" : String(value);
      }
      tr.appendChild(td);
    });
    if (values[0] === "regressed") tr.className = "regressed";
    var cells = Array.prototype.map.call(tr.children, function (td) { return td.textContent; });
    return { tr: tr, values: values, text: cells.join("\n").toLowerCase() };  // a match never spans two cells
  });

  var headRow = document.createElement("tr");
  table.columns.forEach(function (column, index) {
    var th = document.createElement("th");
    th.textContent = column[0];
    th.scope = "col";
    th.tabIndex = 0;
    if (column[1] === "number") th.className = "number";
    th.addEventListener("click", function () { sortBy(index, th); });
    th.addEventListener("keydown", function (event) { if (event.key === "Enter") sortBy(index, th); });
    headRow.appendChild(th);
  });
  head.appendChild(headRow);

  function compare(a, b, numeric) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    if (numeric) return a - b;
    return String(a).localeCompare(String(b));
  }

  function sortBy(index, th) {
    var descending = th.getAttribute("aria-sort") === "ascending";
    head.querySelectorAll("th").forEach(function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var numeric = table.columns[index][1] === "number";
    rows.sort(function (a, b) {
      var order = compare(a.values[index], b.values[index], numeric);
      var empty = a.values[index] === null || b.values[index] === null;
      return descending && !empty ? -order : order;
    });
    show();
  }

  function show() {
    var needle = filter.value.trim().toLowerCase();
    var fragment = document.createDocumentFragment();
    var shown = 0;
    rows.forEach(function (row) {
      if (needle && row.text.indexOf(needle) < 0) return;
      fragment.appendChild(row.tr);
      shown += 1;
    });
    tbody.replaceChildren(fragment);
    count.textContent = shown + " of " + rows.length + " rows";
  }

  filter.addEventListener("input", show);
  show();
  drawCharts();
})();
