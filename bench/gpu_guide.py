"""The guide's model (784 -> 4096 -> 4096 -> 10, batch 8192, RMSprop) on the GPU, in one run:

    python bench/gpu_guide.py [--steps 20] [--blocks 5] [--peak 989] [--no-torch] [--accuracy]

prints, for mixprec and for PyTorch on the same card (eager, torch.autocast + GradScaler):
the step time under float32 (TF32 off), float32 (TF32 on), mixed_float16 and mixed_bfloat16,
TFLOP/s (0.985 TFLOP per step, docs/performance: 2 x forward + backward of the three Dense
layers) and % of the card's dense float16 peak, host synchronisations per step, and the
loss-scaling overhead (mixed_float16 with the dynamic loss scale against the same step
without it). A step is the guide's custom training loop (GradientTape, get_scaled_loss,
get_unscaled_gradients, apply_gradients); "fused" is LossScaleOptimizer.minimize, which
unscales inside the optimizer update instead.

Timing: the median over --blocks blocks of --steps steps each, every block bracketed by a
device synchronisation (so queued work is counted), after warm-up steps. Random data, never
zeros. Exits with status 2 and says why when there is no GPU.
"""

import argparse
import gc
import os
import statistics
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import machine, print_table, torch_guide_step  # noqa: E402

BATCH, IN, UNITS, CLASSES = 8192, 784, 4096, 10
TFLOP_PER_STEP = 0.985  # 3 x forward (2 x B x (784*4096 + 4096*4096 + 4096*10)) in TFLOP
# dense float16/bfloat16 tensor-core peaks (TFLOP/s), NVIDIA datasheets (docs/performance)
PEAKS = [("H100 PCIe", 756.0), ("H100", 989.0), ("H200", 989.0), ("GH200", 989.0), ("A100", 312.0),
         ("L40S", 362.0), ("A10", 125.0), ("V100", 125.0)]


def fail(msg):
    print("bench/gpu_guide.py: %s" % msg, file=sys.stderr)
    sys.exit(2)


def gpu_or_exit():
    import mixprec
    from mixprec import _core, _gpu_info

    if _gpu_info.plugin() is None:
        why = _gpu_info.load_error or "mixprec was built without the CUDA toolkit (no mixprec._cuda)"
        fail("no GPU backend: %s. Build on a machine with nvcc (MIXPREC_CUDA=ON) and run there." % why)
    if _core.backend_name(1) != "cuda" or not mixprec.config.list_physical_devices("GPU"):
        fail("no GPU: the CUDA plugin loaded but the CUDA runtime sees no device (driver %d, runtime %d)."
             % (_gpu_info.plugin().driver_version(), _gpu_info.plugin().runtime_version()))
    return _gpu_info.devices()[0]


def peak_of(name, override):
    if override:
        return override
    for key, peak in PEAKS:
        if key in name:
            return peak
    return None


def timed(step, sync, steps, blocks, warmup=3):
    for _ in range(warmup):
        step()
    sync()
    per_step = []
    for _ in range(blocks):
        t = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        per_step.append((time.perf_counter() - t) / steps)
    return statistics.median(per_step), min(per_step)


def data():
    rng = np.random.default_rng(0)
    return rng.random((BATCH, IN), dtype=np.float32), rng.integers(0, CLASSES, BATCH)


# ------------------------------------------------------------------ mixprec


