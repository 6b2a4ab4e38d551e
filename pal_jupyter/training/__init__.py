"""Learning from the interpreter: collect programs whose runs were checked, fine-tune a LoRA adapter on them.

``collect`` (programs with their interpreter feedback and verdicts, resumable) <- ``examples``
(LeTI and PAL-SFT training sequences with their loss masks) <- ``lora`` (the training loop,
the adapter and its metadata). Loading an adapter is the backends' job
(:mod:`pal_jupyter.backends.adapters`).
"""
