"""The choice among candidates, rule by rule, and the whole-run budget left for the next."""

from __future__ import annotations

from codegen_ci.candidates import choose, lines_changed, remaining_limits
from codegen_ci.report import Candidate, Usage
from codegen_ci.spec.model import Limits


def cand(index: int, **kw: object) -> Candidate:
    base: dict[str, object] = {
        "index": index,
        "model": "m",
        "status": "failed",
        "commit": f"c{index}",
        "lint_passed": True,
    }
    base.update(kw)
    return Candidate.model_validate(base)


def test_each_rule_decides_only_when_the_ones_before_tie() -> None:
    passing = cand(0, status="success", lines_changed=50, new_failures=0)
    assert choose([cand(1, new_failures=0, lines_changed=1), passing])[0] is passing  # type: ignore[index]
    fewer_new = cand(1, new_failures=1, lint_passed=False)
    assert choose([cand(0, new_failures=2), fewer_new])[0] is fewer_new  # type: ignore[index]
    lint = cand(1, lines_changed=9)
    assert choose([cand(0, lint_passed=False, lines_changed=1), lint])[0] is lint  # type: ignore[index]
    small = cand(1, lines_changed=2, usage=Usage(billed_tokens=900))
    assert choose([cand(0, lines_changed=3, usage=Usage(billed_tokens=1)), small])[0] is small  # type: ignore[index]
    cheap = cand(1, usage=Usage(billed_tokens=10))
    best, why = choose([cand(0, usage=Usage(billed_tokens=20)), cheap])  # type: ignore[misc]
    assert best is cheap and why == "lower billed tokens (10 vs 20), over candidate 0"
    first = cand(0)
    best, why = choose([cand(1), first])  # type: ignore[misc]
    assert best is first and why == "earlier, over candidate 1"


def test_an_attempt_without_a_change_wins_only_when_none_has_one() -> None:
    empty = cand(0, status="success", commit=None)
    changed = cand(1, new_failures=3)
    assert choose([empty, changed])[0] is changed  # type: ignore[index]
    assert choose([empty])[0] is empty  # type: ignore[index]
    assert choose([]) is None


def test_lines_changed_counts_added_and_removed_lines_not_headers() -> None:
    patch = "--- a/x.py\n+++ b/x.py\n@@ -1 +1,2 @@\n-old\n+new\n+more\n context\n"
    assert lines_changed(patch) == 3


def test_no_attempt_starts_when_what_is_left_is_less_than_the_cheapest_took() -> None:
    limits = Limits(max_tokens=5000, max_billed_tokens=4000, timeout_minutes=10)
    took = cand(
        0, usage=Usage(prompt_tokens=1900, completion_tokens=100, billed_tokens=1500), duration_s=60
    )
    left, why = remaining_limits(limits, [took], elapsed_s=60)
    assert left is not None and why == ""
    assert (left.max_tokens, left.max_billed_tokens) == (3000, 2500)
    assert abs(left.timeout_minutes - 9) < 1e-9
    left, why = remaining_limits(limits, [took, took], elapsed_s=120)
    assert left is None and why.startswith("token budget: 1000 left of 5000")
    left, why = remaining_limits(limits, [took], elapsed_s=9.5 * 60)
    assert left is None and why.startswith("wall clock")
