"""Compact students by knowledge distillation (Rohanian et al., 2023) and top-layer removal (Tinn et al., 2023):
``recipes`` (DistilBioBERT, CompactBioBERT, TinyBioBERT: initialisation and loss weights), ``distillation_config``
(the flags and the checked plan), ``losses`` (the loss functions), ``student`` (kept layers, random students,
the projection W_p, the teacher in inference mode), ``distillation_trainer`` (the Trainer), ``speed`` (teacher vs
student inference speed), ``student_release`` (the student written as a release), ``run`` (``bioptimus distill``'s
run) and ``layer_removal`` + ``layer_removal_config`` (``bioptimus remove-layers``)."""
