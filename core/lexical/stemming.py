"""Snowball stemming by 2-letter language code, cached for the hot path."""

import threading
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

import snowballstemmer

SNOWBALL_LANGUAGES: Mapping[str, str] = MappingProxyType(
    {
        "ar": "arabic",
        "ca": "catalan",
        "cs": "czech",
        "da": "danish",
        "de": "german",
        "el": "greek",
        "en": "english",
        "eo": "esperanto",
        "es": "spanish",
        "et": "estonian",
        "eu": "basque",
        "fa": "persian",
        "fi": "finnish",
        "fr": "french",
        "ga": "irish",
        "hi": "hindi",
        "hu": "hungarian",
        "hy": "armenian",
        "id": "indonesian",
        "it": "italian",
        "lt": "lithuanian",
        "nb": "norwegian",
        "ne": "nepali",
        "nl": "dutch",
        "nn": "norwegian",
        "no": "norwegian",
        "pl": "polish",
        "pt": "portuguese",
        "ro": "romanian",
        "ru": "russian",
        "sr": "serbian",
        "st": "sesotho",
        "sv": "swedish",
        "ta": "tamil",
        "tr": "turkish",
        "yi": "yiddish",
    }
)


class _Stemmer:
    """A snowball stemmer keeps per-call state on itself, so calls are serialised."""

    def __init__(self, algorithm: str) -> None:
        self._stemmer = snowballstemmer.stemmer(algorithm)
        self._lock = threading.Lock()

    def stem(self, word: str) -> str:
        with self._lock:
            return str(self._stemmer.stemWord(word))


@lru_cache(maxsize=64)
def _stemmer(language: str) -> _Stemmer | None:
    algorithm = SNOWBALL_LANGUAGES.get(language)
    if algorithm is None or algorithm not in snowballstemmer.algorithms():
        return None
    return _Stemmer(algorithm)


def stem(word: str, language: str) -> str:
    """The snowball stem of a casefolded word; the word itself if unsupported."""
    stemmer = _stemmer(language.lower())
    return word if stemmer is None else stemmer.stem(word)
