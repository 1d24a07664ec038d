"""Models of the zoo written by hand with Flax (linen): a vision transformer,
a Llama-style decoder in four weight formats (f32, bf16, packed int4, float8),
an int8 GPT-2-shaped decoder, an SD3-style MMDiT and a DDPM-style U-Net.

Every model is random-initialised by Flax; its parameter tree is flattened to
positional arguments (named by their path) followed by the inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from stablehlo_conform.common import Arg, Model

FRAMEWORK = f"flax {flax.__version__} (linen)"


def _build(
    name: str,
    module: nn.Module,
    inputs: list[Arg],
    source: str,
    architecture: str,
    notes: str = "",
    dists: Callable[[str, np.ndarray], dict | None] | None = None,
    seed: int = 0,
) -> Model:
    """Initialise ``module`` on the example inputs and wrap ``apply`` as a
    function of the flattened parameters followed by the inputs."""
    example = [jnp.asarray(a.value) for a in inputs]
    params = module.init(jax.random.PRNGKey(seed), *example)["params"]
    leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
    n = len(leaves)
    args = []
    for path, v in leaves:
        key = jax.tree_util.keystr(path)
        arr = np.asarray(v)
        args.append(Arg(key, arr, dists(key, arr) if dists else None))

    def fn(*flat):
        tree = jax.tree_util.tree_unflatten(treedef, flat[:n])
        return module.apply({"params": tree}, *flat[n:])

    return Model(name, fn, args + inputs, FRAMEWORK, source, architecture, notes)


# ---------------------------------------------------------------------------
# ViT-B/16


class ViTBlock(nn.Module):
    """Pre-norm encoder block: multi-head self-attention and a GELU MLP."""

    heads: int
    mlp: int

    @nn.compact
    def __call__(self, x):
        y = nn.LayerNorm(epsilon=1e-6)(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(y, y)
        y = nn.LayerNorm(epsilon=1e-6)(x)
        y = nn.Dense(self.mlp)(y)
        y = nn.gelu(y, approximate=False)
        return x + nn.Dense(x.shape[-1])(y)


class ViT(nn.Module):
    """Vision transformer: patch embedding, class token, learned positions,
    pre-norm blocks, class-token head."""

    patch: int = 16
    width: int = 768
    depth: int = 12
    heads: int = 12
    mlp: int = 3072
    classes: int = 1000

    @nn.compact
    def __call__(self, img):
        x = nn.Conv(self.width, (self.patch, self.patch), strides=self.patch, padding="VALID", name="embedding")(img)
        b, h, w, c = x.shape
        x = x.reshape(b, h * w, c)
        cls = self.param("cls", nn.initializers.zeros, (1, 1, c))
        x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, c)), x], axis=1)
        pos = self.param("pos_embedding", nn.initializers.normal(0.02), (1, h * w + 1, c))
        x = x + pos
        for i in range(self.depth):
            x = ViTBlock(self.heads, self.mlp, name=f"encoderblock_{i}")(x)
        x = nn.LayerNorm(epsilon=1e-6, name="encoder_norm")(x)
        return nn.Dense(self.classes, name="head")(x[:, 0])


def vit_b16() -> Model:
    img = Arg(
        "image",
        np.random.default_rng(0).random((1, 224, 224, 3), dtype=np.float32),
        {"dist": "uniform", "low": 0.0, "high": 1.0},
    )
    return _build(
        "vit_b16",
        ViT(),
        [img],
        "hand-written flax.linen ViT-B/16 (patch 16, 12 layers, d 768, 12 heads, "
        "MLP 3072, nn.MultiHeadDotProductAttention)",
        "vision transformer",
        "ViT-B/16 at 224x224, 1000 classes, exact GELU; NHWC image uniform[0,1].",
    )


# ---------------------------------------------------------------------------
# Llama-style decoder, one builder for four weight formats


@dataclass(frozen=True)
class LlamaConfig:
    vocab: int = 16000
    dim: int = 512
    layers: int = 6
    heads: int = 8
    kv_heads: int = 2
    hidden: int = 1408
    seq: int = 64
    theta: float = 10000.0
    eps: float = 1e-5


INT4_STD = math.sqrt((16**2 - 1) / 12)  # std of integers uniform in [-8, 8)
F8_STD = 64.0  # std of the float8 weights before their per-tensor scale (max 448 is 7 std away)


class QDense(nn.Module):
    """A bias-free linear layer whose weight is stored as ``fmt``: ``f32`` or
    ``bf16`` (plain), ``int4`` (two signed nibbles per int8 along the input
    axis, per-output-channel f32 scales) or ``f8`` (float8_e4m3fn, one f32
    scale). Quantized weights are dequantized to f32 before the matmul."""

    features: int
    fmt: str = "f32"

    @nn.compact
    def __call__(self, x):
        fan_in = x.shape[-1]
        std = 1.0 / math.sqrt(fan_in)
        shape = (fan_in, self.features)
        if self.fmt in ("f32", "bf16"):
            dt = jnp.bfloat16 if self.fmt == "bf16" else jnp.float32
            w = self.param("kernel", nn.initializers.normal(std, dt), shape, dt)
            return x @ w
        if self.fmt == "int4":
            packed = self.param(
                "kernel_int4x2",
                lambda k, s: jax.random.randint(k, s, -128, 128, jnp.int32).astype(jnp.int8),
                (fan_in // 2, self.features),
            )
            scale = self.param(
                "scale",
                lambda k, s: jax.random.uniform(k, s, jnp.float32, 0.8 * std / INT4_STD, 1.2 * std / INT4_STD),
                (self.features,),
            )
            lo = (packed << 4) >> 4  # sign-extended low nibble: even input rows
            hi = packed >> 4  # arithmetic shift: odd input rows
            q = jnp.stack([lo, hi], axis=1).reshape(shape)
            return x @ (q.astype(jnp.float32) * scale)
        if self.fmt == "f8":
            q = self.param(
                "kernel_f8",
                lambda k, s: jnp.clip(jax.random.normal(k, s) * F8_STD, -448, 448).astype(jnp.float8_e4m3fn),
                shape,
            )
            scale = self.param("scale", lambda k, s: jnp.full(s, std / F8_STD, jnp.float32), ())
            return x @ (q.astype(jnp.float32) * scale)
        raise ValueError(self.fmt)


class RMSNorm(nn.Module):
    eps: float = 1e-5

    @nn.compact
    def __call__(self, x):
        w = self.param("weight", nn.initializers.ones, (x.shape[-1],), x.dtype)
        return x * lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + jnp.asarray(self.eps, x.dtype)) * w


def rope(x, theta):
    """Rotary position embedding (rotate-half form) on ``x`` [B, S, H, D]."""
    s, d = x.shape[1], x.shape[-1]
    inv = 1.0 / theta ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d)
    ang = jnp.arange(s, dtype=jnp.float32)[:, None] * inv[None, :]
    ang = jnp.concatenate([ang, ang], axis=-1)[None, :, None, :]
    cos, sin = jnp.cos(ang).astype(x.dtype), jnp.sin(ang).astype(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + jnp.concatenate([-x2, x1], axis=-1) * sin


class LlamaBlock(nn.Module):
    cfg: LlamaConfig
    fmt: str

    @nn.compact
    def __call__(self, x):
        c, f = self.cfg, self.fmt
        hd = c.dim // c.heads
        b, s, _ = x.shape
        y = RMSNorm(c.eps, name="attention_norm")(x)
        q = QDense(c.heads * hd, f, name="wq")(y).reshape(b, s, c.heads, hd)
        k = QDense(c.kv_heads * hd, f, name="wk")(y).reshape(b, s, c.kv_heads, hd)
        v = QDense(c.kv_heads * hd, f, name="wv")(y).reshape(b, s, c.kv_heads, hd)
        q, k = rope(q, c.theta), rope(k, c.theta)
        rep = c.heads // c.kv_heads
        k, v = jnp.repeat(k, rep, axis=2), jnp.repeat(v, rep, axis=2)
        att = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.asarray(math.sqrt(hd), x.dtype)
        causal = jnp.tril(jnp.ones((s, s), bool))
        att = jnp.where(causal, att, jnp.asarray(jnp.finfo(att.dtype).min, att.dtype))
        att = jax.nn.softmax(att, axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, s, c.heads * hd)
        x = x + QDense(c.dim, f, name="wo")(o)
        y = RMSNorm(c.eps, name="ffn_norm")(x)
        g = QDense(c.hidden, f, name="w1")(y)
        u = QDense(c.hidden, f, name="w3")(y)
        return x + QDense(c.dim, f, name="w2")(nn.silu(g) * u)


class Llama(nn.Module):
    """Llama-style decoder: token embedding, RMSNorm pre-norm blocks with RoPE
    grouped-query causal attention and SwiGLU MLP, untied output head."""

    cfg: LlamaConfig
    fmt: str = "f32"

    @nn.compact
    def __call__(self, ids):
        c = self.cfg
        act = jnp.bfloat16 if self.fmt == "bf16" else jnp.float32
        emb = self.param("tok_embeddings", nn.initializers.normal(1.0, act), (c.vocab, c.dim), act)
        x = jnp.take(emb, ids, axis=0)
        for i in range(c.layers):
            x = LlamaBlock(c, self.fmt, name=f"layers_{i}")(x)
        x = RMSNorm(c.eps, name="norm")(x)
        return QDense(c.vocab, self.fmt, name="output")(x)


def _llama(fmt: str) -> Model:
    c = LlamaConfig()
    ids = Arg(
        "tokens",
        np.random.default_rng(0).integers(0, c.vocab, (1, c.seq)).astype(np.int32),
        {"dist": "randint", "low": 0, "high": c.vocab},
    )

    def dists(name: str, a: np.ndarray) -> dict | None:
        if fmt == "int4" and name.endswith("['scale']"):
            return {"dist": "uniform", "low": float(a.min()) / 1.0001, "high": float(a.max()) * 1.0001}
        if fmt == "int4" and "kernel_int4x2" in name:
            return {"dist": "randint", "low": -128, "high": 128}
        if fmt == "f8" and "kernel_f8" in name:
            return {"dist": "normal", "mean": 0.0, "std": F8_STD}
        return None

    what = {
        "f32": "float32 parameters and activations.",
        "bf16": "bfloat16 parameters and activations (RMSNorm, softmax and logits in bf16 too).",
        "int4": (
            "every linear weight (attention, MLP, output head) int4, packed two per int8 along the input "
            "axis (low nibble = even row), unpacked with arithmetic shifts ((w << 4) >> 4, w >> 4) and "
            "multiplied by per-output-channel f32 scales (about 1/sqrt(fan_in)/4.61, so the dequantized "
            "weights have the f32 model's std); embedding and activations f32."
        ),
        "f8": (
            "every linear weight (attention, MLP, output head) float8_e4m3fn (normal, std 64) with one f32 "
            "scale per tensor (1/sqrt(fan_in)/64), dequantized to f32 before the matmul (QDQ); embedding and "
            "activations f32."
        ),
    }[fmt]
    notes = (
        f"Llama-style decoder, {c.layers} layers, d {c.dim}, {c.heads} query heads / {c.kv_heads} KV heads "
        f"(GQA), SwiGLU hidden {c.hidden}, RoPE, causal, vocab {c.vocab}, sequence {c.seq}; " + what
    )
    return _build(
        f"llama_{fmt}",
        Llama(c, fmt),
        [ids],
        f"hand-written flax.linen Llama(LlamaConfig(), fmt={fmt!r})",
        "decoder LLM",
        notes,
        dists,
    )


def llama_f32() -> Model:
    return _llama("f32")


def llama_bf16() -> Model:
    return _llama("bf16")


def llama_int4() -> Model:
    return _llama("int4")


def llama_f8() -> Model:
    return _llama("f8")


# ---------------------------------------------------------------------------
# GPT-2-shaped decoder with int8 weights and dynamic int8 activations

INT8_STD = math.sqrt((255**2 - 1) / 12)  # std of integers uniform in [-127, 128)


class Int8Dense(nn.Module):
    """W8A8 linear layer: int8 weight with per-output-channel f32 scales,
    activations quantized per token (symmetric, scale max|x|/127), an
    int8 x int8 -> int32 matmul, rescaled to f32, plus an f32 bias."""

    features: int
    std: float = 0.02

    @nn.compact
    def __call__(self, x):
        fan_in = x.shape[-1]
        w = self.param(
            "kernel_int8",
            lambda k, s: jax.random.randint(k, s, -127, 128, jnp.int32).astype(jnp.int8),
            (fan_in, self.features),
        )
        lo, hi = 0.8 * self.std / INT8_STD, 1.2 * self.std / INT8_STD
        ws = self.param("scale", lambda k, s: jax.random.uniform(k, s, jnp.float32, lo, hi), (self.features,))
        b = self.param("bias", nn.initializers.zeros, (self.features,))
        xs = jnp.maximum(jnp.max(jnp.abs(x), axis=-1, keepdims=True) / 127.0, 1e-8)
        xq = jnp.clip(jnp.round(x / xs), -127, 127).astype(jnp.int8)
        acc = lax.dot_general(xq, w, (((x.ndim - 1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
        return acc.astype(jnp.float32) * xs * ws + b


class GPT2Block(nn.Module):
    heads: int

    @nn.compact
    def __call__(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        y = nn.LayerNorm(epsilon=1e-5, name="ln_1")(x)
        qkv = Int8Dense(3 * d, name="c_attn")(y).reshape(b, s, 3, self.heads, hd)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        att = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(hd)
        att = jnp.where(jnp.tril(jnp.ones((s, s), bool)), att, -1e9)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(att, axis=-1), v).reshape(b, s, d)
        x = x + Int8Dense(d, name="c_proj")(o)
        y = nn.LayerNorm(epsilon=1e-5, name="ln_2")(x)
        y = nn.gelu(Int8Dense(4 * d, name="c_fc")(y), approximate=True)
        return x + Int8Dense(d, name="mlp_c_proj")(y)


class GPT2Int8(nn.Module):
    vocab: int = 50257
    positions: int = 1024
    dim: int = 768
    heads: int = 12
    layers: int = 4

    @nn.compact
    def __call__(self, ids):
        wte = self.param("wte", nn.initializers.normal(0.02), (self.vocab, self.dim))
        wpe = self.param("wpe", nn.initializers.normal(0.01), (self.positions, self.dim))
        s = ids.shape[1]
        x = jnp.take(wte, ids, axis=0) + wpe[None, :s]
        for i in range(self.layers):
            x = GPT2Block(self.heads, name=f"h_{i}")(x)
        x = nn.LayerNorm(epsilon=1e-5, name="ln_f")(x)
        return x @ wte.T  # tied f32 head


def gpt2_int8() -> Model:
    m = GPT2Int8()
    ids = Arg(
        "input_ids",
        np.random.default_rng(0).integers(0, m.vocab, (1, 64)).astype(np.int32),
        {"dist": "randint", "low": 0, "high": m.vocab},
    )

    def dists(name: str, a: np.ndarray) -> dict | None:
        if name.endswith("['scale']") and a.ndim == 1 and "ln" not in name:
            return {"dist": "uniform", "low": float(a.min()) / 1.0001, "high": float(a.max()) * 1.0001}
        return None

    return _build(
        "gpt2_int8",
        m,
        [ids],
        "hand-written flax.linen GPT2Int8 (GPT-2 small shapes, 4 layers)",
        "decoder LLM (int8)",
        "GPT-2-small-shaped decoder (d 768, 12 heads, MLP 3072, learned positions, LayerNorm, tanh GELU, "
        "vocab 50257, sequence 64) cut to 4 layers to keep it fast. W8A8: int8 weights with per-output-"
        "channel f32 scales; activations quantized per token, symmetric (scale max|x|/127, round, clip, "
        "convert to int8); int8 x int8 -> int32 dot_general, rescaled to f32. Embedding, LayerNorm and "
        "the tied output head are f32.",
        dists,
    )


# ---------------------------------------------------------------------------
# SD3-style MMDiT


def timestep_embedding(t, dim, max_period=10000.0):
    """Sinusoidal embedding of timesteps ``t`` [B] -> [B, dim] (cos, sin)."""
    half = dim // 2
    freqs = jnp.exp(-math.log(max_period) * jnp.arange(half, dtype=jnp.float32) / half)
    a = t[:, None].astype(jnp.float32) * freqs[None]
    return jnp.concatenate([jnp.cos(a), jnp.sin(a)], axis=-1)


def modulate(x, shift, scale):
    return x * (1 + scale[:, None]) + shift[:, None]


class Mlp(nn.Module):
    hidden: int

    @nn.compact
    def __call__(self, x):
        y = nn.gelu(nn.Dense(self.hidden, name="fc1")(x), approximate=True)
        return nn.Dense(x.shape[-1], name="fc2")(y)


class StreamPre(nn.Module):
    """One stream's half of a joint block before attention: adaLN-Zero
    modulation and q, k, v."""

    heads: int
    pre_only: bool = False

    @nn.compact
    def __call__(self, x, c):
        d = x.shape[-1]
        n = 2 if self.pre_only else 6
        mod = nn.Dense(n * d, kernel_init=nn.initializers.zeros, name="adaLN_modulation")(nn.silu(c))
        mod = jnp.split(mod, n, axis=-1)
        y = modulate(nn.LayerNorm(use_scale=False, use_bias=False, epsilon=1e-6)(x), mod[0], mod[1])
        qkv = nn.Dense(3 * d, name="qkv")(y)
        return qkv.reshape(*x.shape[:2], 3, self.heads, d // self.heads), mod


class StreamPost(nn.Module):
    """One stream's half after attention: gated projection and gated MLP."""

    @nn.compact
    def __call__(self, x, attn, mod):
        d = x.shape[-1]
        _, _, gate_msa, shift_mlp, scale_mlp, gate_mlp = mod
        x = x + gate_msa[:, None] * nn.Dense(d, name="proj")(attn)
        y = modulate(nn.LayerNorm(use_scale=False, use_bias=False, epsilon=1e-6)(x), shift_mlp, scale_mlp)
        return x + gate_mlp[:, None] * Mlp(4 * d, name="mlp")(y)


