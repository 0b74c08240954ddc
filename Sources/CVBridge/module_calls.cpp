// The public calls whose work is in a module (module_api.hpp): each loads its module on first
// use and forwards; when the module cannot be loaded it fails like any other call, with `err`
// filled (CVB_ERROR_MODULE_UNAVAILABLE). A call on a handle (read, detect, release) finds its
// module loaded: the handle came from it.
#include "bridge_internal.hpp"
#include "module_api.hpp"

using namespace cvb;

extern "C" {

// cvb_video.h

cvb_video_reader *cvb_video_reader_open(const char *path, cvb_video_info *info, cvb_error *err) {
    auto *m = video_module(err);
    return m ? m->reader_open(path, info, err) : nullptr;
}

int cvb_video_reader_read(cvb_video_reader *reader, cvb_image *dst, double *position_ms, int64_t *frame_index,
                          cvb_error *err) {
    return video_module(err)->reader_read(reader, dst, position_ms, frame_index, err);
}

void cvb_video_reader_close(cvb_video_reader *reader) {
    if (reader) video_module(nullptr)->reader_close(reader);
}

cvb_video_reader *cvb_stream_open(const char *url, int32_t open_timeout_ms, int32_t read_timeout_ms,
                                  cvb_stream_info *info, cvb_error *err) {
    auto *m = video_module(err);
    return m ? m->stream_open(url, open_timeout_ms, read_timeout_ms, info, err) : nullptr;
}

int cvb_stream_read(cvb_video_reader *reader, cvb_image *dst, cvb_error *err) {
    return video_module(err)->stream_read(reader, dst, err);
}

int cvb_stream_set_raw(cvb_video_reader *reader, cvb_error *err) {
    return video_module(err)->stream_set_raw(reader, err);
}

int cvb_stream_read_packet(cvb_video_reader *reader, const uint8_t **data, size_t *length, cvb_error *err) {
    return video_module(err)->stream_read_packet(reader, data, length, err);
}

cvb_video_writer *cvb_video_writer_open(const char *path, int32_t backend, const char *fourcc, double fps,
                                        int32_t width, int32_t height, int32_t is_color, cvb_error *err) {
    auto *m = video_module(err);
    return m ? m->writer_open(path, backend, fourcc, fps, width, height, is_color, err) : nullptr;
}

int cvb_video_writer_write(cvb_video_writer *writer, const cvb_image *frame, cvb_error *err) {
    return video_module(err)->writer_write(writer, frame, err);
}

void cvb_video_writer_close(cvb_video_writer *writer) {
    if (writer) video_module(nullptr)->writer_close(writer);
}

// cvb_objdetect.h

cvb_yunet *cvb_yunet_create(const char *model_path, int32_t width, int32_t height, float score_threshold,
                            float nms_threshold, int32_t top_k, cvb_error *err) {
    auto *m = objdetect_module(err);
    return m ? m->yunet_create(model_path, width, height, score_threshold, nms_threshold, top_k, err) : nullptr;
}

void cvb_yunet_release(cvb_yunet *detector) {
    if (detector) objdetect_module(nullptr)->yunet_release(detector);
}

int32_t cvb_yunet_is_2023(const cvb_yunet *detector) { return objdetect_module(nullptr)->yunet_is_2023(detector); }

int cvb_yunet_detect(cvb_yunet *detector, const cvb_image *image, int32_t input_width, int32_t input_height,
                     float *rows, int32_t capacity, int32_t *count, cvb_error *err) {
    return objdetect_module(err)->yunet_detect(detector, image, input_width, input_height, rows, capacity, count, err);
}

cvb_cascade *cvb_cascade_create(const char *path, cvb_error *err) {
    auto *m = objdetect_module(err);
    return m ? m->cascade_create(path, err) : nullptr;
}

void cvb_cascade_release(cvb_cascade *cascade) {
    if (cascade) objdetect_module(nullptr)->cascade_release(cascade);
}

int cvb_cascade_detect(cvb_cascade *cascade, const cvb_image *image, double scale_factor, int32_t min_neighbours,
                       int32_t min_width, int32_t min_height, int32_t max_width, int32_t max_height,
                       int32_t *rects, int32_t *neighbours, int32_t capacity, int32_t *count, cvb_error *err) {
    return objdetect_module(err)->cascade_detect(cascade, image, scale_factor, min_neighbours, min_width, min_height,
                                                 max_width, max_height, rects, neighbours, capacity, count, err);
}

int32_t cvb_qr_locate(const cvb_image *src, int32_t multi, float *quads, int32_t capacity, cvb_error *err) {
    auto *m = objdetect_module(err);
    return m ? m->qr_locate(src, multi, quads, capacity, err) : -1;
}

cvb_mat *cvb_qr_encode(const uint8_t *bytes, size_t length, int32_t version, int32_t correction, cvb_error *err) {
    auto *m = objdetect_module(err);
    return m ? m->qr_encode(bytes, length, version, correction, err) : nullptr;
}

// cvb_imgcodecs.h

cvb_mat *cvb_image_read(const char *path, int32_t format, cvb_error *err) {
    auto *m = imgcodecs_module(err);
    return m ? m->image_read(path, format, err) : nullptr;
}

cvb_mat *cvb_image_encode(const cvb_image *src, const char *extension, const int32_t *params, int32_t param_count,
                          cvb_error *err) {
    auto *m = imgcodecs_module(err);
    return m ? m->image_encode(src, extension, params, param_count, err) : nullptr;
}

int cvb_image_decode_into(const uint8_t *bytes, size_t length, cvb_image *dst, cvb_error *err) {
    auto *m = imgcodecs_module(err);
    return m ? m->image_decode_into(bytes, length, dst, err) : -1;
}

} // extern "C"
