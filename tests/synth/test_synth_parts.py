"""The parts of ``chunkbench synth``: where slices fall, how a reply is read, the filters."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from harness.synth.filters import not_duplicates, relevant
from harness.synth.proposals import Proposal, read_reply
from harness.synth.slices import plan_slices
from harness.types import ConfigError, Document

DOCS = [Document("a", "x" * 10_000), Document("b", "y" * 30_000), Document("c", "z" * 500)]


def test_stratified_slices_cover_every_document_by_length_and_every_part():
    slices = plan_slices(DOCS, 40, 4000, "stratified", seed=0)
    per_doc = Counter(s.doc_id for s in slices)
    assert per_doc["b"] > per_doc["a"] >= 1  # in proportion to length
    starts = sorted(s.start for s in slices if s.doc_id == "b")
    assert starts[0] < 4000 and starts[-1] > 20_000  # not all from the first pages
    for s in slices:
        text = next(d.text for d in DOCS if d.doc_id == s.doc_id)
        assert 0 <= s.start < s.end <= len(text) and s.end - s.start == min(4000, len(text))
    assert plan_slices(DOCS, 40, 4000, "stratified", seed=0) == slices  # the seed decides
    assert plan_slices(DOCS, 40, 4000, "stratified", seed=1) != slices


def test_random_spread_is_the_reports_draw_and_a_bad_spread_is_named():
    assert len(plan_slices(DOCS, 5, 4000, "random", seed=0)) == 5
    with pytest.raises(ConfigError, match="synth.spread"):
        plan_slices(DOCS, 5, 4000, "everywhere", seed=0)


@pytest.mark.parametrize("reply, expected", [
    ('{"question": "Who?", "references": [" A b. ", "C d."]}', Proposal("Who?", ("A b.", "C d."))),
    ("<think>hmm</think>{'question': 'Who?', 'references': ['A b.']}", Proposal("Who?", ("A b.",))),
    ('{"question": "Who?", "references": ["A", "A"]}', Proposal("Who?", ("A",))),
    ("no object here", "not_json"),
    ('{"question": "Who?", "references": ["A', "malformed_json"),
    ('{"references": ["A"]}', "no_question"),
    ('{"question": "Who?", "references": []}', "no_excerpts"),
    ('{"question": "Who?", "references": ["1", "2", "3", "4", "5", "6"]}', "too_many_excerpts"),
    ('{"question": "Who and when?", "references": ["A"]}', "compound_question"),
    ('{"question": "Who was at Anderson Hall?", "references": ["A"]}', Proposal("Who was at Anderson Hall?", ("A",))),
])
def test_a_reply_is_a_proposal_or_its_rejection_reason(reply, expected):
    assert read_reply(reply, max_excerpts=5, reject_compound=True) == expected


def test_compound_questions_may_be_allowed():
    assert read_reply('{"question": "Who and when?", "references": ["A"]}', 5, reject_compound=False) \
        == Proposal("Who and when?", ("A",))


class Vectors:
    """An embedder whose vectors are given per text."""

    def __init__(self, table):
        self.table = table

    def encode(self, texts, desc=""):
        rows = np.array([self.table[t] for t in texts], dtype=float)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_relevance_drops_a_question_unlike_any_of_its_excerpts():
    e = Vectors({"q1": [1, 0], "q2": [1, 0], "near": [1, 0.2], "far": [0, 1]})
    assert relevant(e, ["q1", "q2"], [["near"], ["near", "far"]], 0.40) == [True, False]


def test_duplicates_keep_the_first_of_a_near_identical_pair():
    e = Vectors({"a": [1, 0], "a2": [1, 0.1], "b": [0, 1]})
    assert not_duplicates(e, ["a", "a2", "b"], 0.70) == [True, False, True]
