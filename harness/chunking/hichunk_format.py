"""HiChunk's input and output formats (Lu et al., HiChunk §4, §5.3 and Listing A4).

Input: the document as numbered sentence lines "{line} @ {sentence}" after the Listing A4
prompt. Output: one chunk point per line, "{line}, {level}, {is_title}", as the authors'
training data writes it ("12, Level Two, True"; github.com/TencentYoutuResearch/HiChunk,
``build_train_data.py``). Facts from the authors' code (``pipeline/chunking/HiChunk/HiChunk.py``):

- Sentences: the text is split into lines, each line into sentences; a sentence shorter than
  ``MIN_SENTENCE_CHARS`` is merged into the next one of its line.
- The prompt shows a sentence without its leading markdown "#" marks, cut to its head (see
  ``prompt_text``; the tail is dropped). Only the prompt is cut: chunk points index whole
  sentences of the document.
- Levels are "Level One" ... "Level Ten" (at most ``MAX_LEVELS``).

``parse_points`` reads well-formed, malformed and adversarial replies: see its docstring.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from harness.chunking.sentence import sentence_pieces
from harness.chunking.units import Span
from harness.llm.replies import strip_reasoning

# Listing A4, verbatim as the authors' code sends it (HiChunk.py, PROMPT).
PROMPT = ('You are an assistant good at reading and formatting documents, and you are also skilled at distinguishing '
          'the semantic and logical relationships of sentences between document context. The following is a text that '
          'has already been divided into sentences. Each line is formatted as: "{line number} @ {sentence content}". '
          'You need to segment this text based on semantics and format. There are multiple levels of granularity for '
          'segmentation, the higher level number means the finer granularity of the segmentation. Please ensure that '
          'each Level One segment is semantically complete after segmentation. A Level One segment may contain '
          'multiple Level Two segments, and so on. Please incrementally output the starting line numbers of each level '
          'of segments, and determine the level of the segment, as well as whether the content of the sentence at the '
          'starting line number can be used as the title of the segment. Finally, output a list format result, '
          'where each element is in the format of: "{line number}, {segment level}, {be a title?}".'
          '\n\n>>> Input text:\n')

TRUNCATIONS = ("code", "paper")
ENGLISH_FACTOR = 10      # HiChunk.py sentence_truncation: len_factor for a sentence without Chinese
MIN_SENTENCE_CHARS = 10  # HiChunk.py sentence_split_en: shorter sentences join the next one
MAX_LEVELS = 10          # "Level One" .. "Level Ten" (HiChunk.py level_dict_en)
_LEVEL_WORDS = {w: i + 1 for i, w in enumerate(
    ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"))}
_TRUE, _FALSE = {"true", "yes", "1"}, {"false", "no", "0"}
_HEADING = re.compile(r"^[\s#]*")
# One point: at a line start (after a bullet or "1." list marker) or just after "[", "(" or ";",
# so a one-line list "[(3, 1, True), (9, 2, False)]" reads too. Quotes around fields are allowed.
_POINT = re.compile(
    r"(?:^|(?<=[\[(;]))[ \t\"'*•-]*(?:\d+[.)][ \t]+)?"
    r"(\d+)[\"']?[ \t]*,[ \t]*[\"']?[ \t]*(level[ \t]*[a-z]+|level[ \t]*\d+|l?\d+)[ \t]*[\"']?"
    r"(?:[ \t]*,[ \t]*[\"']?[ \t]*([a-z]+|\d+)\b)?",
    re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True, order=True)
class Point:
    """A chunk point: a segment of ``level`` (1 = coarsest) starts at sentence ``line``;
    ``is_title``: that sentence is the segment's title."""

    line: int
    level: int
    is_title: bool = False


