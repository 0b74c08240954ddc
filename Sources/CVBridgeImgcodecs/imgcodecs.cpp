// The imgcodecs module (libCVBridgeImgcodecs.so, see CVBridge/module_api.hpp): cvb_imgcodecs.h
// over cv::imread, cv::imencode and cv::imdecode. OpenCV 4.6's imgcodecs brings GDAL, GDCM,
// OpenEXR, OpenJPEG and TIFF with it, so it loads only when one of these is first called.
#include "bridge_internal.hpp"
#include "module_api.hpp"
#include "include/cvb_imgcodecs_module.h"

#include <opencv2/imgcodecs.hpp>

using namespace cvb;

namespace {

// Gives `cv::imdecode` the caller's memory when it asks for exactly the caller's size and type,
// else an allocation of its own. `imdecode(buf, flags, &dst)` leaves a preallocated `dst`
// untouched when the bytes are no image or their header is damaged, which looks like success;
// an empty `dst` that only this allocator fills tells the two apart.
class CallerMemory : public cv::MatAllocator {
public:
    CallerMemory(const cvb_image *dst, int type) : dst(dst), type(type) {}

    cv::UMatData *allocate(int dims, const int *sizes, int type_, void *data0, size_t *step, cv::AccessFlag flags,
                           cv::UMatUsageFlags usage) const override {
        int rows = dst->format == CVB_FORMAT_NV12 ? dst->height * 3 / 2 : dst->height;
        if (data0 || dims != 2 || type_ != type || sizes[0] != rows || sizes[1] != dst->width)
            return cv::Mat::getDefaultAllocator()->allocate(dims, sizes, type_, data0, step, flags, usage);
        step[0] = (size_t)dst->stride;
        step[1] = CV_ELEM_SIZE(type_);
        auto *u = new cv::UMatData(this);
        u->data = u->origdata = dst->data;
        u->size = (size_t)dst->stride * (size_t)rows;
        u->flags |= cv::UMatData::USER_ALLOCATED;
        return u;
    }

    bool allocate(cv::UMatData *, cv::AccessFlag, cv::UMatUsageFlags) const override { return false; }

    void deallocate(cv::UMatData *u) const override { delete u; }

private:
    const cvb_image *dst;
    int type;
};

int image_decode_into(const uint8_t *bytes, size_t length, cvb_image *dst, cvb_error *err) {
    return cvb::guarded(err, [&] {
        int flags = dst->format == CVB_FORMAT_GRAY ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR;
        cv::Mat buf(1, (int)length, CV_8UC1, (void *)bytes);
        CallerMemory memory(dst, cvb::as_mat(dst).type());
        cv::Mat target;
        target.allocator = &memory;
        cv::imdecode(buf, flags, &target);
        if (target.empty() || target.data != dst->data) {
            cvb::set_error(err, -1, target.empty() ? "OpenCV could not decode the frame (not an image, or damaged)"
                                                   : "the encoded frame's size differs from the buffer's");
            return -1;
        }
        return 0;
    });
}

cvb_mat *finish_decoded(cv::Mat decoded, const char *what, cvb_error *err) {
    if (decoded.empty()) {
        set_error(err, -1, what);
        return nullptr;
    }
    auto *m = new cvb_mat();
    m->mat = decoded;
    int f = format_of(decoded);
    m->format = f < 0 ? CVB_FORMAT_GRAY : f;
    return m;
}

cvb_mat *image_read(const char *path, int32_t format, cvb_error *err) {
    return guarded_ptr<cvb_mat>(err, [&]() -> cvb_mat * {
        int flags = format == CVB_FORMAT_GRAY ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR;
        return finish_decoded(cv::imread(path, flags), "OpenCV could not decode the file as an image", err);
    });
}

cvb_mat *image_encode(const cvb_image *src, const char *extension, const int32_t *params,
                          int32_t param_count, cvb_error *err) {
    return guarded_ptr<cvb_mat>(err, [&]() -> cvb_mat * {
        if (param_count < 0 || param_count % 2 != 0 || (param_count > 0 && params == nullptr)) {
            set_error(err, -1, "encoding parameters must be key, value pairs");
            return nullptr;
        }
        std::vector<int> p(params, params + param_count);
        std::vector<uchar> out;
        if (!cv::imencode(extension, as_mat(src), out, p)) {
            set_error(err, -1, "OpenCV could not encode the image");
            return nullptr;
        }
        auto *m = new cvb_mat();
        m->mat = cv::Mat(out, true).reshape(1, 1);
        return m;
    });
}

const cvb_imgcodecs_table table = {image_read, image_encode, image_decode_into};

} // namespace

CVB_MODULE_EXPORT const cvb_imgcodecs_table *cvb_imgcodecs_module(int abi) {
    return abi == CVB_MODULE_ABI ? &table : nullptr;
}
