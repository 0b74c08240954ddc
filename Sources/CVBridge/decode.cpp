// Decoding into caller-owned memory. See include/cvb_imgcodecs.h.
#include "bridge_internal.hpp"

#include <opencv2/imgcodecs.hpp>

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

} // namespace

extern "C" int cvb_image_decode_into(const uint8_t *bytes, size_t length, cvb_image *dst, cvb_error *err) {
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
