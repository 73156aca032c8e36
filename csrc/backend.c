/* backend.c — the registry of backend tables, one per device type, and the C API that
 * backend plugins (the CUDA module) reach the core through.
 * The CPU table is always present; the CUDA plugin registers its own when it finds a GPU.
 * Knows nothing about what the kernels do. */
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
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

static const char *device_str(mp_device d, char *buf, size_t cap) {
    snprintf(buf, cap, "%s:%d", d.type == MP_DEV_CUDA ? "GPU" : "CPU", d.index);
    return buf;
}

mp_status mp_backend_missing_slot(const mp_backend *be, const char *slot, mp_device dev) {
    char b[32];
    return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "the %s backend does not implement %s (%s)", be->name, slot,
                        device_str(dev, b, sizeof b));
}

/* ------------------------------------------------------------------ device services */

/* The table of an existing device, or MP_ERR_DEVICE naming it. */
static mp_status device_backend(mp_device dev, const mp_backend **be) {
    *be = mp_backend_get(dev.type);
    if (!*be || dev.index < 0 || dev.index >= counts[dev.type]) {
        char b[32];
        return mp_error_set(MP_ERR_DEVICE, "device %s is not available (%d such device%s here)",
                            device_str(dev, b, sizeof b), mp_device_count(dev.type),
                            mp_device_count(dev.type) == 1 ? "" : "s");
    }
    return MP_OK;
}

mp_status mp_device_memory_stats(mp_device dev, int reset_peak, int64_t *current, int64_t *peak) {
    const mp_backend *be;
    MP_TRY(device_backend(dev, &be));
    return MP_BACKEND_CALL(be, memory_stats, dev, reset_peak, current, peak);
}

mp_status mp_device_synchronize(mp_device dev) {
    const mp_backend *be;
    MP_TRY(device_backend(dev, &be));
    return MP_BACKEND_CALL(be, synchronize, dev);
}

mp_status mp_device_host_syncs(mp_device dev, int64_t *count) {
    const mp_backend *be;
    MP_TRY(device_backend(dev, &be));
    return MP_BACKEND_CALL(be, host_syncs, dev, count);
}

const mp_c_api mp_c_api_table = {
    .version = MP_C_API_VERSION,
    .backend_size = sizeof(mp_backend),
    .backend_register = mp_backend_register,
    .error_set_at = mp_error_set_at,
    .error_message = mp_error_message,
    .dtype_name = mp_dtype_name,
    .backend_cpu = &mp_backend_cpu,
};

/* ------------------------------------------------------------------ emulated GPU (tests) */

static mp_backend emulated;
static int64_t emulated_d2h;

static mp_status emulated_copy_d2h(mp_device dev, void *dst, const void *src, size_t nbytes) {
    __atomic_add_fetch(&emulated_d2h, 1, __ATOMIC_RELAXED);
    return mp_backend_cpu.copy_d2h(dev, dst, src, nbytes);
}

/* The copies to the host are the synchronisations a real GPU would have. */
static mp_status emulated_host_syncs(mp_device dev, int64_t *count) {
    (void)dev;
    *count = __atomic_load_n(&emulated_d2h, __ATOMIC_RELAXED);
    return MP_OK;
}

/* Emulated CUDA graphs (test aid, off unless mp_backend_emulate_graphs(1)): exercises the
 * core's capture bookkeeping (graph_capture.c) on CPU kernels. The kernels run during the
 * "capture" (a real capture runs nothing), so the first launch has nothing left to do; a
 * re-launch cannot replay them and fails, which the core must survive (a plain replay).
 * Host copies while capturing are refused, as the CUDA backend refuses them. */
static _Thread_local int emu_capturing, emu_refused;

static mp_status emu_capture_begin(mp_device dev) {
    if (emu_capturing)
        return mp_error_set(MP_ERR_VALUE, "GPU:%d is already capturing (emulated)", dev.index);
    emu_capturing = 1;
    emu_refused = 0;
    return MP_OK;
}

static mp_status emu_capture_end(mp_device dev, void **exec, int *relaunchable) {
    (void)dev;
    *exec = NULL;
    *relaunchable = 0;
    int refused = emu_refused;
    emu_capturing = emu_refused = 0;
    if (refused)
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "the emulated capture was refused");
    int *launched = calloc(1, sizeof *launched);
    if (!launched)
        return mp_error_set(MP_ERR_MEMORY, "out of host memory (emulated graph)");
    *exec = launched;
    *relaunchable = 1;
    return MP_OK;
}

