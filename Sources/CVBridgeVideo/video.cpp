// The video module (libCVBridgeVideo.so, see CVBridge/module_api.hpp): cvb_video.h over
// cv::VideoCapture / cv::VideoWriter behind opaque handles, and FFmpeg's log level.
#include "bridge_internal.hpp"
#include "module_api.hpp"
#include "include/cvb_video_module.h"

#include <opencv2/videoio.hpp>

#include <atomic>
#include <cmath>
#include <cstdarg>
#include <vector>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/log.h>
}

using namespace cvb;

struct cvb_video_reader {
    cv::VideoCapture capture;
    cv::Mat scratch;
};

struct cvb_video_writer {
    cv::VideoWriter writer;
};

// The video stream's start time and duration in seconds, else the container's (a longer audio
// track must not lengthen the video); NaN where libavformat knows neither.
static void read_times(const char *path, cvb_video_info *info) {
    info->start_seconds = NAN;
    info->duration_seconds = NAN;
    AVFormatContext *ic = nullptr;
    if (avformat_open_input(&ic, path, nullptr, nullptr) != 0) return;
    int index = avformat_find_stream_info(ic, nullptr) >= 0
                    ? av_find_best_stream(ic, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0)
                    : -1;
    if (index >= 0) {
        const AVStream *st = ic->streams[index];
        double unit = st->time_base.den != 0 ? (double)st->time_base.num / st->time_base.den : NAN;
        if (st->start_time != AV_NOPTS_VALUE) info->start_seconds = (double)st->start_time * unit;
        else if (ic->start_time != AV_NOPTS_VALUE) info->start_seconds = (double)ic->start_time / AV_TIME_BASE;
        if (st->duration != AV_NOPTS_VALUE) info->duration_seconds = (double)st->duration * unit;
        else if (ic->duration != AV_NOPTS_VALUE) info->duration_seconds = (double)ic->duration / AV_TIME_BASE;
        info->declared_frames = (double)st->nb_frames;
    }
    avformat_close_input(&ic);
}

namespace {

cvb_video_reader *reader_open(const char *path, cvb_video_info *info, cvb_error *err) {
    return guarded_ptr<cvb_video_reader>(err, [&]() -> cvb_video_reader * {
        auto *r = new cvb_video_reader();
        if (!r->capture.open(path, cv::CAP_FFMPEG)) {
            delete r;
            set_error(err, -1, "OpenCV's FFmpeg backend could not open the file as a video");
            return nullptr;
        }
        std::memset(info, 0, sizeof(*info));
        info->width = r->capture.get(cv::CAP_PROP_FRAME_WIDTH);
        info->height = r->capture.get(cv::CAP_PROP_FRAME_HEIGHT);
        info->fps = r->capture.get(cv::CAP_PROP_FPS);
        info->frame_count = r->capture.get(cv::CAP_PROP_FRAME_COUNT);
        info->fourcc = (uint32_t)(int64_t)r->capture.get(cv::CAP_PROP_FOURCC);
        std::snprintf(info->backend, sizeof(info->backend), "%s", r->capture.getBackendName().c_str());
        read_times(path, info);
        return r;
    });
}

int reader_read(cvb_video_reader *reader, cvb_image *dst, double *position_ms, int64_t *frame_index,
                          cvb_error *err) {
    int status = guarded(err, [&] {
        if (!reader->capture.grab()) return (int)CVB_READ_END;
        cv::Mat d = as_mat(dst);
        if (!reader->capture.retrieve(d)) return (int)CVB_READ_END;
        if (d.data != dst->data) {
            set_error(err, -1, "the video's frame size or format changed mid-stream");
            return (int)CVB_READ_ERROR;
        }
        *position_ms = reader->capture.get(cv::CAP_PROP_POS_MSEC);
        *frame_index = (int64_t)reader->capture.get(cv::CAP_PROP_POS_FRAMES) - 1;
        return (int)CVB_READ_FRAME;
    });
    return status;
}

cvb_video_reader *stream_open(const char *url, int32_t open_timeout_ms, int32_t read_timeout_ms,
                                  cvb_stream_info *info, cvb_error *err) {
    return guarded_ptr<cvb_video_reader>(err, [&]() -> cvb_video_reader * {
        auto *r = new cvb_video_reader();
        std::vector<int> params{cv::CAP_PROP_OPEN_TIMEOUT_MSEC, open_timeout_ms, cv::CAP_PROP_READ_TIMEOUT_MSEC,
                                read_timeout_ms};
        if (!r->capture.open(url, cv::CAP_FFMPEG, params)) {
            delete r;
            set_error(err, -1, "OpenCV's FFmpeg backend could not open the stream");
            return nullptr;
        }
        std::memset(info, 0, sizeof(*info));
        info->width = r->capture.get(cv::CAP_PROP_FRAME_WIDTH);
        info->height = r->capture.get(cv::CAP_PROP_FRAME_HEIGHT);
        info->fps = r->capture.get(cv::CAP_PROP_FPS);
        info->fourcc = (uint32_t)(int64_t)r->capture.get(cv::CAP_PROP_FOURCC);
        return r;
    });
}

int stream_read(cvb_video_reader *reader, cvb_image *dst, cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat d = as_mat(dst);
        if (!reader->capture.read(d) || d.empty()) return (int)CVB_READ_END;
        if (d.data != dst->data) {
            set_error(err, -1, "the stream's frame size changed");
            return (int)CVB_READ_ERROR;
        }
        return (int)CVB_READ_FRAME;
    });
}

