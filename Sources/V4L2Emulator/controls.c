// The emulated camera's controls, UVC-like: auto modes that make their manual controls inactive
// (and refuse writes to them), menus, an integer menu for exposure bias, optional extras
// (the `extra-controls` fault line) for white balance and focus buttons and a flash LED, and the
// UVC 1.5 region of interest as uvcvideo exposes it (absent with the `no-roi` fault line): a
// compound rect control, listed only with V4L2_CTRL_FLAG_NEXT_COMPOUND and read and written only
// through the EXT_CTRLS ioctls (with MIN/MAX values), and a bitmask of the auto controls that
// follow it. Every function here runs with emu_lock held.
#include "emulator_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    uint32_t id;
    uint32_t type;
    const char *name;
    int32_t min, max, step, def;
    int extra; // present only with the `extra-controls` line in the control file
    int roi;   // absent with the `no-roi` line in the control file
} emu_control;

static const emu_control controls[] = {
    {V4L2_CID_BRIGHTNESS, V4L2_CTRL_TYPE_INTEGER, "Brightness", -64, 64, 1, 0},
    {V4L2_CID_CONTRAST, V4L2_CTRL_TYPE_INTEGER, "Contrast", 0, 100, 1, 50},
    {V4L2_CID_SATURATION, V4L2_CTRL_TYPE_INTEGER, "Saturation", 0, 100, 1, 64},
    {V4L2_CID_AUTO_WHITE_BALANCE, V4L2_CTRL_TYPE_BOOLEAN, "White Balance, Automatic", 0, 1, 1, 1},
    {V4L2_CID_GAIN, V4L2_CTRL_TYPE_INTEGER, "Gain", 0, 255, 1, 32},
    {V4L2_CID_POWER_LINE_FREQUENCY, V4L2_CTRL_TYPE_MENU, "Power Line Frequency", 0, 2, 1, 1},
    {V4L2_CID_WHITE_BALANCE_TEMPERATURE, V4L2_CTRL_TYPE_INTEGER, "White Balance Temperature", 2800, 6500, 10, 4600},
    {V4L2_CID_SHARPNESS, V4L2_CTRL_TYPE_INTEGER, "Sharpness", 0, 7, 1, 3},
    {V4L2_CID_EXPOSURE_AUTO, V4L2_CTRL_TYPE_MENU, "Auto Exposure", 1, 3, 1, 3},
    {V4L2_CID_EXPOSURE_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, "Exposure Time, Absolute", 3, 2047, 1, 166},
    {V4L2_CID_FOCUS_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, "Focus, Absolute", 0, 250, 5, 0},
    {V4L2_CID_FOCUS_AUTO, V4L2_CTRL_TYPE_BOOLEAN, "Focus, Automatic Continuous", 0, 1, 1, 1},
    {V4L2_CID_ZOOM_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, "Zoom, Absolute", 100, 500, 1, 100},
    {V4L2_CID_AUTO_EXPOSURE_BIAS, V4L2_CTRL_TYPE_INTEGER_MENU, "Auto Exposure, Bias", 0, 8, 1, 4},
    {V4L2_CID_DO_WHITE_BALANCE, V4L2_CTRL_TYPE_BUTTON, "Do White Balance", 0, 0, 0, 0, 1},
    {V4L2_CID_AUTO_FOCUS_START, V4L2_CTRL_TYPE_BUTTON, "Auto Focus, Start", 0, 0, 0, 0, 1},
    {V4L2_CID_FLASH_LED_MODE, V4L2_CTRL_TYPE_MENU, "LED Mode", 0, 2, 1, 0, 1},
    {V4L2_CID_FLASH_STROBE, V4L2_CTRL_TYPE_BUTTON, "Strobe", 0, 0, 0, 0, 1},
    // Names as uvcvideo gives them; the bitmask's maximum is the set of bits the camera takes
    // (auto exposure, iris, white balance, focus, face detect, detect and track, image
    // stabilisation, higher quality); by default auto exposure follows the region.
    {V4L2_CID_UVC_REGION_OF_INTEREST_RECT, EMU_CTRL_TYPE_RECT, "Region of Interest Rectangle", 0, 0, 0, 0, 0, 1},
    {V4L2_CID_UVC_REGION_OF_INTEREST_AUTO, V4L2_CTRL_TYPE_BITMASK, "Region of Interest Auto Ctrls", 0, 0xff, 0, 1, 0, 1},
};
#define CONTROL_COUNT (sizeof(controls) / sizeof(controls[0]))
static const int64_t exposure_bias_menu[9] = {-2000, -1500, -1000, -500, 0, 500, 1000, 1500, 2000};

