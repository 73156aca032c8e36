"""tf.train.Checkpoint / CheckpointManager / Model.save_weights in TensorFlow's format:
round trips, deferred restoration, load statuses, TensorFlow-written fixtures, damage."""

import os
import shutil
import time

import numpy as np
import pytest

import mixprec as tf
from mixprec import errors, keras

FIX = os.path.join(os.path.dirname(__file__), "fixtures")


def data():
    rng = np.random.RandomState(0)
    return rng.rand(16, 4).astype("float32"), rng.rand(16, 3).astype("float32")


def make_model(built=True):
    first = keras.layers.Dense(8, activation="relu", input_shape=(4,)) if built else \
        keras.layers.Dense(8, activation="relu")
    return keras.Sequential([first, keras.layers.Dense(3, dtype="float32")])


def train(model, opt, steps=2, mixed=False):
    x, y = data()
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.cast(model(x), tf.float32) - y) ** 2)
            if mixed:
                loss = opt.get_scaled_loss(loss)
        grads = tape.gradient(loss, model.trainable_variables)
        if mixed:
            grads = opt.get_unscaled_gradients(grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))


def state(model, opt):
    return [v.numpy() for v in model.weights] + [v.numpy() for v in opt.variables()]


def assert_same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape
        np.testing.assert_array_equal(u, v)


def test_save_names_files_and_keys_as_tensorflow(tmp_path):
    model, opt = make_model(), keras.optimizers.Adam()
    train(model, opt)
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
    prefix = str(tmp_path / "ckpt")
    assert ckpt.save(prefix) == prefix + "-1"
    assert ckpt.save(prefix) == prefix + "-2"
    assert int(ckpt.save_counter.numpy()) == 2
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index",
        "ckpt-2.data-00000-of-00001", "ckpt-2.index"]
    assert (tmp_path / "checkpoint").read_text() == (
        'model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-2"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-2"
    keys = [k for k, _ in tf.train.list_variables(prefix + "-2")]
    want = sorted(["_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
                   "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE",
                   "optimizer/_learning_rate/.ATTRIBUTES/VARIABLE_VALUE"]
                  + ["model/layer_with_weights-%d/%s/.ATTRIBUTES/VARIABLE_VALUE" % (i, w)
                     for i in (0, 1) for w in ("kernel", "bias")]
                  + ["optimizer/_variables/%d/.ATTRIBUTES/VARIABLE_VALUE" % i
                     for i in range(1, 9)])
    assert keys == want
    # same keys and values as TensorFlow's own checkpoint of this model (fixture)
    tf_keys = [k for k, _ in tf.train.list_variables(os.path.join(FIX, "tf_adam"))]
    assert keys == tf_keys
    # Adam's m, v interleaved per variable in variable order
    r = tf.train.load_checkpoint(prefix + "-2")
    np.testing.assert_array_equal(
        r.get_tensor("optimizer/_variables/2/.ATTRIBUTES/VARIABLE_VALUE"),
        opt.get_slot(model.weights[0], "v").numpy())
    np.testing.assert_array_equal(
        r.get_tensor("optimizer/_variables/3/.ATTRIBUTES/VARIABLE_VALUE"),
        opt.get_slot(model.weights[1], "m").numpy())
    # write: exactly the prefix, no save_counter, no state file change
    assert ckpt.write(str(tmp_path / "w")) == str(tmp_path / "w")
    assert "save_counter/.ATTRIBUTES/VARIABLE_VALUE" in dict(
        tf.train.list_variables(str(tmp_path / "w")))  # it exists now, so it is saved
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-2"


def test_round_trip_is_exact_and_numbering_continues(tmp_path):
    model, opt = make_model(), keras.optimizers.Adam(0.01)
    train(model, opt, 3)
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
    path = ckpt.save(str(tmp_path / "ckpt"))
    model2, opt2 = make_model(), keras.optimizers.Adam(0.5)
    opt2.build(model2.trainable_variables)
    ckpt2 = tf.train.Checkpoint(model=model2, optimizer=opt2)
    status = ckpt2.restore(path)
    status.assert_consumed().assert_existing_objects_matched().assert_nontrivial_match()
    assert_same(state(model, opt), state(model2, opt2))
    assert int(opt2.iterations.numpy()) == 3
    assert float(opt2.learning_rate.numpy()) == np.float32(0.01)
    assert ckpt2.save(str(tmp_path / "ckpt")).endswith("ckpt-2")
    # training on continues identically
    train(model, opt, 1)
    train(model2, opt2, 1)
    assert_same(state(model, opt), state(model2, opt2))


def test_deferred_restoration_into_unbuilt_model_and_optimizer(tmp_path):
    model, opt = make_model(), keras.optimizers.Adam()
    train(model, opt)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "c"))
    model2, opt2 = make_model(built=False), keras.optimizers.Adam()
    status = tf.train.Checkpoint(model=model2, optimizer=opt2).restore(path)
    status.assert_existing_objects_matched()
    status.assert_nontrivial_match()
    with pytest.raises(AssertionError, match="Unresolved"):
        status.assert_consumed()
    assert status.expect_partial() is status
    x, _ = data()
    np.testing.assert_array_equal(model2(x).numpy(), model(x).numpy())  # built on call
    with pytest.raises(AssertionError):
        status.assert_consumed()  # the slots do not exist yet
    opt2.build(model2.trainable_variables)
    status.assert_consumed()
    assert_same(state(model, opt), state(model2, opt2))


