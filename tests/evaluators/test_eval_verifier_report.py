"""verify_answer's `unmarked` option (the one deliberate difference from math-verify), the evaluation
protocol's choice of it per benchmark, and the verifier report of `sweep eval --verifier-report`."""

import pytest
from math_verify import parse, verify

from evaluators.eval_config import EvalConfig, EvalConfigError
from evaluators.verifier import math_verify_verdict, verify_answer
from evaluators.verifier_report import disagreements, write_report

UNMARKED_CASES = [  # responses with no answer marker, and math-verify's verdict on them
    ("so the total comes to 1000", "1000", True),
    ("so the total comes to 1001", "1000", False),
    ("Adding them up we get $\\frac{1}{2}$", "0.5", True),
    ("Adding them up we get $\\frac{1}{3}$", "0.5", False),
]


@pytest.mark.parametrize("response,gold,field", UNMARKED_CASES)
def test_unmarked_responses_get_no_credit_in_training_and_the_fields_verdict_when_asked(response, gold, field):
    assert verify(parse(gold), parse(response)) is field  # what the field's reference says
    assert verify_answer(response, gold, unmarked="field") is field
    assert verify_answer(response, gold) is False  # the training reward: a bare number is no answer


def test_a_marked_response_is_graded_the_same_either_way_and_a_bad_choice_is_refused():
    for unmarked in ("field", "no_credit"):
        assert verify_answer("so \\boxed{7}", "7", unmarked=unmarked) is True
        assert verify_answer("so \\boxed{8}", "7", unmarked=unmarked) is False
    with pytest.raises(ValueError, match="unmarked: expected one of"):
        verify_answer("7", "7", unmarked="lenient")


def test_the_protocol_grades_papers_benchmarks_as_the_field_and_synthetic_tasks_as_their_reward():
    auto = EvalConfig.from_dict({"benchmarks": ["aime24", "easy", "mine"], "files": {"mine": "x.jsonl"}})
    assert [auto.unmarked_for(b) for b in ("aime24", "easy", "mine")] == ["field", "no_credit", "field"]
    strict = EvalConfig.from_dict({"benchmarks": ["aime24"], "unmarked": "no_credit"})
    assert strict.unmarked_for("aime24") == "no_credit" and strict.protocol_hash() != auto.protocol_hash()
    with pytest.raises(EvalConfigError, match="eval.unmarked: expected one of"):
        EvalConfig.from_dict({"unmarked": "lenient"})


def test_the_report_lists_exactly_the_responses_where_the_verdicts_differ(tmp_path):
    samples = ["so it is 1000", "so it is \\boxed{1000}", "so it is \\boxed{999}", "\\boxed{1} then \\boxed{1000}"]
    records = [{"id": "p1", "answer": "1000", "samples": samples,
                "extracted": [None, "1000", "999", "1, 1000"],
                "correct": [verify_answer(s, "1000") for s in samples]}]
    assert records[0]["correct"] == [False, True, False, False]
    rows, total = disagreements(records)
    assert total == 4 and [r["sample"] for r in rows] == [0]  # only the bare number: math-verify credits it
    assert rows[0]["math_verify"] is True and rows[0]["math_verify_answer"] == "1000" and rows[0]["our_answer"] is None
    assert math_verify_verdict(samples[3], "1000")[0] is False  # both read that one as the set {1, 1000}
    path = write_report({"p": (rows, total), "q": ([], 2)}, tmp_path / "verifier_report.md")
    text = path.read_text()
    assert "## p: 1 of 4 responses disagree" in text and "## q: 0 of 2 responses disagree" in text
    assert "| p1 | 0 | 1000 | False | — | True | 1000 |" in text
