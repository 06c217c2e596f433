"""In-memory BM25: words, numbers and stems match; removal and re-indexing leave no trace."""

from __future__ import annotations

import numpy as np

from graphmem.store.keywords import KeywordIndex, Tokenizer, top


def ranked(index: KeywordIndex, query: str, size: int) -> list[int]:
    return list(top(index.scores(query, size), np.ones(size, dtype=bool), 10))


def test_tokens_keep_numbers_and_codes_and_stem_words() -> None:
    tokens = Tokenizer()("The parser retries E0425 on port 8080, and the tests are RETRYING")
    assert "e0425" in tokens and "8080" in tokens
    assert "the" not in tokens and "and" not in tokens
    assert tokens.count(Tokenizer()("retry")[0]) >= 2  # retries, retrying -> one stem


def test_bm25_prefers_rarer_words_and_shorter_documents() -> None:
    index = KeywordIndex()
    index.put(0, "timeout in the http client when the proxy is slow")
    index.put(1, "timeout")
    index.put(2, "the proxy needs NO_PROXY set for localhost")
    index.put(3, "unrelated note about the build")
    assert ranked(index, "timeout", 4) == [1, 0]
    assert ranked(index, "proxy timeout", 4)[0] == 0  # both words beat one
    assert ranked(index, "nothing matches", 4) == []
    assert ranked(index, "", 4) == []


def test_removal_and_reindexing_forget_old_words() -> None:
    index = KeywordIndex()
    index.put(0, "alpha beta")
    index.put(1, "alpha gamma")
    index.put(0, "delta")  # re-indexed: alpha and beta are gone from slot 0
    assert ranked(index, "beta", 2) == []
    assert ranked(index, "alpha", 2) == [1]
    index.remove(1)
    index.remove(1)  # twice is harmless
    assert ranked(index, "alpha gamma", 2) == []
    assert (index.documents, index.total_length) == (1, 1)


def test_filter_mask_and_k_apply() -> None:
    index = KeywordIndex()
    for slot in range(6):
        index.put(slot, "cache " * (slot + 1))
    keep = np.array([True, False, True, False, True, False])
    chosen = list(top(index.scores("cache", 6), keep, 2))
    assert len(chosen) == 2 and set(chosen) <= {0, 2, 4}
    assert list(top(index.scores("cache", 6), keep, 0)) == []


def test_term_weights_rank_words_by_rarity() -> None:
    index = KeywordIndex()
    for slot, text in enumerate(["fix the proxy", "fix the timeout", "fix redirects", "docs"]):
        index.put(slot, text)
    weights = index.term_weights("fix the redirect handling")
    assert "the" not in weights
    assert weights["fix"] < weights["redirect"] < weights["handl"]  # held by 3, 1, 0 documents
    assert KeywordIndex().term_weights("anything")["anyth"] > 0