def mixprec_case(policy, tf32, loss_scale, fused, steps, blocks):
    """(median s, min s, host syncs per step) of one configuration."""
    import mixprec as tf
    from mixprec import _gpu_info, keras
    from mixprec.keras import layers, mixed_precision

    tf.config.experimental.enable_tensor_float_32_execution(tf32)
    mixed_precision.set_global_policy(policy)
    tf.random.set_seed(0)
    inputs = keras.Input(shape=(IN,))
    x = layers.Dense(UNITS, activation="relu")(inputs)
    x = layers.Dense(UNITS, activation="relu")(x)
    x = layers.Dense(CLASSES)(x)
    model = keras.Model(inputs, layers.Activation("softmax", dtype="float32")(x))
    opt = keras.optimizers.RMSprop()
    if loss_scale:
        opt = mixed_precision.LossScaleOptimizer(opt)
    loss_object = keras.losses.SparseCategoricalCrossentropy()
    xn, yn = data()
    xb, yb = tf.constant(xn), tf.constant(yn)  # on the GPU, as a prefetching input pipeline leaves them
    variables = model.trainable_variables

    def guide_step():
        with tf.GradientTape() as tape:
            loss = loss_object(yb, model(xb))
            scaled = opt.get_scaled_loss(loss) if loss_scale else loss
        grads = tape.gradient(scaled, variables)
        if loss_scale:
            grads = opt.get_unscaled_gradients(grads)
        opt.apply_gradients(zip(grads, variables))

    def fused_step():
        opt.minimize(lambda: loss_object(yb, model(xb)), variables)

    step = fused_step if fused else guide_step
    med, best = timed(step, _gpu_info.synchronize, steps, blocks)
    before = _gpu_info.host_sync_count()  # the steps' own waits, with no timing around them
    for _ in range(steps):
        step()
    syncs = (_gpu_info.host_sync_count() - before) / float(steps)
    _gpu_info.synchronize()
    tf.config.experimental.enable_tensor_float_32_execution(True)
    del model, opt
    gc.collect()
    return med, best, syncs


# ------------------------------------------------------------------ PyTorch


def torch_case(torch, mode, steps, blocks):
    """mode: fp32 (TF32 off), tf32, fp16 (autocast + GradScaler), bf16 (autocast)."""
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    torch.manual_seed(0)
    xn, yn = data()
    xb, yb = torch.from_numpy(xn).to(dev), torch.from_numpy(yn).to(dev)
    half = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(mode)
    step = torch_guide_step(torch, "cuda", UNITS, half, xb, yb)

    med, best = timed(step, torch.cuda.synchronize, steps, blocks)
    # host synchronisations per step, as PyTorch's sync debug mode reports them
    syncs = None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            for _ in range(3):
                step()
            torch.cuda.set_sync_debug_mode(0)
        syncs = sum("synchroniz" in str(w.message) for w in caught) / 3.0
    except Exception:  # noqa: BLE001 - an older PyTorch without the debug mode
        pass
    torch.backends.cuda.matmul.allow_tf32 = False
    del step  # the model and optimizer live in its closure
    gc.collect()
    torch.cuda.empty_cache()
    return med, best, syncs


# ------------------------------------------------------------------ accuracy (optional)


