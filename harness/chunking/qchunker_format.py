"""QChunker's prompts and the reading of its agents' replies (see :mod:`harness.chunking.qchunker`).

Prompts, verbatim from the authors' code (github.com/Robot2050/QChunker; the paper's appendix
shows only Figure 4's worked example, whose formats they match):

- ``SEGMENT_PROMPT`` (``qchunker.py``, M_Gen): the question outline and the segmentation in one
  reply: ``<think>`` outline ``</think>`` then one ``<chunk>head[MASK]tail</chunk>`` per chunk,
  ``head``/``tail`` being the chunk's first and last few characters. System message
  ``SYSTEM`` ("You are a helpful assistant.").
- ``JUDGE_PROMPT`` (``judge_rewrite.py`` ``get_judge``, M_Disc): does the chunk miss necessary
  information? Answer 是 (yes) or 否 (no). The code reads a LoRA classification head; a chat
  model here answers in words. Sent without a system message (Qwen's template then adds its
  default one, as the code's hand-written template does).
- ``REWRITE_PROMPT`` (``judge_rewrite.py`` ``prompt_llm``, M_Ref): reasoning on the missing
  items in ``<think>``, then the rewritten chunk; the code keeps what follows ``</think>``.

Segmentation replies become spans by :func:`locate`: chunks tile the document (Sec. 3.1: a
partition), so each chunk starts where its ``head`` is found, searched forward from the previous
chunk's head, ignoring whitespace (models re-space text); the first chunk starts at 0 and the
last ends at the document's end, so nothing is left out. A head that is not found is replaced
by the end of the previous chunk's ``tail`` when that is found; a chunk with neither is merged
into the one before (``unmatched_chunks``). Offsets come from the search (the model gives only
fragments); searching forward from the last boundary keeps repeated text in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.llm.replies import strip_reasoning

SYSTEM = "You are a helpful assistant."

SEGMENT_PROMPT = """这是一个文本分块任务，你是一名文本分割方面的专家，负责按照文档生成一个问题大纲，然后依据大纲将给定的文本分割成文本块。你必须遵守以下四个条件：
1. 利用原始文档的全局信息，为每一个文本块生成一个能够代表这段文本的完整问题，最终形成一个大纲。
2. 根据生成的大纲对文档进行分割，使得每个文本块都具有完整的逻辑表达。
3. 避免文本块过短，在识别内容转换与分块长度之间取得良好平衡。
4. 输出的每个文本块由文本块开头和结尾几个字符组成，中间内容由“[MASK]”来代替，输出格式如下：
<think>
文档的问题大纲
</think>
<chunk>文本块1的开头几个字符[MASK]文本块1的结尾几个字符</chunk>
......

如果你理解，按照格式直接回复内容，不要输出其他任何解释内容，也不要用引号或其他分隔符括住你的回复。


文档内容：
<document>{}</document>"""

JUDGE_PROMPT = """根据提供的文档内容和从中分割出来的一个文本块，请判断该文本块是否存在缺失必要信息的情况，导致信息表述不准确。该任务是利用原始文档内容中被明确阐述的内容，判断给定文本块是否需要补充必要信息。对于文本块未涉及到的内容不需要补充。
直接回复是或否，不要输出其他任何解释内容，也不要用引号、反引号或其他分隔符括住你的回复。


原始文档：
<document>{}</document>


文本块：
<chunk>{}</chunk>"""

REWRITE_PROMPT = """根据提供的原始文档（被<document>和</document>包裹）和从中分割出来的一个文本块（被<chunk>和</chunk>包裹），利用原始文档的全局信息，对文本块中因信息缺失而模糊的地方进行完善和补充。
输出包括两部分，推理过程和完善好的文本块：
1. 推理过程：列举文本块哪些地方因缺失信息而导致语义不清以及相应的补充信息，被<think>和</think>包裹。
2. 完善好的文本块：依据推理过程对文本块进行重写优化，确保补充的信息自然融入文本块，使得其不存在语义不清的地方。同时保持原有写作风格不变，不要为文本块省略信息或添加未在原始文本中提及的内容。
输出内容格式如下所示：
<think>
缺失信息和补充信息的推理过程
</think>
完善好的文本块

如果你理解，按照格式直接回复内容，不要输出其他任何解释内容，也不要用引号或其他符号括住你的回复。


原始文档：
<document>{}</document>


