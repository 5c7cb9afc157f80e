"""Repositories: SQL for one aggregate each, as functions taking a ``Connection``.

They run inside the caller's transaction (services open it with ``Database.write()``), so a use
case such as the reshaper can compose several of them atomically.
"""
