"""Lexical retrieval on text without a word (issue 51, item 3): a question such as ``??? !!!`` or
``🙂🙂🙂`` has no term to search with, so it retrieves nothing (it is still scored, counted in
the run's metrics and warned of in one line); a chunk without a word is indexed as empty."""

import pytest

from harness.retrieval.lexical import BM25_METHODS, BM25Retriever, TfidfRetriever
from harness.types import Chunk, Query
from tests.user_folder import DOCUMENT, QUESTION, chunkbench_run, recorded, user_folder

WORDLESS = ("??? !!!", "🙂🙂🙂")


def chunk(i: int, text: str) -> Chunk:
    return Chunk(f"d#{i}", "d", text, 0, len(text))


def retrievers():
    return [*(BM25Retriever(method=m) for m in BM25_METHODS), TfidfRetriever()]


@pytest.mark.parametrize("retriever", retrievers(), ids=[*BM25_METHODS, "tfidf"])
def test_a_question_without_a_word_retrieves_nothing(retriever):
    chunks = [chunk(0, "the cat sat on the mat"), chunk(1, "🙂🙂"), chunk(2, "a dog by the door")]
    queries = [Query("q0", "where is the cat?"), *(Query(f"q{i + 1}", w) for i, w in enumerate(WORDLESS))]
    positions, scores = retriever.search(retriever.build(chunks), queries, 3)
    assert positions[0][0] == 0 and scores[0][0] > 0
    for row in positions[1:]:
        assert (row == -1).all()
    assert retriever.unsearchable(queries) == ["q1", "q2"]


@pytest.mark.parametrize("retriever", retrievers(), ids=[*BM25_METHODS, "tfidf"])
def test_chunks_without_a_word_are_indexed_as_empty(retriever):
    chunks = [chunk(0, "🙂🙂🙂"), chunk(1, "!!! ???")]
    positions, scores = retriever.search(retriever.build(chunks), [Query("q", "the cat")], 2)
    assert sorted(positions[0].tolist()) == [0, 1] and not scores.any()  # searched, nothing matches


@pytest.mark.slow
def test_the_run_counts_and_warns_the_questions_it_could_not_search(tmp_path):
    emoji_doc = {"doc_id": "d2", "text": "🙂🙂🙂 🙂🙂"}
    questions = [QUESTION, *({**QUESTION, "qid": f"w{i}", "question": w} for i, w in enumerate(WORDLESS)),
                 {"qid": "e", "question": "Where did the cat sit?", "answers": ["x"], "doc_ids": ["d2"],
                  "evidence": [{"doc_id": "d2", "text": "🙂🙂🙂"}]}]
    folder = user_folder(tmp_path, [DOCUMENT, emoji_doc], questions)
    for method in ("lucene", "okapi"):
        out = chunkbench_run(folder, f"retriever.method={method}")
        assert out.returncode == 0, out.stderr[-3000:]
        assert "Traceback" not in out.stderr
        said = out.stdout + out.stderr
        warned = [line for line in said.splitlines() if "no word to search with" in line]
        assert len(warned) == 1 and "2 of 4 questions" in warned[0] and "'w0', 'w1'" in warned[0], said[-3000:]
    runs = recorded(folder)
    assert len(runs) == 2
    for run in runs:
        metrics = run.data.metrics
        assert metrics["queries_without_terms"] == 2 and metrics["n/evidence_recall"] == 4  # scored: 0 for them
        # q1 finds its sentence, the emoji document's question its only chunk (nothing scores, all searched)
        assert metrics["evidence_recall"] == pytest.approx(0.5)
