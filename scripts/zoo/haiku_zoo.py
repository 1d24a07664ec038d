"""dm-haiku models of the zoo: a DLRM-style recommender, a Mixtral-style
sparse mixture-of-experts decoder and a two-layer LSTM, written with haiku
modules, random-initialised by ``hk.transform`` and run as pure functions of
their flattened parameters then their inputs.
"""

from __future__ import annotations

import numpy as np

from stablehlo_conform.common import Arg, Model


def _framework() -> str:
    import haiku as hk

    return f"dm-haiku {hk.__version__} (JAX)"


def _pure(name: str, forward, example_inputs: list[Arg], **meta) -> Model:
    """Initialise ``forward`` (a function of the inputs built from haiku
    modules) and wrap it as ``fn(*params, *inputs)`` over the flattened
    parameter tree."""
    import haiku as hk
    import jax

    net = hk.without_apply_rng(hk.transform(forward))
    params = net.init(jax.random.PRNGKey(0), *[a.value for a in example_inputs])
    leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
    n = len(leaves)

    def fn(*args):
        return net.apply(jax.tree_util.tree_unflatten(treedef, list(args[:n])), *args[n:])

    args = [Arg(jax.tree_util.keystr(path), np.asarray(v)) for path, v in leaves] + list(example_inputs)
    return Model(name, fn, args, framework=_framework(), **meta)


# ---------------------------------------------------------------- DLRM

DLRM_TABLES = (100_000, 50_000, 20_000, 10_000, 5_000, 2_000, 1_000, 500)
DLRM_DIM = 64
DLRM_DENSE = 13
DLRM_BATCH = 64


def dlrm_small() -> Model:
    """DLRM: a bottom MLP over the dense features, one embedding bag (a single
    id per table) per sparse feature, pairwise dot products between all the
    feature vectors (strict upper triangle) and a top MLP to one logit."""
    import haiku as hk
    import jax.numpy as jnp

    n_vec = len(DLRM_TABLES) + 1
    rows, cols = np.triu_indices(n_vec, k=1)

    def forward(dense, *ids):
        bottom = hk.nets.MLP([512, 256, DLRM_DIM], activate_final=True, name="bottom_mlp")(dense)
        embs = [hk.Embed(vocab_size=v, embed_dim=DLRM_DIM, name=f"table_{i}")(t)
                for i, (v, t) in enumerate(zip(DLRM_TABLES, ids))]
        feats = jnp.stack([bottom] + embs, axis=1)  # B x (1 + tables) x D
        dots = jnp.einsum("bid,bjd->bij", feats, feats)
        inter = dots[:, rows, cols]  # B x pairs
        top_in = jnp.concatenate([bottom, inter], axis=1)
        return hk.nets.MLP([512, 256, 1], name="top_mlp")(top_in)

    rng = np.random.default_rng(0)
    inputs = [Arg("dense_features", rng.standard_normal((DLRM_BATCH, DLRM_DENSE), dtype=np.float32),
                  {"dist": "normal", "mean": 0.0, "std": 1.0})]
    for i, v in enumerate(DLRM_TABLES):
        inputs.append(Arg(f"sparse_ids_{i}", rng.integers(0, v, (DLRM_BATCH,), dtype=np.int32),
                          {"dist": "randint", "low": 0, "high": v}))
    return _pure("dlrm_small", forward, inputs, source="hand-written DLRM with hk.nets.MLP and hk.Embed",
                 architecture="recommendation",
                 notes=f"bottom MLP 13-512-256-64, {len(DLRM_TABLES)} tables {list(DLRM_TABLES)} x {DLRM_DIM}, "
                       f"dot interaction ({len(rows)} pairs), top MLP 512-256-1, batch {DLRM_BATCH}; "
                       "tables far smaller than Criteo's so the recipe stays cheap to draw")


# ---------------------------------------------------------------- Mixtral-style MoE

MOE_VOCAB = 8000
MOE_SEQ = 64
MOE_D = 256
MOE_HEADS = 8
MOE_KV_HEADS = 2
MOE_FFN = 512
MOE_EXPERTS = 8
MOE_TOP_K = 2
MOE_LAYERS = 2


def _rope(x, theta: float = 10000.0):
    """Rotary position embedding on ``x`` (B x T x H x Dh), halves rotated (as in Mixtral)."""
    import jax.numpy as jnp

    t, dh = x.shape[1], x.shape[-1]
    inv = 1.0 / theta ** (jnp.arange(0, dh, 2, dtype=jnp.float32) / dh)
    ang = jnp.arange(t, dtype=jnp.float32)[:, None] * inv[None, :]  # T x Dh/2
    cos = jnp.cos(jnp.concatenate([ang, ang], -1))[None, :, None, :]
    sin = jnp.sin(jnp.concatenate([ang, ang], -1))[None, :, None, :]
    x1, x2 = x[..., : dh // 2], x[..., dh // 2:]
    return x * cos + jnp.concatenate([-x2, x1], -1) * sin


def _attention(x):
    """Causal grouped-query self-attention with RoPE, no biases."""
    import haiku as hk
    import jax
    import jax.numpy as jnp

    b, t, _ = x.shape
    dh = MOE_D // MOE_HEADS
    q = hk.Linear(MOE_HEADS * dh, with_bias=False, name="q_proj")(x).reshape(b, t, MOE_HEADS, dh)
    k = hk.Linear(MOE_KV_HEADS * dh, with_bias=False, name="k_proj")(x).reshape(b, t, MOE_KV_HEADS, dh)
    v = hk.Linear(MOE_KV_HEADS * dh, with_bias=False, name="v_proj")(x).reshape(b, t, MOE_KV_HEADS, dh)
    q, k = _rope(q), _rope(k)
    rep = MOE_HEADS // MOE_KV_HEADS
    k, v = jnp.repeat(k, rep, axis=2), jnp.repeat(v, rep, axis=2)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh)
    causal = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = jnp.where(causal[None, None], scores, jnp.finfo(scores.dtype).min)
    out = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v).reshape(b, t, MOE_D)
    return hk.Linear(MOE_D, with_bias=False, name="o_proj")(out)


