"""API keys and roles (API.md §1): one dependency on every route decides by (method, path)."""

from __future__ import annotations

import hmac
from enum import IntEnum
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from core.settings import Settings

COLLECTION = "/v1/collections/{collection_name}"


class Role(IntEnum):
    """Ordered: a key of a role may do everything the lower roles may."""

    PUBLIC = 0
    SEARCH = 1
    READ = 2
    ADMIN = 3


PUBLIC_ROUTES = frozenset(
    {
        ("GET", "/v1/version"),
        ("GET", "/v1/health/check"),
        ("GET", "/v1/health/ready"),
        # A static page with no data in it; what it shows comes from read-role routes.
        ("GET", "/dashboard/"),
    }
)
SEARCH_ROUTES = frozenset({("POST", f"{COLLECTION}/search")})
# Every other write is admin; these POSTs only read.
READ_POSTS = frozenset({("POST", f"{COLLECTION}/documents/fetch")})


def required_role(method: str, path: str) -> Role:
    """The role a route needs. A write not listed here needs admin, so a new route fails closed."""
    method = method.upper()
    route = ("GET" if method == "HEAD" else method, path)  # HEAD is served by the GET route
    if route in PUBLIC_ROUTES:
        return Role.PUBLIC
    if route in SEARCH_ROUTES:
        return Role.SEARCH
    if route[0] in ("GET", "OPTIONS") or route in READ_POSTS:
        return Role.READ
    return Role.ADMIN


class KeyRing:
    """The configured keys and their roles; auth is off when none is configured."""

    def __init__(self, settings: Settings) -> None:
        pairs = (
            (settings.api_key, Role.ADMIN),
            (settings.alt_api_key, Role.ADMIN),
            (settings.read_key, Role.READ),
            (settings.alt_read_key, Role.READ),
            (settings.search_key, Role.SEARCH),
            (settings.alt_search_key, Role.SEARCH),
        )
        self._keys = [(key.encode(), role) for key, role in pairs if key]

    @property
    def enabled(self) -> bool:
        return bool(self._keys)

    def refusal(self, presented: list[str], needed: Role) -> str | None:
        """Why the keys `presented` (the api-key header's, the bearer token's) may not do what
        needs the role `needed`; None when they may."""
        if not self.enabled or needed is Role.PUBLIC:
            return None
        if not presented:
            return "Not authenticated: send the key in 'api-key' or 'Authorization'"
        granted = [role for role in map(self.role_of, presented) if role is not None]
        if not granted:
            return "Invalid API key"
        if max(granted) < needed:
            return f"This key may not do this: it needs the {needed.name.lower()} role"
        return None

    def role_of(self, presented: str) -> Role | None:
        """The highest role the key grants; every key is compared, each in constant time."""
        candidate = presented.encode()
        found: Role | None = None
        for key, role in self._keys:
            if hmac.compare_digest(candidate, key) and (found is None or role > found):
                found = role
        return found


_api_key_header = APIKeyHeader(name="api-key", scheme_name="ApiKeyHeader", auto_error=False)
_bearer = HTTPBearer(scheme_name="BearerAuth", auto_error=False)


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(status_code=401, detail=detail, headers={"WWW-Authenticate": "Bearer"})


async def authorize(
    request: Request,
    api_key: Annotated[str | None, Depends(_api_key_header)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Applied once, to the whole app: every route is checked against `required_role`."""
    keys: KeyRing = request.app.state.keys
    if not keys.enabled:
        return
    route = request.scope["route"]
    needed = required_role(request.method, route.path)
    presented = [k for k in (api_key, bearer.credentials if bearer else None) if k]
    refusal = keys.refusal(presented, needed)
    if refusal is not None:
        raise _unauthorized(refusal)
