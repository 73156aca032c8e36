# One obvious command per task. `make dev` once, then `make test` (Python edits are live;
# C edits rebuild on `make dev`).
PY ?= python3
BUILD ?= build/dev
# one GPU architecture for edit-build cycles; `pip install .` (CI) builds all of them
DEV_CUDAARCHS ?= 90-real

.PHONY: dev build test test-gpu test-emulated sanitize bench bench-gpu format clean

dev:            ## editable install into the active venv (no build isolation, persistent build dir)
	$(PY) -m pip install -q scikit-build-core numpy ml_dtypes scipy-openblas32==0.3.34.481.3 \
	    onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0 pytest ninja h5py
	CUDAARCHS="$(DEV_CUDAARCHS)" $(PY) -m pip install --no-build-isolation -e . -Cbuild-dir=$(BUILD)

build:          ## a wheel in dist/
	$(PY) -m pip wheel --no-deps -w dist .

test:           ## the README's test command
	pytest

test-gpu:       ## the GPU tests: plugin, device plumbing, CUDA behaviour, GPU-vs-CPU parity (needs a GPU)
	pytest -ra tests/test_cuda_plugin.py tests/test_device.py tests/test_cuda.py tests/test_cuda_parity.py

test-emulated:  ## the whole suite with the emulated GPU (CPU kernels as GPU:0) as the default device
	MIXPREC_EMULATE_GPU=1 pytest

sanitize:       ## ASan+UBSan build in build/san and the suite under it
	MIXPREC_SANITIZE="address;undefined" MIXPREC_CUDA=OFF $(PY) -m pip install --no-build-isolation -e . -Cbuild-dir=build/san
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" PYTHONMALLOC=malloc \
	    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 pytest -m "not slow" -p no:cacheprovider -q
	CUDAARCHS="$(DEV_CUDAARCHS)" $(PY) -m pip install --no-build-isolation -e . -Cbuild-dir=$(BUILD)

bench:          ## benchmark tables (mixprec vs the reference, same work, one run)
	$(PY) bench/ops.py && $(PY) bench/guide.py && $(PY) bench/train_step.py

bench-gpu:      ## the guide's model on the GPU vs PyTorch (docs/cuda.md; needs a GPU)
	$(PY) bench/gpu_guide.py

format:         ## clang-format for C/CUDA
	clang-format -i csrc/*.c csrc/*.h csrc/python/*.c csrc/python/*.h cuda/*.cu cuda/*.cuh cuda/*.h cuda/*.cpp

clean:
	rm -rf build dist *.egg-info
