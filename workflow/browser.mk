# make check-browser: the report in headless Chromium (installed if missing),
# and a report of awkward names (tests/names-check.sh).

.PHONY: check-browser chromium
chromium:
	@sh workflow/deps.sh browser

check-browser: report chromium
	tests/browser-check.sh report/index.html
	tests/names-check.sh browser
