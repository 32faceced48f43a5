"""Fine-tuning a pre-trained encoder over seeds, what NER (``bioptimus_hf.ner``) and BLURB beyond NER
(``bioptimus_hf.blurb``) share: ``finetuning_config`` (the model, precision and stabilisation flags),
``stabilisation`` (Tinn et al.'s), ``seed_loop`` (the one loop over seeds), ``batched_seeds`` (the seeds as one
stacked model), ``row_order_trainer``, ``results`` (seed files merged into ``all_results.json``) and ``model_card``.
"""