// Current values, kept across opens like a driver's.
static int32_t values[CONTROL_COUNT];
// The region of interest, in pixels of the current format (the camera's window: this camera
// crops nothing); kept across opens, and moved inside the window when it is read.
static struct v4l2_rect roi;
// The smallest region the camera takes (V4L2_CTRL_WHICH_MIN_VAL).
static const struct v4l2_rect roi_min = {0, 0, 160, 120};

// The window regions lie in (V4L2_CTRL_WHICH_MAX_VAL): the current format's frame.
static struct v4l2_rect roi_window(void) {
    struct v4l2_format f;
    memset(&f, 0, sizeof f);
    f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    emu_g_fmt(NULL, VIDIOC_G_FMT, &f);
    return (struct v4l2_rect){0, 0, f.fmt.pix.width, f.fmt.pix.height};
}

// A region as the camera keeps it: at least the smallest region, at most the window, inside it.
static struct v4l2_rect roi_clamped(struct v4l2_rect r) {
    struct v4l2_rect w = roi_window();
    uint32_t width = r.width < roi_min.width ? roi_min.width : r.width > w.width ? w.width : r.width;
    uint32_t height = r.height < roi_min.height ? roi_min.height : r.height > w.height ? w.height : r.height;
    int32_t max_left = (int32_t)(w.width - width), max_top = (int32_t)(w.height - height);
    int32_t left = r.left < 0 ? 0 : r.left > max_left ? max_left : r.left;
    int32_t top = r.top < 0 ? 0 : r.top > max_top ? max_top : r.top;
    return (struct v4l2_rect){left, top, width, height};
}

void emu_controls_init_locked(void) {
    for (size_t i = 0; i < CONTROL_COUNT; i++) values[i] = controls[i].def;
    roi = roi_window();
}

static int present(const emu_control *c) { return (!c->extra || emu_faults.extras) && (!c->roi || !emu_faults.no_roi); }

static int is_compound(const emu_control *c) { return c->type >= V4L2_CTRL_COMPOUND_TYPES; }

static int control_index(uint32_t id) {
    for (size_t i = 0; i < CONTROL_COUNT; i++)
        if (controls[i].id == id && present(&controls[i])) return (int)i;
    return -1;
}

static int32_t value_of(uint32_t id) {
    int i = control_index(id);
    return i < 0 ? 0 : values[i];
}

// Inactive flags follow the auto modes, as UVC's do.
static uint32_t control_flags(uint32_t id) {
    switch (id) {
    case V4L2_CID_WHITE_BALANCE_TEMPERATURE:
        return value_of(V4L2_CID_AUTO_WHITE_BALANCE) ? V4L2_CTRL_FLAG_INACTIVE : 0;
    case V4L2_CID_EXPOSURE_ABSOLUTE:
    case V4L2_CID_GAIN:
        return value_of(V4L2_CID_EXPOSURE_AUTO) == V4L2_EXPOSURE_MANUAL ? 0 : V4L2_CTRL_FLAG_INACTIVE;
    case V4L2_CID_AUTO_EXPOSURE_BIAS:
        return value_of(V4L2_CID_EXPOSURE_AUTO) == V4L2_EXPOSURE_MANUAL ? V4L2_CTRL_FLAG_INACTIVE : 0;
    case V4L2_CID_FOCUS_ABSOLUTE:
    case V4L2_CID_AUTO_FOCUS_START:
        return value_of(V4L2_CID_FOCUS_AUTO) ? V4L2_CTRL_FLAG_INACTIVE : 0;
    case V4L2_CID_DO_WHITE_BALANCE:
        return value_of(V4L2_CID_AUTO_WHITE_BALANCE) ? V4L2_CTRL_FLAG_INACTIVE : 0;
    case V4L2_CID_EXPOSURE_AUTO:
    case V4L2_CID_AUTO_WHITE_BALANCE:
    case V4L2_CID_FOCUS_AUTO:
        return V4L2_CTRL_FLAG_UPDATE;
    case V4L2_CID_UVC_REGION_OF_INTEREST_RECT:
        return V4L2_CTRL_FLAG_HAS_PAYLOAD | V4L2_CTRL_FLAG_HAS_WHICH_MIN_MAX;
    default:
        return 0;
    }
}

// The control a query answers: exact id, or the next id above with V4L2_CTRL_FLAG_NEXT_CTRL
// (non-compound controls) and/or V4L2_CTRL_FLAG_NEXT_COMPOUND (compound ones), as the kernel's.
static int find_query(uint32_t requested) {
    uint32_t next = requested & (V4L2_CTRL_FLAG_NEXT_CTRL | V4L2_CTRL_FLAG_NEXT_COMPOUND);
    if (next) {
        uint32_t above = requested & ~(V4L2_CTRL_FLAG_NEXT_CTRL | V4L2_CTRL_FLAG_NEXT_COMPOUND);
        int best = -1;
        for (size_t i = 0; i < CONTROL_COUNT; i++) {
            uint32_t kind = is_compound(&controls[i]) ? V4L2_CTRL_FLAG_NEXT_COMPOUND : V4L2_CTRL_FLAG_NEXT_CTRL;
            if (controls[i].id > above && (next & kind) && present(&controls[i]) && (best < 0 || controls[i].id < controls[best].id))
                best = (int)i;
        }
        return best;
    }
    return control_index(requested);
}

