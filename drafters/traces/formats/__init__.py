"""One module per trace format; each defines FORMAT (see base.py)."""
