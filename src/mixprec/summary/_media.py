"""``tf.summary.image`` and ``tf.summary.audio``: batches of images encoded as PNG and of
clips encoded as 16-bit WAV, written as TensorBoard's image/audio plugin tensors. PNG is
framed here around the standard library's zlib (no imaging dependency); WAV through the
standard library's ``wave``. The conversions follow TensorFlow: floats to uint8 with
``convert_image_dtype(saturate=True)``, audio samples clamped to [-1, 1] and scaled by
2**15 with rounding."""

import io
import struct
import wave
import zlib

import numpy as np

from mixprec.summary import _events

__all__ = ["encode_png", "encode_wav", "image_value", "audio_value"]

# AudioPluginData{version: 0, encoding: WAV (11)}: TensorBoard's audio metadata content
_AUDIO_CONTENT = b"\x10\x0b"
_PNG_COLOR = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type (gray, gray+alpha, RGB, RGBA)


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + \
        struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(img):
    """A (height, width, channels) uint8 array as PNG bytes (8-bit, no interlace)."""
    img = np.ascontiguousarray(img, dtype=np.uint8)
    h, w, c = img.shape
    if c not in _PNG_COLOR:
        raise ValueError("images must have 1, 2, 3 or 4 channels, got %d" % c)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), img.reshape(h, w * c)], axis=1)
    header = struct.pack(">IIBBBBB", w, h, 8, _PNG_COLOR[c], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) +
            _chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + _chunk(b"IEND", b""))


def encode_wav(samples, sample_rate):
    """A (frames, channels) float array as 16-bit PCM WAV bytes (TensorFlow's scaling)."""
    x = np.asarray(samples, dtype=np.float32)
    pcm = np.clip(np.round(np.clip(x, -1.0, 1.0) * np.float32(32768.0)), -32768, 32767)
    buf = io.BytesIO()
    with wave.open(buf, "wb") as f:
        f.setnchannels(x.shape[1])
        f.setsampwidth(2)
        f.setframerate(int(sample_rate))
        f.writeframes(pcm.astype("<i2").tobytes())
    return buf.getvalue()


def _as_uint8(data):
    arr = np.asarray(data)
    if arr.dtype == np.uint8:
        return arr
    from mixprec import image as _image
    return _image.convert_image_dtype(arr, "uint8", saturate=True).numpy()


def image_value(name, data, max_outputs, description):
    arr = np.asarray(data)
    if arr.ndim != 4:
        raise ValueError("Tensor  must have rank 4.  Received rank %d, shape %s"
                         % (arr.ndim, tuple(arr.shape)))
    if arr.shape[-1] not in (1, 2, 3, 4):
        raise ValueError("images must have 1, 2, 3 or 4 channels, got shape %s"
                         % (tuple(arr.shape),))
    imgs = _as_uint8(arr[:max(int(max_outputs), 0)])
    h, w = arr.shape[1], arr.shape[2]
    strings = [str(w).encode(), str(h).encode()] + [encode_png(im) for im in imgs]
    return _events.summary_value(
        name, _events.tensor_proto(_events.DT_STRING, (len(strings),), strings=strings),
        _events.metadata("images", description=description))


def audio_value(name, data, sample_rate, max_outputs, encoding, description):
    if encoding not in (None, "wav"):
        raise ValueError("Unknown encoding: %r" % (encoding,))
    arr = np.asarray(data, dtype=np.float32)
    if arr.ndim != 3:
        raise ValueError("Tensor  must have rank 3.  Received rank %d, shape %s"
                         % (arr.ndim, tuple(arr.shape)))
    rate = float(np.asarray(sample_rate))
    clips = arr[:max(int(max_outputs), 0)]
    rows = [[encode_wav(c, rate), b""] for c in clips]
    flat = [s for row in rows for s in row]
    return _events.summary_value(
        name, _events.tensor_proto(_events.DT_STRING, (len(rows), 2), strings=flat),
        _events.metadata("audio", content=_AUDIO_CONTENT, description=description))