def sentence_units(text: str, language: str = "en") -> list[Span]:
    """HiChunk's sentences: the non-blank lines of ``text``, each cut into sentences, a sentence
    under ``MIN_SENTENCE_CHARS`` characters joined to the next one of its line. Trimmed spans."""
    units: list[Span] = []
    offset = 0
    for line in text.split("\n"):
        start, end = offset, offset + len(line)
        offset = end + 1
        if not line.strip():
            continue
        pieces = sentence_pieces(text, start, end, language)
        carry: int | None = None  # start of the short sentences waiting for the next one
        for i, (s, e) in enumerate(pieces):
            s = s if carry is None else carry
            if e - s < MIN_SENTENCE_CHARS and i < len(pieces) - 1:
                carry = s
                continue
            units.append((s, e))
            carry = None
    return units


def prompt_text(sentence: str, max_chars: int | None, truncation: str = "code") -> str:
    """A sentence as the prompt shows it: leading "#" marks removed, cut to its head.

    ``truncation="paper"`` (§5.3: "the length of each sentence is limited to within 100
    characters"): ``max_chars`` characters. ``"code"`` (HiChunk.py ``text2sentence`` with
    ``--limit max_chars`` as ``hi_chunking.sh`` runs it, ``sentence_truncation``): ``10 *
    max_chars`` characters for a sentence without Chinese characters (U+4E00..U+9FA5, the code's
    ``is_english``, tested per sentence), ``max_chars`` for one with; a heading is cut as
    "# " + its text, so its text keeps 2 characters fewer.
    """
    text = _HEADING.sub("", sentence).replace("\n", " ")
    if max_chars is None:
        return text
    if truncation == "paper":
        return text[:max_chars]
    limit = max_chars if any("\u4e00" <= ch <= "\u9fa5" for ch in text) else ENGLISH_FACTOR * max_chars
    if "#" in sentence[:len(sentence) - len(text)]:
        limit = max(limit - 2, 0)
    return text[:limit]


def title_text(sentence: str) -> str:
    """A title line without its markdown "#" marks."""
    return _HEADING.sub("", sentence).strip()


def format_lines(texts: list[str], first: int = 0) -> str:
    """Prompt lines "{line} @ {text}\\n", numbered from ``first``."""
    return "".join(f"{first + i} @ {t}\n" for i, t in enumerate(texts))


def _level(token: str) -> int | None:
    token = token.lower().removeprefix("level").strip().removeprefix("l")
    return int(token) if token.isdigit() else _LEVEL_WORDS.get(token)


def parse_points(reply: str, n_lines: int) -> tuple[list[Point], Counter[str]]:
    """Chunk points of a reply for a window of ``n_lines`` local lines, and what was repaired.

    Reads "{line}, {level}, {is_title}" items anywhere a line (or a list item) starts; text
    after the last ``</think>`` only. Levels: "Level One".."Level Ten", "Level 2", "L2", "2".
    is_title: true/false, yes/no, 1/0. Kept: points in window order. Dropped and counted:

    - ``unparsed_lines``: a non-blank reply line holding no point (prose, code fences, garbage);
    - ``invalid_points``: a line number outside ``[0, n_lines)`` or a level outside 1..MAX_LEVELS;
    - ``duplicate_points`` / ``unordered_points``: a line number equal to / below the last kept
      one (the authors' training output is strictly increasing; the first point wins);
    - ``missing_is_title``: no or unreadable is_title: the point is kept with is_title=False.
    """
    counts: Counter[str] = Counter()
    text = strip_reasoning(reply)
    points: list[Point] = []
    for raw in text.split("\n"):
        found = list(_POINT.finditer(raw))
        if not found:
            counts["unparsed_lines"] += bool(raw.strip())
            continue
        for m in found:
            line, level, flag = int(m.group(1)), _level(m.group(2)), (m.group(3) or "").lower()
            if not 0 <= line < n_lines or level is None or not 1 <= level <= MAX_LEVELS:
                counts["invalid_points"] += 1
                continue
            if points and line <= points[-1].line:
                counts["duplicate_points" if line == points[-1].line else "unordered_points"] += 1
                continue
            if flag not in _TRUE | _FALSE:
                counts["missing_is_title"] += 1
            points.append(Point(line, level, flag in _TRUE))
    return points, +counts