def test_deferred_slots_are_restored_by_the_first_step(tmp_path):
    model, opt = make_model(), keras.optimizers.Adam()
    train(model, opt)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "c"))
    model2, opt2 = make_model(), keras.optimizers.Adam()
    tf.train.Checkpoint(model=model2, optimizer=opt2).restore(path)  # status dropped
    train(model, opt, 1)
    train(model2, opt2, 1)
    assert_same(state(model, opt), state(model2, opt2))


def test_loss_scale_optimizer_round_trip(tmp_path):
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = make_model()
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1, momentum=0.9))
        train(model, opt, 3, mixed=True)
        path = tf.train.Checkpoint(model=model, optimizer=opt).write(str(tmp_path / "c"))
        keys = dict(tf.train.list_variables(path))
        assert "optimizer/loss_scale/current_loss_scale/.ATTRIBUTES/VARIABLE_VALUE" in keys
        assert "optimizer/loss_scale/good_steps/.ATTRIBUTES/VARIABLE_VALUE" in keys
        model2 = make_model()
        opt2 = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1, momentum=0.9))
        opt2.build(model2.trainable_variables)
        opt2.loss_scale  # noqa: B018
        status = tf.train.Checkpoint(model=model2, optimizer=opt2).read(path)
        status.assert_consumed()
        assert_same(state(model, opt), state(model2, opt2))
        assert float(opt2.loss_scale.numpy()) == float(opt.loss_scale.numpy())
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _fixture_values(name):
    z = np.load(os.path.join(FIX, name, "expected.npz"), allow_pickle=False)
    return {k.replace("|", "/"): z[k] for k in z.files}


def test_restores_tensorflow_adam_checkpoint_exactly():
    want = _fixture_values("tf_adam")
    model, opt = make_model(built=False), keras.optimizers.Adam()
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
    status = ckpt.restore(tf.train.latest_checkpoint(os.path.join(FIX, "tf_adam")))
    model.build((None, 4))
    opt.build(model.trainable_variables)
    status.assert_consumed()
    V = "/.ATTRIBUTES/VARIABLE_VALUE"
    names = ["model/layer_with_weights-%d/%s" % (i, w) for i in (0, 1)
             for w in ("kernel", "bias")]
    for var, name in zip(model.weights, names):
        np.testing.assert_array_equal(var.numpy(), want[name + V])
    for i, var in enumerate(opt.variables()):
        key = "optimizer/_iterations" if i == 0 else "optimizer/_variables/%d" % i
        np.testing.assert_array_equal(var.numpy(), want[key + V])
    assert float(opt.learning_rate.numpy()) == want["optimizer/_learning_rate" + V]
    assert int(ckpt.save_counter.numpy()) == 2


