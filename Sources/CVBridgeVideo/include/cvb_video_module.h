// The entry point of CVBridge's video module (libCVBridgeVideo.so), which CVBridge looks up with
// dlsym: its table of functions when `abi` is the module interface it was built with (see
// CVBridge/module_api.hpp), else NULL. Nothing links against this library.
#ifndef CVB_VIDEO_MODULE_H
#define CVB_VIDEO_MODULE_H

#ifdef __cplusplus
extern "C" {
#endif

const struct cvb_video_table *cvb_video_module(int abi);

#ifdef __cplusplus
}
#endif
#endif
