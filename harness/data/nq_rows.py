"""Natural Questions rows, mapped and checked (the loader is ``harness.data.nq``).

The page: NQ gives a Wikipedia page as tokens, HTML tags among them. ``build_page`` joins the
non-HTML tokens with spaces, or with "\\n" / "\\n\\n" where a block tag separates them, keeps
a token -> character map (so token spans become exact character spans), makes each heading a
Section and leaves out the sections to drop. The annotations: ``parse_annotations`` checks
them against the page (spans inside it, a long answer equal to the candidate it names), in
either layout of a "sequence of structs" (``columns``); ``from_google_row`` maps a row of
Google's jsonl release to the Hub layout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harness.data.rows import RowFields
from harness.types import Section

# Break strength a tag puts between the text tokens around it: 1 = "\n", 2 = "\n\n".
_BREAKS = {**{t: 2 for t in ("p", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "dl",
                              "blockquote", "pre")},
           **{t: 1 for t in ("tr", "li", "dd", "dt", "br", "div", "caption", "hr")}}
_SEPARATORS = (" ", "\n", "\n\n")
_TAG = re.compile(r"<\s*(/?)\s*([A-Za-z][A-Za-z0-9]*)")
_YES_NO = {-1: None, 0: "no", 1: "yes", "NONE": None, "NO": "no", "YES": "yes"}


def title_key(title: str) -> str:
    """Heading titles compared case- and space-insensitively, an "[edit]" link ignored."""
    title = re.sub(r"\[\s*edit\s*\]", " ", title, flags=re.IGNORECASE)
    return " ".join(title.split()).casefold()


def _tag(token: str) -> tuple[str, bool] | None:
    """(lower-case tag name, is closing) of an HTML token, None for anything else."""
    m = _TAG.match(token)
    return (m.group(2).lower(), m.group(1) == "/") if m else None


# -- the page -----------------------------------------------------------------------------------

@dataclass
class Page:
    """A page's text and its token -> character map (``-1``: token not in the text)."""

    text: str
    char_start: list[int]
    char_end: list[int]
    sections: list[Section]
    n_tokens: int                      # text tokens in ``text``
    dropped: list[tuple[int, int]]     # token ranges of dropped sections
    headings_dropped: list[str] = field(default_factory=list)


def build_page(tokens: list[str], is_html: list[bool], heading_levels: int,
               drop_titles: frozenset[str]) -> Page:
    """The text, sections and token map of one NQ document (see the module docstring)."""
    n = len(tokens)
    # 1. headings: (open tag index, end index, level, title)
    heads: list[tuple[int, int, int, str]] = []
    i = 0
    while i < n:
        tag = _tag(tokens[i]) if is_html[i] else None
        if tag and not tag[1] and re.fullmatch(r"h[1-6]", tag[0]) and int(tag[0][1]) <= heading_levels:
            j = i + 1
            while j < n:  # the closing tag, or a block tag when it is missing
                t = _tag(tokens[j]) if is_html[j] else None
                if t and (t == (tag[0], True) or (t[0] in _BREAKS and not t[1])):
                    break
                j += 1
            title = " ".join(tokens[k] for k in range(i + 1, j) if not is_html[k] and tokens[k])
            heads.append((i, j, int(tag[0][1]), title))
            i = j
        i += 1
    # 2. dropped token ranges: a dropped heading up to the next heading of its level or above
    dropped, dropped_titles = [], []
    for h, (start, _, level, title) in enumerate(heads):
        if title_key(title) in drop_titles and not any(a <= start < b for a, b in dropped):
            end = next((s for s, _, lv, _ in heads[h + 1:] if lv <= level), n)
            dropped.append((start, end))
            dropped_titles.append(title)
    # 3. the text
    char_start, char_end = [-1] * n, [-1] * n
    parts: list[str] = []
    length, pending, n_text = 0, 0, 0
    drops = iter(dropped + [(n + 1, n + 1)])
    next_drop = next(drops)
    i = 0
    while i < n:
        if i == next_drop[0]:
            i, pending, next_drop = next_drop[1], 2, next(drops)
            continue
        token = tokens[i]
        if is_html[i]:
            tag = _tag(token)
            if tag:
                pending = max(pending, _BREAKS.get(tag[0], 0))
        elif token:
            if parts:
                sep = _SEPARATORS[pending]
                parts.append(sep)
                length += len(sep)
            char_start[i], char_end[i] = length, length + len(token)
            parts.append(token)
            length += len(token)
            pending, n_text = 0, n_text + 1
        i += 1
    text = "".join(parts)
    # 4. sections: headings left in the text that have a title there
    kept = []
    for start, end, level, title in heads:
        first = next((char_start[k] for k in range(start + 1, end) if char_start[k] >= 0), -1)
        if first >= 0:
            kept.append((first, level, title))
    sections = []
    for h, (start, level, title) in enumerate(kept):
        bound = next((s for s, lv, _ in kept[h + 1:] if lv <= level), len(text))
        sections.append(Section(start, start + len(text[start:bound].rstrip()), level, title))
    return Page(text, char_start, char_end, sections, n_text, dropped, dropped_titles)


