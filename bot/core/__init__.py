"""The orchestrator core. It never imports discord: it talks to the outside through storage and small ports."""
