"""``chunkbench agreement``: a synthetic set for a labelled dataset's documents, the chunkers run on
both question sets, Kendall's tau with its bootstrap interval. The question writer is a scripted
server that quotes a sentence of each slice it is shown (every excerpt verbatim)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from harness import cli
from harness.synth.agreement import agreement
from harness.types import ConfigError
from tests.http_fake import JSONHandler, LocalServer

TEXT = re.compile(r'^Text: "(.*?)"\n\n(?:Questions already used|Response:)', re.S)


class QuotingServer:
    """Answers each slice with its longest sentence as the excerpt and a question on its words."""

    def __init__(self):
        class Handler(JSONHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = TEXT.match(body["messages"][-1]["content"]).group(1)
                sentence = max((s.strip() for s in re.split(r"(?<=[.!?])\s", text)[1:-1]), key=len)
                words = [w for w in re.findall(r"[A-Za-z]+", sentence) if w.lower() != "and"][:8]
                content = json.dumps({"question": f"What does the text say about {' '.join(words)}?",
                                      "references": [sentence]})
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                              "finish_reason": "stop"}]})

        self.local = LocalServer(Handler)
        self.url = self.local.url

    def close(self):
        self.local.close()


@pytest.mark.slow  # six pipeline runs and the filters' embedder (about a minute here)
def test_agreement_runs_end_to_end_and_reports_tau_with_its_interval(tmp_path, capsys):
    server = QuotingServer()
    try:
        cli.main(["agreement", "--out", str(tmp_path / "check"), "--resamples", "200", "dataset=chroma",
                  "dataset.corpora=[state_of_the_union]", "retriever=bm25", f"cache.dir={tmp_path / 'cache'}",
                  "synth.questions=12", "llm@roles.synth.llm=openai", "roles.synth.llm.model=scripted",
                  f"roles.synth.llm.base_url={server.url}", "roles.synth.llm.max_retries=0"])
    finally:
        server.close()
    printed = capsys.readouterr().out
    record = json.loads((tmp_path / "check" / "agreement.json").read_text())
    assert record["chunkers"] == ["fixed", "sentence", "recursive"] and record["n_own"] == 76
    assert record["n_synthetic"] == json.loads((tmp_path / "check" / "synthetic" / "manifest.json").read_text())["kept"]
    low, high = record["interval"]
    assert -1 <= low <= high <= 1
    assert "Kendall's tau between the chunker rankings on evidence_recall" in printed
    for name, own, syn in zip(record["chunkers"], record["own"], record["synthetic"]):
        assert f"{name:<24} {own:>8.4f} {syn:>10.4f} {syn - own:>+11.4f}" in printed


def test_tau_is_one_for_the_same_order_and_its_interval_widens_with_noise():
    rng = np.random.default_rng(0)
    own = np.array([[0.2] * 50, [0.5] * 50, [0.8] * 50])
    same = agreement(["a", "b", "c"], own, own + 0.05, resamples=200)
    assert same.tau == 1.0 and same.interval == (1.0, 1.0)
    noisy = agreement(["a", "b", "c"], own, rng.uniform(0, 1, (3, 20)), resamples=200)
    assert noisy.interval[0] < noisy.interval[1]


def test_a_ranking_needs_two_chunkers_and_questions():
    with pytest.raises(ConfigError, match="two chunkers"):
        agreement(["a"], np.ones((1, 3)), np.ones((1, 3)))
    with pytest.raises(ConfigError, match="no questions"):
        agreement(["a", "b"], np.ones((2, 3)), np.ones((2, 0)))


def test_with_no_synthetic_question_it_says_there_is_nothing_to_rank(tmp_path, capsys):
    from tests.synth.test_synth_cli import ScriptedServer

    server = ScriptedServer(script=[("Sure! Here is a good question about the speech.", "not_json")])
    try:
        cli.main(["agreement", "--out", str(tmp_path / "check"), "dataset=chroma",
                  "dataset.corpora=[state_of_the_union]", "retriever=bm25", f"cache.dir={tmp_path / 'cache'}",
                  "synth.questions=2", "llm@roles.synth.llm=openai", "roles.synth.llm.model=scripted",
                  f"roles.synth.llm.base_url={server.url}", "roles.synth.llm.max_retries=0"])
    finally:
        server.close()
    printed = capsys.readouterr().out
    assert printed.startswith("0 of 2 questions kept") and "no agreement to report" in printed
    assert (tmp_path / "check" / "synthetic" / "manifest.json").exists()
    assert not (tmp_path / "check" / "agreement.json").exists()
