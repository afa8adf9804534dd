# make check-slurm: workflow/qk-srun (one Slurm job per stage recipe)
# against a real one-node cluster that each test starts in a temporary
# directory and stops again (tests/lib-slurm.sh; needs root, installs
# slurmctld slurmd slurm-client munge if missing). Every tests/slurm-*.sh
# but the start/stop helper is a test; they copy the built programs into
# their trees, so the programs are built first.

SLURM_TESTS := $(filter-out tests/slurm-cluster.sh,$(sort $(wildcard tests/slurm-*.sh)))

.PHONY: check-slurm
check-slurm: $(PROGS)
	@failed=""; \
	for t in $(SLURM_TESTS); do \
	  echo "== $$t"; bash "$$t" || failed="$$failed $$t"; \
	done; \
	[ -z "$$failed" ] || { echo "failed:$$failed"; exit 1; }
