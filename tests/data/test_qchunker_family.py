"""What QChunker's sets share (harness.data.qchunker_family): the bundled real QA pairs, the
qa_only rule, the corpus locator."""

import pytest

from harness.data.crud import BUNDLED as CRUD_SAMPLE
from harness.data.hchemsafety import BUNDLED as HCHEM_SAMPLE
from harness.data.hchemsafety import HChemSafety
from harness.data.multifieldqa_zh import BUNDLED as MFQA_SAMPLE
from harness.data.multifieldqa_zh import MultiFieldQAZh
from harness.data.omnieval import BUNDLED as OMNIEVAL_SAMPLE
from harness.data.omnieval import OmniEval
from harness.data.qchunker_family import CorpusLocator
from harness.pipeline.components import build_components
from harness.types import ConfigError
from tests.data.qchunker_files import read_json

CORPUS_FILE = CRUD_SAMPLE / "80000_docs" / "documents_dup_part_1_part_1.head150"

@pytest.mark.parametrize("loader, n, source", [
    (HChemSafety, 200, HCHEM_SAMPLE / "QA_test.json"),
    (OmniEval, 500, OMNIEVAL_SAMPLE / "OmniEval_qchunker_evaldata.json"),
    (MultiFieldQAZh, 200, MFQA_SAMPLE / "multifieldqa_zh_qchunker_evaldata.json"),
])
def test_bundled_qa_pairs_load_only_when_asked(loader, n, source):
    rows = read_json(source)
    ds = loader(qa_only=True).load()
    assert len(rows) == n and ds.documents == [] and ds.report["qa_only"] == 1.0
    assert [(q.question, q.answers) for q in ds.queries] == [(r["question"], (r["answer"],))
                                                            for r in rows]
    assert [q.qid for q in ds.queries] == [f"{source.stem}#{i}" for i in range(n)]
    assert all(not q.doc_ids and not q.evidence for q in ds.queries)
    assert len({q.task for q in ds.queries}) == 1
    assert any("\u4e00" <= ch <= "\u9fff" for ch in ds.queries[0].question)


@pytest.mark.parametrize("loader, needles", [
    (HChemSafety, ["HChemSafety/doc_test.json", "Robot2050/QChunker", "dataset.path=",
                   "dataset.qa_only=true"]),
    (OmniEval, ["corpus", "RUC-NLPIR/OmniEval-AutoGen-Dataset", "FlashRAG_datasets",
                "dataset.path=", "dataset.qa_only=true"]),
    (MultiFieldQAZh, ["contexts", "THUDM/LongBench", "data.zip", "dataset.source=hub",
                      "dataset.qa_only=true"]),
])
def test_bundled_retrieval_run_says_what_is_missing(loader, needles):
    for call in (lambda: loader().load(), lambda: loader().fingerprint()):
        with pytest.raises(ConfigError) as e:
            call()
        assert all(n in str(e.value) for n in needles), str(e.value)


def test_configs_need_qa_only_for_the_bundled_samples(make_cfg):
    for name in ("hchemsafety", "omnieval", "multifieldqa_zh"):
        loader = build_components(make_cfg(f"dataset={name}")).dataset
        with pytest.raises(ConfigError, match="dataset.qa_only=true"):
            loader.fingerprint()
        ds = build_components(make_cfg(f"dataset={name}", "dataset.qa_only=true")).dataset.load()
        assert ds.name == name and ds.documents == [] and ds.queries


def test_corpus_locator_ranks_the_holder_first():
    texts = [line for line in CORPUS_FILE.read_text(encoding="utf-8").split("\n") if line]
    loc = CorpusLocator(texts)
    for i in (3, 88, 140):
        passage = texts[i][40:400]
        assert loc.candidates(passage)[0] == i
    assert loc.candidates(texts[5][30:50]) == [5]  # short: plain containment
    assert loc.candidates("完全不相干的内容" * 20) == []
