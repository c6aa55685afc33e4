"""The ``learned`` extractor: its features, its decisions within what the context allows,
the shipped model rebuilt byte for byte from the labels, and the training being
deterministic, and floors of the shipped model's scores on the part it was not trained on.
Its cross-validated scores are measured by leave-one-part-out
(``tests/fixtures/mail_dev/cv.py``, numbers in ``docs/mail.md``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.mail.conftest import SAMPLE_LABELS, SAMPLE_MBOX, make_mail
from tickethub.mail.build import ingest, make_pipeline
from tickethub.mail.extractors.base import IssueView, MailContext
from tickethub.mail.extractors.learned import (
    CLASSES,
    MODEL_PATH,
    LearnedExtractor,
    Model,
    features,
)
from tickethub.mail.learn import Example, dump, gold_class, train
from tickethub.mail.operations import MAX_EVIDENCE, quote_found
from tickethub.mail.parse import parse_mail
from tickethub.mail.score import score
from tickethub.mail.sources import FileSource
from tickethub.mail.tree import export_tree
from tickethub.server.runtime import HubRuntime

DEV = Path(__file__).resolve().parents[1] / "fixtures" / "mail_dev"
ISSUE = IssueView(id=7, kind="question", status="open", title="t", raised_by="asker@x.org",
                  source_message_id="<q@x>", parent_id=None)


def _mail_and_context(body: str, *, sender: str = "helper@x.org", reply: bool = True,
                      subject: str = "Re: help") -> tuple[object, MailContext]:
    mail = parse_mail(make_mail(body, subject=subject, sender=sender, message_id="<r@x>",
                                in_reply_to="<q@x>" if reply else None))
    context = MailContext(thread_root="<q@x>", root_issue=None,
                          thread_issues=(ISSUE,) if reply else (),
                          chain=(ISSUE.id,) if reply else (), is_reply=reply)
    return mail, context


def test_features_carry_the_structure_not_only_words() -> None:
    mail, context = _mail_and_context("Thanks, that worked! The box boots fine now.",
                                      sender="asker@x.org")
    f = features(mail, context)  # type: ignore[arg-type]
    assert f["role=req"] == 1.0 and f["tkind=question"] == 1.0 and f["is_reply"] == 1.0
    assert f["thanks_worked@req"] == 1.0 and "cue:complete@req" in f
    assert "first_in_thread" not in f
    mail, context = _mail_and_context("How do I mount an NFS share?", reply=False,
                                      subject="NFS")
    f = features(mail, context)  # type: ignore[arg-type]
    assert f["role=none"] == 1.0 and f["first_in_thread"] == 1.0 and f["asks<=1"] == 1.0
    assert features(mail, context) == f  # type: ignore[arg-type]
    assert not any(k.startswith("w:") for k in features(
        mail, context, words=False))  # type: ignore[arg-type]


def _model(weights: dict[str, list[float]]) -> Model:
    return Model({"classes": list(CLASSES), "weights": weights,
                  "settings": {"words": False, "stacked": False}})


def test_an_op_that_needs_a_target_is_never_chosen_without_one() -> None:
    answer_always = _model({"bias": [0, 0, 5.0, 0, 0, 1.0]})  # answer, else ignore
    extractor = LearnedExtractor(answer_always)
    mail, context = _mail_and_context("Use mount -t nfs host:/share /mnt instead.",
                                      reply=False, subject="NFS")
    assert [o.op for o in extractor.extract_now(mail, context)] == ["ignore"]  # type: ignore[arg-type]
    mail, context = _mail_and_context("Use mount -t nfs host:/share /mnt instead.")
    [op] = extractor.extract_now(mail, context)  # type: ignore[arg-type]
    assert (op.op, op.target) == ("answer", ISSUE.id)
    assert quote_found(op.evidence, mail.text)  # type: ignore[attr-defined]


def test_an_add_quotes_the_question_and_a_status_reads_its_new_status() -> None:
    add = LearnedExtractor(_model({"bias": [5.0, 0, 0, 0, 0, 0]}))
    mail, context = _mail_and_context(
        "I run exmh 2.5 on Linux.\n\nHow can I bind a key to insert my signature?",
        reply=False, subject="exmh signatures")
    [op] = add.extract_now(mail, context)  # type: ignore[arg-type]
    assert (op.op, op.kind, op.title) == ("add", "question", "exmh signatures")
    assert op.evidence == "How can I bind a key to insert my signature?"
    status = LearnedExtractor(_model({"bias": [0, 0, 0, 0, 5.0, 0]}))
    mail, context = _mail_and_context("I won't be able to do it until next week, when I "
                                      "get back from the conference.", sender="asker@x.org")
    [op] = status.extract_now(mail, context)  # type: ignore[arg-type]
    assert (op.op, op.new_status) == ("status", "deferred")


def test_an_unsure_model_abstains_to_ignore_or_to_rules() -> None:
    # Two classes level (0.5 each): below a min_prob of 0.6 the model does not decide.
    unsure = {"bias": [0, 0, 3.0, 0, 0, 3.0]}  # answer or ignore, nothing else
    mail, context = _mail_and_context("Thanks, that worked! The box boots fine now.",
                                      sender="asker@x.org")
    sure = LearnedExtractor(_model({"bias": [0, 0, 3.0, 0, 0, 0]}))
    assert [o.op for o in sure.extract_now(mail, context)] == ["answer"]  # type: ignore[arg-type]
    model = _model(unsure)
    model.min_prob = 0.6
    assert LearnedExtractor(model).decide(mail, context) == "ignore"  # type: ignore[arg-type]
    model.fallback = "rules"
    [op] = LearnedExtractor(model).extract_now(mail, context)  # type: ignore[arg-type]
    assert (op.op, op.target) == ("complete", ISSUE.id)  # what rules says of the requester
    model.min_prob = 0.4  # sure enough: the model decides again
    assert LearnedExtractor(model).decide(mail, context) == "answer"  # type: ignore[arg-type]
    assert Model({"classes": list(CLASSES), "weights": {},
                  "settings": {"min_prob": 0.7, "fallback": "rules"}}).fallback == "rules"


def test_a_pasted_log_without_full_stops_still_gives_a_quote_that_fits() -> None:
    # Found on blind mail: a 1,500-character shell session with no sentence end was one
    # "sentence", quoted whole as evidence, and the operation failed validation, so the
    # mail was quarantined.
    log = " ".join(f"[john@localhost john]$ glxinfo {i} GLU_EXT_object_space_tess"
                   for i in range(40))
    answer = LearnedExtractor(_model({"bias": [0, 0, 5.0, 0, 0, 1.0]}))
    mail, context = _mail_and_context(log)
    [op] = answer.extract_now(mail, context)  # type: ignore[arg-type]
    assert op.op == "answer" and 0 < len(op.evidence) <= MAX_EVIDENCE
    assert quote_found(op.evidence, mail.text)  # type: ignore[attr-defined]


def test_training_is_deterministic_and_learns_the_labels() -> None:
    examples = [Example(f"<m{n}@x>", f"<t{n % 5}@x>", label,
                        {"bias": 1.0, f"cue:{label}": 1.0, f"n{n % 3}": 1.0})
                for n, label in enumerate(["answer", "ignore", "add:question"] * 6)]
    first, second = dump(train(examples)), dump(train(list(examples)))
    assert first == second
    model = Model(json.loads(first))
    for label in ("answer", "ignore", "add:question"):
        scores = model.scores({"bias": 1.0, f"cue:{label}": 1.0})
        assert model.classes[scores.index(max(scores))] == label
    assert gold_class({"op": "status", "new_status": "deferred"}) == "status"
    assert gold_class({"op": "add", "kind": "task"}) == "add:task"


def test_the_shipped_model_is_rebuilt_byte_for_byte_from_the_labels() -> None:
    from tickethub.cli.main import cli

    result = CliRunner().invoke(cli, ["mail", "train", "--dev", str(DEV), "--check"],
                                env={"TICKETHUB_DATABASE_URL": ""})
    assert result.exit_code == 0, result.output
    assert "up to date" in result.output
    assert MODEL_PATH.stat().st_size < 400_000


def test_mail_score_runs_the_learned_extractor() -> None:
    from tickethub.cli.main import cli

    if not SAMPLE_MBOX.exists():
        pytest.skip("the shared public sample is not next to the repository")
    result = CliRunner().invoke(cli, [
        "mail", "score", str(SAMPLE_LABELS), "--mbox", str(SAMPLE_MBOX),
        "--extractor", "learned", "--json"],
        env={"TICKETHUB_DATABASE_URL": ""})
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["op_accuracy"] > 0.5


@pytest.mark.parametrize("part, floors, duplicates", [
    # The one part the shipped model was never trained on (it knows tune … test7; test8
    # was labelled blind and scored once, docs/mail.md), pinned a little under its
    # score. The model stacks what ``rules`` decides, so this moves with the cues too.
    ("test8", {"op_accuracy": 0.68, "target_accuracy": 0.58, "closing_precision": 0.69,
               "closing_recall": 0.84}, 0.24),
])
async def test_shipped_model_floors_on_parts_it_never_saw(
        runtime: HubRuntime, part: str, floors: dict[str, float], duplicates: float) -> None:
    box = FileSource(DEV / f"{part}.mbox")
    await ingest(make_pipeline(runtime, LearnedExtractor()), box.name, box)
    result = score(export_tree(runtime.tickets), json.loads(
        (DEV / f"{part}.labels.json").read_text()))
    for metric, floor in floors.items():
        assert result[metric] >= floor, (metric, result[metric])
    assert result["duplicate_rate"] <= duplicates
