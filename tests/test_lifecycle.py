"""Lifecycle and trust on real stores and the real MiniLM model: supersession (measured on labelled
pairs), merging, confidence, decay, TTL, sweep/restore/purge, audit, export/import, the CLI."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from graphmem import Config, InvalidInput, Memory, NotFound, lifecycle
from graphmem.cli import main
from graphmem.exporting import read_export, to_markdown
from graphmem.models import ItemStatus
from graphmem.store import ops

DAY = lifecycle.DAY
PAIRS = Path(__file__).parent / "data" / "supersession_pairs.jsonl"
LABELS = ("supersedes", "duplicate", "unrelated")
# Floors actually reached (see the printed table), precision/recall: supersedes dev 1.00/1.00,
# test 1.00/0.94; duplicate dev 1.00/0.73, test 1.00/0.56 (rephrasings below cosine 0.9 are
# left alone on purpose, see SupersessionRule), with a little slack.
FLOORS = {"supersedes": (0.9, 0.85), "duplicate": (0.9, 0.5)}

DUPLICATE_BUG = ("service.py Memory._duplicate_of compares rejected_terms() with "
                 "_normal(text).split(), whose tokens keep punctuation ('npm,' != 'npm'), and "
                 "ignores changed values; fix: `if not lifecycle.repeats(item.text, old_text): "
                 "continue`")


# ----- supersession, measured on labelled pairs -------------------------------------------------
def _pairs() -> list[dict[str, Any]]:
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line]


def test_labelled_pairs_are_balanced_and_well_formed() -> None:
    pairs = _pairs()
    counts = Counter(p["label"] for p in pairs)
    assert len(pairs) >= 72 and all(counts[label] >= 24 for label in LABELS), counts
    for pair in pairs:
        assert pair["split"] in ("dev", "test")
        for side in ("old", "new"):
            assert pair[side]["kind"] in ("decision", "pitfall", "convention", "env", "task",
                                          "fact", "note") and pair[side]["text"].strip()
    for split in ("dev", "test"):
        per_split = Counter(p["label"] for p in pairs if p["split"] == split)
        assert all(per_split[label] >= 12 for label in LABELS), (split, per_split)


def _entities(mentions: Any, files: list[str]) -> set[str]:
    return {f"{m.kind}:{m.norm}" for m in mentions} | {f"file:{f}" for f in files}


def test_supersession_rule_precision_and_recall_on_labelled_pairs() -> None:
    """classify_pair on the real MiniLM cosine and the real extracted entities of each pair."""
    from graphmem.extract import text as textx
    from graphmem.service import shared_embedder

    pairs = _pairs()
    texts = [p[side]["text"] for p in pairs for side in ("old", "new")]
    vectors = shared_embedder(Config()).encode(texts)
    mentions = textx.extract_many(texts)
    verdicts = []
    for n, pair in enumerate(pairs):
        old, new = pair["old"], pair["new"]
        similarity = float(vectors[2 * n] @ vectors[2 * n + 1])
        shared = (_entities(mentions[2 * n], old.get("files", []))
                  & _entities(mentions[2 * n + 1], new.get("files", [])))
        verdict = lifecycle.classify_pair(new["text"], old["text"], similarity, shared,
                                          old["kind"] == new["kind"])
        verdicts.append((pair, verdict, similarity))
    report = []
    scores: dict[str, dict[str, tuple[float, float]]] = {}
    for split in ("dev", "test", "all"):
        rows = [(p, v) for p, v, _ in verdicts if split in ("all", p["split"])]
        matrix = Counter((p["label"], v.relation) for p, v in rows)
        report.append(f"{split} ({len(rows)} pairs)  rows: label, columns: predicted "
                      + " ".join(f"{c[:5]:>6}" for c in LABELS))
        report += [f"  {a:<11}" + " ".join(f"{matrix[(a, b)]:>6}" for b in LABELS) for a in LABELS]
        scores[split] = {}
        for label in ("supersedes", "duplicate"):
            hits = matrix[(label, label)]
            predicted = sum(matrix[(a, label)] for a in LABELS)
            actual = sum(matrix[(label, b)] for b in LABELS)
            scores[split][label] = (hits / max(predicted, 1), hits / max(actual, 1))
            report.append(f"  {label:<11} precision {scores[split][label][0]:.2f}  "
                          f"recall {scores[split][label][1]:.2f}")
    report.append("misclassified:")
    report += [f"  [{p['split']}] {p['label']} → {v.relation} (cosine {s:.2f}): "
               f"{p['old']['text'][:50]!r} → {p['new']['text'][:50]!r}"
               for p, v, s in verdicts if v.relation != p["label"]]
    print("\n" + "\n".join(report))
    for split in ("dev", "test"):
        for label, (min_precision, min_recall) in FLOORS.items():
            precision, recall = scores[split][label]
            assert precision >= min_precision and recall >= min_recall, (split, label, scores)


@pytest.mark.parametrize("new, old, relation", [
    ("The admin frontend uses pnpm rather than npm", "Use pnpm, not npm, for the admin frontend",
     "duplicate"),
    ("Use npm, not pnpm, for the admin frontend", "Use pnpm, not npm, for the admin frontend",
     "supersedes"),
    ("CI runs the test matrix on Python 3.12", "CI runs the test matrix on Python 3.11",
     "supersedes"),
    ("The admin frontend now uses pnpm", "We now use pnpm for the admin frontend", "duplicate"),
])
def test_rule_reads_turn_aways_cues_and_values(new: str, old: str, relation: str) -> None:
    """Pure-rule cases at a fixed high cosine: only the wording decides."""
    verdict = lifecycle.classify_pair(new, old, 0.95, set(), True)
    assert verdict.relation == relation, verdict
    assert lifecycle.repeats(new, old) == (relation == "duplicate")


# ----- supersession and merging through the real Memory -----------------------------------------
def _ids(result: Any) -> list[str]:
    return [hit.item.id for hit in result.hits]


def test_newer_statement_supersedes_the_older_one(memory: Memory) -> None:
    first = memory.add("We use npm for the admin frontend", kind="convention")
    second = memory.add("We switched the admin frontend from npm to yarn", kind="convention")
    third = memory.add("We now use pnpm, not yarn, for the admin frontend", kind="convention")
    assert len({first.id, second.id, third.id}) == 3
    for old, new in ((first, second), (second, third)):
        stored = memory.get_item(old.id)
        assert stored.status is ItemStatus.superseded and new.id in stored.stale_reason
    assert memory.get_item(third.id).status is ItemStatus.active
    links = memory.get(third.id).links
    assert {"kind": "SUPERSEDES", "target": second.id} in [
        {k: ln[k] for k in ("kind", "target")} for ln in links if "target" in ln]
    middle = {(ln["kind"], ln["target"]) for ln in memory.get(second.id).links if "target" in ln}
    assert {("SUPERSEDES", first.id), ("SUPERSEDED_BY", third.id)} <= middle
    result = memory.search("which package manager does the admin frontend use")
    assert _ids(result)[0] == third.id
    assert first.id not in _ids(result) and second.id not in _ids(result)
    assert [i.id for i in memory.list(kind="convention")] == [third.id]
    assert third.id in memory.brief().item_ids and first.id not in memory.brief().item_ids


def test_a_rephrased_repeat_merges_and_gains_trust(memory: Memory) -> None:
    first = memory.add("Run make test before pushing", kind="convention")
    again = memory.add("Always run `make test` before you push", kind="convention")
    assert again.id == first.id and again.hit_count == 1
    assert again.confidence == pytest.approx(first.confidence + 0.05)
    assert memory.get_item(first.id).confidence == pytest.approx(first.confidence + 0.05)
    assert len(memory.list(kind="convention")) == 1


@pytest.mark.parametrize("kind, old, new", [
    ("convention", "Use pnpm, not npm, for the admin frontend",
     "Use npm, not pnpm, for the admin frontend"),
    ("env", "CI runs the test matrix on Python 3.11", "CI runs the test matrix on Python 3.12"),
    ("task", "Task: move the zorblax importer into src/zorblax/importer.py",
     "Done: moved the zorblax importer into src/zorblax/importer.py"),
])
def test_a_change_is_never_merged_away(memory: Memory, kind: str, old: str, new: str) -> None:
    """Cosine ≥ 0.9 for each pair: the opposite statement, a changed value, a closed task."""
    first = memory.add(old, kind=kind)
    second = memory.add(new, kind=kind)
    assert second.id != first.id and memory.get_item(second.id).title == new
    assert memory.get_item(first.id).status is ItemStatus.superseded
    assert _ids(memory.search(new))[0] == second.id


def test_a_newer_fix_for_the_same_error_supersedes_the_older_pitfall(memory: Memory) -> None:
    old = memory.add("HTTP 502 from the gateway on /api/orders: increase proxy_read_timeout to 60s",
                     kind="pitfall")
    new = memory.add("HTTP 502 from the gateway on /api/orders: the cause is the gunicorn worker "
                     "pool; set WORKERS=4 in gunicorn.conf.py", kind="pitfall")
    other = memory.add("KeyError: 'user_id' in get_profile(): the session may be anonymous",
                       kind="pitfall")
    stored = memory.get_item(old.id)
    assert stored.status is ItemStatus.superseded and "HTTP 502" in stored.stale_reason
    assert memory.get_item(other.id).status is ItemStatus.active
    hits = _ids(memory.search("502 bad gateway on the orders API"))
    assert hits[0] == new.id and old.id not in hits


def test_unrelated_items_about_the_same_file_both_stay(memory: Memory) -> None:
    pool = memory.add("src/shop/db.py: the connection pool size is 10", kind="fact",
                      files=["src/shop/db.py"])
    sql = memory.add("src/shop/db.py: use parametrised queries, never f-strings in SQL",
                     kind="convention", files=["src/shop/db.py"])
    cue = memory.add("The backend now runs on Python 3.12", kind="fact")
    assert {i.id for i in memory.list()} == {pool.id, sql.id, cue.id}


# ----- confidence ---------------------------------------------------------------------------------
def test_confidence_by_source_and_feedback(memory: Memory) -> None:
    items = {source: memory.add(f"Release checklist step owned by the {source} source: tag v{n}",
                                kind="fact", source=source, dedupe=False)
             for n, source in enumerate(("user", "agent", "rule", "llm"))}
    confidences = [items[s].confidence for s in ("user", "agent", "rule", "llm")]
    assert confidences == sorted(confidences, reverse=True) and len(set(confidences)) == 4
    helped = memory.feedback(items["agent"].id, "helpful")
    assert helped.confidence == pytest.approx(items["agent"].confidence + 0.1)
    assert helped.hit_count == 1 and helped.last_used_at > 0
    wrong = memory.feedback(items["user"].id, "wrong", "the tag is v2 now")
    assert wrong.confidence == pytest.approx(items["user"].confidence - 0.3)
    assert wrong.status is ItemStatus.active and "the tag is v2" in wrong.stale_reason
    memory.feedback(items["rule"].id, "wrong")
    gone = memory.feedback(items["rule"].id, "wrong")
    assert gone.confidence == 0.0 and gone.status is ItemStatus.archived
    assert items["rule"].id not in _ids(memory.search("release checklist step tag"))
    outdated = memory.feedback(items["llm"].id, "outdated", "we tag from CI now")
    assert outdated.status is ItemStatus.stale
    hits = {h.item.id: h for h in memory.search("release checklist step owned by the llm").hits}
    assert hits[items["llm"].id].stale
    with pytest.raises(InvalidInput):
        memory.feedback(items["agent"].id, "meh")
    with pytest.raises(NotFound):
        memory.feedback("no-such-id", "helpful")


def test_a_year_untouched_item_leaves_the_brief_but_stays_searchable(memory: Memory) -> None:
    now = time.time()
    old = memory.add("Decision: invoices are rendered with WeasyPrint", kind="decision",
                     created_at=now - 365 * DAY)
    fresh = memory.add("Decision: receipts are emailed through Postmark", kind="decision")
    pinned = memory.add("Decision: prices are stored in integer cents", kind="decision",
                        created_at=now - 365 * DAY, pinned=True)
    assert lifecycle.effective_confidence(memory.store.get_items([old.id])[0], now) < \
        lifecycle.BRIEF_CONFIDENCE_FLOOR
    brief = memory.brief().item_ids
    assert fresh.id in brief and pinned.id in brief and old.id not in brief
    assert _ids(memory.search("how are invoices rendered"))[0] == old.id
    # Using it counts: a searched item is trusted again and comes back to the brief (uses are
    # batched since 33831b7: they count once flushed).
    memory.flush_use()
    assert old.id in memory.brief().item_ids


def test_an_item_just_used_is_not_archived_as_cold(memory: Memory) -> None:
    now = time.time()
    old = memory.add("Decision: the fax gateway keeps its own database", kind="decision",
                     created_at=now - 3 * 365 * DAY)
    assert _ids(memory.search("fax gateway database"))[0] == old.id
    assert memory.sweep(now=now)["archive_cold"] == []


# ----- retention ------------------------------------------------------------------------------
def test_ttl_per_kind_pinned_and_zero(home: Path, repo: Path) -> None:
    now = time.time()
    assert lifecycle.expire_at("task", now, False) == pytest.approx(now + 45 * DAY)
    assert lifecycle.expire_at("decision", now, False) == 0.0
    assert lifecycle.expire_at("task", now, True) == 0.0
    assert lifecycle.expire_at("task", now, False, {"task": 0}) == 0.0
    with pytest.raises(ValueError):
        lifecycle.expire_at("task", now, False, {"task": -1})
    with pytest.raises(ValueError):
        Config(home=home, cwd=repo, ttl_days={"task": -3})
    with Memory(Config(home=home, cwd=repo, ttl_days={"note": 0, "task": 2})) as memory:
        task = memory.add("Task: rotate the staging API key", kind="task")
        note = memory.add("Note: the coffee machine API is flaky", kind="note")
        pinned = memory.add("Task: renew the TLS certificate each spring", kind="task",
                            pinned=True)
        decision = memory.add("Decision: one repository for all services", kind="decision")
        assert task.expire_at == pytest.approx(task.created_at + 2 * DAY)
        assert note.expire_at == 0.0 and pinned.expire_at == 0.0 and decision.expire_at == 0.0
        plan = memory.sweep(dry_run=True, now=now + 10 * 365 * DAY)
        assert plan["archive_expired"] == [task.id]
        assert note.id in plan["archive_cold"]  # never expires, but a decade unused is cold
        assert pinned.id not in plan["archive_expired"] + plan["archive_cold"]


def _grep(directory: Path, word: bytes) -> list[str]:
    return [str(p) for p in directory.rglob("*") if p.is_file() and word in p.read_bytes()]


def test_sweep_archives_restores_and_purges_for_real(memory: Memory) -> None:
    now = time.time()
    task = memory.add("Task: port the quxblorp importer to asyncio", kind="task",
                      files=["src/shop/quxblorp.py"])
    keep = memory.add("Decision: psycopg 3 for OrderService", kind="decision")
    pinned = memory.add("Task: renew the TLS certificate each spring", kind="task", pinned=True)
    assert task.id in _ids(memory.search("quxblorp importer"))  # logged: the log must be scrubbed
    # Added after the search: every returned hit counts as used, which resets its decay.
    cold = memory.add("Decision: the legacy SOAP bridge stays read-only", kind="decision",
                      created_at=now - 2 * 365 * DAY)
    rows_before = memory.store.export_rows()
    journal_before = memory.journal.path.read_bytes()

    plan = memory.sweep(dry_run=True, now=now + 50 * DAY)
    assert plan == {"dry_run": True, "archive_expired": [task.id], "archive_cold": [cold.id],
                    "purge": []}
    assert memory.store.export_rows() == rows_before
    assert memory.journal.path.read_bytes() == journal_before

    memory.actor = "test"
    assert memory.sweep(now=now + 50 * DAY)["archive_expired"] == [task.id]
    assert memory.get_item(task.id).status is ItemStatus.archived
    assert memory.get_item(cold.id).stale_reason.startswith("cold")
    assert {i.id for i in memory.list()} == {keep.id, pinned.id}
    assert task.id not in _ids(memory.search("quxblorp importer", log=False))
    assert [i.id for i in memory.list(status="archived")] and memory.actor == "test"
    assert memory.history(task.id)[-1]["by"] == "sweep"

    restored = memory.restore(cold.id)
    assert restored.status is ItemStatus.active and cold.id in _ids(
        memory.search("legacy SOAP bridge", log=False))
    with pytest.raises(InvalidInput):
        memory.restore(keep.id)

    plan = memory.sweep(now=now + 50 * DAY + (lifecycle.ARCHIVE_GRACE_DAYS - 1) * DAY)
    assert plan["purge"] == []
    plan = memory.sweep(now=now + 50 * DAY + lifecycle.ARCHIVE_GRACE_DAYS * DAY)
    assert plan["purge"] == [task.id]
    with pytest.raises(NotFound):
        memory.get_item(task.id)
    with pytest.raises(NotFound):
        memory.history(task.id)
    assert _grep(memory.dir, b"quxblorp") == []
    assert memory.store.keyword_search("quxblorp", 10, memory._filter()) == []
    vector = memory.embedder.encode(["Task: port the quxblorp importer to asyncio"])[0]
    assert task.id not in [i for i, _ in memory.store.vector_search(vector.tolist(), 10,
                                                                    memory._filter())]
    assert {i.id for i in memory.list()} == {keep.id, pinned.id, cold.id}


def test_a_clock_going_backwards_purges_nothing(memory: Memory) -> None:
    now = time.time()
    future = memory.add("Task: migrate the zyxquark queue", kind="task", created_at=now + 90 * DAY)
    present = memory.add("Task: write the release notes", kind="task")
    for moment in (now, now - 365 * DAY, 0.0):
        assert memory.sweep(now=moment) == {"dry_run": False, "archive_expired": [],
                                            "archive_cold": [], "purge": []}
    assert lifecycle.effective_confidence(memory.store.get_items([future.id])[0], now) == \
        pytest.approx(future.confidence)
    memory.sweep(now=now + 200 * DAY)  # both expire; archived "at" now + 200 days
    assert {memory.get_item(i).status for i in (future.id, present.id)} == {ItemStatus.archived}
    for moment in (now, now + 100 * DAY):  # before the archive time: nothing to purge
        assert memory.sweep(now=moment)["purge"] == []
    assert memory.get_item(future.id) and memory.get_item(present.id)


def test_history_lists_who_created_and_changed_an_item(memory: Memory) -> None:
    memory.actor = "cli:add"
    item = memory.add("Decision: feature flags move to LaunchDarkly", kind="decision")
    memory.actor = "mcp:claude-code"
    memory.feedback(item.id, "helpful")
    memory.actor = "cli:feedback"
    memory.feedback(item.id, "outdated", "flags are back in config/flags.yaml")
    rows = memory.history(item.id)
    assert [r["by"] for r in rows][:1] == ["cli:add"]
    assert rows[0]["op"] == "put_items" and rows[0]["fields"]["kind"] == "decision"
    assert ("mcp:claude-code", "update_items") in [(r["by"], r["op"]) for r in rows]
    last = rows[-1]
    assert last["by"] == "cli:feedback" and last["fields"]["status"] == "stale"
    assert [r["ts"] for r in rows] == sorted(r["ts"] for r in rows)


# ----- export / import ------------------------------------------------------------------------
def _snapshot(memory: Memory) -> list[tuple[str, str, str, str, str]]:
    return sorted((r["id"], r["title"], r["body"], r["kind"], r["status"])
                  for r in memory.export_items())


def _fill(memory: Memory) -> None:
    memory.add("We use npm for the admin frontend", kind="convention")
    memory.add("We now use pnpm, not npm, for the admin frontend", kind="convention")
    memory.add("ECONNREFUSED 127.0.0.1:5432 in pytest", "Start Postgres with `make db-up` first.\n\n"
               "It waits for the healthcheck.", kind="pitfall", files=["src/shop/db.py"])
    task = memory.add("Task: add retry with backoff to fetch_rates()", kind="task", pinned=True)
    memory.feedback(task.id, "outdated")


def test_markdown_export_imports_back_into_a_fresh_store(memory: Memory, home: Path,
                                                         tmp_path: Path) -> None:
    _fill(memory)
    expected = _snapshot(memory)
    assert {s[4] for s in expected} == {"active", "superseded", "stale"}
    path = tmp_path / "export.md"
    path.write_text(to_markdown(memory.project, memory.export_items()), encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    with Memory(Config(home=home, cwd=other)) as fresh:
        assert fresh.import_items(read_export(path)) == len(expected)
        assert _snapshot(fresh) == expected
        pitfall = next(r for r in fresh.export_items() if r["kind"] == "pitfall")
        assert pitfall["files"] == ["src/shop/db.py"]
        assert next(r for r in fresh.export_items() if r["kind"] == "task")["pinned"] is True


@pytest.mark.parametrize("name", ["export.jsonl", "export.md"])
def test_export_import_round_trip_keeps_supersession_edges(memory: Memory, home: Path,
                                                           tmp_path: Path, name: str) -> None:
    _fill(memory)
    old, new = memory.list(kind="pitfall", limit=1)[0], memory.list(kind="convention", limit=1)[0]
    memory.writer.write(ops.PutLinks("SUPERSEDES", [
        {"source": new.id, "target": old.id, "at": 12.5, "surface": "hand-made edge"}]))
    source = memory.store.export_rows()
    assert len(source["SUPERSEDES"]) == 2
    records = memory.export_items()
    path = tmp_path / name
    path.write_text(to_markdown(memory.project, records) if name.endswith(".md")
                    else "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    with Memory(Config(home=home, cwd=other)) as fresh:
        fresh.import_items(read_export(path))
        target = fresh.store.export_rows()
        # MENTIONS and ANCHORED_TO are derived again from text, files and symbols; code edges
        # and DERIVED_FROM (session observations) are not part of an export
        for table in ("SUPERSEDES", "MENTIONS", "ANCHORED_TO"):
            assert target[table] == source[table], table
        fresh.rebuild()  # the edges are journaled, not just in the graph
        assert fresh.store.export_rows()["SUPERSEDES"] == source["SUPERSEDES"]
        assert [{**r, "project": memory.project} for r in fresh.export_items()] == records


def test_import_skips_supersession_edges_to_unknown_items(memory: Memory, home: Path,
                                                          tmp_path: Path) -> None:
    _fill(memory)
    records = [r for r in memory.export_items() if r["status"] != "superseded"]
    assert any(r["supersedes"] for r in records)
    records.append({**records[0], "id": "broken", "supersedes": [{"at": 1.0}]})
    other = tmp_path / "other"
    other.mkdir()
    with Memory(Config(home=home, cwd=other)) as fresh:
        with pytest.raises(InvalidInput, match="supersedes"):
            fresh.import_items(records)
        assert fresh.import_items(records[:-1]) == len(records) - 1
        assert fresh.store.export_rows()["SUPERSEDES"] == []


def _broken(text: str) -> str:
    """Break the metadata JSON of the second record (a hand edit gone wrong)."""
    marks = [i for i in range(len(text)) if text.startswith("<!-- graphmem:", i)]
    start = text.index('"kind"', marks[1])
    return text[:start] + text[start + 1:]


@pytest.mark.parametrize("name, edit, message", [
    ("broken-meta.md", _broken, "broken metadata"),
    ("not-json.jsonl", lambda text: "these are my notes, not an export\n", "not JSON"),
    ("no-title.jsonl", None, "title"),
])
def test_a_hand_edited_export_with_errors_imports_nothing(memory: Memory, home: Path,
                                                          tmp_path: Path, name: str, edit: Any,
                                                          message: str) -> None:
    _fill(memory)
    records = memory.export_items()
    path = tmp_path / name
    if edit is None:
        del records[1]["title"]
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    else:
        path.write_text(edit(to_markdown(memory.project, records)), encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    with Memory(Config(home=home, cwd=other)) as target:
        kept = target.add("Existing fact in the target store stays", kind="fact")
        with pytest.raises(InvalidInput, match=message):
            target.import_items(read_export(path))
        assert [r["id"] for r in target.export_items()] == [kept.id]


def test_a_section_without_its_metadata_line_is_an_error(memory: Memory, tmp_path: Path) -> None:
    _fill(memory)
    text = to_markdown(memory.project, memory.export_items())
    lines = text.splitlines()
    first_mark = next(n for n, line in enumerate(lines) if line.startswith("<!-- graphmem:"))
    path = tmp_path / "lost-mark.md"
    path.write_text("\n".join(lines[:first_mark] + lines[first_mark + 1:]), encoding="utf-8")
    with pytest.raises(InvalidInput):
        read_export(path)


# ----- CLI --------------------------------------------------------------------------------------
def test_cli_sweep_dry_run_and_history(capsys: pytest.CaptureFixture[str], home: Path,
                                       repo: Path) -> None:
    now = time.time()
    with Memory(Config(home=home, cwd=repo)) as memory:
        cold = memory.add("Decision: the fax gateway keeps its own database", kind="decision",
                          created_at=now - 3 * 365 * DAY)
        rows_before = memory.store.export_rows()
    assert main(["add", "--kind", "task", "Task: drop the fax gateway", "--cwd", str(repo)]) == 0
    task_id = capsys.readouterr().out.split()[1]
    assert main(["feedback", task_id, "helpful", "--cwd", str(repo)]) == 0
    capsys.readouterr()
    assert main(["sweep", "--dry-run", "--json", "--cwd", str(repo)]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan == {"dry_run": True, "archive_expired": [], "archive_cold": [cold.id],
                    "purge": []}
    assert main(["sweep", "--dry-run", "--cwd", str(repo)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("would archive 0 expired, 1 cold") and cold.id in out
    assert main(["history", task_id, "--json", "--cwd", str(repo)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["by"], r["op"]) for r in rows][:1] == [("cli:add", "put_items")]
    assert ("cli:feedback", "update_items") in [(r["by"], r["op"]) for r in rows]
    assert main(["history", task_id, "--cwd", str(repo)]) == 0
    assert "cli:add" in capsys.readouterr().out
    assert main(["history", "no-such-id", "--cwd", str(repo)]) != 0
    assert "no memory with id" in capsys.readouterr().err
    with Memory(Config(home=home, cwd=repo)) as memory:
        assert memory.get_item(cold.id).status is ItemStatus.active  # the dry run changed nothing
        assert [r for r in memory.store.export_rows()["Item"] if r["id"] == cold.id] == \
            [r for r in rows_before["Item"] if r["id"] == cold.id]


@pytest.mark.parametrize("name", ["export.jsonl", "export.md"])
def test_export_import_keeps_anchors_and_non_code_mentions(memory: Memory, home: Path, repo: Path,
                                                           tmp_path: Path, name: str) -> None:
    """An anchor records what the item said of the code at its commit: re-anchoring on import
    to the importing store's code would silently make a stale item fresh. A commit an item
    mentions is not in its text, so it cannot be derived again either."""
    from tests.conftest import git

    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "add", "calc.py")
    git(repo, "commit", "-q", "-m", "calc")
    memory.index_code()
    item = memory.add("add sums two numbers", symbols=["add"])
    memory.writer.write(ops.PutEntities([{"id": "commit:0123456789ab", "kind": "commit",
                                                   "name": "0123456789ab"}]))
    memory.writer.write(ops.PutLinks("MENTIONS", [
        {"source": item.id, "target": "commit:0123456789ab", "weight": 1.0,
         "surface": "0123456789ab"}]))
    source = memory.store.export_rows()
    assert any(r["target"] == "commit:0123456789ab" for r in source["MENTIONS"])
    assert source["ANCHORED_TO"]
    path = tmp_path / name
    records = memory.export_items()
    path.write_text(to_markdown(memory.project, records) if name.endswith(".md")
                    else "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    other = tmp_path / "other"  # not even a repository: nothing to anchor to there
    other.mkdir()
    with Memory(Config(home=home, cwd=other)) as fresh:
        fresh.import_items(read_export(path))
        for table in ("MENTIONS", "ANCHORED_TO"):
            assert fresh.store.export_rows()[table] == source[table], table
        fresh.rebuild()
        assert fresh.store.export_rows()["ANCHORED_TO"] == source["ANCHORED_TO"]
        assert [{**r, "project": memory.project} for r in fresh.export_items()] == records


def _repo_with_db_module(root: Path) -> Path:
    from tests.conftest import git

    (root / "src" / "shop").mkdir(parents=True)
    (root / "src" / "shop" / "db.py").write_text("def connect():\n    return None\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "db")
    return root


def test_an_export_without_anchors_is_anchored_to_the_importing_code(memory: Memory, home: Path,
                                                                     tmp_path: Path) -> None:
    memory.add("ECONNREFUSED in pytest: run make db-up first", kind="pitfall",
               files=["src/shop/db.py"])
    records = [{k: v for k, v in r.items() if k not in ("anchors", "mentions")}
               for r in memory.export_items()]
    other = _repo_with_db_module(tmp_path / "other")
    with Memory(Config(home=home, cwd=other)) as fresh:
        fresh.index_code()
        assert fresh.import_items(records) == 1
        anchors = fresh.store.export_rows()["ANCHORED_TO"]
        assert [(a["source"], a["target"]) for a in anchors] == [(records[0]["id"],
                                                                  "file:src/shop/db.py")]
    with pytest.raises(InvalidInput, match="record 1"):
        memory.import_items([{**records[0], "anchors": [{"entity": {"id": "x"}}]}])


def test_imported_placeholders_resolve_to_the_importing_code(memory: Memory, home: Path,
                                                             tmp_path: Path) -> None:
    """A file the exporting store had not indexed is a placeholder (`file:?src/shop/db.py`):
    where the importing store knows the file, the item links to and is anchored to it."""
    item = memory.add("ECONNREFUSED in pytest: run make db-up first", kind="pitfall",
                      files=["src/shop/db.py"])
    records = memory.export_items()
    assert "file:?src/shop/db.py" in {m["entity"]["id"] for m in records[0]["mentions"]}
    other = _repo_with_db_module(tmp_path / "other")
    with Memory(Config(home=home, cwd=other)) as fresh:
        fresh.index_code()
        fresh.import_items(records)
        rows = fresh.store.export_rows()
        assert not [e for e in rows["Entity"] if e["id"].startswith("file:?")]
        assert {(r["source"], r["target"]) for r in rows["ANCHORED_TO"]} == {
            (item.id, "file:src/shop/db.py")}
        assert (item.id, "file:src/shop/db.py") in {(r["source"], r["target"])
                                                    for r in rows["MENTIONS"]}