class JointBlock(nn.Module):
    """MMDiT block: context and image streams with their own weights, one
    attention over the concatenated tokens."""

    heads: int
    pre_only: bool = False

    @nn.compact
    def __call__(self, ctx, x, c):
        cq, cmod = StreamPre(self.heads, self.pre_only, name="context_block")(ctx, c)
        xq, xmod = StreamPre(self.heads, name="x_block")(x, c)
        qkv = jnp.concatenate([cq, xq], axis=1)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        o = nn.dot_product_attention(q, k, v)
        o = o.reshape(*o.shape[:2], -1)
        nc = ctx.shape[1]
        x = StreamPost(name="x_post")(x, o[:, nc:], xmod)
        if self.pre_only:
            return None, x
        return StreamPost(name="context_post")(ctx, o[:, :nc], cmod), x


class MMDiT(nn.Module):
    """SD3-style multimodal diffusion transformer."""

    patch: int = 2
    dim: int = 384
    heads: int = 6
    depth: int = 4

    @nn.compact
    def __call__(self, latent, context, pooled, t):
        b, h, w, ch = latent.shape
        p, d = self.patch, self.dim
        x = latent.reshape(b, h // p, p, w // p, p, ch).transpose(0, 1, 3, 2, 4, 5).reshape(b, -1, p * p * ch)
        x = nn.Dense(d, name="x_embedder")(x)
        x = x + self.param("pos_embed", nn.initializers.normal(0.02), (1, x.shape[1], d))
        temb = timestep_embedding(t, 256)
        temb = nn.Dense(d, name="t_embedder_1")(nn.silu(nn.Dense(d, name="t_embedder_0")(temb)))
        yemb = nn.Dense(d, name="y_embedder_1")(nn.silu(nn.Dense(d, name="y_embedder_0")(pooled)))
        c = temb + yemb
        ctx = nn.Dense(d, name="context_embedder")(context)
        for i in range(self.depth):
            ctx, x = JointBlock(self.heads, pre_only=i == self.depth - 1, name=f"joint_blocks_{i}")(ctx, x, c)
        shift, scale = jnp.split(
            nn.Dense(2 * d, kernel_init=nn.initializers.zeros, name="final_adaLN")(nn.silu(c)), 2, axis=-1
        )
        x = modulate(nn.LayerNorm(use_scale=False, use_bias=False, epsilon=1e-6)(x), shift, scale)
        x = nn.Dense(p * p * ch, kernel_init=nn.initializers.zeros, name="final_linear")(x)
        x = x.reshape(b, h // p, w // p, p, p, ch).transpose(0, 1, 3, 2, 4, 5)
        return x.reshape(b, h, w, ch)


def mmdit_small() -> Model:
    rng = np.random.default_rng(0)
    normal = {"dist": "normal", "mean": 0.0, "std": 1.0}
    inputs = [
        Arg("latent", rng.standard_normal((1, 32, 32, 16), dtype=np.float32), normal),
        Arg("text_features", rng.standard_normal((1, 77, 256), dtype=np.float32), normal),
        Arg("pooled_text", rng.standard_normal((1, 256), dtype=np.float32), normal),
        Arg("timestep", (rng.random(1, dtype=np.float32) * 1000), {"dist": "uniform", "low": 0.0, "high": 1000.0}),
    ]
    return _build(
        "mmdit_small",
        MMDiT(),
        inputs,
        "hand-written flax.linen MMDiT (SD3-style, d 384, 6 heads, 4 blocks)",
        "diffusion transformer",
        "SD3-style MMDiT: joint attention over 77 text tokens (256 features) and 256 latent patches "
        "(latent 32x32x16 NHWC, patch 2), learned position embedding, adaLN-Zero modulation from a "
        "sinusoidal timestep embedding plus a pooled text vector (256), last block's context stream "
        "pre-only, unpatchified output. adaLN-Zero and final layers are zero-initialised by the model; "
        "the recipe draws them normal(0, 1/sqrt(fan_in)) so the output is not constant.",
    )


# ---------------------------------------------------------------------------
# DDPM-style U-Net


class ResBlock(nn.Module):
    out: int

    @nn.compact
    def __call__(self, x, temb):
        h = nn.silu(nn.GroupNorm(32, epsilon=1e-5, name="norm1")(x))
        h = nn.Conv(self.out, (3, 3), name="conv1")(h)
        h = h + nn.Dense(self.out, name="temb_proj")(nn.silu(temb))[:, None, None]
        h = nn.silu(nn.GroupNorm(32, epsilon=1e-5, name="norm2")(h))
        h = nn.Conv(self.out, (3, 3), name="conv2")(h)
        if x.shape[-1] != self.out:
            x = nn.Conv(self.out, (1, 1), name="skip")(x)
        return x + h


class AttnBlock(nn.Module):
    heads: int = 4

    @nn.compact
    def __call__(self, x):
        b, h, w, c = x.shape
        y = nn.GroupNorm(32, epsilon=1e-5, name="norm")(x).reshape(b, h * w, c)
        y = nn.MultiHeadDotProductAttention(num_heads=self.heads, name="attn")(y, y)
        return x + y.reshape(b, h, w, c)


class UNet(nn.Module):
    """DDPM-style U-Net: residual blocks with GroupNorm and SiLU at each level,
    a timestep embedding added in every block, strided-conv downsampling,
    self-attention at the lowest resolution, nearest upsampling and conv,
    skip connections by concatenation."""

    channels: tuple[int, ...] = (64, 128, 256)
    blocks: int = 2

    @nn.compact
    def __call__(self, x, t):
        ch0 = self.channels[0]
        temb = timestep_embedding(t, ch0)
        temb = nn.Dense(4 * ch0, name="temb_1")(nn.silu(nn.Dense(4 * ch0, name="temb_0")(temb)))
        h = nn.Conv(ch0, (3, 3), name="conv_in")(x)
        skips = [h]
        for lvl, ch in enumerate(self.channels):
            for j in range(self.blocks):
                h = ResBlock(ch, name=f"down_{lvl}_res_{j}")(h, temb)
                skips.append(h)
            if lvl != len(self.channels) - 1:
                h = nn.Conv(ch, (3, 3), strides=2, name=f"down_{lvl}_downsample")(h)
                skips.append(h)
        h = ResBlock(self.channels[-1], name="mid_res_0")(h, temb)
        h = AttnBlock(name="mid_attn")(h)
        h = ResBlock(self.channels[-1], name="mid_res_1")(h, temb)
        for lvl in reversed(range(len(self.channels))):
            ch = self.channels[lvl]
            for j in range(self.blocks + 1):
                h = ResBlock(ch, name=f"up_{lvl}_res_{j}")(jnp.concatenate([h, skips.pop()], axis=-1), temb)
            if lvl != 0:
                b, hh, ww, c = h.shape
                h = jnp.broadcast_to(h[:, :, None, :, None], (b, hh, 2, ww, 2, c)).reshape(b, 2 * hh, 2 * ww, c)
                h = nn.Conv(ch, (3, 3), name=f"up_{lvl}_upsample")(h)
        h = nn.silu(nn.GroupNorm(32, epsilon=1e-5, name="norm_out")(h))
        return nn.Conv(x.shape[-1], (3, 3), name="conv_out")(h)


def unet_small() -> Model:
    rng = np.random.default_rng(0)
    inputs = [
        Arg(
            "latent", rng.standard_normal((1, 64, 64, 4), dtype=np.float32), {"dist": "normal", "mean": 0.0, "std": 1.0}
        ),
        Arg("timestep", rng.random(1, dtype=np.float32) * 1000, {"dist": "uniform", "low": 0.0, "high": 1000.0}),
    ]
    return _build(
        "unet_small",
        UNet(),
        inputs,
        "hand-written flax.linen UNet (channels 64/128/256, 2 res blocks)",
        "diffusion U-Net",
        "DDPM-style U-Net on a 64x64x4 NHWC latent: channels 64/128/256, 2 residual blocks per level down "
        "(3 up, with skip concatenation), GroupNorm(32) + SiLU, sinusoidal timestep embedding, middle "
        "block res-attention-res at 16x16, strided-conv downsampling, nearest upsampling + conv.",
    )


MODELS: dict[str, Callable[[], Model]] = {
    "vit_b16": vit_b16,
    "llama_f32": llama_f32,
    "llama_bf16": llama_bf16,
    "llama_int4": llama_int4,
    "llama_f8": llama_f8,
    "gpt2_int8": gpt2_int8,
    "mmdit_small": mmdit_small,
    "unet_small": unet_small,
}

__all__ = ["MODELS"]
