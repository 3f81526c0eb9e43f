"""The control plane's database: SQLAlchemy 2 models (``service.db.models``) and sessions
(``service.db.session``). Import models from here: ``from service.db import Job, Drafter``."""

from service.db import models
from service.db.base import new_id, utcnow
from service.db.models import *
from service.db.session import (
    current,
    downgrade,
    get_engine,
    get_sessionmaker,
    make_engine,
    session_factory,
    session_scope,
    upgrade,
)

__all__ = [
    "current",
    "downgrade",
    "get_engine",
    "get_sessionmaker",
    "make_engine",
    "new_id",
    "session_factory",
    "session_scope",
    "upgrade",
    "utcnow",
]
# The models and enums are listed once, in models.__all__; this package re-exports them.
__all__ += models.__all__
