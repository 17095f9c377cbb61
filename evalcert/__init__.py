"""evalcert: certified fits, exact judge audits and solver benchmarks for
label-free LLM evaluation."""

__version__ = "0.1.0"
