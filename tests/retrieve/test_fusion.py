"""retrieve/fusion.py: pure ranking functions on fixed inputs."""

from __future__ import annotations

import math

import pytest

from graphmem.retrieve import fusion
from graphmem.retrieve.channels import Timeline


def test_ranks_and_rrf() -> None:
    assert fusion.ranks([("a", 0.2), ("b", 0.9), ("c", 0.2)]) == {"b": 1, "a": 2, "c": 3}
    fused = fusion.rrf({"keyword": {"a": 1, "b": 2}, "vector": {"b": 1}, "graph": {"c": 1}},
                       {"keyword": 1.0, "vector": 0.5, "graph": 0.0}, k=60)
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 0.5 / 61})


def test_normalise_min_max_against_the_floor_rank() -> None:
    scaled = fusion.normalise([("a", 10.0), ("b", 6.0), ("c", 2.0), ("d", 1.0)], floor_rank=3)
    assert scaled["a"] == pytest.approx(1.0 + 1e-6)
    assert scaled["b"] == pytest.approx(0.5 + 1e-6 / 2)
    assert scaled["c"] == pytest.approx(1e-6 / 3)  # at the floor: only the order term is left
    assert scaled["d"] == pytest.approx(1e-6 / 4)
    counts = fusion.normalise([("a", 4.0), ("b", 1.0)], count=True)
    assert counts["b"] == pytest.approx(0.25 + 1e-6 / 2)  # every match keeps a share
    assert fusion.normalise([]) == {}
    assert fusion.normalise([("a", 3.0), ("b", 3.0)])["b"] == pytest.approx(1.0 + 1e-6 / 2)


def test_score_fusion_weights_channels() -> None:
    fused = fusion.score_fusion({"keyword": [("a", 8.0), ("b", 4.0), ("c", 0.0)],
                                 "entity": [("b", 2.0), ("c", 1.0)], "vector": [("a", 0.9)]},
                                {"keyword": 1.0, "entity": 2.0, "vector": 0.0}, floor_rank=3)
    assert fused["b"] > fused["c"] > fused["a"]  # two entity matches outweigh one keyword top
    assert fused["c"] == pytest.approx(1e-6 / 3 + 2 * (0.5 + 1e-6 / 2))


def test_propagate_lends_score_to_neighbours() -> None:
    out = fusion.propagate({"q": 1.0, "x": 0.2}, {"q": ("p", "a"), "x": (None, "q")},
                           to_next=0.5, to_previous=0.25)
    assert out == pytest.approx({"q": 1.0 + 0.5 * 0.2, "x": 0.2, "a": 0.5, "p": 0.25})
    assert fusion.propagate({"q": 1.0}, {"q": ("p", "a")}, to_next=0, to_previous=0) == {"q": 1.0}


def test_time_decay_and_idf() -> None:
    assert fusion.time_decay(0.0, 0.0, 365) == 1.0
    assert fusion.time_decay(0.0, 365 * fusion.DAY, 365) == pytest.approx(0.5)
    assert fusion.time_decay(10 * fusion.DAY, 0.0, 365) == 1.0  # never above 1
    assert fusion.time_decay(0.0, 1.0, 0) == 0.0
    assert fusion.idf(1, 100) == pytest.approx(math.log(101))
    assert fusion.idf(100, 100) < fusion.idf(10, 100) < fusion.idf(1, 100)


def test_timeline_neighbours_respect_gap_and_session() -> None:
    rows = [{"id": "c", "created_at": 30.0}, {"id": "a", "created_at": 10.0},
            {"id": "b", "created_at": 20.0, "session_id": "s1"},
            {"id": "far", "created_at": 10_000.0}]
    line = Timeline.from_rows(rows)
    assert line.ids == ["a", "b", "c", "far"]
    assert line.neighbours("b", gap=60) == ("a", "c")
    assert line.neighbours("c", gap=60) == ("b", None)  # "far" is too far away in time
    assert line.neighbours("unknown", gap=60) == (None, None)
    line.add([{"id": "b2", "created_at": 25.0, "session_id": "s2"}, {"id": "a", "created_at": 10.0}])
    assert line.ids == ["a", "b", "b2", "c", "far"] and line.count == 5
    assert line.neighbours("b2", gap=60) == (None, "c")  # b is another session
    assert line.time_of("b2") == 25.0 and line.time_of("nope") is None
    assert line.count_before(25.0) == 2 and line.count_before(None) == 5


def test_graph_shares_the_entity_scale() -> None:
    fused = fusion.score_fusion({"entity": [("a", 4.0)], "graph": [("b", 1.0)]},
                                {"entity": 1.0, "graph": 1.0})
    assert fused["b"] == pytest.approx(0.25 + 1e-6)  # scaled by the entity channel's best
    alone = fusion.score_fusion({"graph": [("b", 1.0)]}, {"graph": 1.0})
    assert alone["b"] == pytest.approx(1.0 + 1e-6)


def test_a_session_summary_ranks_below_an_item_of_equal_standing() -> None:
    from graphmem.config import RetrievalWeights
    from graphmem.retrieve.fusion import prior

    base = {"created_at": 1_000.0, "importance": 0.7, "confidence": 0.7, "status": "active"}
    weights = RetrievalWeights()
    summary = prior({**base, "kind": "summary"}, weights, now=2_000.0)
    pitfall = prior({**base, "kind": "pitfall"}, weights, now=2_000.0)
    assert summary == pytest.approx(pitfall * weights.summary_penalty)


def test_every_channel_has_a_weight_and_an_explain_column() -> None:
    """The channel names are declared once, in fusion.CHANNELS; weights and the explain rows
    follow them."""
    from graphmem.config import RetrievalWeights
    from graphmem.retrieve import render

    assert set(fusion.CHANNELS) <= set(RetrievalWeights.model_fields)
    assert fusion.COUNT_CHANNELS <= set(fusion.CHANNELS)
    assert render.CHANNELS is fusion.CHANNELS


def test_a_brief_line_does_not_hang_on_how_its_id_tokenizes() -> None:
    # The dev sessbench lost a brief hit between two runs of the same build: "… with git CLI to prevent index
    # corruption" became "… with git…" because the new random id cost 4 tokens more.
    from graphmem.models import MemoryItem
    from graphmem.retrieve.render import brief_line
    from graphmem.service import shared_tokens

    tokens = shared_tokens()
    title = "Open Linear issue ENT-242: Replace go-git worktree.Status() with git CLI to prevent index corruption"
    ids = ["s55174260e74f7ee", "sc07504099d0d024", "s0000000000000000", "sffffffffffffffa"]
    assert len({tokens.count(f" [{i}]") for i in ids}) > 1  # the ids do tokenize differently
    lines = {brief_line(MemoryItem(id=i, project="p", kind="task", title=title, body=""), 30, tokens).rsplit(" [", 1)[0]
             for i in ids}
    assert len(lines) == 1, lines
    # an id of another shape (a git import's, an imported one) costs what it costs: the line stays in its room
    for other in ("git-3fa9c1d2e4b7", "imported_" + "ab12" * 10):
        line = brief_line(MemoryItem(id=other, project="p", kind="task", title=title, body=""), 30, tokens)
        assert tokens.count(line) <= 31, (other, tokens.count(line))  # the parts counted apart may join one token
