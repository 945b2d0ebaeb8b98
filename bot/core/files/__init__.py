"""Files an agent returns: the ``attach_file`` tool and what a run stored with it."""