def test_restores_tensorflow_loss_scale_checkpoint():
    want = _fixture_values("tf_lso")
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = make_model()
        opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1, momentum=0.9))
        tf.train.Checkpoint(model=model, optimizer=opt).read(
            os.path.join(FIX, "tf_lso", "ckpt"))
        opt.build(model.trainable_variables)
        V = "/.ATTRIBUTES/VARIABLE_VALUE"
        assert float(opt.loss_scale.numpy()) == \
            want["optimizer/loss_scale/current_loss_scale" + V]
        assert int(opt.dynamic_counter.numpy()) == want["optimizer/loss_scale/good_steps" + V]
        assert int(opt.iterations.numpy()) == 3
        for i, w in enumerate(model.trainable_variables):
            np.testing.assert_array_equal(opt.inner_optimizer.get_slot(w, "momentum").numpy(),
                                          want["optimizer/_variables/%d" % (i + 1) + V])
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_load_weights_of_tensorflow_save_weights():
    want = _fixture_values("tf_weights")
    model = keras.Sequential([keras.layers.Dense(5, input_shape=(4,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    status = model.load_weights(os.path.join(FIX, "tf_weights", "weights"))
    V = "/.ATTRIBUTES/VARIABLE_VALUE"
    np.testing.assert_array_equal(model.weights[2].numpy(),
                                  want["layer_with_weights-1/kernel" + V])
    x, y = data()
    model.train_on_batch(x, y[:, :2])  # the optimizer's slots come from the file first
    assert int(model.optimizer.iterations.numpy()) == want["optimizer/_iterations" + V] + 1
    status.assert_consumed()


def test_save_weights_tf_format_and_npz_suffix(tmp_path):
    model = make_model()
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    x, y = data()
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    model.save_weights(str(tmp_path / "w"))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "w.data-00000-of-00001", "w.index"]
    keys = dict(tf.train.list_variables(str(tmp_path / "w")))
    assert "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "optimizer/_variables/1/.ATTRIBUTES/VARIABLE_VALUE" in keys
    other = make_model()
    other.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    other.load_weights(str(tmp_path / "w"))
    np.testing.assert_array_equal(other.predict(x, verbose=0), model.predict(x, verbose=0))
    model.save_weights(str(tmp_path / "w.npz"))
    import zipfile

    assert zipfile.is_zipfile(tmp_path / "w.npz")
    # a tf.train.Checkpoint(model=...) file is not a weights file (TF: AssertionError)
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ck"))
    with pytest.raises(AssertionError):
        other.load_weights(path)


def test_load_weights_missing_and_non_regular_paths(tmp_path):
    model = make_model()
    with pytest.raises(errors.NotFoundError, match="not found"):
        model.load_weights(str(tmp_path / "nothing"))
    with pytest.raises(FileNotFoundError):
        model.load_weights(str(tmp_path / "nothing.npz"))
    with pytest.raises(ValueError, match="device"):
        model.load_weights("/dev/zero")
    with pytest.raises(ValueError, match="directory"):
        model.load_weights(str(tmp_path))
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ValueError, match="FIFO"):
        model.load_weights(str(tmp_path / "fifo"))


def test_model_checkpoint_callback_writes_tf_format(tmp_path):
    model = make_model()
    model.compile(optimizer="adam", loss="mse")
    x, y = data()
    path = str(tmp_path / "cp-{epoch:02d}.ckpt")
    model.fit(x, y, epochs=2, verbose=0, callbacks=[keras.callbacks.ModelCheckpoint(path, save_weights_only=True)])
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "cp-02.ckpt")
    other = make_model()
    other.load_weights(tf.train.latest_checkpoint(str(tmp_path)))
    np.testing.assert_array_equal(other.predict(x, verbose=0), model.predict(x, verbose=0))


def test_restore_is_all_or_nothing(tmp_path):
    model, opt = make_model(), keras.optimizers.Adam()
    train(model, opt)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "c"))
    # wrong shape: a ValueError naming the key and the file; nothing assigned
    wide = keras.Sequential([keras.layers.Dense(8, input_shape=(4,)), keras.layers.Dense(5)])
    before = [w.numpy() for w in wide.weights]
    with pytest.raises(ValueError, match="layer_with_weights-1/kernel.*c-1"):
        tf.train.Checkpoint(model=wide).restore(path)
    assert_same(before, [w.numpy() for w in wide.weights])
    # a flipped payload byte: DataLossError, nothing assigned
    data_file = path + ".data-00000-of-00001"
    raw = bytearray(open(data_file, "rb").read())
    raw[-30] ^= 0xFF
    open(data_file, "wb").write(bytes(raw))
    fresh = make_model()
    before = [w.numpy() for w in fresh.weights]
    with pytest.raises(errors.DataLossError, match="c-1"):
        tf.train.Checkpoint(model=fresh).restore(path)
    assert_same(before, [w.numpy() for w in fresh.weights])
    os.remove(data_file)
    with pytest.raises(errors.NotFoundError, match="data-00000-of-00001"):
        tf.train.Checkpoint(model=fresh).restore(path)
    os.remove(path + ".index")
    with pytest.raises(errors.NotFoundError):
        tf.train.Checkpoint(model=fresh).restore(path)


