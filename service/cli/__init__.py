"""The `tracedraft` command line (Typer): the embedded main job, and the user, admin and operator verbs.

User verbs go through the REST API (``--api-url``/``--api-key`` or ``TRACEDRAFT_API_URL`` /
``TRACEDRAFT_API_KEY``): ``datasets upload|validate|list|show`` (``validate`` also works offline),
``jobs submit|list|show|events [--follow]|cancel``, ``drafters list|versions|show|diff|export``.
Admin verbs: ``promote``, ``rollback``, ``alias history`` (through the API with an admin key, or directly
on the database with ``--db-url`` and ``--org`` for break-glass use), ``orgs create|list``,
``keys create|list|revoke`` and ``gc`` (on the database). Operator verbs: ``serve``, ``worker``,
``db upgrade|current`` and ``run`` (the whole job, embedded).

Output is a table for people and ``--json`` for scripts. Errors print one line, ``error [code] message
(at param)``, with the API's stable error code, and exit with:

====  =====================================================================================
0     ok
1     error: a failed job or dataset, an unreachable API or database, a server error (5xx)
2     usage or invalid input: bad options (Typer), 400/413/415/422 from the API
3     not found: 404 (another organization's resources answer 404 too), a missing file
4     conflict or refused: 409 (incompatible version, checksum mismatch, finished job,
      nothing to roll back, name taken), 401/403 (unknown key, member key on an admin verb),
      429, a declined confirmation, ``db current`` behind head
130   interrupted (Ctrl-C)
====  =====================================================================================

``tracedraft run`` keeps its own documented codes (0 succeeded, 1 failed or bad input, 130 stopped).
"""

from __future__ import annotations

import sys

import typer

from service.cli import admin, data, infer_mapping, main_job, ops, registry_cmds, show_calls  # noqa: F401 (registers)
from service.cli._common import console, err_console, fail
from service.cli.main_job import print_summary

app = typer.Typer(
    name="tracedraft",
    help="Fine-tune DSpark drafters on your agent traces, measure accepted length, publish to a registry.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """tracedraft: fine-tune DSpark drafters on your agent traces."""


# operator: the embedded main job first, as in the README
app.command("run")(main_job.run)
app.command("serve")(ops.serve)
app.command("worker")(ops.worker)
app.add_typer(ops.db_app, name="db")
app.add_typer(ops.engines_app, name="engines")
# user
app.add_typer(data.datasets_app, name="datasets")
app.add_typer(data.jobs_app, name="jobs")
app.add_typer(registry_cmds.drafters_app, name="drafters")
# admin
app.command("promote")(registry_cmds.promote)
app.command("rollback")(registry_cmds.rollback)
app.add_typer(registry_cmds.alias_app, name="alias")
app.add_typer(admin.orgs_app, name="orgs")
app.add_typer(admin.keys_app, name="keys")
app.command("gc")(admin.gc)

__all__ = ["app", "console", "err_console", "fail", "main", "print_summary"]


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
