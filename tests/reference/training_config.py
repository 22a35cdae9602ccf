"""A stand-in for yacs' CfgNode, pickled into wrapped checkpoints.

The released checkpoints pickle a `yacs.config.CfgNode` under 'config'. Pickling an instance of
this class reproduces the trap: the pickle names a class from a module (`training_config`) the
loader does not have, so a plain unpickler fails unless it tolerates unknown classes.
"""


class CfgNode(dict):
    """dict with attribute access and an immutability flag, like yacs' CfgNode."""

    def __init__(self, init_dict=None, new_allowed=False):
        super().__init__()
        for k, v in (init_dict or {}).items():
            self[k] = CfgNode(v) if isinstance(v, dict) else v
        self.__dict__["_immutable"] = False
        self.__dict__["_new_allowed"] = new_allowed

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def freeze(self):
        self.__dict__["_immutable"] = True
        for v in self.values():
            if isinstance(v, CfgNode):
                v.freeze()
        return self


def training_config_for(cfg, arch):
    """A Swin-codebase-shaped training config (nested nodes, mixed value types)."""
    return CfgNode({
        "MODEL": {"TYPE": cfg["family"], "NAME": arch, "NUM_CLASSES": cfg["num_classes"],
                  "DROP_PATH_RATE": 0.2, "POLA": {"ALPHA": cfg["alpha"], "KERNEL_SIZE": cfg["kernel_size"],
                                                   "DEPTHS": list(cfg["depths"])}},
        "DATA": {"IMG_SIZE": cfg["img_size"], "INTERPOLATION": "bicubic", "DATASET": "imagenet"},
        "TRAIN": {"EPOCHS": 300, "BASE_LR": 1e-3, "WEIGHT_DECAY": 0.05, "AUTO_RESUME": True},
        "AMP_OPT_LEVEL": "O1", "SEED": 0, "TAG": "default",
    }).freeze()
