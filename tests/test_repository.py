"""Repository-wide consistency: one lockstep version, the README's test command is what CI runs."""

import pathlib
import re

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the backport
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ["parl-core", "parl-algorithms", "parl-remote", "parl-monitor", "evokit", "parl"]


def load_pyproject(folder):
    with open(ROOT / "packages" / folder / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def test_all_six_packages_share_one_version():
    versions = {folder: load_pyproject(folder)["version"] for folder in PACKAGES}
    assert len(set(versions.values())) == 1, versions


def test_meta_package_pins_the_five_to_that_version():
    project = load_pyproject("parl")
    version = project["version"]
    pins = {re.split(r"[\[=<>~! ]", dep)[0]: dep for dep in project["dependencies"]}
    expected = {"parl-core", "parl-algorithms", "parl-remote", "parl-monitor", "parl-evokit"}
    assert expected <= set(pins)
    for name in expected:
        assert pins[name].endswith(f"=={version}"), pins[name]


def test_package_dunder_versions_match_metadata():
    version = load_pyproject("parl")["version"]
    roots = {"parl-core": "parl_core", "parl-algorithms": "parl_algorithms", "parl-remote": "parl_remote",
             "parl-monitor": "parl_monitor", "evokit": "evokit", "parl": "parl"}
    for folder, module in roots.items():
        text = (ROOT / "packages" / folder / "src" / module / "__init__.py").read_text()
        found = re.search(r'^__version__\s*=\s*"([^"]+)"', text, re.MULTILINE)
        if found:  # a package may read its version from metadata instead
            assert found.group(1) == version, folder


def readme_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```(?:bash|sh|console)?\n(.*?)```", text, re.DOTALL)
    assert block, "README.md has no code block with the two commands"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_second_command_is_what_ci_runs():
    commands = readme_commands()
    assert len(commands) >= 2
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert commands[1] in ci_lines, f"{commands[1]!r} not among .ci/run's commands {ci_lines}"


def test_readme_first_command_runs_the_quickstart_demo():
    first = readme_commands()[0]
    assert "nox -s demo" in first
    noxfile = (ROOT / "noxfile.py").read_text()
    assert 'ROOT / "examples" / "quickstart" / "train.py"' in noxfile
