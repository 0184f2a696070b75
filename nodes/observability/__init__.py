"""What a run tells the outside: stream events (`events`), trace metadata and
callbacks (`tracing`), OpenTelemetry spans (`otel`), what its model calls cost (`cost`).

Imports options only (`cost` imports nothing of the house).
"""