文本块：
<chunk>{}</chunk>"""

_THINK = re.compile(r"<think>(.*?)</think>", re.S)
_TAG = re.compile(r"(</?chunk>)", re.I)
_MASK = re.compile(r"[\[［【]\s*mask\s*[\]］】]", re.I)
_NUMBERING = re.compile(r"^\s*(?:\d+\s*[.、)）:：]|[-*•])\s*")
NO_MASK_ANCHOR = 30  # a chunk written out in full is found by its first characters


@dataclass(frozen=True)
class Segmentation:
    """One parsed segmentation reply: the outline's questions and each chunk's (head, tail)."""

    questions: tuple[str, ...]
    items: tuple[tuple[str, str], ...]


def parse_segmentation(reply: str) -> Segmentation | None:
    """The outline and chunk items of a reply; None when it holds no non-blank ``<chunk>``.

    Closing tags may be ``</chunk>`` or, as in the paper's Figure 4, a second ``<chunk>``:
    text after an opening tag up to the next tag is an item, blank items are dropped. A chunk
    without ``[MASK]`` (written out in full) is its own head and tail.
    """
    think = _THINK.search(reply)
    questions = tuple(q for q in (_NUMBERING.sub("", line).strip() for line in think.group(1).splitlines())
                      if q and q not in ("......", "...", "…")) if think else ()
    body = reply[think.end():] if think else reply
    parts, items = _TAG.split(body), []
    for tag, text in zip(parts[1::2], parts[2::2]):
        if tag.lower() != "<chunk>" or not text.strip():
            continue
        pieces = _MASK.split(text.strip())
        items.append((pieces[0].strip(), pieces[-1].strip()))
    return Segmentation(questions, tuple(items)) if items else None


def parse_judgement(reply: str) -> bool | None:
    """True for 是 / yes (the chunk misses information), False for 否 / no, None otherwise.
    Reasoning before ``</think>`` is skipped; the first answer word decides."""
    text = strip_reasoning(reply).strip().strip("`'\"“”*").lower()
    if text[:1] in ("是", "否"):
        return text[0] == "是"
    word = re.match(r"(yes|no)\b", text)
    if word:
        return word.group(1) == "yes"
    return None


def parse_rewrite(reply: str) -> str:
    """The rewritten chunk: what follows the last ``</think>`` (the code's rule), stripped,
    without a ``<chunk>`` wrapper the model may echo; "" when nothing is left."""
    text = strip_reasoning(reply).strip()
    return re.sub(r"^<chunk>|</chunk>$", "", text).strip()


def _squeeze(text: str) -> tuple[str, list[int]]:
    """``text`` without whitespace, and each kept character's offset in ``text``."""
    at = [i for i, ch in enumerate(text) if not ch.isspace()]
    return "".join(text[i] for i in at), at


def _anchor(head: str, tail: str) -> str:
    h = _squeeze(head)[0]
    return h[:NO_MASK_ANCHOR] if head == tail else h


def locate(text: str, items: tuple[tuple[str, str], ...]) -> tuple[list[int], dict[str, int]]:
    """Chunk starts (offsets into ``text``, the first 0) for the items, and the repairs made:
    ``unmatched_heads`` (the start taken from the previous tail's end, or 0 for the first
    chunk) and ``unmatched_chunks`` (neither found: merged into the previous chunk)."""
    flat, at = _squeeze(text)
    starts, counts = [0], {"unmatched_heads": 0, "unmatched_chunks": 0}
    last = cursor = 0  # squeezed offsets: the last chunk's start, where the next head may start
    prev_tail = ""
    for k, (head, tail) in enumerate(items):
        h = _anchor(head, tail)
        pos = flat.find(h, cursor) if h else -1
        if pos < 0 and k == 0:
            counts["unmatched_heads"] += 1
            pos = 0
        elif pos < 0 and prev_tail:
            end = flat.find(prev_tail, last)
            nxt = _anchor(*items[k + 1]) if k + 1 < len(items) else ""
            # no start where the next chunk's head stands: that chunk holds it, this one is noise
            if end >= 0 and last < end + len(prev_tail) < len(flat) and \
                    not (nxt and flat.startswith(nxt, end + len(prev_tail))):
                pos = end + len(prev_tail)
                counts["unmatched_heads"] += 1
        if pos < 0:
            counts["unmatched_chunks"] += 1
            continue
        if k > 0:
            starts.append(at[pos])
        last, cursor, prev_tail = pos, pos + max(len(h), 1), _squeeze(tail)[0]
    return starts, counts


def spans_from_starts(starts: list[int], length: int) -> list[tuple[int, int]]:
    """The tiling ``[starts[k], starts[k+1])``, the last to ``length``."""
    return [(a, b) for a, b in zip(starts, [*starts[1:], length]) if a < b]
