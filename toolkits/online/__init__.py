"""Online finetuning as a service: the improver watches a server's recordings, improves the current policy of a
registry on them, gates the candidate and publishes it (``worldrl improve``)."""