def test_statuses_and_arguments(tmp_path):
    model = make_model()
    ckpt = tf.train.Checkpoint(model=model)
    status = ckpt.restore(None)
    with pytest.raises(AssertionError, match="No checkpoint"):
        status.assert_consumed()
    with pytest.raises(ValueError, match="trackable"):
        tf.train.Checkpoint(model=3)
    path = ckpt.write(str(tmp_path / "m"))
    other = tf.train.Checkpoint(net=make_model())
    st = other.read(path)
    with pytest.raises(AssertionError, match="Nothing except the root"):
        st.assert_nontrivial_match()
    with pytest.raises(AssertionError):
        st.assert_existing_objects_matched()
    # extra python objects: consumed fails, nontrivial passes
    v = tf.Variable(3.0)
    st = tf.train.Checkpoint(model=make_model(), extra=v).read(path)
    st.assert_nontrivial_match()
    with pytest.raises(AssertionError, match="not bound"):
        st.assert_consumed()


def test_variables_and_metrics_are_trackable(tmp_path):
    v = tf.Variable([1.0, 2.0])
    m = keras.metrics.Mean()
    m.update_state([1.0, 3.0])
    path = tf.train.Checkpoint(v=v, metric=m).write(str(tmp_path / "x"))
    assert sorted(k for k, _ in tf.train.list_variables(path)) == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "metric/count/.ATTRIBUTES/VARIABLE_VALUE",
        "metric/total/.ATTRIBUTES/VARIABLE_VALUE", "v/.ATTRIBUTES/VARIABLE_VALUE"]
    v2, m2 = tf.Variable([0.0, 0.0]), keras.metrics.Mean()
    tf.train.Checkpoint(v=v2, metric=m2).read(path).assert_consumed()
    np.testing.assert_array_equal(v2.numpy(), [1.0, 2.0])
    assert float(m2.result()) == 2.0


class Plug:
    """The extension point: any object with _trackable_children (e.g. a mirrored variable
    holder of the distribute code)."""

    def __init__(self, value):
        self.a = tf.Variable(value)

    def _trackable_children(self):
        return [("a", self.a)]


def test_trackable_children_extension_point(tmp_path):
    path = tf.train.Checkpoint(p=Plug(5.0)).write(str(tmp_path / "p"))
    assert "p/a/.ATTRIBUTES/VARIABLE_VALUE" in dict(tf.train.list_variables(path))
    q = Plug(0.0)
    tf.train.Checkpoint(p=q).read(path).assert_consumed()
    assert float(q.a.numpy()) == 5.0


def test_checkpoint_manager(tmp_path):
    v = tf.Variable(0.0)
    ckpt = tf.train.Checkpoint(v=v)
    d = str(tmp_path / "mgr")
    with pytest.raises(ValueError, match="max_to_keep"):
        tf.train.CheckpointManager(ckpt, d, max_to_keep=0)
    mgr = tf.train.CheckpointManager(ckpt, d, max_to_keep=2)
    assert mgr.latest_checkpoint is None and mgr.checkpoints == []
    paths = []
    for i in range(4):
        v.assign(float(i))
        paths.append(mgr.save())
    assert paths == [os.path.join(d, "ckpt-%d" % i) for i in range(1, 5)]
    assert mgr.checkpoints == paths[2:]
    assert mgr.latest_checkpoint == paths[-1] == tf.train.latest_checkpoint(d)
    assert sorted(os.listdir(d)) == ["checkpoint", "ckpt-3.data-00000-of-00001",
                                     "ckpt-3.index", "ckpt-4.data-00000-of-00001",
                                     "ckpt-4.index"]
    text = open(os.path.join(d, "checkpoint")).read().splitlines()
    assert text[:3] == ['model_checkpoint_path: "ckpt-4"',
                        'all_model_checkpoint_paths: "ckpt-3"',
                        'all_model_checkpoint_paths: "ckpt-4"']
    assert [t.split(":")[0] for t in text[3:]] == ["all_model_checkpoint_timestamps"] * 2 + [
        "last_preserved_timestamp"]
    assert mgr.save(checkpoint_number=10) == os.path.join(d, "ckpt-10")
    # a new manager recovers the list; restore_or_initialize restores the latest
    v.assign(-1.0)
    v2 = tf.Variable(0.0)
    ckpt2 = tf.train.Checkpoint(v=v2)
    mgr2 = tf.train.CheckpointManager(ckpt2, d, max_to_keep=2)
    assert mgr2.checkpoints == [paths[-1], os.path.join(d, "ckpt-10")]
    assert mgr2.restore_or_initialize() == os.path.join(d, "ckpt-10")
    assert float(v2.numpy()) == 3.0
    assert int(ckpt2.save_counter.numpy()) == 5
    # init_fn when there is nothing to restore
    called = []
    mgr3 = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)),
                                      str(tmp_path / "empty"), max_to_keep=None,
                                      init_fn=lambda: called.append(1))
    assert mgr3.restore_or_initialize() is None and called == [1]


