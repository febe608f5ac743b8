/* A test plugin for crates/plugin/tests/lv2_time_probe.rs: it reads the time:Position
 * objects its atom input receives and writes, on every frame of each of its ten audio
 * outputs, one value: how many positions this run received (0), then the last position's
 * frame (its bits 0 to 23, then the rest), speed, bar, barBeat, beatUnit, beatsPerBar and
 * beatsPerMinute, and the frame within the run it came at. A property missing or of
 * another type than the one LV2 time specifies is written as -1. Every value is exact in a
 * float. No allocation in run(). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lv2/atom/atom.h>
#include <lv2/atom/util.h>
#include <lv2/core/lv2.h>
#include <lv2/time/time.h>
#include <lv2/urid/urid.h>

#define PLUGIN_URI "urn:downbeat:test:time-probe"
#define OUTS 10

typedef struct {
    LV2_URID object, blank, position, frame, speed, bar, bar_beat, beat_unit, beats_per_bar,
        bpm, long_, float_, int_;
} Urids;

typedef struct {
    Urids u;
    const LV2_Atom_Sequence *in;
    float *out[OUTS];
    float last[OUTS];
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
    if (!self) {
        return NULL;
    }
    Urids *u = &self->u;
    u->object = map->map(map->handle, LV2_ATOM__Object);
    u->blank = map->map(map->handle, LV2_ATOM__Blank);
    u->position = map->map(map->handle, LV2_TIME__Position);
    u->frame = map->map(map->handle, LV2_TIME__frame);
    u->speed = map->map(map->handle, LV2_TIME__speed);
    u->bar = map->map(map->handle, LV2_TIME__bar);
    u->bar_beat = map->map(map->handle, LV2_TIME__barBeat);
    u->beat_unit = map->map(map->handle, LV2_TIME__beatUnit);
    u->beats_per_bar = map->map(map->handle, LV2_TIME__beatsPerBar);
    u->bpm = map->map(map->handle, LV2_TIME__beatsPerMinute);
    u->long_ = map->map(map->handle, LV2_ATOM__Long);
    u->float_ = map->map(map->handle, LV2_ATOM__Float);
    u->int_ = map->map(map->handle, LV2_ATOM__Int);
    return self;
}

static void connect_port(LV2_Handle h, uint32_t port, void *data) {
    Self *self = h;
    if (port == 0) {
        self->in = data;
    } else if (port <= OUTS) {
        self->out[port - 1] = data;
    }
}

static float as_float(const Urids *u, const LV2_Atom *a) {
    return a && a->type == u->float_ ? ((const LV2_Atom_Float *)a)->body : -1.0f;
}

static int64_t as_long(const Urids *u, const LV2_Atom *a) {
    return a && a->type == u->long_ ? ((const LV2_Atom_Long *)a)->body : -1;
}

static void run(LV2_Handle h, uint32_t frames) {
    Self *self = h;
    const Urids *u = &self->u;
    float count = 0;
    LV2_ATOM_SEQUENCE_FOREACH(self->in, ev) {
        if (ev->body.type != u->object && ev->body.type != u->blank) {
            continue;
        }
        const LV2_Atom_Object *obj = (const LV2_Atom_Object *)&ev->body;
        if (obj->body.otype != u->position) {
            continue;
        }
        const LV2_Atom *frame = NULL, *speed = NULL, *bar = NULL, *bar_beat = NULL,
                       *beat_unit = NULL, *beats_per_bar = NULL, *bpm = NULL;
        lv2_atom_object_get(obj, u->frame, &frame, u->speed, &speed, u->bar, &bar,
                            u->bar_beat, &bar_beat, u->beat_unit, &beat_unit,
                            u->beats_per_bar, &beats_per_bar, u->bpm, &bpm, 0);
        count += 1;
        int64_t f = as_long(u, frame);
        self->last[1] = f < 0 ? -1.0f : (float)(f & 0xFFFFFF);
        self->last[2] = f < 0 ? -1.0f : (float)(f >> 24);
        self->last[3] = as_float(u, speed);
        self->last[4] = (float)as_long(u, bar);
        self->last[5] = as_float(u, bar_beat);
        self->last[6] = beat_unit && beat_unit->type == u->int_
                            ? (float)((const LV2_Atom_Int *)beat_unit)->body
                            : -1.0f;
        self->last[7] = as_float(u, beats_per_bar);
        self->last[8] = as_float(u, bpm);
        self->last[9] = (float)ev->time.frames;
    }
    self->last[0] = count;
    for (int k = 0; k < OUTS; ++k) {
        for (uint32_t i = 0; i < frames; ++i) {
            self->out[k][i] = self->last[k];
        }
    }
}

static void cleanup(LV2_Handle h) { free(h); }

static const LV2_Descriptor descriptor = {
    PLUGIN_URI, instantiate, connect_port, NULL, run, NULL, cleanup, NULL,
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) {
    return index == 0 ? &descriptor : NULL;
}
