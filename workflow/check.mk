# make check: the Check unit tests, then end-to-end tests of the programs.

.PHONY: check
check: $(TEST_BINS) $(PROGS)
	tests/run-tests.sh $(TEST_BINS)
