# coextra's two commands (README.md): `make demo` and `make test`.
# Each installs what is missing (scripts/bootstrap.sh), builds, and runs.

.PHONY: all bootstrap build test demo bench clean

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@scripts/build.sh

test: build
	@scripts/test.sh

demo: build
	@scripts/demo.sh

bench: build
	@scripts/bench.sh

# The full leak harness (docs/leak-checks.md): valgrind on 3.11 and 3.12, ASan+UBSan+LSan,
# refleak hunting on the debug interpreter, planted-leak checks.
.PHONY: leakcheck
leakcheck: build
	@scripts/leakcheck.sh full

# CPython's own regression tests with the coextra.evalframe backend in every process,
# against a plain run (docs/conformance.md): the large selection on 3.11 and 3.13.
.PHONY: conformance
conformance: build
	@status=0; for v in 3.11 3.13; do \
	    .venv/py$$v/bin/python tests/conformance/run.py --selection large || status=1; \
	done; exit $$status

clean:
	rm -rf build python/coextra/*.so
	rm -rf tests/python/_ext
