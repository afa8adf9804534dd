# make check-browser: the report in headless Chromium (installed if missing).

.PHONY: check-browser chromium
chromium:
	@sh workflow/deps.sh browser

check-browser: report chromium
	tests/browser-check.sh report/index.html
