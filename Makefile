# The two commands a newcomer needs: `make start` and `make test`. Each installs what it needs first.
.PHONY: start test lint typecheck build bench clean install

STAMP := node_modules/.installed

$(STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $(STAMP)

install: $(STAMP)

start: $(STAMP)
	npm start

test: $(STAMP)
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
