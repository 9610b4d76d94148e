"""Loading and sampling a policy: what is about the model, not about training it.

    policy.model           load_policy (a local model directory, lean or transformers), resolve_device
    policy.rollout         sample (KV-cache generation with behaviour log-probs), score (log-probs and
                           entropy of given responses, with gradient), Rollout, left_pad
    policy.fast_qwen3      LeanQwen3: a lean forward over a Qwen3's own parameters (decode, prefill,
                           packed scoring), KVCache
    policy.lean_checkpoint a Qwen3 directory loaded without transformers (Qwen3Weights, LeanTokenizer)
    policy.packing         a scored mini-batch packed into real tokens, each distinct prompt once

    from policy.model import load_policy, resolve_device
    from policy.rollout import sample
    model, tokenizer = load_policy("path/to/model_dir", resolve_device("auto"), "float32")
    ro = sample(model, [tokenizer.encode("Q: 1+2=?")], max_new_tokens=32,
                eos_id=tokenizer.eos_token_id, pad_id=tokenizer.pad_token_id)

The local trainer (trainers/local) trains with it and the evaluators generate with it. It imports
contract at most (and torch, tokenizers, safetensors; transformers only inside functions), never
evaluators, trainers, trial_eval, dashboards or sweeps: tests/test_import_floors.py keeps it so.
"""
