"""Shared fixtures: a private noise-table directory per test, and the tutorial's config files."""

from __future__ import annotations

import pathlib

import pytest

DATA = pathlib.Path(__file__).parent / "data"


def pytest_configure(config: pytest.Config) -> None:
    # paddle warns at import when no C++ compiler cache is installed; irrelevant to these tests (filtered here,
    # never at import of evokit)
    config.addinivalue_line("filterwarnings", "ignore:No ccache found:UserWarning")


@pytest.fixture(autouse=True)
def noise_dir(tmp_path, monkeypatch) -> pathlib.Path:
    """Shared noise tables go to a per-test directory (never /dev/shm) so tests do not leave files behind."""
    path = tmp_path / "noise"
    path.mkdir()
    monkeypatch.setenv("EVOKIT_NOISE_DIR", str(path))
    return path


@pytest.fixture
def tutorial_prototxt() -> pathlib.Path:
    return DATA / "tutorial_config.prototxt"


@pytest.fixture
def tutorial_toml() -> pathlib.Path:
    return DATA / "tutorial_config.toml"


def config_text(solver_type: str = "BASIC_ES", optimizer: str = "SGD", base_lr: float = 0.1, std: float = 0.5,
                cached: bool = False, seed: int = 7, cache_size: int = 100000, mirrored: bool = True,
                shaping: str = "RANK_CENTERED", max_to_keep: int = 5, elite_size: int = 3) -> str:
    """A config in protobuf text format with the given settings."""
    return f"""
solver {{
  type: {solver_type}
  mirrored_sampling: {str(mirrored).lower()}
  fitness_shaping: {shaping}
  optimizer {{ type: {optimizer} base_lr: {base_lr} }}
  sampling {{
    type: GAUSSIAN_SAMPLING
    gaussian_sampling {{ std: {std} cached: {str(cached).lower()} seed: {seed} cache_size: {cache_size} }}
  }}
  ga {{ elite_size: {elite_size} }}
}}
async_es {{ max_to_keep: {max_to_keep} }}
"""


@pytest.fixture
def make_config(tmp_path):
    """``make_config(**settings) -> path`` of a prototxt file written by :func:`config_text`."""
    counter = iter(range(10**6))

    def make(**settings) -> pathlib.Path:
        path = tmp_path / f"config{next(counter)}.prototxt"
        path.write_text(config_text(**settings))
        return path

    return make
