/* A test plugin for crates/plugin/tests/lv2_worker.rs: instantiate() schedules one request
 * (sequence number 1000), and so does restoring a state (5000, from the main thread, with
 * its state:interface: saving stores one property); a request worked on the thread that
 * instantiated the plugin or restored the state is counted on `inline`; every run() schedules `burst` requests of `size` bytes carrying
 * the run's number; work() (which may sleep `slow` ms) answers 2 * number + 1; every
 * response's value becomes the output, so the test reads which run's answer reached which
 * block. Counts refused requests, responses and end_run() calls on control outputs. No
 * allocation or system call in run(). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lv2/atom/atom.h>
#include <lv2/core/lv2.h>
#include <lv2/state/state.h>
#include <lv2/urid/urid.h>
#include <lv2/worker/worker.h>

#define PLUGIN_URI "urn:downbeat:test:worker-echo"
#define MAX_MESSAGE 8192

typedef struct {
    LV2_Worker_Schedule *schedule;
    LV2_URID_Map *map;
    float *out, *burst, *size, *slow, *refused, *responses, *ended, *inline_works;
    pthread_t instantiating, restoring;
    int restoring_set;
    float n_inline;
    uint32_t runs;
    float last, n_refused, n_responses, n_ended;
    uint8_t message[MAX_MESSAGE];
} Self;

static LV2_Handle instantiate(const LV2_Descriptor *d, double rate, const char *path,
                              const LV2_Feature *const *features) {
    LV2_Worker_Schedule *schedule = NULL;
    LV2_URID_Map *map = NULL;
    (void)d;
    (void)rate;
    (void)path;
    for (int i = 0; features[i]; ++i) {
        if (!strcmp(features[i]->URI, LV2_WORKER__schedule)) {
            schedule = features[i]->data;
        }
        if (!strcmp(features[i]->URI, LV2_URID__map)) {
            map = features[i]->data;
        }
    }
    if (!schedule || !map) {
        return NULL;
    }
    Self *self = calloc(1, sizeof(Self));
    if (!self) {
        return NULL;
    }
    self->schedule = schedule;
    self->map = map;
    self->instantiating = pthread_self();
    uint32_t first = 1000;
    schedule->schedule_work(schedule->handle, sizeof first, &first);
    return self;
}

static void connect_port(LV2_Handle h, uint32_t port, void *data) {
    Self *self = h;
    float **ports[] = {&self->out,     &self->burst,     &self->size,  &self->slow,
                       &self->refused, &self->responses, &self->ended, &self->inline_works};
    if (port < sizeof ports / sizeof ports[0]) {
        *ports[port] = data;
    }
}

static void run(LV2_Handle h, uint32_t frames) {
    Self *self = h;
    for (uint32_t i = 0; i < frames; ++i) {
        self->out[i] = self->last;
    }
    uint32_t size = (uint32_t)*self->size;
    if (size < 4) {
        size = 4;
    }
    if (size > MAX_MESSAGE) {
        size = MAX_MESSAGE;
    }
    memcpy(self->message, &self->runs, sizeof self->runs);
    for (uint32_t b = 0; b < (uint32_t)*self->burst; ++b) {
        if (self->schedule->schedule_work(self->schedule->handle, size, self->message) ==
            LV2_WORKER_ERR_NO_SPACE) {
            self->n_refused += 1;
        }
    }
    self->runs++;
    *self->refused = self->n_refused;
    *self->responses = self->n_responses;
    *self->ended = self->n_ended;
    *self->inline_works = self->n_inline;
}

static LV2_Worker_Status work(LV2_Handle h, LV2_Worker_Respond_Function respond,
                              LV2_Worker_Respond_Handle handle, uint32_t size,
                              const void *data) {
    Self *self = h;
    uint32_t n;
    if (size < sizeof n) {
        return LV2_WORKER_ERR_UNKNOWN;
    }
    memcpy(&n, data, sizeof n);
    if (pthread_equal(pthread_self(), self->instantiating) ||
        (self->restoring_set && pthread_equal(pthread_self(), self->restoring))) {
        self->n_inline += 1; /* worked on the thread that made the request outside run() */
    }
    if (*self->slow > 0) {
        struct timespec t = {0, (long)(*self->slow * 1e6)};
        nanosleep(&t, NULL);
    }
    uint32_t answer = 2 * n + 1;
    return respond(handle, sizeof answer, &answer);
}

static LV2_Worker_Status work_response(LV2_Handle h, uint32_t size, const void *body) {
    Self *self = h;
    uint32_t answer;
    if (size != sizeof answer) {
        return LV2_WORKER_ERR_UNKNOWN;
    }
    memcpy(&answer, body, sizeof answer);
    self->last = (float)answer;
    self->n_responses += 1;
    return LV2_WORKER_SUCCESS;
}

static LV2_Worker_Status end_run(LV2_Handle h) {
    ((Self *)h)->n_ended += 1;
    return LV2_WORKER_SUCCESS;
}

static LV2_State_Status save(LV2_Handle h, LV2_State_Store_Function store,
                             LV2_State_Handle handle, uint32_t flags,
                             const LV2_Feature *const *features) {
    Self *self = h;
    int32_t saved = 1;
    (void)flags;
    (void)features;
    return store(handle, self->map->map(self->map->handle, PLUGIN_URI "#saved"), &saved,
                 sizeof saved, self->map->map(self->map->handle, LV2_ATOM__Int),
                 LV2_STATE_IS_POD | LV2_STATE_IS_PORTABLE);
}

static LV2_State_Status restore(LV2_Handle h, LV2_State_Retrieve_Function retrieve,
                                LV2_State_Handle handle, uint32_t flags,
                                const LV2_Feature *const *features) {
    Self *self = h;
    size_t size;
    uint32_t type, vflags;
    (void)flags;
    (void)features;
    if (!retrieve(handle, self->map->map(self->map->handle, PLUGIN_URI "#saved"), &size, &type,
                  &vflags)) {
        return LV2_STATE_ERR_NO_PROPERTY;
    }
    uint32_t restored = 5000;
    self->restoring = pthread_self();
    self->restoring_set = 1;
    self->schedule->schedule_work(self->schedule->handle, sizeof restored, &restored);
    self->restoring_set = 0;
    return LV2_STATE_SUCCESS;
}

static const void *extension_data(const char *uri) {
    static const LV2_Worker_Interface worker = {work, work_response, end_run};
    static const LV2_State_Interface state = {save, restore};
    if (!strcmp(uri, LV2_WORKER__interface)) {
        return &worker;
    }
    return strcmp(uri, LV2_STATE__interface) ? NULL : &state;
}

static void cleanup(LV2_Handle h) { free(h); }

static const LV2_Descriptor descriptor = {
    PLUGIN_URI, instantiate, connect_port, NULL, run, NULL, cleanup, extension_data,
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) {
    return index == 0 ? &descriptor : NULL;
}