int stream_set_raw(cvb_video_reader *reader, cvb_error *err) {
    return guarded(err, [&] { return reader->capture.set(cv::CAP_PROP_FORMAT, -1) ? 1 : 0; });
}

int stream_read_packet(cvb_video_reader *reader, const uint8_t **data, size_t *length, cvb_error *err) {
    return guarded(err, [&] {
        cv::Mat &packet = reader->scratch;
        if (!reader->capture.read(packet) || packet.empty() || !packet.isContinuous()) return (int)CVB_READ_END;
        *data = packet.data;
        *length = packet.total() * packet.elemSize();
        return (int)CVB_READ_FRAME;
    });
}

void reader_close(cvb_video_reader *reader) {
    if (!reader) return;
    try {
        reader->capture.release();
    } catch (...) {
    }
    delete reader;
}

cvb_video_writer *writer_open(const char *path, int32_t backend, const char *fourcc, double fps,
                                        int32_t width, int32_t height, int32_t is_color, cvb_error *err) {
    return guarded_ptr<cvb_video_writer>(err, [&]() -> cvb_video_writer * {
        if (!fourcc || std::strlen(fourcc) != 4) {
            set_error(err, -1, "fourcc must be four characters");
            return nullptr;
        }
        int api = backend == CVB_BACKEND_FFMPEG ? cv::CAP_FFMPEG
                  : backend == CVB_BACKEND_GSTREAMER ? cv::CAP_GSTREAMER
                                                      : cv::CAP_ANY;
        int code = cv::VideoWriter::fourcc(fourcc[0], fourcc[1], fourcc[2], fourcc[3]);
        auto *w = new cvb_video_writer();
        if (!w->writer.open(path, api, code, fps, cv::Size(width, height), is_color != 0)) {
            delete w;
            set_error(err, -1, "OpenCV could not open a video writer for that path, codec and backend");
            return nullptr;
        }
        return w;
    });
}

int writer_write(cvb_video_writer *writer, const cvb_image *frame, cvb_error *err) {
    return guarded(err, [&] {
        writer->writer.write(as_mat(frame));
        return 0;
    });
}

void writer_close(cvb_video_writer *writer) {
    if (!writer) return;
    try {
        writer->writer.release();
    } catch (...) {
    }
    delete writer;
}

// OpenCV sets av_log's level itself when it first opens a video (to AV_LOG_ERROR), so the level
// chosen here is kept apart and applied by a callback OpenCV leaves alone.
std::atomic<int> ffmpeg_level{AV_LOG_ERROR};

void ffmpeg_callback(void *context, int level, const char *format, va_list args) {
    if (level > ffmpeg_level.load(std::memory_order_relaxed)) return;
    av_log_default_callback(context, level, format, args);
}

void set_ffmpeg_log_level(int level) {
    static const int ffmpeg[] = {AV_LOG_QUIET, AV_LOG_ERROR, AV_LOG_WARNING, AV_LOG_INFO, AV_LOG_DEBUG};
    ffmpeg_level.store(ffmpeg[level], std::memory_order_relaxed);
    av_log_set_level(ffmpeg[level]);
    av_log_set_callback(ffmpeg_callback);
}

unsigned version() { return avformat_version(); }

const cvb_video_table table = {
    reader_open,  reader_read,  reader_close, stream_open,  stream_read,         stream_set_raw,
    stream_read_packet, writer_open, writer_write, writer_close, set_ffmpeg_log_level, version,
};

} // namespace

CVB_MODULE_EXPORT const cvb_video_table *cvb_video_module(int abi) { return abi == CVB_MODULE_ABI ? &table : nullptr; }
