"""pytest: spotting it in a command, the report path a command passes it, how JUnit is asked
for."""

from __future__ import annotations

from codegen_ci.runners.pytest import junit_arg as junitxml_arg
from codegen_ci.runners.pytest import junit_env, mentions_pytest


def test_spotting_pytest_and_its_own_junitxml() -> None:
    assert mentions_pytest("pytest -q")
    assert mentions_pytest("python -m pytest tests")
    assert mentions_pytest("/venv/bin/pytest")
    assert mentions_pytest("py.test")
    assert not mentions_pytest("pip install pytest-cov")
    assert not mentions_pytest("npm test")
    assert junitxml_arg("pytest --junitxml=reports/j.xml tests") == "reports/j.xml"
    assert junitxml_arg("pytest --junit-xml out.xml") == "out.xml"
    assert junitxml_arg("pytest -q") is None


def test_junit_is_asked_for_through_pytest_addopts_after_the_users_own() -> None:
    assert junit_env({}, "/drop/t.xml") == {"PYTEST_ADDOPTS": "--junitxml=/drop/t.xml"}
    env = junit_env({"PYTEST_ADDOPTS": "-q"}, "/drop dir/t.xml")
    assert env == {"PYTEST_ADDOPTS": "-q --junitxml='/drop dir/t.xml'"}
