/* backend.c — the registry of backend tables, one per device type.
 * The CPU table is always present; the CUDA plugin registers its own when it finds a GPU.
 * Knows nothing about what the kernels do. */
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
    tables[device_type] = be;
    counts[device_type] = be ? device_count : 0;
    return MP_OK;
}

int mp_device_count(int device_type) {
    if (device_type < 0 || device_type >= MP_DEV_TYPE_COUNT)
        return 0;
    return tables[device_type] ? counts[device_type] : 0;
}
