"""Every name and unit otel-toolscore writes. Documented in the README; these are a contract."""

from __future__ import annotations

from typing import Final

# -- instrumentation scope --------------------------------------------------------------------------
SCOPE_NAME: Final = "otel_toolscore"

# -- evaluation names (gen_ai.evaluation.name) -------------------------------------------------------
EVAL_CODE: Final = "tool_call_accuracy"
EVAL_LLM: Final = "tool_call_accuracy_llm"

# -- GenAI semantic-convention keys we write ---------------------------------------------------------
EVENT_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
ERROR_TYPE: Final = "error.type"

# -- project-owned span attributes on the run's root span --------------------------------------------
CODE_SCORE: Final = "toolscore.code.score"
CODE_LABEL: Final = "toolscore.code.label"
CODE_EXPECTED_TOOL: Final = "toolscore.code.expected_tool"
CODE_EXPECTED_TOOL_ORDER: Final = "toolscore.code.expected_tool_order"
CODE_STRICT_MODE: Final = "toolscore.code.strict_mode"
CODE_MATCH: Final = "toolscore.code.match"
CODE_ACTUAL_TOOLS: Final = "toolscore.code.actual_tools"
CODE_CORRECT_TOOL_CALLED: Final = "toolscore.code.correct_tool_called"
CODE_CORRECT_ORDER_CALLED: Final = "toolscore.code.correct_order_called"
TOOL_CALL_COUNT: Final = "toolscore.tool_call_count"

# OpenInference inline annotations (Phoenix shows them as span annotations).
OI_ANNOTATION_PREFIX: Final = "annotations"

# -- metrics ------------------------------------------------------------------------------------------
# `gen_ai.evaluation.score` is not (yet) in the GenAI semantic conventions, which define the
# `gen_ai.evaluation.result` event and its `gen_ai.evaluation.*` attributes only: it is the de facto
# name evaluation libraries record scores under, kept so dashboards and alerts built on it work.
METRIC_SCORE: Final = "gen_ai.evaluation.score"
METRIC_RUNS: Final = "toolscore.runs"
METRIC_DROPPED: Final = "toolscore.dropped"
# An UpDownCounter is not pluralised (semantic conventions, "Do not pluralize UpDownCounter names"):
# traces in the state pending, as `cicd.pipeline.run.active`.
METRIC_TRACE_PENDING: Final = "toolscore.trace.pending"
# Deprecated: the same values under the old, pluralised name, still recorded for one release so that
# dashboards and alerts can move; removed in the release after.
METRIC_PENDING_TRACES_DEPRECATED: Final = "toolscore.pending_traces"
METRIC_JUDGE_REQUESTS: Final = "toolscore.judge.requests"
METRIC_JUDGE_SKIPPED: Final = "toolscore.judge.skipped"
METRIC_JUDGE_TOKENS: Final = "toolscore.judge.tokens"
METRIC_JUDGE_DURATION: Final = "toolscore.judge.duration"
METRIC_JUDGE_QUEUE_DEPTH: Final = "toolscore.judge.queue_depth"

ATTR_OUTCOME: Final = "toolscore.outcome"
ATTR_HTTP_CLIENT: Final = "toolscore.client"
ATTR_REASON: Final = "toolscore.reason"
ATTR_EXPECTED_TOOL: Final = "toolscore.expected_tool"

# Histogram buckets: (-inf,0] holds the zeros, ten fractional buckets, (0.99,+inf) holds the ones
# (judge scores are rounded to two decimals, so nothing fractional lands above 0.99).
SCORE_BUCKETS: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99)
DURATION_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0)

