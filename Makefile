# One obvious command per task. `make dev` once, then `make test` (Python edits are live;
# C edits rebuild on `make dev`).
PY ?= python3
BUILD ?= build/dev

.PHONY: dev build test test-gpu sanitize bench format clean

dev:            ## editable install into the active venv (no build isolation, persistent build dir)
	$(PY) -m pip install -q scikit-build-core numpy ml_dtypes scipy-openblas32==0.3.34.481.3 pytest ninja
	$(PY) -m pip install --no-build-isolation -e . -Cbuild-dir=$(BUILD)

build:          ## a wheel in dist/
	$(PY) -m pip wheel --no-deps -w dist .

test:           ## the README's test command
	pytest

test-gpu:       ## only the GPU tests (needs a CUDA GPU)
	pytest -m gpu

sanitize:       ## ASan+UBSan build in build/san and the suite under it
	MIXPREC_SANITIZE="address;undefined" MIXPREC_CUDA=OFF $(PY) -m pip install --no-build-isolation -e . -Cbuild-dir=build/san
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" PYTHONMALLOC=malloc \
	    ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 pytest -m "not slow" -q
	$(PY) -m pip install --no-build-isolation -e . -Cbuild-dir=$(BUILD)

bench:          ## benchmark tables (mixprec vs the reference, same work, one run)
	$(PY) bench/ops.py && $(PY) bench/guide.py && $(PY) bench/train_step.py

format:         ## clang-format for C/CUDA
	clang-format -i csrc/*.c csrc/*.h csrc/python/*.c csrc/python/*.h cuda/*.cu

clean:
	rm -rf build dist *.egg-info
