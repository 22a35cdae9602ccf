# Type stubs of the polaformer package (the extension polaformer._core).
import os
from typing import Any, Iterable, Sequence, Union

import numpy as np
import numpy.typing as npt

__version__: str

# One image for Model.classify / Model.preprocess: a path, encoded image bytes,
# or decoded uint8 pixels (H x W, or H x W x C with C in 1..4).
Image = Union[str, os.PathLike[str], bytes, bytearray, memoryview, npt.NDArray[np.uint8]]

class Prediction(tuple[str, float]):
    """One class of Model.classify's answer: the pair (class_name, prob), with .index."""

    @property
    def class_name(self) -> str: ...
    @property
    def prob(self) -> float: ...
    @property
    def index(self) -> int:
        """The class's position in Model.classes (class names need not be unique)."""

class Error(Exception): ...
class InputError(Error, ValueError): ...
class InternalError(Error, RuntimeError): ...

class Model:
    """A loaded PolaFormer model file (.pola); usable from several threads at once."""

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        threads: int | None = None,
        precision: str | None = None,
        allow_nonfinite: bool = False,
    ) -> None: ...
    def run(self, x: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """Logits (N, classes) of a preprocessed (N, C, H, W) batch, at any H x W the model accepts."""
    def classify(
        self, images: Union[Image, Iterable[Image]], top: int = 5, batch: int = 32
    ) -> list[list[Prediction]]:
        """The `top` (class, probability) pairs of each image, best first, with their class indices."""
    def preprocess(self, image: Image) -> npt.NDArray[np.float32]:
        """One image preprocessed as the model prescribes: (C, H, W) float32."""
    def features(
        self, x: npt.ArrayLike, stages: Iterable[int] | None = None, pooled: bool = True
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Backbone features at any valid H x W: {"stage<i>": (N, C, h, w), "pooled": (N, C)}."""
    def memory_need(self, batch: int = 1, height: int | None = None, width: int | None = None) -> dict[str, int]:
        """Bytes a run allocates ("working", "inputs", "outputs", "total") and "available" now."""
    @property
    def info(self) -> dict[str, Any]:
        """The model's self-description (family, config, classes, preprocess, parameters, ...)."""
    @property
    def classes(self) -> list[str]: ...
    @property
    def num_classes(self) -> int: ...
    @property
    def input_shape(self) -> tuple[int, int, int]: ...
    @property
    def path(self) -> str: ...
    @property
    def threads(self) -> int:
        """Engine threads per run (threads=None or 0 resolved to the core count)."""
    @property
    def precision(self) -> str: ...

def convert(
    checkpoint: Union[str, os.PathLike[str]],
    output: Union[str, os.PathLike[str]],
    labels: Union[str, os.PathLike[str], Sequence[str], None] = None,
    arch: str | None = None,
    mean: Union[float, Sequence[float], None] = None,
    std: Union[float, Sequence[float], None] = None,
    resize: int | None = None,
    crop: int | None = None,
    interpolation: str | None = None,
    dtype: str | None = None,
    weights: str | None = None,
) -> None:
    """A checkpoint (.pth / .safetensors / .pola) -> a .pola model file, as `pola convert`."""
