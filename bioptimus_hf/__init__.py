"""bioptimus-hf: BIOptimus-style biomedical BERT pre-training on top of the Hugging Face Trainer."""

__version__ = "0.1.0"

from .callback import PhaseScheduleCallback
from .collator import CurriculumBatch, CurriculumDataCollator
from .phases import BIOPTIMUS_CURRICULUM, BIOPTIMUS_PHASE_FRACTIONS, CurriculumPhase

__all__ = [
    "BIOPTIMUS_CURRICULUM",
    "BIOPTIMUS_PHASE_FRACTIONS",
    "CurriculumBatch",
    "CurriculumDataCollator",
    "CurriculumPhase",
    "PhaseScheduleCallback",
]