static mp_status emu_graph_launch(mp_device dev, void *exec) {
    int *launched = exec;
    if (*launched)
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "the emulated GPU cannot re-launch a graph (GPU:%d)", dev.index);
    *launched = 1;
    return MP_OK;
}

static mp_status emu_graph_destroy(mp_device dev, void *exec) {
    (void)dev;
    free(exec);
    return MP_OK;
}

static mp_status emu_copy_h2d(mp_device dev, void *dst, const void *src, size_t nbytes) {
    if (emu_capturing) {
        emu_refused = 1;
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "a host-to-device copy cannot be captured (emulated)");
    }
    return mp_backend_cpu.copy_h2d(dev, dst, src, nbytes);
}

static mp_status emu_copy_d2h(mp_device dev, void *dst, const void *src, size_t nbytes) {
    if (emu_capturing) {
        emu_refused = 1;
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "a device-to-host copy cannot be captured (emulated)");
    }
    return emulated_copy_d2h(dev, dst, src, nbytes);
}

mp_status mp_backend_emulate_graphs(int on) {
    if (tables[MP_DEV_CUDA] != &emulated)
        return mp_error_set(MP_ERR_DEVICE, "emulated CUDA graphs need the emulated GPU");
    emulated.graph_capture_begin = on ? emu_capture_begin : NULL;
    emulated.graph_capture_end = on ? emu_capture_end : NULL;
    emulated.graph_launch = on ? emu_graph_launch : NULL;
    emulated.graph_destroy = on ? emu_graph_destroy : NULL;
    emulated.copy_h2d = on ? emu_copy_h2d : mp_backend_cpu.copy_h2d;
    emulated.copy_d2h = on ? emu_copy_d2h : emulated_copy_d2h;
    return MP_OK;
}

/* The slot names, offsets and one-line docs, from backend.def. */
static const struct {
    const char *name;
    size_t offset;
    const char *doc;
} slots[] = {
#define MP_BACKEND_SLOT(slot, ret, params, doc) {#slot, offsetof(mp_backend, slot), doc},
#include "backend.def"
#undef MP_BACKEND_SLOT
};
#define N_SLOTS ((int)(sizeof slots / sizeof slots[0]))

int mp_backend_slot_count(void) { return N_SLOTS; }

const char *mp_backend_slot_info(int i, const char **doc) {
    if (i < 0 || i >= N_SLOTS)
        return NULL;
    if (doc)
        *doc = slots[i].doc;
    return slots[i].name;
}

int mp_backend_has_slot(const mp_backend *be, int i) {
    void (*fn)(void);
    if (!be || i < 0 || i >= N_SLOTS)
        return 0;
    memcpy(&fn, (const char *)be + slots[i].offset, sizeof fn);
    return fn != NULL;
}

/* Sets the slots named in `without` (comma-separated) to NULL. */
static mp_status drop_slots(mp_backend *be, const char *without) {
    while (without && *without) {
        const char *end = strchr(without, ',');
        size_t len = end ? (size_t)(end - without) : strlen(without);
        int i = 0;
        for (; i < N_SLOTS; i++)
            if (strlen(slots[i].name) == len && strncmp(slots[i].name, without, len) == 0)
                break;
        if (i == N_SLOTS)
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
    emulated.host_syncs = emulated_host_syncs;
    /* as CUDA's table: no kept max-pool workspace (its header would be read back through
     * copy_d2h, a host synchronisation on a real GPU) */
    emulated.pool_workspace = NULL;
    /* as CUDA's table: MaxPoolGrad + ReluGrad run as the two ops (the composition is what a
     * GPU runs, so the emulated pass tests it) */
    emulated.max_pool_grad_relu = NULL;
    MP_TRY(drop_slots(&emulated, without));
    if (on < 0 || on > 16)
        return mp_error_set(MP_ERR_VALUE, "the GPU emulation offers 1..16 GPUs, asked for %d", on);
    return mp_backend_register(MP_DEV_CUDA, &emulated, on);
}