static int is_menu(const emu_control *c) {
    return c->type == V4L2_CTRL_TYPE_MENU || c->type == V4L2_CTRL_TYPE_INTEGER_MENU;
}

static int valid_menu_index(uint32_t id, int32_t index) {
    if (id == V4L2_CID_EXPOSURE_AUTO) return index == V4L2_EXPOSURE_MANUAL || index == V4L2_EXPOSURE_APERTURE_PRIORITY;
    int i = control_index(id);
    return i >= 0 && index >= controls[i].min && index <= controls[i].max;
}

static const char *menu_name(uint32_t id, uint32_t index) {
    if (id == V4L2_CID_EXPOSURE_AUTO) return index == 1 ? "Manual Mode" : "Aperture Priority Mode";
    if (id == V4L2_CID_FLASH_LED_MODE) {
        static const char *names[] = {"Off", "Flash", "Torch"};
        return names[index];
    }
    if (id == V4L2_CID_POWER_LINE_FREQUENCY) {
        static const char *names[] = {"Disabled", "50 Hz", "60 Hz"};
        return names[index];
    }
    return "";
}

// Appends a successful control write to "<control file>.log" (the `control-log` line).
static void log_control(uint32_t id, int32_t value) {
    if (!emu_faults.log_controls) return;
    char path[280];
    emu_control_file_path(path, sizeof path - 4);
    strcat(path, ".log");
    int fd = emu_real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[96];
    int n = snprintf(line, sizeof line, "%llu 0x%08x %d\n", (unsigned long long)(emu_now_ns() / 1000), id, value);
    if (write(fd, line, (size_t)n) != n) { /* a test reading the log sees the line missing */ }
    emu_real_close(fd);
}

// Logs a region write as "<µs> <id> <left>,<top>,<width>,<height>" (the `control-log` line).
static void log_rect(uint32_t id, struct v4l2_rect r) {
    if (!emu_faults.log_controls) return;
    char path[280];
    emu_control_file_path(path, sizeof path - 4);
    strcat(path, ".log");
    int fd = emu_real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[128];
    int n = snprintf(line, sizeof line, "%llu 0x%08x %d,%d,%u,%u\n", (unsigned long long)(emu_now_ns() / 1000), id, r.left,
                     r.top, r.width, r.height);
    if (write(fd, line, (size_t)n) != n) { /* a test reading the log sees the line missing */ }
    emu_real_close(fd);
}

// Checks and applies one control write; returns 0 or an errno. `apply` 0 only validates.
static int set_control(uint32_t id, int32_t *value, int apply) {
    int i = control_index(id);
    if (i < 0) return EINVAL;
    const emu_control *d = &controls[i];
    // UVC refuses writes to controls the auto mode owns.
    if (control_flags(d->id) & V4L2_CTRL_FLAG_INACTIVE) return EACCES;
    if (is_menu(d) && !valid_menu_index(d->id, *value)) return EINVAL;
    // As in the flash API: a strobe only in flash mode.
    if (id == V4L2_CID_FLASH_STROBE && value_of(V4L2_CID_FLASH_LED_MODE) != V4L2_FLASH_LED_MODE_FLASH) return EBUSY;
    if (d->type == V4L2_CTRL_TYPE_BUTTON) { // pressing a button stores nothing
        if (apply) log_control(id, 1);
        return 0;
    }
    if (is_compound(d)) return EINVAL; // no single value: EXT_CTRLS with a payload only
    if (d->type == V4L2_CTRL_TYPE_BITMASK) { // bits the camera lacks are dropped, as the kernel does
        int32_t v = (int32_t)((uint32_t)*value & (uint32_t)d->max);
        if (apply) {
            values[i] = v;
            log_control(id, v);
        }
        *value = v;
        return 0;
    }
    // Integers are clamped and rounded to the step, as the kernel's control framework does.
    int32_t v = *value < d->min ? d->min : *value > d->max ? d->max : *value;
    v = d->min + (v - d->min + d->step / 2) / d->step * d->step;
    if (apply) {
        values[i] = v;
        log_control(id, v);
    }
    *value = v;
    return 0;
}

// MARK: ioctls

