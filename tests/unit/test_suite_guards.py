"""The suite's own guards: a hung test fails with a traceback, no property test has a wall-clock deadline, an
exception in a test's thread fails the test (pyproject's pytest settings, the hypothesis profile in conftest), and
a part the run requires fails the tests that find it missing instead of skipping them (support.required). The
pytest ones run an inner pytest with this project's settings on a one-test file."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import settings

pytest_plugins = ["pytester"]

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
TESTS = PYPROJECT.parent / "tests"


def _project_settings(pytester: pytest.Pytester, **overrides: object) -> None:
    """Writes the project's [tool.pytest.ini_options] (with overrides) as the inner run's ini file."""
    options = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]
    options = {key: value for key, value in options.items() if key not in ("testpaths", "pythonpath")}
    options["pythonpath"] = str(TESTS)
    options.update(overrides)
    lines = ["[pytest]"]
    for key, value in options.items():
        if isinstance(value, list):
            lines.append(f"{key} =\n" + "\n".join(f"    {item}" for item in value))
        else:
            lines.append(f"{key} = {value}")
    pytester.makeini("\n".join(lines))


def test_the_project_sets_a_per_test_timeout() -> None:
    options = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]
    assert 0 < int(options["timeout"]) <= 900


def test_hypothesis_examples_have_no_wall_clock_deadline() -> None:
    assert settings.default.deadline is None


def test_a_hung_test_fails_with_the_stack_where_it_hangs(pytester: pytest.Pytester) -> None:
    _project_settings(pytester, timeout=2)
    pytester.makepyfile("""
        import threading

        def test_waits_forever():
            threading.Event().wait()
    """)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Timeout*", "*test_waits_forever*"])


def test_an_exception_in_a_tests_thread_fails_the_test(pytester: pytest.Pytester) -> None:
    _project_settings(pytester)
    pytester.makepyfile("""
        import threading

        def test_probe_thread_raises():
            probe = threading.Thread(target=lambda: 1 / 0)
            probe.start()
            probe.join(5)
    """)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ZeroDivisionError*"])


MISSING_DATABASE = """
    from support.required import missing

    def test_needs_mariadb():
        missing("mariadb", "mariadb server not reachable")
"""


@pytest.mark.parametrize(("required", "outcome"), [("", {"skipped": 1}), ("postgres", {"skipped": 1}),
                                                   ("postgres, mariadb", {"failed": 1})])
def test_a_missing_part_skips_unless_the_run_requires_it(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                         required: str, outcome: dict[str, int]) -> None:
    _project_settings(pytester)
    pytester.makepyfile(MISSING_DATABASE)
    monkeypatch.setenv("TESTS_REQUIRE", required)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(**outcome)
    if "failed" in outcome:
        result.stdout.fnmatch_lines(["*mariadb is required in this run (TESTS_REQUIRE)*not reachable*"])


def test_an_unknown_required_part_is_an_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _project_settings(pytester)
    pytester.makepyfile(MISSING_DATABASE)
    monkeypatch.setenv("TESTS_REQUIRE", "mariadb,postgress")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*unknown parts*postgress*"])
