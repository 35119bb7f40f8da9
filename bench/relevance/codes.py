"""A small catalogue of part numbers, versions and SKUs, and the queries a user types for them:
the code compacted (`12lpy035xl`), its first two pieces (`12lpy03`), and spaced (`12lp y03 5
xl`), each asked for a code that sits in a title and for one that sits in the content. Every
code shares pieces with others (the same family prefix, the same last pieces), so only the
code's own pieces pick it out; recall@1 says how often the one document holding it comes first.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

FAMILIES = 12  # family prefixes (12LP, 40KR...), each with several members
MEMBERS = 4
KINDS = ("Bearing", "Seal", "Roller", "Gasket", "Valve", "Bushing")
USES = (
    "for conveyor rollers",
    "for pump housings",
    "for gearbox shafts",
    "for hydraulic lines",
    "for fan assemblies",
)
SEPARATORS = ("-", "/", "'-", ".", "_")
FORMS = ("compact", "partial", "spaced")
LETTERS = "ABCDEFGHJKLMNPRSTUVWXZ"
_PIECE = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Product:
    id: str
    code: str
    where: str  # "title" or "content": which field holds the code
    name: str
    content: str


@dataclass(frozen=True)
class CodeQuery:
    product: str  # the id of the one product holding the code
    where: str
    form: str
    text: str


def pieces(code: str) -> list[str]:
    return _PIECE.findall(code)


def forms(code: str) -> dict[str, str]:
    """What a user types for a code: compacted, its first two pieces compacted, spaced."""
    parts = [p.lower() for p in pieces(code)]
    return {"compact": "".join(parts), "partial": "".join(parts[:2]), "spaced": " ".join(parts)}


def _code(rng: random.Random, family: str, member: int) -> str:
    """`12LP'-Y03/5-XL`-like: the family, a member piece unique within it, a digit, a size."""
    tail = rng.choice(("XL", "XS", "M", "B", "R"))
    joints = [rng.choice(SEPARATORS) for _ in range(3)]
    member_piece = f"{'YKTQ'[member]}{rng.randint(1, 9):02d}"
    digit = rng.randint(1, 9)
    return f"{family}{joints[0]}{member_piece}{joints[1]}{digit}{joints[2]}{tail}"


def catalogue(seed: int = 7) -> list[Product]:
    """FAMILIES × MEMBERS products, half with the code in the title and half in the content."""
    rng = random.Random(seed)
    products: list[Product] = []
    seen: set[str] = set()
    for f in range(FAMILIES):
        family = f"{10 + 3 * f}{rng.choice(LETTERS)}{rng.choice(LETTERS)}"
        for member in range(MEMBERS):
            code = _code(rng, family, member)
            while forms(code)["partial"] in seen:
                code = _code(rng, family, member)
            seen.add(forms(code)["partial"])
            kind, use = rng.choice(KINDS), rng.choice(USES)
            index = len(products)
            if index % 2 == 0:
                name, content = f"{kind} {code}", f"Replacement part, sealed {kind.lower()} {use}."
                where = "title"
            else:
                name, content = f"{kind}", f"Replacement part {code}: sealed {kind.lower()} {use}."
                where = "content"
            products.append(Product(f"p{index:03d}", code, where, name, content))
    return products


def queries(products: list[Product]) -> list[CodeQuery]:
    return [
        CodeQuery(product.id, product.where, form, text)
        for product in products
        for form, text in forms(product.code).items()
    ]


def recall_at_1(first: dict[CodeQuery, str | None]) -> dict[tuple[str, str], float]:
    """Recall@1 by (where the code sits, the form asked), from the id each query found first
    (None for no hit)."""
    cells: dict[tuple[str, str], list[bool]] = {}
    for query, found in first.items():
        cells.setdefault((query.where, query.form), []).append(found == query.product)
    return {cell: sum(hits) / len(hits) for cell, hits in cells.items()}
