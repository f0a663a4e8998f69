"""The only writer of OpenTelemetry output: names, span attributes, evaluation events and metrics."""

from . import names
from ._attributes import code_score_attributes, openinference_annotation
from ._emitter import BoundedLabels, Emitter, RunRef

__all__ = ["BoundedLabels", "Emitter", "RunRef", "code_score_attributes", "names", "openinference_annotation"]
