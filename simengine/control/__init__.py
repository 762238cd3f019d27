"""Run control: the one run loop (:mod:`.runner`) and the jobs it drives — a field run (:mod:`.field_job`), an ensemble of field runs (:mod:`.ensemble_run`), a network run (:mod:`.network_job`)."""
