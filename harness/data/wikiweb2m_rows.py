"""WikiWeb2M pages, read and mapped (the loader is ``harness.data.wikiweb2m``, whose docstring
describes the layout and the mapping).

``page_records`` yields one page per TFRecord SequenceExample (via ``harness.data.tfrecord``) or
JSONL line, its sequence features decoded only when asked for; ``build_page`` turns a page's
fields into a Document with its section tree, or None when the tree is not in page order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from harness.data.rows import WHOLE_ROW, RowFields, iter_row_files
from harness.data.tfrecord import (decode_feature, decode_feature_list, read_tfrecords,
                                   split_sequence_example)
from harness.types import DataError, Document, Section

SECTION_SEPARATOR = "\n\n"
# Sequence features the loader reads; the image features are left undecoded.
SEQUENCE_FEATURES = ("section_title", "section_text", "section_index", "section_depth",
                     "section_heading_level", "section_parent_index")
_INT_SEQUENCES = ("section_index", "section_depth", "section_heading_level",
                  "section_parent_index")


@dataclass
class Page:
    doc: Document
    url: str
    n_tokens: int
    body: dict[int, tuple[int, int]]  # section index -> span of its section_text


def page_records(paths: list[Path], dataset: str, verify_data_crc: bool = False
                 ) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """``(location, context, sections)`` per page; ``sections()`` decodes the sequence
    features (called only for pages the loader keeps)."""
    for path in paths:
        if ".tfrecord" in path.name:
            for location, payload in read_tfrecords(path, dataset, verify_data_crc):
                try:
                    context, lists = split_sequence_example(payload)
                    ctx = {k: decode_feature(v) for k, v in context.items()}
                except (ValueError, UnicodeDecodeError) as e:
                    raise DataError(dataset, location, WHOLE_ROW,
                                    f"not a SequenceExample: {e}") from None
                yield location, _context_values(ctx), _lazy_lists(dataset, location, lists)
        else:
            for location, raw in iter_row_files([path], dataset):
                if not isinstance(raw, dict):
                    raise DataError(dataset, location, WHOLE_ROW,
                                    f"must be a JSON object, got {type(raw).__name__}")
                yield location, raw, (lambda raw=raw: raw)


def build_page(f: RowFields) -> Page | None:
    """The page as a Document, or None when its section tree is not in page order."""
    url = _one(f, f.get("page_url", str, ""), str, "page_url")
    title = _one(f, f.get("page_title", str, ""), str, "page_title")
    if not url and not title:
        raise f.error("page_url", "missing required field (and no page_title)")
    titles = [_one(f, v, str, f"section_title[{i}]")
              for i, v in enumerate(f.get("section_title", list))]
    n = len(titles)
    seq = {"section_title": titles}
    for name in ("section_text",) + _INT_SEQUENCES:
        values = f.get(name, list, None)
        if values is None:
            if name in ("section_text", "section_parent_index"):
                raise f.error(name, "missing required field")
            continue
        if len(values) != n:
            raise f.error(name, f"has {len(values)} entries, section_title has {n}")
        kind = str if name == "section_text" else int
        seq[name] = [_one(f, v, kind, f"{name}[{i}]") for i, v in enumerate(values)]
    index = seq.get("section_index", list(range(n)))
    position = {}
    for i, x in enumerate(index):
        if x in position:
            raise f.error(f"section_index[{i}]", f"duplicate section index {x}")
        position[x] = i
    levels = _tree_levels([position.get(p, -1) for p in seq["section_parent_index"]])
    if levels is None:
        return None

    parts, pos, starts, body = [], 0, [], {}
    for i in range(n):
        if i:
            parts.append(SECTION_SEPARATOR)
            pos += len(SECTION_SEPARATOR)
        starts.append(pos)
        head = titles[i].strip()
        if head:
            parts.append(head + "\n")
            pos += len(head) + 1
        text = seq["section_text"][i]
        body[index[i]] = (pos, pos + len(text))
        parts.append(text)
        pos += len(text)
    text = "".join(parts)
    sections, meta_sections = [], []
    for i in range(n):
        bound = next((starts[j] for j in range(i + 1, n) if levels[j] <= levels[i]), len(text))
        start = starts[i] + len(text[starts[i]:bound]) - len(text[starts[i]:bound].lstrip())
        end = starts[i] + len(text[starts[i]:bound].rstrip())
        if start < end:
            sections.append(Section(start, end, levels[i], titles[i].strip()))
        meta_sections.append({
            "index": index[i], "title": titles[i], "level": levels[i],
            "start": start, "end": max(start, end),
            "text_start": body[index[i]][0], "text_end": body[index[i]][1],
            **{k: seq[k][i] for k in _INT_SEQUENCES if k in seq and k != "section_index"}})
    doc = Document(doc_id=title or url, text=text, title=title, sections=tuple(sections),
                   language="en",
                   meta={"page_url": url, "split": f.raw.get("split"),
                         "sections": meta_sections})
    return Page(doc, url, len(text.split()), body)


def _context_values(ctx: dict[str, list]) -> dict[str, Any]:
    """Context features as scalars (``FixedLenFeature([])``): bytes decoded as UTF-8; a
    feature that does not hold exactly one value keeps its list (and fails typed access)."""
    out: dict[str, Any] = {}
    for k, values in ctx.items():
        values = [v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v
                  for v in values]
        out[k] = values[0] if len(values) == 1 else values
    return out


def _lazy_lists(dataset: str, location: str, lists: dict[str, memoryview]):
    """A function decoding the sequence features the loader reads, one value list a section."""
    def decode() -> dict[str, Any]:
        out = {}
        for name in SEQUENCE_FEATURES:
            if name in lists:
                try:
                    steps = decode_feature_list(lists[name])
                except ValueError as e:
                    raise DataError(dataset, location, name, f"malformed FeatureList: {e}") from None
                out[name] = [[v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v
                              for v in step] for step in steps]
        return out
    return decode


def _one(f: RowFields, value: Any, kind: type, label: str) -> Any:
    """One section's value: a scalar, or the list TFRecord gives (text: values joined by
    "\\n"; an empty list is empty text; a number needs exactly one value)."""
    if isinstance(value, list):
        if kind is str and all(isinstance(v, str) for v in value):
            value = "\n".join(value)
        elif len(value) == 1:
            value = value[0]
        else:
            raise f.error(label, f"must hold one value, got {len(value)}")
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise f.error(label, f"must be an integer, got {type(value).__name__}")
    if kind is str:
        if not isinstance(value, str):
            raise f.error(label, f"must be a string, got {type(value).__name__}")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise f.error(label, "is not valid UTF-8") from None
    return value


def _tree_levels(parents: list[int]) -> list[int] | None:
    """Levels from parent positions (-1 or self: a root), or None when the tree is not in
    page order: a parent after its child, or a child not next to its parent's descendants."""
    levels, open_path = [], []  # open_path: positions of the current root-to-node path
    for i, p in enumerate(parents):
        if p < 0 or p == i:
            open_path = [i]
            levels.append(1)
            continue
        if p > i or p not in open_path:
            return None
        open_path = open_path[:open_path.index(p) + 1] + [i]
        levels.append(levels[p] + 1)
    return levels
