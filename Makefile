# The two commands a newcomer needs: `make start` and `make test`. Each installs what it needs first.
.PHONY: start test lint typecheck build bench clean install

STAMP := node_modules/.installed

$(STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $(STAMP)

install: $(STAMP)

# The widget's browser test drives Debian's Chromium (npm's browser downloads cannot be used here).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; \
	else \
	  echo "the widget test needs Debian's chromium: sudo apt-get install chromium"; exit 1; \
	fi

start: $(STAMP)
	npm start

test: $(STAMP) $(CHROMIUM)
	npm test

lint: $(STAMP)
	npm run lint

typecheck: $(STAMP)
	npm run typecheck

build: $(STAMP)
	npm run build

bench: $(STAMP)
	npm run bench

clean:
	rm -rf dist .data
