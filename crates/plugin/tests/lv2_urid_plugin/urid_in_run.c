/* A test plugin for crates/plugin/tests/lv2_urid.rs: every run() maps a URI never seen
 * before ("urn:downbeat:test:run#N" for the Nth run) and one fixed URI, and writes the
 * URIDs to its output (the fresh one everywhere, the fixed one at frame 1), so the test can
 * check what the host's map returned on the audio thread. No allocation in run(). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lv2/core/lv2.h>
#include <lv2/urid/urid.h>

#define PLUGIN_URI "urn:downbeat:test:urid-in-run"

typedef struct {
    LV2_URID_Map *map;
    float *out;
    uint32_t runs;
} Self;

static LV2_Handle instantiate(const LV2_Descriptor *d, double rate, const char *path,
                              const LV2_Feature *const *features) {
    LV2_URID_Map *map = NULL;
    (void)d;
    (void)rate;
    (void)path;
    for (int i = 0; features[i]; ++i) {
        if (!strcmp(features[i]->URI, LV2_URID__map)) {
            map = features[i]->data;
        }
    }
    if (!map) {
        return NULL;
    }
    Self *self = calloc(1, sizeof(Self));
    if (self) {
        self->map = map;
    }
    return self;
}

static void connect_port(LV2_Handle h, uint32_t port, void *data) {
    if (port == 0) {
        ((Self *)h)->out = data;
    }
}

static void run(LV2_Handle h, uint32_t frames) {
    Self *self = h;
    char uri[48] = "urn:downbeat:test:run#";
    size_t len = strlen(uri);
    char digits[12];
    int k = 0;
    uint32_t n = self->runs++;
    do {
        digits[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    while (k) {
        uri[len++] = digits[--k];
    }
    uri[len] = 0;
    LV2_URID fresh = self->map->map(self->map->handle, uri);
    LV2_URID fixed = self->map->map(self->map->handle, "urn:downbeat:test#fixed");
    for (uint32_t i = 0; i < frames; ++i) {
        self->out[i] = (float)fresh;
    }
    if (frames > 1) {
        self->out[1] = (float)fixed;
    }
}

static void cleanup(LV2_Handle h) { free(h); }

static const LV2_Descriptor descriptor = {
    PLUGIN_URI, instantiate, connect_port, NULL, run, NULL, cleanup, NULL,
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) {
    return index == 0 ? &descriptor : NULL;
}
