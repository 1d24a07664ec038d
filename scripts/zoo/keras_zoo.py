"""Keras 3 models of the zoo (JAX backend): ``keras.applications`` vision
networks, random-initialised, run as pure functions of their variables
through ``Model.stateless_call`` in inference mode.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np  # noqa: E402

from stablehlo_conform.common import Arg, Model  # noqa: E402

IMAGE = {"dist": "uniform", "low": 0.0, "high": 1.0}
# batch-norm statistics: spread them a little, so the normalisation is not an identity
MOVING_MEAN = {"dist": "normal", "mean": 0.0, "std": 0.1}
MOVING_VARIANCE = {"dist": "uniform", "low": 0.5, "high": 1.5}


def _framework() -> str:
    import keras

    return f"keras {keras.__version__} (JAX backend)"


def _stat_dist(path: str) -> dict | None:
    """The distribution of a batch-norm statistic (named by keras's path), else None."""
    leaf = path.rsplit("/", 1)[-1]
    if leaf == "moving_mean":
        return MOVING_MEAN
    if leaf == "moving_variance":
        return MOVING_VARIANCE
    return None


def _application(name: str, ctor: str, architecture: str, size: int = 224, notes: str = "") -> Model:
    """A ``keras.applications`` network with random weights and no final
    softmax, as a function of its trainable and non-trainable variables then a
    ``1 x size x size x 3`` image in [0, 1]."""
    import keras

    keras.utils.set_random_seed(0)
    net = getattr(keras.applications, ctor)(weights=None, classifier_activation=None,
                                              input_shape=(size, size, 3))
    trainable = list(net.trainable_variables)
    fixed = list(net.non_trainable_variables)
    n_t, n_f = len(trainable), len(fixed)

    def fn(*args):
        t, f, x = list(args[:n_t]), list(args[n_t:n_t + n_f]), args[-1]
        logits, _ = net.stateless_call(t, f, x, training=False)
        return logits

    args = [Arg(v.path, np.asarray(v.value)) for v in trainable]
    args += [Arg(v.path, np.asarray(v.value), _stat_dist(v.path)) for v in fixed]
    rng = np.random.default_rng(0)
    args.append(Arg("image", rng.random((1, size, size, 3), dtype=np.float32), IMAGE))
    return Model(name, fn, args, framework=_framework(),
                 source=f"keras.applications.{ctor}(weights=None, classifier_activation=None)",
                 architecture=architecture, notes=notes)


def resnet50() -> Model:
    return _application("resnet50", "ResNet50", "vision CNN")


def mobilenet_v1() -> Model:
    return _application("mobilenet_v1", "MobileNet", "vision CNN (mobile)")


def efficientnet_b0() -> Model:
    return _application("efficientnet_b0", "EfficientNetB0", "vision CNN")


MODELS = {"resnet50": resnet50, "mobilenet_v1": mobilenet_v1, "efficientnet_b0": efficientnet_b0}
