# coextra's two commands (README.md): `make demo` and `make test`.
# `make demo` installs coextra into one virtual environment and runs the
# stress demo (scripts/demo.sh). The others install what is missing
# (scripts/bootstrap.sh: Debian packages, one virtual environment per
# interpreter, nox in each), then run sessions of noxfile.py: `nox -l` lists them.

# nox runs on the host: the newest host interpreter's venv has it (3.14 and
# 3.15 may be entry points into scripts/sid-root.sh's root, without nox).
NOX = $$(ls -d .venv/py3.*/bin/nox | sort -V | tail -1)

.PHONY: all bootstrap build test demo bench leakcheck conformance clean

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@$(NOX) -s build

demo:
	@scripts/demo.sh

# Each runs the noxfile.py sessions tagged with its name:
#   test         every suite on every interpreter, then the leak harness's quick forms
#   bench        every benchmark (the collector's and EphemeronMap's on 3.11 and 3.13 too),
#                a summary in docs/benchmarks.md
#   leakcheck    the full leak harness (docs/leak-checks.md): valgrind on 3.11 and 3.12,
#                ASan+UBSan+LSan, refleak hunting on the debug interpreter, planted leaks
#   conformance  CPython's own regression tests with the coextra.evalframe backend in
#                every process against a plain run, the large selection on 3.11 and 3.13
#                (docs/conformance.md)
test bench leakcheck conformance: bootstrap
	@$(NOX) -t $@

clean:
	rm -rf build dist python/coextra/*.so
	rm -rf tests/python/_ext
