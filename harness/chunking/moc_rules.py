"""MoC's chunking rules: the meta-chunker's prompt, reading its reply, finding each rule in the text.

MoC's meta-chunker (Zhao et al., ACL 2025, §3.3; the authors' ``MoC/chunk_MoC.py``) does not copy
chunks out: it lists, per chunk, "its first few characters[MASK]its last few characters". The
authors turn each rule into a regular expression (``[MASK]`` -> ``.*?``, DOTALL) and take its
first match in the text; a rule that does not compile or match goes through their edit-distance
recovery: the text before the first ``[MASK]`` and the text after the last one are each replaced
by the text's substring of the same length at the smallest Levenshtein distance, and the
recovered head/tail are matched again.

Here a located rule gives one thing: where its chunk starts (and, for the search of the next
rule, where it ends). ``MoCMetaChunkerNoRouter`` cuts the text at those starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from harness.llm.replies import json_values, strip_reasoning

MASK = "[MASK]"
SYSTEM = " You are a helpful assistant."  # the authors' system message, leading space included

# The meta-chunker's prompt, verbatim from the authors' code (MoC/chunk_MoC.py, chunking_by_llmsft):
# the prompt their released meta-chunkers were fine-tuned on. The text follows it, then ANSWER_ZH.
PROMPT_ZH = """这是一个文本分块任务，你是一名文本分割方面的专家，负责将给定的文本分割成文本块。你必须遵守以下四个条件：
1. 将内容相关的若干个连续句子组合成文本块，使得每个文本块都具有完整的逻辑表达。
2. 避免文本块过短，在识别内容转换与分块长度之间取得良好平衡。
3. 输出的分块结果是一个列表格式，其中的每个元素表示文档中的一个文本块。
4. 其中输出的每个文本块由文本块开头和结尾几个字符组成，中间内容由“[MASK]”来代替，输出格式如下：
[
    "文本块1的开头几个字符[MASK]文本块1的结尾几个字符",
    ......
]

如果你理解，请将以下文本分割成文本块，并通过上述要求输出列表格式。

文档内容："""
ANSWER_ZH = "\n\n分割好的文本块的列表格式输出："

# Our English rendering of the prompt above (NOT published wording: the paper prints no English
# prompt we could obtain), for models that read no Chinese (prompt: en).
PROMPT_EN = """This is a text chunking task. You are an expert in text segmentation, responsible for splitting the given text into text chunks. You must follow these four conditions:
1. Combine several consecutive sentences with related content into a text chunk, so that each text chunk has a complete logical expression.
2. Avoid text chunks that are too short; strike a good balance between identifying content shifts and chunk length.
3. The chunking result is output in list format, where each element represents one text chunk of the document.
4. Each output text chunk consists of the first few characters and the last few characters of the chunk, with the content in between replaced by "[MASK]", in this output format:
[
    "first few characters of text chunk 1[MASK]last few characters of text chunk 1",
    ......
]

If you understand, split the following text into text chunks and output them in list format as required above.

Document content: """
ANSWER_EN = "\n\nThe text chunks in list format: "

PROMPTS = {"zh": (PROMPT_ZH, ANSWER_ZH), "en": (PROMPT_EN, ANSWER_EN)}
RULE_SYNTAXES = ("regex", "literal")


def prompt_for(text: str, language: str) -> list[dict[str, str]]:
    """The chat the meta-chunker sees for one window of text."""
    head, tail = PROMPTS[language]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": head + text + tail}]


def parse_rules(reply: str) -> list | None:
    """The first JSON list in ``reply`` (after any ``</think>``), or None when there is none.

    The authors accept only a reply that is JSON as a whole; a list inside prose or a code
    fence is accepted here too (small models wrap their answer). Elements are returned as
    given: :func:`locate` counts the ones that are not strings.
    """
    for value in json_values(strip_reasoning(reply)):
        if isinstance(value, list):
            return value
    return None


@dataclass(frozen=True)
class Found:
    """Where one rule was found: its chunk's ``start``, the ``end`` of its match, and how."""

    start: int
    end: int
    how: str  # "matched" or "recovered" (edit distance)


def head_tail(rule: str) -> tuple[str, str]:
    """The text before the first ``[MASK]`` and after the last one ('' tail without a mask)."""
    parts = rule.split(MASK)
    return parts[0], parts[-1] if len(parts) > 1 else ""


def rule_pattern(rule: str, syntax: str) -> re.Pattern | None:
    """The rule as a pattern: ``regex`` as the authors (the model's text is a regular expression,
    ``[MASK]`` -> ``.*?``), ``literal`` with the text between masks escaped. None: it does not compile."""
    parts = rule.split(MASK)
    source = ".*?".join(parts if syntax == "regex" else map(re.escape, parts))
    try:
        return re.compile(source, re.DOTALL)
    except (re.error, RecursionError, OverflowError):
        return None


def nearest(piece: str, text: str, lo: int, hi: int, after: int) -> tuple[int, int] | None:
    """``(position, distance)`` of the substring of ``text[lo:hi]`` as long as ``piece`` (or all of
    it, when shorter) at the smallest Levenshtein distance; ties go to the first at or after
    ``after``, then to the first. None when ``piece`` or the range is empty."""
    if not piece or lo >= hi:
        return None
    n = min(len(piece), hi - lo)
    best = None
    for i in range(lo, hi - n + 1):
        key = (Levenshtein.distance(piece, text[i:i + n]), i < after, i)
        if best is None or key < best:
            best = key
    return best[2], best[0]


def locate(rule: str, text: str, lo: int, hi: int, cursor: int, syntax: str,
           max_edit_ratio: float | None) -> Found | None:
    """Find ``rule`` in ``text[lo:hi]``: its first match at or after ``cursor`` (the previous
    rule's match end: the rules come in text order, so a repeated head is the next
    occurrence), else its first match in the window (as the authors' ``findall(...)[0]``), else
    by edit distance. A recovered head farther than ``max_edit_ratio * len(head)`` edits from
    the text is not accepted (None: the authors accept the nearest whatever its distance)."""
    pattern = rule_pattern(rule, syntax)
    if pattern is not None:
        m = pattern.search(text, cursor, hi) or pattern.search(text, lo, hi)
        if m is not None:
            return Found(m.start(), m.end(), "matched")
    head, tail = head_tail(rule)
    hit = nearest(head, text, lo, hi, cursor)
    if hit is None or (max_edit_ratio is not None and hit[1] > max_edit_ratio * len(head)):
        return None
    start = hit[0]
    end = min(start + len(head), hi)
    tail_hit = nearest(tail, text, end, hi, end)
    if tail_hit is not None:
        end = min(tail_hit[0] + len(tail), hi)
    return Found(start, end, "recovered")
