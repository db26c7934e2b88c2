"""Markdown files of results/ (a table's caption, a challenge report, the leaderboard) as HTML, with
markdown-it-py (CommonMark + tables; raw HTML off, so every text is escaped). Links are rewritten
for the site: a ``.md`` that has a page links to the page, a file of results/ to its copy in the
site, and anything else (a folder, a file outside results/, a web address) stays as text, so that
every link the site holds opens a file on disk."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from harness.report.site.templates import href

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@dataclass
class SiteMap:
    """What the site holds, by results/-relative path (posix): ``pages`` maps a source file (a
    ``.md``, a leaderboard csv) to its page's site path; ``assets`` are the files copied as they
    are (same relative path in the site). ``skip``: results/-relative folders never read (the
    site's own output)."""

    results: Path
    pages: dict[str, str] = field(default_factory=dict)
    assets: set[str] = field(default_factory=set)
    skip: tuple[str, ...] = ()

    def exists(self, rel: str) -> bool:
        if rel.startswith("../") or rel in ("..", ".") or any(rel == s or rel.startswith(s + "/") for s in self.skip):
            return False
        return (self.results / rel).is_file()

    def asset(self, rel: str) -> str | None:
        """``rel`` copied into the site (its site path), or None when results/ has no such file."""
        if not self.exists(rel):
            return None
        self.assets.add(rel)
        return rel

    def resolve(self, source: str, target: str) -> str | None:
        """The site path a link ``target`` written in the results/ file ``source`` goes to, or None."""
        if not target or _SCHEME.match(target) or target.startswith("//"):
            return None
        path, _, fragment = target.partition("#")
        if not path:
            return self.pages.get(source, "") + f"#{fragment}" if fragment else None
        rel = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        if rel in self.pages:
            page = self.pages[rel]
            return page if "#" in page or not fragment else f"{page}#{fragment}"
        return self.asset(rel)


def _parser() -> MarkdownIt:
    """CommonMark with tables; a line break in the source is one on the page (the tables' captions
    are one statement a line)."""
    return MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"])


def _breaks(children: list[Token]) -> list[Token]:
    """A ``<br>`` written in a table cell (the tables' ``ours<br>paper``) as a line break; any
    other HTML stays escaped text."""
    out = []
    for t in children:
        if t.type != "text" or "<br>" not in t.content:
            out.append(t)
            continue
        for i, part in enumerate(t.content.split("<br>")):
            if i:
                out.append(Token("hardbreak", "br", 0))
            if part:
                text = Token("text", "", 0)
                text.content = part
                out.append(text)
    return out


def _relink(children: list[Token], sitemap: SiteMap, source: str, page: str) -> None:
    for t in children:
        if t.type == "link_open":
            target = sitemap.resolve(source, str(t.attrs.get("href", "")))
            if target is None:
                t.attrs = {"class": "absent", "title": f"not in the site: {t.attrs.get('href', '')}"}
                t.tag = "span"
            else:
                t.attrs["href"] = _unescaped(href(page, target))
        elif t.type == "image":
            target = sitemap.resolve(source, str(t.attrs.get("src", "")))
            if target is None:
                t.type, t.tag, t.attrs = "text", "", {}
                t.content = f"[image not published: {t.content}]"
                t.children = None
            else:
                t.attrs["src"] = _unescaped(href(page, target))
                t.attrs["class"] = "figure"
    # a link turned to a span closes as a span
    opened = []
    for t in children:
        if t.type == "link_open":
            opened.append(t.tag)
        elif t.type == "link_close":
            t.tag = opened.pop() if opened else "a"


def _unescaped(text: str) -> str:
    """:func:`href` escapes for HTML; markdown-it escapes attributes itself."""
    import html

    return html.unescape(text)


def render(text: str, sitemap: SiteMap, source: str, page: str, sortable_id: str = "md") -> str:
    """``text`` (the markdown of results/ file ``source``) as HTML for the page at site path
    ``page``; its tables sortable, numbered ``<sortable_id>-1``, ``-2``..."""
    md = _parser()
    tokens = md.parse(text)
    n = 0
    for t in tokens:
        if t.type == "table_open":
            n += 1
            t.attrs = {"id": f"{sortable_id}-{n}", "class": "sortable"}
        if t.type == "inline" and t.children:
            t.children = _breaks(t.children)
            _relink(t.children, sitemap, source, page)
    return md.renderer.render(tokens, md.options, {})


def split_caption(text: str) -> tuple[str, str, str]:
    """A table's markdown as (caption before its first table, the first table, what follows)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-:| ]+\|\s*$", lines[i + 1])), None)
    if start is None:
        return text, "", ""
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[:start]), "\n".join(lines[start:end]), "\n".join(lines[end:])
