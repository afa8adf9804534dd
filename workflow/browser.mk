# make check-browser: the report in headless Chromium (installed if missing).

.PHONY: check-browser chromium
chromium:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" -eq 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "qkreport: run: sudo apt-get install -y chromium" >&2; exit 1; fi; }

check-browser: report/index.html chromium
	tests/browser-check.sh report/index.html
