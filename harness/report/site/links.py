"""The site's link checker: every ``href`` and ``src`` of every page must open a file of the site
from disk (a relative path inside the site folder; a ``#fragment`` an ``id`` of its page). A web
address is an error too: the site reaches no network."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True)
class Broken:
    page: str      # site-relative path of the page
    target: str    # the href or src as written
    why: str

    def __str__(self) -> str:
        return f"{self.page}: {self.target}: {self.why}"


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.refs.append(value)
            elif name == "id" and value:
                self.ids.add(value)


def _parse(path: Path) -> _Refs:
    p = _Refs()
    p.feed(path.read_text(encoding="utf-8"))
    p.close()
    return p


def check(site: Path) -> list[Broken]:
    """Every link of every ``.html`` under ``site`` that does not resolve, sorted."""
    site = site.resolve()
    pages = {p.relative_to(site).as_posix(): _parse(p) for p in sorted(site.rglob("*.html"))}
    broken = []
    for page, refs in pages.items():
        for ref in refs.refs:
            parts = urlsplit(ref)
            if parts.scheme or parts.netloc:
                broken.append(Broken(page, ref, "not a file of the site (a web address)"))
                continue
            path = unquote(parts.path)
            if path.startswith("/"):
                broken.append(Broken(page, ref, "an absolute path: the site's links are relative"))
                continue
            rel = posixpath.normpath(posixpath.join(posixpath.dirname(page), path)) if path else page
            if rel == ".." or rel.startswith("../"):
                broken.append(Broken(page, ref, "outside the site folder"))
            elif not (site / rel).is_file():
                broken.append(Broken(page, ref, "no such file"))
            elif parts.fragment and rel in pages and unquote(parts.fragment) not in pages[rel].ids:
                broken.append(Broken(page, ref, f"{rel} has no id {parts.fragment!r}"))
    return sorted(broken, key=lambda b: (b.page, b.target))


def references(page: Path) -> list[str]:
    """Every ``href``/``src`` of one page, in order (for tests and reports)."""
    return _parse(page).refs
