"""The BM25 reference a user would pick: bm25s over title + text in one field, English stop words
and the Snowball stemmer (PyStemmer), its default parameters (Lucene's BM25, k1 1.5, b 0.75)."""

from __future__ import annotations

from bench.relevance.beir import RelevanceSet


def bm25_runs(data: RelevanceSet, depth: int = 100) -> dict[str, list[str]]:
    import bm25s  # the benchmark's own dependencies, not Braid's
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    texts = [f"{record.title} {record.text}" for record in data.corpus]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    queries = bm25s.tokenize(
        [q.text for q in data.queries], stopwords="en", stemmer=stemmer, show_progress=False
    )
    found, _ = retriever.retrieve(queries, k=depth, show_progress=False)
    return {
        query.id: [data.corpus[int(i)].id for i in found[row]]
        for row, query in enumerate(data.queries)
    }
