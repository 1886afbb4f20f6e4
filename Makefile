# The two commands a newcomer needs: `make start` and `make test`. Each installs what it needs first.
.PHONY: start test lint typecheck build bench clean install

STAMP := node_modules/.installed

$(STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $(STAMP)

install: $(STAMP)

# Tests read the service with real clients from Debian's packages: the widget's browser test drives
# Chromium (npm's browser downloads cannot be used here), the GIS test reads GeoJSON with GDAL, and the
# documentation's snippets run with pandas and R.
PANDAS := /usr/lib/python3/dist-packages/pandas/__init__.py
TEST_TOOLS := /usr/bin/chromium /usr/bin/ogr2ogr /usr/bin/Rscript $(PANDAS)
/usr/bin/chromium: PACKAGE := chromium
/usr/bin/ogr2ogr: PACKAGE := gdal-bin
/usr/bin/Rscript: PACKAGE := r-base-core
$(PANDAS): PACKAGE := python3-pandas
$(TEST_TOOLS):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(PACKAGE); \
	else \
	  echo "the tests need Debian's $(PACKAGE): sudo apt-get install $(PACKAGE)"; exit 1; \
	fi

start: $(STAMP)
	npm start

test: $(STAMP) $(TEST_TOOLS)
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
