"""``tracedraft datasets infer-mapping FILE``: the declared mapping the general path infers for a file.

The general path (``formats/generic.py``) reads a file of an unknown format by the shape of its first records
(``formats/_shapes.py``). This writes that reading down as a mapping file (``drafters/traces/mapping.py``), so
a user whose file the general path misreads or refuses fixes one line instead of writing a mapping from
scratch. Torch-free, standard library plus PyYAML.
"""

from __future__ import annotations

import os
from itertools import islice

from drafters.traces import io as tio
from drafters.traces.formats import _reading, _shapes, _streams
from drafters.traces.report import TraceError, ValidationReport


def infer_mapping(path: str | os.PathLike[str], name: str | None = None) -> _shapes.Inferred:
    """The shape and mapping the general path infers from the file's first records.

    Raises:
        TraceError("ambiguous_shape") naming the candidate readings when two fit;
        TraceError("no_messages_found") when no shape fits (with the first problem reading the file, if any);
        OSError when the file cannot be read.
    """
    problems = ValidationReport()
    label = name or os.path.basename(str(path)).split(".")[0][:40] or "inferred"
    with tio.open_text(path) as stream:
        sample = list(islice(_streams.joined_records(_reading.load_json_or_lines(stream, str(path), problems, "generic"),
                                                     problems, "generic"), _shapes.SAMPLE))
    got = _shapes.infer(sample, label)
    if isinstance(got, _shapes.Ambiguous):
        raise TraceError("ambiguous_shape", "the records fit more than one reading: " + "; ".join(got.candidates)
                         + " (write a mapping naming the one that holds the conversation)", str(path))
    if got is None:
        why = f" (first problem: {problems.errors[0].code}: {problems.errors[0].message})" if problems.errors else ""
        raise TraceError("no_messages_found", "no message list, message records, request/response records or agent "
                         f"steps were found in the file's first records{why}", str(path))
    return got


def mapping_yaml(inferred: _shapes.Inferred) -> str:
    """The inferred mapping as a commented YAML mapping file."""
    import yaml

    head = [f"# inferred by the general path: shape {inferred.shape}",
            "# check the roles (a value not listed is an error), then ingest with --mapping THIS_FILE"]
    if inferred.calls_not_read:
        head.append(f"# TOOL CALLS under {', '.join(inferred.calls_not_read)} are not read: declare tool_calls (and "
                    "tool_call) for them")
    if inferred.keys_not_read:
        head.append(f"# message keys holding data this mapping does not read: {', '.join(inferred.keys_not_read)}")
    body = yaml.safe_dump(inferred.mapping.to_dict(), sort_keys=False, allow_unicode=True, default_flow_style=False)
    return "\n".join(head) + "\n" + body
