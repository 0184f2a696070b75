"""What a run tells the outside: stream events (`events`), trace metadata and
callbacks (`tracing`), OpenTelemetry spans (`otel`).

Imports options only.
"""
