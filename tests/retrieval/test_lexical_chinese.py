"""Chinese tooling is loaded only for Chinese text (issue 16 item 11): BM25 over the English
bundled sample, whose OCR tables hold stray CJK characters, never imports jieba (whose
dictionary takes seconds to load, ~19 s cold); over Chinese text it does."""

import json
import os
import subprocess
import sys

import pytest

from harness.text import cjk_share, lexical_tokens

ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
# BM25 over every document of a bundled dataset cut into 600-character chunks; prints whether
# jieba was imported and how many chunks hold a CJK character.
SCRIPT = """
import json, sys
from harness.chunking.base import spans_to_chunks
from harness.retrieval.lexical import BM25Retriever, TfidfRetriever
from harness.text import is_cjk
from harness.data.{module} import {loader} as Loader
ds = Loader(limit_queries=5).load()
chunks = [c for d in ds.documents
          for c in spans_to_chunks(d, [(i, min(i + 600, len(d.text))) for i in range(0, len(d.text), 600)])]
for retriever in (BM25Retriever(**{kw}), TfidfRetriever(**{kw})):
    results, _ = retriever.retrieve(ds.queries, chunks)
    assert all(r.ranked for r in results)
print(json.dumps({{"jieba": "jieba" in sys.modules, "cjk_chunks": sum(is_cjk(c.text) for c in chunks)}}))
"""


def bm25_run(module: str, loader: str, **kw) -> dict:
    code = SCRIPT.format(module=module, loader=loader, kw=repr({"scope": "corpus", **kw}))
    p = subprocess.run([sys.executable, "-c", code], env=ENV, text=True, capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_english_text_with_stray_cjk_characters_does_not_load_jieba():
    english = bm25_run("ohrbench", "OHRBench")
    assert english["cjk_chunks"] > 0  # the OCR tables' stray 一, 监, 词: what used to load jieba
    assert english["jieba"] is False
    assert bm25_run("ohrbench", "OHRBench", zh_min_share=0.0)["jieba"] is True  # the former rule


@pytest.mark.slow
def test_chinese_text_loads_jieba():
    assert bm25_run("crud", "CRUD")["jieba"] is True


def test_share_rule():
    english = "Net income & - & & 一 & & - & stock options 7 & 3.5% of revenue in the year"
    assert cjk_share(english) < 0.1 and cjk_share("2023年GDP增长5.2%") >= 0.1 and cjk_share("") == 0
    assert lexical_tokens(english, zh_min_share=0.1) == [
        "net", "income", "一", "stock", "options", "7", "3", "5", "of", "revenue", "in", "the", "year"]
    assert lexical_tokens("今天天气很好", zh_min_share=0.1) == ["今天天气", "很", "好"]


def test_bad_share_is_a_config_error():
    from harness.retrieval.lexical import BM25Retriever, TfidfRetriever
    from harness.types import ConfigError

    for cls in (BM25Retriever, TfidfRetriever):
        with pytest.raises(ConfigError, match="retriever.zh_min_share must be a number in"):
            cls(zh_min_share=2)
