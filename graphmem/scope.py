"""CallScope: whose call it is and where it applies, carried by one call of `Memory`.

The owner serves many clients with one `Memory`: each call gets a view of it with the client's
scope (`Memory.scoped`), so what one call reads as its project, branch, actor or checkout is never
state another call set. Frozen: a changed scope is a new value (`but`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar, cast, overload

T = TypeVar("T")


@dataclass(frozen=True)
class CallScope:
    """The project and branch a call reads and writes, who acts (recorded on every journal
    record), the caller's git checkout (when an owner serves it) and its client request id."""

    project: str
    branch: str = ""
    actor: str = "api"
    checkout: str | None = None
    request: str | None = None

    def but(self, **changes: Any) -> CallScope:
        """This scope with some fields changed."""
        return replace(self, **changes)

    def for_client(self, context: Mapping[str, Any]) -> CallScope:
        """The scope of an owner's client call: what its request context says, this scope's
        values where it says nothing (the request id is the call's own, never inherited)."""
        return CallScope(project=context.get("project") or self.project,
                         branch=context.get("branch", self.branch),
                         actor=context.get("actor") or self.actor,
                         checkout=context.get("checkout") or self.checkout,
                         request=context.get("request"))


class FromScope(Generic[T]):
    """An attribute of an object that has a `scope` (a Memory) reading that field of its scope;
    setting it gives that object a new scope, so views made from it before keep theirs."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, holder: None, owner: type) -> FromScope[T]: ...

    @overload
    def __get__(self, holder: Any, owner: type) -> T: ...

    def __get__(self, holder: Any, owner: type) -> T | FromScope[T]:
        return self if holder is None else cast(T, getattr(holder.scope, self.name))

    def __set__(self, holder: Any, value: T) -> None:
        holder.scope = holder.scope.but(**{self.name: value})
