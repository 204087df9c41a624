"""Research studies: the arms (configs/), the harness that measures them (harness/) and one report per study."""
