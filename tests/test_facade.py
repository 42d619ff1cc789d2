"""The public facade: every advertised name exists and errors subclass the built-ins."""

from __future__ import annotations

import types

import pytest

import readplan
from readplan import errors


def test_every_public_name_is_importable() -> None:
    for name in readplan.__all__:
        assert getattr(readplan, name) is not None, name


def test_public_names_are_unique() -> None:
    assert len(readplan.__all__) == len(set(readplan.__all__))


def test_every_error_is_a_readplan_error_and_a_builtin() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, readplan.ReadplanError)
        if cls is readplan.MissingExtraError:
            assert issubclass(cls, ImportError)
        elif cls is not readplan.ReadplanError:
            assert issubclass(cls, (ValueError, TypeError, IndexError, OSError)), name
    assert issubclass(readplan.UnsupportedSplitError, NotImplementedError)
    assert issubclass(errors.StorageError, OSError)
    assert issubclass(errors.ObjectNotFoundError, FileNotFoundError)
    assert issubclass(errors.StoragePermissionError, PermissionError)
    assert issubclass(errors.ConfigTypeError, errors.ConfigError)
    assert issubclass(errors.ConfigTypeError, TypeError)
    assert issubclass(errors.ReadplanIndexError, IndexError)


def test_every_error_can_be_rebuilt_from_its_message_alone() -> None:
    # PyTorch re-raises a DataLoader worker's exception as `type(err)(message)`.
    for name in errors.__all__:
        cls = getattr(errors, name)
        rebuilt = cls("boom")
        assert str(rebuilt) == "boom"


def test_misuse_raises_readplan_errors_that_are_also_the_builtin() -> None:
    """Wrong types and out-of-range keys are ReadplanErrors, caught by TypeError/IndexError."""
    with pytest.raises(readplan.ReadplanTypeError):
        readplan.ReadInstruction(3)  # type: ignore[arg-type]
    with pytest.raises(readplan.ReadplanTypeError):
        readplan.parse_split(b"train")  # type: ignore[arg-type]
    with pytest.raises(readplan.ReadplanTypeError):
        readplan.FileInstruction("f", "0", 1, 2)  # type: ignore[arg-type]


def test_all_names_exactly_the_public_globals() -> None:
    public = {
        name
        for name, value in vars(readplan).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(readplan.__all__) - {"__version__"}


@pytest.mark.parametrize(
    ("names", "namespace", "message"),
    [
        (["b", "a"], {"a": 1, "b": 2}, "sorted"),
        (["a", "a"], {"a": 1}, "sorted"),
        (["a", "b"], {"a": 1}, "undefined \\['b'\\]"),
        (["a"], {"a": 1, "b": 2}, "missing from __all__: \\['b'\\]"),
    ],
)
def test_the_facade_check_fails_in_both_directions(
    names: list[str], namespace: dict[str, object], message: str
) -> None:
    with pytest.raises(ImportError, match=message):
        readplan._check_facade(names, namespace)
    readplan._check_facade(sorted(namespace), {**namespace, "_private": 0, "sub": types})


def test_import_readplan_binds_the_documented_submodules() -> None:
    """``import readplan`` alone reaches ``readplan.example.decode`` and its siblings (a fresh
    interpreter: other tests import the submodules themselves)."""
    import subprocess
    import sys

    code = (
        "import readplan; "
        "print(readplan.example.decode.__name__, readplan.tfrecord.read.__name__, "
        "readplan.index.build_index.__name__, readplan.tbl.TblFile.__name__, "
        "readplan.features.Image.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["decode", "read", "build_index", "TblFile", "Image"]