def test_checkpoint_manager_interval(tmp_path):
    step = tf.Variable(0, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(step=step)
    with pytest.raises(ValueError, match="step_counter"):
        tf.train.CheckpointManager(ckpt, str(tmp_path), 3, checkpoint_interval=2)
    mgr = tf.train.CheckpointManager(ckpt, str(tmp_path), 3, step_counter=step,
                                     checkpoint_interval=2)
    saved = []
    for s in range(5):
        step.assign(s)
        saved.append(mgr.save())
    # TensorFlow 2.21: numbered by the checkpoint's save_counter (the step counter only gates
    # the interval); an unchanged step never saves, even with check_interval=False
    assert saved == [str(tmp_path / "ckpt-1"), None, str(tmp_path / "ckpt-2"), None,
                     str(tmp_path / "ckpt-3")]
    assert mgr.save(check_interval=False) is None
    step.assign(5)
    assert mgr.save(check_interval=False) == str(tmp_path / "ckpt-4")
    assert mgr.save(check_interval=False) is None


def test_get_checkpoint_state_reads_tensorflow_files():
    st = tf.train.get_checkpoint_state(os.path.join(FIX, "tf_adam"))
    assert st.model_checkpoint_path == os.path.join(FIX, "tf_adam", "ckpt-2")
    assert st.all_model_checkpoint_paths == [st.model_checkpoint_path]


def test_latest_checkpoint_ignores_missing_index(tmp_path):
    shutil.copytree(os.path.join(FIX, "tf_adam"), tmp_path / "a")
    assert tf.train.latest_checkpoint(str(tmp_path / "a")).endswith("ckpt-2")
    os.remove(tmp_path / "a" / "ckpt-2.index")
    assert tf.train.latest_checkpoint(str(tmp_path / "a")) is None
    assert tf.train.latest_checkpoint(str(tmp_path / "nowhere")) is None


def test_seed_004_flow_custom_loop_save_then_restore_into_new_model(tmp_path):
    """Seed 004: tf.train.Checkpoint(optimizer=, model=) saved during a custom training
    loop; a new model and optimizer restored from latest_checkpoint give the same test
    accuracy."""
    rng = np.random.RandomState(3)
    images = rng.rand(256, 6, 6, 1).astype("float32")
    labels = (images.reshape(256, -1).sum(1) > 18).astype("int64") + \
        (images[:, 0, 0, 0] > 0.5).astype("int64")

    def create_model():
        return keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(16, activation="relu"),
                                 keras.layers.Dense(3)])

    loss_object = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=keras.losses.Reduction.NONE)
    model, optimizer = create_model(), keras.optimizers.Adam()
    checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)
    prefix = os.path.join(str(tmp_path / "training_checkpoints"), "ckpt")
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(256, seed=1).batch(32)
    for epoch in range(4):
        for x, y in ds:
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(loss_object(y, model(x, training=True)),
                                                  global_batch_size=32)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        if epoch % 2 == 0:
            checkpoint.save(prefix)
    checkpoint.save(prefix)

    def accuracy(m):
        acc = keras.metrics.SparseCategoricalAccuracy()
        for x, y in tf.data.Dataset.from_tensor_slices((images, labels)).batch(64):
            acc(y, m(x, training=False))
        return float(acc.result())

    new_model, new_optimizer = create_model(), keras.optimizers.Adam()
    ck = tf.train.Checkpoint(optimizer=new_optimizer, model=new_model)
    latest = tf.train.latest_checkpoint(os.path.dirname(prefix))
    assert latest == prefix + "-3"
    ck.restore(latest)
    assert accuracy(new_model) == accuracy(model)


