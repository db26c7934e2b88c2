"""A paper's protocol (configs/protocols/): the authors' code's settings, applied to every grid point
of the tables that name it and checked at full scale on every point, whatever key drifts."""

import re

import pytest

from harness import cli
from harness.pipeline.roles import roles
from harness.report.tables import checks, grid, protocol, spec
from harness.types import ConfigError

from tests.report.test_tables import write_table

USERS = [s for s in spec.all_specs() if s.paper is not None and s.paper.protocol is not None]
# a value other than the protocol's, for each key it sets (what a drifting table or --set would give)
OTHER = {"truncate": "stop", "reader": "bundled", "hichunk_words": "words", "\\n": "\\n\\s*\\n", "# ": "''",
         "words_x1.2": "tokens", "crud_quest_answer": "default"}


def drifted(value) -> str:
    if isinstance(value, bool):
        return str(not value).lower()
    if isinstance(value, (int, float)):
        return str(value + 1)
    return OTHER[value]


def test_the_hichunk_and_qchunker_tables_name_their_protocols():
    by_paper = {s.id.split("/")[0] for s in USERS}
    assert by_paper == {"hichunk", "qchunker"}
    assert all(s.paper.protocol.name == s.id.split("/")[0] for s in USERS)
    assert len([s for s in USERS if s.id.startswith("hichunk/")]) == 9


def test_a_setting_applies_where_its_group_choices_hold():
    hichunk = protocol.parse_protocol("hichunk", "t")
    lc = {s.key for s in hichunk.applying(("chunker=lumber", "responder=llm"))}
    assert {"chunker.paragraph_pattern", "chunker.threshold_unit", "context.overflow", "context.tokenizer"} <= lc
    assert "chunker.unit" not in lc and "roles.chunker.llm.thinking" not in lc
    hc = {s.key for s in hichunk.applying(("chunker=hichunk", "llm@roles.chunker.llm=vllm", "context=auto_merge"))}
    assert {"chunker.unit", "roles.chunker.llm.thinking"} <= hc and "context.overflow" not in hc  # auto-merge cuts anyway
    # the config's default choices count (context: budget; responder: none, so no reader's tokens)
    assert {s.key for s in hichunk.applying(("chunker=sentence",))} == {"context.overflow", "chunker.unit"}
    assert protocol.group_choices(("chunker=lumber", "chunker=hichunk"), {"chunker"}) == {"chunker": "hichunk"}


def test_a_grid_point_runs_the_protocol_before_the_tables_own_overrides():
    table4 = spec.select("hichunk/table4")[0]
    point = next(p for p in table4.runs("full") if p.key == "llama_lc|qasper")
    cfg = grid.compose(table4, point, "full")
    assert (cfg.context.overflow, cfg.context.tokenizer) == ("truncate", "reader")
    assert (cfg.chunker.paragraph_pattern, cfg.chunker.strip_marks, cfg.chunker.threshold_unit) == ("\\n", "# ", "words_x1.2")
    hc = grid.compose(table4, next(p for p in table4.runs("full") if p.key == "qwen8_hc200|qasper"), "full")
    assert hc.chunker.unit == "hichunk_words" and hc.roles.chunker.llm.thinking is False
    # a table's own override of a protocol key wins (and validate calls it undeclared: below)
    assert grid.compose(table4, point, "full", ["context.overflow=stop"]).context.overflow == "stop"


@pytest.mark.parametrize("table", USERS, ids=lambda s: s.id)
def test_a_planted_drift_in_any_protocol_key_is_undeclared(table):
    """Each setting of the protocol, drifted on the first full-scale point it applies to, is a
    finding naming the key that no deviation covers (what fails `tables validate`)."""
    points = [p for p in table.runs("full") if not p.skip]
    keys = 0
    for setting in table.paper.protocol.settings:
        point = next((p for p in points if setting in table.paper.protocol.applying(p.overrides)), None)
        if point is None:
            continue
        keys += 1
        assert grid.compose(table, point, "full") is not None
        extra = (f"{setting.key}={drifted(setting.value)}",)
        cfg = grid.compose(table, point, "full", extra)
        found = table.paper.check(point.row, point.group, roles(cfg), {}, cfg, (*point.overrides, *extra))
        undeclared = [f for f in found if not f.declared and f.subject == setting.key]
        assert undeclared and "the authors' code" in undeclared[0].text, (setting.key, point.key)
    assert keys >= 1


