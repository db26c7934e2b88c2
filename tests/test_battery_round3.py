"""The fresh hostile battery of issue 51 (143 cases written without reading the fixes): the 11 it
found ending badly, each now one line before any work, or the right behaviour. Each test names the
case and what it did before."""

from __future__ import annotations

import argparse
import re
import sys

import pytest

import harness
from harness.types import ConfigError


def test_a_challenger_argument_named_like_a_secret_is_masked_in_the_report_and_its_folder(tmp_path, monkeypatch):
    """api_key_in_challenge_arg: `challenge mine.py:Mine chunker.token=sk-...` wrote the key into the
    report's folder name, README and versions.json."""
    from harness.report.challenge import challenger, versions

    key = "sk-PLANTEDsecret9f3a7c21abcdef"
    file = tmp_path / "mine_r3.py"
    file.write_text("from harness.chunking.fixed import FixedSizeChunker\n\n"
                    "class Mine(FixedSizeChunker):\n"
                    "    def __init__(self, size: int = 10, token: str = '', note: str = ''):\n"
                    "        super().__init__(size=size)\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        ch = challenger.parse(f"{file}:Mine", [f"chunker.token={key}", f"chunker.note=see {key}"])
    finally:
        sys.modules.pop("mine_r3", None)
    shown = [ch.arguments_text(), versions.version(ch, "smoke", "own_data").folder,
             *(challenger.shown_override(o) for o in ch.overrides)]
    assert not any(key in s for s in shown), shown
    assert "token=***" in ch.arguments_text() and "note=see ***" in ch.arguments_text()
    assert f"++chunker.token={key}" in ch.overrides  # the run itself gets the value (its record masks it)


def test_a_challenger_file_that_does_not_compile_is_one_line(tmp_path):
    """challenge_syntax_error: importlib's traceback ending in SyntaxError, exit 1."""
    from harness.report.challenge import challenger

    (tmp_path / "bad_r3.py").write_text("class Mine(:\n    pass\n")
    with pytest.raises(ConfigError, match=r"^challenger .*bad_r3.py:Mine: .*bad_r3.py, line 1: invalid syntax"):
        challenger.parse(f"{tmp_path / 'bad_r3.py'}:Mine")
    sys.modules.pop("bad_r3", None)


def test_a_suite_file_that_is_not_yaml_is_one_line(tmp_path):
    """leaderboard_suite_garbage: yaml.parser.ParserError traceback."""
    from harness.report.leaderboard import suite

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncontenders: [a: b: c]\n")
    with pytest.raises(ConfigError, match=rf"^suite bad: {bad} is not readable YAML \("):
        suite.load(bad)


@pytest.mark.parametrize("argv, message", [
    (["tables", "validate", "--tables", ",,"], "--tables ',,' names no table"),  # tables_validate_empty_glob
    (["tables", "run", "--tables", "lgmgc/table1", "--only", "zzz|zzz"],      # tables_run_only_nomatch
     r"--only zzz\|zzz: no point of the chosen tables at smoke scale has a matching row\|group \(e.g. "),
])
def test_a_selection_that_selects_nothing_is_one_line(argv, message, capsys):
    """Before: exit 0, "0 table file(s) valid" / "0 finished, 0 failed"."""
    from harness import cli

    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("chunkbench: error: ") and re.search(message, err[0])


def test_a_sweep_without_a_point_is_one_line():
    """multirun_bad_range: `-m chunker.size=range(10,0)` printed "Launching 0 jobs locally", exit 0."""
    from harness.pipeline.sweep import check_sweep_points

    with pytest.raises(ConfigError, match=r"^the sweep over chunker.size has no point \(an empty range or list\); "
                                          r"no job was run$"):
        check_sweep_points(["chunker.size=range(10,0)", "retriever=bm25"])


def test_challenge_takes_its_overrides_after_an_option_too():
    """options_after_overrides: `challenge mine.py:Mine --name m1 dataset=local ...` was refused as
    "unrecognized arguments"."""
    from harness.cli import parse

    args = parse(["challenge", "mine.py:Mine", "--name", "m1", "dataset=local", "dataset.path=D", "chunker.size=5"])
    assert (args.chunker, args.name, args.args) == ("mine.py:Mine", "m1", ["dataset=local", "dataset.path=D",
                                                                           "chunker.size=5"])
    assert isinstance(args, argparse.Namespace)


@pytest.mark.parametrize("kwargs, message", [
    ({"record": "no"}, r"^evaluate: record must be True, False or None, got str 'no'$"),
    ({"log": 1}, r"^evaluate: log must be True or False, got int 1$"),
])
def test_evaluate_refuses_a_flag_that_is_not_one(kwargs, message):
    """api_record_bogus_type: record='no' (truthy) ran and recorded without a word."""
    with pytest.raises(ConfigError, match=message):
        harness.evaluate(["retriever=bm25"], **kwargs)


@pytest.mark.parametrize("options, message", [
    (["--chunkers", "nosuch1,nosuch2"], r"--chunkers: no chunker nosuch1, nosuch2"),
    (["--chunkers", "fixed"], r"--chunkers: at least two to rank"),
    (["--resamples", "0"], r"--resamples: a number of bootstrap resamples >= 1, got 0"),
])
def test_agreement_checks_its_options_before_the_question_writer_runs(tmp_path, options, message, capsys):
    """agreement_no_dataset_overrides / agreement_resamples_zero: each still writing questions with the
    bundled model after 120 s (about 5 s a token)."""
    from harness import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["agreement", "--out", str(tmp_path / "agr"), *options, "retriever=bm25"])
    assert e.value.code == 2 and re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "agr").exists()
