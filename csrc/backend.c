/* backend.c — the registry of backend tables, one per device type, and the C API that
 * backend plugins (the CUDA module) reach the core through.
 * The CPU table is always present; the CUDA plugin registers its own when it finds a GPU.
 * Knows nothing about what the kernels do. */
#include <stddef.h>
#include <string.h>

#include "mixprec.h"

static const mp_backend *tables[MP_DEV_TYPE_COUNT] = {[MP_DEV_CPU] = &mp_backend_cpu};
static int counts[MP_DEV_TYPE_COUNT] = {[MP_DEV_CPU] = 1};

const mp_backend *mp_backend_get(int device_type) {
    if (device_type < 0 || device_type >= MP_DEV_TYPE_COUNT)
        return NULL;
    return tables[device_type];
}

mp_status mp_backend_register(int device_type, const mp_backend *be, int device_count) {
    if (device_type <= MP_DEV_CPU || device_type >= MP_DEV_TYPE_COUNT)
        return mp_error_set(MP_ERR_VALUE, "cannot register a backend for device type %d", device_type);
    if (be && device_count < 1)
        return mp_error_set(MP_ERR_VALUE, "a backend needs at least one device, got %d", device_count);
    tables[device_type] = be;
    counts[device_type] = be ? device_count : 0;
    return MP_OK;
}

int mp_device_count(int device_type) {
    if (device_type < 0 || device_type >= MP_DEV_TYPE_COUNT)
        return 0;
    return tables[device_type] ? counts[device_type] : 0;
}

const mp_c_api mp_c_api_table = {
    .version = MP_C_API_VERSION,
    .backend_size = sizeof(mp_backend),
    .backend_register = mp_backend_register,
    .error_set_at = mp_error_set_at,
    .error_message = mp_error_message,
    .dtype_name = mp_dtype_name,
};

/* ------------------------------------------------------------------ emulated GPU (tests) */

static mp_backend emulated;
static int64_t emulated_d2h;

static mp_status emulated_copy_d2h(mp_device dev, void *dst, const void *src, size_t nbytes) {
    __atomic_add_fetch(&emulated_d2h, 1, __ATOMIC_RELAXED);
    return mp_backend_cpu.copy_d2h(dev, dst, src, nbytes);
}

#define SLOT(name) {#name, offsetof(mp_backend, name)}
static const struct {
    const char *name;
    size_t offset;
} slots[] = {
    SLOT(alloc),   SLOT(free),      SLOT(copy_h2d),     SLOT(copy_d2h), SLOT(copy_d2d),     SLOT(cast),
    SLOT(fill),    SLOT(iota),      SLOT(unary),        SLOT(binary),   SLOT(where),        SLOT(reduce),
    SLOT(argreduce), SLOT(strided_copy), SLOT(gemm),    SLOT(softmax),  SLOT(one_hot),      SLOT(random),
    SLOT(softmax_xent), SLOT(finite_check), SLOT(optim_update), SLOT(step_end),
    SLOT(conv),    SLOT(pool),      SLOT(batch_norm),
};
#undef SLOT

/* Sets the slots named in `without` (comma-separated) to NULL. */
static mp_status drop_slots(mp_backend *be, const char *without) {
    while (without && *without) {
        const char *end = strchr(without, ',');
        size_t len = end ? (size_t)(end - without) : strlen(without);
        size_t i = 0;
        for (; i < sizeof slots / sizeof slots[0]; i++)
            if (strlen(slots[i].name) == len && strncmp(slots[i].name, without, len) == 0)
                break;
        if (i == sizeof slots / sizeof slots[0])
            return mp_error_set(MP_ERR_VALUE, "no backend slot named '%.*s'", (int)len, without);
        memset((char *)be + slots[i].offset, 0, sizeof(void (*)(void)));
        without = end ? end + 1 : NULL;
    }
    return MP_OK;
}

mp_status mp_backend_emulate_gpu(int on, const char *without) {
    const mp_backend *cur = tables[MP_DEV_CUDA];
    if (cur && cur != &emulated)
        return mp_error_set(MP_ERR_DEVICE, "a %s backend is registered; the GPU emulation is only for machines "
                            "without a GPU", cur->name);
    if (!on)
        return mp_backend_register(MP_DEV_CUDA, NULL, 0);
    emulated = mp_backend_cpu;
    emulated.name = "emulated-gpu";
    emulated.copy_d2h = emulated_copy_d2h;
    MP_TRY(drop_slots(&emulated, without));
    return mp_backend_register(MP_DEV_CUDA, &emulated, 1);
}

int64_t mp_backend_emulated_d2h_copies(void) { return __atomic_load_n(&emulated_d2h, __ATOMIC_RELAXED); }