def test_validate_names_the_key_a_set_moves(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["tables", "validate", "--tables", "hichunk/figure4", "--scale", "full",
                  "--set", "context.tokenizer=bundled"])
    assert e.value.code == 2
    assert "undeclared: context.tokenizer: 'bundled', the paper 'meta-llama/Llama-3.1-8B-Instruct'" in capsys.readouterr().out


def test_explain_lists_the_protocol_its_deviations_and_the_unstated_choices(capsys):
    cli.main(["tables", "explain", "--tables", "hichunk/figureA1", "--scale", "full"])
    out = capsys.readouterr().out
    lc = out[out.index("lc|hicbench_t1|context.budget=2048"):].split("\nhc200|")[0]
    assert "authors' code: chunker.threshold_unit = 'words_x1.2' [lumber_chunk.py" in lc
    assert "deviation: roles.chunker.llm: lumber_chunk.py prompts DeepSeek-R1-0528" in lc
    assert "unstated, chosen here: context.tokenizer = 'meta-llama/Llama-3.1-8B-Instruct': a retrieval-only figure" in lc


BODY = """
title: Demo
source: a test
numbers: NUMBERS
shared: [retriever=bm25, responder=none]
rows:
  fixed: {label: Fixed, overrides: [chunker=sentence]}
groups:
  ohr: {label: OHR, overrides: [dataset=ohrbench]}
metrics:
  erec: {metric: evidence_recall, label: ERec}
paper:
  protocol: PROTOCOL
"""


def test_a_table_naming_no_such_protocol_fails_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"paper.protocol: 'nope' is not a protocol \(configs/protocols/: hichunk, qchunker\)"):
        write_table(tmp_path, BODY.replace("PROTOCOL", "nope"))
    t = write_table(tmp_path / "ok", BODY.replace("PROTOCOL", "hichunk"))
    assert t.runs("smoke")[0].overrides[:2] == ("context.overflow=truncate", "chunker.unit=hichunk_words")


def test_a_protocol_file_without_a_cite_is_refused(tmp_path, monkeypatch):
    (tmp_path / "bad.yaml").write_text("source: x\nsettings:\n  - {key: context.budget, value: 1}\n")
    monkeypatch.setattr(protocol, "PROTOCOLS", tmp_path)
    protocol._load.cache_clear()
    with pytest.raises(ConfigError, match=r"bad.yaml: settings\[0\]: needs key, value and cite"):
        protocol.parse_protocol("bad", "t")
    protocol._load.cache_clear()


@pytest.mark.parametrize("value, written", [("\\n", "'\\n'"), ("# ", "'# '"), (0.1, "0.1"), (False, "false"),
                                            ("truncate", "truncate"), ("it's", "'it\\'s'")])
def test_a_setting_is_written_as_hydra_reads_it(value, written):
    assert protocol._hydra_value(value) == written


def test_hichunk_words_count_as_the_authors_splitter(tmp_path):
    from harness.text import Tokenizer

    def authors_rule(text):  # split at each non-word character, then each CJK ideograph on its own
        out = []
        for piece in re.split(r"\W", text.lower()):
            out += [w for w in re.split(r"([\u4e00-\u9fa5])", piece) if w.strip()]
        return out

    words = Tokenizer("hichunk_words")
    for text in ["Kevin P. Rojek, the F.B.I.'s agent (2019) -- state-of-the-art!", "混合文本 with 中文，and_English 42",
                 "", "   ", "e-mail: a@b.c"]:
        assert words.count(text) == len(authors_rule(text)), text
        assert [text[s:e].lower() for s, e in words.spans(text)] == authors_rule(text)
    assert Tokenizer("words").count("state-of-the-art!") == 1 and words.count("state-of-the-art!") == 4
