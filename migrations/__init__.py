"""Alembic migrations of the tracedraft database (run with ``tracedraft db upgrade`` or
``service.db.session.upgrade(url)``; located through ``importlib.resources`` so they work installed)."""