def _graph_objects():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_fixtures", os.path.join(FIX, "make_fixtures.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.graph_objects(keras, tf, train=False)


def test_restores_tensorflow_graph_of_functional_subclassed_rmsprop_sgd_metric(tmp_path):
    """Fixture 4: keys of every kind (layer-N of an Input and a Dropout, attribute and list
    children, RMSprop's three slot lists, SGD's momentums, a metric): mixprec writes the
    same keys and restores TensorFlow's values with assert_consumed."""
    want = _fixture_values("tf_graph")
    fm, sm, metric, sgd = _graph_objects()
    prefix = os.path.join(FIX, "tf_graph", "ckpt")
    status = tf.train.Checkpoint(fm=fm, sm=sm, metric=metric, sgd=sgd).read(prefix)
    fm.optimizer.build(fm.trainable_variables)
    sgd.build(sm.trainable_variables)
    status.assert_consumed()
    V = "/.ATTRIBUTES/VARIABLE_VALUE"
    np.testing.assert_array_equal(sm.blocks[1].kernel.numpy(), want["sm/blocks/1/kernel" + V])
    np.testing.assert_array_equal(fm.layers[-1].bias.numpy(),
                                  want["fm/layer_with_weights-1/bias" + V])
    assert float(metric.result()) == 1.5
    assert int(fm.optimizer.iterations.numpy()) == 1
    rms = fm.optimizer
    w = fm.trainable_variables[0]
    for slot, key in (("rms", 1), ("momentum", 5), ("mg", 9)):
        np.testing.assert_array_equal(rms.get_slot(w, slot).numpy(),
                                      want["fm/optimizer/_variables/%d" % key + V])
    path = tf.train.Checkpoint(fm=fm, sm=sm, metric=metric, sgd=sgd).write(str(tmp_path / "c"))
    assert tf.train.list_variables(path) == tf.train.list_variables(prefix)
    r = tf.train.load_checkpoint(path)
    for name, value in want.items():
        np.testing.assert_array_equal(r.get_tensor(name), value)


def test_momentum_free_sgd_has_tf_keras_zero_slots(tmp_path):
    model, opt = make_model(), keras.optimizers.SGD(0.1)
    train(model, opt, 1)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "s"))
    r = tf.train.load_checkpoint(path)
    for i, w in enumerate(model.trainable_variables, 1):
        z = r.get_tensor("optimizer/_variables/%d/.ATTRIBUTES/VARIABLE_VALUE" % i)
        assert z.shape == tuple(w.shape) and not z.any()
    model2, opt2 = make_model(), keras.optimizers.SGD(0.1)
    status = tf.train.Checkpoint(model=model2, optimizer=opt2).restore(path)
    train(model2, opt2, 0)
    opt2.build(model2.trainable_variables)
    status.assert_consumed()
    assert_same([w.numpy() for w in model.weights], [w.numpy() for w in model2.weights])


def test_restore_of_a_write_checkpoint_leaves_save_counter_unbound_as_tensorflow(tmp_path):
    v = tf.Variable(1.0)
    path = tf.train.Checkpoint(v=v).write(str(tmp_path / "w"))
    status = tf.train.Checkpoint(v=tf.Variable(0.0)).restore(path)
    status.assert_nontrivial_match()
    with pytest.raises(AssertionError, match="save_counter"):
        status.assert_consumed()
    tf.train.Checkpoint(v=tf.Variable(0.0)).read(path).assert_consumed()  # read: no counter


def test_checkpoint_manager_keeps_one_every_n_hours(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(0.0))
    d = str(tmp_path)
    # a tiny period: every checkpoint leaving the window is preserved (kept on disk,
    # dropped from the managed list), as TensorFlow's sweep does
    mgr = tf.train.CheckpointManager(ckpt, d, max_to_keep=1,
                                     keep_checkpoint_every_n_hours=1e-12)
    time.sleep(0.01)
    paths = [mgr.save() for _ in range(3)]
    assert mgr.checkpoints == paths[-1:]
    assert all(os.path.exists(p + ".index") for p in paths)
    mgr2 = tf.train.CheckpointManager(ckpt, d, max_to_keep=1)
    mgr2.save()
    assert not os.path.exists(paths[-1] + ".index")  # managed again: deleted
    assert os.path.exists(paths[0] + ".index")


