"""StringLookup, IntegerLookup, Hashing and TextVectorization against tf-keras 2.21 (golden
ids and vectors taken from TF 2.21 with TF_USE_LEGACY_KERAS=1)."""

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras

L = keras.layers
VOCAB = ["a", "b", "c", "d"]
TEXTS = np.array(["The Cat sat on the mat.", "the dog, the CAT!", "a bird-song; isn't it?"])
TV_VOCAB = ["", "[UNK]", "the", "cat", "sat", "on", "mat", "it", "isnt", "dog", "birdsong", "a"]


def v(t):
    return t.numpy().tolist()


def test_string_lookup_int():
    out = L.StringLookup(vocabulary=VOCAB)(tf.constant([["a", "c", "d"], ["d", "z", "b"]]))
    assert out.dtype == tf.int64 and v(out) == [[1, 3, 4], [4, 0, 2]]
    assert v(L.StringLookup(vocabulary=VOCAB, mask_token="")(tf.constant([["a", "", "z"]]))) == \
        [[2, 0, 1]]
    assert v(L.StringLookup(vocabulary=VOCAB, num_oov_indices=2)(
        tf.constant(["a", "z", "zz", "q", "hello"]))) == [2, 1, 0, 1, 0]
    assert v(L.StringLookup(vocabulary=VOCAB, num_oov_indices=0)(tf.constant(["a", "b"]))) == [0, 1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_oov_indices=0"):
        L.StringLookup(vocabulary=VOCAB, num_oov_indices=0)(tf.constant(["a", "z"]))


def test_string_lookup_encodings():
    data = tf.constant([["a", "c", "d"], ["d", "z", "b"]])
    assert v(L.StringLookup(vocabulary=VOCAB, output_mode="one_hot")(tf.constant(["a", "b", "z"]))) \
        == [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [1, 0, 0, 0, 0]]
    assert v(L.StringLookup(vocabulary=VOCAB, output_mode="multi_hot")(data)) == \
        [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]]
    assert v(L.StringLookup(vocabulary=VOCAB, output_mode="multi_hot", mask_token="")(
        tf.constant([["a", "", "z"]]))) == [[1, 1, 0, 0, 0]]
    assert v(L.StringLookup(vocabulary=VOCAB, output_mode="count")(
        tf.constant([["a", "a", "z", "d"]]))) == [[1, 2, 0, 0, 1]]
    out = L.StringLookup(vocabulary=VOCAB, output_mode="tf_idf",
                         idf_weights=[0.5, 0.25, 0.2, 0.125])(tf.constant([["a", "a", "z", "d"]]))
    np.testing.assert_allclose(out.numpy(), [[0.26875, 1.0, 0, 0, 0.125]], rtol=1e-6)
    assert out.dtype == tf.float32


def test_string_lookup_invert_and_vocabulary():
    out = L.StringLookup(vocabulary=VOCAB, invert=True)(tf.constant([[1, 3, 4], [0, 2, 9]]))
    assert v(out) == [[b"a", b"c", b"d"], [b"[UNK]", b"b", b"[UNK]"]]
    assert v(L.StringLookup(vocabulary=VOCAB, invert=True, mask_token="[M]")(
        tf.constant([[1, 0, 5]]))) == [[b"[UNK]", b"[M]", b"d"]]
    la = L.StringLookup(vocabulary=VOCAB)
    assert la.get_vocabulary() == ["[UNK]", "a", "b", "c", "d"] and la.vocabulary_size() == 5
    assert la.get_vocabulary(include_special_tokens=False) == VOCAB
    lb = L.StringLookup(vocabulary=VOCAB, mask_token="", num_oov_indices=2)
    assert lb.get_vocabulary() == ["", "[UNK]", "[UNK]", "a", "b", "c", "d"]
    assert lb.vocabulary_size() == 7


