"""The six stages of a job, as thin glue: read the job's inputs, call one ``drafters`` function, write back.

Each function takes a ``StageContext`` (workers/context.py) and returns a JSON-able dict that the stage
task stores as ``job.result[<stage>]``. Large outputs live in the job's work directory (local, persistent
across re-deliveries) and, where other machines need them, in the artifact store. No ML logic lives here:
it is all in ``drafters``; no SQL either: it is all in ``service``.

The job spec (``job.spec``) this reads, with the defaults that "auto" resolves to:

    target:      {"model": "smollm2-135m-instruct", "chat_template": null | "<jinja text>",
                  "template_kwargs": {}, "max_seq_len": "auto"}
    data:        {"format": null, "on_error": "skip", "scrub": true, "heldout_fraction": 0.1}
    base_drafter: null | "name@alias" | "name@v3" | a checkpoint directory
    drafter_name: "<target>-agent" by default
    recipe:      {"num_draft_layers": "auto", "block_size": 7, "max_steps": "auto", "time_budget_s": null,
                  "lr": "auto", "num_anchors": "auto", "seed": 0, "segment_weights": {"tool_args": 2.0},
                  "parallel": "auto" (fsdp when the replicated state would not fit; shards only under torchrun), ...}
    evaluation:  {"engine": "hf", "max_calls": "auto", "max_new_tokens": "auto", "temperature": 0.0, "seed": 0}
    promotion:   {"min_gain": 0.02, "max_segment_loss": 0.03, "min_support": 20, "auto_promote": false}
"""

from workers.stages.evaluate import evaluate
from workers.stages.prepare import prepare
from workers.stages.regenerate import regenerate
from workers.stages.register import register
from workers.stages.train import train
from workers.stages.validate import validate

__all__ = ["evaluate", "prepare", "regenerate", "register", "train", "validate"]
