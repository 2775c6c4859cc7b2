# coextra's two commands (README.md): `make demo` and `make test`.
# Each installs what is missing (scripts/bootstrap.sh: Debian packages, one
# virtual environment per interpreter, nox in each), then runs sessions of
# noxfile.py: `nox -l` lists them.

NOX = $$(ls -d .venv/py3.* | sort -V | tail -1)/bin/nox

.PHONY: all bootstrap build test demo bench leakcheck conformance clean

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@$(NOX) -s build

# Every suite on every interpreter, then the leak harness's quick forms.
test: bootstrap
	@$(NOX) -t test

demo: bootstrap
	@$(NOX) -t demo

bench: bootstrap
	@$(NOX) -t bench

# The full leak harness (docs/leak-checks.md): valgrind on 3.11 and 3.12, ASan+UBSan+LSan,
# refleak hunting on the debug interpreter, planted-leak checks.
leakcheck: bootstrap
	@$(NOX) -t leakcheck

# CPython's own regression tests with the coextra.evalframe backend in every process,
# against a plain run (docs/conformance.md): the large selection on 3.11 and 3.13.
conformance: bootstrap
	@$(NOX) -t conformance

clean:
	rm -rf build python/coextra/*.so
	rm -rf tests/python/_ext
