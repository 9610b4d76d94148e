"""Loading a policy from a local directory, and the device it runs on.

    device = resolve_device("auto")                          # cuda when available, else cpu
    model, tokenizer = load_policy("path/to/model_dir", device, "float32")

``load_policy(path, device, dtype)`` loads any local causal-LM directory (tiny base checkpoints
cached by trainers/local/warmstart.py, a materialized trial checkpoint, or a downloaded Qwen3-0.6B)
with its tokenizer, never from a hub. A Qwen3 with a plain ``tokenizers`` tokenizer loads without
importing transformers (lean_checkpoint.py: ~1.4 CPU-s less start-up per trial); ``lean=False``
forces the Hugging Face classes (needed to run the module's own forward or to ``save_pretrained``).

transformers is imported inside the function that needs it, never at module import.
"""

from __future__ import annotations

from pathlib import Path

import torch

from policy.lean_checkpoint import LeanTokenizer, lean_loadable, load_qwen3_weights


def resolve_device(device: str) -> torch.device:
    """``"auto"`` -> cuda when available, else cpu; ``"cuda"`` without CUDA is a RuntimeError."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("local.device: 'cuda' requested but torch.cuda.is_available() is False")
    return torch.device(device)


def load_policy(path: str | Path, device: torch.device, dtype: str, lean: bool = True):
    """Load a causal LM and its tokenizer from a local directory (never from a hub).

    With ``lean`` (default) a directory that ``lean_loadable`` accepts gives a parameter-only
    ``Qwen3Weights`` (run by LeanQwen3) and a ``LeanTokenizer``; anything else, or ``lean=False``,
    gives the transformers model and tokenizer.
    """
    path = Path(path)
    if lean and lean_loadable(path):
        return load_qwen3_weights(path, device, getattr(torch, dtype)), LeanTokenizer.from_directory(path)
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=getattr(torch, dtype))
    return model.to(device), tokenizer
