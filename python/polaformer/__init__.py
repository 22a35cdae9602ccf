"""PolaFormer CPU inference engine, from Python.

    import polaformer
    m = polaformer.Model("models/fashion_pola_pvt.pola")
    m.classify(["models/samples/0000_ankle-boot.png"], top=3)   # [[(class, prob), ...]]
    logits = m.run(batch)          # float32 (N, C, H, W) -> (N, classes)

Model        a loaded .pola model file (help(polaformer.Model))
Prediction   one (class, probability) pair of Model.classify, with .index
convert      a checkpoint (.pth / .safetensors) -> .pola model file
dask         classify many images on a dask.distributed cluster
             (import polaformer.dask; needs python3-distributed)
Error, InputError (a ValueError), InternalError (a RuntimeError)

The engine is the C++ library libpolaformer; this package is a thin
binding over its public API. Inference releases the GIL.
"""
from ._core import Error, InputError, InternalError, Model, Prediction, __version__, convert

__all__ = ["Model", "Prediction", "convert", "Error", "InputError", "InternalError", "__version__"]
