"""Lexical (keyword) sparse encoders: wmtr, full_text, trigrams, whitespace."""

from core.lexical.encode import (
    DocumentTerms,
    LexicalParams,
    document_length,
    document_vector,
    document_vectors,
    is_lookup,
    query_vector,
)
from core.lexical.tokens import token_id

__all__ = [
    "DocumentTerms",
    "LexicalParams",
    "document_length",
    "document_vector",
    "document_vectors",
    "is_lookup",
    "query_vector",
    "token_id",
]
