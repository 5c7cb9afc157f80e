"""Pydantic request shapes per resource and microversion."""
