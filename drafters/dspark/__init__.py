"""DSpark drafter: config, model, losses, anchor sampling, proposer, checkpoints, LoRA (docs/dspark.md, docs/serving.md 2).

Submodules import torch; import them directly (``from drafters.dspark.model import DSparkDrafter``) or through
the names below.
"""

from drafters.dspark.anchors import sample_anchors
from drafters.dspark.checkpoint import (
                                        CheckpointError,
                                        CheckpointInfo,
                                        import_checkpoint,
                                        load_checkpoint,
                                        save_checkpoint,
                                        validate_checkpoint,
)
from drafters.dspark.config import ConfigError, DSparkConfig, choose_mask_token_id, default_target_layer_ids
from drafters.dspark.losses import LossOutput, dspark_loss
from drafters.dspark.model import DSparkDrafter
from drafters.dspark.proposer import DSparkProposer

__all__ = [
    "CheckpointError", "CheckpointInfo", "ConfigError", "DSparkConfig", "DSparkDrafter", "DSparkProposer",
    "LossOutput", "choose_mask_token_id", "default_target_layer_ids", "dspark_loss", "import_checkpoint",
    "load_checkpoint", "sample_anchors", "save_checkpoint", "validate_checkpoint",
]
