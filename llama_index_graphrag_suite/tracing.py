"""Instrumentation spans around the stages of each method and of an index build.

LlamaIndex 0.14's instrumentation (``llama_index.core.instrumentation``) already opens a span for
``retriever.retrieve`` and ``_retrieve``. Inside them this module adds one span per stage, named
``<method>.<stage>`` (``agrag.ppr``, ``pathrag.flow_propagation``, ``a2rag.bridge``, ``index.embed``...),
so a span handler attached to the root dispatcher sees where a query or a build spends its time::

    import llama_index.core.instrumentation as instrument
    from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler

    handler = SimpleSpanHandler()
    instrument.get_dispatcher().add_span_handler(handler)
    retriever.retrieve("...")
    handler.print_trace_trees()

A span's id is ``"<name>-<uuid4>"``, as LlamaIndex makes them (``span_name`` takes the name back), and
its parent is the span open in the same context (thread or asyncio task), as for LlamaIndex's own.
With no handler attached a span costs a few microseconds; the stages it wraps take milliseconds.
"""

from __future__ import annotations

import functools
import inspect
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import Token
from typing import Any, TypeVar

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.dispatcher import active_instrument_tags
from llama_index.core.instrumentation.events.span import SpanDropEvent
from llama_index.core.instrumentation.span import active_span_id

__all__ = ["dispatcher", "span_name", "stage", "traced"]

F = TypeVar("F", bound=Callable[..., Any])

# A child of the root dispatcher: handlers on the root see our spans, handlers here see only ours.
dispatcher = get_dispatcher("llama_index_graphrag_suite")
# Span handlers receive the call's bound arguments; a stage has none of its own to show.
_NO_ARGS = inspect.signature(lambda: None).bind()


def span_name(span_id: str) -> str:
    """``"agrag.ppr"`` from the span id ``"agrag.ppr-<uuid4>"`` (the uuid has four hyphens)."""
    return span_id.rsplit("-", 5)[0]


@contextmanager
def stage(name: str) -> Iterator[None]:
    """A span named ``name`` around a ``with`` block, nested under whatever span is open (see the module docstring).

    Mirrors ``Dispatcher.span`` (which only decorates whole functions): enter, then exit, or drop
    with the error (re-raised unchanged).
    """
    span_id = f"{name}-{uuid.uuid4()}"
    token = active_span_id.set(span_id)
    parent = None if token.old_value is Token.MISSING else token.old_value
    dispatcher.span_enter(id_=span_id, bound_args=_NO_ARGS, instance=None, parent_id=parent,
                          tags=active_instrument_tags.get())  # as Dispatcher.span passes them
    try:
        yield
    except BaseException as exc:
        dispatcher.event(SpanDropEvent(span_id=span_id, err_str=str(exc)))
        dispatcher.span_drop(id_=span_id, bound_args=_NO_ARGS, instance=None, err=exc)
        raise
    else:
        dispatcher.span_exit(id_=span_id, bound_args=_NO_ARGS, instance=None, result=None)
    finally:
        active_span_id.reset(token)


def traced(name: str) -> Callable[[F], F]:
    """Decorator form of :func:`stage` for a plain (not async) function."""
    def decorate(func: F) -> F:
        if inspect.iscoroutinefunction(func):
            raise TypeError(f"traced({name!r}) wraps plain functions; {func.__qualname__} is async")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with stage(name):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