def accuracy_check():
    """The guide's model (4096 units) on the embedded Fashion-MNIST subset, mixed_float16, 5
    epochs of batch 256, on the GPU and on the CPU: test accuracy of each."""
    import mixprec as tf
    from mixprec import keras
    from mixprec.keras import layers, mixed_precision
    from mixprec.keras.datasets import fashion_mnist

    (x_train, y_train), (x_test, y_test) = fashion_mnist.load_embedded()
    x_train = x_train.reshape(-1, IN).astype("float32") / 255
    x_test = x_test.reshape(-1, IN).astype("float32") / 255
    mixed_precision.set_global_policy("mixed_float16")
    out = {}
    for device in ("/GPU:0", "/CPU:0"):
        with tf.device(device):
            tf.random.set_seed(0)
            inputs = keras.Input(shape=(IN,))
            x = layers.Dense(UNITS, activation="relu")(inputs)
            x = layers.Dense(UNITS, activation="relu")(x)
            x = layers.Dense(CLASSES)(x)
            model = keras.Model(inputs, layers.Activation("softmax", dtype="float32")(x))
            model.compile(loss="sparse_categorical_crossentropy", optimizer=keras.optimizers.RMSprop(),
                          metrics=["accuracy"])
            t = time.perf_counter()
            model.fit(x_train, y_train, batch_size=256, epochs=5, verbose=0)
            out[device] = (model.evaluate(x_test, y_test, verbose=0)[1], time.perf_counter() - t)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20, help="steps per timed block")
    ap.add_argument("--blocks", type=int, default=5, help="timed blocks (the median is reported)")
    ap.add_argument("--peak", type=float, default=None, help="dense fp16 TFLOP/s of the card (default: by name)")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch rows")
    ap.add_argument("--accuracy", action="store_true", help="also train on GPU and CPU and compare accuracy")
    args = ap.parse_args(argv)

    gpu = gpu_or_exit()
    import mixprec
    from mixprec import _gpu_info

    peak = peak_of(gpu["name"], args.peak)
    print("bench/gpu_guide.py: the mixed precision guide's model, batch %d, %d units, RMSprop" % (BATCH, UNITS))
    print("GPU: %s (compute capability %d.%d, %.0f GiB, %d SMs), CUDA runtime %d, driver %d; mixprec %s"
          % (gpu["name"], gpu["compute_capability"][0], gpu["compute_capability"][1], gpu["memory_bytes"] / 2**30,
             gpu.get("multiprocessors", 0), _gpu_info._cuda.runtime_version(), _gpu_info._cuda.driver_version(),
             mixprec.__version__))
    print("host: %s" % machine())
    print("dense fp16 peak used for %%: %s TFLOP/s" % (peak if peak else "unknown (pass --peak)"))

    def row(lib, name, res):
        med, best, syncs = res
        tflops = TFLOP_PER_STEP / med
        return [lib, name, "%.2f" % (med * 1e3), "%.2f" % (best * 1e3), "%.0f" % tflops,
                "%.1f%%" % (100 * tflops / peak) if peak else "?", "?" if syncs is None else "%.2f" % syncs]

    rows, results = [], {}
    configs = [("float32, TF32 off", "float32", False, False, False),
               ("float32, TF32 on", "float32", True, False, False),
               ("mixed_float16 (loss scale)", "mixed_float16", True, True, False),
               ("mixed_float16 (loss scale, fused)", "mixed_float16", True, True, True),
               ("mixed_float16 (no loss scale)", "mixed_float16", True, False, False),
               ("mixed_bfloat16", "mixed_bfloat16", True, False, False)]
    for name, policy, tf32, ls, fused in configs:
        try:
            results[name] = mixprec_case(policy, tf32, ls, fused, args.steps, args.blocks)
            rows.append(row("mixprec", name, results[name]))
        except Exception as e:  # noqa: BLE001 - report the row and go on
            rows.append(["mixprec", name, "failed: %s: %s" % (type(e).__name__, str(e)[:120]), "", "", "", ""])
        print("  measured mixprec %s" % name, flush=True)
    if not args.no_torch:
        try:
            import torch

            if not torch.cuda.is_available():
                raise ImportError("torch sees no GPU")
            for name, mode in [("float32, TF32 off", "fp32"), ("float32, TF32 on", "tf32"),
                               ("autocast float16 + GradScaler", "fp16"), ("autocast bfloat16", "bf16")]:
                try:
                    rows.append(row("PyTorch %s" % torch.__version__, name, torch_case(torch, mode, args.steps,
                                                                                     args.blocks)))
                except Exception as e:  # noqa: BLE001
                    rows.append(["PyTorch", name, "failed: %s: %s" % (type(e).__name__, str(e)[:120]), "", "", "",
                                 ""])
                print("  measured PyTorch %s" % name, flush=True)
        except ImportError as e:
            print("PyTorch rows skipped: %s" % e)
    print_table("Step time of the guide's model (batch %d), median of %d blocks of %d steps"
                % (BATCH, args.blocks, args.steps),
                ["library", "configuration", "ms/step", "best ms", "TFLOP/s", "% fp16 peak", "host syncs/step"],
                rows)
    with_ls, without = results.get("mixed_float16 (loss scale)"), results.get("mixed_float16 (no loss scale)")
    fused = results.get("mixed_float16 (loss scale, fused)")
    if with_ls and without:
        print("\nLoss-scaling overhead (mixed_float16, dynamic scale vs none): guide step %.1f%% of the step"
              % (100 * (with_ls[0] - without[0]) / with_ls[0]), end="")
        if fused:
            print(", fused (minimize) %.1f%%" % (100 * (fused[0] - without[0]) / fused[0]))
        else:
            print()
    f32, f16 = results.get("float32, TF32 off"), results.get("mixed_float16 (loss scale)")
    tf32 = results.get("float32, TF32 on")
    if f32 and f16 and tf32:
        print("mixed_float16 speed-up: %.2fx over float32 (TF32 off), %.2fx over TF32" % (f32[0] / f16[0],
                                                                                        tf32[0] / f16[0]))
    if args.accuracy:
        acc = accuracy_check()
        print_table("Accuracy: guide model, embedded Fashion-MNIST subset, mixed_float16, 5 epochs, batch 256",
                    ["device", "test accuracy", "fit seconds"],
                    [[d, "%.4f" % a, "%.1f" % s] for d, (a, s) in acc.items()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
