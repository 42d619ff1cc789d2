"""One shard read: TFDS's FileInstruction (``specs/splits.md`` §5).

:mod:`readplan.planning.instructions` computes them from split strings.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from readplan._internal.frozen import init_fields
from readplan._internal.validate import is_int
from readplan.errors import ReadplanTypeError, SplitError

__all__ = ["FileInstruction"]


@dataclass(frozen=True, init=False)
class FileInstruction:
    """Read records ``[skip, skip + take)`` of one shard file (TFDS's FileInstruction).

    ``examples_in_shard`` is the file's record count, not the number read.  A ``take`` of
    ``-1`` is replaced by ``examples_in_shard - skip``; any other negative ``take`` comes
    from TFDS's inverted-range quirk and is kept (tf.data then reads the rest of the file,
    see :attr:`num_records`).  ``split`` and ``shard_index`` say which shard the file is.
    """

    filename: str
    skip: int
    take: int
    examples_in_shard: int
    _: KW_ONLY
    split: str | None
    shard_index: int | None

    def __init__(
        self,
        filename: str,
        skip: int,
        take: int,
        examples_in_shard: int,
        *,
        split: str | None = None,
        shard_index: int | None = None,
    ) -> None:
        if is_int(take) and take == -1 and is_int(skip) and is_int(examples_in_shard):
            take = examples_in_shard - skip  # TFDS's "the rest of the shard"
        init_fields(
            self,
            filename=filename,
            skip=skip,
            take=take,
            examples_in_shard=examples_in_shard,
            split=split,
            shard_index=shard_index,
        )
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.filename, str):
            raise ReadplanTypeError(f"filename must be a str, got {self.filename!r}")
        for name in ("skip", "take", "examples_in_shard"):
            if not is_int(getattr(self, name)):
                raise ReadplanTypeError(f"{name} must be an int, got {getattr(self, name)!r}")
        self._check_ranges()
        if self.split is not None and not isinstance(self.split, str):
            raise ReadplanTypeError(f"split must be a str or None, got {self.split!r}")
        if self.shard_index is not None and not is_int(self.shard_index):
            raise ReadplanTypeError(f"shard_index must be an int or None, got {self.shard_index!r}")
        if self.shard_index is not None and self.shard_index < 0:
            raise SplitError(f"shard_index must not be negative, got {self.shard_index}")

    def _check_ranges(self) -> None:
        size, skip, take = self.examples_in_shard, self.skip, self.take
        if size < 0:
            message = f"examples_in_shard should be >= 0! Was {size}."
            why = "A shard file cannot hold a negative number of records."
        elif skip < 0 or skip > size:
            message = f"skip should be between 0 and {size}! Was {skip}."
            why = f"{self.filename} holds {size} records, so at most {size} can be skipped."
        elif skip + take > size:
            message = f"skip ({skip}) + take ({take}) should be <= examples_in_shard ({size})!"
            why = f"{self.filename} holds {size} records; reading {take} after {skip} overruns it."
        else:
            return
        raise SplitError(f"{message}\n{why}", tfds_message=message)

    @property
    def num_records(self) -> int:
        """Records actually read: ``take``, or the rest of the file for a negative take."""
        return self.take if self.take >= 0 else self.examples_in_shard - self.skip

    @property
    def takes_all(self) -> bool:
        """True when the instruction reads through to the end of the file."""
        return self.skip + self.take == self.examples_in_shard