def _sparse_moe(x):
    """Top-2 routed SwiGLU experts: the router's two largest logits are
    softmaxed into the weights; every expert is computed densely and the
    results combined with those weights (zero for unrouted experts)."""
    import haiku as hk
    import jax
    import jax.numpy as jnp

    logits = hk.Linear(MOE_EXPERTS, with_bias=False, name="gate")(x)  # B x T x E
    top_val, top_idx = jax.lax.top_k(logits, MOE_TOP_K)
    top_w = jax.nn.softmax(top_val, axis=-1)
    route = jnp.sum(jax.nn.one_hot(top_idx, MOE_EXPERTS, dtype=x.dtype) * top_w[..., None], axis=-2)  # B x T x E

    def init(fan_in):
        return hk.initializers.TruncatedNormal(1.0 / np.sqrt(fan_in))

    w1 = hk.get_parameter("w1", (MOE_EXPERTS, MOE_D, MOE_FFN), init=init(MOE_D))
    w3 = hk.get_parameter("w3", (MOE_EXPERTS, MOE_D, MOE_FFN), init=init(MOE_D))
    w2 = hk.get_parameter("w2", (MOE_EXPERTS, MOE_FFN, MOE_D), init=init(MOE_FFN))
    h = jax.nn.silu(jnp.einsum("btd,edf->btef", x, w1)) * jnp.einsum("btd,edf->btef", x, w3)
    y = jnp.einsum("btef,efd->bted", h, w2)
    return jnp.einsum("bted,bte->btd", y, route)


def mixtral_tiny_moe() -> Model:
    """A two-layer Mixtral-style decoder (pre-RMSNorm, RoPE, causal GQA,
    top-2 sparse MoE feed-forward) to next-token logits."""
    import haiku as hk

    def forward(tokens):
        h = hk.Embed(MOE_VOCAB, MOE_D, name="embed_tokens")(tokens)
        for i in range(MOE_LAYERS):
            with hk.experimental.name_scope(f"layer_{i}"):
                h = h + _attention(hk.RMSNorm(-1, eps=1e-5, name="input_norm")(h))
                h = h + _sparse_moe(hk.RMSNorm(-1, eps=1e-5, name="post_attention_norm")(h))
        h = hk.RMSNorm(-1, eps=1e-5, name="norm")(h)
        return hk.Linear(MOE_VOCAB, with_bias=False, name="lm_head")(h)

    rng = np.random.default_rng(0)
    tokens = Arg("tokens", rng.integers(0, MOE_VOCAB, (1, MOE_SEQ), dtype=np.int32),
                 {"dist": "randint", "low": 0, "high": MOE_VOCAB})
    return _pure("mixtral_tiny_moe", forward, [tokens],
                 source="hand-written Mixtral-style decoder with haiku modules (hk.Embed, hk.Linear, hk.RMSNorm)",
                 architecture="sparse MoE",
                 notes=f"{MOE_LAYERS} layers, d_model {MOE_D}, {MOE_HEADS} heads ({MOE_KV_HEADS} KV heads, GQA), "
                       f"{MOE_EXPERTS} SwiGLU experts of width {MOE_FFN}, top-{MOE_TOP_K} routing (softmax over "
                       f"the top-2 router logits, lax.top_k), experts computed densely and combined with the "
                       f"routing weights; vocab {MOE_VOCAB}, seq {MOE_SEQ}, batch 1")


# ---------------------------------------------------------------- LSTM

LSTM_HIDDEN = 256
LSTM_SEQ = 64
LSTM_BATCH = 4
LSTM_FEATURES = 64
LSTM_OUT = 16


def lstm_seq() -> Model:
    """Two stacked ``hk.LSTM`` layers unrolled with ``hk.dynamic_unroll`` (a
    scan, hence a while loop in the program), time-major, and a linear head
    on every step."""
    import haiku as hk

    def forward(x):  # T x B x F
        core = hk.DeepRNN([hk.LSTM(LSTM_HIDDEN, name="lstm_0"), hk.LSTM(LSTM_HIDDEN, name="lstm_1")])
        out, _ = hk.dynamic_unroll(core, x, core.initial_state(x.shape[1]), time_major=True)
        return hk.Linear(LSTM_OUT, name="head")(out)

    rng = np.random.default_rng(0)
    x = Arg("features", rng.standard_normal((LSTM_SEQ, LSTM_BATCH, LSTM_FEATURES), dtype=np.float32),
            {"dist": "normal", "mean": 0.0, "std": 1.0})
    return _pure("lstm_seq", forward, [x], source="hk.DeepRNN([hk.LSTM(256)] * 2) with hk.dynamic_unroll",
                 architecture="recurrent",
                 notes=f"2 layers, hidden {LSTM_HIDDEN}, seq {LSTM_SEQ} (time-major), batch {LSTM_BATCH}, "
                       f"{LSTM_FEATURES} input features, linear head to {LSTM_OUT} per step")


MODELS = {"dlrm_small": dlrm_small, "mixtral_tiny_moe": mixtral_tiny_moe, "lstm_seq": lstm_seq}
