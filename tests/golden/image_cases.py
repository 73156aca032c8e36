"""tf.image expressions evaluated by both sides: make_tf_image.py with TensorFlow 2.21 writes
tf_image.npz, tests/test_image.py checks mixprec against it. ``I`` is tf.image; the arrays
come from ``data``. Data only: no imports."""

CASES = {
    "resize_up_bilinear": "I.resize(IMG, (7, 9))",
    "resize_down_bilinear": "I.resize(BATCH, (3, 2))",
    "resize_odd_bilinear": "I.resize(BATCH, (5, 11))",
    "resize_nearest_up": "I.resize(BATCH, (9, 7), method='nearest')",
    "resize_nearest_down": "I.resize(IMG, (2, 3), method='nearest')",
    "resize_uint8": "I.resize(U8, (6, 4))",
    "resize_uint8_nearest": "I.resize(U8, (3, 8), method='nearest')",
    "resize_aspect": "I.resize(IMG, (10, 10), preserve_aspect_ratio=True)",
    "flip_lr": "I.flip_left_right(BATCH)",
    "flip_ud": "I.flip_up_down(IMG)",
    "rot90": "I.rot90(IMG)",
    "rot90_3": "I.rot90(BATCH, k=3)",
    "transpose": "I.transpose(BATCH)",
    "central_crop": "I.central_crop(IMG, 0.6)",
    "crop_box": "I.crop_to_bounding_box(BATCH, 1, 2, 3, 2)",
    "pad_box": "I.pad_to_bounding_box(IMG, 2, 1, 9, 8)",
    "crop_or_pad": "I.resize_with_crop_or_pad(IMG, 3, 9)",
    "gray": "I.rgb_to_grayscale(IMG)",
    "gray_u8": "I.rgb_to_grayscale(U8)",
    "to_rgb": "I.grayscale_to_rgb(I.rgb_to_grayscale(IMG))",
    "brightness": "I.adjust_brightness(IMG, 0.25)",
    "brightness_u8": "I.adjust_brightness(U8, 0.2)",
    "contrast": "I.adjust_contrast(BATCH, 1.7)",
    "contrast_u8": "I.adjust_contrast(U8, 0.5)",
    "standardize": "I.per_image_standardization(BATCH)",
    "standardize_u8": "I.per_image_standardization(U8)",
    "to_float": "I.convert_image_dtype(U8, 'float32')",
    "to_uint8": "I.convert_image_dtype(BATCH, 'uint8')",
    "to_uint8_sat": "I.convert_image_dtype(IMG, 'uint8', saturate=True)",
    "gradients": "I.image_gradients(BATCH)[0] + 2 * I.image_gradients(BATCH)[1]",
    "tv": "I.total_variation(BATCH)",
    "psnr": "I.psnr(BATCH, BATCH * 0.9 + 0.05, 1.0)",
}


def data(rng):
    return {"IMG": rng.standard_normal((5, 6, 3)).astype("float32"),
            "BATCH": rng.random((2, 5, 4, 3)).astype("float32"),
            "U8": rng.integers(0, 256, (4, 5, 3)).astype("uint8")}
