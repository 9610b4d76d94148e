"""The ``local:`` section of a trial config: settings only the built-in trainer reads.

The tiny Qwen3's sizes (used when ``model.path`` is None), the device and dtype, torch threads, the
numeric mode (trainers/local/numerics.py) and the supervised warm start that builds the base policy.
Other backends ignore this section.

    local:
      hidden_size: 64
      threads: 1
      numerics: reproducible             # or native
      warm_start: {steps: 2000, lr: 3.0e-3}
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from contract.errors import require


NUMERIC_MODES = ("reproducible", "native")
"""Values of local.numerics (trainers/local/numerics.py)."""
TOKENIZERS = ("char", "char_tags")
"""Values of local.tokenizer: one token per character, or that plus the response tags as single tokens."""


@dataclass
class WarmStartConfig:
    steps: int = 2000
    """Supervised steps on reference solutions that build the base policy (0 = random init)."""
    lr: float = 3e-3
    """Learning rate of the warm start."""
    batch_size: int = 32
    """Problems per warm-start step."""
    cache_dir: str = ".cache/base_models"
    """Where base checkpoints are cached, keyed by a hash of their config (relative to the cwd)."""
    answer_noise: float = 0.4
    """Share of warm-start targets whose final answer is off (reasoning intact): RL can learn to report it."""


@dataclass
class LocalConfig:
    hidden_size: int = 64
    """Tiny model: hidden size (ignored when model.path is set)."""
    num_layers: int = 2
    """Tiny model: number of decoder layers."""
    num_heads: int = 4
    """Tiny model: attention heads."""
    num_kv_heads: int = 2
    """Tiny model: key/value heads (grouped-query attention as in Qwen3)."""
    intermediate_size: int = 192
    """Tiny model: MLP width."""
    tokenizer: str = "char"
    """Tiny model: 'char' (one token per character) or 'char_tags' (<think>, </think>, <answer>, </answer> one token each)."""
    device: str = "cpu"
    """'cpu', 'cuda' or 'auto' (cuda when available)."""
    dtype: str = "float32"
    """Parameter dtype: 'float32' or 'bfloat16' (bf16 is meant for GPUs)."""
    threads: int = 1
    """torch CPU threads (fixed so results are reproducible)."""
    numerics: str = "reproducible"
    """'reproducible': the same bytes on any x86-64 CPU with AVX2 (AVX2 kernels, MKL's COMPATIBLE branch, no
    oneDNN: trainers/local/numerics.py); 'native': the CPU's own, fastest kernels."""
    warm_start: WarmStartConfig = field(default_factory=WarmStartConfig)
    """The supervised warm start that builds the base policy (cached)."""


PATHS = {"warm_start.cache_dir": WarmStartConfig.cache_dir}
"""Keys of the section holding paths, and their defaults (trainers/backends.py ``paths``: a sweep
makes them absolute against the directory it starts in)."""


def validate_local_section(cfg, source: str) -> None:
    """Range checks of the ``local:`` section; ConfigError naming the key path."""

    m, w = cfg.local, cfg.local.warm_start
    require(m.device in ("cpu", "cuda", "auto"), source, "local.device", "'cpu', 'cuda' or 'auto'", m.device)
    require(m.tokenizer in TOKENIZERS, source, "local.tokenizer", " or ".join(map(repr, TOKENIZERS)), m.tokenizer)
    require(m.dtype in ("float32", "bfloat16"), source, "local.dtype", "'float32' or 'bfloat16'", m.dtype)
    require(m.threads >= 1, source, "local.threads", "an integer >= 1", m.threads)
    require(m.numerics in NUMERIC_MODES, source, "local.numerics", " or ".join(map(repr, NUMERIC_MODES)), m.numerics)
    for name in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size"):
        require(getattr(m, name) >= 1, source, f"local.{name}", "an integer >= 1", getattr(m, name))
    require(m.hidden_size % m.num_heads == 0 and m.num_heads % m.num_kv_heads == 0, source, "local.num_heads",
            "hidden_size divisible by num_heads, num_heads divisible by num_kv_heads",
            (m.hidden_size, m.num_heads, m.num_kv_heads))
    require(w.steps >= 0 and w.batch_size >= 1 and w.lr > 0, source, "local.warm_start",
            "steps >= 0, batch_size >= 1, lr > 0", dataclasses.asdict(w))
    require(0 <= w.answer_noise <= 1, source, "local.warm_start.answer_noise", "a number in [0, 1]", w.answer_noise)
    d = cfg.data
    files = ([("data.train_file", d.train_file)] if d.train_file else []) + [
        (f"data.eval_files.{k}", v) for k, v in d.eval_files.items()]
    for path, value in files:
        require(str(value).endswith((".jsonl", ".json", ".parquet")), source, path,
                "a .jsonl, .json or .parquet file (evaluators/loaders.py)", value)
