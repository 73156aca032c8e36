"""tf.distribute costs: all-reduce of one float32 buffer (replica threads in one process,
and 2 MPI processes under mpiexec, beside MPICH's own blocking MPI_Allreduce), one epoch of
a tutorial-shaped custom training loop (a Dense model on Fashion-MNIST-sized data), and
seed 004's epoch as written, with 1 and 2 replicas (logical CPUs).

    python bench/distribute.py                 # the table (mpiexec row when MPICH is installed)
    python bench/distribute.py --mib 1 --examples 512   # tiny (tests/test_bench.py)
    python bench/distribute.py --tf-python <tensorflow 2.21 venv>/bin/python --rounds 3
        # seed 004's epoch under TensorFlow 2.21's MirroredStrategy too, side by side

The seed 004 rows include "mixprec-eager": the same code with
tf.config.run_functions_eagerly(True), which is how its step ran before strategy.run was
traced (the trace broke and every call ran the replicas' Python on threads).
"""

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402


def _allreduce_threads(mib, repeat, tensors=1):
    """Median seconds of one all-reduce call of `tensors` float32 tensors totalling `mib`
    MiB (or, with mib 0, of `tensors` tensors of 16 floats: many small gradients) between
    2 replica threads."""
    import numpy as np

    import mixprec as tf
    from mixprec import _core

    n = (mib << 20) // 4 // tensors if mib else 16
    comm = _core.comm_threads(2, 60.0)
    bufs = [[tf.constant(np.full(n, r + 1.0 + i, np.float32)) for i in range(tensors)]
            for r in range(2)]
    times = []
    for _ in range(repeat + 1):
        barrier = threading.Barrier(2)
        spans = [0.0, 0.0]

        def body(r):
            barrier.wait()
            t0 = time.perf_counter()
            _core.comm_all_reduce(comm, r, bufs[r], 0)
            spans[r] = time.perf_counter() - t0

        ts = [threading.Thread(target=body, args=(r,)) for r in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        times.append(max(spans))
    times = sorted(times[1:])
    return times[len(times) // 2]


def _mpich_allreduce(lib):
    """MPICH's own blocking MPI_Allreduce (float32, SUM, MPI_COMM_WORLD) through ctypes over
    the same libmpi_abi.so the engine loaded; handles are the MPI 5 ABI's constants."""
    import ctypes

    fn = ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL).MPI_Allreduce
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                   ctypes.c_void_p, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    mpi_float, mpi_sum, comm_world, in_place = 0x210, 0x21, 0x101, 1

    def call(send, recv):
        rc = fn(in_place if send is None else send.ctypes.data, recv.ctypes.data, recv.size,
                mpi_float, mpi_sum, comm_world)
        if rc:
            raise RuntimeError("MPI_Allreduce failed with MPI error %d" % rc)
    return call


def _allreduce_mpi_worker(mib, repeat):
    """Our engine and MPICH's blocking MPI_Allreduce (into a second buffer, and in place) on
    the same 64 MiB, interleaved call by call (the order rotating) so that the machine's
    load falls on all three alike."""
    import numpy as np

    import mixprec as tf
    from mixprec import _core
    from mixprec.distribute import multi_worker

    comm = multi_worker.mpi_world()
    rank = _core.comm_info(comm)[2]
    n = (mib << 20) // 4
    buf = tf.constant(np.full(n, rank + 1.0, np.float32))
    mpich = _mpich_allreduce(multi_worker._mpi_library())
    send, recv = np.full(n, rank + 1.0, np.float32), np.empty(n, np.float32)
    inplace = np.full(n, rank + 1.0, np.float32)
    cases = {"mixprec": lambda: _core.comm_all_reduce(comm, rank, [buf], 0),
             "mpich": lambda: mpich(send, recv),
             "mpich_in_place": lambda: mpich(None, inplace)}
    names = list(cases)
    times = {k: [] for k in names}
    for i in range(repeat + 1):
        for k in names[i % 3:] + names[:i % 3]:
            _core.comm_barrier(comm, rank)
            t0 = time.perf_counter()
            cases[k]()
            times[k].append(time.perf_counter() - t0)
    size = _core.comm_info(comm)[1]
    got = _core.comm_all_reduce(comm, rank, [buf], 0)[0].numpy()
    want = size * (size + 1) / 2
    assert recv[0] == want and (got == want).all(), (recv[0], got)
    if rank == 0:
        for k in names:
            ts = sorted(times[k][1:])
            print("MPI_ALLREDUCE_SECONDS %s %.6f" % (k, ts[len(ts) // 2]))


def _mpiexec():
    if "libasan" in os.environ.get("LD_PRELOAD", ""):  # MPICH is not built for ASan
        return None
    exe = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
    from mixprec.distribute import multi_worker

    lib = multi_worker._mpi_library()
    return exe if exe and os.path.exists(lib) else None


def _epoch_worker(replicas, examples, batch_per_replica):
    import numpy as np

    import mixprec as tf
    from mixprec import keras

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)
    strategy = tf.distribute.MirroredStrategy()
    gbs = batch_per_replica * strategy.num_replicas_in_sync
    rng = np.random.default_rng(0)
    x = rng.random((examples, 784), dtype=np.float32)
    y = rng.integers(0, 10, examples)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(gbs)
    dist = strategy.experimental_distribute_dataset(ds)
    with strategy.scope():
        model = keras.Sequential([
            keras.layers.Dense(256, activation="relu", input_shape=(784,)),
            keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
        opt = keras.optimizers.Adam()
        loss_obj = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=keras.losses.Reduction.NONE)

    def step(inputs):
        xb, yb = inputs
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_obj(yb, model(xb, training=True)),
                                              global_batch_size=gbs)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def epoch():
        for b in dist:
            strategy.reduce("SUM", strategy.run(step, args=(b,)), axis=None)

    epoch()  # warm-up (builds the model)
    t0 = time.perf_counter()
    epoch()
    print("EPOCH_SECONDS %.6f" % (time.perf_counter() - t0))


def _seed_epoch_worker(framework, replicas, data, batch_per_replica):
    """Seed 004's training code as written (CNN, MirroredStrategy on `replicas` logical CPUs,
    distributed dataset, strategy.run/reduce in tf.function, train accuracy metric), run
    under `framework` ("mixprec" or "tensorflow": the same lines, only the import differs)
    on the images saved in `data`; prints the second epoch's time (the first traces)."""
    import numpy as np

    if framework == "tensorflow":
        import tensorflow as tf
    else:
        import mixprec as tf
        # "mixprec-eager": the step's Python at every call (strategy.run before it traced)
        tf.config.run_functions_eagerly(framework == "mixprec-eager")
    cpu = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpu[0], [tf.config.LogicalDeviceConfiguration()] * replicas)
    d = np.load(data)
    train_images, train_labels = d["x"][..., None] / np.float32(255), d["y"]
    strategy = tf.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == replicas, strategy.num_replicas_in_sync
    GLOBAL_BATCH_SIZE = batch_per_replica * strategy.num_replicas_in_sync
    train_dataset = tf.data.Dataset.from_tensor_slices((train_images, train_labels)).shuffle(
        len(train_images)).batch(GLOBAL_BATCH_SIZE)
    train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)
    with strategy.scope():
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

        def compute_loss(labels, predictions):
            per_example_loss = loss_object(labels, predictions)
            return tf.nn.compute_average_loss(per_example_loss,
                                              global_batch_size=GLOBAL_BATCH_SIZE)

        train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
        model = tf.keras.Sequential([
            tf.keras.layers.Conv2D(32, 3, activation="relu"), tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Conv2D(64, 3, activation="relu"), tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(), tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(10)])
        optimizer = tf.keras.optimizers.Adam()

    def train_step(inputs):
        images, labels = inputs
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            loss = compute_loss(labels, predictions)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        train_accuracy.update_state(labels, predictions)
        return loss

    @tf.function
    def distributed_train_step(dataset_inputs):
        per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)

    def epoch():
        total_loss, num_batches = 0.0, 0
        for x in train_dist_dataset:
            total_loss += distributed_train_step(x)
            num_batches += 1
        return float(total_loss / num_batches)

    epoch()  # traces, builds the model
    t0, c0 = time.perf_counter(), time.process_time()
    loss = epoch()
    # the process's CPU time too: on a shared machine it moves less than the wall time
    print("EPOCH_SECONDS %.6f loss %.4f accuracy %.4f cpu %.6f" % (
        time.perf_counter() - t0, loss, float(train_accuracy.result()),
        time.process_time() - c0))