def test_string_lookup_adapt():
    la = L.StringLookup()
    la.adapt(np.array([["b", "a", "c"], ["b", "c", "b"], ["d", "e", "a"]]))
    assert la.get_vocabulary() == ["[UNK]", "b", "c", "a", "e", "d"]  # count, then token desc
    lb = L.StringLookup(max_tokens=4)
    lb.adapt(np.array(["b", "a", "c", "b", "c", "b", "d", "e", "a", "z"]))
    assert lb.get_vocabulary() == ["[UNK]", "b", "c", "a"]
    lc = L.StringLookup()
    lc.adapt(tf.data.Dataset.from_tensor_slices(["x", "y", "y", "x", "w", "y"]).batch(2))
    assert lc.get_vocabulary() == ["[UNK]", "y", "x", "w"]


def test_integer_lookup():
    il = L.IntegerLookup(vocabulary=[12, 36, 1138, 42])
    out = il(tf.constant([[12, 1138, 42], [42, 1000, 36]]))
    assert out.dtype == tf.int64 and v(out) == [[1, 3, 4], [4, 0, 2]]
    assert v(L.IntegerLookup(vocabulary=[12, 36], mask_token=0)(tf.constant([12, 0, 7]))) == [2, 0, 1]
    lm = L.IntegerLookup(vocabulary=[12, 36], mask_token=0)
    assert lm.get_vocabulary() == [0, -1, 12, 36] and lm.vocabulary_size() == 4
    la = L.IntegerLookup()
    la.adapt(np.array([12, 36, 1138, 12, 36, 12, 7]))
    assert la.get_vocabulary() == [-1, 12, 36, 1138, 7]
    assert v(L.IntegerLookup(vocabulary=[12, 36, 1138, 42], invert=True)(tf.constant([1, 0, 4]))) \
        == [12, -1, 42]
    assert v(L.IntegerLookup(vocabulary=[12, 36], num_oov_indices=2)(
        tf.constant([12, 5, 6, 7, 100]))) == [2, 1, 0, 1, 0]
    assert v(L.IntegerLookup(vocabulary=[12, 36, 1138, 42], output_mode="multi_hot")(
        tf.constant([[12, 1138, 42, 42], [42, 5, 36, 7]]))) == [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]]
    assert L.IntegerLookup(vocabulary=[12, 36])(tf.constant([12], tf.int32)).dtype == tf.int64


