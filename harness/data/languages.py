"""The languages a document may name: an ISO 639-1 code, optionally with a script or region
subtag (``zh-Hans``, ``en-US``, BCP 47). sentencex reads any string and falls back to English
rules for one it does not know, so a typo (``language: "xx"``) would split silently as English."""

from __future__ import annotations

import re

ISO_639_1 = frozenset("""
aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de
dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id
ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu
lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu
rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr
ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu""".split())
_TAG = re.compile(r"([A-Za-z]{2})(?:[-_][A-Za-z0-9]{2,8})*")
ALLOWED = "an ISO 639-1 code (en, zh, de, fr, ja, ...), optionally with a script or region (zh-Hans, en-US)"


def language_problem(tag: str) -> str | None:
    """Why ``tag`` is no language a document may name, or None."""
    m = _TAG.fullmatch(tag)
    if m and m.group(1).lower() in ISO_639_1:
        return None
    return f"{tag!r} is not a language code: give {ALLOWED}"
