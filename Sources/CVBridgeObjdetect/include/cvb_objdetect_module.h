// The entry point of CVBridge's objdetect module (libCVBridgeObjdetect.so), which CVBridge looks up with
// dlsym: its table of functions when `abi` is the module interface it was built with (see
// CVBridge/module_api.hpp), else NULL. Nothing links against this library.
#ifndef CVB_OBJDETECT_MODULE_H
#define CVB_OBJDETECT_MODULE_H

#ifdef __cplusplus
extern "C" {
#endif

const struct cvb_objdetect_table *cvb_objdetect_module(int abi);

#ifdef __cplusplus
}
#endif
#endif
