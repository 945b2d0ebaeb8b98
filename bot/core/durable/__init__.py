"""Durable runs on DBOS: workflows, queues, journals, executors."""
