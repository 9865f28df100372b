"""The owner of memory: one (tenant, user), validated once where it enters the library.

Every read and write of the engine is scoped by an owner (DESIGN.md, Isolation). The public calls keep their
``tenant_id=`` / ``user_id=`` keywords; each turns them into an :class:`Owner` with :meth:`Owner.of`, the one place an
owner's identifiers are checked, and passes that one value on: below the public calls (the manager's private methods,
the erasure, the lifecycle helpers, the write path's reads, every method of the store) an owner is an ``Owner``, never
two strings, and the store unpacks it into its SQL parameters itself. ``tests/test_architecture.py`` fails on a second
owner check anywhere else, and on a function below the entry points that takes ``tenant_id`` and ``user_id``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from memory.core.schema import OwnerArgs, validate_identifier


@dataclass(frozen=True, order=True)
class Owner:
    """One (tenant, user), its identifiers validated when it is made and kept in the form they are stored in (NFC: see
    :func:`memory.core.schema.validate_identifier`): an Owner that exists is valid. Unpacks as ``tenant_id, user_id``.
    """

    tenant_id: str
    user_id: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "tenant_id", validate_identifier(self.tenant_id, "tenant_id"))
        object.__setattr__(self, "user_id", validate_identifier(self.user_id, "user_id"))

    @classmethod
    def of(cls, tenant_id: Any, user_id: Any) -> "Owner":
        """The owner named by two identifiers; :class:`~memory.core.errors.IdentifierError` naming ``tenant_id`` or
        ``user_id`` when one is not a plain identifier (None, like anything but a plain string, is refused)."""
        return cls(tenant_id, user_id)

    def __iter__(self) -> Iterator[str]:
        yield self.tenant_id
        yield self.user_id

    @property
    def key(self) -> tuple[str, str]:
        """(tenant_id, user_id): the owner as the stores key it."""
        return (self.tenant_id, self.user_id)

    @property
    def args(self) -> OwnerArgs:
        """The keyword arguments naming this owner, to pass as ``**owner.args`` to the engine's calls."""
        return {"tenant_id": self.tenant_id, "user_id": self.user_id}

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.user_id}"


def check_owner(tenant_id: Any, user_id: Any) -> tuple[str, str]:
    """(tenant_id, user_id) validated and in stored form: :meth:`Owner.of` as a pair, for a caller that wants the
    two strings (the library's own calls pass the ``Owner``)."""
    return Owner.of(tenant_id, user_id).key
