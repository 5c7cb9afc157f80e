"""Routes: resource_providers (to be implemented)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