def innermost_section(sections: list[Section], pos: int) -> Section | None:
    """The deepest section holding character ``pos`` (None: before every heading)."""
    best = None
    for s in sections:
        if s.start <= pos < s.end and (best is None or s.level >= best.level):
            best = s
    return best


# -- row fields ---------------------------------------------------------------------------------

_LONG = ("start_token", "end_token", "start_byte", "end_byte", "candidate_index")
_SPAN = ("start_token", "end_token", "start_byte", "end_byte")


def _int(f: RowFields, value: Any, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise f.error(label, f"must be an integer, got {type(value).__name__}")
    return value


def columns(f: RowFields, value: Any, label: str, keys: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> dict[str, list]:
    """A HF ``Sequence`` of dicts as a dict of equal-length lists; a list of dicts (Google's
    jsonl, a pandas export) is accepted too. ``optional`` keys may be absent (-> Nones)."""
    if isinstance(value, (list, tuple)):
        out = {k: [] for k in keys + optional}
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise f.error(f"{label}[{i}]", f"must be an object, got {type(item).__name__}")
            for k in keys + optional:
                if k not in item and k in keys:
                    raise f.error(f"{label}[{i}].{k}", "missing required field")
                out[k].append(item.get(k))
        return out
    if value is None:
        raise f.error(label, "missing required field")
    if not isinstance(value, dict):
        raise f.error(label, f"must be an object of lists, got {type(value).__name__}")
    out, n = {}, None
    for k in keys + optional:
        v = value.get(k)
        if v is None and k in optional:
            continue
        if not isinstance(v, (list, tuple)):
            raise f.error(f"{label}.{k}", "missing required field" if v is None
                          else f"must be a list, got {type(v).__name__}")
        if n is not None and len(v) != n:
            raise f.error(f"{label}.{k}", f"has {len(v)} entries, {label}.{keys[0]} has {n}")
        n = len(v)
        out[k] = list(v)
    for k in optional:
        out.setdefault(k, [None] * (n or 0))
    return out


@dataclass
class Annotation:
    index: int
    ann_id: str
    long: tuple[int, int, int, int, int] | None        # start/end token, start/end byte, cand.
    short: list[tuple[int, int, str | None]]            # start/end token, upstream text
    yes_no: str | None


def parse_annotations(f: RowFields, n_tokens: int, candidates: dict[str, list]) -> list[Annotation]:
    """The row's annotations, checked: token spans inside the document, a long answer equal
    to the candidate it names."""
    if f.raw.get("annotations") is None:
        raise f.error("annotations", "missing required field")
    cols = columns(f, f.raw.get("annotations"), "annotations",
                   ("long_answer",), ("id", "short_answers", "yes_no_answer"))
    out = []
    for a, long in enumerate(cols["long_answer"]):
        at = f"annotations.long_answer[{a}]"
        if not isinstance(long, dict):
            raise f.error(at, f"must be an object, got {type(long).__name__}")
        vals = []
        for k in _LONG:
            if long.get(k) is None:
                raise f.error(f"{at}.{k}", "missing required field")
            vals.append(_int(f, long[k], f"{at}.{k}"))
        st, et, _, _, ci = vals
        span = None
        if st >= 0:
            if not st < et <= n_tokens:
                raise f.error(at, f"token span [{st}, {et}) is not inside the document "
                                  f"({n_tokens} tokens)")
            if ci >= 0:
                n_cand = len(candidates["start_token"])
                if ci >= n_cand:
                    raise f.error(f"{at}.candidate_index",
                                  f"{ci} but the row has {n_cand} long_answer_candidates")
                cand = (candidates["start_token"][ci], candidates["end_token"][ci])
                if cand != (st, et):
                    raise f.error(f"{at}.candidate_index", f"candidate {ci} spans tokens "
                                  f"[{cand[0]}, {cand[1]}), the long answer [{st}, {et})")
            span = tuple(vals)
        shorts = []
        raw_short = cols["short_answers"][a]
        if raw_short is not None:
            sc = columns(f, raw_short, f"annotations.short_answers[{a}]", ("start_token", "end_token"),
                         ("start_byte", "end_byte", "text"))
            for s, (ss, se, txt) in enumerate(zip(sc["start_token"], sc["end_token"], sc["text"])):
                sat = f"annotations.short_answers[{a}]"
                ss, se = _int(f, ss, f"{sat}.start_token[{s}]"), _int(f, se, f"{sat}.end_token[{s}]")
                if not 0 <= ss < se <= n_tokens:
                    raise f.error(f"{sat}", f"token span [{ss}, {se}) is not inside the document "
                                            f"({n_tokens} tokens)")
                if txt is not None and not isinstance(txt, str):
                    raise f.error(f"{sat}.text[{s}]", f"must be a string, got {type(txt).__name__}")
                shorts.append((ss, se, txt))
        yn = cols["yes_no_answer"][a]
        if yn is not None and (not isinstance(yn, (int, str)) or yn not in _YES_NO):
            raise f.error(f"annotations.yes_no_answer[{a}]",
                          f"must be -1/0/1 (NONE/NO/YES), got {yn!r}")
        ann_id = cols["id"][a]
        out.append(Annotation(a, str(ann_id) if ann_id is not None else str(a), span, shorts,
                              _YES_NO.get(yn) if yn is not None else None))
    return out


def from_google_row(raw: dict) -> dict:
    """A row of Google's jsonl release in the Hub layout (tokens' ``html_token`` -> ``is_html``,
    ``yes_no_answer`` names kept: parse_annotations reads both)."""
    anns = raw.get("annotations")
    return {
        "id": None if raw.get("example_id") is None else str(raw["example_id"]),
        "document": {"title": raw.get("document_title"), "url": raw.get("document_url"),
                     "html": raw.get("document_html"),
                     "tokens": [{"token": t.get("token"), "is_html": t.get("html_token"),
                                 "start_byte": t.get("start_byte"), "end_byte": t.get("end_byte")}
                                if isinstance(t, dict) else t
                                for t in raw.get("document_tokens") or ()]},
        "question": {"text": raw.get("question_text"), "tokens": raw.get("question_tokens")},
        "long_answer_candidates": raw.get("long_answer_candidates"),
        "annotations": [{"id": None if a.get("annotation_id") is None else str(a["annotation_id"]),
                         "long_answer": a.get("long_answer"),
                         "short_answers": a.get("short_answers"),
                         "yes_no_answer": a.get("yes_no_answer")}
                        if isinstance(a, dict) else a for a in anns]
        if isinstance(anns, list) else anns,
    }
