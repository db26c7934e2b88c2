"""A table file that is no YAML breaks only itself, and `tables render` ends a bad --out, or a
write that fails, in one line (exit 2) with what was written before it kept."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.report.tables.spec import TABLES
from harness.types import ConfigError
from tests.test_cli import ENV


BROKEN = "title: x\n  bad: [\n"


@pytest.fixture
def tables(tmp_path, monkeypatch):
    """lgmgc/table1 beside a table file that is no YAML (zz/broken)."""
    from harness.report.tables import spec

    (tmp_path / "lgmgc").mkdir()
    (tmp_path / "lgmgc" / "table1.yaml").write_text((TABLES / "lgmgc" / "table1.yaml").read_text())
    (tmp_path / "zz").mkdir()
    (tmp_path / "zz" / "broken.yaml").write_text(BROKEN)
    monkeypatch.setattr(spec, "TABLES", tmp_path)
    return tmp_path



def test_a_broken_table_file_breaks_only_itself(tables):
    from harness.report.tables import spec

    assert [s.id for s in spec.select("lgmgc/table1")] == ["lgmgc/table1"]
    for chosen in ("zz/broken", "all", "*"):  # asked for, it is an error
        with pytest.raises(ConfigError, match=r"^table zz/broken \(.*broken.yaml\): not valid YAML at line 2"):
            spec.select(chosen)
    skipped = []
    assert [s.id for s in spec.all_specs(skip_broken=skipped.append)] == ["lgmgc/table1"]
    assert len(skipped) == 1 and skipped[0].startswith("table zz/broken")
    assert spec.table_ids() == ["lgmgc/table1", "zz/broken"]


# `chunkbench tables render` over the tables above: the table files' folder is the one thing patched
DRIVER = ("import sys; from pathlib import Path; from harness.report.tables import spec; "
          "spec.TABLES = Path(sys.argv[1]); from harness import cli; cli.main(sys.argv[2:])")


@pytest.fixture
def render(tables, tmp_path_factory):
    """``tables render ARGS`` against the store s.db (made by the test that needs one: MLflow
    takes seconds to make it): (exit code, stdout, stderr)."""
    work = tmp_path_factory.mktemp("work")

    def run(*args):
        p = subprocess.run([sys.executable, "-c", DRIVER, str(tables), "tables", "render",
                            "--uri", f"sqlite:///{work / 's.db'}", *args],
                           cwd=work, env=ENV, text=True, capture_output=True, timeout=300)
        return p.returncode, p.stdout, p.stderr
    run.work = work
    return run


def test_render_leaves_a_broken_table_out_of_the_index_in_one_line(render):
    from harness.pipeline.store import open_store

    open_store(f"sqlite:///{render.work / 's.db'}")
    code, out, err = render("--tables", "lgmgc/table1", "--out", "out")
    assert code == 0, err[-3000:]
    assert err.startswith("chunkbench: warning: table zz/broken (") and err.count("\n") == 1, err
    assert err.rstrip().endswith("not valid YAML at line 2, column 6: mapping values are not allowed here; "
                                 "left out of the index"), err
    assert (render.work / "out" / "lgmgc" / "table1.md").is_file() and (render.work / "out" / "index.json").is_file()


def test_render_of_every_table_names_the_broken_one(render):
    code, _, err = render("--out", "out")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err[-3000:]
    assert err.startswith("chunkbench: error: table zz/broken (") and "not valid YAML at line 2" in err
    assert not (render.work / "out").exists()


@pytest.mark.parametrize("out, why", [("a-file", "Not a directory"), ("a-file/x", "Not a directory"),
                                      ("/proc/nope", "No such file or directory")])
def test_render_to_a_folder_that_cannot_be_written_is_one_line(render, out, why):
    (render.work / "a-file").write_text("kept")
    code, stdout, err = render("--tables", "lgmgc/table1", "--out", out)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err[-3000:]
    assert err == f"chunkbench: error: --out={out} cannot be written ({why}): give a folder this user can write " \
                  f"(made if missing)\n"
    assert stdout == "" and (render.work / "a-file").read_text() == "kept"


def test_a_write_that_fails_midway_is_one_line_and_keeps_what_was_written(tables, tmp_path_factory, monkeypatch,
                                                                          capsys):
    from harness import cli
    from harness.pipeline.store import open_store
    from harness.report.tables import index

    (tables / "zz" / "broken.yaml").unlink()  # this test is about the write alone
    work = tmp_path_factory.mktemp("work")
    open_store(f"sqlite:///{work / 's.db'}")

    def disk_full(*args, **kw):
        raise OSError(28, "No space left on device", str(work / "out" / "index.json"))

    monkeypatch.setattr(index, "write", disk_full)
    with pytest.raises(SystemExit) as e:
        cli.main(["tables", "render", "--tables", "lgmgc/table1", "--out", str(work / "out"),
                  "--uri", f"sqlite:///{work / 's.db'}"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"chunkbench: error: writing {work / 'out' / 'index.json'} failed (No space left on device)")
    assert (work / "out" / "lgmgc" / "table1.md").is_file()


def test_tables_that_do_not_compose_under_the_set_are_left_out_of_the_index(tmp_path, monkeypatch, capsys):
    """`tables render --tables X --set retriever=bm25`: X renders; the index's other tables are built
    under the same overrides, and one whose points cannot take them (MC-indexing's TF-IDF rows set
    retriever.sublinear_tf: "Could not override" once the record holds a run of theirs) is left out
    of the index in one warning line, not a failed render."""
    from harness import cli
    from harness.pipeline.store import open_store
    from harness.report.tables import render
    from harness.types import ConfigError

    build = render.build

    def composes_only_lgmgc(s, *args):
        if s.id.startswith("mc_indexing/"):
            raise ConfigError(f"table {s.id} (tfidf_mc|nq): Could not override 'retriever.sublinear_tf'.")
        return build(s, *args)

    monkeypatch.setattr(render, "build", composes_only_lgmgc)
    open_store(f"sqlite:///{tmp_path / 's.db'}")
    cli.main(["tables", "render", "--tables", "lgmgc/table1", "--set", "retriever=bm25", "--out", str(tmp_path / "out"),
              "--uri", f"sqlite:///{tmp_path / 's.db'}"])
    said = capsys.readouterr()
    warned = [line for line in said.err.splitlines() if line.startswith("chunkbench: warning: table mc_indexing/")]
    assert warned and all(line.endswith("'retriever.sublinear_tf'; left out of the index") for line in warned)
    assert (tmp_path / "out" / "lgmgc" / "table1.md").is_file() and (tmp_path / "out" / "README.md").is_file()