def test_hashing():
    x = tf.constant([["A"], ["B"], ["C"], ["D"], ["E"]])
    assert v(L.Hashing(num_bins=3)(x)) == [[1], [0], [1], [1], [2]]
    assert v(L.Hashing(num_bins=3, mask_value="")(tf.constant([["A"], [""], ["C"], ["D"], ["E"]]))) \
        == [[1], [0], [2], [2], [1]]
    assert v(L.Hashing(num_bins=3, salt=133)(x)) == [[0], [0], [2], [1], [0]]
    assert v(L.Hashing(num_bins=5, salt=[133, 137])(x)) == [[4], [0], [2], [2], [4]]
    assert v(L.Hashing(num_bins=3)(tf.constant([[1], [2], [3], [4], [-5]]))) == \
        [[0], [1], [0], [2], [0]]
    assert v(L.Hashing(num_bins=3, mask_value=0)(tf.constant([[1], [0], [3]]))) == [[2], [0], [2]]
    assert v(L.Hashing(num_bins=4, output_mode="multi_hot")(tf.constant([["A", "B"], ["C", "A"]]))) \
        == [[1, 0, 0, 0], [1, 0, 0, 1]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a string tensor"):
        L.Hashing(num_bins=3)(tf.constant([[1.5]]))


def _tv(**kw):
    layer = L.TextVectorization(**kw)
    layer.adapt(TEXTS)
    return layer.get_vocabulary(), v(layer(tf.constant(["the cat and the bird", "dog"])))


def test_text_vectorization_int():
    assert _tv() == (TV_VOCAB, [[2, 3, 1, 2, 1], [9, 0, 0, 0, 0]])
    assert _tv(output_sequence_length=4)[1] == [[2, 3, 1, 2], [9, 0, 0, 0]]
    assert _tv(output_sequence_length=8)[1] == [[2, 3, 1, 2, 1, 0, 0, 0], [9, 0, 0, 0, 0, 0, 0, 0]]
    assert _tv(max_tokens=5) == (TV_VOCAB[:5], [[2, 3, 1, 2, 1], [1, 0, 0, 0, 0]])
    assert _tv(standardize="lower") == (
        ["", "[UNK]", "the", "sat", "on", "mat.", "it?", "isn't", "dog,", "cat!", "cat",
         "bird-song;", "a"], [[2, 10, 1, 2, 1], [1, 0, 0, 0, 0]])
    assert _tv(standardize=None)[1] == [[2, 1, 1, 2, 1], [1, 0, 0, 0, 0]]


def test_text_vectorization_bags_and_ngrams():
    vocab, out = _tv(output_mode="multi_hot")
    assert vocab == TV_VOCAB[1:]
    assert out == [[1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]]
    assert _tv(output_mode="count", max_tokens=6)[1] == [[2, 2, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]]
    _, out = _tv(output_mode="tf_idf")
    np.testing.assert_allclose(out[0][:3], [1.7433240413665771, 1.3862943649291992,
                                            0.6931471824645996], rtol=1e-6)
    np.testing.assert_allclose(out[1][8], 0.9162907600402832, rtol=1e-6)
    assert len(_tv(output_mode="multi_hot", max_tokens=12, pad_to_max_tokens=True)[1][0]) == 12
    vocab, out = _tv(ngrams=2)
    assert vocab[:6] == ["", "[UNK]", "the", "the cat", "cat", "the mat"]
    assert out == [[2, 4, 1, 2, 1, 3, 1, 1, 1], [16, 0, 0, 0, 0, 0, 0, 0, 0]]


def test_text_vectorization_given_vocabulary_and_shapes():
    layer = L.TextVectorization(vocabulary=["cat", "dog"])
    assert v(layer(tf.constant([["cat dog x"], ["dog"]]))) == [[2, 3, 1], [3, 0, 0]]
    assert layer.vocabulary_size() == 4
    assert v(L.TextVectorization(vocabulary=["cat", "dog"], output_sequence_length=3)(
        tf.constant([["cat dog x"], ["dog"]]))) == [[2, 3, 1], [3, 0, 0]]
    assert v(layer(tf.constant("cat dog"))) == [2, 3]


def test_text_vectorization_in_dataset_map_and_model():
    ds = tf.data.Dataset.from_tensor_slices(["a b c", "b c", "c"]).batch(2)
    layer = L.TextVectorization(output_sequence_length=3)
    layer.adapt(ds)
    assert layer.get_vocabulary() == ["", "[UNK]", "c", "b", "a"]
    assert [v(b) for b in ds.map(layer)] == [[[4, 3, 2], [3, 2, 0]], [[2, 0, 0]]]

    tv = L.TextVectorization(max_tokens=10, output_sequence_length=4)
    tv.adapt(TEXTS)
    model = keras.Sequential([tv, L.Embedding(10, 2, embeddings_initializer="ones"),
                              L.GlobalAveragePooling1D()])
    with pytest.warns(UserWarning, match="graph break"):
        out = model.predict(tf.constant(["the cat", "bird song song song"]), verbose=0)
    np.testing.assert_array_equal(out, np.ones((2, 2), np.float32))


def test_string_lookup_in_functional_model():
    inp = keras.Input(shape=(1,), dtype="string")
    model = keras.Model(inp, L.StringLookup(vocabulary=VOCAB, output_mode="one_hot")(inp))
    with pytest.warns(UserWarning, match="graph break"):
        out = model.predict(tf.constant([["a"], ["z"]]), verbose=0)
    np.testing.assert_array_equal(out, [[0, 1, 0, 0, 0], [1, 0, 0, 0, 0]])
