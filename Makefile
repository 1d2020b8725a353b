# Two entry points set up a fresh machine: `make run` and `make test`. Both go through
# scripts/setup.sh, whose numbered stages (deps, venv, torch, configure, build) install
# only what is missing, each with the time elapsed; then `run` or `test` is the last stage.
#
#   CUDA_KERNELS=ON|OFF|AUTO  the CUDA kernels (CMake's NSA_CUDA); unset: AUTO where nvidia-smi
#                         sees a GPU, else OFF (skipped with a one-line note: nothing there runs them).
#                         Not named NSA_*: make exports it to the tests, and the harness refuses
#                         NSA_* environment settings it does not know.
#   GPU_TESTS=ON|OFF        the tests labelled gpu; unset: only where nvidia-smi sees a GPU.
#   PYTHON=/path/python   the interpreter whose torch 2.11.0 provides libtorch; unset: the
#                         active python3 when it has torch, else the project's .venv/
BUILD    ?= build
JOBS     ?= $(shell nproc)
CMAKE_ARGS ?=
SCENARIO ?= scenarios/default.yaml
CUDA_KERNELS ?=
GPU_TESTS ?=
PYTHON   ?=
SETUP_T0 := $(shell date +%s)
export BUILD JOBS CMAKE_ARGS CUDA_KERNELS GPU_TESTS PYTHON SETUP_T0

.PHONY: deps configure build run test clean

deps:
	@bash scripts/setup.sh deps

configure:
	@bash scripts/setup.sh configure

build:
	@bash scripts/setup.sh build

run: build
	@bash scripts/setup.sh stage run "nsa-harness run $(SCENARIO)"
	$(BUILD)/harness/cli/nsa-harness run $(SCENARIO)

test: build
	@bash scripts/setup.sh test

clean:
	rm -rf $(BUILD)
