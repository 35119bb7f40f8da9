"""Tokenizing: surface tokens, word pieces, trigrams and the stable token hash."""

import hashlib
import re

# A surface token is a whitespace-separated run minus leading/trailing punctuation:
# it starts and ends with a word character, anything non-space may sit between.
_SURFACE = re.compile(r"\w(?:\S*\w)?")
# Word pieces are the alphanumeric runs inside a surface token (underscore splits too).
_PIECE = re.compile(r"[^\W_]+")

# Trigrams of very long pieces (hashes, base64 blobs) only cost; keep the head.
MAX_TRIGRAM_PIECE = 64

_ID_MASK = 0x7FFFFFFF


def token_id(token: str) -> int:
    """A stable 31-bit id: the same in every process and run (blake2b, never hash())."""
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") & _ID_MASK


def fold(text: str, keep_case: bool) -> str:
    return text if keep_case else text.casefold()


def surface_tokens(text: str) -> list[str]:
    return _SURFACE.findall(text)


def word_pieces(token: str) -> list[str]:
    if token.isalnum():
        return [token]
    return _PIECE.findall(token)


def trigrams(piece: str) -> list[str]:
    """Boundary-padded character trigrams: 'search' -> ' se', 'sea', ..., 'ch '."""
    padded = f" {piece[:MAX_TRIGRAM_PIECE]} "
    return [padded[i : i + 3] for i in range(len(padded) - 2)]


def trigram_count(piece: str) -> int:
    """len(trigrams(piece)) without building them."""
    return min(len(piece), MAX_TRIGRAM_PIECE)
