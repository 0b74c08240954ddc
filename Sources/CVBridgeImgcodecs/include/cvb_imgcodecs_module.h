// The entry point of CVBridge's imgcodecs module (libCVBridgeImgcodecs.so), which CVBridge looks up with
// dlsym: its table of functions when `abi` is the module interface it was built with (see
// CVBridge/module_api.hpp), else NULL. Nothing links against this library.
#ifndef CVB_IMGCODECS_MODULE_H
#define CVB_IMGCODECS_MODULE_H

#ifdef __cplusplus
extern "C" {
#endif

const struct cvb_imgcodecs_table *cvb_imgcodecs_module(int abi);

#ifdef __cplusplus
}
#endif
#endif