# -- value sets (low cardinality) ----------------------------------------------------------------------
# dropped: the run's root ended when the span queue was full (its run never reached the worker)
RUN_OUTCOMES: Final = ("scored", "no_expectation", "no_tool_calls_visible", "evicted", "dropped", "error")
DROP_REASONS: Final = (
    "pending_traces_limit",
    "spans_per_trace_limit",
    "calls_per_run_limit",
    "content_too_large",
    "trace_timeout",
    "late_span",
    "emit_queue_full",
    "malformed_span",
    "downstream_error",
    "open_spans_limit",
    "known_spans_limit",
    "span_queue_full",
    "callback_queue_full",
    "sink_queue_full",
    "sink_failed",
    # an agent or tool name (or a conversation id) from data cut to max_name_chars; an explanation cut
    # to 4,096 characters (a judge's reason can be megabytes)
    "name_too_long",
    "explanation_too_long",
    # a run's root whose end found the span queue full and the lost-roots list (4,096) full too
    "lost_root_untracked",
)
# -- our HTTP clients (sinks, judge, forwarding, the service's own log records) ---------------------------
# Answers refused by one of our HTTP clients, by client and reason (`toolscore.http.client.refused`).
METRIC_HTTP_CLIENT_REFUSED: Final = "toolscore.http.client.refused"
HTTP_CLIENTS: Final = ("phoenix", "langfuse", "judge", "forward", "logs")
# response_too_large: a body (decoded) over the client's `max_response_bytes`, or announced over it by
# Content-Length; redirect: a redirect to another origin (scheme, host, port), never followed;
# deadline: no complete answer (connect to last byte) within the request's deadline.
HTTP_REFUSE_REASONS: Final = ("response_too_large", "redirect", "deadline")
# -- score sinks (``otel_toolscore.sinks``) -------------------------------------------------------------
# Built-in sinks, by the name ``OTEL_TOOLSCORE_SINKS`` lists.
SINK_NAMES: Final = ("phoenix", "langfuse")
# Who produced a score, in OpenInference's and Phoenix's terms (``annotator_kind``).
ANNOTATOR_KIND_CODE: Final = "CODE"
ANNOTATOR_KIND_LLM: Final = "LLM"
# The stable producer id of every score we write (OpenInference ``identifier``): a backend that keys
# results by (target, name, identifier) replaces a re-score instead of adding a second result.
ANNOTATION_IDENTIFIER: Final = "otel-toolscore"
# -- the LLM judge -----------------------------------------------------------------------------------
# Set by the application on the run's root span (or as baggage) to ask for this run to be judged.
ATTR_JUDGE_FLAG: Final = "toolscore.judge"
# Why a judged run was sampled (metric attribute and carrier/event attribute): only ``ratio`` is an
# unbiased sample of traffic; the priority values over-represent what they select.
ATTR_JUDGE_SAMPLED_BY: Final = "toolscore.judge.sampled_by"
JUDGE_SAMPLED_BY: Final = ("ratio", "code_fail", "new_sequence", "flag", "rule")
JUDGE_OUTCOMES: Final = ("ok", "error", "timeout", "rate_limited", "invalid_answer")
JUDGE_SKIP_REASONS: Final = (
    "not_sampled",
    "rate_limit",
    "budget",
    "queue_full",
    "circuit_open",
    "no_content",
    "abandoned",
)
JUDGE_TOKEN_TYPES: Final = ("input", "output")
# The carrier span of a judge verdict (a child of the evaluated root, linked to it).
JUDGE_SPAN_NAME: Final = "evaluate tool_call_accuracy_llm"
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OPENINFERENCE_KIND_EVALUATOR: Final = "EVALUATOR"
JUDGE_MODEL: Final = "toolscore.judge.model"
JUDGE_OUTCOME: Final = "toolscore.judge.outcome"
JUDGE_INPUT_TOKENS: Final = "toolscore.judge.usage.input_tokens"
JUDGE_OUTPUT_TOKENS: Final = "toolscore.judge.usage.output_tokens"
JUDGE_REQUEST_COUNT: Final = "toolscore.judge.request_count"
JUDGE_EVALUATION_COUNT: Final = "toolscore.judge.evaluation_count"
JUDGE_EVALUATION_TOOLS: Final = "toolscore.judge.evaluations.tool"
JUDGE_EVALUATION_APPROPRIATE: Final = "toolscore.judge.evaluations.appropriate"
JUDGE_EVALUATION_REASONING: Final = "toolscore.judge.evaluations.reasoning"
JUDGE_MISSING_TOOLS: Final = "toolscore.judge.missing_tools"
JUDGE_STRUCTURED_OUTPUT: Final = "toolscore.judge.structured_output"

LABEL_PASS: Final = "pass"
LABEL_FAIL: Final = "fail"
OTHER: Final = "_OTHER"

# -- the scoring service (`otel-toolscore serve`) -------------------------------------------------------
METRIC_SERVICE_RECEIVED: Final = "toolscore.service.received"
METRIC_SERVICE_REFUSED: Final = "toolscore.service.refused"
METRIC_SERVICE_TRACES: Final = "toolscore.service.traces"
METRIC_SERVICE_PENDING_SPANS: Final = "toolscore.service.pending_spans"
METRIC_SERVICE_PENDING_BYTES: Final = "toolscore.service.pending_bytes"
METRIC_SERVICE_HTTP_CLOSED: Final = "toolscore.service.http.closed"
METRIC_SERVICE_HTTP_CONNECTIONS: Final = "toolscore.service.http.connections"
METRIC_SERVICE_FORWARD_BACKLOG: Final = "toolscore.service.forward_backlog"
# `serve --queue-dir`: the on-disk queue of accepted requests (bytes on disk, requests not released,
# spans replayed at start).
METRIC_SERVICE_QUEUE_BYTES: Final = "toolscore.service.queue.bytes"
METRIC_SERVICE_QUEUE_REQUESTS: Final = "toolscore.service.queue.requests"
METRIC_SERVICE_QUEUE_REPLAYED: Final = "toolscore.service.queue.replayed"
ATTR_SIGNAL: Final = "toolscore.signal"
SERVICE_SIGNALS: Final = ("spans", "logs")
# Why a request was refused (the sender keeps the data and retries for the retryable ones).
# queue_full / queue_error (`--queue-dir`): the on-disk queue is at its byte limit / cannot be written.
SERVICE_REFUSE_REASONS: Final = (
    "overload", "draining", "invalid", "too_large", "read_timeout", "queue_full", "queue_error"
)
# Why the service closed or refused an OTLP/HTTP connection (`toolscore.service.http.closed`).
SERVICE_HTTP_CLOSE_REASONS: Final = ("connection_limit", "read_timeout", "idle_timeout", "protocol_error")
# How a buffered trace left the service's buffer: complete (root ended, nothing missing, quiet
# period over), timeout (scored as it was at the hard timeout), drained (scored at shutdown).
SERVICE_TRACE_OUTCOMES: Final = ("complete", "timeout", "drained")
# Drop reasons the service adds to `toolscore.dropped` (a span or log record that was not scored).
# drain_timeout: buffered spans not scored (or not forwarded) before the SIGTERM drain deadline;
# forward_queue_full / forward_failed: enrich-and-forward spans the exporter never took / could not send;
# duplicate_span: a span the buffer already held (a sender's retry), kept once;
# queue_corrupt (`--queue-dir`): a request found damaged on disk at start, not replayed;
# log_queue_full / log_export_failed: the service's own evaluation records its log export queue had
# no room for / the backend never took, or the drain's end cut off (records, not spans: not drain_timeout).
SERVICE_DROP_REASONS: Final = (
    "late_log", "orphan_logs", "invalid_span", "drain_timeout", "forward_queue_full", "forward_failed", "duplicate_span",
    "queue_corrupt", "log_queue_full", "log_export_failed",
)
