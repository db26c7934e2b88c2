"""The run record's code state (issue 16, item 4): untracked files make a run dirty, and a
dirty run's patch carries the tracked diff and the untracked source, in a temporary git repo."""

import subprocess
from pathlib import Path

import pytest

from harness.pipeline import record
from harness.pipeline.record import git_patch, git_state


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    (r / "harness" / "chunking").mkdir(parents=True)
    (r / "harness" / "chunking" / "fixed.py").write_text("SIZE = 200\n")
    (r / ".gitignore").write_text("outputs/\n")
    git(r, "init", "-q")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "first")
    return r


def test_clean_tree_is_not_dirty_and_has_no_patch(repo):
    (repo / "outputs").mkdir()
    (repo / "outputs" / "run.log").write_text("ignored output\n")  # git-ignored: not the run's code
    state = git_state(repo)
    assert state["git_dirty"] == "False" and len(state["git_sha"]) == 40
    assert git_patch(repo) is None


def test_untracked_module_makes_the_run_dirty_and_enters_the_patch(repo, tmp_path):
    module = "class MyChunker:\n    size = 300\n"
    (repo / "harness" / "chunking" / "mine.py").write_text(module)
    assert git_state(repo)["git_dirty"] == "True"
    patch = git_patch(repo)
    assert "+++ b/harness/chunking/mine.py" in patch and "+    size = 300" in patch
    # The patch recreates the untracked file on a clean checkout of the commit.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    (tmp_path / "p.patch").write_text(patch)
    git(clone, "apply", str(tmp_path / "p.patch"))
    assert (clone / "harness" / "chunking" / "mine.py").read_text() == module


def test_patch_has_tracked_changes_and_names_what_it_left_out(repo, monkeypatch):
    monkeypatch.setattr(record, "PATCH_FILE_CAP", 1000)
    (repo / "harness" / "chunking" / "fixed.py").write_text("SIZE = 400\n")  # tracked, modified
    (repo / "weights.bin").write_bytes(b"\x00\x01\x02binary")
    (repo / "big.py").write_text("x = 1\n" * 500)  # 3000 bytes: over the (patched) cap
    (repo / ".env").write_text("OPENAI_API_KEY=sk-in-dotenv-123456\n")
    (repo / "notes.txt").write_text("no newline at the end")
    (repo / "uses_key.py").write_text("KEY = 'sk-run-secret-999999'\n")
    patch = git_patch(repo, secrets={"sk-run-secret-999999"})
    assert "-SIZE = 200" in patch and "+SIZE = 400" in patch
    assert "# untracked, left out: weights.bin (binary)" in patch
    assert "# untracked, left out: big.py (3000 bytes" in patch
    assert "# untracked, left out: .env (may hold credentials)" in patch and "sk-in-dotenv" not in patch
    assert "+no newline at the end\n\\ No newline at end of file" in patch
    assert "sk-run-secret-999999" not in patch and "KEY = '***'" in patch


def test_not_a_repository_is_unknown_not_an_error(tmp_path):
    assert git_state(tmp_path) == {"git_sha": "unknown", "git_dirty": "False"}


def test_rendered_results_and_prose_stay_out_of_the_patch(repo):
    (repo / "results").mkdir()
    (repo / "results" / "table.csv").write_text("row,ours\nfixed,0.5\n")
    (repo / "NOTES.md").write_text("a note\n")
    assert git_patch(repo) is None  # nothing but what runs write and people read
    (repo / "harness" / "chunking" / "fixed.py").write_text("SIZE = 400\n")
    patch = git_patch(repo)
    assert "+SIZE = 400" in patch and "results/table.csv" not in patch and "NOTES.md" not in patch
