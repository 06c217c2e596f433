"""The person's point-by-point verdicts on the agent's message, from real transcripts."""

from __future__ import annotations

from typing import Any

import pytest

from tests.capture.test_lessons import Session

# ida-hcli e6dd9346 (dev2, verbatim, abridged)
PLAN = ("**Summary of what needs to happen:**\n\n"
        "1. **Python deps** -- During install, walk the component tree (already possible via "
        "`walk_component_tree_from_archive`) and aggregate `pythonDependencies` from all component manifests.\n\n"
        "2. **Settings** -- During install, after handling the root's settings, iterate over each component that "
        "declares settings and either prompt the user or accept `--config` values. The `--config` flag needs a "
        "namespacing convention (e.g. `component-name.key=value` or `component-name:key=value`).\n\n"
        "3. **Both must be recursive** -- Since components can nest (up to `MAX_COMPONENT_DEPTH=10`), the logic "
        "should use the existing `walk_component_tree_from_archive`.\n\nWant me to implement these fixes?")
# Held-out review 22 (TheSpaghettiDetective/JusPrin 28d33b5a, AGPL-3.0, verbatim, abridged)
REVIEW = ("## Where the design is wrong or thin\n\n"
          "**Grouping contradicts the Figma.** The Figma's timeline frame shows one row per edit, each with author, "
          "place, and time. Revert is not on the change rows at all.\n\n"
          "**Labels need more than undo names.** The Figma labels carry the object name, the resulting value, the "
          "preset it changed, and who did it. Seven real edits take snapshots with an empty name.\n\n"
          "**Coverage holes.** Renaming a plate takes no undo step and never calls `set_plater_dirty`, so nothing "
          "fires.\n\n**Staleness.** The Figma marks a build stale with \"the project changed after this build.\"\n\n"
          "## Verdict\n\nKeep D1, D2, D4, and D7.")


def _verdicts(drafts: list[Any]) -> list[Any]:
    return [d for d in drafts if "verdicts" in d.tags]


def test_numbered_answers_to_a_numbered_proposal_are_the_persons_decisions() -> None:
    reply = "1. good.\n2. use period.\n3. yes\n\nDevelop a complete implementation plan and write it into plan.md"
    found = _verdicts(Session().user("audit the component install").say(PLAN).user(reply).end())
    assert len(found) == 1, found
    item = found[0]
    assert item.kind == "decision" and item.source == "user"
    assert item.title.startswith("The user decided: Python deps → good; Settings → use period")
    assert "`component-name.key=value`" in item.body and "→ the user: use period" in item.body
    assert "Develop" not in item.body  # the next ask is no verdict


def test_verdicts_after_the_reviews_own_headings_skip_a_question_back() -> None:
    reply = ("Grouping contradicts the Figma - ok\nLabels need more than undo names. - do whatever that is the "
             "simplest. it's ok to not exactly follow figma design.\nCoverage holes - these holes are fine\n"
             "Staleness - what's yoru suggestion?\n\nnow give me your verdict again")
    found = _verdicts(Session().user("check the handoff against the code").say(REVIEW).user(reply).end())
    assert len(found) == 1, found
    body = found[0].body
    assert "Labels need more than undo names" in body and "→ the user: do whatever that is the simplest" in body
    assert "→ the user: these holes are fine" in body and "→ the user: ok" in body
    assert "Staleness" not in body and "suggestion" not in body


def test_a_numbered_list_of_the_persons_own_answers_nothing() -> None:
    said = "Done. I changed:\n\n1. **Parser** -- reads the new header.\n2. **Writer** -- emits it."
    own = "1. add tests for the parser\n2. update the README"
    assert not _verdicts(Session().user("add the header").say(said).user(own).end())
    # nor does a reply that opens with its own words and only later names a point
    later = f"I'm not sure I understand this:\n{REVIEW.splitlines()[2]}"
    assert not _verdicts(Session().user("review it").say(REVIEW).user(later).end())
    # one point answered is a reply, not a point-by-point verdict
    assert not _verdicts(Session().user("review it").say(REVIEW).user("Coverage holes - these are fine").end())


SAID = ("Three open points:\n\n1. **Separator** -- comma or period for decimals.\n2. **Rounding** -- half-up or banker's.\n"
        "3. **Locale** -- from the OS or from settings.\n\nWhich do you want?")


@pytest.mark.parametrize("reply", ["1) period\n2) half-up\n3) settings", "(1) period\n(2) half-up\n(3) settings",
                                   "#1 period\n#2 half-up", "Separator: period\nRounding: half-up\nLocale: settings"])
def test_the_usual_ways_of_numbering_an_answer(reply: str) -> None:
    found = _verdicts(Session().user("format numbers").say(SAID).user(reply).end())
    assert len(found) == 1 and found[0].title.startswith("The user decided: Separator → period; Rounding → half-up"), found


def test_the_persons_own_numbered_asks_under_a_question_are_no_verdicts() -> None:
    said = ("I looked at the importer. Two things stand out:\n\n1. **Encoding** -- files are read as latin-1.\n"
            "2. **Batching** -- rows are inserted one at a time.\n\nWant me to fix both?")
    reply = "1. first add a test for the csv parser\n2. then update the README with the new flags"
    assert not _verdicts(Session().user("review the importer").say(said).user(reply).end())
