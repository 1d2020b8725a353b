# Two entry points set up a fresh machine: `make run` and `make test`.
# Both install only what is missing (scripts/install-deps.sh), configure and build.
BUILD    ?= build
JOBS     ?= $(shell nproc)
CMAKE_ARGS ?=
SCENARIO ?= scenarios/default.yaml

.PHONY: deps configure build run test clean

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/harness/cli/nsa-harness run $(SCENARIO)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

clean:
	rm -rf $(BUILD)