int emu_queryctrl(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry, (void)request;
    struct v4l2_queryctrl *q = arg;
    int i = find_query(q->id);
    if (i < 0) return EINVAL;
    const emu_control *c = &controls[i];
    memset(q, 0, sizeof *q);
    q->id = c->id;
    q->type = c->type;
    snprintf((char *)q->name, sizeof q->name, "%s", c->name);
    q->minimum = c->min;
    q->maximum = c->max;
    q->step = c->step;
    q->default_value = c->def;
    q->flags = control_flags(c->id);
    return 0;
}

int emu_query_ext_ctrl(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry, (void)request;
    struct v4l2_query_ext_ctrl *q = arg;
    int i = find_query(q->id);
    if (i < 0) return EINVAL;
    const emu_control *c = &controls[i];
    memset(q, 0, sizeof *q);
    q->id = c->id;
    q->type = c->type;
    snprintf(q->name, sizeof q->name, "%s", c->name);
    q->minimum = c->min;
    q->maximum = c->max;
    q->step = (uint64_t)c->step;
    q->default_value = c->def;
    q->flags = control_flags(c->id);
    q->elem_size = is_compound(c) ? sizeof(struct v4l2_rect) : 4;
    q->elems = 1;
    return 0;
}

int emu_querymenu(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry, (void)request;
    struct v4l2_querymenu *m = arg;
    int i = control_index(m->id);
    if (i < 0 || !is_menu(&controls[i]) || !valid_menu_index(m->id, (int32_t)m->index)) return EINVAL;
    uint32_t id = m->id, index = m->index;
    memset(m, 0, sizeof *m);
    m->id = id;
    m->index = index;
    if (controls[i].type == V4L2_CTRL_TYPE_INTEGER_MENU) m->value = exposure_bias_menu[index];
    else snprintf((char *)m->name, sizeof m->name, "%s", menu_name(id, index));
    return 0;
}

int emu_g_ctrl(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry, (void)request;
    struct v4l2_control *c = arg;
    int i = control_index(c->id);
    if (i < 0 || is_compound(&controls[i])) return EINVAL;
    c->value = values[i];
    return 0;
}

int emu_s_ctrl(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry, (void)request;
    struct v4l2_control *c = arg;
    return set_control(c->id, &c->value, 1);
}

// The region of interest through EXT_CTRLS: current (clamped to the window now), smallest or
// window; a write is kept as the camera would clamp it. The payload must hold a v4l2_rect.
static int rect_ext_ctrl(struct v4l2_ext_control *c, unsigned long request, uint32_t which) {
    if (c->size < sizeof(struct v4l2_rect)) {
        c->size = sizeof(struct v4l2_rect);
        return ENOSPC;
    }
    struct v4l2_rect *payload = c->ptr;
    if (request == VIDIOC_G_EXT_CTRLS) {
        if (which == V4L2_CTRL_WHICH_MIN_VAL) *payload = roi_min;
        else if (which == V4L2_CTRL_WHICH_MAX_VAL) *payload = roi_window();
        else if (which == V4L2_CTRL_WHICH_DEF_VAL) *payload = roi_window();
        else *payload = roi_clamped(roi);
        return 0;
    }
    if (which != V4L2_CTRL_WHICH_CUR_VAL) return EINVAL;
    struct v4l2_rect kept = roi_clamped(*payload);
    if (request == VIDIOC_S_EXT_CTRLS) {
        roi = kept;
        log_rect(c->id, kept);
    }
    *payload = kept;
    return 0;
}

// Stops at the first control that fails, naming it in error_idx. Only the region of interest
// has MIN/MAX values (V4L2_CTRL_FLAG_HAS_WHICH_MIN_MAX); other controls answer those with EINVAL.
int emu_ext_ctrls(emu_fd *entry, unsigned long request, void *arg) {
    (void)entry;
    struct v4l2_ext_controls *list = arg;
    uint32_t which = list->which;
    for (uint32_t k = 0; k < list->count; k++) {
        struct v4l2_ext_control *c = &list->controls[k];
        int i = control_index(c->id);
        int error = 0;
        if (i < 0) error = EINVAL;
        else if (is_compound(&controls[i])) error = rect_ext_ctrl(c, request, which);
        else if (which == V4L2_CTRL_WHICH_MIN_VAL || which == V4L2_CTRL_WHICH_MAX_VAL) error = EINVAL;
        else if (request == VIDIOC_G_EXT_CTRLS) c->value = which == V4L2_CTRL_WHICH_DEF_VAL ? controls[i].def : values[i];
        else if (which != V4L2_CTRL_WHICH_CUR_VAL) error = EINVAL;
        else {
            int32_t value = c->value; // the union is packed: no pointer into it
            error = set_control(c->id, &value, request == VIDIOC_S_EXT_CTRLS);
            c->value = value;
        }
        if (error) {
            list->error_idx = k;
            return error;
        }
    }
    return 0;
}
