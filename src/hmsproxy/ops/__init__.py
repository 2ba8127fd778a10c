"""Operations: configuration, logs, metrics, audit, health checks."""
