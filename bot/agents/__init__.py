"""The agent runtime on pydantic-ai: model factory, the offline model, and the one runner."""
