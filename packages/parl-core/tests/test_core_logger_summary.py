"""parl_core.utils.logger and summary: file logging, lazy tensorboard writer, scalars read back."""

import logging
import os
import subprocess
import sys

import numpy as np
import pytest

from parl_core.utils import logger, summary


@pytest.fixture
def clean_logger():
    """A test starts and ends without a logger dir or summary logdir (another test of the same process, e.g. a run
    harness's, may have set them)."""

    def reset():
        summary.close()
        summary._logdir = None
        summary._purge_step = None
        if logger._file_handler is not None:
            logging.getLogger("parl").removeHandler(logger._file_handler)
            logger._file_handler.close()
            logger._file_handler = None
        logger._dir = None

    reset()
    yield
    reset()


def test_set_dir_writes_log_file_and_keeps_existing_files(tmp_path, clean_logger):
    logdir = tmp_path / "logs"
    logdir.mkdir()
    (logdir / "keep.txt").write_text("user data")
    logger.set_dir(logdir)
    assert logger.get_dir() == os.fspath(logdir)
    logger.info("episode %d return %.1f", 3, 200.0)
    logger.warning("careful")
    logger.debug("hidden at INFO level")
    text = (logdir / "log.log").read_text()
    assert "episode 3 return 200.0" in text
    assert "WAR careful" in text
    assert "hidden" not in text
    assert "test_core_logger_summary.py" in text  # the caller's file, not logger.py
    assert (logdir / "keep.txt").read_text() == "user data"


def test_set_level_accepts_names_and_rejects_unknown(tmp_path, clean_logger):
    logger.set_dir(tmp_path)
    logger.set_level("debug")
    try:
        logger.debug("now visible")
        assert "now visible" in (tmp_path / "log.log").read_text()
        with pytest.raises(ValueError, match="unknown log level"):
            logger.set_level("loud")
    finally:
        logger.set_level(logging.INFO)


def test_auto_set_dir_rejects_unknown_action():
    with pytest.raises(ValueError, match="'k' \\(keep\\)"):
        logger.auto_set_dir("x")


def _read_scalars(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_summary_scalars_are_readable_at_once(tmp_path, clean_logger):
    summary.set_logdir(tmp_path / "tb")
    summary.add_scalar("train/return", 10.0, 1)
    summary.add_scalar("train/return", np.float32(20.5), 2)
    summary.add_histogram("train/actions", np.array([0, 1, 1, 0, 1]), 2)
    summary.flush()  # a barrier: everything queued is on disk afterwards
    scalars = _read_scalars(tmp_path / "tb")
    assert scalars == {"train/return": [(1, 10.0), (2, 20.5)]}
    assert summary.get_logdir() == os.fspath(tmp_path / "tb")


def test_summary_defaults_to_the_logger_dir(tmp_path, clean_logger):
    logger.set_dir(tmp_path / "run")
    summary.add_scalar("eval/return_mean", 475.0, 7)
    summary.flush()
    assert _read_scalars(tmp_path / "run") == {"eval/return_mean": [(7, 475.0)]}


def test_logger_import_configures_nothing():
    code = ("import logging, parl_core.utils.logger, parl_core.utils.summary, sys\n"
            "assert logging.getLogger().handlers == [], 'root configured'\n"
            "assert logging.getLogger('parl').handlers == [], 'parl logger configured at import'\n"
            "assert 'tensorboardX' not in sys.modules\n"
            "logging.basicConfig(level=logging.INFO, format='APP %(message)s')\n"
            "parl_core.utils.logger.info('to the app handlers')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # the application configured logging: messages propagate to its handler, no second handler added
    assert out.stderr.strip() == "APP to the app handlers"
    assert out.stdout == ""


def test_logger_prints_to_stdout_when_unconfigured():
    code = "from parl_core.utils import logger\nlogger.info('hello %s', 'world')\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("INF hello world")


def test_summary_reaches_disk_without_flush_and_after_several_flushes(tmp_path, clean_logger):
    import time

    summary.set_logdir(tmp_path)
    summary.add_scalar("a", 1.0, 1)
    deadline = time.monotonic() + 10 * summary.FLUSH_SECS
    while _read_scalars(tmp_path) != {"a": [(1, 1.0)]}:  # the writer thread flushes on its own
        assert time.monotonic() < deadline, "scalar not on disk within 10 * FLUSH_SECS"
        time.sleep(0.05)
    summary.flush()
    summary.add_scalar("a", 2.0, 2)  # a new event file in the same directory
    summary.flush()
    assert _read_scalars(tmp_path) == {"a": [(1, 1.0), (2, 2.0)]}


def test_auto_set_dir_keep_new_backup(tmp_path, monkeypatch, clean_logger):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(logger, "_script_name", lambda: "train")
    first = logger.auto_set_dir()
    assert first == os.path.join("train_log", "train")
    logger.info("first run")
    assert logger.auto_set_dir("k") == first  # keep: append to the same directory
    new = logger.auto_set_dir("n")
    assert new != first and new.startswith(first + "-") and os.path.isdir(new)
    logger.auto_set_dir("b")  # backup: the old directory is renamed, never deleted
    backups = [d for d in os.listdir("train_log") if d.startswith("train-") and d != os.path.basename(new)]
    assert backups and "first run" in (tmp_path / "train_log" / backups[0] / "log.log").read_text()
    assert logger.get_dir() == first and os.listdir(first) == ["log.log"]
