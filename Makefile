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

clean:
	rm -rf build python/coextra/*.so
	rm -rf tests/python/_ext
