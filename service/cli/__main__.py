"""``python -m service.cli``: the same app as the ``tracedraft`` console script."""

from service.cli import app

app(prog_name="tracedraft")
