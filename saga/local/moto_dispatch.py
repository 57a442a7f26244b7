"""moto's dispatch, made cheaper: what it looks up again on every request, looked up once.

moto (5.x) finds the service of each request by listing its own package's folders from disk
(`backends.list_of_moto_modules`: ~55 `stat` calls a request), and each response class its methods by
inspecting the class (`method_names_from_class`). Neither can change while the endpoint runs, and the
two were a fifth of the endpoint's CPU for a GetItem (2.8 ms), which every test and benchmark pays on
every AWS call. Both answers are kept after the first: the same answers, once.
"""

from __future__ import annotations

import functools

import moto.backends
import moto.core.responses

backends, responses = moto.backends, moto.core.responses

_original_modules = backends.list_of_moto_modules
_original_methods = responses.method_names_from_class


@functools.cache
def _list_of_moto_modules() -> tuple[str, ...]:
    return tuple(_original_modules())


@functools.cache
def _method_names_from_class(clazz: object) -> tuple[str, ...]:
    return tuple(_original_methods(clazz))


def _methods_of(clazz: object) -> list[str]:
    return list(_method_names_from_class(clazz))  # a copy: moto's caller may change its list


def install() -> None:
    """Replace moto's two lookups with kept answers (idempotent)."""
    backends.list_of_moto_modules = _list_of_moto_modules
    responses.method_names_from_class = _methods_of
