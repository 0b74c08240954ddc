// libmosquitto (Debian libmosquitto-dev 2.0), found through pkg-config `libmosquitto`.
// Its API is plain C with `void *` userdata callbacks, which Swift imports as is: no helpers here.
#include <mosquitto.h>
