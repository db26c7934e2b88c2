"""A run records whatever the terminal does (issue 51, item 4): a reader that leaves
(``chunkbench run ... | head -c 10``), a full device and a terminal that cannot encode the summary
table never end the run; it completes, is recorded and exits 0."""

import io
import subprocess

import pytest

from harness.streams import GuardedStream
from tests.conftest import REPO
from tests.test_cli import ENV
from tests.user_folder import chunkbench_run, recorded, user_command, user_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return user_folder(tmp_path_factory.mktemp("streams"))


@pytest.mark.slow
def test_a_reader_that_leaves_does_not_end_the_run(folder):
    """``| head -c 10``: the pipe closes after the first bytes of the first stage line."""
    before = len(recorded(folder))
    run = subprocess.Popen(user_command(folder, "chunker.size=64"), cwd=folder.parent, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env={**ENV, "PYTHONPATH": str(REPO)})
    head = run.stdout.read(10)
    run.stdout.close()
    err = run.stderr.read().decode()
    assert run.wait(timeout=600) == 0, err[-3000:]
    assert head == b"[load] com"
    assert "Traceback" not in err and "Error executing job" not in err and "Exception ignored" not in err, err
    assert err.count("chunkbench: warning: stdout") == 1, err  # said once, on the stream that still works
    assert len(recorded(folder)) == before + 1


@pytest.mark.slow
def test_a_full_device_does_not_end_the_run(folder):
    before = len(recorded(folder))
    with open("/dev/full", "w") as full:
        out = chunkbench_run(folder, "chunker.size=65", stdout=full, stderr=subprocess.PIPE, capture_output=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and "No space left on device" in out.stderr
    assert len(recorded(folder)) == before + 1


@pytest.mark.slow
def test_a_terminal_that_cannot_encode_the_table_still_shows_it(folder):
    before = len(recorded(folder))
    out = chunkbench_run(folder, "chunker.size=66", env={"PYTHONIOENCODING": "ascii"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and "evidence_recall" in out.stdout
    assert "n/a?n/a" in out.stdout  # the 95% CI's en dash, replaced
    assert len(recorded(folder)) == before + 1


def test_a_guarded_stream_drops_what_it_cannot_write():
    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    told = io.StringIO()
    stream = GuardedStream(Closed(), "stdout", other=lambda: told)
    assert stream.write("one line\n") == len("one line\n")
    stream.write("another\n")
    stream.flush()
    assert told.getvalue().count("\n") == 1 and "stdout" in told.getvalue() and "Broken pipe" in told.getvalue()


def test_a_stream_full_for_now_is_not_given_up():
    class Busy(io.StringIO):
        calls = 0

        def write(self, text):
            self.calls += 1
            if self.calls == 1:
                raise BlockingIOError(11, "Resource temporarily unavailable")
            return super().write(text)

    told, busy = io.StringIO(), Busy()
    stream = GuardedStream(busy, "stdout", other=lambda: told)
    stream.write("lost\n")
    stream.write("kept\n")
    assert busy.getvalue() == "kept\n" and told.getvalue() == "" and stream.failed is None