def test_a_newer_restore_supersedes_waiting_values(tmp_path):
    from mixprec.train import _checkpoint

    model, opt = make_model(), keras.optimizers.Adam()
    train(model, opt)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "c"))
    opt2 = keras.optimizers.Adam()
    for _ in range(5):  # slots never created: the values wait, once
        tf.train.Checkpoint(model=make_model(), optimizer=opt2).restore(path).expect_partial()
    assert sum(1 for r in _checkpoint._ACTIVE
               if any(ref() is opt2 for _, ref in r.anchors)) == 1


def test_unreadable_state_file_is_ignored_as_tensorflow(tmp_path):
    (tmp_path / "checkpoint").write_text("model_checkpoint_path: unquoted garbage\n")
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    (tmp_path / "checkpoint").write_text("all_model_checkpoint_paths: \"x\"\n")
    with pytest.raises(ValueError, match="Invalid checkpoint state"):
        tf.train.get_checkpoint_state(str(tmp_path))
    (tmp_path / "checkpoint").unlink()
    os.mkfifo(tmp_path / "checkpoint")
    assert tf.train.latest_checkpoint(str(tmp_path)) is None  # never blocks on a FIFO


def test_values_no_object_can_take_are_dropped_once_the_checkpoint_is_gone(tmp_path):
    import gc

    from mixprec.train import _checkpoint

    model, opt = make_model(), keras.optimizers.Adam()
    train(model, opt)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "c"))
    fresh = make_model(built=False)
    tf.train.Checkpoint(model=fresh).restore(path)  # the optimizer's values have no taker
    gc.collect()
    x, _ = data()
    fresh(x)  # builds: the model's values are assigned, the optimizer's dropped
    np.testing.assert_array_equal(fresh(x).numpy(), model(x).numpy())
    assert not any(any(ref() is fresh for _, ref in r.anchors) for r in _checkpoint._ACTIVE)


