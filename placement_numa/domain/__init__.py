"""Pure domain types and rules (no FastAPI, no SQLAlchemy): query filters, request groups, ..."""
