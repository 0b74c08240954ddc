// The calls CVBridge leaves to its three modules, shared objects it loads (`dlopen`) on first
// use so that a program pays for OpenCV's heavy libraries only when it calls into them:
//
//   libCVBridgeVideo.so      videoio and libavformat (video files, network streams, writers)
//   libCVBridgeObjdetect.so  objdetect, which needs dnn (YuNet, Haar cascades, QR locate/draw)
//   libCVBridgeImgcodecs.so  imgcodecs (imread/imencode/imdecode: every format OpenCV reads)
//
// Each module exports one C symbol, `cvb_<name>_module`, returning its table of functions when
// the caller's CVB_MODULE_ABI matches its own (NULL otherwise: a stale build). Every entry has
// the type of the public function it implements (decltype), so a change to cvb_*.h that is not
// made here fails to compile instead of crashing. Internal: not part of the C ABI.
#pragma once

#include "include/CVBridge.h"

/// Bumped whenever a table below changes shape.
#define CVB_MODULE_ABI 1

struct cvb_video_table {
    decltype(&cvb_video_reader_open) reader_open;
    decltype(&cvb_video_reader_read) reader_read;
    decltype(&cvb_video_reader_close) reader_close;
    decltype(&cvb_stream_open) stream_open;
    decltype(&cvb_stream_read) stream_read;
    decltype(&cvb_stream_set_raw) stream_set_raw;
    decltype(&cvb_stream_read_packet) stream_read_packet;
    decltype(&cvb_video_writer_open) writer_open;
    decltype(&cvb_video_writer_write) writer_write;
    decltype(&cvb_video_writer_close) writer_close;
    /// FFmpeg's share of `cvb_set_library_log_level` (a level already checked).
    void (*set_ffmpeg_log_level)(int level);
    /// `avformat_version()`.
    unsigned (*avformat_version)(void);
};

struct cvb_objdetect_table {
    decltype(&cvb_yunet_create) yunet_create;
    decltype(&cvb_yunet_release) yunet_release;
    decltype(&cvb_yunet_is_2023) yunet_is_2023;
    decltype(&cvb_yunet_detect) yunet_detect;
    decltype(&cvb_cascade_create) cascade_create;
    decltype(&cvb_cascade_release) cascade_release;
    decltype(&cvb_cascade_detect) cascade_detect;
    decltype(&cvb_qr_locate) qr_locate;
    decltype(&cvb_qr_encode) qr_encode;
};

struct cvb_imgcodecs_table {
    decltype(&cvb_image_read) image_read;
    decltype(&cvb_image_encode) image_encode;
    decltype(&cvb_image_decode_into) image_decode_into;
};

/// Each module's entry point (its include/cvb_*_module.h): the table when `abi` is CVB_MODULE_ABI,
/// else NULL. Referenced directly only when the modules are linked in (not CVB_LEAN_MODULES).
extern "C" {
const cvb_video_table *cvb_video_module(int abi);
const cvb_objdetect_table *cvb_objdetect_module(int abi);
const cvb_imgcodecs_table *cvb_imgcodecs_module(int abi);
}

/// Exported from a module (everything else in it stays hidden).
#define CVB_MODULE_EXPORT extern "C" __attribute__((visibility("default")))

namespace cvb {

/// The module's table, loading it on the first call (thread-safe; a failed load is remembered
/// and reported again, never retried). NULL with `err` filled (code
/// CVB_ERROR_MODULE_UNAVAILABLE) when the module is missing, cannot be loaded or is stale.
/// Modules stay loaded until the process exits: OpenCV and FFmpeg keep state in them that is
/// only safe to tear down at exit.
const cvb_video_table *video_module(cvb_error *err);
const cvb_objdetect_table *objdetect_module(cvb_error *err);
const cvb_imgcodecs_table *imgcodecs_module(cvb_error *err);

/// FFmpeg's level (a checked CVB_LIBRARY_LOG_* value): applied now when the video module is
/// loaded, else kept and applied when it loads. Thread-safe.
void set_ffmpeg_log_level(int level);

} // namespace cvb