def _overhead_worker(replicas, steps):
    """A step too small for its kernels to matter (Dense 8-4, 8 rows a replica), traced
    and run eagerly, interleaved in one process: what a step costs beyond its kernels."""
    import numpy as np

    import mixprec as tf
    from mixprec import keras

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)
    strategy = tf.distribute.MirroredStrategy()
    x = np.random.default_rng(0).random((8 * replicas, 8), dtype=np.float32)
    batch = next(iter(strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, x[:, :4])).batch(8 * replicas))))
    with strategy.scope():
        model = keras.Sequential([keras.layers.Dense(4, input_shape=(8,))])
        opt = keras.optimizers.SGD(0.01)
        opt.build(model.trainable_variables)

    def step(inputs):
        xb, yb = inputs
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(model(xb) - yb)) / float(8 * replicas)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))
        return loss

    def dstep(b):
        return strategy.reduce("SUM", strategy.run(step, args=(b,)), axis=None)

    fns = {"traced": tf.function(dstep), "eager": dstep}
    for f in fns.values():
        f(batch)
    best = {}
    for _ in range(5):
        for name, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(steps):
                f(batch)
            t = (time.perf_counter() - t0) / steps
            best[name] = min(best.get(name, t), t)
    print("STEP_SECONDS %.9f %.9f" % (best["traced"], best["eager"]))


