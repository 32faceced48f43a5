"""Fine-tuning a pre-trained encoder over seeds, what NER (``bioptimus_hf.ner``) and BLURB beyond NER
(``bioptimus_hf.blurb``) share.

One concept per module: ``finetuning_config`` (the model, precision and stabilisation flags both take),
``stabilisation`` (Tinn et al.'s layer freezing, layer-wise learning rates and re-initialisation),
``row_order_trainer`` (the ``Trainer`` that predicts in dataset order), ``seed_loop`` (the steps every seed
shares: its arguments, timed training, the model kept, checkpoints removed), ``results`` (each seed's
``seed_results.json``, merged into ``all_results.json``; checkpoint removal; the settings a run records) and
``model_card`` (the one card writer of a fine-tuned model, NER or BLURB task).
"""
