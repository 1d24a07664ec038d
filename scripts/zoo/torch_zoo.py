"""PyTorch models of the zoo: Hugging Face ``transformers`` architectures
built from their configs with random initialisation, turned into JAX
functions by ``torchax`` so that every weight is an argument of the program.

No download: each model is ``ModelClass(Config(...))`` under
``torch.manual_seed(0)``, in ``eval()`` mode, with eager attention (the
SDPA path is not needed and keeps the lowering plain).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import torch
import transformers
from torch._ops import OpOverloadPacket

from stablehlo_conform.common import Arg, Model


def _import_torchax():
    """Import torchax 0.0.13 beside torch >= 2.13.

    torch 2.13 dropped the named-tensor (``Dimname``) overloads of a few aten
    ops, such as ``aten.prod.dim_Dimname``; torchax names them when its modules
    load (its environment loads the decompositions lazily, so it is built here
    too), only as keys of its autocast table and entries of its decomposition
    list. While torchax is imported, a missing overload whose name is about named
    dimensions resolves to a plain string: a dict key nothing looks up, and a
    list entry ``torch._decomp.get_decompositions`` skips (not an operator).
    Every other lookup behaves as before, and the patch is undone at once.
    """
    original = OpOverloadPacket.__getattr__

    def getattr_(self, key):
        try:
            return original(self, key)
        except AttributeError:
            if "imname" in key or "names" in key:
                return f"{self._qualified_op_name}.{key} (removed from torch)"
            raise

    OpOverloadPacket.__getattr__ = getattr_
    try:
        import torchax

        torchax.default_env()
    finally:
        OpOverloadPacket.__getattr__ = original
    return torchax


torchax = _import_torchax()

FRAMEWORK = f"torch {torch.__version__} + transformers {transformers.__version__} (torchax {torchax.__version__})"


def _wrap(name: str, model: torch.nn.Module, inputs: list[Arg], outputs: tuple[int, ...], *, source: str,
          architecture: str, notes: str = "") -> Model:
    """A :class:`Model` of ``model``'s forward: its float parameters and
    buffers (torchax's state, tied weights once) become the leading arguments,
    then ``inputs`` (keyword arguments of ``forward``); integer buffers (such
    as ``position_ids``, an ``arange``) are structure, not weights, and stay
    constants of the program. ``outputs`` picks items of the output tuple."""
    model.eval()
    states, jax_fn = torchax.extract_jax(model)
    weights = {k: v for k, v in states.items() if jnp.issubdtype(v.dtype, jnp.floating)}
    consts = {k: np.asarray(v) for k, v in states.items() if k not in weights}
    leaves, treedef = jax.tree_util.tree_flatten_with_path(weights)
    n = len(leaves)
    input_names = [a.name for a in inputs]

    def fn(*flat):
        state = jax.tree_util.tree_unflatten(treedef, flat[:n])
        state.update({k: jnp.asarray(v) for k, v in consts.items()})
        kwargs = dict(zip(input_names, flat[n:]))
        kwargs["return_dict"] = False
        res = jax_fn(state, (), kwargs)
        return tuple(res[i] for i in outputs)

    args = [Arg(jax.tree_util.keystr(p), np.asarray(v)) for p, v in leaves] + inputs
    return Model(name, fn, args, FRAMEWORK, source, architecture, notes)


def _ids(shape: tuple[int, ...], high: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, high, shape).astype(np.int32)


def _token_inputs(seq: int, vocab: int, *, types: bool = True) -> list[Arg]:
    """input_ids, attention_mask (all ones) and, with ``types``, token_type_ids (zeros)."""
    out = [Arg("input_ids", _ids((1, seq), vocab), {"dist": "randint", "low": 0, "high": vocab}),
           Arg("attention_mask", np.ones((1, seq), np.int32), {"dist": "const", "value": 1})]
    if types:
        out.append(Arg("token_type_ids", np.zeros((1, seq), np.int32), {"dist": "randint", "low": 0, "high": 2}))
    return out


def _bert(name: str, dtype: torch.dtype) -> Model:
    torch.manual_seed(0)
    cfg = transformers.BertConfig(attn_implementation="eager")
    model = transformers.BertModel(cfg).to(dtype)
    what = "text encoder" if dtype == torch.float32 else "text encoder (bf16)"
    notes = "BERT-base (12 layers, 768 wide, 12 heads), sequence 128, batch 1; outputs last_hidden_state, pooler_output"
    if dtype == torch.bfloat16:
        notes += "; weights and activations in bfloat16 (model.to(torch.bfloat16))"
    return _wrap(name, model, _token_inputs(128, cfg.vocab_size), (0, 1),
                 source="transformers BertModel(BertConfig())" + (".to(bfloat16)" if dtype != torch.float32 else ""),
                 architecture=what, notes=notes)


def bert_base() -> Model:
    """BERT-base encoder, float32."""
    return _bert("bert_base", torch.float32)


def bert_base_bf16() -> Model:
    """BERT-base encoder cast to bfloat16."""
    return _bert("bert_base_bf16", torch.bfloat16)


def gpt2_small() -> Model:
    """GPT-2 small with its language-model head (tied to the token embedding)."""
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(attn_implementation="eager")
    model = transformers.GPT2LMHeadModel(cfg)
    inputs = [Arg("input_ids", _ids((1, 64), cfg.vocab_size), {"dist": "randint", "low": 0, "high": cfg.vocab_size})]
    return _wrap("gpt2_small", model, inputs, (0,), source="transformers GPT2LMHeadModel(GPT2Config())",
                 architecture="decoder LLM",
                 notes="GPT-2 small (12 layers, 768 wide, 12 heads), sequence 64, batch 1; output: logits "
                       "(LM head tied to the token embedding, one argument)")


def whisper_tiny() -> Model:
    """Whisper encoder-decoder at the tiny sizes."""
    torch.manual_seed(0)
    cfg = transformers.WhisperConfig(
        d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6, decoder_attention_heads=6,
        encoder_ffn_dim=1536, decoder_ffn_dim=1536, num_mel_bins=80, max_source_positions=750,
        attn_implementation="eager")
    model = transformers.WhisperModel(cfg)
    frames = 2 * cfg.max_source_positions
    inputs = [
        Arg("input_features", np.random.default_rng(0).standard_normal((1, 80, frames)).astype(np.float32),
            {"dist": "normal", "mean": 0.0, "std": 1.0}),
        Arg("decoder_input_ids", _ids((1, 32), cfg.vocab_size), {"dist": "randint", "low": 0, "high": cfg.vocab_size}),
    ]
    return _wrap("whisper_tiny", model, inputs, (0,), source="transformers WhisperModel(WhisperConfig(tiny sizes))",
                 architecture="speech encoder-decoder",
                 notes=f"Whisper tiny sizes (d_model 384, 4+4 layers, 6 heads, ffn 1536, 80 mel bins) but "
                       f"{frames} mel frames (max_source_positions {cfg.max_source_positions}, half of Whisper's "
                       f"30 s window, to keep the NumPy engine's encoder attention fast), 32 decoder tokens, "
                       f"batch 1; output: decoder last_hidden_state. The encoder's sinusoidal position table is "
                       f"an argument, rebuilt as a normal table of its mean and spread")


def t5_small() -> Model:
    """T5 encoder-decoder at the t5-small sizes (relative position bias)."""
    torch.manual_seed(0)
    cfg = transformers.T5Config(attn_implementation="eager")
    model = transformers.T5Model(cfg)
    v = cfg.vocab_size
    inputs = [Arg("input_ids", _ids((1, 64), v), {"dist": "randint", "low": 0, "high": v}),
              Arg("decoder_input_ids", _ids((1, 16), v, 1), {"dist": "randint", "low": 0, "high": v})]
    return _wrap("t5_small", model, inputs, (0,), source="transformers T5Model(T5Config())",
                 architecture="text encoder-decoder",
                 notes="t5-small sizes (6+6 layers, d_model 512, 8 heads, relative position bias), encoder "
                       "sequence 64, decoder 16, batch 1; output: decoder last_hidden_state")


def distilbert() -> Model:
    """DistilBERT encoder."""
    torch.manual_seed(0)
    cfg = transformers.DistilBertConfig(attn_implementation="eager")
    model = transformers.DistilBertModel(cfg)
    return _wrap("distilbert", model, _token_inputs(128, cfg.vocab_size, types=False), (0,),
                 source="transformers DistilBertModel(DistilBertConfig())", architecture="text encoder (distilled)",
                 notes="DistilBERT (6 layers, 768 wide, 12 heads), sequence 128, batch 1; output: last_hidden_state")


MODELS = {
    "bert_base": bert_base,
    "bert_base_bf16": bert_base_bf16,
    "gpt2_small": gpt2_small,
    "whisper_tiny": whisper_tiny,
    "t5_small": t5_small,
    "distilbert": distilbert,
}