def _seed_data(examples, path):
    """The first `examples` shipped Fashion-MNIST training images, saved for both frameworks."""
    import numpy as np

    from mixprec import keras

    (x, y), _ = keras.datasets.fashion_mnist.load_embedded()
    np.savez(path, x=x[:examples], y=y[:examples])
    return min(examples, len(x))


def _sub(args, env=None):
    # a CPU bench: the workers' MirroredStrategy() must see the logical CPUs, not an
    # emulated GPU (the test suite's emulated-GPU pass runs this script too)
    env = dict(os.environ if env is None else env)
    env.pop("MIXPREC_EMULATE_GPU", None)
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stdout[-2000:] + out.stderr[-3000:])
    return out.stdout


def _seed_rows(a):
    """Seed 004's epoch, mixprec and (with --tf-python) TensorFlow, 1 and 2 logical CPUs,
    the frameworks alternating so that the machine's load falls on both alike; with
    --rounds R, the median of R such rounds."""
    import tempfile

    rows, times, accs, cpus = [], {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "fashion.npz")
        examples = _seed_data(a.cnn_examples, data)
        runners = [("mixprec", sys.executable), ("mixprec-eager", sys.executable)]
        if a.tf_python:
            runners.append(("tensorflow", a.tf_python))
        for _ in range(a.rounds):
            for n in (1, 2):
                for name, python in runners:
                    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_USE_LEGACY_KERAS="1")
                    out = _sub([python, os.path.abspath(__file__), "--seed-worker", name,
                                "--replicas", str(n), "--data", data, "--batch-per-replica",
                                str(a.batch_per_replica)], env=env)
                    line = out.split("EPOCH_SECONDS")[1].split("\n")[0].split()
                    times.setdefault((name, n), []).append(float(line[0]))
                    cpus.setdefault((name, n), []).append(float(line[6]))
                    accs[name, n] = line[4]
        times = {k: sorted(v)[len(v) // 2] for k, v in times.items()}  # medians
        cpus = {k: sorted(v)[len(v) // 2] for k, v in cpus.items()}
        for n in (1, 2):
            for name, _ in runners:
                t = times[name, n]
                rows.append(["seed 004 epoch, %d images, CNN, Adam" % examples,
                             "%s, %d logical CPU%s (batch %d each)" % (
                                 name, n, "s" if n > 1 else "", a.batch_per_replica),
                             "%.2f s" % t, "%.0f images/s (train acc %s, CPU %.2f s)" % (
                                 examples / t, accs[name, n], cpus[name, n])])
        for n in (1, 2):
            rows.append(["", "mixprec traced / eager step, %d logical CPU%s" % (
                n, "s" if n > 1 else ""),
                "%.2fx" % (times["mixprec", n] / times["mixprec-eager", n]),
                "CPU time %.2fx" % (cpus["mixprec", n] / cpus["mixprec-eager", n])])
        for n in (1, 2) if a.tf_python else ():
            rows.append(["", "mixprec / TensorFlow, %d logical CPU%s" % (n, "s" if n > 1 else ""),
                         "%.2fx" % (times["mixprec", n] / times["tensorflow", n]), ""])
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mib", type=int, default=64)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--examples", type=int, default=60000)
    p.add_argument("--batch-per-replica", type=int, default=64)
    p.add_argument("--mpi-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--epoch-worker", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--seed-worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--overhead-worker", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--replicas", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--data", default=None, help=argparse.SUPPRESS)
    p.add_argument("--cnn-examples", type=int, default=6000,
                   help="seed 004's epoch on this many shipped Fashion-MNIST images (0: skip)")
    p.add_argument("--small-tensors", type=int, default=1000,
                   help="the many-small-gradients row: one all-reduce call of this many "
                        "16-float tensors (0: skip)")
    p.add_argument("--overhead-steps", type=int, default=200,
                   help="steps per timing of the overhead rows (best of 5, interleaved)")
    p.add_argument("--rounds", type=int, default=1,
                   help="seed 004 rows: the median of this many alternating rounds")
    p.add_argument("--tf-python", default=None,
                   help="a Python with TensorFlow 2.21: seed 004's epoch under TensorFlow's "
                        "MirroredStrategy too, in the same run")
    a = p.parse_args()
    if a.mpi_worker:
        return _allreduce_mpi_worker(a.mib, a.repeat)
    if a.epoch_worker:
        return _epoch_worker(a.epoch_worker, a.examples, a.batch_per_replica)
    if a.seed_worker:
        return _seed_epoch_worker(a.seed_worker, a.replicas, a.data, a.batch_per_replica)
    if a.overhead_worker:
        return _overhead_worker(a.replicas, a.overhead_worker)
    rows = []
    t = _allreduce_threads(a.mib, a.repeat)
    rows.append(["all-reduce %d MiB float32" % a.mib, "2 replica threads",
                 "%.1f ms" % (t * 1e3), "%.2f GB/s" % ((a.mib << 20) / t / 1e9)])
    if a.small_tensors:
        t = _allreduce_threads(0, a.repeat * 10, a.small_tensors)
        rows.append(["all-reduce %d tensors of 16 float32" % a.small_tensors,
                     "2 replica threads, one call", "%.3f ms" % (t * 1e3),
                     "%.2f us per tensor" % (t * 1e6 / a.small_tensors)])
    exe = _mpiexec()
    if exe:
        out = _sub([exe, "-n", "2", sys.executable, os.path.abspath(__file__), "--mpi-worker",
                    "--mib", str(a.mib), "--repeat", str(a.repeat)])
        got = dict(line.split()[1:3] for line in out.splitlines()
                   if line.startswith("MPI_ALLREDUCE_SECONDS"))
        for key, how in (("mixprec", "mpiexec -n 2 (MPICH), mixprec's MPI engine"),
                         ("mpich", "same run, MPICH's blocking MPI_Allreduce (ctypes)"),
                         ("mpich_in_place", "same run, MPI_Allreduce(MPI_IN_PLACE)")):
            t = float(got[key])
            rows.append(["all-reduce %d MiB float32" % a.mib, how,
                         "%.1f ms" % (t * 1e3), "%.2f GB/s" % ((a.mib << 20) / t / 1e9)])
        rows.append(["", "mixprec / MPI_Allreduce", "%.2fx" % (float(got["mixprec"])
                                                              / float(got["mpich"])), ""])
    else:
        rows.append(["all-reduce %d MiB float32" % a.mib, "mpiexec -n 2", "(no MPICH)", ""])
    for n in (1, 2):
        out = _sub([sys.executable, os.path.abspath(__file__), "--epoch-worker", str(n),
                    "--examples", str(a.examples), "--batch-per-replica",
                    str(a.batch_per_replica)])
        t = float(out.split("EPOCH_SECONDS")[1].split()[0])
        rows.append(["epoch, %d examples, MLP 784-256-64-10, Adam" % a.examples,
                     "%d replica%s (batch %d each)" % (n, "s" if n > 1 else "",
                                                       a.batch_per_replica),
                     "%.2f s" % t, "%.0f examples/s" % (a.examples / t)])
    for n in (1, 2):
        out = _sub([sys.executable, os.path.abspath(__file__), "--overhead-worker",
                    str(a.overhead_steps), "--replicas", str(n)])
        traced, eager = map(float, out.split("STEP_SECONDS")[1].split()[:2])
        rows.append(["strategy.run step, Dense 8-4 (overhead)", "%d replica%s: tf.function "
                     "traced / the same step eager" % (n, "s" if n > 1 else ""),
                     "%.0f / %.0f us" % (traced * 1e6, eager * 1e6), "%.2fx" % (traced / eager)])
    if a.cnn_examples:
        rows += _seed_rows(a)
    print(_common.machine())
    _common.print_table("tf.distribute", ["what", "how", "time", "rate"], rows)


if __name__ == "__main__":
    main()
