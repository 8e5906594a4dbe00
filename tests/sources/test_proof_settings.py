"""A settings block may ask for more proof than the repository does, never for less."""

from __future__ import annotations

from codegen_ci.sources.settings_blocks import SettingsBlock, clamp_proof, parse_settings
from codegen_ci.spec.model import ProofPolicy, Validation


def block(text: str) -> SettingsBlock:
    return SettingsBlock("issue #7 body", text, 3)


def repository(tests: str) -> Validation:
    return Validation(proof=ProofPolicy.model_validate({"tests": tests}))


def test_a_block_may_set_the_proof_policy_and_no_other_validation_key() -> None:
    overrides, notices = parse_settings([block("validation: {proof: {tests: required}}\n")])
    assert overrides == {"validation": {"proof": {"tests": "required"}}} and notices == ()

    overrides, notices = parse_settings([block("validation: {test: [evil], proof: {tests: off}}")])
    assert "validation" not in overrides
    assert "ignored `validation`" in notices[0] and "validation.proof.tests" in notices[0]


def test_raising_the_policy_counts_and_lowering_it_is_clamped_with_a_notice() -> None:
    raised = {"validation": {"proof": {"tests": "required"}}}
    assert clamp_proof(raised, repository("preferred")) == (raised, ())

    lowered = {"validation": {"proof": {"tests": "off"}}, "title": "t"}
    overrides, notices = clamp_proof(lowered, repository("required"))
    assert overrides == {"validation": {"proof": {"tests": "required"}}, "title": "t"}
    assert notices == (
        "validation.proof.tests: off from an issue or comment is below the repository's "
        "required; using required",
    )
    assert clamp_proof({"title": "t"}, repository("required")) == ({"title": "t"}, ())
