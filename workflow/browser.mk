# make check-browser: the report in headless Chromium (installed if missing),
# the page of every head and the values on hover (tests/heads-check.py), the
# layout of every figure as the page shows it (tests/layout-check.sh: the
# demo report, a thesis-scale run and a partial download) and a report of
# awkward names (tests/names-check.sh).

.PHONY: check-browser chromium
chromium:
	@sh workflow/deps.sh browser

check-browser: report chromium
	tests/browser-check.sh report/index.html
	/usr/bin/python3 tests/heads-check.py page report/heads.html results/heads.csv report/index.html
	tests/layout-check.sh
	tests/names-check.sh browser