def test_save_weights_of_a_fitted_model_has_tensorflows_keys(tmp_path):
    model = keras.Sequential([keras.layers.Dense(5, input_shape=(4,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse", metrics=["accuracy"])
    x, y = data()
    model.fit(x, y[:, :2], epochs=1, batch_size=8, verbose=0)
    model.save_weights(str(tmp_path / "weights"))
    assert tf.train.list_variables(str(tmp_path / "weights")) == tf.train.list_variables(
        os.path.join(FIX, "tf_weights", "weights"))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32",
                                   "int64", "uint8", "int8", "bool"])
def test_variable_dtypes_round_trip_exactly(tmp_path, dtype):
    value = tf.cast(tf.constant([[1.5, -2.0, 0.0], [3.25, 7.0, 1.0]]), dtype)
    v = tf.Variable(value)
    path = tf.train.Checkpoint(v=v).write(str(tmp_path / "d"))
    assert tf.train.load_checkpoint(path).get_variable_to_dtype_map()[
        "v/.ATTRIBUTES/VARIABLE_VALUE"] == tf.as_dtype(dtype)
    w = tf.Variable(tf.zeros_like(value))
    tf.train.Checkpoint(v=w).read(path).assert_consumed()
    assert np.asarray(w.numpy()).tobytes() == np.asarray(v.numpy()).tobytes()
    with pytest.raises(ValueError, match="v/.ATTRIBUTES/VARIABLE_VALUE"):
        other = "float64" if dtype != "float64" else "float32"
        tf.train.Checkpoint(v=tf.Variable(tf.cast(value, other))).read(path)


def test_saving_never_replaces_what_is_not_a_regular_file(tmp_path):
    model = make_model()
    os.mkdir(tmp_path / "d.npz")
    with pytest.raises(ValueError, match="not a regular file"):
        model.save_weights(str(tmp_path / "d.npz"))
    os.mkdir(tmp_path / "t.index")
    with pytest.raises(ValueError, match="not a regular file"):
        model.save_weights(str(tmp_path / "t"))
    os.mkfifo(tmp_path / "f.npz")
    with pytest.raises(ValueError, match="not a regular file"):
        model.save_weights(str(tmp_path / "f.npz"))
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    from mixprec import _fileio

    with pytest.raises(ValueError, match="not a regular file"):
        _fileio.atomic_write("/dev/null", lambda f: f.write(b"x"))
    assert not os.path.isfile("/dev/null")


def _fixture_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_fixtures", os.path.join(FIX, "make_fixtures.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_restores_tensorflow_cnn_checkpoint_of_seed_004_shape(tmp_path):
    """Fixture 5: Conv2D, MaxPooling2D, BatchNormalization (moving statistics included)
    and Dense with Adam, saved by TensorFlow; restored into an unbuilt mixprec model."""
    want = _fixture_values("tf_cnn")
    model, opt = _fixture_module().cnn_objects(keras, tf, train=False)
    ck = tf.train.Checkpoint(optimizer=opt, model=model)
    status = ck.restore(tf.train.latest_checkpoint(os.path.join(FIX, "tf_cnn")))
    model.build((None, 10, 10, 1))
    opt.build(model.trainable_variables)
    status.assert_consumed()
    path = ck.save(str(tmp_path / "ckpt"))
    assert path.endswith("ckpt-2")
    r = tf.train.load_checkpoint(path)
    for name, value in want.items():
        if name == "save_counter/.ATTRIBUTES/VARIABLE_VALUE":
            assert r.get_tensor(name) == 2
            continue
        np.testing.assert_array_equal(r.get_tensor(name), value)
    assert [k for k, _ in tf.train.list_variables(path)] == \
        [k for k, _ in tf.train.list_variables(os.path.join(FIX, "tf_cnn"))]


def test_seed_004_cnn_on_fashion_mnist_restores_to_the_same_test_accuracy(tmp_path):
    """Seed 004 as written (its CNN, a custom loop, checkpoint.save during training, a new
    model restored from latest_checkpoint without a strategy) on the Fashion-MNIST subset
    shipped with mixprec: the restored model's test accuracy is the trained model's."""
    (train_images, train_labels), (test_images, test_labels) = \
        keras.datasets.fashion_mnist.load_embedded()
    train_images = train_images[:2000, ..., None] / np.float32(255)
    train_labels = train_labels[:2000]
    test_images = test_images[..., None] / np.float32(255)

    def create_model():
        return keras.Sequential([
            keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(64, 3, activation="relu"), keras.layers.MaxPooling2D(),
            keras.layers.Flatten(), keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10)])

    loss_object = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=keras.losses.Reduction.NONE)
    model, optimizer = create_model(), keras.optimizers.Adam()
    checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)
    prefix = os.path.join(str(tmp_path / "training_checkpoints"), "ckpt")
    ds = tf.data.Dataset.from_tensor_slices((train_images, train_labels)).shuffle(
        2000, seed=1).batch(64)
    for x, y in ds:
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_object(y, model(x, training=True)),
                                              global_batch_size=64)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    checkpoint.save(prefix)

    def accuracy(m):
        acc = keras.metrics.SparseCategoricalAccuracy()
        for x, y in tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(256):
            acc(y, m(x, training=False))
        return float(acc.result())

    new_model = create_model()
    tf.train.Checkpoint(optimizer=keras.optimizers.Adam(), model=new_model).restore(
        tf.train.latest_checkpoint(os.path.dirname(prefix)))
    trained = accuracy(model)
    assert trained > 0.3  # it learned something: ten classes
    assert accuracy(new_model) == trained


def _slots_checkpoint(tmp_path):
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    m.compile(keras.optimizers.Adam(), "mse")
    m.fit(np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32"), verbose=0)
    return tf.train.Checkpoint(optimizer=m.optimizer, model=m).save(str(tmp_path / "ck"))


@pytest.mark.parametrize("partial", [False, True])
def test_deleting_objects_with_unrestored_values_warns_as_tensorflow(tmp_path, caplog, partial):
    # a fresh optimizer has no slots yet: their values wait, and when the objects go they
    # are reported (seed 004's restore ends with these lines), unless expect_partial()
    import gc

    path = _slots_checkpoint(tmp_path)
    m2 = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    o2 = keras.optimizers.Adam()
    status = tf.train.Checkpoint(optimizer=o2, model=m2).restore(path)
    if partial:
        status.expect_partial()
    with caplog.at_level("WARNING", logger="mixprec"):
        del status, o2, m2
        gc.collect()
    lines = [r.getMessage() for r in caplog.records]
    if partial:
        assert not any("unrestored" in ln for ln in lines)
        return
    assert lines[0].startswith("Detecting that an object or model or tf.train.Checkpoint is "
                               "being deleted with unrestored values.")
    assert lines[1:] == ["Value in checkpoint could not be found in the restored object: "
                         "(root).optimizer._variables.%d" % i for i in range(1, 5)]
