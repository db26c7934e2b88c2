"""The site's HTML: one page skeleton (``string.Template``), its stylesheet and the sort script, and
the helpers every page builds with. Every text goes through :func:`esc`; nothing is fetched (no CDN,
no font, no network): a page opens from disk as it is written."""

from __future__ import annotations

import html
import posixpath
from collections.abc import Sequence
from string import Template

CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d232b; }
header { background: #1f3a5f; color: #fff; padding: 10px 24px; }
header a { color: #fff; }
header .crumbs { font-size: 13px; opacity: .85; }
main { padding: 8px 24px 40px; max-width: 1400px; }
h1 { font-size: 24px; margin: 4px 0; }
h2 { font-size: 19px; margin-top: 28px; border-bottom: 1px solid #d5dae1; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #d5dae1; padding: 3px 7px; vertical-align: top; text-align: left; }
th { background: #eef2f7; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th.asc::after { content: " \\25B2"; }
table.sortable th.desc::after { content: " \\25BC"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:nth-child(even) td { background: #fafbfc; }
.tag { display: inline-block; border-radius: 3px; padding: 0 4px; font-size: 12px; margin: 1px 2px 1px 0; }
.stand-in { background: #fff1c9; }
.deviation { background: #fbd9d3; }
.empty { color: #7a828c; }
.absent { color: #8a4b00; font-style: italic; }
.muted { color: #5b636d; font-size: 13px; }
code, pre { background: #f2f4f7; border-radius: 3px; padding: 1px 4px; font-size: 13px; }
pre { padding: 8px; overflow-x: auto; }
img.figure { max-width: 100%; border: 1px solid #d5dae1; margin: 6px 0; }
img.thumb { width: 360px; border: 1px solid #d5dae1; }
.grid { display: flex; flex-wrap: wrap; gap: 16px; }
details { margin: 8px 0; }
"""

# Sorts a table.sortable by a clicked header: numbers numerically (a cell's data-sort, else the number
# its text starts with: "79.8 ± 38.6", "1,059 s", "48/52"), otherwise text alphabetically; empty cells
# last. A second click reverses. "#sort=ID:COLUMN[:desc]" in the address sorts on load (tests, links).
JS = r"""
(function () {
  function key(td) {
    var s = td.getAttribute("data-sort");
    if (s === null) s = td.textContent;
    s = s.trim();
    var m = /^[-+\u2212]?(\d[\d,]*)(\.\d+)?(e[-+]?\d+)?/i.exec(s);
    if (m && s !== "") return {n: parseFloat(m[0].replace(/,/g, "").replace("\u2212", "-")), t: s};
    return {n: null, t: s};
  }
  function compare(a, b) {
    if (a.t === "" || b.t === "") return (a.t === "") - (b.t === "");
    if (a.n !== null && b.n !== null) return a.n - b.n || a.t.localeCompare(b.t);
    if (a.n !== null || b.n !== null) return a.n !== null ? -1 : 1;
    return a.t.localeCompare(b.t);
  }
  function sortTable(table, col, desc) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (r, i) {
      return {r: r, i: i, k: key(r.cells[col] || r.insertCell())};
    });
    rows.sort(function (a, b) {
      var c = compare(a.k, b.k);
      if (desc && a.k.t !== "" && b.k.t !== "") c = -c;
      return c || a.i - b.i;
    });
    rows.forEach(function (x) { body.appendChild(x.r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.className = i === col ? (desc ? "desc" : "asc") : "";
    });
    table.setAttribute("data-sorted", col + (desc ? ":desc" : ":asc"));
  }
  window.chunkbenchSort = sortTable;
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.title = "sort by this column";
      th.addEventListener("click", function () { sortTable(table, i, th.className === "asc"); });
    });
  });
  var m = /^#sort=([^:]+):(\d+)(:desc)?$/.exec(decodeURIComponent(location.hash));
  if (m && document.getElementById(m[1])) sortTable(document.getElementById(m[1]), +m[2], !!m[3]);
})();
"""

PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>$css</style>
</head>
<body>
<header><div class="crumbs">$crumbs</div><h1>$heading</h1></header>
<main>
$body
</main>
<script>$js</script>
</body>
</html>
""")


def esc(text: object) -> str:
    """Any text as HTML text or attribute value."""
    return html.escape("" if text is None else str(text), quote=True)


def href(page: str, target: str) -> str:
    """The relative address of site path ``target`` (``chroma/table2.png``, ``index.html#full``) from
    the page at site path ``page``: what a browser resolves from disk, with no server."""
    path, _, fragment = target.partition("#")
    rel = posixpath.relpath(path, posixpath.dirname(page) or ".") if path else posixpath.basename(page)
    return esc(rel + (f"#{fragment}" if fragment else ""))


def link(page: str, target: str, text: str) -> str:
    return f'<a href="{href(page, target)}">{esc(text)}</a>'


def page(path: str, title: str, body: str, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    """A whole page at site path ``path``; ``crumbs``: (site path, text) links shown above the
    title, the index first."""
    trail = " / ".join([link(path, "index.html", "ChunkBench results")] + [link(path, t, x) for t, x in crumbs])
    return PAGE.substitute(title=esc(title), heading=esc(title), crumbs=trail, body=body, css=CSS, js=JS)


def cell(value: object, numeric: bool = False, sort: object = None, raw: bool = False, cls: str = "") -> dict:
    """One table cell: ``value`` is text (escaped) unless ``raw`` (HTML built with :func:`esc`);
    ``sort``: the key the sort script uses (a number's full precision)."""
    return {"html": value if raw else esc(value), "numeric": numeric, "sort": sort, "cls": cls}


def table(table_id: str, headers: Sequence[str], rows: Sequence[Sequence], sortable: bool = True) -> str:
    """A table; each row's items are :func:`cell` dicts or plain values (escaped text)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    sort_class = ' class="sortable"' if sortable else ""
    lines = [f'<table id="{esc(table_id)}"{sort_class}>',
             f"<thead><tr>{head}</tr></thead>", "<tbody>"]
    for row in rows:
        tds = []
        for c in row:
            c = c if isinstance(c, dict) else cell(c)
            classes = " ".join(x for x in ("num" if c["numeric"] else "", c["cls"]) if x)
            attrs = (f' class="{classes}"' if classes else "") + \
                    (f' data-sort="{esc(c["sort"])}"' if c["sort"] is not None else "")
            tds.append(f"<td{attrs}>{c['html']}</td>")
        lines.append("<tr>" + "".join(tds) + "</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)
