"""The table file's shape (harness.report.tables.schema): one validation, one line per mistake."""

from __future__ import annotations

import pytest

from harness.report.tables import schema
from harness.report.tables.spec import TABLES
from harness.types import ConfigError

BASE = ("title: T\nsource: S\nnumbers: n.csv\nrows: {fixed: {overrides: [chunker=fixed]}}\ngroups: {g: {}}\n"
        "metrics: {erec: {metric: evidence_recall}}\n")


def read(tmp_path, text: str):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    return schema.read(path, "table demo/t")


def test_a_valid_file_comes_back_with_every_default_and_its_interpolations_as_written(tmp_path):
    raw = read(tmp_path, BASE.replace("chunker=fixed", '"dataset.path=${data_dir}/x"') + "scale:\n  smoke:\n"
               "    rows: {fixed: {add: [dataset.limit_docs=1]}}\n")
    assert raw["rows"]["fixed"] == {"label": None, "overrides": ["dataset.path=${data_dir}/x"], "sweep": None,
                                    "missing": None, "metrics": {}}
    assert raw["sweep_select"] == "mean" and raw["spread"] == "ci" and raw["x"] is None
    assert schema.set_keys(raw["scale"]["smoke"]["rows"]["fixed"]) == {"add": ["dataset.limit_docs=1"]}


@pytest.mark.parametrize("extra, line", [
    ("colour: red\n", "table demo/t: keys are challenge, correlation, groups, metrics, note, numbers, pairwise, "
                      "paper, rows, scale, select_by, sensitivity, series, shared, source, spread, sweep_select, title, x, got 'colour'"),
    ("spread: wide\n", "table demo/t.spread: Invalid value 'wide', expected one of [ci, std]"),
    ("scale:\n  tiny: {}\n", "table demo/t.scale.tiny: Key 'tiny' is incompatible with the enum type 'Scale'"),
    ("x: {param: chunker.size, values: [1], nmes: [a]}\n", "table demo/t.x: keys are label, names, param, values, "
                                                           "got 'nmes'"),
    ("scale:\n  smoke:\n    groups: {g: {sweep: {}}}\n", "table demo/t.scale.smoke.groups.g: keys are add, label, "
                                                          "overrides, got 'sweep'"),
])
def test_a_wrong_key_type_or_value_is_one_line_naming_its_path(tmp_path, extra, line):
    with pytest.raises(ConfigError) as e:
        read(tmp_path, BASE + extra)
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_required_keys_left_unset_are_named(tmp_path):
    with pytest.raises(ConfigError, match=r"table demo/t: missing keys \['metrics.erec.metric', 'title'\]"):
        read(tmp_path, BASE.replace("title: T\n", "").replace("{metric: evidence_recall}", "{label: E}"))
    with pytest.raises(ConfigError, match=r"table demo/t.metrics.erec.factor: Value 'abc'"):
        read(tmp_path, BASE.replace("{metric: evidence_recall}", "{metric: e, factor: abc}"))


def test_every_shipped_table_file_has_the_shape():
    paths = sorted(TABLES.rglob("*.yaml"))
    assert len(paths) >= 34 and all(schema.read(p, p.stem)["rows"] for p in paths)


@pytest.mark.parametrize("text, problem", [
    ("title: x\n  bad: [\n", "not valid YAML at line 2, column 6: mapping values are not allowed here"),
    ("title: [unclosed\n", "not valid YAML at line 2, column 1: expected ',' or ']', but got '<stream end>'"),
    ("\ttitle: x\n", "not valid YAML at line 1, column 1: found character '\\t' that cannot start any token"),
    ("- title: x\n- rows: {}\n", "a table file is a mapping (title: ..., rows: ...), got a list"),
    ("42\n", "a table file is a mapping (title: ..., rows: ...), got the value '42'"),
    ("just a sentence\n", "a table file is a mapping (title: ..., rows: ...), got the value 'just a sentence'"),
])
def test_a_file_that_is_not_a_yaml_mapping_is_one_line_naming_it(tmp_path, text, problem):
    with pytest.raises(ConfigError, match=r"^table demo/t \(.*t.yaml\): ") as e:
        read(tmp_path, text)
    assert str(e.value).endswith(problem) and "\n" not in str(e.value)

