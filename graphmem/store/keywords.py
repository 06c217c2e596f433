"""Keyword search in memory: BM25 over item text, words stemmed (Snowball English).

Kuzu's full-text index answers a many-word query in 6 ms at 10k items and 40 ms at 100k; these
postings answer it in about a millisecond. Unlike Kuzu's tokenizer, digits are kept: error codes,
ports and versions (E0425, 8080, py311) are what an agent searches for.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from collections.abc import Sequence

import numpy as np
import Stemmer

K1 = 1.2
B = 0.75
WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves"])


class Tokenizer:
    """Lower-cased words and numbers, stopwords out, stemmed."""

    def __init__(self) -> None:
        self._stemmer = Stemmer.Stemmer("english")

    def __call__(self, text: str) -> list[str]:
        words = [w for w in WORD.findall(text.lower()) if w not in STOPWORDS]
        return self._stemmer.stemWords(words) if words else []


class KeywordIndex:
    """BM25 postings by document slot; slots are the mirror's, so its filters apply directly."""

    def __init__(self) -> None:
        self.tokenize = Tokenizer()
        self.vocabulary: dict[str, int] = {}
        self.slots: list[array] = []  # term id -> slots holding the term
        self.counts: list[array] = []  # term id -> the term's count in each of those slots
        self.terms_of: dict[int, array] = {}  # slot -> its term ids (to take it out again)
        self.lengths = np.zeros(1024, dtype=np.float32)  # slot -> number of terms
        self.documents = 0
        self.total_length = 0

    def put(self, slot: int, text: str) -> None:
        """(Re)index one document."""
        self.remove(slot)
        terms = Counter(self.tokenize(text))
        ids = array("i")
        for term, count in terms.items():
            term_id = self.vocabulary.get(term)
            if term_id is None:
                term_id = self.vocabulary[term] = len(self.slots)
                self.slots.append(array("i"))
                self.counts.append(array("i"))
            self.slots[term_id].append(slot)
            self.counts[term_id].append(count)
            ids.append(term_id)
        self.terms_of[slot] = ids
        if slot >= len(self.lengths):
            grown = np.zeros(max(2 * len(self.lengths), slot + 1), dtype=np.float32)
            grown[: len(self.lengths)] = self.lengths
            self.lengths = grown
        self.lengths[slot] = sum(terms.values())
        self.total_length += int(self.lengths[slot])
        self.documents += 1

    def remove(self, slot: int) -> None:
        ids = self.terms_of.pop(slot, None)
        if ids is None:
            return
        for term_id in ids:
            position = self.slots[term_id].index(slot)
            del self.slots[term_id][position]
            del self.counts[term_id][position]
        self.total_length -= int(self.lengths[slot])
        self.lengths[slot] = 0
        self.documents -= 1

    def idf(self, held: int) -> float:
        """BM25's inverse document frequency of a term that `held` documents hold."""
        return math.log(1.0 + (self.documents - held + 0.5) / (held + 0.5))

    def term_weights(self, text: str) -> dict[str, float]:
        """The text's stemmed words, each with its IDF (a word no document holds weighs most)."""
        out: dict[str, float] = {}
        for term in self.tokenize(text):
            term_id = self.vocabulary.get(term)
            out[term] = self.idf(len(self.slots[term_id]) if term_id is not None else 0)
        return out

    def scores(self, query: str, size: int) -> np.ndarray:
        """BM25 score of every slot below `size` (0 where no query word occurs)."""
        out = np.zeros(size, dtype=np.float32)
        documents = self.documents
        if not documents:
            return out
        average = max(self.total_length / documents, 1.0)
        for term in dict.fromkeys(self.tokenize(query)):
            term_id = self.vocabulary.get(term)
            if term_id is None or not self.slots[term_id]:
                continue
            slots = np.frombuffer(self.slots[term_id], dtype=np.int32)
            counts = np.frombuffer(self.counts[term_id], dtype=np.int32).astype(np.float32)
            idf = self.idf(len(slots))
            norm = K1 * (1.0 - B + B * self.lengths[slots] / average)
            out[slots] += idf * counts * (K1 + 1.0) / (counts + norm)
        return out


def top(scores: np.ndarray, keep: np.ndarray, k: int) -> Sequence[int]:
    """Slots of the k best positive scores among those kept, best first."""
    candidates = np.flatnonzero(keep & (scores > 0))
    if not len(candidates) or k <= 0:
        return []
    chosen = candidates[np.argpartition(-scores[candidates], min(k, len(candidates)) - 1)[:k]]
    return chosen[np.argsort(-scores[chosen], kind="stable")].tolist()
