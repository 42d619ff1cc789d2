"""Hostile ``features.json`` files and records: refused with a FeatureError or ExampleError
naming the feature, never a bare Python error, and never allocating what a declared shape,
a header or a compressed stream claims (``specs/features.md`` §5).

The cases that would allocate gigabytes on a decoder without the bounds run in a child
process whose address space is capped, so the test fails (MemoryError) rather than
swapping.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from readplan.errors import ConfigError, ExampleError, FeatureError
from readplan.example import encode
from readplan.metadata._images import decode_image
from readplan.metadata._limits import DEFAULT_MAX_VALUE_BYTES, MAX_FEATURE_DEPTH
from readplan.metadata.features import (
    ClassLabel,
    FeaturesDict,
    Image,
    Sequence,
    Tensor,
    load_features,
)
from tests.hostile_images import gif_claiming, jpeg_claiming, png_claiming
from tests.memory_bound import GIB, run_bounded

PACKAGE = "tensorflow_datasets.core.features."


def _dict(**features: Any) -> dict[str, Any]:
    return {
        "pythonClassName": PACKAGE + "features_dict.FeaturesDict",
        "featuresDict": {"features": features},
    }


def _label(num_classes: Any) -> dict[str, Any]:
    return {
        "pythonClassName": PACKAGE + "class_label_feature.ClassLabel",
        "classLabel": {"numClasses": num_classes},
    }


def _tensor(*dims: Any) -> dict[str, Any]:
    return {
        "pythonClassName": PACKAGE + "tensor_feature.Tensor",
        "tensor": {"dtype": "int64", "shape": {"dimensions": list(dims)}},
    }


def _load(tmp_path: Path, text: str) -> Any:
    (tmp_path / "features.json").write_text(text, encoding="utf-8")
    return load_features(tmp_path)


def _nested(depth: int) -> dict[str, Any]:
    """FeaturesDicts nested so that the leaf Tensor is the ``depth``-th level."""
    declaration = _dict(leaf=_tensor())
    for _ in range(depth - 2):
        declaration = _dict(inner=declaration)
    return declaration


# --- features.json -------------------------------------------------------------------------------


def test_json_nested_past_the_parser_is_a_feature_error(tmp_path: Path) -> None:
    with pytest.raises(FeatureError, match="nests JSON values too deeply") as err:
        _load(tmp_path, "[" * 100_000)
    assert err.value.path == str(tmp_path / "features.json")
    with pytest.raises(FeatureError, match="too deeply"):
        _load(tmp_path, _deep_text(3_000))


def _deep_text(depth: int) -> str:
    # json.dumps itself refuses this depth: build the text by hand.
    head = '{"pythonClassName": "%sfeatures_dict.FeaturesDict", "featuresDict": {"features": {"a": '
    leaf = json.dumps(_tensor())
    return (head % PACKAGE) * depth + leaf + "}}}" * depth


def test_features_nested_deeper_than_the_limit_are_refused_located(tmp_path: Path) -> None:
    features = _load(tmp_path, json.dumps(_nested(MAX_FEATURE_DEPTH)))
    assert isinstance(features, FeaturesDict)
    with pytest.raises(FeatureError, match=f"more than {MAX_FEATURE_DEPTH} levels") as err:
        _load(tmp_path, json.dumps(_nested(MAX_FEATURE_DEPTH + 1)))
    assert err.value.feature == "/".join(["inner"] * (MAX_FEATURE_DEPTH - 1) + ["leaf"])
    sequences: dict[str, Any] = _tensor()
    for _ in range(MAX_FEATURE_DEPTH):
        sequences = {
            "pythonClassName": PACKAGE + "sequence_feature.Sequence",
            "sequence": {"feature": sequences, "length": "-1"},
        }
    with pytest.raises(FeatureError, match="levels deep"):
        _load(tmp_path, json.dumps(_dict(s=sequences)))


@pytest.mark.parametrize(
    ("declaration", "feature", "message"),
    [
        (_dict(label=_label("7" * 5_000)), "label", "numClasses is a number of 5000 digits"),
        (_dict(x=_tensor("3" * 4_301)), "x", "shape dimension is a number of 4301 digits"),
        (_dict(x=_tensor(str(2**63))), "x", "must be an int64"),
        (_dict(x=_tensor(-(2**63) - 1)), "x", "must be an int64"),
    ],
)
def test_numbers_beyond_int64_are_refused_located(
    tmp_path: Path, declaration: Any, feature: str, message: str
) -> None:
    with pytest.raises(FeatureError, match=message) as err:
        _load(tmp_path, json.dumps(declaration))
    assert err.value.feature == feature
    assert err.value.path == str(tmp_path / "features.json")


def test_json_numbers_of_thousands_of_digits_are_refused_located(tmp_path: Path) -> None:
    text = json.dumps(_dict(label=_label(0))).replace(
        '"numClasses": 0', '"numClasses": ' + "9" * 5_000
    )
    with pytest.raises(FeatureError, match="numClasses is a number of 5000 digits") as err:
        _load(tmp_path, text)
    assert err.value.feature == "label"


def test_huge_declared_shapes_are_refused_when_no_array_can_have_them() -> None:
    features = FeaturesDict({"x": Sequence(Tensor((2**40, 2**40), "int64"))})
    with pytest.raises(FeatureError, match="larger than any array can be") as err:
        features.decode(b"")
    assert err.value.feature == "x"


# --- class names ---------------------------------------------------------------------------------


def test_a_quadrillion_class_label_builds_its_names_on_demand() -> None:
    out = run_bounded(
        """
        import json, tempfile, pathlib
        from readplan.metadata.features import load_features
        tmp = pathlib.Path(tempfile.mkdtemp())
        label = {"pythonClassName": "tensorflow_datasets.core.features.class_label_feature."
                 "ClassLabel", "classLabel": {"numClasses": str(10**15)}}
        (tmp / "features.json").write_text(json.dumps({"pythonClassName":
            "tensorflow_datasets.core.features.features_dict.FeaturesDict",
            "featuresDict": {"features": {"label": label}}}))
        features = load_features(tmp)
        label = features["label"]
        names = len(label.names)
        print(names, label.int2str(10**15 - 1), label.str2int("123"), hash(features) != 0)
        """,
        address_space=GIB // 2,
        timeout=60,
    )
    assert out.split() == [str(10**15), str(10**15 - 1), "123", "True"]


def test_default_names_behave_as_the_tuple_of_names() -> None:
    label = ClassLabel(3)
    assert label.names == ("0", "1", "2")
    assert label.names == ("0", "1", "2")
    assert label == ClassLabel(3, ("0", "1", "2"))
    assert hash(label) == hash(ClassLabel(3, ["0", "1", "2"]))
    assert list(label.names) == ["0", "1", "2"]
    assert label.names[-1] == "2"
    assert label.names[1:] == ("1", "2")
    assert "2" in label.names
    assert "02" not in label.names
    assert "3" not in label.names
    assert label.str2int("2") == 2
    with pytest.raises(FeatureError, match="'02' is not a class name"):
        label.str2int("02")
    with pytest.raises(FeatureError, match="outside"):
        label.int2str(3)
    assert ClassLabel(3) != ClassLabel(3, ("a", "b", "c"))
    huge = ClassLabel(10**15)
    with pytest.raises(FeatureError, match=r"\.\.\. \(1000000000000000 names\)"):
        huge.str2int("x")


# --- optional tensors ----------------------------------------------------------------------------


def test_an_absent_optional_tensor_is_not_allocated_past_the_cap() -> None:
    out = run_bounded(
        """
        from readplan.errors import FeatureError
        from readplan.metadata.features import FeaturesDict, Tensor
        features = FeaturesDict({"big": Tensor((100000, 100000), "int64", optional=True)})
        try:
            features.decode(b"")
        except FeatureError as err:
            print(err.feature, "|", err)
        """,
        address_space=GIB,
        timeout=60,
    )
    assert out.startswith("big |")
    assert "80000000000 bytes" in out
    assert "max_value_bytes" in out


def test_an_absent_optional_tensor_within_the_cap_is_its_default() -> None:
    features = FeaturesDict({"v": Tensor((2, 3), "int8", optional=True)})
    got = features.decode(b"", max_value_bytes=6)
    assert got["v"].shape == (2, 3)
    assert (got["v"] == -128).all()
    got["v"][0, 0] = 1  # an ordinary writable array, as TFDS yields
    with pytest.raises(FeatureError, match="6 bytes"):
        features.decode(b"", max_value_bytes=5)
    with pytest.raises(FeatureError, match="6 bytes"):
        features.batch_decoder(max_value_bytes=5)([b"", b""])


# --- zlib-encoded tensors ------------------------------------------------------------------------


def _zeros_deflated(size: int) -> bytes:
    deflate = zlib.compressobj(9)
    block = bytes(2**20)
    parts = [deflate.compress(block) for _ in range(size // len(block))]
    return b"".join([*parts, deflate.flush()])


def test_a_zlib_bomb_is_inflated_only_as_far_as_the_shape_holds() -> None:
    out = run_bounded(
        """
        import zlib
        from readplan.errors import ExampleError
        from readplan.example import encode
        from readplan.metadata.features import FeaturesDict, Tensor
        from tests.test_features_limits import _zeros_deflated
        bomb = _zeros_deflated(2**30)
        features = FeaturesDict({"t": Tensor((4,), "int64", "zlib")})
        try:
            features.decode(encode({"t": bomb}))
        except ExampleError as err:
            print(len(bomb) < 2**21, err.key, "|", err)
        """,
        address_space=GIB // 2,
        timeout=120,
    )
    assert out.startswith("True t |")
    assert "more than the 32 bytes its shape holds" in out


def test_zlib_tensors_fill_their_shape_exactly_or_are_refused() -> None:
    features = FeaturesDict({"t": Tensor((4,), "int64", "zlib")})
    values = np.arange(4, dtype="<i8")
    assert features.decode(encode({"t": zlib.compress(values.tobytes())}))["t"].tolist() == [
        0,
        1,
        2,
        3,
    ]
    with pytest.raises(ExampleError, match="more than the 32 bytes"):
        features.decode(encode({"t": zlib.compress(values.tobytes() + b"\x00")}))
    with pytest.raises(ExampleError, match="do not fill"):
        features.decode(encode({"t": zlib.compress(values.tobytes()[:24])}))
    with pytest.raises(ExampleError, match="truncated"):
        features.decode(encode({"t": zlib.compress(values.tobytes())[:-2]}))


def test_zlib_tensors_of_unknown_length_are_bounded_by_the_cap() -> None:
    features = FeaturesDict({"t": Tensor((None,), "int64", "zlib")})
    record = encode({"t": zlib.compress(bytes(8 * 100))})
    assert features.decode(record, max_value_bytes=800)["t"].shape == (100,)
    with pytest.raises(FeatureError, match="more than the 799 bytes") as err:
        features.decode(record, max_value_bytes=799)
    assert err.value.feature == "t"
    many = FeaturesDict({"t": Sequence(Tensor((None,), "int64", "zlib"))})
    records = encode({"t": [zlib.compress(bytes(8 * 100))] * 3})
    assert many.decode(records, max_value_bytes=2400)["t"].shape == (3, 100)
    with pytest.raises(FeatureError, match=r"the 799 bytes .*max_value_bytes=2399"):
        many.decode(records, max_value_bytes=2399)  # the third has 799 of 2,399 left
    fixed = FeaturesDict({"t": Tensor((1000,), "int64", "bytes")})
    with pytest.raises(FeatureError, match="takes 8000 bytes"):
        fixed.decode(encode({"t": bytes(8000)}), max_value_bytes=7999)


# --- images --------------------------------------------------------------------------------------


def test_a_png_bomb_header_is_refused_before_pillow_sees_it() -> None:
    bomb = png_claiming(100_000, 100_000)
    features = FeaturesDict({"img": Image()})
    with pytest.raises(FeatureError, match="100000 x 100000 pixels") as err:
        features.decode(encode({"img": bomb}))
    assert err.value.feature == "img"
    assert "max_value_bytes" in str(err.value)


@pytest.mark.parametrize(
    ("image", "declared"),
    [
        ("png_claiming(12000, 12000)", (28, 28, 3)),
        ("jpeg_claiming(65000, 65000)", (16, 16, 3)),
        ("jpeg_claiming(30000, 30000, gray=True)", (None, None, 1)),
        ("png_claiming(30000, 30000, color_type=0)", (None, None, 1)),
    ],
)
def test_image_headers_the_feature_cannot_hold_are_refused_unallocated(
    image: str, declared: tuple[int | None, ...]
) -> None:
    out = run_bounded(
        f"""
        from readplan.errors import FeatureError
        from readplan.example import encode
        from readplan.metadata.features import FeaturesDict, Image
        from tests.hostile_images import gif_claiming, jpeg_claiming, png_claiming
        features = FeaturesDict({{"img": Image({declared!r})}})
        try:
            features.decode(encode({{"img": {image}}}))
        except FeatureError as err:
            print(err.feature, "|", err)
        """,
        address_space=GIB // 2,
        timeout=60,
    )
    assert out.startswith("img |")
    assert "header says" in out
    assert "nothing was decoded" in out


def test_the_image_cap_is_configurable_by_argument_and_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    png = png_claiming(4, 5, rows=4)  # 60 bytes of RGB
    features = FeaturesDict({"img": Image()})
    record = encode({"img": png})
    assert features.decode(record, max_value_bytes=60)["img"].shape == (4, 5, 3)
    with pytest.raises(FeatureError, match="decode to 60 bytes, more than the 59 bytes"):
        features.decode(record, max_value_bytes=59)
    monkeypatch.setenv("READPLAN_MAX_VALUE_BYTES", "59")
    with pytest.raises(FeatureError, match="the 59 bytes"):
        features.decode(record)
    assert features.decode(record, max_value_bytes=60)["img"].shape == (4, 5, 3)
    monkeypatch.setenv("READPLAN_MAX_VALUE_BYTES", "lots")
    with pytest.raises(ConfigError, match="READPLAN_MAX_VALUE_BYTES='lots'"):
        features.decode(record)
    monkeypatch.delenv("READPLAN_MAX_VALUE_BYTES")
    assert features.decoder() is features.decoder(max_value_bytes=DEFAULT_MAX_VALUE_BYTES)
    with pytest.raises(ConfigError, match="max_value_bytes=-1"):
        features.decode(record, max_value_bytes=-1)


def test_a_sequence_of_images_is_bounded_as_a_whole() -> None:
    png = png_claiming(4, 5, rows=4)
    features = FeaturesDict({"imgs": Sequence(Image())})
    record = encode({"imgs": [png] * 3})
    assert features.decode(record, max_value_bytes=180)["imgs"].shape == (3, 4, 5, 3)
    with pytest.raises(FeatureError, match="more than the 59 bytes"):
        features.decode(record, max_value_bytes=179)  # 120 used, 59 left for the third


def test_genuine_images_decode_as_before() -> None:
    jpeg = jpeg_claiming(16, 16)
    features = FeaturesDict({"img": Image((16, 16, 3))})
    assert features.decode(encode({"img": jpeg}))["img"].shape == (16, 16, 3)
    with pytest.raises(FeatureError, match="header says 16 x 16 pixels"):
        FeaturesDict({"img": Image((16, 17, 3))}).decode(encode({"img": jpeg}))


def test_gif_frames_are_bounded_as_they_are_read() -> None:
    out = run_bounded(
        """
        from readplan.errors import FeatureError
        from readplan.example import encode
        from readplan.metadata.features import FeaturesDict, Image
        from tests.hostile_images import gif_claiming
        bomb = gif_claiming(4000, 4000, frames=50)  # 48 MB a frame, from 14 bytes each
        try:
            FeaturesDict({"img": Image()}).decode(encode({"img": bomb}))
        except FeatureError as err:
            print(len(bomb) < 1000, err.feature, "|", err)
        """,
        address_space=GIB,
        timeout=60,
    )
    assert out.startswith("True img |")
    assert "frame 6 of 4000 x 4000 pixels" in out
    small = gif_claiming(2, 3, frames=2)
    decoded = decode_image(small, channels=None, dtype="uint8", where="g", max_bytes=36)
    assert decoded.shape == (2, 2, 3, 3)  # frames, height, width, channels
    with pytest.raises(FeatureError, match="frame 2 of 3 x 2 pixels"):
        decode_image(small, channels=None, dtype="uint8", where="g", max_bytes=35)
    with pytest.raises(FeatureError, match="header says 2 x 3 pixels"):
        FeaturesDict({"img": Image((3, 3, 3))}).decode(encode({"img": small}))


def test_the_viewer_shows_a_placeholder_for_an_image_bomb() -> None:
    out = run_bounded(
        """
        from readplan.viewer.records import _picture
        from tests.hostile_images import png_claiming
        for size in (100_000, 12_000):
            picture = _picture("img", png_claiming(size, size))
            print(picture["src"], picture["error"])
        """,
        address_space=GIB // 2,
        timeout=60,
    )
    first, second = out.splitlines()
    assert first.startswith("None ")  # Pillow's own bomb error, as a placeholder
    assert second == "None 12000 x 12000 pixels: larger than max_value_bytes allows"


def test_metadata_files_are_read_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "features.json").symlink_to("/dev/zero")
    with pytest.raises(FeatureError, match="not valid JSON"):
        load_features(tmp_path)  # a device's size is 0: nothing is read from it
    (tmp_path / "features.json").unlink()
    (tmp_path / "features.json").write_text(json.dumps(_dict(x=_tensor())) + " " * 100)
    monkeypatch.setenv("READPLAN_MAX_VALUE_BYTES", "100")
    with pytest.raises(FeatureError, match="larger than 100 bytes") as err:
        load_features(tmp_path)
    assert err.value.path == str(tmp_path / "features.json")
    monkeypatch.delenv("READPLAN_MAX_VALUE_BYTES")
    assert isinstance(load_features(tmp_path), FeaturesDict)
