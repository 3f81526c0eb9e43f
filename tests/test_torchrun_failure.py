"""A failed torchrun launch says why a rank died: the rank's own error, not only torchrun's summary of it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from drafters.errors import TracedraftError
from workers.torchrun import failure_excerpt, run_torchrun

TORCHRUN_END = """Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
  File "/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 1032, in <module>
    main()
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
=======================================================
drafters.train FAILED
""" + "  exitcode  : -6 (pid: 14383)  (SIGABRT)\n" * 60


def test_a_launch_whose_ranks_fail_quotes_their_error_and_only_this_launch(tmp_path):
    log = tmp_path / "torchrun.log"
    log.write_text("[rank0]: Traceback (most recent call last):\n[rank0]: OLD_LAUNCH_FAILURE\n")
    with pytest.raises(TracedraftError) as err:
        run_torchrun(2, ["--target", str(tmp_path / "no-such-target"), "--train", str(tmp_path / "t.safetensors"),
                         "--out", str(tmp_path / "out")],
                     log_path=log, progress=lambda report: None, should_stop=lambda: False)
    message = str(err.value)
    assert err.value.code == "training_failed" and err.value.where == str(log)
    assert "target_not_found" in message  # the rank's own error, from its traceback
    assert "OLD_LAUNCH_FAILURE" not in message  # an earlier launch appended to the same log
    assert "OLD_LAUNCH_FAILURE" in log.read_text()  # and the log keeps it


def test_an_aborting_rank_is_quoted_with_its_python_stack_before_torchruns_summary():
    # what a rank aborting under PYTHONFAULTHANDLER=1 (as run_torchrun launches them) really writes
    aborted = subprocess.run([sys.executable, "-c", "import os\ndef save_step():\n    os.abort()\nsave_step()"],
                             capture_output=True, text=True, check=False,
                             env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    assert aborted.returncode != 0 and "Fatal Python error" in aborted.stderr
    log = "Loading weights: 100%\n" + aborted.stderr + TORCHRUN_END
    excerpt = failure_excerpt(log, chars=800)
    assert excerpt.startswith("Fatal Python error: Aborted")
    assert "save_step" in excerpt  # the Python stack of the rank that aborted
    assert excerpt.endswith(log[-800:])  # and torchrun's summary after it
    assert len(excerpt) <= 2 * 800 + 20


def test_a_log_with_only_torchruns_traceback_quotes_its_end():
    assert failure_excerpt(TORCHRUN_END, chars=300) == TORCHRUN_END[-300:]
