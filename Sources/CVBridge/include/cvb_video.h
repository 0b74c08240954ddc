// Video files: reading (`cv::VideoCapture`) and writing (`cv::VideoWriter`). These run in the
// video module (libCVBridgeVideo.so: videoio and libavformat), loaded on the first call; when it
// cannot be loaded they fail with CVB_ERROR_MODULE_UNAVAILABLE.
#ifndef CVB_VIDEO_H
#define CVB_VIDEO_H

#include "cvb_image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cvb_video_reader cvb_video_reader;
typedef struct cvb_video_writer cvb_video_writer;

/// What the container says about a stream, as read: `width`..`fourcc` from `CAP_PROP_*`
/// (unknown is 0; OpenCV derives `frame_count` from duration × fps when the header has none),
/// from libavformat the times (the video stream's `start_time` and `duration`, else the
/// container's, in seconds; NaN when unknown) and `declared_frames`, the stream header's own
/// frame count (`nb_frames`; 0 when it has none). Unchecked: CaptureKit range-checks them.
typedef struct {
    double width;
    double height;
    double fps;
    double frame_count;
    uint32_t fourcc;
    double start_seconds;
    double duration_seconds;
    double declared_frames;
    char backend[32];
} cvb_video_info;

/// Opens a video file with OpenCV's FFmpeg backend and reads its start time and duration with
/// `avformat_open_input`/`avformat_find_stream_info` (OpenCV 4.6 exposes neither). Returns NULL
/// and fills `err` when OpenCV cannot open the file.
cvb_video_reader *cvb_video_reader_open(const char *path, cvb_video_info *info, cvb_error *err);

/// Status of `cvb_video_reader_read`.
enum { CVB_READ_FRAME = 1, CVB_READ_END = 0, CVB_READ_ERROR = -1 };

/// Decodes the next frame as BGR into `dst` (preallocated, the stream's size)
/// (`cv::VideoCapture::read`) and reports its position in milliseconds (`CAP_PROP_POS_MSEC`)
/// and its index (`CAP_PROP_POS_FRAMES` - 1). Returns CVB_READ_FRAME, CVB_READ_END when no
/// frame could be read, or CVB_READ_ERROR (e.g. the frame size changed).
int cvb_video_reader_read(cvb_video_reader *reader, cvb_image *dst, double *position_ms,
                          int64_t *frame_index, cvb_error *err);

/// Closes the file (`cv::VideoCapture::release`). NULL is ignored.
void cvb_video_reader_close(cvb_video_reader *reader);

/// What a network stream reports once open (`CAP_PROP_*` after `cv::VideoCapture::open`):
/// size, the rate FFmpeg derived (from RTP timestamps for RTSP; a 25 fps guess for MJPEG over
/// HTTP, which carries no times) and the codec. Unchecked: CaptureKit decides what to trust.
typedef struct {
    double width;
    double height;
    double fps;
    uint32_t fourcc;
} cvb_stream_info;

/// Opens a network stream (rtsp://, rtsps://, http(s)://) with OpenCV's FFmpeg backend
/// (`cv::VideoCapture::open(url, CAP_FFMPEG, {CAP_PROP_OPEN_TIMEOUT_MSEC, open_timeout_ms,
/// CAP_PROP_READ_TIMEOUT_MSEC, read_timeout_ms})`). Blocks up to about `open_timeout_ms`.
/// Returns NULL and fills `err` when it cannot be opened; read and close it with
/// `cvb_stream_read` / `cvb_video_reader_close`.
cvb_video_reader *cvb_stream_open(const char *url, int32_t open_timeout_ms, int32_t read_timeout_ms,
                                  cvb_stream_info *info, cvb_error *err);

/// Receives and decodes the next frame as BGR into `dst` (preallocated, the stream's size)
/// (`cv::VideoCapture::read`). Blocks up to about the read timeout. Returns CVB_READ_FRAME,
/// CVB_READ_END when no frame arrived (closed by the server, timed out), or CVB_READ_ERROR
/// when the frame's size differs from `dst`'s (filled `err`).
int cvb_stream_read(cvb_video_reader *reader, cvb_image *dst, cvb_error *err);

/// Switches an open stream to undecoded packets (`VideoCapture::set(CAP_PROP_FORMAT, -1)`), before
/// its first read. Returns 1 when the backend accepted, 0 when not (the stream stays decoded).
int cvb_stream_set_raw(cvb_video_reader *reader, cvb_error *err);

/// Receives the next packet of a stream switched to raw (`cv::VideoCapture::read` into a Mat the
/// reader owns): `*data`/`*length` point at its bytes until the next read or the close. Blocks
/// up to about the read timeout. Returns CVB_READ_FRAME, or CVB_READ_END when no packet arrived.
int cvb_stream_read_packet(cvb_video_reader *reader, const uint8_t **data, size_t *length, cvb_error *err);

/// Backends for writing (`cv::CAP_*`).
enum { CVB_BACKEND_ANY = 0, CVB_BACKEND_FFMPEG = 1, CVB_BACKEND_GSTREAMER = 2 };

/// Opens a writer (`cv::VideoWriter::open`). `fourcc` is four characters such as "MJPG".
/// For the GStreamer backend `path` may be a pipeline string ending in a sink.
cvb_video_writer *cvb_video_writer_open(const char *path, int32_t backend, const char *fourcc,
                                        double fps, int32_t width, int32_t height, int32_t is_color,
                                        cvb_error *err);
/// Appends one frame (`cv::VideoWriter::write`). BGR for colour writers, GRAY otherwise.
int cvb_video_writer_write(cvb_video_writer *writer, const cvb_image *frame, cvb_error *err);
/// Finishes the file (`cv::VideoWriter::release`). NULL is ignored.
void cvb_video_writer_close(cvb_video_writer *writer);

#ifdef __cplusplus
}
#endif
#endif
