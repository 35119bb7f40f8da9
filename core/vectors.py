"""Vector value types shared by the lexical encoders, the encoders and the store."""

from pydantic import BaseModel


class SparseVector(BaseModel):
    """A sparse vector: parallel lists of token ids (31-bit) and weights, ids unique."""

    indices: list[int]
    values: list[float]

    def __len__(self) -> int:
        return len(self.indices)


DenseVector = list[float]
