"""Training: every kind of model a world declares goes through one Trainer path.

    kinds.py          the registry (base, finetune, lora, composition): what each builds, trains and saves
    lora_parity.py    a LoRA matched to a composition's added parameters (Table 5's LoRA)
    vocabulary_fit.py an existing model made to read the world's tokenizer
    data.py           prompt/target rows -> tokenised datasets (datasets.map, cached), the collator
    trainer.py        transformers.Trainer with the runtime's device/precision, resume from the newest complete checkpoint
    architectures.py  causal LMs from scratch (llama, gpt2, xglm)
"""
