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

clean:
	rm -rf build python/coextra/*.so
	rm -rf tests/python/_ext
