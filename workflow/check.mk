# make check: the Check unit tests, then end-to-end tests of the programs.

.PHONY: check
check: $(TEST_BINS) $(PROGS)
	tests/run-tests.sh $(TEST_BINS)

# Two clean runs of `make report archive` in copies of the tree give
# byte-identical outputs (minutes; run by CI).
.PHONY: check-determinism
check-determinism:
	tests/determinism-check.sh
